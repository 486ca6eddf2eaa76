# tests/attach-lib.sh: helpers shared by the tests/run-attach-*.sh scripts,
# sourced after tests/lib.sh.

MW_INJECT="${top_builddir:?}/tests/tools/mw-inject"
PROBE="$TARGETS/.libs/attach_probe.so"
BADLIB="$TARGETS/.libs/attach_badlib.so"

[ -x "$MW_INJECT" ] || skip "mw-inject not built"
[ -f "$PROBE" ] || skip "attach_probe.so not built"
if [ "$(id -u)" -ne 0 ]; then
	scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
	[ "$scope" -eq 0 ] || skip "kernel.yama.ptrace_scope=$scope forbids attaching to a non-child"
fi

# run_inject EXPECTED_STATUS ARGS...: run_prog (lib.sh) for mw-inject.
run_inject() {
	local expected=$1
	shift
	run_prog "$expected" "$MW_INJECT" "$@"
}

# start_attach_target READYFILE ARGS...: start tests/targets/attach_target and
# wait until its threads are in place; $target_pid.
start_attach_target() {
	local ready=$1
	shift
	rm -f "$ready"
	start_target "$TARGETS/attach_target" --ready "$ready" "$@"
	wait_until "[ -s '$ready' ]" 20
}

# proc_alive PID: the process exists and is not a zombie.
proc_alive() {
	[ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# wait_target PID SECS: wait for a started target to end on its own within SECS;
# $target_status holds its exit status (999 when it had to be killed).
wait_target() {
	local pid=$1 secs=$2 i=0
	while proc_alive "$pid"; do
		i=$((i + 1))
		if [ "$i" -gt $((secs * 20)) ]; then
			fail "target $pid did not finish within ${secs}s (deadlock?)"
			if command -v eu-stack >/dev/null 2>&1; then
				eu-stack -p "$pid" 2>&1 | head -n 60 | sed 's/^/  | /' >&2
			fi
			kill -9 "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			target_status=999
			return 0
		fi
		sleep 0.05
	done
	wait "$pid"
	target_status=$?
	return 0
}

# expect_target_ok PID SECS OUTFILE: the target ends on its own, cleanly.
expect_target_ok() {
	wait_target "$1" "$2"
	if [ "$target_status" -ne 0 ]; then
		fail "target $1 exited with status $target_status (2: spurious EINTR, 3: corrupted)"
		[ -f "${3:-}" ] && sed 's/^/  target: /' "$3" >&2
	fi
}
