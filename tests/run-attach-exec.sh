#!/bin/sh
# run-attach-exec.sh: the process executes another program while memwatch
# attaches to it (a shell's child becoming the program it starts, a server
# re-executing itself). memwatch looks at the process (its C library, where
# dlopen is), then stops a thread: here it is made to stop itself in between
# (MEMWATCH_TEST_KILL_AT=1:stop, before its first ptrace request) while
# Debian's python3 executes /bin/sleep. The addresses it found belong to the
# old program: a call to them crashed the new one (SIGSEGV). Now memwatch sees
# that the code there changed, starts over on the new program and attaches to
# it; the target lives on.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/attach-lib.sh"
need_python

# exec_case NAME: python3 that executes /bin/sleep on SIGUSR1; memwatch stopped
# between its look at the process and its first ptrace request, meanwhile.
exec_case() {
	local name=$1 t mw st
	"$PYTHON" -c 'import os, signal, time
signal.signal(signal.SIGUSR1, lambda *a: os.execv("/bin/sleep", ["sleep", "60"]))
print("ready", flush=True)
while True:
    time.sleep(0.02)' >"$name.py.out" &
	t=$!
	started_pids="$started_pids $t"
	wait_until "grep -q ready $name.py.out" 20
	MEMWATCH_TEST_KILL_AT=1:stop MEMWATCH_INJECT_DEBUG=1 "$MEMWATCH" -p "$t" --capture now \
		-i 100ms -d 1s -q -o "$name.log" >"$name.out" 2>"$name.err" &
	mw=$!
	started_pids="$started_pids $mw"
	wait_until "grep -q '^State:[[:space:]]*T' /proc/$mw/status" 20
	kill -USR1 "$t"
	wait_exec "$t" /bin/sleep
	wait_libc "$t"
	kill -CONT "$mw"
	wait "$mw"
	st=$?
	[ "$st" -eq 0 ] || { fail "$name: memwatch exit status $st"; cat "$name.err" >&2; }
	kill -0 "$t" 2>/dev/null || { wait "$t"; fail "$name: the target died (status $?)"; return 0; }
	grep -q 'executed another program: starting over' "$name.err" ||
		fail "$name: memwatch did not see the exec"
	expect_grep "^# event [0-9.]+ $t attach " "$name.log"
	expect_grep "^# event [0-9.]+ $t snapshot path=.*final=1" "$name.log"
	expect_no_grep "attach-failed" "$name.log"
	kill "$t"
	wait "$t"
	st=$?
	[ "$st" -eq 143 ] || fail "$name: the target ended with status $st, not by our SIGTERM"
}

exec_case exec
finish
