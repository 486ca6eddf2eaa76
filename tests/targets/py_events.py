# py_events.py: instances of a user class, Event, kept in a module-level list
# (AUDIT_LOG), with churn of other objects made and dropped meanwhile. At each
# line on stdin it creates N more events (N from argv, default 200000) and
# prints "created N TOTAL". Prints "ready" first and "ok" at end of input.
import sys

AUDIT_LOG = []


class Event:
    def __init__(self, seq, kind):
        self.seq = seq
        self.kind = kind


def churn(n):
    scratch = [(i, "scratch-%d" % i) for i in range(n)]
    return len(scratch)


def record(n):
    base = len(AUDIT_LOG)
    for i in range(n):
        AUDIT_LOG.append(Event(base + i, "audit"))
        if i % 8 == 0:
            churn(16)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    print("ready", flush=True)
    for _ in sys.stdin:
        before = len(AUDIT_LOG)
        record(n)
        print("created", len(AUDIT_LOG) - before, len(AUDIT_LOG), flush=True)
    print("ok", flush=True)


main()
