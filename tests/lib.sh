# tests/lib.sh: sourced by every tests/run-*.sh. Gives each test a private
# directory, kills what it started, and has helpers that check exit statuses
# without ever piping the binary under test.
set -u

: "${MEMWATCH:?run the tests with make check}"
: "${TARGETS:?run the tests with make check}"

testname=$(basename "$0" .sh)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-$testname.XXXXXX")
started_pids=
# Every process the test starts inherits this, so that one still running when
# the test ends (a server under a shell, a target nobody waited for) is found.
MEMWATCH_TEST_ID="$testname.$$"
export MEMWATCH_TEST_ID

# left_running: the processes, but this shell, that still carry the test's id,
# and this shell's children that are not zombies, one "PID COMMAND" a line in
# $tmp/.left. (A child forked for `cmd &` that has not yet exec'd cmd has the
# environment this shell was started with, without the id, so the id alone
# misses it.) The globs are expanded here, before each grep is started, so
# no grep is ever among them: no pipeline, whose parts would be. (grep goes
# on past a process that ended meanwhile; mawk would stop there.)
left_running() {
	local f p cmd
	: > "$tmp/.left"
	grep -lzxF "MEMWATCH_TEST_ID=$MEMWATCH_TEST_ID" /proc/[0-9]*/environ > "$tmp/.leftf" 2>/dev/null
	grep -lx "PPid:[[:space:]]*$$" /proc/[0-9]*/status >> "$tmp/.leftf" 2>/dev/null
	while read -r f; do
		p=${f#/proc/}
		p=${p%/*}
		[ "$p" = "$$" ] && continue
		grep -q "^$p " "$tmp/.left" && continue
		cmd=$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)
		# (a zombie, not yet waited for, has none)
		[ -n "$cmd" ] && echo "$p $cmd" >> "$tmp/.left"
	done < "$tmp/.leftf"
	[ -s "$tmp/.left" ]
}

# cleanup [STATUS]: at exit, kill what the test said it started, then run
# $cleanup_extra (a test's own undoing: an unmount, a cgroup removed); then any
# other process it started that is still running after a grace period is a
# failure of the test (and is killed). STATUS: the test's exit status, for a
# trap of the test's own that calls cleanup after commands of its own.
cleanup_extra=
# ours PID: PID is still one of the test's processes, a child of this shell
# or one that carries the test's id (not the pid of one that ended long ago,
# which the kernel may have given since to another test's process)
ours() {
	[ -e "/proc/$1" ] || return 1
	[ "$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)" = "$$" ] ||
		grep -qzxF "MEMWATCH_TEST_ID=$MEMWATCH_TEST_ID" "/proc/$1/environ" 2>/dev/null
}
# main_shell: this is the test's own shell, not a subshell of it. (A shell
# forked for a background command or a $(...) holds the test's traps until it
# resets them or execs: a signal sent to it then, by a test that stops a
# program it just started, must not run the test's cleanup there.)
main_shell() {
	local me rest
	read -r me rest < /proc/self/stat
	[ "$me" = "$$" ]
}
cleanup() {
	local rc=${1:-$?} i=0
	main_shell || exit "$rc"
	for p in $started_pids; do
		ours "$p" && kill -9 "$p" 2>/dev/null
	done
	# (only these: a bare wait would also wait for any left running)
	for p in $started_pids; do
		wait "$p" 2>/dev/null
	done
	[ -n "$cleanup_extra" ] && eval "$cleanup_extra"
	while left_running && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ -s "$tmp/.left" ]; then
		while read -r p cmd; do
			echo "FAIL: the test left pid $p running: $cmd" >&2
			ours "$p" && kill -9 "$p" 2>/dev/null
		done < "$tmp/.left"
		rc=1
	fi
	if [ "${KEEP_TMP:-}" = "" ]; then
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
# ended from outside (the harness at the test's limit, Ctrl-C): the cleanup
# above still runs
trap 'if main_shell; then echo "$testname: ended by a signal" >&2; exit 1; else trap - EXIT; exit 143; fi' INT TERM
cd "$tmp" || exit 99

fails=0
# memcg_v1 NAME: make a child memory cgroup (v1) of this test's own, named
# NAME-PID: its directory in $cg, its path in the hierarchy (as
# /proc/PID/cgroup names it) in $cgrel; removed at the test's end. Skipped when
# there is no v1 memory controller or no right to make a cgroup in it.
memcg_v1() {
	local v1root own
	v1root=$(awk '$9 == "cgroup" && $0 ~ /[ ,]memory(,|$)/ { print $5; exit }' /proc/self/mountinfo)
	[ -n "$v1root" ] || skip "no memory controller of cgroup v1 is mounted"
	own=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}:\(.*\)$/\3/p' /proc/self/cgroup)
	[ "$own" = / ] && own=
	cgrel="$own/$1-$$"
	cg="$v1root$cgrel"
	mkdir "$cg" 2>/dev/null || skip "cannot make a memory cgroup in '$v1root$own' (root is needed)"
	cleanup_extra="rmdir '$cg' 2>/dev/null"
}

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
		skip "python3 is not installed (sh tests/install-deps.sh --tests)"
	fi
	return 0
}

# need_ptrace: the test attaches to its own children (memwatch -p, memwatch snap
# -p); skipped where yama forbids even that to a user other than root.
# go_build SOURCE CGO OUT: build the Go program SOURCE (one file) into OUT
# with Debian's go, offline (no module proxy, caches in the test's directory),
# CGO_ENABLED=CGO; skip the test, with go's errors, when it cannot be built.
go_build() {
	command -v go >/dev/null 2>&1 || skip "go is not installed (Debian package golang-go)"
	rm -rf "$tmp/gosrc" && mkdir -p "$tmp/gosrc" || exit 99
	cp "$1" "$tmp/gosrc/main.go"
	printf 'module target\n\ngo 1.13\n' >"$tmp/gosrc/go.mod"
	(cd "$tmp/gosrc" && GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath" GOENV=off GOPROXY=off GOFLAGS= \
		GO111MODULE=on CGO_ENABLED=$2 go build -o "$3" .) >"$tmp/gobuild.log" 2>&1 || {
		sed 's/^/  go build: /' "$tmp/gobuild.log" >&2
		skip "go cannot build $(basename "$1") here (CGO_ENABLED=$2)"
	}
}

need_ptrace() {
	[ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" -ge 2 ] &&
		[ "$(id -u)" -ne 0 ] && skip "ptrace is restricted (yama ptrace_scope >= 2)"
	return 0
}
# need_jdk: Debian's OpenJDK 17 or later (Compiler.perfmap came with 17), with
# javac, as $jdk; skipped without it.
need_jdk() {
	local d v
	jdk=
	for d in /usr/lib/jvm/java-*-openjdk-*; do
		[ -x "$d/bin/java" ] && [ -x "$d/bin/javac" ] || continue
		v=${d#/usr/lib/jvm/java-}
		v=${v%%-*}
		case $v in '' | *[!0-9]*) continue ;; esac
		[ "$v" -ge 17 ] && jdk=$d && return 0
	done
	skip "Debian's OpenJDK 17 or later is not installed (openjdk-17-jdk-headless)"
}
# need_snapdump: the test reads snapshots with tests/tools/snapdump, $SNAPDUMP.
need_snapdump() {
	SNAPDUMP=${top_builddir:?}/tests/tools/snapdump
	[ -x "$SNAPDUMP" ] || skip "tests/tools/snapdump is not built"
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

# run_prog EXPECTED_STATUS PROGRAM ARGS...: run PROGRAM with stdout to out,
# stderr to err; check the status. The status is in $status afterwards.
run_prog() {
	local expected=$1 prog=$2
	shift 2
	"$prog" "$@" >out 2>err
	status=$?
	if [ "$status" -ne "$expected" ]; then
		fail "${prog##*/} $*: exit status $status, expected $expected"
		sed 's/^/  stdout: /' out | head -n 40 >&2
		sed 's/^/  stderr: /' err >&2
	fi
	return 0
}
# run_mw EXPECTED_STATUS ARGS...: run_prog for memwatch.
run_mw() {
	local expected=$1
	shift
	run_prog "$expected" "$MEMWATCH" "$@"
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
	# what the test waits for, for the harness to say if it never ends
	[ -n "${MEMWATCH_TEST_STATE:-}" ] &&
		echo "wait_until (up to ${secs}s, since $(date +%T)): $cond" > "$MEMWATCH_TEST_STATE"
	while ! eval "$cond"; do
		i=$((i + 1))
		if [ "$i" -gt $((secs * 20)) ]; then
			fail "timed out after ${secs}s waiting for: $cond"
			[ -n "${MEMWATCH_TEST_STATE:-}" ] && : > "$MEMWATCH_TEST_STATE"
			return 1
		fi
		sleep 0.05
	done
	[ -n "${MEMWATCH_TEST_STATE:-}" ] && : > "$MEMWATCH_TEST_STATE"
	return 0
}

# ended PID: the process has ended (gone, or a zombie not yet waited for).
ended() {
	local s
	s=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null)
	[ -z "$s" ] || [ "$s" = Z ]
}

