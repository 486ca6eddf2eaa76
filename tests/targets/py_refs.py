# py_refs.py: objects kept alive two ways, for memwatch snap --referrers:
# instances of Event in a module-level list (AUDIT_LOG), and instances of
# Session in a dict that is a class attribute (Registry.sessions), with churn
# of other objects made and dropped meanwhile. At each line on stdin it
# creates N more of each (N from argv, default 100000) and prints "created N
# TOTAL". Prints "ready" first and "ok" at end of input.
import sys

AUDIT_LOG = []


class Event:
    def __init__(self, seq, kind):
        self.seq = seq
        self.kind = kind


class Session:
    def __init__(self, user):
        self.user = user
        self.hits = [user]


class Registry:
    sessions = {}


def churn(n):
    scratch = [(i, "scratch-%d" % i) for i in range(n)]
    return len(scratch)


def record(n):
    base = len(AUDIT_LOG)
    for i in range(n):
        AUDIT_LOG.append(Event(base + i, "audit"))
        Registry.sessions["s%d" % (base + i)] = Session(base + i)
        if i % 8 == 0:
            churn(16)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    print("ready", flush=True)
    for _ in sys.stdin:
        before = len(AUDIT_LOG)
        record(n)
        print("created", len(AUDIT_LOG) - before, len(AUDIT_LOG), flush=True)
    print("ok", flush=True)


main()
