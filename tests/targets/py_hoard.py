# py_hoard.py: a CPython target for tests/run-python-versions.sh, written to
# run unchanged on CPython 3.6 and later. MODE SECONDS; prints "ready" once
# running, grows for SECONDS, prints "ok" and exits 0.
#   objects   small objects (a tuple of an int and a short str each), every
#             one of them made on one line of one method, Hoard.grow
#   buffers   64 KiB buffers made by C functions (bytes, bytearray and
#             array.array), from the method Hoard.grow_buffers
import array
import sys
import time

CAP = 160 * 2**20


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


def main():
    mode = sys.argv[1]
    seconds = float(sys.argv[2])
    hoard = Hoard()
    grow, per_tick, item_bytes = {
        "objects": (hoard.grow, 3000, 150),
        "buffers": (hoard.grow_buffers, 3, 3 * 65600),
    }[mode]
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if len(hoard.items) * item_bytes < CAP:
            grow(per_tick)
        time.sleep(0.01)
    print("ok", flush=True)


main()
