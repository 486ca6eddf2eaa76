# py_listkeep.py: lists kept and tuples dropped, in turn, for
# tests/run-python-blocktypes.sh. STOPFILE; prints "ready", then keeps a
# list of two new ints in keeper() and drops a tuple of two new ints in
# scratch(), until STOPFILE exists, 60 s have passed or 3 000 000 lists are
# kept; then prints "ok N" and exits 0. Every block kept is a list, an int
# or a list's array of items; a sampled tuple dropped leaves its type's
# address in memory that a list's array may take next.
import os
import sys
import time

stop = sys.argv[1]
kept = []


def scratch(i):
    t = (i * 3, -i)
    return len(t)


def keeper(i):
    kept.append([i * 2, -i])


print("ready", flush=True)
i = 0
end = time.monotonic() + 60
while time.monotonic() < end and len(kept) < 3_000_000 and not os.path.exists(stop):
    for _ in range(1000):
        scratch(i)
        keeper(i)
        i += 1
while time.monotonic() < end and not os.path.exists(stop):
    time.sleep(0.05)
print("ok", len(kept), flush=True)
