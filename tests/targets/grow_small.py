# grow_small.py: a Python program whose memory grows by small objects only
# (tuples, ints and short strings, served by CPython's own arenas, not malloc):
# SECONDS [MIB_PER_S [MAX_MIB]]. Prints "ready" once started.
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20
rate = float(sys.argv[2]) if len(sys.argv) > 2 else 30
cap = float(sys.argv[3]) if len(sys.argv) > 3 else 400
PER_ITEM = 150          # bytes a (int, str) tuple holds, roughly
kept = []
print("ready", flush=True)
end = time.monotonic() + seconds
i = 0
while time.monotonic() < end:
    if i * PER_ITEM < cap * 2**20:
        for _ in range(int(rate * 2**20 / PER_ITEM / 100)):
            kept.append((i, "item-%d" % i))
            i += 1
    time.sleep(0.01)
