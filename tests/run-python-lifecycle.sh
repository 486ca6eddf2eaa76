#!/bin/sh
# run-python-lifecycle.sh: Debian's python3 (3.11) under an attached agent
# through the life of a capture: started and stopped twice (the object
# allocator wrapped, then given back), the interpreter finalizing while capture
# is on (daemon threads still allocating), children forked while capture is on
# (they finish, finalizing or not, and the parent goes on being sampled), a
# program that keeps the GIL for seconds (the swap waits, capture goes on, then
# the swap happens), one that exits while the agent's helper waits for the GIL,
# and a program posing as a CPython the agent cannot read (captured
# native-only, one line says so). Every program exits 0.
. "$top_srcdir/tests/lib.sh"

[ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" -ge 2 ] &&
	[ "$(id -u)" -ne 0 ] && skip "ptrace is restricted (yama ptrace_scope >= 2)"
py=/usr/bin/python3
[ -x "$py" ] || skip "/usr/bin/python3 is not installed (tests/install-deps.sh)"
"$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
	skip "/usr/bin/python3 is not CPython 3.11, the version the agent reads"
script=$top_srcdir/tests/targets/py_grow.py
CTL=$top_builddir/tests/tools/agentctl
small_line=$(grep -n 'kept.append((i, "item-' "$script" | cut -d: -f1)
after_line=$(grep -n 'kept.append((i, "after-' "$script" | cut -d: -f1)

# start NAME PROGRAM ARGS...: start it with stdin from the fifo NAME.in; $t.
start() {
	name=$1
	shift
	rm -f "$name.in"
	mkfifo "$name.in" || fail "mkfifo $name.in"
	"$@" <"$name.in" >"$name.out" 2>"$name.err" &
	t=$!
	sleep 3600 >"$name.in" &
	started_pids="$started_pids $t $!"
	eval "holder_$name=$!"
	wait_until "[ -f $name.out ] && grep -q '^ready' $name.out" 30
}

# step NAME: one line to its stdin.
step() {
	echo go >"$1.in"
}

# finished NAME PID: it exits 0 having printed ok.
finished() {
	local st h
	wait "$2"
	st=$?
	eval "h=\$holder_$1"
	kill "$h" 2>/dev/null
	[ "$st" -eq 0 ] || { fail "$1 exited with status $st"; sed 's/^/  | /' "$1.out" "$1.err" >&2; }
	expect_grep '^ok$' "$1.out"
	expect_no_grep 'Fatal Python error|Segmentation|Traceback' "$1.err"
}

# python_state PID STATE: wait until the agent's status says python=STATE.
python_state() {
	wait_until "'$CTL' $1 status >st.out 2>&1 && grep -q ' python=$2\$' st.out" 20 ||
		sed 's/^/  status: /' st.out >&2
}

# 1. capture started and stopped twice by memwatch snap: Python frames in both
# snapshots (the second with its symbols embedded: the Python names are kept),
# the allocator given back after each
start steady "$py" "$script" steady
ps=$t
run_mw 0 snap -p "$ps" -w 1 -o s1.snap
python_state "$ps" off
run_mw 0 snap -p "$ps" -w 1 -E -o s2.snap
python_state "$ps" off
for s in s1 s2; do
	run_mw 0 show "$s.snap"
	expect_grep "  grow_small_objects  .*py_grow\.py:$small_line" out
done
step steady
finished steady "$ps"

# 2. the interpreter finalizes while capture is on
start fin "$py" "$script" finalize
pf=$t
run_mw 0 snap -p "$pf" -w 1 -o f0.snap
"$CTL" "$pf" start=65536 status sleep=20000 >fin.ctl 2>&1 &
ctl=$!
started_pids="$started_pids $ctl"
python_state "$pf" on
step fin
finished fin "$pf"
wait "$ctl"

# 3. forks while capture is on: the children finish (finalizing or not), the
# parent is sampled on, with its Python frames
start fork "$py" "$script" fork
pk=$t
run_mw 0 snap -p "$pk" -w 1 -o k0.snap
"$CTL" "$pk" start=65536 sleep=60000 >fork.ctl 2>&1 &
ctl=$!
started_pids="$started_pids $ctl"
python_state "$pk" on
step fork
wait_until "grep -q '^forked' fork.out" 60
sleep 1
run_mw 0 snap -p "$pk" -o k1.snap
run_mw 0 show k1.snap
expect_grep "  grow_after_fork  .*py_grow\.py:$after_line" out
kill "$ctl" 2>/dev/null
wait "$ctl" 2>/dev/null
python_state "$pk" off
step fork
finished fork "$pk"

# 4. a program that keeps the GIL: the swap waits (capture goes on meanwhile),
# and happens once the GIL is let go
start gil "$py" "$script" holdgil
pg=$t
run_mw 0 snap -p "$pg" -w 1 -o g0.snap
step gil
wait_until "grep -q '^holding' gil.out" 20
"$CTL" "$pg" start=65536 status sleep=1000 status >gil.ctl 2>&1 &
ctl=$!
started_pids="$started_pids $ctl"
wait "$ctl"
grep -q '^released' gil.out && echo "note: the GIL was let go before the checks" >&2
grep -q '^released' gil.out || expect_grep '^status: capturing=1 .* python=waiting$' gil.ctl
wait_until "grep -q '^released' gil.out" 20
python_state "$pg" off
run_mw 0 snap -p "$pg" -w 1 -o g1.snap
run_mw 0 show g1.snap
expect_grep "  grow_small_objects  .*py_grow\.py:$small_line" out
step gil
finished gil "$pg"

# 5. the interpreter finalizes while the agent's helper waits for the GIL
start hx "$py" "$script" holdexit
px=$t
run_mw 0 snap -p "$px" -w 1 -o x0.snap
step hx
wait_until "grep -q '^holding' hx.out" 20
"$CTL" "$px" start=65536 status sleep=20000 >hx.ctl 2>&1 &
ctl=$!
started_pids="$started_pids $ctl"
finished hx "$px"
wait "$ctl"
grep -q ' python=waiting$' hx.ctl ||
	echo "note: the helper had the GIL before the program held it" >&2

# 6. a CPython the agent cannot read: native-only, said in one line
start fake "$TARGETS/py_fake"
pz=$t
run_mw 0 snap -p "$pz" -w 1 -o z.snap
expect_grep "^memwatch: pid $pz: CPython 3\.12 is not supported \(3\.11 and 3\.13 are\): captured native-only" err
"$CTL" "$pz" status >z.ctl 2>&1 || fail "agentctl status: $(cat z.ctl)"
expect_grep ' python=unsupported$' z.ctl
step fake
finished fake "$pz"
finish
