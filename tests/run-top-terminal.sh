#!/bin/sh
# run-top-terminal.sh: memwatch top needs a terminal: not a pipe or a file, not
# TERM=dumb (one line and a hint, status 2, nothing started); a terminal too
# small says so, and a resize redraws; its own options are checked.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/top-lib.sh"
need_ptrace

start_target "$TARGETS/demo" 60
wait_libc "$target_pid"
d=$target_pid

# not a terminal: standard input, then standard output
run_mw 2 top -p "$d" -o no.log </dev/null
expect_err_line "top: standard input is not a terminal"
expect_grep "hint: memwatch -p PID watches without one" err
[ -e no.log ] && fail "a run log was made without a terminal"

# TERM=dumb in a real terminal
cat >dumb.sh <<SCRIPT
cd '$tmp'
TERM=dumb '$MEMWATCH' top -p $d -o dumb.log 2>dumb.err
echo \$? >dumb.rc
exec sleep 600
SCRIPT
tmux -f /dev/null -S "$sock" new-session -d -s dumb -x 100 -y 30 "sh '$tmp/dumb.sh'"
wait_until "[ -s dumb.rc ]" 20
[ "$(cat dumb.rc)" = 2 ] || fail "TERM=dumb: exit status $(cat dumb.rc), expected 2"
cp dumb.err err
expect_err_line "top: the terminal cannot be drawn on \(TERM=dumb\)"
expect_grep "hint: .*memwatch -p PID" err

# too small: said; a resize to a usable size redraws the view
top_start small 40 8 -p "$d" -i 500ms --capture now --no-report -o small.log
see small "^terminal too small\$"
expect_grep "^\(40x8\):\$" small.pane
expect_grep "^memwatch top needs 60x12\$" small.pane
expect_no_grep "GROWTH" small.pane
tmux -S "$sock" resize-window -t small -x 120 -y 40 2>/dev/null ||
	tmux -S "$sock" resize-pane -t small -x 120 -y 40
see small "^memwatch top  pid $d "
see small "^ +GROWTH .* LIVE"
tmux -S "$sock" resize-window -t small -x 50 -y 20 2>/dev/null ||
	tmux -S "$sock" resize-pane -t small -x 50 -y 20
see small "^\(50x20\):\$"
keys small q
top_quit small 0

# its own options
run_mw 2 top -p "$d" --by size
expect_err_line "top: invalid --by 'size' \(stack, function, line or type\)"
run_mw 2 top -p "$d" --sort size
expect_err_line "top: invalid --sort 'size' \(growth, live or alloc\)"
run_mw 2 top -p "$d" -o -
expect_err_line "top: the run log cannot go to standard output \(-o -\)"
run_mw 2 top
expect_err_line "no process to watch: -p PID is missing"
run_mw 0 top --help
expect_grep "^  memwatch top -p PID" out
finish
