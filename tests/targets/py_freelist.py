# py_freelist.py: objects that CPython recycles through its free lists, for
# tests/run-python-freelist.sh. SECONDS; prints "ready", then grows ~16 MiB/s
# until SECONDS have passed or ~160 MiB are kept, prints "ok" and exits 0.
# Each kind of object is made and dropped in a function scratch_KIND, and
# the same kind is kept, in a module-level list, by keeper_KIND, the two
# called in turn, so that each object kept takes the memory of one dropped
# if the interpreter recycles it: dicts of two keys, tuples of two items and
# lists of two items on the main thread; and dicts in batches on two threads
# taking turns (scratch_batch on one, keeper_batch on the other), since newer
# versions keep free lists per thread. Every object, and the ints it holds,
# is made on a line of its function: a row names that function itself.
import threading
import time

kept = []
RATE = 4 * 2**20       # bytes kept per second by each of the four keepers
CAP = 40 * 2**20       # and in all by each
BATCH = 64


def scratch_dict(i):
    x = {"a": i * 2, "b": -i}
    return len(x)


def keeper_dict(i):
    kept.append({"a": i * 2, "b": -i})


def scratch_tuple(i):
    x = (i * 2, -i)
    return len(x)


def keeper_tuple(i):
    kept.append((i * 2, -i))


def scratch_list(i):
    x = [i * 2, -i]
    return len(x)


def keeper_list(i):
    kept.append([i * 2, -i])


def scratch_batch(i):
    tmp = []
    for j in range(i, i + BATCH):
        tmp.append({"a": j * 2, "b": -j})
    return len(tmp)


def keeper_batch(i):
    for j in range(i, i + BATCH):
        kept.append({"a": j * 2, "b": -j})


# what one kept object of each kind takes, roughly (3.11: the object, its
# ints, the key table of a dict, the list's items, the slot in kept)
SIZE = {"dict": 280, "tuple": 136, "list": 168}


def behind(done, start):
    return done < CAP and done < RATE * (time.monotonic() - start)


def alternate(start, end):
    i = 1000
    done = {"dict": 0, "tuple": 0, "list": 0}
    pairs = {"dict": (scratch_dict, keeper_dict), "tuple": (scratch_tuple, keeper_tuple),
             "list": (scratch_list, keeper_list)}
    while time.monotonic() < end:
        busy = False
        for kind, (scratch, keeper) in pairs.items():
            if not behind(done[kind], start):
                continue
            busy = True
            for _ in range(200):
                scratch(i)
                keeper(i)
                i += 1
            done[kind] += 200 * SIZE[kind]
        if not busy:
            time.sleep(0.005)


def threads(start, end):
    turn = [threading.Semaphore(1), threading.Semaphore(0)]
    stop = [False]

    def temporaries():
        i = 1000
        while True:
            turn[0].acquire()
            if stop[0]:
                return
            scratch_batch(i)
            i += BATCH
            turn[1].release()

    def keeps():
        i = 1000
        done = 0
        while True:
            turn[1].acquire()
            if time.monotonic() >= end:
                stop[0] = True
                turn[0].release()
                return
            while not behind(done, start) and time.monotonic() < end:
                time.sleep(0.005)
            keeper_batch(i)
            i += BATCH
            done += BATCH * SIZE["dict"]
            turn[0].release()

    ts = [threading.Thread(target=temporaries), threading.Thread(target=keeps)]
    for t in ts:
        t.start()
    return ts


print("ready", flush=True)
start = time.monotonic()
seconds = float(__import__("sys").argv[1])
pair = threads(start, start + seconds)
alternate(start, start + seconds)
for t in pair:
    t.join()
print("ok", flush=True)
