# pyshop.orders: a class Entry (named as pyshop.audit's) and a nested class
# Order.Line, their instances kept in module-level lists.
ORDERS = []
SHIPPED = []


class Entry:
    def __init__(self, seq, qty):
        self.seq = seq
        self.qty = qty


class Order:
    class Line:
        def __init__(self, seq):
            self.seq = seq


def place(n):
    base = len(ORDERS)
    for i in range(n):
        ORDERS.append(Entry(base + i, i % 7))
    return n


def ship(n):
    base = len(SHIPPED)
    for i in range(n):
        SHIPPED.append(Order.Line(base + i))
    return n
