#!/bin/sh
# run-agent-threads.sh: a program with hundreds of threads that each allocate
# a little, captured at every allocation, keeps its memory: libunwind's frame
# cache (256 KiB a thread, written in full at a thread's first unwinding) is
# used by a bounded number of threads at once, the others unwind without it.
# Compared with the same program under the idle agent, in two waves (the first
# wave's threads exit, and give their caches back, before the second starts).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_threads
N=600

# run_threads NAME OPTIONS: run the target under the agent; its two figures
# in $w1 and $w2 (KiB).
run_threads() {
	LD_PRELOAD=$MEMWATCH_AGENT MEMWATCH_AGENT_OPTIONS=$2 "$T" $N 200 </dev/null >"$1.out" 2>"$1.err"
	st=$?
	[ "$st" -eq 0 ] || { fail "$1: target exited with status $st"; sed 's/^/  | /' "$1.err" >&2; }
	expect_grep '^ok$' "$1.out"
	w1=$(sed -n 's/^wave1 rss_kib=\([0-9]*\)$/\1/p' "$1.out")
	w2=$(sed -n 's/^wave2 rss_kib=\([0-9]*\)$/\1/p' "$1.out")
	w1=${w1:-0}
	w2=${w2:-0}
}

run_threads idle capture=idle
i1=$w1
i2=$w2
run_threads exact capture=now,rate=1
echo "RSS with $N threads alive (KiB): idle $i1 / $i2, every allocation sampled $w1 / $w2"
[ "$i1" -gt 0 ] && [ "$w1" -gt 0 ] || fail "no figures from the target"
# Unbounded, each thread's cache made $N x 256 KiB (150 MiB) more; the bound
# is 128 caches (32 MiB), plus the tables of the samples.
limit=$((N * 256 / 2))
[ $((w1 - i1)) -le "$limit" ] ||
	fail "wave 1: $((w1 - i1)) KiB more than the idle agent with $N threads (at most $limit)"
[ $((w2 - i2)) -le "$limit" ] ||
	fail "wave 2: $((w2 - i2)) KiB more than the idle agent with $N threads (at most $limit)"
finish
