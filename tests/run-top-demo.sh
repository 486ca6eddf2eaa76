#!/bin/sh
# run-top-demo.sh: memwatch top on the demo service, which leaks in
# cache_store: the top row names it within a few intervals, and once the view
# has three snapshots its verdict is leak?; Enter opens its
# whole stack; s sorts, b groups, m marks, w writes a snapshot, q quits with
# status 0 and the shell's screen, the run log and snapshots written as by
# the watch.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/top-lib.sh"
need_ptrace

start_target "$TARGETS/demo" 60
wait_libc "$target_pid"
d=$target_pid
top_start t 120 40 -p "$d" -i 500ms --capture now -o top.log

see t "^memwatch top  pid $d .*process 1/1"
see t "^RSS .*capture capturing  rate 512 KiB  live heap"
see t "view every [0-9.]+s \(a snapshot costs the target"
top_row t "^\+ *[0-9.]+ [KMG]?i?B .* (new|grown) .*cache_store  demo\.c:[0-9]+" 20
expect_grep "since capture start: explains [0-9]+% of the RSS growth" t.pane
# each row's verdict over the view's snapshots (trend.h), beside its sparkline
expect_grep "^ +GROWTH .* STATUS +TREND +VERDICT +FUNCTION  FILE:LINE" t.pane
top_row t "^\+ *[0-9.]+ [KMG]?i?B .* (new|grown) +[^ ]* +leak\? +cache_store  demo\.c:[0-9]+" 40

# the whole stack of the top row, from the leak to main
keys t Enter
see t "^STACK of row 1: "
see t "^> cache_store  demo\.c:[0-9]+"
expect_grep "^  handle_request  demo\.c:[0-9]+" t.pane
expect_grep "^  main  demo\.c:[0-9]+" t.pane
keys t Escape
see t "^ +GROWTH .* LIVE"

# sorting: live, allocated, growth again
keys t s
see t "sort live  by stack"
top_row t "cache_store"
keys t s
see t "sort alloc  by stack"
keys t s
see t "sort growth  by stack"
top_row t "cache_store"
# by function: one row per function, without its line
keys t b
see t "sort growth  by function"
top_row t "cache_store *(\(weak\))? *\$"
keys t b b b
see t "sort growth  by stack"

# a mark: growth is counted from now
keys t m
see t "since mark"
see t "marked: growth is now counted from here"
top_row t "cache_store" 20

# w: the view's snapshot to a file, which memwatch show reads
keys t w
see t "wrote memwatch-top-$d\.1\.snap"
run_mw 0 show "memwatch-top-$d.1.snap"
expect_grep "cache_store  demo\.c:" out

# p pauses the view
keys t p
see t "PAUSED"
keys t p

# the verdict is the whole watch's, not the sparkline's last snapshots: still
# leak? after a mark and later on
top_row t " leak\? +cache_store  demo\.c:[0-9]+" 20

keys t q
top_quit t 0
# the watch's own output: the run log ended by the quit, its snapshots, the report
expect_grep "^# event [0-9.]+ - quit$" top.log
expect_grep "^# event [0-9.]+ - end reason=quit$" top.log
expect_grep "^# event [0-9.]+ $d capture-stop reason=quit$" top.log
expect_grep "^# event [0-9.]+ $d snapshot path=top\.$d\.[0-9]+-final\.snap .*final=1" top.log
expect_grep "cache_store  demo\.c:" t.pane
# the demo goes on, free
kill -0 "$d" 2>/dev/null || fail "the demo died"
expect_no_grep "^TracerPid:[[:space:]]*[1-9]" "/proc/$d/status"
finish
