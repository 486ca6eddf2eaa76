#!/bin/sh
# run-report-basic.sh: memwatch show and diff on snapshots that mksnap takes of
# itself: symbolized sites (an inlined helper with its caller's line), trimming
# of allocator frames, the three formats, grouping, filters, embedded symbols,
# and the failure statuses.
. "$top_srcdir/tests/lib.sh"

MKSNAP="$top_builddir/tests/tools/mksnap"
src="$top_srcdir/tests/tools/mksnap.c"
[ -x "$MKSNAP" ] || skip "mksnap not built"
unset DEBUGINFOD_URLS
line_of() { grep -n "LINE:$1 " "$src" | cut -d: -f1; }
L_helper=$(line_of helper)
L_grow=$(line_of grow_call)
L_steady=$(line_of steady)
L_calloc=$(line_of calloc)

"$MKSNAP" -g 10 -s 5 -k 3 a.snap || fail "mksnap a.snap"
"$MKSNAP" -g 30 -s 5 -k 1 b.snap || fail "mksnap b.snap"

# show: the largest stack is the inlined helper, with its line and its caller's
run_mw 0 show --details a.snap
expect_grep "^ +1 +40\.0 KiB +±0 B +71\.[0-9]% +10 +10   leaky_helper  mksnap\.c:$L_helper \[inlined\]$" out
expect_grep "^ +grow_site  mksnap\.c:$L_grow$" out
expect_grep "steady_site  mksnap\.c:$L_steady$" out
# the calloc frame on top of calloc_site's stack is trimmed
expect_grep "^ +2 +9\.77 KiB .* calloc_site  mksnap\.c:$L_calloc$" out
expect_no_grep "(__libc_)?calloc  (malloc\.c|\()" out
expect_grep '^  sampling every allocation$' out
expect_grep '^  samples  [0-9]+ live in 4 stacks$' out
expect_grep '^  allocator in use ' out
expect_grep '^  RSS ' out
[ -s err ] && fail "show wrote to stderr: $(cat err)"

# options after the operands, the GNU convention: the same report
run_mw 0 show --top 2 --depth 1 a.snap
mv out first.out
run_mw 0 show a.snap --top 2 --depth 1
cmp -s first.out out || fail "show a.snap --top 2 --depth 1 differs from show --top 2 --depth 1 a.snap"
run_mw 0 diff -n 1 a.snap b.snap
mv out first.out
run_mw 0 diff a.snap -n 1 b.snap
cmp -s first.out out || fail "diff a.snap -n 1 b.snap differs from diff -n 1 a.snap b.snap"
run_mw 0 show -- a.snap
run_mw 2 show a.snap b.snap --depth 1
expect_grep '^memwatch: show: expected one snapshot \(got 2\)$' err

# --top and --min-bytes
run_mw 0 show --top 1 a.snap
[ "$(grep -c '^ *[0-9]\+ ' out)" -eq 1 ] || fail "--top 1 shows $(grep -c '^ *[0-9]\+ ' out) rows"
run_mw 0 show --min-bytes 5KiB a.snap
expect_no_grep "steady_site" out
expect_grep "calloc_site" out

# diff: grown and shrunk stacks; the unchanged ones cancel out
run_mw 0 diff a.snap b.snap
expect_grep "^ +1 +\+80\.0 KiB +±0 B +40\.0 KiB +120 KiB +\+20 +30  +grown +leaky_helper  mksnap\.c:$L_helper \[inlined\]$" out
expect_grep "; 0 new, 1 grown, 1 shrunk, 0 gone, 2 unchanged stacks$" out
expect_grep "^ +1 +-1\.00 KiB .* -2 +1  +shrunk +shrink_site" out
expect_no_grep "steady_site" out

# folded: outermost first, growth in bytes, negative growth left out
run_mw 0 diff --format folded a.snap b.snap
[ "$(grep -c '' out)" -eq 1 ] || fail "folded diff has $(grep -c '' out) lines, expected 1"
expect_grep '^(_start;)?[^ ;]*;.*main;grow_site;leaky_helper_\[i\] 81920$' out
run_mw 0 show -F folded a.snap
[ "$(grep -c '' out)" -eq 4 ] || fail "folded show has $(grep -c '' out) lines, expected 4"
expect_grep ';main;calloc_site 10000$' out

