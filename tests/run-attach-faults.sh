#!/bin/sh
# run-attach-faults.sh: what attach reports when the code it runs in the target
# misbehaves: a signal raised during the call reaches the program's handler and
# the interrupted read() resumes; a process that exits during the call is "no
# such process" (4), and so is one that ends before a thread is stopped; one
# that crashes is reported, not hidden (5); a seccomp
# filter that traps the loader's open() makes dlopen fail, not the process.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/attach-lib.sh"

# the read() thread is the one used; SIGUSR2 has an SA_RESTART handler
start_attach_target ready1 --seconds 2 --busy --reader >t1.out 2>&1
t1=$target_pid
run_inject 0 "$t1" "$PROBE" "signal"
expect_target_ok "$t1" 40 t1.out
expect_grep 'eintr=0 corrupt=0 usr2=1 ' t1.out

# a storm of queued signals to the read() thread while it is borrowed again
# and again: each one reaches the handler exactly once, read() resumes
start_attach_target ready5 --seconds 3 --busy --reader --signals 1000 >t5.out 2>&1
t5=$target_pid
for i in 1 2 3 4 5 6; do
	run_inject 0 "$t5" "$PROBE" "marker=$tmp/marker5"
done
expect_target_ok "$t5" 40 t5.out
expect_grep 'eintr=0 corrupt=0 usr2=0 rt=1000$' t5.out

start_attach_target ready2 --seconds 5 >t2.out 2>&1
t2=$target_pid
run_inject 4 "$t2" "$PROBE" "exit"
expect_err_line "pid $t2: cannot attach: the process exited during injection"
wait_target "$t2" 20
[ "$target_status" -eq 0 ] || fail "the target's own _exit(0) became status $target_status"

# a process that ends while its C library's code is being read (before any
# thread is stopped): it exited, whatever was left unread
start_attach_target ready6 --seconds 5 --busy --workers 3 >t6.out 2>&1
t6=$target_pid
MEMWATCH_TEST_END_TARGET=1 run_inject 4 "$t6" "$PROBE" "marker=$tmp/marker6"
expect_err_line "pid $t6: cannot attach: the process exited\$"
wait_target "$t6" 20
[ "$target_status" -eq 137 ] || fail "killed target: status $target_status, expected 137"

# a deadline that passes while the attach is prepared (a starved machine):
# said so, rather than a list of threads none of which was tried
start_attach_target ready7 --seconds 3 --busy --workers 2 >t7.out 2>&1
t7=$target_pid
run_inject 5 --deadline 1 "$t7" "$PROBE" "marker=$tmp/marker7"
expect_err_line "pid $t7: cannot attach: no thread at a safe point within 1 ms \(0 attempts\): .*; the attach took [0-9]+ ms to prepare, before any thread was tried\$"
expect_target_ok "$t7" 40 t7.out

start_attach_target ready3 --seconds 5 >t3.out 2>&1
t3=$target_pid
run_inject 5 "$t3" "$PROBE" "crash"
expect_err_line "pid $t3: cannot attach: the process crashed during injection: .*signal 11"
wait_target "$t3" 20
[ "$target_status" -eq 139 ] || fail "crashed target: status $target_status, expected 139"

# a seccomp filter traps open(): dlopen fails with EPERM instead of the
# process dying of SIGSYS, and the error says why
start_attach_target ready4 --seconds 3 --reader --seccomp >t4.out 2>&1
t4=$target_pid
if grep -q '^Seccomp:[[:space:]]*2' "/proc/$t4/status"; then
	run_inject 5 "$t4" "$PROBE" ""
	expect_err_line "pid $t4: cannot attach: dlopen of the agent failed in the process: .*Operation not permitted"
	expect_grep '^  hint: .*seccomp' err
	expect_target_ok "$t4" 40 t4.out
else
	echo "note: seccomp filters unavailable here; not checked" >&2
fi

finish
