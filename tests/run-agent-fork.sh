#!/bin/sh
# run-agent-fork.sh: the agent across fork and exec. A forked child stops
# sampling and has no agent to talk to (by default), or captures on its own
# under its own pid (children=1) without reporting its parent's blocks; an
# exec'd child gets a fresh agent from LD_PRELOAD unless pid= names only the
# parent. Parent and child finish their own work intact.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_fork

# start_forking NAME OPTIONS PROGRAM ARGS...: start_agent_target, until the
# target says it has forked: its pid in $parent, its child's in $child.
start_forking() {
	start_agent_target "$@"
	parent=$target_pid
	wait_ready "$1" "1 child=[0-9]*"
	child=$(sed -n 's/^ready 1 child=\([0-9]*\)$/\1/p' "$1.out")
}

# 1. fork, default: the child is not watched
start_forking a capture=now,rate=1 "$T" fork
take_snap "$parent" a.snap
expect_eq "parent_site in the parent" "$(site live_bytes a.snap "$T" parent_site)" 1000000
expect_eq "child_site in the parent" "$(site alloc_bytes a.snap "$T" child_site)" 0
"$top_builddir/tests/tools/agentctl" "$child" status >ca.ctl 2>&1 && fail "the forked child has an agent listening"
expect_grep "^memwatch: pid $child: no memwatch agent is listening$" ca.ctl
step a
expect_target_exit "$parent" a

# 2. fork, children=1: the child captures from scratch under its own socket
start_forking b capture=now,rate=1,children=1 "$T" fork
take_snap "$child" bc.snap
expect_eq "child_site in the child" "$(site live_bytes bc.snap "$T" child_site)" 500000
expect_eq "parent_site in the child" "$(site live_bytes bc.snap "$T" parent_site)" 0
expect_eq "pid in the child's snapshot" "$(snap_field bc.snap pid)" "$child"
take_snap "$parent" bp.snap
expect_eq "parent_site in the parent" "$(site live_bytes bp.snap "$T" parent_site)" 1000000
expect_eq "child_site in the parent" "$(site alloc_bytes bp.snap "$T" child_site)" 0
step b
expect_target_exit "$parent" b

# 3. fork + exec: the new program gets its own agent through LD_PRELOAD
start_forking c capture=now,rate=1 "$T" exec
take_snap "$child" cc.snap
expect_eq "child_site in the exec'd child" "$(site live_bytes cc.snap "$T" child_site)" 500000
expect_eq "parent_site in the exec'd child" "$(site alloc_bytes cc.snap "$T" parent_site)" 0
step c
expect_target_exit "$parent" c

# 4. forks while other threads sample without pause, every allocation unwound:
# no child inherits a lock held for the agent (libunwind's, the loader's, the
# agent's own), neither when it stops sampling nor when it captures on its own
for opts in capture=now,rate=1 capture=now,rate=1,children=1; do
	LD_PRELOAD=$MEMWATCH_AGENT MEMWATCH_AGENT_OPTIONS=$opts "$T" forkstorm >fs.out 2>&1 &
	pf=$!
	started_pids="$started_pids $pf"
	wait_until "! kill -0 $pf 2>/dev/null" 50 || kill -9 "$pf"
	wait "$pf"
	st=$?
	[ $st -eq 0 ] || { fail "forkstorm with $opts: status $st"; sed 's/^/  | /' fs.out >&2; }
	expect_grep '^ok' fs.out
done

# 5. fork + exec with pid= naming the parent only: the exec'd child is left alone
start_forking d capture=idle,pid=1 sh -c \
	'MEMWATCH_AGENT_OPTIONS="capture=now,rate=1,pid=$$"; export MEMWATCH_AGENT_OPTIONS; exec "$0" exec' "$T"
take_snap "$parent" d.snap
expect_eq "parent_site (pid=)" "$(site live_bytes d.snap "$T" parent_site)" 1000000
"$top_builddir/tests/tools/agentctl" "$child" status >cd.ctl 2>&1 && fail "the exec'd child has an agent listening"
expect_grep "^memwatch: pid $child: no memwatch agent is listening$" cd.ctl
step d
expect_target_exit "$parent" d
finish
