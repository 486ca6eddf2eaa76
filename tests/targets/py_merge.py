# py_merge.py: for run-python-merge.sh. The same C path into the allocator
# (a list's item array, [None] * n, in the one C call of the eval loop) from
# several Python frames: one function called from two callers, and two lines
# of one function, in turn. Prints "ready" and waits for a line; then builds
# and keeps COUNT of each, prints "grown" and waits for a line; prints "ok".
import sys

count = int(sys.argv[1]) if len(sys.argv) > 1 else 400


def make(n):
    return [None] * n                  # LINE:make


def from_a(n):
    return make(n)                     # LINE:from_a


def from_b(n):
    return make(n)                     # LINE:from_b


def two(n):
    x = [None] * n                     # LINE:two1
    y = [None] * (n + 1)               # LINE:two2
    return x, y


print("ready", flush=True)
sys.stdin.readline()
kept = []
for i in range(count):
    kept.append(from_a(1000))
    kept.append(from_b(3000))
    kept.append(two(2000))
print("grown", flush=True)
sys.stdin.readline()
print("ok", flush=True)
