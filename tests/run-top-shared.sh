#!/bin/sh
# run-top-shared.sh: memwatch top beside a running watch joins its capture
# (the header says it is shared) and quitting drops only its own hold: the
# watch's capture goes on, snapshots and all, until the watch ends.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/top-lib.sh"
need_ptrace

start_target "$TARGETS/demo" 60
d=$target_pid
wait_libc "$d"
"$MEMWATCH" -p "$d" -i 200ms -d 50s -q --capture now --no-report -o w.log >w.out 2>w.err &
w=$!
started_pids="$started_pids $w"
wait_until "grep -q ' $d capture-start ' w.log 2>/dev/null" 20

top_start t 120 40 -p "$d" -i 500ms --capture now --no-report -o top.log
see t "capture capturing \(shared\)  rate 512 KiB"
top_row t "cache_store  demo\.c:[0-9]+" 20
expect_grep "^# event [0-9.]+ $d capture-start rate=[0-9]+ depth=[0-9]+ shared=1$" top.log
keys t q
top_quit t 0

# the watch's capture goes on: a snapshot after top is gone, then its own end
n=$(grep -c " $d snapshot " w.log)
wait_until "[ \$(grep -c ' $d snapshot ' w.log) -gt $n ]" 30
expect_no_grep " $d capture-stop " w.log
kill -TERM "$w"
wait "$w"
st=$?
[ "$st" -eq 143 ] || fail "the watch exited $st after SIGTERM, expected 143"
expect_grep "^# event [0-9.]+ $d capture-stop reason=signal$" w.log
finish
