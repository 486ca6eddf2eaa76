#!/bin/sh
# run-agent-fdchurn.sh: a program that closes every descriptor above stderr
# and opens pipes on the lowest numbers, round after round, for 12 s. The
# agent's control thread keeps its descriptors in a table of its own: the
# program can neither close the agent's socket nor get its numbers, and the
# agent never touches the program's pipes. So the attached watch keeps its
# capture and writes its final snapshot, 30 snapshots taken meanwhile all
# succeed, and the program finds every byte of its pipes where it put it.
. "$top_srcdir/tests/lib.sh"
need_ptrace

"$TARGETS/fd_churn" 12 >c.out &
t=$!
started_pids="$started_pids $t"
wait_until "grep -q '^ready' c.out" 10
wait_libc "$t"
"$MEMWATCH" -p "$t" --capture now -i 100ms -d 8s -q -o w.log >w.out 2>w.err &
mw=$!
started_pids="$started_pids $mw"
wait_until "grep -q '^# event .* $t capture-start' w.log 2>/dev/null" 20
ok=0
for i in $(seq 1 30); do
	if "$MEMWATCH" snap -p "$t" -w 0 -o "s$i.snap" >"s$i.out" 2>"s$i.err"; then
		ok=$((ok + 1))
	else
		echo "snapshot $i: $(head -n 1 "s$i.err")" >&2
	fi
done
[ "$ok" -eq 30 ] || fail "$ok of 30 snapshots taken while the program closes every descriptor"
wait "$mw"
st=$?
[ "$st" -eq 0 ] || { fail "memwatch -p $t: status $st"; sed 's/^/  | /' w.err >&2; }
expect_grep "^# event .* $t snapshot path=w\.$t\.[0-9]+-final\.snap .*final=1" w.log
expect_no_grep 'snapshot-failed' w.log
wait "$t"
st=$?
[ "$st" -eq 0 ] || fail "fd_churn: status $st"
expect_grep '^ok rounds=' c.out
finish
