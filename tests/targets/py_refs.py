# py_refs.py: objects kept alive two ways, for memwatch snap --referrers:
# instances of Event in a module-level list (AUDIT_LOG), and instances of
# Session in a dict that is a class attribute (Registry.sessions), each
# holding a list in an attribute (hits) and an instance of a class with
# __slots__ (mark) whose slot holds a set (seen), with churn
# of other objects made and dropped meanwhile. At each line on stdin it
# creates N more events and N/2 sessions (N from argv, default 100000) and
# prints "created N TOTAL". Prints "ready" first and "ok" at end of input.
# With "cache" after N, it makes instead instances of Entry kept by a
# functools.lru_cache (lookup) and of Memo kept in a dict a closure holds
# (remember); with "local", Event objects kept in a list that is a local
# variable (pending) of a function that runs on (serve).
import functools
import sys

AUDIT_LOG = []


class Event:
    def __init__(self, seq, kind):
        self.seq = seq
        self.kind = kind


class Mark:
    __slots__ = ("user", "seen")

    def __init__(self, user):
        self.user = user
        self.seen = {user}


class Session:
    def __init__(self, user):
        self.user = user
        self.hits = [user]
        self.mark = Mark(user)


class Registry:
    sessions = {}


class Entry:
    def __init__(self, key):
        self.key = key


class Memo:
    def __init__(self, key):
        self.key = key


@functools.lru_cache(maxsize=None)
def lookup(key):
    return Entry(key)


def memoizer():
    memo = {}

    def remember(key):
        if key not in memo:
            memo[key] = Memo(key)
        return memo[key]
    return remember


remember = memoizer()


def churn(n):
    scratch = [(i, "scratch-%d" % i) for i in range(n)]
    return len(scratch)


def record(n):
    base = len(AUDIT_LOG)
    for i in range(n):
        AUDIT_LOG.append(Event(base + i, "audit"))
        if i % 2 == 0:
            Registry.sessions["s%d" % (base + i)] = Session(base + i)
        if i % 8 == 0:
            churn(16)


def cache(n, base):
    for i in range(base, base + n):
        lookup(i)
        remember("m%d" % i)
        if i % 8 == 0:
            churn(16)


def serve(n):
    pending = []
    for _ in sys.stdin:
        for i in range(n):
            pending.append(Event(i, "pending"))
            if i % 8 == 0:
                churn(16)
        print("created", n, len(pending), flush=True)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    cached = len(sys.argv) > 2 and sys.argv[2] == "cache"
    if len(sys.argv) > 2 and sys.argv[2] == "local":
        print("ready", flush=True)
        serve(n)
        print("ok", flush=True)
        return
    made = 0
    print("ready", flush=True)
    for _ in sys.stdin:
        if cached:
            cache(n, made)
            made += n
            print("created", n, made, flush=True)
            continue
        before = len(AUDIT_LOG)
        record(n)
        print("created", len(AUDIT_LOG) - before, len(AUDIT_LOG), flush=True)
    print("ok", flush=True)


main()
