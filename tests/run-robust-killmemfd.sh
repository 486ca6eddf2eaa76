#!/bin/sh
# run-robust-killmemfd.sh: memwatch dies by SIGKILL at every moment of an
# attach that loads the agent through a memfd (a process in a container, which
# does not see memwatch's agent file): before each of its requests that
# changes or resumes the borrowed thread (MEMWATCH_TEST_KILL_AT=N, N swept over
# every request such an attach makes), around memfd_create, the dlopen of
# /proc/self/fd/N and the close. The target (robust_target steady, which checks
# its registers, signal mask and heap itself) survives each one intact,
# neither traced nor stopped, ticking, and a later attach loads the agent
# (or finds it started); no memfd is left open in it once that attach is
# done (the agent closes those of a memwatch killed before it could).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/container-lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
need_ptrace

# fresh NAME: robust_target steady in a new container; $pid, its out in NAME.out
fresh() {
	make_root "$tmp/$1"
	start_container "$tmp/$1" "$1.out" "$robust" steady 1
	pid=$ct_pid
	wait_until "[ \$(grep -c '^tick ' '$1.out') -ge 1 ]" 20
}

# how many requests a memfd attach makes (the most of three)
n=0
for try in 1 2 3; do
	fresh count$try
	rm -f count.snap
	MEMWATCH_INJECT_DEBUG=1 "$MEMWATCH" snap -p "$pid" -w 100ms -o count.snap > count.out 2> count.err
	st=$?
	[ "$st" -eq 0 ] || { fail "a plain attach failed with status $st"; sed 's/^/  | /' count.err >&2; }
	grep -q '^inject: the agent loaded from a memfd$' count.err || fail "the agent was not loaded from a memfd"
	m=$(sed -n 's/^inject: \([0-9]*\) ptrace requests$/\1/p' count.err | tail -n 1)
	[ -n "$m" ] && [ "$m" -gt "$n" ] && n=$m
	kill -9 "$pid"
done
[ "$n" -gt 0 ] || { fail "no count of requests"; finish; }
echo "a memfd attach makes $n requests"

deaths=0
k=1
while [ "$k" -le "$n" ]; do
	fresh k$k
	rm -f k.snap after.snap
	MEMWATCH_TEST_KILL_AT=$k "$MEMWATCH" snap -p "$pid" -w 100ms -o k.snap > k.out 2> k.err
	st=$?
	# killed (137), or done before the Nth request (the path was shorter)
	[ "$st" -eq 137 ] || [ "$st" -eq 0 ] || { fail "kill at $k: status $st"; sed 's/^/  | /' k.err >&2; }
	if ! kill -0 "$pid" 2> /dev/null || grep -q '^CORRUPT' "k$k.out"; then
		deaths=$((deaths + 1))
		fail "kill at $k: the target died or is corrupt: $(grep '^CORRUPT' "k$k.out")"
	else
		target_free "kill at $k" "$pid" "k$k.out"
		# (the agent may be in already: the killed memwatch started it)
		run_mw 0 snap -p "$pid" -w 100ms -o after.snap
		[ -s after.snap ] || fail "kill at $k: no snapshot after it"
		grep -q " /memfd:libmemwatch-agent\.so (deleted)$" "/proc/$pid/maps" ||
			fail "kill at $k: the agent is not mapped from a memfd"
		# a memfd the killed memwatch could not close, the agent closed at start
		ls -l "/proc/$pid/fd" > fd.list
		! grep -q '/memfd:' fd.list || fail "kill at $k: a memfd left open: $(grep /memfd: fd.list)"
		grep -q '^CORRUPT' "k$k.out" && fail "kill at $k: corrupt after the next attach: $(grep '^CORRUPT' "k$k.out")"
	fi
	kill -9 "$pid" 2> /dev/null
	k=$((k + 1))
done
echo "$n moments, $deaths deaths"
finish
