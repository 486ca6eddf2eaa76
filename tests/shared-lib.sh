# tests/shared-lib.sh: helpers of the tests of several memwatch processes using
# one agent (tests/run-shared-*.sh), sourced after tests/lib.sh.

need_ptrace
snapdump=$top_builddir/tests/tools/snapdump
[ -x "$snapdump" ] || skip "tests/tools/snapdump is not built"

# snaps_not_empty WHAT LOG: the log has snapshot events, and each says the
# snapshot holds live bytes in some stacks.
snaps_not_empty() {
	local what=$1 log=$2 bad
	grep -Eq ' snapshot path=' "$log" || { fail "$what: '$log' has no snapshot"; return 0; }
	bad=$(grep -E ' snapshot path=' "$log" | grep -E ' live=0 | stacks=0( |$)')
	[ -z "$bad" ] || fail "$what: empty snapshots in '$log': $bad"
}

# snap_rate SNAP: the sample rate a snapshot records.
snap_rate() {
	"$snapdump" "$1" | awk '$1 == "sample_rate" { print $2; exit }'
}

# start_mw NAME ARGS...: memwatch ARGS in the background, output in NAME.out
# and NAME.err; its pid in $mw_pid.
start_mw() {
	local name=$1
	shift
	"$MEMWATCH" "$@" >"$name.out" 2>"$name.err" &
	mw_pid=$!
	started_pids="$started_pids $mw_pid"
}

# wait_mw NAME PID EXPECTED: wait for a memwatch started by start_mw; check its
# exit status.
wait_mw() {
	wait "$2"
	local st=$?
	if [ "$st" -ne "$3" ]; then
		fail "memwatch $1: exit status $st, expected $3"
		sed 's/^/  stderr: /' "$1.err" >&2
	fi
}

# no_tracer_error NAME: memwatch NAME never took another memwatch for a debugger.
no_tracer_error() {
	! grep -q 'already traced' "$1.err" || fail "memwatch $1: $(cat "$1.err")"
}

# show_err NAME: what memwatch NAME said and logged, for a failure's context.
show_err() {
	sed 's/^/  '"$1"'.err: /' "$1.err" >&2
	grep -h '^# event' "$1.log" 2>/dev/null | sed 's/^/  '"$1"'.log: /' >&2
}

# start_demo SECS: the demo (it leaks about 6 MiB/s in cache_store, demo.c:25),
# output in demo.out; $demo once it runs the demo's own code (an attach to the
# shell that has not exec'd it yet would go nowhere).
start_demo() {
	"$TARGETS/demo" "$1" > demo.out &
	demo=$!
	started_pids="$started_pids $demo"
	wait_until "[ \"\$(readlink /proc/$demo/exe)\" = \"\$(readlink -f \"\$TARGETS/demo\")\" ]" 10
	sleep 0.3
}
