#!/bin/sh
# run-shared-snap.sh: memwatch snap -w and a watch on one process. A snap during
# a watch's capture takes a snapshot of the shared capture, at the rate in force
# (said on stderr, recorded in the snapshot), and leaves it running: the watch's
# later snapshots still hold the leak. A watch that joins a capture a snap
# started keeps it when the snap ends.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/shared-lib.sh"

# The demo leaks about 6 MiB/s in cache_store (demo.c:25).
start_demo 60

# 1. snap during a watch
start_mw a -p "$demo" -i 250ms -d 9s -q --capture now -r 256KiB --snap-every 1s --max-snaps 40 -o a.log
a=$mw_pid
wait_until "grep -q ' snapshot path=' a.log 2>/dev/null" 20 || show_err a
run_mw 0 snap -p "$demo" -w 2s -o s.snap
expect_grep "^memwatch: warning: pid $demo: sharing the capture of memwatch pid $a at its sample rate 256 KiB, not 512 KiB" err
expect_no_grep "capture started now" err
expect_grep "^pid $demo: .* live \(estimated\) in [1-9][0-9]* stacks, .*sample rate 256 KiB" out
[ "$(snap_rate s.snap)" = 262144 ] || fail "s.snap records rate $(snap_rate s.snap), not the 262144 in force"
run_mw 0 show s.snap
expect_grep "cache_store" out
n=$(grep -c ' snapshot path=' a.log)
wait_until "[ \$(grep -c ' snapshot path=' a.log) -ge $((n + 2)) ]" 20 || show_err a
wait_mw a "$a" 0
snaps_not_empty a a.log
expect_grep "cache_store +demo\.c:25" a.out

# 2. a watch joins the capture of a snap that started it
start_mw s2 snap -p "$demo" -w 6s -o s2.snap
s2=$mw_pid
wait_until "grep -q 'capture started now' s2.err" 20
start_mw b -p "$demo" -i 250ms -d 11s -q --capture now --snap-every 1s --max-snaps 40 -o b.log
b=$mw_pid
wait_mw s2 "$s2" 0
expect_grep "^pid $demo: .* live \(estimated\) in [1-9][0-9]* stacks" s2.out
n=$(grep -c ' snapshot path=' b.log)
wait_until "[ \$(grep -c ' snapshot path=' b.log) -ge $((n + 2)) ]" 20 || show_err b
wait_mw b "$b" 0
expect_grep "^# event [0-9.]+ $demo capture-start rate=524288 .*shared=1" b.log
snaps_not_empty b b.log
expect_grep "cache_store +demo\.c:25" b.out
kill -0 "$demo" 2>/dev/null || fail "the demo died"
finish
