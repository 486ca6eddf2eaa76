#!/bin/sh
# run-agent-valgrind.sh: targets with the agent preloaded run under valgrind's
# memcheck: the hooks, the sampler, the tables, snapshots and the removal of the
# hooks must cause no invalid read or write and no use of uninitialised memory
# (--error-exitcode makes any report fail the target).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

command -v valgrind >/dev/null 2>&1 || skip "valgrind is not installed"
VG="valgrind -q --error-exitcode=42 --suppressions=$top_srcdir/tests/agent-valgrind.supp"
CTL=$top_builddir/tests/tools/agentctl

# 1. the storm, every allocation recorded, then at a sampling rate
for r in 1 4096; do
	LD_PRELOAD=$MEMWATCH_AGENT MEMWATCH_AGENT_OPTIONS=capture=now,rate=$r \
		$VG "$TARGETS/agent_storm" 2 2 >storm$r.out 2>storm$r.err
	st=$?
	[ $st -eq 0 ] || { fail "storm at rate $r under memcheck: status $st"; sed 's/^/  | /' storm$r.err | head -40 >&2; }
	expect_grep '^ok ops=' storm$r.out
done

# the mapping hooks: maps split, grown, shrunk and moved by mremap, the break
# raised and lowered, every one recorded
printf 'go\ngo\n' | LD_PRELOAD=$MEMWATCH_AGENT MEMWATCH_AGENT_OPTIONS=capture=now,rate=1 \
	$VG "$TARGETS/agent_mmap" >mmap.out 2>mmap.err
st=$?
[ $st -eq 0 ] || { fail "agent_mmap under memcheck: status $st"; sed 's/^/  | /' mmap.err | head -40 >&2; }
expect_grep '^ok$' mmap.out

# 2. known sites with snapshots, a stop (hooks removed) and a new start
T=$TARGETS/agent_sites
start_agent_target v capture=now,rate=1 $VG "$T"
p=$target_pid
wait_ready v 1 50
take_snap "$p" v1.snap
expect_eq "keep_big live bytes under memcheck" "$(site live_bytes v1.snap "$T" keep_big)" 67108864
"$CTL" "$p" stop status start=4096 status >ctl.out 2>&1 || fail "agentctl: $(cat ctl.out)"
expect_grep '^status: capturing=0 hooks=0 ' ctl.out
step v
wait_ready v 2 50
take_snap "$p" v2.snap
step v
wait "$p"
st=$?
end_target v
[ $st -eq 0 ] || { fail "sites under memcheck: status $st"; sed 's/^/  | /' v.err | head -40 >&2; }
expect_grep '^ok' v.out
finish
