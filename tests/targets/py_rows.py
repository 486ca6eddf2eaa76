# py_rows.py: a CPython target for tests/run-python-rows.sh: one method of a
# class grows a dict of small tuples and strings, all of it on one line (the
# dict's tables, the tuples, their ints and strings are allocated by different
# paths of the interpreter's C code under that one line). SECONDS; prints
# "ready" once running, "ok" at the end, and exits 0.
import sys
import time

CAP = 1200000   # entries: ~250 MiB


class Hoard:
    def __init__(self):
        self.items = {}

    def hoard_tuples(self, n):
        base = len(self.items)
        for i in range(n):
            self.items[base + i] = (base + i, "item-%d" % i, "v%x" % (base + i))  # LINE:hoard


def main(seconds):
    h = Hoard()
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if len(h.items) < CAP:
            h.hoard_tuples(3000)
        time.sleep(0.01)
    print("ok", flush=True)


main(float(sys.argv[1]) if len(sys.argv) > 1 else 10)
