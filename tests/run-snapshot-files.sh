#!/bin/sh
# run-snapshot-files.sh: .snap files on disk: snapdump prints a valid one as
# stable text that builds the same file again, refuses every broken one with one
# error line and exit status 3, and the fuzz corpus (past findings included)
# replays cleanly through the decoder.
. "$top_srcdir/tests/lib.sh"

snapdump=$top_builddir/tests/tools/snapdump
corpus=$top_srcdir/tests/fuzz/corpus/snapshot

# dump FILE: snapdump FILE to out/err, status in $status.
dump() {
	"$snapdump" "$1" >out 2>err
	status=$?
}

# Valid seeds: dump, rebuild from the text, dump again: the same text.
for f in "$corpus"/valid-*.snap; do
	dump "$f"
	[ "$status" -eq 0 ] || { fail "snapdump $f: status $status"; cat err >&2; continue; }
	[ -s err ] && fail "snapdump $f wrote to stderr"
	mv out first.txt
	"$snapdump" --from-text first.txt again.snap 2>err || fail "--from-text of the dump of $f failed"
	dump again.snap
	cmp -s first.txt out || fail "dump of $f does not round-trip through --from-text"
done

# The unknown section of the forward-compatibility seed is skipped: the rest is read.
dump "$corpus/valid-unknown-section.snap"
expect_grep '^module 0 .*path="/bin/t"$' out
expect_grep '^  0:0x1180$' out

# A text fixture with known figures reads back exactly.
cat >fixture.txt <<'T'
pid 77
exe "/opt/app"
cmdline "app -x"
sample_rate 524288
module 0 bias=0x400000 lo=0x400000 hi=0x401000 build_id=abcd path="/opt/app"
stack 0 live_bytes=3145728 live_blocks=3 live_samples=3 alloc_bytes=4194304 alloc_blocks=4 flags=0x1
  0:0x42
  -:0x7f0000001234
T
"$snapdump" --from-text fixture.txt fixture.snap || fail "--from-text fixture.txt"
dump fixture.snap
expect_grep '^pid 77$' out
expect_grep '^stack 0 live_bytes=3145728 live_blocks=3 live_samples=3 alloc_bytes=4194304 alloc_blocks=4 flags=0x1 nframes=2$' out
expect_grep '^  -:0x7f0000001234$' out
expect_grep '^mallinfo none$' out

# node's fields: they round-trip, and a snapshot whose JavaScript objects were
# not sampled says so, and why, in show's table and its JSON
cat >js.txt <<'T'
pid 78
exe "/usr/bin/node"
cmdline "node app.js"
sample_rate 524288
js 3
js_version "10.2.154.26-node.37"
js_why "the JavaScript thread did not reach a safe point within 1000 ms"
module 0 bias=0x400000 lo=0x400000 hi=0x401000 path="/usr/bin/node"
stack 0 live_bytes=1048576 live_blocks=1 live_samples=1 alloc_bytes=1048576 alloc_blocks=1 flags=0x2
  0:0x42
T
"$snapdump" --from-text js.txt js.snap || fail "--from-text js.txt"
dump js.snap
expect_grep '^js 3$' out
expect_grep '^js_version "10\.2\.154\.26-node\.37"$' out
mv out js1.txt
"$snapdump" --from-text js1.txt js2.snap || fail "--from-text js1.txt"
dump js2.snap
cmp -s js1.txt out || fail "the node fields do not round-trip through --from-text"
run_mw 0 show js.snap
expect_grep '^  node: JavaScript objects not sampled in this snapshot: the JavaScript thread did not reach a safe point within 1000 ms$' out
run_mw 0 show -F json js.snap
expect_grep '"js": \{"state": "not-sampled", "version": "10\.2\.154\.26-node\.37", "why": "the JavaScript thread did not reach a safe point within 1000 ms"\}' out
# diff: a before snapshot taken while V8's profiler was starting misses
# nothing and is not said; one whose read failed is, and an after one is
sed -e 's/^js 3$/js 4/' -e 's/^js_why .*/js_why "the JavaScript thread has not reached a safe point yet"/' \
	js.txt >starting.txt
sed -e 's/^js 3$/js 1/' -e 's/^js_why .*/js_why -/' js.txt >sampled.txt
"$snapdump" --from-text starting.txt starting.snap || fail "--from-text starting.txt"
"$snapdump" --from-text sampled.txt sampled.snap || fail "--from-text sampled.txt"
run_mw 0 diff starting.snap sampled.snap
expect_no_grep 'node:' out
run_mw 0 diff js.snap sampled.snap
expect_grep '^  node: JavaScript objects not sampled in the before snapshot: the JavaScript thread did not reach a safe point within 1000 ms$' out
expect_grep '^    \(the rows of kind js count all of their objects as new\)$' out
run_mw 0 diff sampled.snap starting.snap
expect_grep '^  node: JavaScript objects not sampled in the after snapshot: the JavaScript thread has not reached a safe point yet$' out

# a snapshot of no node says nothing of it, and its JSON has js null
run_mw 0 show fixture.snap
expect_no_grep 'node:' out
run_mw 0 show -F json fixture.snap
expect_grep '"js": null' out

# expect_refused FILE PATTERN: status 3, one "memwatch: 'FILE': ..." line.
expect_refused() {
	dump "$1"
	[ "$status" -eq 3 ] || fail "snapdump $1: status $status, expected 3"
	[ "$(grep -c '' err)" -eq 1 ] || { fail "snapdump $1: not one error line"; cat err >&2; }
	grep -Eq "^memwatch: '$1': $2" err || { fail "snapdump $1: error does not match '$2'"; cat err >&2; }
	[ -s out ] && fail "snapdump $1 printed something for a bad file"
}
cp "$corpus/valid-rich.snap" rich.snap
size=$(wc -c <rich.snap)
head -c 100 rich.snap >cut.snap
expect_refused cut.snap "truncated at byte 100 \(section 'process'\)$"
cp rich.snap flipped.snap
printf '\001' | dd of=flipped.snap bs=1 seek=$((size - 40)) conv=notrunc 2>/dev/null
expect_refused flipped.snap 'checksum mismatch \(file corrupted\)$'
cp rich.snap newer.snap
printf '\011' | dd of=newer.snap bs=1 seek=8 conv=notrunc 2>/dev/null
expect_refused newer.snap 'format version 9 is newer than this memwatch reads \(1\)$'
printf 'hello\n' >text.snap
expect_refused text.snap 'not a memwatch snapshot'
: >empty.snap
expect_refused empty.snap 'empty file'
# /dev/zero is refused at once, not read without end
[ -r /dev/zero ] && expect_refused /dev/zero 'not a memwatch snapshot'
mkdir adir
"$snapdump" adir >out 2>err
[ $? -eq 3 ] || fail "snapdump adir: expected status 3"
expect_grep "^memwatch: cannot read 'adir': Is a directory$" err
"$snapdump" missing.snap >out 2>err
[ $? -eq 3 ] || fail "snapdump missing.snap: expected status 3"
expect_grep "^memwatch: cannot read 'missing.snap': No such file or directory$" err

# Every seed, valid or not, through the decoder and its properties.
"$top_builddir/tests/fuzz/fuzz_snapshot_replay" "$corpus" >out 2>err ||
	{ fail "replaying the fuzz corpus failed"; cat err >&2; }
expect_grep '^replayed [0-9]+ inputs$' out

finish
