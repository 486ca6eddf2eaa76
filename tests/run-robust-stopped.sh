#!/bin/sh
# run-robust-stopped.sh: a target that is stopped (SIGSTOP, a frozen cgroup)
# while it is captured, or snapshotted by memwatch snap. The watch keeps
# sampling it and says "stopped" and "continued"; a snapshot due meanwhile is
# put off and taken once it runs; the capture goes on to its last snapshot;
# snap waits for it, bounded; Ctrl-C works at once in every phase; memwatch
# never continues a process someone else stopped.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
need_ptrace

now() { date +%s.%N; }
# took SINCE MAX WHAT: fail unless less than MAX seconds passed since SINCE.
took() {
	local end
	end=$(now)
	awk -v a="$1" -v b="$end" -v m="$2" 'BEGIN { exit !(b - a < m) }' ||
		fail "$3: took $(awk -v a="$1" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s, more than $2 s"
}
# state_is PID LETTER WHAT: the process's state is LETTER (T: stopped).
state_is() {
	grep -Eq "^State:[[:space:]]*$2" "/proc/$1/status" ||
		fail "$3: pid $1: $(grep '^State:' "/proc/$1/status")"
}
# runs_free WHAT PID: PID is neither stopped nor traced and makes progress (the
# demo grows: its RSS goes up).
runs_free() {
	local rss
	grep -Eq '^State:[[:space:]]*[tT]|^TracerPid:[[:space:]]*[1-9]' "/proc/$2/status" &&
		fail "$1: pid $2 left stopped or traced"
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$2/status")
	wait_until "[ \$(awk '/^VmRSS:/ { print \$2 }' /proc/$2/status) -gt ${rss:-0} ]" 10
}
# wait_log PATTERN LOG SECS: wait for a line of LOG matching PATTERN.
wait_log() {
	wait_until "grep -Eq -- '$1' $2 2>/dev/null" "$3"
}

