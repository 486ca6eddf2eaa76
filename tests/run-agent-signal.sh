#!/bin/sh
# run-agent-signal.sh: signal handlers that allocate and free while their
# threads are inside the agent (rate 1 puts every allocation through its slow
# path): no deadlock on the agent's lock, no corruption, and the figures of the
# threads' own site stay consistent (no record outlives its block).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_signal
for opts in capture=now,rate=1 capture=now,rate=256 capture=now; do
	start_agent_target s "$opts" "$T" 4
	p=$target_pid
	wait_ready s 1
	take_snap "$p" s.snap
	# bounded: a deadlock shows up as a target that never ends
	wait_until "! kill -0 $p 2>/dev/null" 40 || kill -9 "$p"
	expect_target_exit "$p" s
	n=$(sed -n 's/^ok signals=\([0-9]*\)$/\1/p' s.out)
	[ "${n:-0}" -gt 20 ] || fail "only '${n:-0}' signals handled with $opts"
	# each of the two threads holds at most one 200-byte block and one
	# 40-byte block kept by its handler (whose stack runs through worker)
	if [ $opts = capture=now,rate=1 ]; then
		n=$(site live_blocks s.snap "$T" worker)
		[ "$n" -le 4 ] || fail "worker has $n live blocks at a snapshot, at most 4 possible"
		n=$(site alloc_blocks s.snap "$T" worker)
		[ "$n" -gt 100 ] || fail "worker allocated only $n blocks before the snapshot"
	fi
done
finish
