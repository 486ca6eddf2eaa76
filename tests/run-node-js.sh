#!/bin/sh
# run-node-js.sh: node's JavaScript heap by JavaScript function. A script
# whose retainObjects() keeps small objects in a Map, started plainly, watched
# by memwatch -p: the top row of the report is retainObjects with its file and
# line, of kind js, and the report explains most of the RSS growth (V8's heap
# pages and the objects in them counted once). --kind js keeps only those
# rows; the snapshots name their JavaScript frames in a module [js], so that
# the snapshots of two runs of the script diff row by row. Growth through
# Buffers is malloc's (their backing stores), under node's native frames: with
# --perf-basic-prof its stack names the JavaScript caller, growBuffers, from
# node's perf map, beside the names of V8's profile (objects are kept too, so
# that the snapshot has both). A program posing
# as a node whose V8 the agent does not read (9.4) is captured native-only,
# with one line. On node 20 by default; run-node18-js.sh runs it on Debian's
# node 18 (but for the posing program, which has nothing to do with it).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
. "$top_srcdir/tests/node-lib.sh"
need_ptrace
need_node
need_snapdump

# watch_js NAME: js_grow.js map 14 watched for 8 s; the report in NAME.report,
# the log in NAME.log; the script is ended and exits 0 with ok.
watch_js() {
	start_js "$1" map 14 || return 0
	run_mw 0 -p "$t" -i 200ms -d 8s -q --trigger +32MiB -o "$1.log"
	cp out "$1.report"
	cp err "$1.stderr"
	expect_grep "^# event [0-9.]+ $t capture-start " "$1.log"
	# (V8's profiler still starting at a snapshot, or the JavaScript thread
	# not at a safe point within the wait, on a busy machine, is a matter of
	# time, said and not a failure: the report's rows below show that the
	# JavaScript objects were sampled; a V8 not read, or V8's profiler off or
	# gone, is)
	expect_no_grep 'js-not-sampled state=(unsupported|off|gone)' "$1.log"
	step "$1"
	expect_target_exit "$t" "$1"
	expect_no_grep 'Segmentation|Abort|FATAL' "$1.err"
}

watch_js a
expect_top_js "memwatch -p" a.report
expect_explained "memwatch -p" a.report 80
# (the report's own header, not a section at the peak after it)
first=$(sed -n 's/^before   \([^:]*\): .*/\1/p' a.report | head -n 1)
last=$(sed -n 's/^after    \([^:]*\): .*/\1/p' a.report | head -n 1)

# the snapshot: stacks of kind js (flags 0x12), frames in a module [js] named
# in its symbol section
if [ -n "$last" ] && "$SNAPDUMP" "$last" >last.txt 2>last.err; then
	expect_grep '^module [0-9]+ .* path="\[js\]"' last.txt
	expect_grep '^stack [0-9]+ .* flags=0x12 ' last.txt
	expect_grep 'retainObjects' last.txt
else
	fail "snapdump '$last': $(cat last.err 2>/dev/null)"
fi

# --kind js: only rows of kind js, retainObjects first; --kind malloc: none
run_mw 0 diff --kind js "$first" "$last"
cp out kindjs.out
expect_top_js "diff --kind js" kindjs.out
expect_no_grep '\[mmap\]|\[file\]|\[brk\]' kindjs.out
run_mw 0 diff --kind malloc "$first" "$last"
expect_no_grep 'retainObjects' out

# a second run: its retainObjects row is the first run's (matched by the
# frames' names, not new and gone)
watch_js b
# (its last snapshot whose JavaScript was sampled: on a loaded machine the
# final one may find the JavaScript thread short of a safe point, and say so)
last_b=
for snap in $(ls b.*.snap 2>/dev/null | sort -t. -k3 -n -r); do
	run_mw 0 show --kind js "$snap"
	grep -q 'not sampled in this snapshot' out && continue
	last_b=$snap
	break
done
[ -n "$last_b" ] || fail "no snapshot of the second run has its JavaScript objects sampled"
run_mw 0 diff --kind js "$last" "$last_b"
cp out cross.out
expect_grep '^ +[0-9]+ .*(grown|shrunk|unchanged) +retainObjects  .*js_grow\.js' cross.out
expect_no_grep '(new|gone) +retainObjects' cross.out

# Buffers: the malloc row of the backing stores, its JavaScript caller named
# from the perf map
start_fifo_target buf "$NODE" --perf-basic-prof "$JS" buffer
bp=$target_pid
cleanup_extra="rm -f /tmp/perf-$bp.map"
if wait_ready buf "0 [0-9]*"; then
	"$MEMWATCH" -p "$bp" -i 200ms -t +32MiB -d 8s -q -o buf.log >buf.report 2>buf.stderr &
	mw=$!
	started_pids="$started_pids $mw"
	wait_until "grep -q '^# event .* start' buf.log 2>/dev/null" 30 && step buf && wait_ready buf 1
	wait "$mw"
	st=$?
	[ "$st" -eq 0 ] || { fail "memwatch -p on the Buffer script: status $st"; sed 's/^/  | /' buf.stderr >&2; }
	bl=$(ls buf."$bp".*-final.snap 2>/dev/null | head -n 1)
	if [ -n "$bl" ]; then
		run_mw 0 show --depth 40 "$bl"
		cp out buf.show
		expect_grep 'NodeArrayBufferAllocator' buf.show
		expect_grep "growBuffers .*js_grow\\.js:$buffer_line" buf.show
	else
		fail "memwatch -p on the Buffer script wrote no final snapshot"
	fi
	step buf
fi
expect_target_exit "$bp" buf
rm -f "/tmp/perf-$bp.map"

# a V8 the agent does not read: native-only, said in one line, V8 untouched
[ "${node_under_test:-20}" = 20 ] || finish
start_fifo_target fake "$TARGETS/js_fake"
z=$target_pid
if wait_until "grep -q '^ready' fake.out 2>/dev/null" 30; then
	run_mw 0 snap -p "$z" -w 1 -o z.snap
	expect_grep "^memwatch: pid $z: node: V8 9\.4\.146\.26-node\.26 is not a version memwatch reads \(10\.2, 11\.3, 12\.4, 13\.6, 14\.6\): captured native-only, without its JavaScript objects\$" err
	[ "$(grep -c 'node:' err)" -eq 1 ] || fail "more than one line about node: $(cat err)"
	"$CTL" "$z" status >z.ctl 2>&1 || fail "agentctl status: $(cat z.ctl)"
	expect_grep ' js=unsupported ' z.ctl
	run_mw 0 show z.snap
	step fake
fi
expect_target_exit "$z" fake
finish