# wait_exit PID [SECS]: wait for the background child PID to end, at most SECS
# seconds (default 30); its exit status in $status (255 and a failure when it
# did not end; it is killed at the test's end if in $started_pids).
wait_exit() {
	status=255
	wait_until "ended $1" "${2:-30}" || return 1
	wait "$1"
	status=$?
	return 0
}

# expect_range WHAT GOT LO HI: GOT is a whole number in LO..HI.
expect_range() {
	case $2 in
	'' | *[!0-9]*) fail "$1: got '$2', expected a number in $3..$4" ;;
	*) [ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || fail "$1: got $2, expected $3..$4" ;;
	esac
	return 0
}

# Targets stepped through a fifo on their stdin: each has a NAME, reads
# NAME.in, writes NAME.out and NAME.err, and says "ready ..." between steps.

# start_fifo_target NAME PROGRAM ARGS...: start PROGRAM with stdin from the fifo
# NAME.in; $target_pid. Write lines to it with step NAME.
start_fifo_target() {
	local name=$1
	shift
	# a stale NAME.out would say "ready" before the new target is
	rm -f "$name.in" "$name.out" "$name.err"
	mkfifo "$name.in" || { fail "mkfifo $name.in"; return 1; }
	"$@" <"$name.in" >"$name.out" 2>"$name.err" &
	target_pid=$!
	started_pids="$started_pids $target_pid"
	# Holding the fifo open keeps the target's stdin from seeing end of file.
	sleep 3600 >"$name.in" &
	started_pids="$started_pids $!"
	eval "holder_$name=$!"
}

# step NAME: send one line to the target NAME (it goes on to its next phase);
# returns 1 if it could not. Bounded: a target that died holds no reader, and
# opening the fifo would wait for one for ever.
step() {
	timeout 10 sh -c 'echo go > "$1"' sh "$1.in" ||
		{ fail "cannot step $1: the target is not reading"; return 1; }
}

# end_target NAME: close its stdin.
end_target() {
	local h
	eval "h=\${holder_$1:-}"
	if [ -n "$h" ]; then
		kill "$h" 2>/dev/null
		wait "$h" 2>/dev/null
	fi
	return 0
}

# wait_ready NAME N [SECS]: wait for the target to print "ready N" (N may be a
# basic regular expression); returns 1 after failing if it does not.
wait_ready() {
	wait_until "[ -f '$1.out' ] && grep -q '^ready $2\$' '$1.out'" "${3:-30}"
}

# expect_target_exit PID NAME: the target exits 0 and printed "ok".
expect_target_exit() {
	local pid=$1 name=$2 st
	wait "$pid"
	st=$?
	end_target "$name"
	[ "$st" -eq 0 ] || { fail "target $name exited with status $st"; sed 's/^/  | /' "$name.out" "$name.err" >&2; }
	expect_grep '^ok' "$name.out"
}
