# tests/lib.sh: sourced by every tests/run-*.sh. Gives each test a private
# directory, kills what it started, and has helpers that check exit statuses
# without ever piping the binary under test.
set -u

: "${MEMWATCH:?run the tests with make check}"
: "${TARGETS:?run the tests with make check}"

testname=$(basename "$0" .sh)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-$testname.XXXXXX")
started_pids=
cleanup() {
	for p in $started_pids; do
		kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	if [ "${KEEP_TMP:-}" = "" ]; then
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
cd "$tmp" || exit 99

fails=0
# fail MESSAGE: record a failure and go on. The failure is written to a file
# too, so that one recorded in a subshell ($(...), a pipeline) still counts.
fail() {
	echo "FAIL: $*" >&2
	echo fail >> "$tmp/.failures"
	fails=$((fails + 1))
}
# skip REASON: the whole test is skipped (exit 77) for a missing capability.
skip() {
	echo "SKIP: $*" >&2
	exit 77
}
# need_python: the test needs a python3 (Debian's, else the one on PATH), as
# $PYTHON; without one it is skipped, with the reason.
need_python() {
	if [ -x /usr/bin/python3 ]; then
		PYTHON=/usr/bin/python3
	elif command -v python3 >/dev/null 2>&1; then
		PYTHON=python3
	else
		skip "python3 is not installed (tests/install-deps.sh)"
	fi
	return 0
}

# finish: the test's verdict, counting the failures of subshells too.
finish() {
	local n=0
	[ -f "$tmp/.failures" ] && n=$(grep -c '' "$tmp/.failures")
	[ "$n" -gt "$fails" ] && fails=$n
	if [ "$fails" -ne 0 ]; then
		echo "$testname: $fails check(s) failed" >&2
		exit 1
	fi
	exit 0
}

# run_mw EXPECTED_STATUS ARGS...: run memwatch with stdout to out, stderr to err;
# check the status. The status is in $status afterwards.
run_mw() {
	local expected=$1
	shift
	"$MEMWATCH" "$@" >out 2>err
	status=$?
	if [ "$status" -ne "$expected" ]; then
		fail "memwatch $*: exit status $status, expected $expected"
		sed 's/^/  stderr: /' err >&2
	fi
	return 0
}

# expect_err_line PATTERN: stderr is exactly one line "memwatch: ..." matching
# the extended regular expression PATTERN, followed by nothing but hints.
expect_err_line() {
	local n
	n=$(grep -c '' err)
	if [ "$n" -lt 1 ]; then
		fail "expected an error line matching '$1', stderr is empty"
		return 0
	fi
	if ! head -n 1 err | grep -Eq "^memwatch: .*$1"; then
		fail "first stderr line does not match 'memwatch: .*$1':"
		sed 's/^/  stderr: /' err >&2
	fi
	if [ "$(grep -c '^memwatch: ' err)" -ne 1 ] || tail -n +2 err | grep -vq '^  hint: '; then
		fail "stderr has more than one error line and its hints:"
		sed 's/^/  stderr: /' err >&2
	fi
}

# expect_grep PATTERN FILE: FILE has a line matching PATTERN (extended regex).
expect_grep() {
	grep -Eq -- "$1" "$2" || { fail "'$2' has no line matching '$1'"; sed 's/^/  | /' "$2" | head -n 40 >&2; }
}
expect_no_grep() {
	! grep -Eq -- "$1" "$2" || fail "'$2' has a line matching '$1'"
}

# start_target PROGRAM ARGS...: start a target in the background; $target_pid.
start_target() {
	"$@" &
	target_pid=$!
	started_pids="$started_pids $target_pid"
}

# wait_libc PID: until the process has its C library mapped (a program just
# started may still be in the dynamic loader, where no agent can be loaded),
# and is no longer this shell's child before its exec (which has one too).
wait_libc() {
	wait_until "[ \"\$(readlink /proc/$1/exe)\" != \"\$(readlink /proc/$$/exe)\" ] &&
		grep -q 'libc[.-]' /proc/$1/maps 2>/dev/null" 10
}

# wait_exec PID PROGRAM: until the process runs PROGRAM (a child of this shell
# is the shell itself until its exec).
wait_exec() {
	wait_until "[ \"\$(readlink /proc/$1/exe)\" = \"$(readlink -f "$2")\" ]" 10
}

# wait_for FILE-TEST SECONDS: poll until "test $1" holds, or fail after $2 s.
wait_until() {
	local cond=$1 secs=${2:-10} i=0
	while ! eval "$cond"; do
		i=$((i + 1))
		if [ "$i" -gt $((secs * 20)) ]; then
			fail "timed out after ${secs}s waiting for: $cond"
			return 1
		fi
		sleep 0.05
	done
	return 0
}
