#!/bin/sh
# run-attach-refuse.sh: attach refuses clearly, with the documented exit status
# and a hint where there is a fix, and leaves every target running normally:
# no such process, another user, already traced, statically linked, stopped,
# frozen, a Go program, and a process whose only
# thread may not be interrupted.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/attach-lib.sh"

# a pid that no process has: a reaped child's
sh -c 'exit 0' &
gone=$!
wait "$gone"
if [ ! -d "/proc/$gone" ]; then
	run_inject 4 "$gone" "$PROBE" ""
	expect_err_line "pid $gone: cannot attach: no such process"
fi

start_attach_target ready --seconds 6 --workers 1 >t.out 2>&1
t=$target_pid

# a thread id is not a process
tid=$(ls "/proc/$t/task" | grep -v "^$t\$" | head -n 1)
if [ -n "$tid" ]; then
	run_inject 5 "$tid" "$PROBE" ""
	expect_err_line "pid $tid: cannot attach: $tid is a thread of process $t, not a process"
fi

# another user
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 &&
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$MW_INJECT"; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$MW_INJECT" "$t" "$PROBE" "" >out 2>err
	status=$?
	[ "$status" -eq 5 ] || fail "as uid 65534: exit status $status, expected 5"
	expect_err_line "pid $t: cannot attach: ptrace not permitted: the process belongs to uid 0 and you are uid 65534"
	expect_grep '^  hint: run memwatch as uid 0 .*or as root' err
elif [ "$(id -u)" -ne 0 ]; then
	# pid 1 belongs to root
	run_inject 5 1 "$PROBE" ""
	expect_err_line "pid 1: cannot attach: .*(ptrace not permitted|already traced)"
	expect_grep '^  hint: ' err
else
	echo "note: cannot switch to uid 65534 here; other-user case not checked" >&2
fi

# already traced by a debugger
"$TARGETS/attach_tracer" "$t" 30 >tracer.out 2>&1 &
tracer=$!
started_pids="$started_pids $tracer"
wait_until "grep -q tracing tracer.out" 10
run_inject 5 "$t" "$PROBE" ""
expect_err_line "pid $t: cannot attach: already traced by pid $tracer \\(attach_tracer\\)"
expect_grep "^  hint: detach the debugger \\(pid $tracer, attach_tracer\\)" err
kill -9 "$tracer"
wait "$tracer" 2>/dev/null
wait_until "grep -q '^TracerPid:[[:space:]]*0' /proc/$t/status" 10

# stopped by job control
kill -STOP "$t"
wait_until "grep -q '^State:[[:space:]]*T' /proc/$t/status" 10
run_inject 5 "$t" "$PROBE" ""
expect_err_line "pid $t: cannot attach: the process is stopped"
expect_grep "^  hint: resume it \\(kill -CONT $t\\)" err
grep -q '^State:[[:space:]]*T' "/proc/$t/status" || fail "the stopped target was resumed by attach"
kill -CONT "$t"

# frozen cgroup (v1 freezer or v2), where we may create one
cg=
if [ -w /sys/fs/cgroup/freezer ] && mkdir "/sys/fs/cgroup/freezer/mw-attach-$$" 2>/dev/null; then
	cg=/sys/fs/cgroup/freezer/mw-attach-$$
	freeze() { echo "$1" >"$cg/freezer.state"; }
	frozen() { grep -q FROZEN "$cg/freezer.state"; }
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && mkdir "/sys/fs/cgroup/mw-attach-$$" 2>/dev/null; then
	cg=/sys/fs/cgroup/mw-attach-$$
	freeze() { if [ "$1" = FROZEN ]; then echo 1; else echo 0; fi >"$cg/cgroup.freeze"; }
	frozen() { grep -q 'frozen 1' "$cg/cgroup.events"; }
fi
if [ -n "$cg" ] && echo "$t" >"$cg/cgroup.procs" 2>/dev/null; then
	freeze FROZEN
	wait_until frozen 10
	run_inject 5 "$t" "$PROBE" ""
	expect_err_line "pid $t: cannot attach: the process is in a frozen cgroup"
	freeze THAWED
	# back to the parent cgroup so the directory can go
	echo "$t" >"$(dirname "$cg")/cgroup.procs" 2>/dev/null
fi
[ -n "$cg" ] && rmdir "$cg" 2>/dev/null

# still attachable after all that
run_inject 0 "$t" "$PROBE" "marker=$tmp/marker"
expect_grep "^start pid=$t " marker
expect_target_ok "$t" 40 t.out

# statically linked: nothing to load with
"$TARGETS/attach_static" 3 &
s=$!
started_pids="$started_pids $s"
wait_exec "$s" "$TARGETS/attach_static"
run_inject 5 "$s" "$PROBE" ""
expect_err_line "pid $s: cannot attach: the process is statically linked \\(it has no ELF interpreter\\): no library can be loaded into it$"
expect_grep "^  hint: link it dynamically, or use its allocator's own profiler$" err
wait_target "$s" 30
[ "$target_status" -eq 0 ] || fail "static target exited with $target_status"

# a Go program (recognised by its ELF sections) run by glibc's loader: cgo,
# never injected (memwatch run preloads it)
"$TARGETS/attach_gofake" 3 &
g=$!
started_pids="$started_pids $g"
wait_exec "$g" "$TARGETS/attach_gofake"
run_inject 5 "$g" "$PROBE" ""
expect_err_line "pid $g: cannot attach: the process is a Go program with cgo \\(dynamically linked\\): the agent is not injected into Go's runtime, which owns its threads and signals"
expect_grep "^  hint: start it with memwatch run -- PROGRAM to sample its C \\(cgo\\) allocations; for the Go heap, use Go's heap profiler, runtime/pprof" err
wait_target "$g" 30
[ "$target_status" -eq 0 ] || fail "Go-like target exited with $target_status"

# the only thread sits in epoll_wait: not interrupted, no safe point, no EINTR
start_attach_target ready2 --seconds 3 --main-epoll >t2.out 2>&1
t2=$target_pid
run_inject 5 --deadline 300 "$t2" "$PROBE" ""
expect_err_line "pid $t2: cannot attach: no thread at a safe point within 300 ms \\(0 attempts\\): thread $t2 in epoll_wait \\(would see EINTR\\)"
expect_grep '^  hint: ' err
expect_target_ok "$t2" 40 t2.out

finish
