#!/bin/sh
# run-agent-nosleep.sh: capturing every allocation on four threads, no thread
# sleeps on a lock of the agent. Counted, not timed: strace counts the futex
# calls of the target (a thread waiting for a held mutex makes one) over a
# short and a long run; the agent's own locks never sleep, so the long run
# makes no more of them than the short one, whatever the machine's speed. The
# few that remain are the first unwinding of each thread filling libunwind's
# cache, and the program's own (thread exit and join). Then again with no
# thread allowed libunwind's per-thread frame cache (unwind-threads=0): all
# four walk with libunwind's cursor, whose global cache sits behind a mutex,
# and must not sleep on it either.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_storm
command -v strace >/dev/null 2>&1 || skip "strace is not installed"
strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace not permitted)"

# futex_calls NAME SECONDS [OPTIONS]: the futex calls of a 4-thread rate-1
# capture running SECONDS, in $calls; the target must finish intact.
futex_calls() {
	strace -f -c -e trace=futex -o "$1.strace" env LD_PRELOAD="$MEMWATCH_AGENT" \
		MEMWATCH_AGENT_OPTIONS=capture=now,rate=1${3:+,$3} "$T" 4 "$2" </dev/null >"$1.out" 2>"$1.err"
	st=$?
	[ "$st" -eq 0 ] || { fail "target under strace exited with status $st"; sed 's/^/  | /' "$1.err" >&2; }
	expect_grep '^ok ops=[1-9]' "$1.out"
	calls=$(awk '$NF == "futex" { print $4 }' "$1.strace")
	calls=${calls:-0}
}

futex_calls short 1
short=$calls
futex_calls long 4
long=$calls
echo "futex calls: $short in 1 s, $long in 4 s"
# A mutex in the sampling path, shared by four threads, made thousands per
# second here; a hundred covers the noise of the first unwindings.
[ "$long" -le $((short + 100)) ] ||
	fail "the target made $long futex calls in 4 s against $short in 1 s: a thread sleeps on a lock while sampling"
[ "$short" -le 1000 ] ||
	fail "the target made $short futex calls in 1 s: a thread sleeps on a lock while sampling"

# Walkers meeting on libunwind's mutex made 30-60 calls a second here: a
# longer run and a closer bound.
futex_calls short1 1 unwind-threads=0
short=$calls
futex_calls long1 8 unwind-threads=0
long=$calls
echo "futex calls, no thread with a frame cache: $short in 1 s, $long in 8 s"
[ "$long" -le $((short + 40)) ] ||
	fail "unwind-threads=0: the target made $long futex calls in 8 s against $short in 1 s: a thread sleeps on a lock while unwinding"
[ "$short" -le 1000 ] ||
	fail "unwind-threads=0: the target made $short futex calls in 1 s: a thread sleeps on a lock while unwinding"
finish
