#!/bin/sh
# run-agent-nonpie.sh: allocation sites reached directly and through a struct
# of pointers to malloc & co., in a PIE and in non-PIE programs (whose PLT entry
# is the address of malloc for every module), lazily bound and bound at load
# time: preloaded (as memwatch run does it) and attached (memwatch snap -p), the
# program runs to its end and every site's figures are exact at rate 1.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

# wait_end PID NAME SECS: the target ends within SECS (a hook that calls itself
# spins forever: that is a failure, not a hang) with status 0, printing "ok".
wait_end() {
	local pid=$1 name=$2 secs=$3 i=0 st
	# a target still waiting for a line after a failed step gets end of file
	grep -q '^ok' "$name.out" || end_target "$name"
	while kill -0 "$pid" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt $((secs * 20)) ]; then
			fail "$name did not end within ${secs}s"
			kill -9 "$pid" 2>/dev/null
			break
		fi
		sleep 0.05
	done
	wait "$pid"
	st=$?
	end_target "$name"
	[ "$st" -eq 0 ] || { fail "$name exited with status $st"; sed 's/^/  | /' "$name.out" "$name.err" >&2; }
	expect_grep '^ok' "$name.out"
}

# check_phase1 SNAP BINARY WHAT: every site holds what phase 1 left.
check_phase1() {
	local s=$1 b=$2 w=$3
	expect_eq "$w: direct_malloc live bytes" "$(site live_bytes "$s" "$b" direct_malloc)" $((256 * 65536))
	expect_eq "$w: direct_malloc live blocks" "$(site live_blocks "$s" "$b" direct_malloc)" 256
	expect_eq "$w: direct_calloc live bytes" "$(site live_bytes "$s" "$b" direct_calloc)" $((100 * 10000))
	expect_eq "$w: direct_realloc live bytes" "$(site live_bytes "$s" "$b" direct_realloc)" $((64 * 100000))
	expect_eq "$w: direct_realloc live blocks" "$(site live_blocks "$s" "$b" direct_realloc)" 64
	expect_eq "$w: direct_churn live bytes" "$(site live_bytes "$s" "$b" direct_churn)" 0
	expect_eq "$w: direct_churn allocated bytes" "$(site alloc_bytes "$s" "$b" direct_churn)" $((1000 * 4096))
	expect_eq "$w: fptr_malloc live bytes" "$(site live_bytes "$s" "$b" fptr_malloc)" $((256 * 32768))
	expect_eq "$w: fptr_malloc live blocks" "$(site live_blocks "$s" "$b" fptr_malloc)" 256
	expect_eq "$w: fptr_calloc live bytes" "$(site live_bytes "$s" "$b" fptr_calloc)" $((128 * 3000))
	expect_eq "$w: fptr_realloc live bytes" "$(site live_bytes "$s" "$b" fptr_realloc)" $((64 * 50000))
	expect_eq "$w: fptr_realloc live blocks" "$(site live_blocks "$s" "$b" fptr_realloc)" 64
	expect_eq "$w: fptr_churn live bytes" "$(site live_bytes "$s" "$b" fptr_churn)" 0
	expect_eq "$w: fptr_churn allocated bytes" "$(site alloc_bytes "$s" "$b" fptr_churn)" $((1000 * 8192))
}

# check_phase2 SNAP BINARY WHAT: half of every kept site was freed.
check_phase2() {
	local s=$1 b=$2 w=$3
	expect_eq "$w: direct_malloc live bytes" "$(site live_bytes "$s" "$b" direct_malloc)" $((128 * 65536))
	expect_eq "$w: direct_calloc live bytes" "$(site live_bytes "$s" "$b" direct_calloc)" $((50 * 10000))
	expect_eq "$w: direct_realloc live bytes" "$(site live_bytes "$s" "$b" direct_realloc)" $((32 * 100000))
	expect_eq "$w: fptr_malloc live bytes" "$(site live_bytes "$s" "$b" fptr_malloc)" $((128 * 32768))
	expect_eq "$w: fptr_calloc live bytes" "$(site live_bytes "$s" "$b" fptr_calloc)" $((64 * 3000))
	expect_eq "$w: fptr_realloc live bytes" "$(site live_bytes "$s" "$b" fptr_realloc)" $((32 * 50000))
}

# A pointer a PIE stores at load time is the C library's function itself, out
# of reach of any slot: the PIE takes its pointers again once hooked ("late").
# The non-PIE programs keep the ones stored at link time ("early").
for v in nopie:early nopie_now:early pie:late; do
	b=${v%%:*}
	mode=${v#*:}
	T=$TARGETS/agent_fnptr_$b

	# preloaded, capture from the start
	start_agent_target p capture=now,rate=1 "$T" "$mode"
	p=$target_pid
	if wait_ready p 0 && step p && wait_ready p 1 20; then
		take_snap "$p" p1-$b.snap
		check_phase1 p1-$b.snap "$T" "$b preloaded"
		if step p && wait_ready p 2 20; then
			take_snap "$p" p2-$b.snap
			check_phase2 p2-$b.snap "$T" "$b preloaded, half freed"
			step p
		fi
	fi
	wait_end "$p" p 30

	# attached by memwatch snap, which samples while the program allocates;
	# the snapshot taken, capture stops and the slots are put back, and the
	# program goes on to its end
	start_fifo_target a "$T" "$mode"
	a=$target_pid
	if wait_ready a 0; then
		rm -f snap.out snap.err
		"$MEMWATCH" snap -p "$a" -w 5s -r 1 -o a-$b.snap >snap.out 2>snap.err &
		mw=$!
		started_pids="$started_pids $mw"
		wait_until "grep -q 'capture started now' snap.err" 30 && step a && wait_ready a 1 20
		wait "$mw"
		st=$?
		[ "$st" -eq 0 ] || { fail "$b: memwatch snap -p: status $st"; sed 's/^/  | /' snap.err >&2; }
		expect_grep "agent attached" snap.err
		[ -s a-$b.snap ] && check_phase1 a-$b.snap "$T" "$b attached"
		step a && wait_ready a 2 20 && step a
	fi
	wait_end "$a" a 30

	# memwatch run: the program runs straight through; what it never freed
	# is half of every kept site
	rm -f memwatch-run-*
	timeout -k 5 60 "$MEMWATCH" run -r 1 -q -- "$T" "$mode" through </dev/null >run.out 2>run.err
	st=$?
	[ "$st" -eq 0 ] || { fail "$b: memwatch run: status $st"; sed 's/^/  | /' run.err >&2; }
	expect_grep '^ok$' run.out
	exit_snap=$(ls memwatch-run-*-exit.snap 2>/dev/null | head -n 1)
	if [ -n "$exit_snap" ]; then
		check_phase2 "$exit_snap" "$T" "$b memwatch run, at exit"
	else
		fail "$b: memwatch run wrote no exit snapshot"
	fi
done

# A preloaded allocator still wins over the C library's malloc when the
# program's PLT entry stands for malloc: the hooks call it (glibc's mallinfo
# is left out), and the figures stay exact.
J=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -f "$J" ]; then
	T=$TARGETS/agent_fnptr_nopie
	start_agent_after "$J" j capture=now,rate=1 "$T" early
	j=$target_pid
	if wait_ready j 0 && step j && wait_ready j 1 20; then
		take_snap "$j" j.snap
		check_phase1 j.snap "$T" "nopie with jemalloc"
		expect_grep '^mallinfo none' j.snap.txt
		step j && wait_ready j 2 20 && step j
	fi
	wait_end "$j" j 30
else
	echo "note: libjemalloc2 is not installed: the preloaded allocator case is not run" >&2
fi
finish
