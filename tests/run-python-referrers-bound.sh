#!/bin/sh
# run-python-referrers-bound.sh: the referrer search keeps to its bounds, on
# Debian's python3 (3.11). py_refs_big.py holds 10 million live objects the
# collector tracks, and a thread that measures its own stalls:
# - snap --referrers (default limit, 1 s) finishes: Python is held no longer
#   than the limit, the thread's longest stall is no longer than the limit and
#   a slack, and the pause per million objects is said; with a limit of
#   100 ms the search stops at it (status time-limit) and says so; on a
#   machine too busy to run it (a probe thread beside it), a search let go
#   by the agent 2 s past its limit (not-searched) is said and not judged;
# - a watch with --referrers writes the pause into the run log;
# - the GIL held by the program (a C call of 3 s): snap --referrers-limit
#   300ms gives up the search (the snapshot says why) within its bound, and
#   the next search, once the program lets the GIL go, is made;
# - the program ends while a search waits for the GIL (its interpreter
#   finalizing): it ends as it would have, with no crash.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
need_py311
big=$top_srcdir/tests/targets/py_refs_big.py
slack_ms=700
# what the search may overrun its limit by: the time between two of its
# looks at the clock, and the agent's thread taken off the processor meanwhile
# on a busy machine (66 ms seen with make check's tests run in parallel, 263 ms
# with six tests at a time on two cores, 415 ms with two whole suites side by
# side, a load of 14)
pause_slack_ms=600

# probe_start / probe_end: a thread that only computes runs beside the search
# (probe.py, in this test's scheduling group); probe_end sets $share to the
# percentage of the time it was on a processor. Far below 100, the machine
# did not run runnable threads (whole suites side by side have starved one
# to 1-2 % of the wall clock for a second): then no bound in wall time can be
# judged, and the test says so instead. A search that blocked, not starved,
# leaves the probe its processor, and still fails.
cat > probe.py <<'PY'
import os
import time
w0 = time.monotonic()
c0 = time.process_time()
open("probe.go", "w").close()
while not os.path.exists("probe.stop"):
    t = time.monotonic() + 0.01
    while time.monotonic() < t:
        pass
w = time.monotonic() - w0
print(int(100 * (time.process_time() - c0) / w) if w > 0 else 100)
PY
probe_start() {
	rm -f probe.go probe.stop probe.out
	"$py" probe.py > probe.out &
	probe_pid=$!
	started_pids="$started_pids $probe_pid"
	wait_until "[ -e probe.go ]" 30
}
probe_end() {
	: > probe.stop
	wait "$probe_pid"
	share=$(cat probe.out 2>/dev/null)
	case $share in
	'' | *[!0-9]*) fail "the probe beside the search printed '$share', not a percentage"; share=0 ;;
	esac
	echo "a thread beside the search was on a processor $share % of the time"
	[ "$share" -ge 30 ] && return 0
	echo "the machine was too busy to judge a bound in wall time: not judged"
	return 1
}

# say NAME LINE: a line to the script's stdin
say() {
	timeout 10 sh -c 'echo "$2" > "$1"' sh "$1.in" "$2" ||
		fail "cannot write to $1: the target is not reading"
}

# pause_of: from the JSON of the last show (out), $pause_ms and $status
pause_of() {
	pause_ms=$(sed -n 's/.*"referrers": {"status": "[a-z-]*", .*"pause_ns": \([0-9]*\),.*/\1/p' out | head -n 1)
	status=$(sed -n 's/.*"referrers": {"status": "\([a-z-]*\)".*/\1/p' out | head -n 1)
	pause_ms=$(( ${pause_ms:-999999999999} / 1000000 ))
}

start_script big "$py" "$big" 10000000 || finish
wait_until "grep -q '^ready' big.out" 120
run_mw 0 snap -p "$t" -w 1 -o big.0.snap
start_ctl big.ctl "$t" start=65536 sleep=300000
python_state "$t" on
step big
wait_until "grep -q '^created' big.out" 60

