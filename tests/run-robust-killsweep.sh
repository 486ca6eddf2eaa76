#!/bin/sh
# run-robust-killsweep.sh: memwatch dies by SIGKILL at every moment of the
# attach and at moments spread over the detach; the target survives each one,
# intact. The attach moments are deterministic: MEMWATCH_TEST_KILL_AT=N makes
# memwatch kill itself just before its Nth request that changes or resumes the
# borrowed thread (seize, interrupt, register writes, the write of the call
# frame, every resume while the thread runs dlopen and the agent's start, the
# restore and the detach); N is swept over every request a fresh attach makes,
# on idle targets (their one thread sleeping in nanosleep, whose restart block
# makes memwatch follow the calls' system calls to their rt_sigreturn; or
# blocked in read(), where the end of a call is an ignored signal delivered
# right after rt_sigreturn) and a busy one (two more threads in malloc/free,
# which may be let run before being borrowed).
# Each attach needs a fresh target (an agent already loaded is reused, not
# injected again). The target (robust_target steady) checks itself: the
# registers it holds across the sleep (rbx, r12-r15, ymm15), its signal mask
# and alternate signal stack, its heap blocks; it must be neither traced nor
# stopped, keep ticking, and a new watch must attach and capture.
# Some 230 attaches, each to a fresh target: the longest test.
# limit: 900
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
need_ptrace

moments=0
deaths=0
tmpleft=0
eintr=0
trials=0

# requests KIND WANT TRIES THREADS [read]: how many requests an attach to a
# fresh target makes, the most of TRIES, stopping at the first of WANT or
# more: the path depends on where the borrowed thread is caught (a thread
# whose sleep ended before the stop takes the short one, 12 requests), which
# a loaded machine makes likelier (three short ones in a row were seen).
requests() {
	local kind=$1 want=$2 tries=$3 try=0 m
	shift 3
	n=0
	while [ "$try" -lt "$tries" ] && [ "$n" -lt "$want" ]; do
		try=$((try + 1))
		start_robust count.out 1 '^tick ' steady "$1" ${2:-}
		MEMWATCH_INJECT_DEBUG=1 "$MEMWATCH" -p "$t" -i 100ms -d 200ms -q --capture now -o count.log \
			>/dev/null 2>count.err
		st=$?
		[ "$st" -eq 0 ] || { fail "$kind: a plain attach failed with status $st"; sed 's/^/  | /' count.err >&2; }
		m=$(sed -n 's/^inject: \([0-9]*\) ptrace requests$/\1/p' count.err | tail -n 1)
		kill -9 "$t"
		wait "$t" 2>/dev/null
		rm -f count.*
		[ -n "$m" ] || { fail "$kind: no count of requests: MEMWATCH_INJECT_DEBUG said nothing"; m=0; }
		[ "$m" -gt "$n" ] && n=$m
	done
}

# check_target WHAT PID OUT: the target is alive, free, not corrupted, ticking;
# a new watch attaches and captures. Counts deaths.
check_target() {
	local before=$fails
	if ! kill -0 "$2" 2>/dev/null || grep -q '^CORRUPT' "$3"; then
		deaths=$((deaths + 1))
		fail "$1: the target died: $(grep '^CORRUPT' "$3")"
		return 0
	fi
	target_free "$1" "$2" "$3"
	if [ "$fails" -ne "$before" ]; then
		deaths=$((deaths + 1))
		return 0
	fi
	run_mw 0 -p "$2" -i 100ms -d 300ms -q --capture now -f -o r.log
	expect_grep "^# event [0-9.]+ $2 attach " r.log
	expect_grep "^# event [0-9.]+ $2 snapshot path=.*final=1" r.log
	grep -q '^CORRUPT' "$3" && { deaths=$((deaths + 1)); fail "$1: corrupted after the new watch"; }
	rm -f r.log r.*.snap
}

