#!/bin/sh
# run-node-blocked.sh: the report says when node's JavaScript objects are not
# in a snapshot, and why. A script grows objects from retainObjects() under
# a watch that holds capture (V8's profiler running); then its JavaScript
# thread waits in native code (execSync of a shell that waits for a file), so
# that a snapshot's read of V8's profile cannot run within its deadline. That
# snapshot (memwatch snap -p, joining the capture) and the watch's last one
# say it: on stderr, and in the snapshot itself (js_why), so that show, diff
# (the after snapshot; the before one, whose objects then count as new), the
# JSON and the HTML page of the run say it too. A snapshot before the block,
# and one after it, have the objects. The script keeps running throughout and
# ends with status 0.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/node-lib.sh"
need_ptrace
need_node
why_re='the JavaScript thread did not reach a safe point within 1000 ms'

start_js blk block || finish
# the shell the script waits in ends as soon as this file is there
cleanup_extra="touch '$tmp/unblock'"
"$MEMWATCH" -p "$t" --capture now -i 200ms -q -o w.log >w.report 2>w.stderr &
mw=$!
started_pids="$started_pids $mw"
wait_until "\"$CTL\" $t status 2>/dev/null | grep -q ' js=on '" 60 ||
	fail "V8's profiler did not start: $("$CTL" "$t" status 2>&1)"
# (and has sampled: 16 MiB grown since)
rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$t/status")
wait_until "[ \$(awk '/^VmRSS:/ { print \$2 }' /proc/$t/status) -gt $((rss0 + 16384)) ]" 60

# before the block: the objects are there
run_mw 0 snap -p "$t" -w 0 -o good.snap
expect_no_grep 'not sampled' err
run_mw 0 show good.snap
expect_grep '  retainObjects  .*js_grow\.js' out
expect_no_grep 'not sampled' out

# the JavaScript thread blocked in native code
step blk
wait_until "grep -q '^blocking' blk.out" 30
run_mw 0 snap -p "$t" -w 0 -o blocked.snap
expect_grep "^memwatch: pid $t: node: JavaScript objects not sampled: $why_re\$" err
# the watch ends meanwhile: its last snapshot is taken during the block
kill -INT "$mw"
wait "$mw"
st=$?
[ "$st" -eq 130 ] || fail "memwatch -p ended by SIGINT: status $st, not 130: $(cat w.stderr)"
expect_grep "^# event .* js-not-sampled state=on " w.log
# (its report is of that one snapshot, or a diff whose after snapshot it is)
expect_grep "^  node: JavaScript objects not sampled in (this|the after) snapshot: $why_re\$" w.report
run_mw 0 report -o page.html w.log
expect_grep "node: JavaScript objects not sampled in (this|the after) snapshot: $why_re" page.html
touch unblock
wait_ready blk 2

# the snapshot says it: show, diff, JSON
run_mw 0 show blocked.snap
expect_grep "^  node: JavaScript objects not sampled in this snapshot: $why_re\$" out
expect_no_grep 'retainObjects' out
run_mw 0 show -F json good.snap
expect_grep '"js": \{"state": "sampled", "version": "[0-9]+\.[0-9]+\.[^"]*", "why": null\}' out
run_mw 0 show -F json blocked.snap
expect_grep "\"js\": \\{\"state\": \"not-sampled\", \"version\": \"$V8_VERSION\", \"why\": \"$why_re\"\\}" out
run_mw 0 diff good.snap blocked.snap
expect_grep "^  node: JavaScript objects not sampled in the after snapshot: $why_re\$" out
run_mw 0 diff -F json good.snap blocked.snap
expect_grep '"after": \{.*"js": \{"state": "not-sampled"' out

# after the block, a new capture has them again; diffed against the blocked
# one, its rows of kind js are all new, and the report says why
# (on a loaded machine its thread, busy with its large heap, may still miss
# the snapshot's 1 s wait for a safe point, and the snapshot says so: up to
# three tries)
for try in 1 2 3; do
	run_mw 0 snap -p "$t" -w 3s -o later.snap -f
	grep -q 'did not reach a safe point' err || break
	echo "note: try $try: $(grep 'not sampled' err)" >&2
done
run_mw 0 show --kind js later.snap
expect_grep '  retainObjects  .*js_grow\.js' out
run_mw 0 diff blocked.snap later.snap
expect_grep "^  node: JavaScript objects not sampled in the before snapshot: $why_re\$" out
expect_grep '^    \(the rows of kind js count all of their objects as new\)$' out
expect_grep ' new +retainObjects  .*js_grow\.js' out

step blk
expect_target_exit "$t" blk
expect_no_grep 'Segmentation|Abort|FATAL' blk.err
finish
