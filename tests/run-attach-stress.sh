#!/bin/sh
# run-attach-stress.sh: many attaches in a row. One target with four threads
# allocating as fast as they can, a thread blocked in read() and one in
# epoll_wait(): 50 cycles of attach + start + snapshot + stop with the real
# agent (after the first, the agent is found loaded and only its start function
# runs). Then 20 fresh targets, each attached once. Every target must end on its
# own with no spurious EINTR and its heap and registers intact.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/attach-lib.sh"

cycles=${ATTACH_STRESS_CYCLES:-50}
fresh=${ATTACH_STRESS_FRESH:-20}
begin=$(date +%s)
# what is tested is many attaches in a row, not their speed: a deadline a
# starved machine cannot miss (beside another suite under ASan, one attach
# took all of 5 s to be prepared, before any thread was tried)
deadline=20000

if [ -f "${MEMWATCH_AGENT:-}" ]; then
	agent=$MEMWATCH_AGENT
	opts="capture=idle"
	control="--control 65536"
else
	echo "note: no agent library built; using the probe stand-in" >&2
	agent=$PROBE
	opts="marker=$tmp/marker"
	control=
fi

# 1. one target, many cycles
start_attach_target ready --seconds 120 --until-file "$tmp/stop" --workers 4 --reader --epoll \
	>t.out 2>&1
t=$target_pid
loaded=0
for i in $(seq 1 "$cycles"); do
	# shellcheck disable=SC2086
	"$MW_INJECT" --deadline "$deadline" $control "$t" "$agent" "$opts" >out 2>err
	status=$?
	if [ "$status" -ne 0 ]; then
		fail "cycle $i: exit status $status"
		sed 's/^/  stderr: /' err >&2
		proc_alive "$t" || break
		continue
	fi
	if [ "$i" -gt 1 ]; then
		grep -q 'already_loaded=1' out || fail "cycle $i: the agent was loaded again"
	fi
	grep -q 'already_loaded=1' out && loaded=$((loaded + 1))
	if [ -n "$control" ]; then
		expect_grep '^snapshot_bytes=[1-9][0-9]*$' out
	fi
done
if [ -n "$control" ]; then
	# the CLI's own snapshot path works on the attached target too
	"$MEMWATCH" snap -p "$t" -o "$tmp/s.snap" >snap.out 2>snap.err
	st=$?
	[ "$st" -eq 0 ] || { fail "memwatch snap: exit status $st"; sed 's/^/  stderr: /' snap.err >&2; }
	[ -s "$tmp/s.snap" ] || fail "memwatch snap wrote no snapshot"
	"$MW_INJECT" --loaded "$t" >out 2>err || fail "the agent is not reported as loaded"
else
	n=$(grep -c "^start pid=$t " marker)
	[ "$n" -eq "$cycles" ] || fail "$n start calls recorded, expected $cycles"
fi
touch "$tmp/stop"
expect_target_ok "$t" 40 t.out
echo "stress: $cycles cycles, $loaded found the agent loaded, $(($(date +%s) - begin)) s" >&2

# 2. fresh targets, each attached once
for i in $(seq 1 "$fresh"); do
	start_attach_target "ready$i" --seconds 30 --until-file "$tmp/stop$i" --workers 4 --reader \
		--epoll >"t$i.out" 2>&1
	t=$target_pid
	# shellcheck disable=SC2086
	run_inject 0 --deadline "$deadline" $control "$t" "$agent" "$opts"
	grep -q 'already_loaded=0' out || fail "fresh target $i: agent reported as already loaded"
	touch "$tmp/stop$i"
	expect_target_ok "$t" 40 "t$i.out"
done
echo "stress: done in $(($(date +%s) - begin)) s" >&2
finish
