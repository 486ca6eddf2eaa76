# py_grow.py: a CPython target with known Python allocation sites, for the
# tests/run-python-*.sh. MODE [SECONDS]; prints "ready" once running, and the
# modes that wait for a step read a line from stdin. Prints "ok" and exits 0
# when everything it checked went right.
#   objects S   small objects only (tuples of an int and a short str), from
#               grow_small_objects, for S seconds (at most ~200 MiB)
#   bytes S     64 KiB bytes objects (malloc'd by the interpreter) from
#               grow_bytes, for S seconds (at most ~200 MiB)
#   steady      small objects from grow_small_objects until a line on stdin
#   finalize    threads allocating without pause; at a line on stdin the
#               interpreter finalizes (and exits) while they still run
#   fork        at a line on stdin, forks children that allocate and exit
#               (by sys.exit, which finalizes, and by os._exit), checks their
#               statuses, then grows from grow_after_fork until the next line
#   holdgil     at a line on stdin, holds the GIL for 4 s in one C call, says
#               "released", then grows until the next line
#   drop        at a line on stdin, grows ~50 MiB of small objects from
#               grow_small_objects and says "grown"; at the next line drops
#               them all and says "dropped N", N the change in
#               sys.getallocatedblocks(); exits at the third line
#   holdexit    at a line on stdin, holds the GIL for 3 s in one C call and
#               exits at once (the interpreter finalizes while a thread that
#               is not its own waits for the GIL)
import ctypes
import os
import sys
import threading
import time

kept = []
CAP = 200 * 2**20


def grow_small_objects(n):
    for i in range(n):
        kept.append((i, "item-%d" % i))


def grow_bytes(n):
    for _ in range(n):
        kept.append(bytes(64 * 1024))


def grow_after_fork(n):
    for i in range(n):
        kept.append((i, "after-%d" % i))


def for_seconds(fn, per_tick, item_bytes, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if len(kept) * item_bytes < CAP:
            fn(per_tick)
        time.sleep(0.01)


stopping = threading.Event()


def wait_line_then_stop():
    sys.stdin.readline()
    stopping.set()


def until_line(fn, per_tick, item_bytes):
    threading.Thread(target=wait_line_then_stop, daemon=True).start()
    while not stopping.is_set():
        if len(kept) * item_bytes < CAP:
            fn(per_tick)
        time.sleep(0.01)


def churn(tag):
    local = []
    while True:
        local.append((tag, "x%d" % len(local)))
        if len(local) > 20000:
            local = []


mode = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10
print("ready", flush=True)
if mode == "objects":
    for_seconds(grow_small_objects, 3000, 150, seconds)
elif mode == "bytes":
    for_seconds(grow_bytes, 20, 65600, seconds)
elif mode == "steady":
    until_line(grow_small_objects, 500, 150)
elif mode == "finalize":
    for t in range(3):
        threading.Thread(target=churn, args=(t,), daemon=True).start()
    sys.stdin.readline()
    print("ok", flush=True)
    sys.exit(0)
elif mode == "fork":
    grow_small_objects(1000)
    sys.stdin.readline()
    bad = 0
    for k in range(8):
        pid = os.fork()
        if pid == 0:
            grow_small_objects(20000)
            if k % 2:
                os._exit(0)
            sys.exit(0)
        _, st = os.waitpid(pid, 0)
        if st != 0:
            print("child %d: status %d" % (k, st), flush=True)
            bad += 1
    print("forked", flush=True)
    until_line(grow_after_fork, 500, 150)
    if bad:
        sys.exit(1)
elif mode == "holdgil":
    sys.stdin.readline()
    print("holding", flush=True)
    # a PyDLL call keeps the GIL for its whole length
    ctypes.PyDLL(None).sleep(4)
    print("released", flush=True)
    until_line(grow_small_objects, 500, 150)
elif mode == "drop":
    # counted with the interpreter's free lists emptied (a full collection
    # clears them): while capture is on they are kept empty, and without it
    # the tuples dropped would stay on them, allocated
    import gc
    sys.stdin.readline()
    gc.collect()
    blocks = sys.getallocatedblocks()
    grow_small_objects(400000)
    print("grown", flush=True)
    sys.stdin.readline()
    kept.clear()
    gc.collect()
    print("dropped", sys.getallocatedblocks() - blocks, flush=True)
    sys.stdin.readline()
elif mode == "holdexit":
    sys.stdin.readline()
    print("holding", flush=True)
    ctypes.PyDLL(None).sleep(3)
    print("ok", flush=True)
    sys.exit(0)
else:
    sys.exit("py_grow.py: unknown mode " + mode)
print("ok", flush=True)
