#!/bin/sh
# run-robust-pids.sh: processes that are not there, or stop being there. A
# zombie (exited, its parent never reaps it) is refused like an exited process
# (4), with or without capture, and by memwatch snap; one that becomes a zombie
# during the watch has exited (7); memwatch snap of a pid that does not exist
# is 4; a process that exits while its allocations are captured ends the watch
# with 7, its log complete and its snapshots whole. No file is left behind by a
# refusal.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
need_ptrace

# a zombie: its parent prints its pid and sleeps without waiting for it
"$robust" zombie 60 >zombie.out &
parent=$!
started_pids="$started_pids $parent"
wait_until "[ -s zombie.out ]" 10
z=$(cat zombie.out)
wait_until "grep -q '^State:.*Z' /proc/$z/status 2>/dev/null" 10
for capture in growth now; do
	run_mw 4 -p "$z" -i 100ms -d 2s --capture "$capture" -o zombie.log
	expect_err_line "pid $z: the process has exited \(its parent has not reaped it\)$"
	[ -e zombie.log ] && fail "--capture $capture: a log was created for a zombie"
done
# in a list, the zombie is refused like a missing pid: nothing is watched
run_mw 4 -p "$parent,$z" -i 100ms -d 500ms -q -o mixed.log
expect_err_line "pid $z: the process has exited \(its parent has not reaped it\)$"
[ -e mixed.log ] && fail "a log was created for a list with a zombie"
kill -0 "$parent" || fail "the zombie's parent died"

# a process that becomes a zombie during the watch has exited: status 7
: >zombie2.out
"$robust" zombie 30 1.5 >zombie2.out &
started_pids="$started_pids $!"
wait_until "[ -s zombie2.out ]" 10
z2=$(cat zombie2.out)
run_mw 7 -p "$z2" -i 100ms -d 20s -q -o zombie2.log
expect_grep "^# event [0-9.]+ $z2 exit( |\$)" zombie2.log
expect_grep '^# event [0-9.]+ - end reason=exited$' zombie2.log
log_ended "a zombie during the watch" zombie2.log
grep -q '^State:.*Z' "/proc/$z2/status" 2>/dev/null || fail "pid $z2 is not a zombie"

# memwatch snap of a zombie: it would attach, and cannot
run_mw 4 snap -p "$z" -o zombie.snap
expect_err_line "pid $z: cannot attach: the process has exited \(zombie\)$"
[ -e zombie.snap ] && fail "snap of a zombie created a file"

# memwatch snap of a pid that does not exist
max=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 4194304)
run_mw 4 snap -p "$max" -o gone.snap
expect_err_line "pid $max: no such process$"
[ -e gone.snap ] && fail "snap of a missing pid created a file"

# a process that exits while captured: status 7, exit and end events, the
# snapshots whole, nothing half-written
start_churn churn.out 1 2.5 4096
c=$t
run_mw 7 -p "$c" -i 100ms -q --capture now --snap-every 500ms -o exit.log
[ -s err ] && fail "exiting target: stderr: $(cat err)"
expect_grep "^# event [0-9.]+ $c capture-start " exit.log
expect_grep "^# event [0-9.]+ $c exit( |\$)" exit.log
expect_grep "^# event [0-9.]+ - end reason=exited\$" exit.log
log_ended "exiting target" exit.log
log_lines_whole "exiting target" exit.log
ls exit.*.snap >/dev/null 2>&1 || fail "exiting target: no snapshot written"
snaps_complete "exiting target" exit.*.snap
no_temp_files "exiting target"
expect_grep '^done$' churn.out
# memwatch snap --wait 0 (no attach) of the first zombie, still unreaped: it
# has exited, status 4
grep -q '^State:.*Z' "/proc/$z/status" || fail "pid $z is no longer a zombie"
run_mw 4 snap --wait 0 -p "$z" -o z.snap
expect_err_line "pid $z: .*exited"
[ ! -e z.snap ] || fail "snap of a zombie wrote a file"
finish
