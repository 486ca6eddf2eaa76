#!/bin/sh
# run-attach-idle.sh: load a stand-in agent into idle targets whose threads sit
# in clock_nanosleep, read, epoll_wait and pthread_cond_wait; the calls must
# happen, repeat as "already loaded", report dlopen and start failures, and the
# targets must see no EINTR and no corruption.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/attach-lib.sh"

# 1. main thread sleeping, plus read/epoll/cond threads and one allocating worker
start_attach_target ready --seconds 8 --reader --epoll --cond --workers 1 >t1.out 2>&1
t1=$target_pid
run_inject 0 "$t1" "$PROBE" "marker=$tmp/marker,rate=4096"
expect_grep '^ok tid=[0-9]+ attempts=[0-9]+ pause_ms=[0-9.]+ total_ms=[0-9.]+ already_loaded=0$' out
expect_grep "^start pid=$t1 tid=[0-9]+ loads=1 calls=1 options=marker=$tmp/marker,rate=4096$" marker

# again: the library is mapped, only the start function runs
run_inject 0 "$t1" "$PROBE" "marker=$tmp/marker"
expect_grep 'already_loaded=1$' out
expect_grep "^start pid=$t1 tid=[0-9]+ loads=1 calls=2 " marker

# the start function fails: reported, and the process goes on
run_inject 5 "$t1" "$PROBE" "fail"
expect_err_line "pid $t1: cannot attach: memwatch_agent_start\\(\"fail\"\\) returned -1"

# dlopen refuses a library: dlerror's text comes back
run_inject 5 "$t1" "$BADLIB" ""
expect_err_line "pid $t1: cannot attach: dlopen of the agent failed in the process: .*undefined symbol: mw_attach_no_such_function"

# the probe is not named like the agent
"$MW_INJECT" --loaded "$t1" >out 2>err
[ $? -eq 1 ] || fail "mw-inject --loaded: probe reported as the agent"

# several more times in a row: every sleep restarts transparently
for i in 1 2 3; do
	run_inject 0 "$t1" "$PROBE" "marker=$tmp/marker"
done
expect_target_ok "$t1" 40 t1.out
expect_grep 'eintr=0 corrupt=0' t1.out

# 2. only a read() thread is blocked (main allocates): it is the one used
start_attach_target ready2 --seconds 3 --busy --reader >t2.out 2>&1
t2=$target_pid
run_inject 0 "$t2" "$PROBE" "marker=$tmp/marker2"
expect_grep "^start pid=$t2 " marker2
tid=$(sed -n 's/^ok tid=\([0-9]*\) .*/\1/p' out)
[ -n "$tid" ] && [ "$tid" != "$t2" ] || fail "expected the read() thread to be used, got tid '$tid'"
expect_target_ok "$t2" 40 t2.out

# 3. a pthread_cond_wait thread and an epoll_wait thread (never interrupted)
start_attach_target ready3 --seconds 3 --busy --cond --epoll >t3.out 2>&1
t3=$target_pid
run_inject 0 "$t3" "$PROBE" "marker=$tmp/marker3"
expect_grep "^start pid=$t3 " marker3
expect_target_ok "$t3" 40 t3.out

finish
