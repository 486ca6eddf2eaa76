#!/bin/sh
# run-top-intact.sh: the target is left as it was, whatever ends memwatch top:
# q, SIGTERM or Ctrl-C. The target (robust_target steady: threads that check
# their registers, signal mask, alternate stack and heap blocks) is not
# corrupted, runs free and is no longer captured; each way out gives the
# watch's exit status and the shell's screen back.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
. "$top_srcdir/tests/top-lib.sh"
need_ptrace

: >s.out
"$robust" steady 2 >s.out &
t=$!
started_pids="$started_pids $t"
wait_until "grep -q '^tick ' s.out" 20

# after_top WHAT: the target is alive, intact, free, and its capture is off
after_top() {
	kill -0 "$t" 2>/dev/null || { fail "$1: the target died"; return 0; }
	grep '^CORRUPT' s.out >&2 && fail "$1: the target is corrupted"
	target_free "$1" "$t" s.out
	capture_off "$1" "$t"
}

# q
top_start q 100 30 -p "$t" -i 300ms --capture now -o q.log
see q "view every [0-9.]+s \(a snapshot costs the target"
keys q q
top_quit q 0
expect_grep "^# event [0-9.]+ - end reason=quit$" q.log
after_top "quit with q"

# SIGTERM: 143, the terminal restored
top_start term 100 30 -p "$t" -i 300ms --capture now -o term.log
see term "view every [0-9.]+s \(a snapshot costs the target"
kill -TERM "$(cat term.pid)"
top_quit term 143
expect_grep "^# event [0-9.]+ - end reason=signal$" term.log
after_top "SIGTERM"

# Ctrl-C at the terminal: 130
top_start int 100 30 -p "$t" -i 300ms --capture now -o int.log
see int "view every [0-9.]+s \(a snapshot costs the target"
keys int C-c
top_quit int 130
expect_grep "^# event [0-9.]+ - end reason=signal$" int.log
after_top "Ctrl-C"
finish
