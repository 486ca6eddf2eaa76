# pyshop.audit: a class Entry (named as pyshop.orders'), its instances kept in
# a module-level list; and a class Stray whose __module__ is not a str (as
# Python's own repr, it has no module to be named with).
TRAIL = []
STRAYS = []


class Entry:
    def __init__(self, seq, what):
        self.seq = seq
        self.what = what


class Stray:
    __module__ = None

    def __init__(self, seq):
        self.seq = seq


def note(n):
    base = len(TRAIL)
    for i in range(n):
        TRAIL.append(Entry(base + i, "audit"))
    return n


def stray(n):
    for i in range(n):
        STRAYS.append(Stray(i))
    return n
