#!/bin/sh
# run-watch-runsig.sh: signals under memwatch run. SIGTERM sent to memwatch alone
# is passed on to the command, and memwatch exits with the command's status;
# Ctrl-C typed at the terminal reaches the command through its process group and
# is not passed on twice; a command that ignores the signals does not hold
# memwatch forever.
. "$top_srcdir/tests/lib.sh"

# SIGTERM to memwatch: forwarded, the command dies of it, 143
"$MEMWATCH" run --capture never -q -i 100ms -o term.log -- "$TARGETS/flat" 2 >out 2>err &
mw=$!
started_pids="$started_pids $mw"
wait_until "[ \$(grep -c '^[0-9]' term.log 2>/dev/null || echo 0) -ge 3 ]" 20
child=$(awk '$2 == "process:" { print $3; exit }' term.log)
kill -TERM "$mw"
wait "$mw"
status=$?
[ "$status" -eq 143 ] || fail "status $status after SIGTERM, expected 143 (the command's)"
expect_grep '^# event [0-9.]+ - signal signal=15 forwarded=yes$' term.log
expect_grep "^# event [0-9.]+ $child exit signal=15\$" term.log
expect_grep '^# event [0-9.]+ - end reason=exited$' term.log
kill -0 "$child" 2>/dev/null && fail "the command $child still runs"

# the command's own exit status comes back
run_mw 5 run --capture never -q -i 100ms -o st.log -- "$TARGETS/exit_early" 300 5
expect_grep '^# event [0-9.]+ [0-9]+ exit status=5$' st.log

# a command that ignores SIGTERM: memwatch waits, then gives up at the third signal
"$MEMWATCH" run --capture never -q -i 100ms -o ign.log -- \
	sh -c 'trap "" TERM; exec "$0" 2' "$TARGETS/flat" >out 2>err &
mw=$!
started_pids="$started_pids $mw"
wait_until "[ \$(grep -c '^[0-9]' ign.log 2>/dev/null || echo 0) -ge 3 ]" 20
child=$(awk '$2 == "process:" { print $3; exit }' ign.log)
started_pids="$started_pids $child"
kill -TERM "$mw"
sleep 0.5
kill -0 "$mw" 2>/dev/null || fail "memwatch ended at the first signal while the command runs"
# signals sent close together may merge into one: send until memwatch gives up
i=0
running() {
	grep -Eq '^State:[[:space:]]*[^Z]' "/proc/$1/status" 2>/dev/null
}
while running "$mw" && [ "$i" -lt 20 ]; do
	kill -TERM "$mw" 2>/dev/null
	sleep 0.3
	i=$((i + 1))
done
wait "$mw"
status=$?
[ "$status" -eq 143 ] || fail "status $status after three SIGTERMs, expected 143"
expect_grep "^memwatch: warning: pid $child does not exit after 3 signals" err
expect_grep '^# event [0-9.]+ - end reason=signal$' ign.log
kill -0 "$child" 2>/dev/null || fail "the command was killed; it should go on"

# Ctrl-C at a terminal: the command gets it from the terminal, memwatch does not
# send it again
if command -v script >/dev/null 2>&1; then
	(sleep 1.5; printf '\003'; sleep 5) |
		script -qec "'$MEMWATCH' run --capture never -i 100ms -o tty.log -- '$TARGETS/flat' 2" typescript >/dev/null 2>&1
	status=$?
	[ "$status" -eq 130 ] || fail "status $status after Ctrl-C, expected 130"
	expect_grep '^# event [0-9.]+ - signal signal=2 forwarded=no$' tty.log
	expect_grep '^# event [0-9.]+ [0-9]+ exit signal=2$' tty.log
fi
finish
