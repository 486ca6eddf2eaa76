#!/bin/sh
# run-robust-killattach.sh: memwatch stopped at moments spread over its start
# and the attach (2 to 60 ms after it starts: before, during and just after the
# ptrace work and the agent's start): by SIGTERM, which it must hold until the
# borrowed thread is restored, and by SIGKILL once the attach is over (a SIGKILL
# while the borrowed thread runs the injected dlopen call cannot be caught: the
# kernel lets the thread go on into the call's trapping return address, which
# kills the target; memwatch(1) says so). The target must be left neither
# stopped nor traced nor crashed, keep its throughput, and a new watch must
# attach (or reuse the agent) and capture.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
ptrace_allowed

reused=0
for ms in 002 006 010 015 020 030 040 060; do
	: >"c$ms.out"
	"$robust" churn 0 1024 >"c$ms.out" &
	t=$!
	started_pids="$started_pids $t"
	wait_until "grep -q ops_per_s c$ms.out" 20
	"$MEMWATCH" -p "$t" -i 100ms -q --capture now -o "k$ms.log" >/dev/null 2>&1 &
	mw=$!
	started_pids="$started_pids $mw"
	sleep "0.$ms"
	kill -TERM "$mw"
	wait "$mw" 2>/dev/null
	target_free "killed after $ms ms" "$t" "c$ms.out"
	run_mw 0 -p "$t" -i 100ms -d 1s -q --capture now -o "r$ms.log"
	expect_grep "^# event [0-9.]+ $t attach .*reused=[01]" "r$ms.log"
	expect_grep "^# event [0-9.]+ $t snapshot path=r$ms\.$t\.[0-9]+-final\.snap .*final=1" "r$ms.log"
	grep -q 'reused=1' "r$ms.log" && reused=$((reused + 1))
	snaps_complete "after $ms ms" r$ms.*.snap
	target_free "rewatched after $ms ms" "$t" "c$ms.out"
	kill -9 "$t"
	wait "$t" 2>/dev/null
done
echo "the agent was found loaded $reused times in 8"

# SIGKILL right after the attach: the agent is in, capture started; the agent
# sees its owner gone and stops, and the next watch reuses it
: >ck.out
"$robust" churn 0 1024 >ck.out &
t=$!
started_pids="$started_pids $t"
wait_until "grep -q ops_per_s ck.out" 20
"$MEMWATCH" -p "$t" -i 100ms -q --capture now -o kk.log >/dev/null 2>&1 &
mw=$!
started_pids="$started_pids $mw"
wait_until "grep -q ' capture-start ' kk.log 2>/dev/null" 20
kill -KILL "$mw"
wait "$mw" 2>/dev/null
target_free "killed after the attach" "$t" ck.out
run_mw 0 -p "$t" -i 100ms -d 1s -q --capture now -o rk.log
expect_grep "^# event [0-9.]+ $t attach .*reused=1" rk.log
expect_grep "^# event [0-9.]+ $t snapshot path=rk\.$t\.[0-9]+-final\.snap .*final=1" rk.log
target_free "rewatched after SIGKILL" "$t" ck.out
kill -9 "$t"
wait "$t" 2>/dev/null
no_temp_files "killattach"
finish
