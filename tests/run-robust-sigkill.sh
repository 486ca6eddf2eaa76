#!/bin/sh
# run-robust-sigkill.sh: memwatch killed with SIGKILL in the middle of a capture
# (the trigger fired, a snapshot was written) cannot clean up; the target must
# not notice: it keeps running at its speed, its agent sees the control
# connection gone and stops sampling on its own (hooks removed), and a later
# memwatch reuses the agent already loaded (attach event reused=1) and
# captures as before. The same when memwatch run is killed: its command goes on.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
need_ptrace

: >churn.out
start_churn churn.out 3 0 4096
before_from=1

"$MEMWATCH" -p "$t" -i 100ms -q -t +4MiB --snap-every 500ms -o k.log >out 2>err &
mw=$!
started_pids="$started_pids $mw"
wait_until "grep -q ' snapshot path=' k.log 2>/dev/null" 30
kill -KILL "$mw"
wait "$mw" 2>/dev/null
expect_grep "^# event [0-9.]+ $t trigger " k.log
expect_grep "^# event [0-9.]+ $t attach .*reused=0" k.log
log_lines_whole "killed watch" k.log
snaps_complete "killed watch" k.*.snap
target_free "SIGKILL" "$t" churn.out

# the agent stops sampling by itself
capture_off "after SIGKILL" "$t"
after_from=$(($(grep -c '' churn.out) + 1))
wait_until "[ \$(grep -c ops_per_s churn.out) -ge $((after_from + 3)) ]" 20
throughput_kept "after SIGKILL" churn.out "$before_from" "$after_from"

# a new watch reuses the agent and works
run_mw 0 -p "$t" --capture now -i 100ms -d 3s -q -o again.log
expect_grep "^# event [0-9.]+ $t attach .*reused=1" again.log
expect_grep "^# event [0-9.]+ $t capture-start " again.log
expect_grep "^# event [0-9.]+ $t snapshot path=again\.$t\.[0-9]+-final\.snap .*final=1" again.log
expect_grep "^# event [0-9.]+ $t capture-stop reason=duration" again.log
log_ended "second watch" again.log
snaps_complete "second watch" again.*.snap
# its report names the leak
expect_grep "robust_leak" out
capture_off "after the second watch" "$t"
kill -0 "$t" || fail "the target died"
kill "$t"

# memwatch run killed: its command, orphaned, goes on; its agent (preloaded,
# capturing from the start) stops capturing when its owner's connection goes
: >run.out
"$MEMWATCH" run -i 100ms -q -o run.log -- "$robust" churn 0 1024 >run.out 2>run.err &
mw=$!
started_pids="$started_pids $mw"
wait_until "[ \$(grep -c ops_per_s run.out) -ge 2 ]" 20
c=$(sed -n 's/^# process: \([0-9]*\) .*/\1/p' run.log)
[ -n "$c" ] && started_pids="$started_pids $c"
expect_grep "^# event [0-9.]+ $c capture-start " run.log
kill -KILL "$mw"
wait "$mw" 2>/dev/null
target_free "memwatch run killed" "$c" run.out
capture_off "memwatch run killed" "$c"
run_mw 0 -p "$c" --capture now -i 100ms -d 1s -q -o run2.log
expect_grep "^# event [0-9.]+ $c attach .*reused=1" run2.log
no_temp_files "sigkill"
finish