for limit in 1000 100; do
	n=$(grep -c '^reset' big.out)
	say big reset
	wait_until "[ \$(grep -c '^reset' big.out) -gt $n ]" 20
	probe_start
	run_mw 0 snap -p "$t" -w 0 --referrers --referrers-limit "${limit}ms" -o "big.$limit.snap"
	cp out "big.$limit.out"
	judged=true
	probe_end || judged=false
	# a search thread starved past its limit and the 2 s margin after it
	# is let go by the agent, which says so: right, and not judged
	if ! $judged && grep -q "referrers not searched: the search did not end in time" "big.$limit.out"; then
		echo "limit ${limit} ms: the search, starved, did not end within its margin: not judged"
		continue
	fi
	expect_grep "^pid $t: referrers: Python held .*, [0-9]+ objects traversed in [0-9]+ pass(es)? \\([0-9]+ tracked\\)" "big.$limit.out"
	run_mw 0 show -F json "big.$limit.snap"
	pause_of
	echo "limit ${limit} ms: $status, Python held $pause_ms ms"
	$judged && { [ "$pause_ms" -le $((limit + pause_slack_ms)) ] || fail "the search held Python $pause_ms ms, over its limit of $limit ms"; }
	visited=$(sed -n 's/.*"referrers": {.*"visited": \([0-9]*\),.*/\1/p' out | head -n 1)
	[ "$pause_ms" -gt 0 ] && echo "pause per million objects traversed: $((pause_ms * 1000000 / ${visited:-1})) ms"
	n=$(grep -c '^stall' big.out)
	say big stall
	wait_until "[ \$(grep -c '^stall' big.out) -gt $n ]" 20
	stall=$(awk '$1 == "stall" { s = $2 } END { print s + 0 }' big.out)
	echo "the script's thread stalled $stall ms at most"
	$judged && { [ "$stall" -le $((limit + slack_ms)) ] ||
		fail "the script's thread stalled $stall ms, over the limit of $limit ms and $slack_ms ms"; }
	# every object the collector tracks, when the search got through them
	# (a search cut short on a busy machine counts fewer)
	case $limit.$status in
	1000.done) expect_grep "\\(1[0-9]{7} tracked\\)" "big.$limit.out" ;;
	*) expect_grep "\\([1-9][0-9]* tracked\\)" "big.$limit.out" ;;
	esac
	case $limit in
	100) [ "$status" = time-limit ] || fail "with a limit of 100 ms the search ended '$status', not at its limit"
	     expect_grep 'the time limit was reached' "big.$limit.out" ;;
	*) [ "$status" = done ] || [ "$status" = time-limit ] || fail "the search ended '$status'" ;;
	esac
done

# the watch: its final snapshot's search, in the run log
probe_start
run_mw 0 -p "$t" -d 2s -i 200ms -q --capture now --referrers -o big.log
judged=true
probe_end || judged=false
if ! $judged && grep -Eq "^# event [0-9.]+ $t referrers status=not-searched " big.log; then
	echo "the watch's search, starved, did not end within its margin: not judged"
else
	expect_grep "^# event [0-9.]+ $t referrers (status=done pause-ms=[0-9.]+ visited=[0-9]+ tracked=1[0-9]{7}|status=time-limit pause-ms=[0-9.]+ visited=[0-9]+ tracked=[1-9][0-9]*) passes=[0-9]+ chains=[0-9]+" big.log
	pause=$(sed -n 's/.* referrers status=[a-z-]* pause-ms=\([0-9]*\).*/\1/p' big.log)
	$judged && { [ "${pause:-99999}" -le $((1000 + pause_slack_ms)) ] ||
		fail "the watch's search held Python ${pause:-?} ms"; }
fi

kill "$ctl" 2>/dev/null
wait "$ctl" 2>/dev/null
end_target big
finished big "$t"

# the GIL held by the program: the search is given up, then made again
start_script hold "$py" "$big" 100000 || finish
run_mw 0 snap -p "$t" -w 1 -o hold.0.snap
start_ctl hold.ctl "$t" start=16384 sleep=300000
python_state "$t" on
step hold
wait_until "grep -q '^created' hold.out" 60
say hold "hold 3000"
sleep 0.3
t0=$(date +%s%N)
run_mw 0 snap -p "$t" -w 0 --referrers --referrers-limit 300ms -o hold.1.snap
t1=$(date +%s%N)
expect_grep "^pid $t: referrers not searched: the GIL was not had within the time limit" out
echo "snap --referrers-limit 300ms took $(( (t1 - t0) / 1000000 )) ms while the program held the GIL"
[ $(( (t1 - t0) / 1000000 )) -lt 2700 ] || fail "the snapshot waited for the GIL past the limit"
wait_until "grep -q '^held' hold.out" 20
run_mw 0 snap -p "$t" -w 0 --referrers -o hold.2.snap
expect_grep "kept alive by: __main__\\.AUDIT_LOG \\(list\\) -> \\[[0-9]+\\] " out

# the program ends while a search waits for the GIL
say hold "bye 2000"
sleep 0.3
run_prog_any() { "$@" >out 2>err; st=$?; }
run_prog_any "$MEMWATCH" snap -p "$t" -w 0 --referrers --referrers-limit 5s -o hold.3.snap
echo "snap as the program ended: status $st: $(head -n 3 out err)"
case $st in
0|4|5) ;;
*) fail "snap --referrers as the program ended: status $st" ;;
esac
[ "$st" -eq 0 ] || expect_grep '^memwatch: ' err
finished hold "$t"
kill "$ctl" 2>/dev/null
wait "$ctl" 2>/dev/null
finish
