#!/bin/sh
# run-robust-killstop.sh: memwatch stopped by SIGSTOP while the borrowed thread
# runs the injected dlopen call (MEMWATCH_TEST_KILL_AT=call:stop: just after
# the thread is resumed into it). Left stopped for 13 s (past the call's 10 s
# limit) and then continued: memwatch
# lets go of the thread (the call is over its limit) with one line that
# says memwatch itself was stopped, and
# the thread puts itself back through its signal frame. Stopped and then
# killed: the same without memwatch. Either way the target may stall while
# memwatch is stopped, but survives intact, and a new watch attaches.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
need_ptrace

# start_steady FILE: a fresh target (robust_target steady 0: one thread, which
# checks its registers, signal mask and alternate stack after each sleep); $t.
start_steady() {
	: >"$1"
	"$robust" steady 0 >"$1" &
	t=$!
	started_pids="$started_pids $t"
	wait_until "grep -q '^tick ' $1" 20
}

# check_after WHAT PID FILE: alive, intact, free, ticking; a new watch works.
check_after() {
	kill -0 "$2" 2>/dev/null || { fail "$1: the target died"; return 0; }
	grep '^CORRUPT' "$3" >&2 && fail "$1: the target is corrupted"
	target_free "$1" "$2" "$3"
	run_mw 0 -p "$2" -i 100ms -d 300ms -q --capture now -f -o "r.log"
	expect_grep "^# event [0-9.]+ $2 attach " r.log
	expect_grep "^# event [0-9.]+ $2 snapshot path=.*final=1" r.log
	rm -f r.log r.*.snap
}

# stopped for 13 s, then continued
start_steady s1.out
MEMWATCH_TEST_KILL_AT=call:stop "$MEMWATCH" -p "$t" -i 100ms -d 1s -q --capture now -o k1.log \
	>k1.out 2>k1.err &
mw=$!
started_pids="$started_pids $mw"
wait_until "grep -q '^State:[[:space:]]*T' /proc/$mw/status" 20
ticks=$(grep -c '' s1.out)
sleep 13
kill -0 "$t" 2>/dev/null || fail "13 s stop: the target died while memwatch was stopped"
echo "the target ticked $(( $(grep -c '' s1.out) - ticks )) times while memwatch was stopped for 13 s"
kill -CONT "$mw"
wait "$mw"
st=$?
echo "memwatch continued after 13 s: exit status $st; $(cat k1.err)"
expect_grep "memwatch itself was stopped for [0-9.]+ s during the call in thread [0-9]+, over its 10000 ms limit" k1.err
check_after "after a 13 s stop" "$t" s1.out
kill -9 "$t"
wait "$t" 2>/dev/null

# stopped, then killed
start_steady s2.out
MEMWATCH_TEST_KILL_AT=call:stop "$MEMWATCH" -p "$t" -i 100ms -d 1s -q --capture now -o k2.log \
	>/dev/null 2>&1 &
mw=$!
started_pids="$started_pids $mw"
wait_until "grep -q '^State:[[:space:]]*T' /proc/$mw/status" 20
sleep 2
kill -KILL "$mw"
wait "$mw" 2>/dev/null
check_after "stopped, then killed" "$t" s2.out
kill -9 "$t"
wait "$t" 2>/dev/null
no_temp_files "killstop"
finish
