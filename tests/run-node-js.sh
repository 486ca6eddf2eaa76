#!/bin/sh
# run-node-js.sh: node's JavaScript heap by JavaScript function. A script
# whose retainObjects() keeps small objects in a Map, started plainly, watched
# by memwatch -p: the top row of the report is retainObjects with its file and
# line, of kind js, and the report explains most of the RSS growth (V8's heap
# pages and the objects in them counted once). --kind js keeps only those
# rows; the snapshots name their JavaScript frames in a module [js], so that
# the snapshots of two runs of the script diff row by row.
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
	expect_no_grep 'js-not-sampled' "$1.log"
	step "$1"
	expect_target_exit "$t" "$1"
	expect_no_grep 'Segmentation|Abort|FATAL' "$1.err"
}

watch_js a
expect_top_js "memwatch -p" a.report
expect_explained "memwatch -p" a.report 80
first=$(sed -n 's/^before   \([^:]*\): .*/\1/p' a.report)
last=$(sed -n 's/^after    \([^:]*\): .*/\1/p' a.report)

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
last_b=$(sed -n 's/^after    \([^:]*\): .*/\1/p' b.report)
run_mw 0 diff --kind js "$last" "$last_b"
cp out cross.out
expect_grep '^ +[0-9]+ .*(grown|shrunk|unchanged) +retainObjects  .*js_grow\.js' cross.out
expect_no_grep '(new|gone) +retainObjects' cross.out
finish
