#!/bin/sh
# tests/harness.sh: runs one test for make check (the LOG_COMPILER of every
# test, tests/tests.am), so that no test depends on how the suite was started
# and none runs for ever.
#   sh tests/harness.sh [--shell SHELL] TEST
# The test runs in a session of its own, with no terminal, stdin from
# /dev/null, every signal's disposition the default (nohup's ignored SIGHUP is
# not inherited), umask 022, the C.UTF-8 locale, and TMPDIR a directory made
# for it alone (under $TMPDIR when that is a plain path, else /tmp), removed
# afterwards. Every process it starts carries MEMWATCH_HARNESS_ID in its
# environment, by which the harness finds them.
# The test is bounded: past its limit it is ended (SIGTERM to it and all it
# started, SIGKILL 10 s later), and the harness says which test, what it was
# waiting for (the last wait of tests/lib.sh, the processes still running)
# and fails it. The limit is MEMWATCH_TEST_LIMIT seconds (default 300), or
# what the test declares on a line of its opening comment:
#   # limit: 600
# times MEMWATCH_TEST_LIMIT_SCALE (a whole number, default 1; the ASan build
# sets 2). Its last line in the test's log is its time:
#   harness: tests/run-foo.sh: 12.3 s (limit 300 s)
# which tests/slowest.sh reads.
# Exit status: the test's; 99 (a hard error) when it was ended at its limit or
# left processes running.
set -u

shell=
if [ "${1:-}" = --shell ]; then
	shell=$2
	shift 2
fi
[ $# -eq 1 ] || { echo "usage: sh tests/harness.sh [--shell SHELL] TEST" >&2; exit 99; }
test=$1
name=$(basename "$test")
name=${name%.sh}

# the limit: the test's own, else the default; scaled
limit=$(sed -n '1,30{s/^# limit: *\([0-9][0-9]*\) *$/\1/p}' "$test" 2>/dev/null | head -n 1)
case ${limit:-} in '' | *[!0-9]*) limit=${MEMWATCH_TEST_LIMIT:-300} ;; esac
scale=${MEMWATCH_TEST_LIMIT_SCALE:-1}
case $scale in '' | *[!0-9]*) scale=1 ;; esac
limit=$((limit * scale))
grace=${MEMWATCH_TEST_GRACE:-10}
case $grace in "" | *[!0-9]*) grace=10 ;; esac

# the test's own TMPDIR, under the user's when its path is plain (a space or
# a shell character in it would be one more thing the test depends on)
base=${TMPDIR:-/tmp}
case $base in
/*) case $base in *[!A-Za-z0-9._/+-]*) base=/tmp ;; esac ;;
*) base=/tmp ;;
esac
[ -d "$base" ] && [ -w "$base" ] || base=/tmp
hdir=$(mktemp -d "$base/memwatch-test-$name.XXXXXX") || exit 99
# reachable by the other users some tests run programs as (a container's root)
chmod 0755 "$hdir"
mkdir "$hdir/tmp" && chmod 0755 "$hdir/tmp" || exit 99

id="$name.h$$"
state=$hdir/waiting
: > "$state"

# test_pids: the processes that carry the test's id (the harness does not).
# (The glob is expanded before grep starts, so grep is never among them.)
test_pids() {
	grep -lzxF "MEMWATCH_HARNESS_ID=$id" /proc/[0-9]*/environ 2> /dev/null |
		sed 's,^/proc/\([0-9]*\)/environ$,\1,'
	return 0
}
# ours PID: PID is one of the test's processes now.
ours() {
	grep -qzxF "MEMWATCH_HARNESS_ID=$id" "/proc/$1/environ" 2> /dev/null
}
# describe PID: one line about a process: pid, parent, state, what it waits
# in, its command
describe() {
	local st ppid wchan cmd
	st=$(sed -n 's/^State:[[:space:]]*//p' "/proc/$1/status" 2> /dev/null)
	ppid=$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$1/status" 2> /dev/null)
	wchan=$(cat "/proc/$1/wchan" 2> /dev/null)
	cmd=$(tr '\0' ' ' < "/proc/$1/cmdline" 2> /dev/null)
	echo "  pid $1 (parent $ppid, ${st:-gone}${wchan:+, in $wchan}): $cmd"
}

start=$(date +%s.%N)
if [ -n "$shell" ]; then
	set -- $shell "$test"
else
	set -- "$test"
fi
# setsid: a session and process group of its own, without a controlling
# terminal; env: every signal's disposition back to the default
(
	umask 022
	unset LANGUAGE LC_CTYPE LC_NUMERIC LC_TIME LC_COLLATE LC_MONETARY LC_MESSAGES \
		LC_PAPER LC_NAME LC_ADDRESS LC_TELEPHONE LC_MEASUREMENT LC_IDENTIFICATION \
		COLUMNS LINES
	LANG=C.UTF-8 LC_ALL=C.UTF-8 TMPDIR=$hdir/tmp MEMWATCH_HARNESS_ID=$id \
		MEMWATCH_TEST_STATE=$state
	export LANG LC_ALL TMPDIR MEMWATCH_HARNESS_ID MEMWATCH_TEST_STATE
	exec setsid env --default-signal "$@" < /dev/null
) &
pid=$!

# the watchdog: at the limit, say what the test waits for, then end it. (It
# counts seconds, so that it never leaves a sleep behind for long.)
(
	n=0
	while [ $n -lt "$limit" ]; do
		sleep 1
		ours "$pid" || exit 0
		n=$((n + 1))
	done
	{
		echo "harness: $test: ended at its limit of $limit s"
		if [ -s "$state" ]; then
			echo "harness: its last wait: $(cat "$state")"
		fi
		echo "harness: still running:"
		describe "$pid"
		for p in $(test_pids); do
			[ "$p" = "$pid" ] || describe "$p"
		done
	} > "$hdir/timeout"
	cat "$hdir/timeout"
	# a line for the console too, where make check shows its progress
	sed -n '1p' "$hdir/timeout" 2> /dev/null >&9
	# SIGTERM to all of it: the test's own cleanup runs (lib.sh). Every
	# kill is of a process that carries the test's id just before: pids are
	# given again soon on a busy machine, and another test's must never be.
	ours "$pid" && kill -TERM -- "-$pid" 2> /dev/null
	for p in $(test_pids); do ours "$p" && kill -TERM "$p" 2> /dev/null; done
	i=0
	while [ $i -lt $((grace * 10)) ] && ours "$pid"; do
		sleep 0.1
		i=$((i + 1))
	done
	for p in $(test_pids); do ours "$p" && kill -KILL "$p" 2> /dev/null; done
) &
dog=$!

wait "$pid"
rc=$?
end=$(date +%s.%N)
kill -TERM "$dog" 2> /dev/null
wait "$dog" 2> /dev/null

# whatever still carries the test's id is ended, and fails the test
i=0
left=$(test_pids)
while [ -n "$left" ] && [ $i -lt 30 ]; do
	sleep 0.1
	i=$((i + 1))
	left=$(test_pids)
done
if [ -n "$left" ]; then
	echo "harness: $test left these running; ended:"
	for p in $left; do
		describe "$p"
		ours "$p" && kill -KILL "$p" 2> /dev/null
	done
	rc=99
fi
if [ -e "$hdir/timeout" ]; then
	echo "FAIL: $test was ended at its limit of $limit s"
	rc=99
fi
# a test's mounts are its own to undo: never follow one
rm -rf --one-file-system "$hdir" 2> /dev/null
echo "harness: $test: $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }') s (limit $limit s)"
exit $rc
