#!/bin/sh
# run-shared-watch.sh: two memwatch -p of one process share its agent's capture.
# A second watch joins the first's capture at the rate in force (said on stderr
# and recorded), and its end does not end the first's: the first's later
# snapshots still hold the leak and its report names it. Two watches started
# at the same moment both attach (the second waits for the first's attach, it
# does not take it for a debugger) and both capture.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/shared-lib.sh"

# The demo leaks about 6 MiB/s in cache_store (demo.c:25).
start_demo 60

start_mw a -p "$demo" -i 250ms -d 14s -q --capture now --snap-every 1s --max-snaps 40 -o a.log
a=$mw_pid
wait_until "grep -q ' snapshot path=' a.log 2>/dev/null" 20 || show_err a
# the second one asks another rate: it gets the one in force
run_mw 0 -p "$demo" -i 250ms -d 3s -q --capture now -r 64KiB -o b.log
expect_grep "^# event [0-9.]+ $demo attach .*reused=1" b.log
expect_grep "^# event [0-9.]+ $demo capture-start rate=524288 .*shared=1" b.log
expect_grep "^memwatch: warning: pid $demo: sharing the capture of memwatch pid $a at its sample rate 512 KiB, not 64.0 KiB" err
[ "$(grep -c '' err)" -eq 1 ] || { fail "memwatch b: more than one line on stderr"; sed 's/^/  stderr: /' err >&2; }
for f in b.$demo.*.snap; do
	[ "$(snap_rate "$f")" = 524288 ] || fail "$f records rate $(snap_rate "$f"), not the 524288 in force"
done
snaps_not_empty b b.log
expect_grep "cache_store" out
# the first one goes on capturing after the second has gone
n=$(grep -c ' snapshot path=' a.log)
wait_until "[ \$(grep -c ' snapshot path=' a.log) -ge $((n + 3)) ]" 20 || show_err a
wait_mw a "$a" 0
snaps_not_empty a a.log
expect_grep "^# event [0-9.]+ $demo capture-start rate=524288 depth=[0-9]+$" a.log
expect_grep "cache_store +demo\.c:25" a.out
if grep -Eq 'cache_store.*gone|gone.*cache_store' a.out; then
	fail "the first watch reports the leak as gone"
fi
kill -0 "$demo" 2>/dev/null || fail "the demo died"

# two watches at the same moment
start_mw c -p "$demo" -i 250ms -d 4s -q --capture now -o c.log
c=$mw_pid
start_mw d -p "$demo" -i 250ms -d 4s -q --capture now -o d.log
d=$mw_pid
wait_mw c "$c" 0
wait_mw d "$d" 0
for w in c d; do
	no_tracer_error $w
	expect_grep "^# event [0-9.]+ $demo capture-start " $w.log
	expect_grep "^# event [0-9.]+ $demo snapshot path=$w\.$demo\.[0-9]+-final\.snap .*final=1" $w.log
	snaps_not_empty $w $w.log
	expect_grep "cache_store" $w.out
done
kill -0 "$demo" 2>/dev/null || fail "the demo died"
finish
