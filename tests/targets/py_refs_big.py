# py_refs_big.py: a CPython heap of N live objects the collector tracks (N
# from argv, default 10 million: instances of Node in a module-level list,
# KEEP), and a thread that measures its own stalls (how much later than asked
# it wakes from a 5 ms sleep). Prints "ready" once they are made. Each line on
# stdin: "reset" forgets the longest stall ("reset"), "stall" prints it in ms
# ("stall MS"), "hold MS" holds the GIL that long in a C call ("held"), "bye
# MS" ends the script, the interpreter holding the GIL that long as it exits
# (in an atexit handler); anything else makes 50000 Event objects kept in
# AUDIT_LOG ("created N TOTAL"). Prints "ok" at the end.
import atexit
import ctypes
import gc
import sys
import threading
import time

KEEP = []
AUDIT_LOG = []
longest = [0.0]
# a PyDLL call keeps the GIL for its whole length
libc = ctypes.PyDLL(None)


class Node:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


class Event:
    def __init__(self, seq):
        self.seq = seq


def watcher():
    last = time.monotonic()
    while True:
        time.sleep(0.005)
        now = time.monotonic()
        if now - last - 0.005 > longest[0]:
            longest[0] = now - last - 0.005
        last = now


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000000
    gc.disable()
    KEEP.extend(Node(None) for _ in range(n))
    gc.collect()
    gc.enable()
    threading.Thread(target=watcher, daemon=True).start()
    print("ready", flush=True)
    for line in sys.stdin:
        w = line.split()
        if w and w[0] == "reset":
            longest[0] = 0.0
            print("reset", flush=True)
        elif w and w[0] == "stall":
            print("stall %d" % int(longest[0] * 1000), flush=True)
        elif w and w[0] == "hold":
            libc.usleep(int(w[1]) * 1000)
            print("held", flush=True)
        elif w and w[0] == "bye":
            atexit.register(libc.usleep, int(w[1]) * 1000)
            break
        else:
            base = len(AUDIT_LOG)
            AUDIT_LOG.extend(Event(base + i) for i in range(50000))
            print("created", len(AUDIT_LOG) - base, len(AUDIT_LOG), flush=True)
    print("ok", flush=True)


main()
