#!/bin/sh
# run-watch-runend.sh: how memwatch run ends. With -d the watch ends at the
# duration (status 0) and the command goes on running, its pid said; without
# it memwatch waits and gives the command's status, even when a snapshot could
# not be written (a watch of -p gives 1 then). A command that started other
# programs (sh -c 'a | b') without --children gets a hint.
. "$top_srcdir/tests/lib.sh"

# -d shorter than the command: status 0 at the duration, the command runs on
run_mw 0 run -q -d 1s -o d.log -- sleep 60
p=$(sed -n 's/^# process: \([0-9]*\) .*/\1/p' d.log)
[ -n "$p" ] || fail "no process line in the run log"
started_pids="$started_pids $p"
expect_err_line "pid $p is still running: the watch ended at --duration, the command goes on without it\$"
expect_grep '^# event [0-9.]+ - end reason=duration$' d.log
expect_no_grep "^# event [0-9.]+ $p exit" d.log
awk '$2 == "event" && $5 == "end" { exit !($3 < 20) }' d.log || fail "the watch did not end at the duration"
kill -0 "$p" 2>/dev/null || fail "the command did not go on running after the duration"
grep -Eq '^State:[[:space:]]*[SR]' "/proc/$p/status" 2>/dev/null ||
	fail "the command is not running freely: $(grep State "/proc/$p/status")"
kill "$p" 2>/dev/null

# -d longer than the command: memwatch waits for it and gives its status
printf 'x\n' > input
"$MEMWATCH" run -q -d 60s -o e.log -- "$TARGETS/run_leaker" 5 < input > out 2> err
status=$?
[ "$status" -eq 5 ] || { fail "run -d 60s: exit status $status, expected the command's 5"; cat err >&2; }
expect_no_grep 'still running' err

# sh -c 'a | b': the pipeline's programs were not sampled: said, with a hint
# (the shell lives long enough for its capture to start, so that the lines
# checked are not racing a short program's exit)
run_mw 0 run -q -o sh.log -- sh -c 'echo hello | cat > piped; sleep 1.5'
expect_grep "^memwatch: pid [0-9]+ started other programs, which were not watched\$" err
expect_grep '^  hint: memwatch run --children ' err
[ "$(cat piped)" = hello ] || fail "the pipeline did not run"
run_mw 0 run -q -c -o shc.log -- sh -c 'echo hello | cat > piped; sleep 1.5'
expect_no_grep 'not watched|run --children watches' err
run_mw 0 run -q -o one.log -- sleep 0.3
[ -s err ] && { fail "run of a program that starts none: stderr is not empty"; cat err >&2; }

# a snapshot that cannot be written (its name is too long for the file
# system; the log's is not): memwatch run still gives the command's status...
long=$(printf '%0250d' 0)
"$MEMWATCH" run -q -r 1 -o "$long.log" -- "$TARGETS/run_leaker" 3 < input > out 2> err
status=$?
[ "$status" -eq 3 ] || { fail "run with a lost snapshot: exit status $status, expected the command's 3"; cat err >&2; }
expect_grep "^memwatch: pid [0-9]+: 1 snapshot could not be written\$" err
rm -f "$long.log"
# ...and a watch of -p gives 1
start_target "$TARGETS/flat" 1
run_mw 1 -p "$target_pid" -q --capture now -i 200ms -d 1s -o "$long.log"
expect_grep "^memwatch: pid $target_pid: 1 snapshot could not be written\$" err
finish
