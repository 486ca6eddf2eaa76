#!/bin/sh
# run-python-free.sh: Debian's python3 (3.11) with capture on: small objects
# kept and then all dropped leave the live heap. pymalloc's own free stays in
# place while capture is on (the agent wraps only the allocating side), so the
# sampled blocks are malloc's and their free has to reach the agent through the
# interpreter's raw domain: if it did not, the dropped objects would stay live
# in every later snapshot. The interpreter's own count of blocks
# (sys.getallocatedblocks()) comes out as it does without memwatch: the
# sampled blocks are taken and given back the way pymalloc takes and gives
# back those it does not serve itself.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
need_py311
need_snapdump

# the change in sys.getallocatedblocks() across the growth and the drop, plain
printf '\n\n\n' | "$py" "$script" drop >plain.out 2>plain.err ||
	fail "python (plain) exited with status $?"
plain=$(awk '$1 == "dropped" { print $2 }' plain.out)
[ -n "$plain" ] || { fail "no block count from the plain run"; plain=0; }

start_script drop "$py" "$script" drop || finish
# the agent in, then capture on at 64 KiB until the end
run_mw 0 snap -p "$t" -w 1 -o d0.snap
start_ctl drop.ctl "$t" start=65536 sleep=120000
python_state "$t" on
step drop
wait_until "grep -q '^grown' drop.out" 60
run_mw 0 snap -p "$t" -o d1.snap
live_total d1.snap
grown=${live:-0}
expect_shows d1.snap grow_small_objects '[0-9]+'
step drop
wait_until "grep -q '^dropped' drop.out" 60
run_mw 0 snap -p "$t" -o d2.snap
live_total d2.snap
left=${live:-0}
echo "live heap: $grown bytes grown, $left bytes after the drop"
[ "$grown" -ge $((30 * MIB)) ] || fail "only $grown bytes live once grown, expected >= 30 MiB"
[ "$left" -le $((grown / 10)) ] || fail "$left bytes still live after the objects were dropped (of $grown)"
blocks=$(awk '$1 == "dropped" { print $2 }' drop.out)
echo "sys.getallocatedblocks() changed by ${blocks:-?} under capture, $plain without"
[ -n "$blocks" ] && [ "$blocks" -ge $((plain - 200)) ] && [ "$blocks" -le $((plain + 200)) ] ||
	fail "sys.getallocatedblocks() changed by '${blocks:-}' under capture, $plain without"
kill "$ctl" 2>/dev/null
wait "$ctl" 2>/dev/null
step drop
finished drop "$t"
finish
