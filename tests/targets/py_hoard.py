# py_hoard.py: a CPython target for the tests that watch_hoard (py-lib.sh)
# drives, written to run unchanged on CPython 3.6 and later. MODE MIB...;
# prints "ready 0" once running, then for each MIB reads a line from stdin and
# grows its resident memory by MIB MiB (at a steady pace, 10 ms between
# steps), keeping what it made, and prints "ready N" (N = 1, 2, ...). At the
# next line, or at end of file at any point, it prints "ok" and exits 0.
#   objects   small objects (a tuple of an int and a short str each), every
#             one of them made on one line of one method, Hoard.grow
#   buffers   64 KiB buffers made by C functions (bytes, bytearray and
#             array.array), from the method Hoard.grow_buffers
# The growth is measured, not assumed: the resident size is read from
# /proc/self/statm after each step, so that a step grows by what the test
# waits for on every version and allocator (in a root without /proc, a
# chroot, the peak resident size getrusage gives, which only grows here).
import array
import os
import resource
import sys
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


class Hoard:
    def __init__(self):
        self.items = []

    def grow(self, n):
        items = self.items
        for _ in range(n):
            items.append((len(items) * 7 + 100000, "item-%d" % len(items)))

    def grow_buffers(self, n):
        items = self.items
        for _ in range(n):
            items.append(bytes(65536))
            items.append(bytearray(65536))
            items.append(array.array("b", bytes(65536)))


def rss():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except FileNotFoundError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main():
    mode = sys.argv[1]
    steps = [float(a) for a in sys.argv[2:]]
    hoard = Hoard()
    # each step: how many to make, and at most how many bytes that makes
    # (a bound on a phase that would otherwise never see its growth)
    grow, per_tick, most = {
        "objects": (hoard.grow, 3000, 3000 * 400),
        "buffers": (hoard.grow_buffers, 3, 3 * 3 * 65600),
    }[mode]
    print("ready 0", flush=True)
    for n, mib in enumerate(steps, 1):
        if not sys.stdin.readline():
            break
        start = rss()
        made = 0
        while rss() - start < mib * 2**20 and made < 4 * mib * 2**20:
            grow(per_tick)
            made += most
            time.sleep(0.01)
        print("ready %d" % n, flush=True)
    else:
        sys.stdin.readline()
    print("ok", flush=True)


main()