# 1. Stopped for 12 s while captured, then continued. The demo leaks about
# 6 MiB/s in cache_store (demo.c:25); a snapshot is due every 2 s.
"$TARGETS/demo" 60 >demo.out &
demo=$!
started_pids="$started_pids $demo"
"$MEMWATCH" -p "$demo" -i 250ms -d 28s -q --trigger +16MiB --snap-every 2s -o stop.log >out 2>err &
mw=$!
started_pids="$started_pids $mw"
wait_log " $demo snapshot path=" stop.log 30
sleep 1
kill -STOP "$demo"
sleep 12
kill -CONT "$demo"
wait "$mw"
status=$?
[ "$status" -eq 0 ] || fail "stopped 12 s: exit status $status, expected 0: $(cat err)"
grep -v '^memwatch: warning: ' err | grep -v '^  hint: ' | grep -q . && fail "stopped 12 s: stderr: $(cat err)"
expect_grep "^# event [0-9.]+ $demo stopped state=stopped\$" stop.log
expect_grep "^# event [0-9.]+ $demo continued after_s=[0-9.]+\$" stop.log
expect_grep "^# event [0-9.]+ $demo snapshot-deferred state=stopped\$" stop.log
expect_grep "^# event [0-9.]+ $demo snapshot path=stop\.$demo\.[0-9]+\.snap .* delayed_s=[0-9.]+\$" stop.log
expect_grep "^# event [0-9.]+ $demo snapshot path=stop\.$demo\.[0-9]+-final\.snap .*final=1" stop.log
expect_grep "^# event [0-9.]+ $demo capture-stop reason=duration\$" stop.log
expect_grep "^# event [0-9.]+ - end reason=duration\$" stop.log
# the sampling never waited on the stopped target: no gap of 5 s or more
# between two samples (the interval is 250 ms; it waited 10 s before)
gap=$(awk -v p="$demo" '$2 == p && $1 ~ /^[0-9]/ { if (n++ && $1 - last > g) g = $1 - last; last = $1 }
	END { printf "%.1f", g }' stop.log)
awk -v g="$gap" 'BEGIN { exit !(g < 5) }' || fail "stopped 12 s: $gap s between two samples"
# snapshots were taken after the process continued, before the final one
cont=$(awk -v p="$demo" '$1 == "#" && $2 == "event" && $4 == p && $5 == "continued" { print $3; exit }' stop.log)
after=$(awk -v p="$demo" -v c="${cont:-1e9}" '$1 == "#" && $2 == "event" && $4 == p &&
	$5 == "snapshot" && $3 >= c && !/final=1/ { n++ } END { print n + 0 }' stop.log)
[ "$after" -ge 2 ] || fail "stopped 12 s: $after snapshot(s) after the process continued, expected 2 or more"
snaps_complete "stopped 12 s" stop.*.snap
log_lines_whole "stopped 12 s" stop.log
# the report names the leak
expect_grep "cache_store" out
expect_grep "demo\.c:25" out
runs_free "stopped 12 s" "$demo"
kill "$demo"

# 2. Ctrl-C while the captured target is stopped and a snapshot is due: the
# watch ends at once; the last snapshot cannot be taken and the log says so;
# the target stays stopped (it is not ours to continue), and its agent stops
# capturing once it runs again.
"$TARGETS/demo" 60 >demo2.out &
d2=$!
started_pids="$started_pids $d2"
"$MEMWATCH" -p "$d2" -i 250ms -q --trigger +16MiB --snap-every 1s -o int.log >out 2>err &
mw=$!
started_pids="$started_pids $mw"
wait_log " $d2 snapshot path=" int.log 30
kill -STOP "$d2"
wait_log " $d2 stopped state=stopped" int.log 10
sleep 2
t0=$(now)
kill -INT "$mw"
wait "$mw"
status=$?
took "$t0" 3 "SIGINT while the target is stopped"
[ "$status" -eq 130 ] || fail "SIGINT while stopped: exit status $status, expected 130"
grep -v '^memwatch: warning: ' err | grep -v '^  hint: ' | grep -q . && fail "SIGINT while stopped: stderr: $(cat err)"
expect_grep "^memwatch: warning: pid $d2: no final snapshot: the process is stopped" err
expect_grep "^# event [0-9.]+ $d2 snapshot-failed cause=stopped final=1 retry=no\$" int.log
expect_grep "^# event [0-9.]+ $d2 capture-stop reason=signal\$" int.log
log_ended "SIGINT while stopped" int.log
state_is "$d2" T "SIGINT while stopped: the target was continued"
kill -CONT "$d2"
runs_free "SIGINT while stopped" "$d2"
capture_off "SIGINT while stopped" "$d2"
kill "$d2"

# 3. memwatch snap on a stopped target with an agent in it.
"$TARGETS/demo" 120 >demo3.out &
d3=$!
started_pids="$started_pids $d3"
run_mw 0 snap -p "$d3" -w 1s -o first.snap
kill -STOP "$d3"
wait_until "grep -Eq '^State:[[:space:]]*T' /proc/$d3/status" 10
# Ctrl-C ends it at once, with one line
"$MEMWATCH" snap -w 0 -p "$d3" -o int.snap >out 2>err &
sp=$!
started_pids="$started_pids $sp"
sleep 1
t0=$(now)
kill -INT "$sp"
wait "$sp"
status=$?
took "$t0" 3 "snap -w 0, SIGINT"
[ "$status" -eq 130 ] || fail "snap -w 0, SIGINT: exit status $status, expected 130"
expect_err_line "pid $d3: interrupted"
[ -e int.snap ] && fail "snap -w 0, SIGINT: int.snap written"
# without Ctrl-C it gives up after its bounded wait, with one line
t0=$(now)
run_mw 5 snap -w 0 -p "$d3" -o late.snap
took "$t0" 20 "snap -w 0 on a stopped target"
expect_err_line "pid $d3: the process is stopped: "
[ -e late.snap ] && fail "snap -w 0 on a stopped target: late.snap written"
state_is "$d3" T "snap -w 0: the target was continued"
# once continued, it answers again
kill -CONT "$d3"
run_mw 0 snap -w 0 -p "$d3" -o after.snap
[ -s after.snap ] || fail "snap after SIGCONT: no snapshot"
runs_free "snap on a stopped target" "$d3"
kill "$d3"

# 4. A frozen cgroup v2 (cgroup.freeze): its tasks show as sleeping, not
# stopped; memwatch reads the cgroup's state. Needs root and a cgroup v2
# hierarchy; the rest of the test does not.
cg=
for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [ "$(id -u)" -eq 0 ] && [ -e "$d/cgroup.controllers" ] && mkdir "$d/memwatch-test-$$" 2>/dev/null; then
		cg=$d/memwatch-test-$$
		break
	fi
done
if [ -z "$cg" ] || [ ! -e "$cg/cgroup.freeze" ]; then
	echo "frozen cgroup: not tried (needs root and cgroup v2 with cgroup.freeze)" >&2
	[ -n "$cg" ] && rmdir "$cg"
	finish
fi
# thawed before its processes are killed, removed once they are gone
trap 'rc=$?; echo 0 >"$cg/cgroup.freeze" 2>/dev/null; cleanup "$rc"' EXIT
cleanup_extra='rmdir "$cg" 2>/dev/null'
"$TARGETS/demo" 60 >demo4.out &
d4=$!
started_pids="$started_pids $d4"
echo "$d4" >"$cg/cgroup.procs" || fail "cannot move pid $d4 into $cg"
"$MEMWATCH" -p "$d4" -i 250ms -d 14s -q --trigger +16MiB --snap-every 1s -o frz.log >out 2>err &
mw=$!
started_pids="$started_pids $mw"
wait_log " $d4 snapshot path=" frz.log 30
echo 1 >"$cg/cgroup.freeze"
wait_log " $d4 stopped state=frozen" frz.log 10
sleep 3
echo 0 >"$cg/cgroup.freeze"
wait "$mw"
status=$?
[ "$status" -eq 0 ] || fail "frozen: exit status $status, expected 0: $(cat err)"
expect_grep "^# event [0-9.]+ $d4 stopped state=frozen\$" frz.log
expect_grep "^# event [0-9.]+ $d4 continued after_s=[0-9.]+\$" frz.log
expect_grep "^# event [0-9.]+ $d4 snapshot-deferred state=frozen\$" frz.log
expect_grep "^# event [0-9.]+ $d4 snapshot path=frz\.$d4\.[0-9]+-final\.snap .*final=1" frz.log
expect_grep "^# event [0-9.]+ $d4 capture-stop reason=duration\$" frz.log
runs_free "frozen" "$d4"
kill "$d4"
wait "$d4" 2>/dev/null
finish
