#!/bin/sh
# run-agent-paths.sh: at a rate of 1, where the agent finds a stack it met
# before on the thread without unwinding it again (its return addresses still
# in their places), each block is charged to its own path: paths that reach
# malloc at one depth in turns, and differ in their caller (via_a, via_b) or
# further up (outer_a, outer_b, through one mid); one path at a varying depth
# (deep); and on a coroutine's stack, freed and made again (in_fiber,
# in_fiber2). Exact figures; the target's blocks intact.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_paths
N=1000

start_agent_target a capture=now,rate=1 "$T"
pa=$target_pid
wait_ready a 1
take_snap "$pa" a.snap
for s in via_a:100 via_b:300 outer_a:500 outer_b:700 in_fiber:900 in_fiber2:1100 deep:1300; do
	fn=${s%:*}
	size=${s#*:}
	expect_eq "$fn live bytes" "$(site live_bytes a.snap "$T" "$fn")" $((N * size))
	expect_eq "$fn live blocks" "$(site live_blocks a.snap "$T" "$fn")" $N
done
expect_eq "mid live bytes" "$(site live_bytes a.snap "$T" mid)" $((N * 1200))
expect_eq "leaf live bytes" "$(site live_bytes a.snap "$T" leaf)" $((N * 4900))
step a
expect_target_exit "$pa" a
finish
