# py_freelist_safety.py: what the agent's handling of CPython's free lists
# (src/agent/pyfree.c) must leave as it was, where dicts, tuples and lists die
# in the thousands while capture samples them:
# - an exception raised while dicts, tuples and lists built for the same
#   expression die (a list emptied inside their deallocator must leave the
#   exception pending);
# - nests up to 200 000 deep freed at once (the interpreter's trashcan still
#   bounds the C stack);
# - three threads, each dropping a dict and keeping a tuple in turn.
# Prints "ok EXCEPTIONS KEPT" and exits 0 when every one of them was as
# expected; an assertion fails otherwise.
import sys
import threading

N = 300000


def raising(i):
    # the items built before {}[i] raises are on the interpreter's stack,
    # dropped while the KeyError is pending
    return [{"a": i, "b": (i, i + 1)}, (i, [i, i]), [i], (i,), {}[i]]


caught = 0
for i in range(N):
    try:
        raising(i)
    except KeyError as e:
        assert e.args == (i,), e.args
        assert sys.exc_info()[0] is KeyError
        caught += 1
assert sys.exc_info() == (None, None, None)

for depth in (10, 1000, 200000):
    x = []
    for i in range(depth):
        x = [x, (i,), {"k": x}]
    del x

kept = []


def worker(n):
    for i in range(n):
        tmp = {"x": i}
        kept.append((i, i))
        del tmp


ts = [threading.Thread(target=worker, args=(N // 3,)) for _ in range(3)]
for t in ts:
    t.start()
for t in ts:
    t.join()
assert len(kept) == 3 * (N // 3)
assert all(a == b for a, b in kept)
print("ok", caught, len(kept), flush=True)
