#!/bin/sh
# run-capture-flow.sh: the whole flow on a target that leaks at a known site:
# watch, the trigger fires, the agent is attached, snapshots are written, the
# report names the leaking function with its file and line, and the target keeps
# running normally after memwatch has gone.
. "$top_srcdir/tests/lib.sh"

need_ptrace

# The demo service leaks about 6 MiB/s in cache_store (demo.c:25).
"$TARGETS/demo" 30 > demo.out &
demo=$!
started_pids="$started_pids $demo"

run_mw 0 -p "$demo" -i 250ms -d 9s -q --trigger +16MiB --snap-every +16MiB -o flow.log
expect_grep "^# event [0-9.]+ $demo trigger rss=[0-9]+ baseline=[0-9]+" flow.log
expect_grep "^# event [0-9.]+ $demo attach pause_ms=[0-9.]+" flow.log
expect_grep "^# event [0-9.]+ $demo capture-start rate=524288" flow.log
expect_grep "^# event [0-9.]+ $demo snapshot path=flow\.$demo\.1\.snap" flow.log
expect_grep "^# event [0-9.]+ $demo snapshot path=flow\.$demo\.[0-9]+-final\.snap .*final=1" flow.log
expect_grep "^# event [0-9.]+ $demo capture-stop reason=duration" flow.log
expect_grep "^# event [0-9.]+ - end reason=duration" flow.log
[ -s "flow.$demo.1.snap" ] || fail "first snapshot missing"
# the report printed at the end names the leak, its file and line
expect_grep "cache_store" out
expect_grep "demo\.c:25" out
# the scratch buffers are freed at once: they do not grow
if grep -E "render" out | grep -Eq '\+[0-9.]+ MiB'; then
	fail "report says the freed scratch buffers (render) grew"
fi

# memwatch is gone; the demo goes on at full speed and ends normally
kill -0 "$demo" 2>/dev/null || fail "the demo died while or after being watched"
wait "$demo"
st=$?
[ "$st" -eq 0 ] || fail "the demo exited with status $st"
expect_grep "^demo: served [0-9]+ requests" demo.out

# Two processes in one watch: each has its own agent, capture and snapshots.
"$TARGETS/demo" 20 > d1.out &
d1=$!
"$TARGETS/demo" 20 > d2.out &
d2=$!
started_pids="$started_pids $d1 $d2"
wait_libc "$d1"
wait_libc "$d2"
run_mw 0 -p "$d1,$d2" -i 250ms -d 4s -q --capture now -o two.log
for p in $d1 $d2; do
	expect_grep "^# event [0-9.]+ $p attach pause_ms=" two.log
	expect_grep "^# event [0-9.]+ $p capture-start " two.log
	expect_grep "^# event [0-9.]+ $p snapshot path=two\.$p\.[0-9]+-final\.snap" two.log
	expect_grep "^# event [0-9.]+ $p capture-stop reason=duration" two.log
done
expect_grep "^memwatch: pid $d1: " out
expect_grep "^memwatch: pid $d2: " out
kill -0 "$d1" 2>/dev/null || fail "demo $d1 died"
kill -0 "$d2" 2>/dev/null || fail "demo $d2 died"
for p in $d1 $d2; do
	wait "$p"
	st=$?
	[ "$st" -eq 0 ] || fail "demo $p exited with status $st"
done

# A run log named with a space and a '%': its events hold the snapshot paths
# encoded (no space in a value), and report and plot read them back whole.
"$TARGETS/demo" 20 > d3.out &
d3=$!
started_pids="$started_pids $d3"
wait_libc "$d3"
run_mw 0 -p "$d3" -i 250ms -d 5s -q --trigger +16MiB -o "my run %1.log"
expect_grep "^# event [0-9.]+ $d3 snapshot path=my%20run%20%251\.$d3\.1\.snap live=" "my run %1.log"
[ -s "my run %1.$d3.1.snap" ] || fail "no snapshot 'my run %1.$d3.1.snap'"
run_mw 0 report "my run %1.log" -o esc.html
expect_grep "my run %1\.$d3\.1\.snap" esc.html
expect_no_grep "not found" err
kill "$d3" 2>/dev/null

# --capture now takes no reference snapshot: a watch that ends with its final
# snapshot alone reports the live heap, and says that it is not growth.
"$TARGETS/flat" 4 30 &
f=$!
started_pids="$started_pids $f"
wait_libc "$f"
run_mw 0 -p "$f" -i 250ms -d 2s -q --capture now -o one.log
expect_grep "^memwatch: pid $f: 1 snapshot; live heap in one\.$f\.1-final\.snap$" out
expect_grep "^\(one snapshot, so no growth to show: this is all the sampled memory still live,$" out
expect_grep "^live heap by call stack " out
finish