# kill_at KIND THREADS N [read]: a fresh target; memwatch dies before its Nth
# request.
kill_at() {
	start_robust s.out 1 '^tick ' steady "$2" ${4:-}
	MEMWATCH_TEST_KILL_AT=$3 "$MEMWATCH" -p "$t" -i 100ms -d 200ms -q --capture now -f -o k.log \
		>/dev/null 2>k.err
	st=$?
	trials=$((trials + 1))
	if [ "$st" -eq 137 ]; then
		moments=$((moments + 1))
	elif [ "$st" -ne 0 ]; then
		fail "$1 N=$3: memwatch exited with status $st"
		sed 's/^/  | /' k.err >&2
	fi
	check_target "$1 killed before request $3" "$t" s.out
	e=$(sed -n 's/^tick [0-9]* eintr \([0-9]*\)$/\1/p' s.out | tail -n 1)
	eintr=$((eintr + ${e:-0}))
	kill -9 "$t"
	wait "$t" 2>/dev/null
	rm -f k.log k.*.snap
}

requests idle 20 10 0
nidle=$n
requests idle-read 8 10 0 read
nread=$n
# (the busy one: the most of three, however many)
requests busy 100000 3 2
nbusy=$n
echo "an attach makes $nidle requests on the idle target, $nread on the one in read(), $nbusy on the busy one"
[ "$nidle" -ge 20 ] || fail "too few requests counted on the idle target: $nidle"
[ "$nread" -ge 8 ] || fail "too few requests counted on the target in read(): $nread"

# every moment of the idle attaches
i=1
while [ "$i" -le "$nidle" ]; do
	kill_at idle 0 "$i"
	i=$((i + 1))
done
i=1
while [ "$i" -le $((nread + 2)) ]; do
	kill_at idle-read 0 "$i" read
	i=$((i + 1))
done
# the busy attach: its count varies from run to run (how long the borrowed
# thread is let run); every third moment, and a margin past the count. The
# counts depend on the path an attach takes (a sleeping thread's attach makes
# many more requests than one that ends by a signal): while fewer than 200
# moments are covered, the busy sweep goes on over the moments it skipped.
first=1
while [ "$first" -le 3 ]; do
	i=$first
	while [ "$i" -le $((nbusy + 20)) ]; do
		kill_at busy 2 "$i"
		i=$((i + 3))
	done
	[ "$moments" -ge 188 ] && break   # the detach below adds 12
	first=$((first + 1))
done

# the detach: capture stop, final snapshot, agent stop (no ptrace there): killed
# at moments spread over the end of a 300 ms watch
for ms in 250 280 300 320 340 360 380 400 430 460 500 550; do
	: >s.out
	"$robust" steady 2 >s.out &
	t=$!
	started_pids="$started_pids $t"
	wait_until "grep -q '^tick ' s.out" 20
	"$MEMWATCH" -p "$t" -i 50ms -d 300ms -q --capture now -f -o d.log >/dev/null 2>&1 &
	mw=$!
	started_pids="$started_pids $mw"
	sleep "$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')"
	kill -KILL "$mw" 2>/dev/null && moments=$((moments + 1))
	wait "$mw" 2>/dev/null
	trials=$((trials + 1))
	check_target "killed $ms ms into a 300 ms watch" "$t" s.out
	kill -9 "$t"
	wait "$t" 2>/dev/null
	# a snapshot being written when SIGKILL came stays a temporary file
	# (nothing can remove it); never a partial d.*.snap
	snaps_complete "killed $ms ms into a watch" d.*.snap
	left=$(find . -name 'd.*.tmp.*' | grep -c '')
	tmpleft=$((tmpleft + left))
	rm -f d.log d.*.snap d.*.tmp.*
done

# a kill point past the end of the path an attach took is no moment, and the
# idle attach's path varies most (a thread caught in nanosleep is followed
# through its system calls: some 160 requests; elsewhere a dozen): while fewer
# than 200 are covered, idle attaches are swept again, up to the longest count
top=$nidle
[ "$nbusy" -gt "$top" ] && top=$nbusy
round=0
while [ "$moments" -lt 200 ] && [ "$round" -lt 3 ]; do
	i=1
	while [ "$i" -le "$top" ] && [ "$moments" -lt 200 ]; do
		kill_at idle 0 "$i"
		i=$((i + 1))
	done
	round=$((round + 1))
done

echo "killsweep: $trials trials, memwatch killed at $moments moments, $deaths target deaths, $eintr early ends of a timed sleep, $tmpleft snapshot temporaries left by a kill"
[ "$moments" -ge 200 ] || fail "only $moments kill moments (want >= 200)"
# an interrupted nanosleep restarts, also through the signal frame
[ "$eintr" -eq 0 ] || fail "the borrowed thread's nanosleep returned EINTR $eintr times"
no_temp_files "killsweep"
finish
