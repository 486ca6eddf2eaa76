# py_workload.py: allocation-heavy CPython workloads for bench/python-overhead.sh.
# ROUNDS [objects|json]. objects: every round builds many small objects (dicts,
# tuples, short strings, lists), keeps a tenth of them for a while and drops the
# rest: nearly every bytecode allocates. json: every round encodes records to
# JSON and decodes them back (the work of a web service), keeping a tenth.
# Prints "ready", waits for a line on stdin, runs the rounds, and prints their
# wall and CPU time (CPU of the whole process, every thread included) as
# "wall_s=W cpu_s=C maxrss_kib=K" (K: the peak RSS of the whole run).
import json
import resource
import sys
import time

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
kind = sys.argv[2] if len(sys.argv) > 2 else "objects"


def build(n, tag):
    out = []
    for i in range(n):
        rec = {"id": i, "name": "%s-%d" % (tag, i), "pair": (i, i * 2)}
        out.append(rec)
    return out


def work_json():
    kept = []
    recs = [{"id": i, "name": "user-%d" % i, "tags": ["a", "b", str(i)], "score": i / 7}
            for i in range(5000)]
    for r in range(rounds):
        for _ in range(4):
            back = json.loads(json.dumps(recs))
        kept.append(back[::10])
        if len(kept) > 8:
            kept.pop(0)


def work():
    kept = []
    for r in range(rounds):
        batch = build(50000, "r%d" % r)
        words = [str(x) for x in range(20000)]
        joined = ",".join(words).split(",")
        kept.append(batch[::10])
        if len(kept) > 8:
            kept.pop(0)
        del batch, words, joined


print("ready", flush=True)
sys.stdin.readline()
t0 = time.perf_counter()
c0 = resource.getrusage(resource.RUSAGE_SELF)
work() if kind == "objects" else work_json()
c1 = resource.getrusage(resource.RUSAGE_SELF)
t1 = time.perf_counter()
cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
print("wall_s=%.4f cpu_s=%.4f maxrss_kib=%d" % (t1 - t0, cpu, c1.ru_maxrss), flush=True)
