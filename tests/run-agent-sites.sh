#!/bin/sh
# run-agent-sites.sh: the preloaded agent's figures for known allocation sites:
# exact at rate 1 (every allocation recorded, a block at a just-freed address
# included), close to the truth at the default rate and at 64 KiB; frees are
# seen; the target's own result is unchanged.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_sites
MIB64=67108864

# Rate 1: every allocation, exact figures.
start_agent_target a capture=now,rate=1 "$T"
pa=$target_pid
wait_ready a 1
take_snap "$pa" a1.snap
expect_grep "^pid $pa: 64\\.[0-9] MiB live \\(estimated\\) in [0-9]+ stacks" out
expect_eq "keep_big live bytes" "$(site live_bytes a1.snap "$T" keep_big)" $MIB64
expect_eq "keep_big live blocks" "$(site live_blocks a1.snap "$T" keep_big)" 1024
expect_eq "keep_big samples" "$(site live_samples a1.snap "$T" keep_big)" 1024
expect_eq "keep_small live bytes" "$(site live_bytes a1.snap "$T" keep_small)" 400000
expect_eq "keep_small live blocks" "$(site live_blocks a1.snap "$T" keep_small)" 4000
expect_eq "churn live bytes" "$(site live_bytes a1.snap "$T" churn)" 0
expect_eq "churn allocated bytes" "$(site alloc_bytes a1.snap "$T" churn)" 33554432
expect_eq "churn allocated blocks" "$(site alloc_blocks a1.snap "$T" churn)" 8192
# each block taken at the address just freed keeps its record
expect_eq "reuse live bytes" "$(site live_bytes a1.snap "$T" reuse)" 200000
expect_eq "reuse live blocks" "$(site live_blocks a1.snap "$T" reuse)" 1000
expect_eq "reuse allocated blocks" "$(site alloc_blocks a1.snap "$T" reuse)" 2000
expect_eq "sample rate" "$(snap_field a1.snap sample_rate)" 1
expect_grep "^exe \".*/agent_sites\"" a1.snap.txt
expect_grep "^module 0 .*build_id=[0-9a-f]{40} path=\".*/agent_sites\"" a1.snap.txt
rss=$(snap_field a1.snap rss_bytes)
[ "${rss:-0}" -gt $MIB64 ] || fail "rss_bytes $rss is below the 64 MiB the target holds"
expect_grep '^mallinfo arena=[1-9]' a1.snap.txt
step a
wait_ready a 2
take_snap "$pa" a2.snap
expect_eq "keep_big live bytes after freeing half" "$(site live_bytes a2.snap "$T" keep_big)" $((MIB64 / 2))
expect_eq "keep_big allocated bytes" "$(site alloc_bytes a2.snap "$T" keep_big)" $MIB64
step a
expect_target_exit "$pa" a

# The default rate (512 KiB): 1024 blocks of 64 KiB are each sampled with
# probability 0.12, so the estimate's standard deviation is 8.6%: 40% is over
# 4.5 sigma. At 64 KiB it is 2.4%, and 15% is over 6 sigma.
for r in default 65536; do
	opts=capture=now
	tol=40
	[ $r = default ] || { opts=capture=now,rate=$r; tol=15; }
	start_agent_target b "$opts" "$T"
	pb=$target_pid
	wait_ready b 1
	take_snap "$pb" b$r.snap
	expect_within "keep_big live bytes at rate $r" "$(site live_bytes b$r.snap "$T" keep_big)" $MIB64 $tol
	expect_within "keep_big live blocks at rate $r" "$(site live_blocks b$r.snap "$T" keep_big)" 1024 $tol
	expect_within "churn allocated bytes at rate $r" "$(site alloc_bytes b$r.snap "$T" churn)" 33554432 $((tol * 3 / 2))
	expect_eq "churn live bytes at rate $r" "$(site live_bytes b$r.snap "$T" churn)" 0
	step b
	wait_ready b 2
	step b
	expect_target_exit "$pb" b
done
[ "$(snap_field bdefault.snap sample_rate)" = 524288 ] || fail "default sample rate is not 512 KiB"

# Loaded but idle, and --wait 0 (no sampling first): the snapshot says capture
# is off and holds no stacks.
start_agent_target c capture=idle "$T"
pc=$target_pid
wait_ready c 1
run_mw 0 snap -p "$pc" -w 0 -o c.snap
expect_grep "capture is off" out
expect_grep "^memwatch: warning: pid $pc: the agent is loaded but not capturing" err
expect_eq "stacks when idle" "$(snap_field c.snap stacks)" 0
# an existing file is refused without -f
run_mw 1 snap -p "$pc" -w 0 -o c.snap
expect_err_line "c\\.snap"
step c
wait_ready c 2
step c
expect_target_exit "$pc" c

# A process without an agent, and one that does not exist.
sleep 30 &
ps=$!
started_pids="$started_pids $ps"
run_mw 5 snap -p "$ps" -w 0
expect_err_line "pid $ps: no memwatch agent is listening"
kill "$ps"
wait "$ps" 2>/dev/null
run_mw 4 snap -p "$ps"
expect_err_line "pid $ps: no such process"
run_mw 2 snap
expect_err_line "snap: which process"
finish
