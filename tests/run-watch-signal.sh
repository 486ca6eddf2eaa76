#!/bin/sh
# run-watch-signal.sh: SIGINT and SIGTERM end the watch cleanly: status 130 and
# 143, a signal and an end event, every line complete.
. "$top_srcdir/tests/lib.sh"

start_target "$TARGETS/flat" 4
p=$target_pid
for sig in INT TERM; do
	case $sig in INT) want=130 n=2 ;; TERM) want=143 n=15 ;; esac
	"$MEMWATCH" -p "$p" -i 100ms -o "$sig.log" >out 2>err &
	mw=$!
	started_pids="$started_pids $mw"
	wait_until "[ \$(grep -c '^[0-9]' $sig.log 2>/dev/null || echo 0) -ge 3 ]" 20
	kill -s "$sig" "$mw"
	wait "$mw"
	status=$?
	[ "$status" -eq "$want" ] || fail "SIG$sig: status $status, expected $want"
	[ -s err ] && fail "SIG$sig: stderr: $(cat err)"
	expect_grep "^# event [0-9.]+ - signal signal=$n\$" "$sig.log"
	expect_grep '^# event [0-9.]+ - end reason=signal$' "$sig.log"
	tail -n 1 "$sig.log" | grep -q 'end reason=signal$' || fail "SIG$sig: the end event is not last"
	# the file ends with a newline: no half line
	[ "$(tail -c 1 "$sig.log" | od -An -c | tr -d ' ')" = '\n' ] || fail "SIG$sig: last line incomplete"
	# the watched process goes on
	kill -0 "$p" || fail "SIG$sig: the target died with the watch"
done
finish
