#!/bin/sh
# run-report-edge.sh: snapshots at the edges of what the format allows, built
# from text (snapdump --from-text): no allocator figures, no RSS, frames outside
# every module, a stack cut at the depth limit, a stack with no frames, dropped
# stacks, an empty snapshot, and embedded symbols for a module whose file is
# nowhere. Reports must say what is known and never fail on them.
. "$top_srcdir/tests/lib.sh"

SNAPDUMP="$top_builddir/tests/tools/snapdump"
[ -x "$SNAPDUMP" ] || skip "snapdump not built"
unset DEBUGINFOD_URLS

cat > edge.txt <<'TXT'
pid 42
exe "/nonexistent/app"
cmdline "app --serve"
time_ns 1700000000000000000
capture_start_ns 1699999990000000000
sample_rate 524288
max_depth 3
rss_bytes 0
dropped_stacks 7
dropped_bytes 123456
mallinfo none
module 0 bias=0x555500000000 lo=0x555500000000 hi=0x555500010000 build_id=aabbccddeeff00112233445566778899aabbccdd path="/nonexistent/app"
module 1 bias=0x7f0000000000 lo=0x7f0000000000 hi=0x7f0000100000 build_id=- path="/nonexistent/libnoid.so"
stack 0 live_bytes=3145728 live_blocks=6 live_samples=6 alloc_bytes=4194304 alloc_blocks=8 flags=0x1 nframes=3
  0:0x1234
  0:0x2345
  0:0x3456
stack 1 live_bytes=1048576 live_blocks=2 live_samples=2 alloc_bytes=1048576 alloc_blocks=2 flags=0x0 nframes=2
  -:0x7ffd12345678
  1:0x4444
stack 2 live_bytes=524288 live_blocks=1 live_samples=1 alloc_bytes=524288 alloc_blocks=1 flags=0x0 nframes=0
stack 3 live_bytes=0 live_blocks=0 live_samples=0 alloc_bytes=999999 alloc_blocks=9 flags=0x0 nframes=1
  0:0x9999
symbol 0:0x1234 nframes=2
  function="inner" file="src/inner.c" line=12
  function="outer" file="src/outer.c" line=34
symbol 0:0x2345 nframes=1
  function="ns::Server::run()" file=- line=0
TXT
"$SNAPDUMP" --from-text edge.txt edge.snap || fail "snapdump --from-text edge.txt"

run_mw 0 show --details edge.snap
expect_grep '^  sampling one sample per 512 KiB on average$' out
expect_grep '^  taken    2023-11-14 22:13:20 UTC, after 10\.0 s of capture$' out
expect_grep '^  samples  9 live in 3 stacks; 7 stacks dropped \(121 KiB\)$' out
expect_no_grep 'allocator in use|^  RSS' out
# 6 samples of 512 KiB blocks at 512 KiB: a standard error of sqrt(e^-1 / 6)
expect_grep '^ +1 +3\.00 MiB +±761 KiB +66\.7% +6 +6   inner  inner\.c:12 \[inlined\]$' out
expect_grep '^ +outer  outer\.c:34$' out
expect_grep '^ +ns::Server::run\(\)  \(app\+0x2345\)$' out
expect_grep '^ +<unknown>  \(app\+0x3456\)$' out
expect_grep 'stack truncated' out
expect_grep '^ +2 +1\.00 MiB .*  <unknown>  \(0x7ffd12345678\)$' out
expect_grep '^ +<unknown>  \(libnoid\.so\+0x4444\)$' out
# one sample: within two standard errors of nothing, so marked
expect_grep '^ +3 +512 KiB +±311 KiB .* 1\?  <no frames>$' out
expect_grep '^  \? too few samples to tell from sampling noise' out
# a stack whose blocks were all freed holds nothing: not a row, not counted
expect_grep '^live heap by call stack \(3 of 3 rows\)$' out
expect_no_grep 'app\+0x9999' out

run_mw 0 show -F folded edge.snap
expect_grep '^\[app\+0x3456\];ns::Server::run\(\);outer;inner_\[i\] 3145728$' out
expect_grep '^\[libnoid\.so\+0x4444\];\[0x7ffd12345678\] 1048576$' out

run_mw 0 show -F json edge.snap
if need_python; then
	"$PYTHON" - out <<'PY' || fail "edge json is not what it should be"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["snapshot"]
assert s["mallinfo"] is None and s["rss_bytes"] == 0 and s["dropped_stacks"] == 7
rows = d["rows"]
assert len(rows) == 3 and rows[0]["truncated"] is True and d["rows_total"] == 3
f = rows[1]["frames"][0]
assert f["module"] is None and f["build_id"] is None and f["offset"] == "0x7ffd12345678", f
assert rows[1]["frames"][1]["build_id"] == "", rows[1]["frames"][1]
assert rows[2]["frames"] == []
PY
fi

# the same snapshot on both sides: nothing grew
run_mw 0 diff edge.snap edge.snap
expect_grep '; 0 new, 0 grown, 0 shrunk, 0 gone, 3 unchanged stacks$' out
expect_grep '^  \(nothing grew\)$' out

# an empty snapshot
printf 'pid 1\nexe "/x"\nmallinfo none\n' > empty.txt
if "$SNAPDUMP" --from-text empty.txt empty.snap 2>/dev/null; then
	run_mw 0 show empty.snap
	expect_grep '^live heap by call stack \(0 of 0 rows\)$' out
	run_mw 0 diff empty.snap edge.snap
	expect_grep '; 3 new, 0 grown, 0 shrunk, 0 gone, 0 unchanged stacks$' out
	run_mw 0 diff -F json edge.snap empty.snap
	expect_grep '"status": "gone"' out
fi
# a path that is not UTF-8 still makes valid JSON
printf 'pid 1\nexe "/opt/\\xff\\xc3\\xa9t\\x01"\nmallinfo none\n' > bad.txt
need_python
if "$SNAPDUMP" --from-text bad.txt bad.snap 2>/dev/null; then
	run_mw 0 show -F json bad.snap
	"$PYTHON" -c 'import json, sys; e = json.load(open(sys.argv[1]))["snapshot"]["exe"]; assert e == "/opt/\ufffd\u00e9t\u0001", repr(e)' out ||
		fail "a path that is not UTF-8 breaks the JSON"
fi
# a recorded path that now names a FIFO is not opened for reading (it would block)
if mkfifo "$tmp/fifo" 2>/dev/null && command -v timeout >/dev/null 2>&1; then
	printf 'pid 1\nexe "%s"\nmallinfo none\nmodule 0 bias=0x1000 lo=0x1000 hi=0x9000 build_id=- path="%s"\nstack 0 live_bytes=10 live_blocks=1 live_samples=1 alloc_bytes=10 alloc_blocks=1 flags=0x0 nframes=1\n  0:0x10\n' \
		"$tmp/fifo" "$tmp/fifo" > fifo.txt
	"$SNAPDUMP" --from-text fifo.txt fifo.snap || fail "snapdump --from-text fifo.txt"
	timeout 30 "$MEMWATCH" show fifo.snap >out 2>err
	st=$?
	[ "$st" -eq 0 ] || fail "show with a module path that is a FIFO: exit status $st"
	expect_grep '<unknown>  \(fifo\+0x10\)$' out
fi
finish
