#!/bin/sh
# run-watch-exit.sh: the watched process exiting ends the watch with an exit event
# and status 7; with several, the watch goes on until the last one is gone.
. "$top_srcdir/tests/lib.sh"

start_target "$TARGETS/exit_early" 700 3
p=$target_pid
run_mw 7 -p "$p" -i 100ms -d 20s -o exit.log
expect_grep "^# event [0-9.]+ $p exit" exit.log
expect_grep '^# event [0-9.]+ - end reason=exited$' exit.log
[ "$(tail -n 1 exit.log | cut -d' ' -f2-5)" = "event $(tail -n 1 exit.log | cut -d' ' -f3) - end" ] ||
	fail "the end event is not the last line"
n=$(grep -c "^[0-9.]* $p " exit.log)
[ "$n" -ge 2 ] || fail "only $n samples before the exit"
# the watch ended soon after the exit, not at the duration
awk '$2 == "event" && $5 == "end" { exit !($3 < 10) }' exit.log || fail "the watch did not end at the exit"

# two processes: one exits early, the other later; the watch waits for both
start_target "$TARGETS/exit_early" 300 0
p1=$target_pid
start_target "$TARGETS/exit_early" 1500 0
p2=$target_pid
run_mw 7 -p "$p1,$p2" -i 100ms -d 20s -o exit2.log
expect_grep "^# event [0-9.]+ $p1 exit" exit2.log
expect_grep "^# event [0-9.]+ $p2 exit" exit2.log
t1=$(awk -v p="$p1" '$4 == p && $5 == "exit" { print $3 }' exit2.log)
# samples of p2 go on after p1 left
n=$(awk -v p="$p2" -v t="$t1" '$2 == p && $1 > t' exit2.log | wc -l)
[ "$n" -ge 3 ] || fail "the watch of $p2 did not go on after $p1 exited"
# a pid that exits before the watch starts: no such process
start_target "$TARGETS/exit_early" 1 0
gone=$target_pid
wait "$gone" 2>/dev/null
run_mw 4 -p "$gone" -i 100ms
expect_err_line "pid $gone: no such process"
finish
