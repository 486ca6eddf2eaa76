#!/bin/sh
# run-attach-deep.sh: attaching to a process whose only thread sits deep in
# its stack. 6 KiB above the floor its stack limit sets (no room for the
# injected calls, which crashed it before): memwatch refuses in one line that
# says why, with a hint, and the process runs on unharmed. A stack pointer
# 1 MiB below the lowest page the kernel has mapped, the limit far away: the
# attach works.
. "$top_srcdir/tests/lib.sh"
need_ptrace

T=$TARGETS/deep_stack

# 1. deep, close to its limit
"$T" limit 6 >a.out 2>a.err &
pid=$!
started_pids="$started_pids $pid"
wait_until "grep -q '^ready' a.out" 20
run_mw 5 snap -p "$pid" -o a.snap
expect_err_line "pid $pid: cannot attach: no thread at a safe point within [0-9]+ ms \([0-9]+ attempts\): thread $pid sits deep in its stack: [0-9]+ KiB left to its limit, the calls need [0-9]+ KiB"
expect_grep "hint: attach again when it has returned from the depth, raise its stack limit \(ulimit -s\)" err
expect_no_grep "error\)?$|Input/output|Bad address" err
[ -e a.snap ] && fail "a snapshot was written"
# unharmed: it goes on allocating in its loop
sleep 1
kill -0 "$pid" 2>/dev/null || fail "the target died"
state=$(sed 's/.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null)
case $state in
S|R) ;;
*) fail "the target is in state '$state'" ;;
esac
kill "$pid"
wait "$pid" 2>/dev/null

# 2. its stack pointer far below the mapped stack, in a loop of its own code
"$T" fresh >b.out 2>b.err &
pid=$!
started_pids="$started_pids $pid"
wait_until "grep -q '^ready' b.out" 20
run_mw 0 snap -p "$pid" -o b.snap
expect_grep "^memwatch: pid $pid: agent attached" err
[ -s b.snap ] || fail "no snapshot"
kill -0 "$pid" 2>/dev/null || fail "the target died"
kill "$pid"
wait "$pid" 2>/dev/null
finish
