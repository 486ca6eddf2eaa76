# py_audit.py: a service whose method AuditTrail.record keeps instances of
# its class Event in a list that grows: every 100 ms it records N more (N
# from argv[1], default 2000), with churn of tuples and str made and dropped
# meanwhile, until the list holds CAP (argv[2], default 600000); then only
# the churn goes on. Prints "ready" first; runs until killed.
import sys
import time


class Event:
    def __init__(self, seq, kind):
        self.seq = seq
        self.kind = kind


class AuditTrail:
    def __init__(self):
        self.events = []

    def record(self, n):
        base = len(self.events)
        for i in range(n):
            self.events.append(Event(base + i, "audit"))
            if i % 8 == 0:
                churn(16)


def churn(n):
    scratch = [(i, "scratch-%d" % i) for i in range(n)]
    return len(scratch)


def serve(trail, n, cap):
    while True:
        if len(trail.events) < cap:
            trail.record(n)
        else:
            churn(n)
        time.sleep(0.1)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    cap = int(sys.argv[2]) if len(sys.argv) > 2 else 600000
    trail = AuditTrail()
    print("ready", flush=True)
    serve(trail, n, cap)


main()
