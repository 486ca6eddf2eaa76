#!/bin/sh
# run-agent-closefds.sh: a program that closes every descriptor it did not open
# (as daemons do) and fills the descriptor table with pipes of its own: the
# agent must notice that its socket is gone, open a new one, and never touch
# the program's pipes that now carry its old numbers.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_closefds
start_agent_target c capture=now,rate=1 sh -c 'ulimit -n 1024 && exec "$0"' "$T"
p=$target_pid
wait_until "[ -f c.out ] && grep -q '^ready 1 pipes=' c.out" 30
n=$(sed -n 's/^ready 1 pipes=\([0-9]*\)$/\1/p' c.out)
[ "${n:-0}" -gt 400 ] || fail "the target opened only '$n' pipes"
# the listener comes back within a tick or two
wait_until "'$MEMWATCH' snap -p $p -o c1.snap -f >out 2>err" 10
expect_grep "^pid $p: .* live \\(estimated\\)" out
step c
wait_ready c 2
take_snap "$p" c2.snap
step c
expect_target_exit "$p" c
finish
