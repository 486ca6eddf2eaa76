#!/bin/sh
# run-python-merge.sh: at a rate of 1, each sample's Python frames are its own
# even where the C path into the allocator is the same. Debian's python3
# (3.11) runs tests/targets/py_merge.py, whose item arrays ([None] * n) all
# reach the allocator by one C path from several Python frames in turn: one
# function called from two callers, two lines of one function. The sampler
# reuses a native stack's last merge of Python frames while their signature
# is unchanged; a merge reused for other frames would give one of them the
# other's blocks. Each of the four stacks holds its own blocks' bytes (at
# least its item arrays, at most those and their list objects), in memwatch
# show's JSON.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
need_py311
need_python

target=$top_srcdir/tests/targets/py_merge.py
count=400
start_script merge "$py" "$target" $count || finish
# the agent in, then capture on at a rate of 1 until the end
run_mw 0 snap -p "$t" -w 1 -o m0.snap
start_ctl merge.ctl "$t" start=1 sleep=120000
python_state "$t" on
step merge
wait_until "grep -q '^grown' merge.out" 120 || finish
run_mw 0 snap -p "$t" -o m1.snap
run_mw 0 show -F json -n 0 m1.snap
cp out m1.json
step merge
finished merge "$t"

"$PYTHON" - m1.json "$target" $count <<'PY' || fail "the stacks of py_merge.py's lines do not hold their own blocks"
import json, re, sys
d = json.load(open(sys.argv[1]))
count = int(sys.argv[3])
line = {}
for i, text in enumerate(open(sys.argv[2]), 1):
    m = re.search(r"# LINE:(\w+)", text)
    if m:
        line[m.group(1)] = i
rows = d.get("rows") or d.get("grown") or []
if not rows:
    print("no rows in the JSON; its keys: %s" % sorted(d))
def has(r, fn, ln):
    return any(f.get("function") == fn and f.get("line") == ln and
               (f.get("file") or "").endswith("py_merge.py") for f in r["frames"])
def live(*want):
    return sum(r.get("live_bytes", r.get("bytes", 0)) for r in rows
               if all(has(r, fn, line[ln]) for fn, ln in want))
# (what the stacks hold, their item arrays of n words)
checks = [
    ("make from from_a", live(("make", "make"), ("from_a", "from_a")), 1000),
    ("make from from_b", live(("make", "make"), ("from_b", "from_b")), 3000),
    ("two, its first line", live(("two", "two1")), 2000),
    ("two, its second line", live(("two", "two2")), 2001),
]
ok = True
for what, got, n in checks:
    lo, hi = count * n * 8, count * (n * 8 + 256)
    print("%s: %d bytes live (expected %d to %d)" % (what, got, lo, hi))
    ok = ok and lo <= got <= hi
sys.exit(0 if ok else 1)
PY
finish