# grouping
run_mw 0 show --by function a.snap
expect_grep "^ +1 +40\.0 KiB .*  leaky_helper  \(mksnap\)$" out
run_mw 0 show --by line -F folded a.snap
expect_grep "^leaky_helper mksnap\.c:${L_helper}_\[i\] 40960$" out

# json: valid, versioned, with the frames
run_mw 0 diff -F json a.snap b.snap
if need_python; then
	"$PYTHON" - out <<'PY' || fail "diff json is not what it should be"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 1 and d["kind"] == "diff" and d["by"] == "stack"
g = d["grown"]
assert len(g) == 1 and g[0]["growth_bytes"] == 81920 and g[0]["status"] == "grown", g
f = g[0]["frames"][0]
assert f["function"] == "leaky_helper" and f["inlined"] and f["file"].endswith("mksnap.c"), f
assert g[0]["frames"][1]["function"] == "grow_site"
assert len(d["shrunk"]) == 1 and d["shrunk"][0]["growth_bytes"] == -1024
assert d["before"]["live_bytes"] + 80896 == d["after"]["live_bytes"]
PY
fi

# -o: written whole, replaced atomically, nothing left beside it
run_mw 0 show -o report.txt a.snap
[ -s report.txt ] || fail "-o report.txt is empty"
[ -s out ] && fail "-o also wrote to stdout"
run_mw 0 show -o report.txt -F json a.snap
expect_grep '"kind": "show"' report.txt
ls | grep -q 'report\.txt\.tmp' && fail "a temporary file was left behind"

# embedded symbols: a snapshot of a program that no longer exists
cp "$MKSNAP" ./gone
./gone -e -g 2 e.snap || fail "mksnap -e"
./gone -g 2 n.snap || fail "mksnap"
rm -f gone
run_mw 0 show e.snap
expect_grep "leaky_helper  mksnap\.c:$L_helper \[inlined\]$" out
run_mw 0 show n.snap
expect_grep "^ +1 .*  <unknown>  \(gone\+0x[0-9a-f]+\)$" out

# show --embed-symbols: a copy that keeps its names after the binary is gone
cp "$MKSNAP" ./gone2
./gone2 -g 2 g.snap || fail "mksnap"
run_mw 0 show --embed-symbols g-sym.snap g.snap
[ -s g-sym.snap ] || fail "--embed-symbols wrote nothing"
rm -f gone2
run_mw 0 show g-sym.snap
expect_grep "leaky_helper  mksnap\.c:$L_helper \[inlined\]$" out
run_mw 0 show g.snap
expect_grep "^ +1 .*  <unknown>  \(gone2\+0x[0-9a-f]+\)$" out
run_mw 2 diff --embed-symbols x.snap a.snap b.snap
expect_err_line "diff: unknown option '--embed-symbols'"

# failures: one line each, documented statuses
head -c 120 a.snap > trunc.snap
run_mw 3 show trunc.snap
expect_err_line "'trunc\.snap': .*truncated"
printf 'not a snapshot at all, not at all\n' > junk.snap
run_mw 3 diff junk.snap a.snap
expect_err_line "'junk\.snap'"
run_mw 3 show missing.snap
expect_err_line "cannot read 'missing\.snap': No such file"
run_mw 1 show -o no/such/dir/report.txt a.snap
expect_err_line "cannot write 'no/such/dir/report\.txt'"
mkdir ro && chmod 555 ro
if ! touch ro/x 2>/dev/null; then
	run_mw 1 show -o ro/report.txt a.snap
	expect_err_line "cannot write 'ro/report\.txt'"
fi
run_mw 2 show
expect_err_line "show: expected one snapshot"
run_mw 2 diff a.snap
expect_err_line "diff: expected two snapshots"
run_mw 2 show --by address a.snap
expect_err_line "invalid --by 'address'"
run_mw 2 show --format xml a.snap
expect_err_line "invalid --format 'xml'"
run_mw 2 show --top -3 a.snap
expect_err_line "invalid --top"
run_mw 2 show --frobnicate a.snap
expect_err_line "unknown option"
# -d is a watch's --duration, never a short --depth: said, with the long option
run_mw 2 show -d 3 a.snap
expect_err_line "show: unknown option '-d' \\(-d is a watch's --duration; the frames shown per stack are --depth N\\)\$"
run_mw 2 diff -d 3 a.snap b.snap
expect_err_line "diff: unknown option '-d'"
run_mw 0 show --depth 3 a.snap
run_mw 0 diff --help
expect_grep 'memwatch diff \[options\] BEFORE\.snap AFTER\.snap' out
finish
