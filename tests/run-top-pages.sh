#!/bin/sh
# run-top-pages.sh: memwatch top on two processes: a page each, Tab and n go
# to the next, Shift-Tab and N to the previous; each page names its own
# process and its leak.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/top-lib.sh"
need_ptrace

start_target "$TARGETS/demo" 60
a=$target_pid
start_target "$TARGETS/demo" 60
b=$target_pid
wait_libc "$a"
wait_libc "$b"
top_start t 120 40 -p "$a,$b" -i 500ms --capture now -o two.log

see t "^memwatch top  pid $a .*process 1/2"
top_row t "cache_store  demo\.c:[0-9]+" 20
keys t Tab
see t "^memwatch top  pid $b .*process 2/2"
top_row t "cache_store  demo\.c:[0-9]+" 20
keys t n
see t "^memwatch top  pid $a .*process 1/2"
keys t N
see t "^memwatch top  pid $b .*process 2/2"
keys t BTab
see t "^memwatch top  pid $a .*process 1/2"
keys t q
top_quit t 0
expect_grep "^# event [0-9.]+ $a capture-stop reason=quit$" two.log
expect_grep "^# event [0-9.]+ $b capture-stop reason=quit$" two.log
finish
