#!/bin/sh
# run-agent-allocators.sh: with jemalloc or tcmalloc preloaded, the agent's
# hooks call that allocator (never glibc's behind its back): the storm stays
# intact, figures are exact at rate 1, and glibc's mallinfo is left out.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

libdir=/usr/lib/x86_64-linux-gnu
found=
for lib in libjemalloc.so.2 libtcmalloc_minimal.so.4; do
	[ -f "$libdir/$lib" ] || continue
	found="$found $lib"
	A=$libdir/$lib
	# before the agent and after it in the preload list: the same allocator
	for order in "$A $MEMWATCH_AGENT" "$MEMWATCH_AGENT $A"; do
		LD_PRELOAD=$order MEMWATCH_AGENT_OPTIONS=capture=now,rate=1 \
			"$TARGETS/agent_storm" 3 2 >storm.out 2>storm.err
		st=$?
		[ $st -eq 0 ] || { fail "storm with $lib ($order): status $st"; cat storm.err >&2; }
		expect_grep '^ok ops=' storm.out
	done
	T=$TARGETS/agent_sites
	start_agent_after "$A" j capture=now,rate=1 "$T"
	p=$target_pid
	wait_ready j 1
	grep -q "$lib" "/proc/$p/maps" || fail "$lib is not loaded in the target"
	take_snap "$p" j.snap
	expect_eq "keep_big live bytes with $lib" "$(site live_bytes j.snap "$T" keep_big)" 67108864
	expect_eq "churn allocated bytes with $lib" "$(site alloc_bytes j.snap "$T" churn)" 33554432
	expect_grep '^mallinfo none' j.snap.txt
	step j
	wait_ready j 2
	step j
	expect_target_exit "$p" j
done
[ -n "$found" ] || skip "neither jemalloc nor tcmalloc is installed (libjemalloc2, libtcmalloc-minimal4)"
finish
