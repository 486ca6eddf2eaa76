#!/bin/sh
# run-agent-hooks.sh: the hooks are in the program's GOT while the agent runs
# (even idle), and stop puts the C library's own functions back in exactly
# those slots; start installs them again.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_got
CTL=$top_builddir/tests/tools/agentctl

# without the agent: the slots hold the C library's functions
"$T" </dev/null >plain.out 2>&1
expect_grep '^ready 1 same=2$' plain.out

start_agent_target g capture=idle "$T"
p=$target_pid
wait_ready g "1 same=0"
"$CTL" "$p" start=4096 stop >c1 2>&1 || fail "agentctl: $(cat c1)"
step g
wait_ready g "2 same=2"
"$CTL" "$p" start=4096 sleep=100 status >c2 2>&1 || fail "agentctl: $(cat c2)"
expect_grep '^status: capturing=1 hooks=[1-9]' c2
# that connection owned the capture and hung up: hooks removed again
wait_until "'$CTL' $p status >c3 2>&1 && grep -q 'hooks=0' c3" 10
"$CTL" "$p" start=4096 sleep=300000 >c4 2>&1 &
ctl=$!
started_pids="$started_pids $ctl"
wait_until "[ -f c4 ] && grep -q '^start: ok' c4" 10
step g
wait_ready g "3 same=0"
# the owner is killed: the agent puts the slots back by itself
kill "$ctl"
wait "$ctl" 2>/dev/null
wait_until "'$CTL' $p status >c5 2>&1 && grep -q 'hooks=0' c5" 10
step g
wait_ready g "4 same=2"
echo q >g.in
expect_target_exit "$p" g
finish
