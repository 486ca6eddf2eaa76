#!/bin/sh
# run-watch-signal.sh: SIGINT, SIGTERM and SIGHUP end the watch cleanly: status
# 130, 143 and 129, a signal and an end event, every line complete; under nohup
# SIGHUP stays ignored. Each case makes the dispositions it is about: the
# default ones (whatever the test inherited), then nohup's.
. "$top_srcdir/tests/lib.sh"

start_target "$TARGETS/flat" 4
p=$target_pid
for sig in INT TERM HUP; do
	case $sig in INT) want=130 n=2 ;; TERM) want=143 n=15 ;; HUP) want=129 n=1 ;; esac
	env --default-signal=INT --default-signal=TERM --default-signal=HUP \
		"$MEMWATCH" -p "$p" -i 100ms -o "$sig.log" >out 2>err &
	mw=$!
	started_pids="$started_pids $mw"
	wait_until "[ \$(grep -c '^[0-9]' $sig.log 2>/dev/null || echo 0) -ge 3 ]" 20
	kill -s "$sig" "$mw"
	wait_exit "$mw" 20
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

# nohup: the hang-up is ignored and the watch goes on to its duration
if command -v nohup >/dev/null 2>&1; then
	nohup "$MEMWATCH" -p "$p" -i 100ms -d 2s -o nohup.log >out 2>err &
	mw=$!
	started_pids="$started_pids $mw"
	wait_until "[ \$(grep -c '^[0-9]' nohup.log 2>/dev/null || echo 0) -ge 3 ]" 20
	kill -HUP "$mw"
	wait_exit "$mw" 20
	[ "$status" -eq 0 ] || fail "under nohup: status $status after SIGHUP, expected 0"
	expect_grep '^# event [0-9.]+ - end reason=duration$' nohup.log
fi

# a closed pipe on -o - ends the watch with status 1, not by SIGPIPE
mkfifo fifo
"$MEMWATCH" -p "$p" -i 50ms -o - >fifo 2>err &
mw=$!
started_pids="$started_pids $mw"
head -n 3 fifo >/dev/null
wait_exit "$mw" 20
[ "$status" -eq 1 ] || fail "status $status after the reader left, expected 1"
expect_err_line "cannot write '<stdout>': Broken pipe"
finish
