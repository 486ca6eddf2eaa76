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

[ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" -ge 2 ] &&
	[ "$(id -u)" -ne 0 ] && skip "ptrace is restricted (yama ptrace_scope >= 2)"
py=/usr/bin/python3
[ -x "$py" ] || skip "/usr/bin/python3 is not installed (tests/install-deps.sh)"
"$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
	skip "/usr/bin/python3 is not CPython 3.11, the version the agent reads"
script=$top_srcdir/tests/targets/py_grow.py
CTL=$top_builddir/tests/tools/agentctl
SNAPDUMP=$top_builddir/tests/tools/snapdump
[ -x "$SNAPDUMP" ] || skip "tests/tools/snapdump is not built"
MIB=1048576

# live_total SNAP: the estimated live bytes of all the stacks of SNAP.
live_total() {
	if ! "$SNAPDUMP" "$1" >"$1.txt" 2>"$1.err"; then
		fail "snapdump $1: $(cat "$1.err")"
		echo 0
		return
	fi
	awk '/^stack / { for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "live_bytes") t += kv[2] } }
	     END { printf "%.0f\n", t }' "$1.txt"
}

# the change in sys.getallocatedblocks() across the growth and the drop, plain
printf '\n\n\n' | "$py" "$script" drop >plain.out 2>plain.err ||
	fail "python (plain) exited with status $?"
plain=$(awk '$1 == "dropped" { print $2 }' plain.out)
[ -n "$plain" ] || { fail "no block count from the plain run"; plain=0; }

mkfifo drop.in
"$py" "$script" drop <drop.in >drop.out 2>drop.err &
t=$!
sleep 3600 >drop.in &
holder=$!
started_pids="$started_pids $t $holder"
wait_until "grep -q '^ready' drop.out 2>/dev/null" 30 || finish
# the agent in, then capture on at 64 KiB until the end
run_mw 0 snap -p "$t" -w 1 -o d0.snap
"$CTL" "$t" start=65536 sleep=120000 >drop.ctl 2>&1 &
ctl=$!
started_pids="$started_pids $ctl"
wait_until "'$CTL' $t status >st.out 2>&1 && grep -q ' python=on\$' st.out" 20 ||
	sed 's/^/  status: /' st.out >&2
echo go >drop.in
wait_until "grep -q '^grown' drop.out" 60
run_mw 0 snap -p "$t" -o d1.snap
grown=$(live_total d1.snap)
run_mw 0 show d1.snap
expect_grep '  grow_small_objects  .*py_grow\.py:[0-9]+' out
echo go >drop.in
wait_until "grep -q '^dropped' drop.out" 60
run_mw 0 snap -p "$t" -o d2.snap
left=$(live_total d2.snap)
echo "live heap: $grown bytes grown, $left bytes after the drop"
[ "$grown" -ge $((30 * MIB)) ] || fail "only $grown bytes live once grown, expected >= 30 MiB"
[ "$left" -le $((grown / 10)) ] || fail "$left bytes still live after the objects were dropped (of $grown)"
blocks=$(awk '$1 == "dropped" { print $2 }' drop.out)
echo "sys.getallocatedblocks() changed by ${blocks:-?} under capture, $plain without"
[ -n "$blocks" ] && [ "$blocks" -ge $((plain - 200)) ] && [ "$blocks" -le $((plain + 200)) ] ||
	fail "sys.getallocatedblocks() changed by '${blocks:-}' under capture, $plain without"
kill "$ctl" 2>/dev/null
wait "$ctl" 2>/dev/null
echo go >drop.in
wait "$t"
st=$?
kill "$holder" 2>/dev/null
[ "$st" -eq 0 ] || { fail "python exited with status $st"; sed 's/^/  | /' drop.err >&2; }
expect_grep '^ok$' drop.out
expect_no_grep 'Fatal Python error|Segmentation|Traceback' drop.err
finish
