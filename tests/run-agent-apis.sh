#!/bin/sh
# run-agent-apis.sh: every hooked allocation function and realloc's edge cases,
# exact at rate 1; blocks allocated before capture started are freed during it
# without harm; libc's own allocations (strdup) are seen. The target checks
# alignment and contents itself.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_apis
CTL=$top_builddir/tests/tools/agentctl

start_agent_target a capture=idle "$T"
pa=$target_pid
wait_ready a 0
# capture starts after early() allocated; this connection owns it until the end
# (it is killed there; its sleep is only a bound, longer than the slowest run)
"$CTL" "$pa" start=1 sleep=300000 >ctl.out 2>&1 &
ctl=$!
started_pids="$started_pids $ctl"
wait_until "[ -f ctl.out ] && grep -q '^start: ok' ctl.out" 20
step a
wait_ready a 1
take_snap "$pa" a1.snap
# site: expected live bytes
for want in keep_calloc:1000000 keep_posix_memalign:100000 keep_aligned_alloc:64000 \
	keep_memalign:30000 keep_valloc:50000 keep_pvalloc:1000 keep_realloc_grow:200000 \
	keep_realloc_shrink:10000 keep_realloc_null:70000 keep_reallocarray:30000 \
	keep_strdup:10000; do
	fn=${want%:*}
	expect_eq "$fn live bytes" "$(site live_bytes a1.snap "$T" "$fn")" "${want#*:}"
	expect_eq "$fn live blocks" "$(site live_blocks a1.snap "$T" "$fn")" 10
done
# the blocks realloc replaced or freed are gone; what they allocated is counted
expect_eq "base_alloc live bytes" "$(site live_bytes a1.snap "$T" base_alloc)" 0
expect_eq "base_alloc allocated bytes" "$(site alloc_bytes a1.snap "$T" base_alloc)" $((10 * (100 + 50000 + 9000)))
expect_eq "early (before capture)" "$(site alloc_bytes a1.snap "$T" early)" 0
step a
wait_ready a 2
take_snap "$pa" a2.snap
expect_eq "keep_calloc live bytes at the end" "$(site live_bytes a2.snap "$T" keep_calloc)" 1000000
for fn in keep_posix_memalign keep_aligned_alloc keep_memalign keep_valloc keep_pvalloc \
	keep_realloc_grow keep_realloc_shrink keep_realloc_null keep_reallocarray keep_strdup; do
	expect_eq "$fn live bytes after free" "$(site live_bytes a2.snap "$T" "$fn")" 0
done
expect_eq "late live bytes" "$(site live_bytes a2.snap "$T" late)" 30000
kill "$ctl" 2>/dev/null
step a
expect_target_exit "$pa" a

# The same program with capture from the first allocation at the default rate
# and with the agent loaded but idle: its own checks must pass.
for opts in capture=now capture=idle capture=now,rate=1,depth=3; do
	start_agent_target b "$opts" "$T"
	pb=$target_pid
	for ph in 0 1 2; do
		wait_ready b $ph
		if [ $ph = 1 ] && [ $opts = capture=now,rate=1,depth=3 ]; then
			# stacks cut at three frames are flagged as truncated
			take_snap "$pb" b.snap
			"$SNAPDUMP" b.snap >b.txt
			expect_grep '^stack .* flags=0x1 nframes=3$' b.txt
			expect_no_grep 'nframes=([4-9]|[1-9][0-9])' b.txt
		fi
		step b
	done
	expect_target_exit "$pb" b
done
finish
