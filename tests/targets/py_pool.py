# py_pool.py GO: a multiprocessing.Pool of 2 workers, forked, each keeping
# what crunch allocates (up to 48 MiB a worker), until the file GO exists
# (at most 120 s); then it prints the workers' pids and ends.
import multiprocessing
import os
import sys
import time

kept = []


def crunch(i):
    if len(kept) < 12000:
        for _ in range(400):
            kept.append(bytes(4096 + i % 7))
    return os.getpid()


if __name__ == "__main__":
    go = sys.argv[1]
    multiprocessing.set_start_method("fork")
    pids = set()
    with multiprocessing.Pool(2) as pool:
        end = time.monotonic() + 120
        while not os.path.exists(go) and time.monotonic() < end:
            pids |= set(pool.map(crunch, range(4), chunksize=1))
            time.sleep(0.05)
    print("workers", *sorted(pids), flush=True)
