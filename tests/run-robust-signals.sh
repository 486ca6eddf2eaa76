#!/bin/sh
# run-robust-signals.sh: SIGINT and SIGTERM in each phase of a watch that
# captures: while capture runs (after the trigger), as the trigger fires (the
# attach: best effort), while snapshots of 16384 stacks are taken (best
# effort), and while a report waits on a debuginfod server that never answers.
# Each ends with 130 or 143, the run log complete (the end event last), every
# snapshot whole or absent, no temporary file; the target goes on, its agent no
# longer capturing, at its former speed.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
need_ptrace

# watch_then_signal SIG LOGNAME EVENT DELAY ARGS...: start a watch of ARGS
# writing LOGNAME, wait for a log line matching EVENT, sleep DELAY, send SIG;
# $status is the watch's exit status.
watch_then_signal() {
	local sig=$1 log=$2 event=$3 delay=$4 mw
	shift 4
	"$MEMWATCH" "$@" -q -o "$log" >out 2>err &
	mw=$!
	started_pids="$started_pids $mw"
	i=0
	while ! grep -Eq -- "$event" "$log" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -gt 2000 ] && { fail "$log: no '$event' in 20 s"; break; }
		sleep 0.01
	done
	sleep "$delay"
	kill -s "$sig" "$mw"
	wait "$mw"
	status=$?
}

# ended_cleanly WHAT SIG LOG [ALLOWED]: the status and the log of a watch ended
# by SIG; stderr has only warnings, hints and lines matching ALLOWED.
ended_cleanly() {
	local what=$1 sig=$2 log=$3 allowed=${4:-^$} want n
	case $sig in INT) want=130 n=2 ;; TERM) want=143 n=15 ;; esac
	[ "$status" -eq "$want" ] || fail "$what: status $status, expected $want"
	grep -v '^memwatch: warning: ' err | grep -v '^  hint: ' | grep -Ev -- "$allowed" | grep -q . &&
		fail "$what: stderr: $(cat err)"
	expect_grep "^# event [0-9.]+ - signal signal=$n\$" "$log"
	expect_grep '^# event [0-9.]+ - end reason=signal$' "$log"
	log_ended "$what" "$log"
	log_lines_whole "$what" "$log"
	if grep -q ' capture-start ' "$log"; then
		expect_grep '^# event [0-9.]+ [0-9]+ capture-stop reason=signal$' "$log"
	fi
	snaps_complete "$what" "${log%.log}".*.snap
	no_temp_files "$what"
}

# 1. while capturing, after the trigger and a snapshot
: >churn.out
start_churn churn.out 3 0 4096
for sig in INT TERM; do
	watch_then_signal $sig "cap-$sig.log" " $t snapshot path=" 0.5 -p "$t" -i 100ms -t +4MiB
	ended_cleanly "capturing, SIG$sig" $sig "cap-$sig.log"
	expect_grep "^# event [0-9.]+ $t snapshot path=cap-$sig\.$t\.[0-9]+-final\.snap .*final=1" "cap-$sig.log"
	target_free "SIG$sig while capturing" "$t" churn.out
	capture_off "SIG$sig while capturing" "$t"
done
after=$(($(grep -c '' churn.out) + 1))
wait_until "[ \$(grep -c '' churn.out) -ge $((after + 3)) ]" 20
throughput_kept "after the signals" churn.out 1 "$after"
kill "$t"

# 2. as the trigger fires: the signal races the attach (best effort)
: >churn2.out
start_churn churn2.out 1 0 8192
watch_then_signal TERM att.log " $t trigger " 0 -p "$t" -i 50ms -t +4MiB
# an attach (or the start of capture after it) the signal cut short says so
ended_cleanly "attaching, SIGTERM" TERM att.log \
	"^memwatch: pid $t: cannot (attach|start capture): (pid $t: )?interrupted"
target_free "SIGTERM while attaching" "$t" churn2.out
if grep -q " $t attach " att.log; then
	capture_off "SIGTERM while attaching" "$t"
fi
kill "$t"

# 3. while snapshots of 16384 stacks are taken, every 300 ms (best effort);
# the target allocates them once capture has started
for sig in INT TERM; do
	"$robust" stacks 16384 30 0.5 >stacks.out &
	t=$!
	started_pids="$started_pids $t"
	watch_then_signal $sig "snap-$sig.log" " $t snapshot path=.* stacks=[0-9]{4}" 0.25 \
		-p "$t" -i 100ms -r 1 --capture now --snap-every 300ms
	ended_cleanly "snapshotting, SIG$sig" $sig "snap-$sig.log"
	kill -0 "$t" || fail "SIG$sig while snapshotting: the target died"
	capture_off "SIG$sig while snapshotting" "$t"
	kill "$t"
done

# 4. while symbolizing: a debuginfod server that accepts and never answers
need_python
"$PYTHON" -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])
' >port &
started_pids="$started_pids $!"
wait_until "[ -s port ]" 10
cat >gone.txt <<'T'
pid 77
exe "/opt/gone/app"
cmdline "app"
sample_rate 524288
module 0 bias=0x400000 lo=0x400000 hi=0x401000 build_id=0123456789abcdef0123456789abcdef01234567 path="/opt/gone/app"
stack 0 live_bytes=3145728 live_blocks=3 live_samples=3 alloc_bytes=4194304 alloc_blocks=4 flags=0x0
  0:0x42
T
"$snapdump" --from-text gone.txt gone.snap || fail "snapdump --from-text gone.txt"
DEBUGINFOD_URLS=http://127.0.0.1:$(cat port)
DEBUGINFOD_TIMEOUT=600
DEBUGINFOD_CACHE_PATH=$tmp/debuginfod-cache
export DEBUGINFOD_URLS DEBUGINFOD_TIMEOUT DEBUGINFOD_CACHE_PATH
echo 'an earlier report' >kept.txt
# a background job ignores SIGINT unless told otherwise (as a terminal's
# foreground job would not)
defsig=
env --default-signal=INT true 2>/dev/null && defsig="env --default-signal=INT"
for sig in INT TERM; do
	[ "$sig" = INT ] && [ -z "$defsig" ] && continue
	for cmd in "show -o kept.txt gone.snap" "show -E copy.snap gone.snap" \
		"diff -o kept.txt gone.snap gone.snap"; do
		rm -rf "$DEBUGINFOD_CACHE_PATH"
		# shellcheck disable=SC2086
		$defsig "$MEMWATCH" $cmd >out 2>err &
		mw=$!
		started_pids="$started_pids $mw"
		# give it time to reach the server and wait there
		sleep 1.5
		kill -0 "$mw" 2>/dev/null || fail "$cmd: it ended before the signal: $(cat err)"
		kill -s "$sig" "$mw"
		wait "$mw"
		status=$?
		case $sig in INT) want=130 ;; TERM) want=143 ;; esac
		[ "$status" -eq "$want" ] || fail "$cmd, SIG$sig: status $status, expected $want"
		[ "$(cat kept.txt)" = 'an earlier report' ] || fail "$cmd, SIG$sig: kept.txt changed"
		[ -e copy.snap ] && fail "$cmd, SIG$sig: a copy was written"
		[ -s out ] && fail "$cmd, SIG$sig: a report was printed"
		no_temp_files "$cmd, SIG$sig"
	done
done
finish
