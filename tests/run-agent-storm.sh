#!/bin/sh
# run-agent-storm.sh: threads allocating through every hooked function and
# checking their memory, while the agent is snapshotted, started and stopped
# (hooks installed and removed under their feet) over and over; the capture's
# owner going away stops it. The target must finish its work intact.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_storm
CTL=$top_builddir/tests/tools/agentctl

# 1. Capturing from the start, snapshots taken while four threads churn.
start_agent_target s capture=now,rate=4096 "$T" 4 0
ps=$target_pid
wait_ready s 1
for i in 1 2 3 4 5 6; do
	take_snap "$ps" s$i.snap
	sleep 0.2
done
n=$(snap_field s6.snap stacks)
[ "${n:-0}" -ge 5 ] || fail "only '$n' stacks in a snapshot of the storm"
step s
expect_target_exit "$ps" s

# 2. Idle at first; then capture cycles at rates 1, 4 KiB and the default,
# each ended by stop (hooks removed) or by the owner hanging up.
start_agent_target t capture=idle "$T" 3 0
pt=$target_pid
wait_ready t 1
"$CTL" "$pt" status >st0 2>&1 || fail "agentctl status: $(cat st0)"
expect_grep '^status: capturing=0 hooks=[1-9][0-9]* ' st0
# (each capture lasts 1 s before its status: one of 300 ms once counted no
# sample at rate 1 with the machine doubly loaded, where an idle one counts
# 750 000; ctl.N is the Nth cycle's)
i=0
for r in 1 4096 524288 1 65536; do
	i=$((i + 1))
	"$CTL" "$pt" start=$r sleep=1000 status snapshot=t$i.snap stop status >ctl.$i 2>&1 ||
		fail "agentctl cycle $i at rate $r: $(cat ctl.$i)"
	expect_grep "^status: capturing=1 hooks=[1-9][0-9]* rate=$r samples=[1-9]" ctl.$i
	expect_grep '^snapshot: ok stacks=[1-9]' ctl.$i
	expect_grep '^status: capturing=0 hooks=0 ' ctl.$i
done
# the owner hangs up without stop: capture ends and the hooks go
"$CTL" "$pt" start=4096 sleep=300 status >own1 2>&1 || fail "agentctl: $(cat own1)"
expect_grep '^status: capturing=1 ' own1
wait_until "'$CTL' '$pt' status >own2 2>&1 && grep -q 'capturing=0 hooks=0' own2" 10
# a connection that only looks does not own anything
"$CTL" "$pt" start=8192 >own3 2>&1 || fail "agentctl: $(cat own3)"
"$CTL" "$pt" status >own4 2>&1
expect_grep '^status: capturing=0 hooks=0 ' own4
step t
expect_target_exit "$pt" t

# 3. beyond max-stacks, new stacks are counted as dropped, never lost silently
start_agent_target m capture=now,rate=4096,max-stacks=3 "$T" 2 0
pm=$target_pid
wait_ready m 1
sleep 0.5
take_snap "$pm" m.snap
expect_grep 'some stacks dropped' out
expect_eq "stacks kept at max-stacks=3" "$(snap_field m.snap stacks)" 3
n=$(snap_field m.snap dropped_stacks)
[ "${n:-0}" -ge 1 ] || fail "dropped_stacks is '$n' with 3 stacks allowed"
n=$(snap_field m.snap dropped_bytes)
[ "${n:-0}" -gt 0 ] || fail "dropped_bytes is '$n' with 3 stacks allowed"
step m
expect_target_exit "$pm" m

# 4. options as memwatch run writes them (0: the agent's default) are taken;
# bad ones leave the agent out of the way entirely
start_agent_target o capture=now,rate=524288,depth=0,max-stacks=0,future-key=1 "$T" 2 0
po=$target_pid
wait_ready o 1
"$CTL" "$po" status >o1 2>&1 || fail "agentctl: $(cat o1)"
expect_grep '^status: capturing=1 hooks=[1-9][0-9]* rate=524288 ' o1
step o
expect_target_exit "$po" o
start_agent_target x capture=sometimes "$T" 1 0
px=$target_pid
wait_ready x 1
"$CTL" "$px" status >x1 2>&1 && fail "an agent started with bad options"
step x
expect_target_exit "$px" x

# 5. hold takes over a capture the preloaded agent started by itself.
start_agent_target h capture=now "$T" 2 0
ph=$target_pid
wait_ready h 1
"$CTL" "$ph" status hold sleep=200 >h1 2>&1 || fail "agentctl: $(cat h1)"
expect_grep '^status: capturing=1 ' h1
wait_until "'$CTL' '$ph' status >h2 2>&1 && grep -q 'capturing=0 hooks=0' h2" 10
step h
expect_target_exit "$ph" h
finish
