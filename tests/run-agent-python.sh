#!/bin/sh
# run-agent-python.sh: Debian's own python3, a non-PIE program that takes the
# address of malloc and free: under memwatch run it runs to its end, and the
# bytes a script keeps are sampled, preloaded and attached (memwatch -p).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY is not installed (Debian package python3)"
need_snapdump

# The script keeps 300 bytes objects of 1 MiB each (filled, so they are
# resident and the growth shows in RSS), announced by "ready 1".
cat >grow.py <<'PYEOF'
import os, sys, time
keep = []
print("ready 0 %d" % os.getpid(), flush=True)
sys.stdin.readline()
for i in range(300):
    keep.append(b"\x01" * (1 << 20))
    time.sleep(0.005)
print("ready 1", flush=True)
sys.stdin.readline()
print("ok", len(keep), flush=True)
PYEOF

# A python3 whose allocator hooks called themselves spun for ever at its
# first free: it must run to its end and print.
timeout -k 5 30 "$MEMWATCH" run -q -- "$PY" -c 'print("hello")' </dev/null >out 2>err
st=$?
[ "$st" -eq 0 ] || { fail "memwatch run -- python3 -c: status $st"; sed 's/^/  | /' err >&2; }
expect_grep '^hello$' out

grow_under_run "$PY" grow.py 360
grow_attached "$PY" grow.py 360
finish
