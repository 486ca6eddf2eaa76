# py_modules.py: two classes of the same name, Entry, in two modules of the
# package pyshop (pyshop.orders and pyshop.audit), and a nested class
# (pyshop.orders.Order.Line); each module keeps its instances in a list of its
# own; and pyshop.audit.Stray, whose __module__ is None. At each line on stdin
# it creates N orders' Entry objects (N from argv, default 100000), N/2 audit
# Entry objects, N/4 Order.Line objects and N/4 Stray objects, and prints
# "created N N/2 N/4 N/4". Prints "ready" first and "ok" at end of input.
import sys

from pyshop import audit, orders


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    print("ready", flush=True)
    for _ in sys.stdin:
        a = orders.place(n)
        b = audit.note(n // 2)
        c = orders.ship(n // 4)
        d = audit.stray(n // 4)
        print("created", a, b, c, d, flush=True)
    print("ok", flush=True)


main()
