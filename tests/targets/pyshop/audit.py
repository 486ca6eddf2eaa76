# pyshop.audit: a class Entry (named as pyshop.orders'), its instances kept in
# a module-level list.
TRAIL = []


class Entry:
    def __init__(self, seq, what):
        self.seq = seq
        self.what = what


def note(n):
    base = len(TRAIL)
    for i in range(n):
        TRAIL.append(Entry(base + i, "audit"))
    return n
