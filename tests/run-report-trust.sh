#!/bin/sh
# run-report-trust.sh: a report says how far its figures can be trusted. Rows
# carry their samples and a standard error; a row too thin to tell from
# sampling noise is marked and cannot head the report; a diff says how much of
# the RSS growth the sampled stacks explain, and never "nothing grew" while RSS
# grew. mksnap writes snapshots as if sampled at 512 KiB (-R), with untracked
# mapped memory (-M) standing for growth outside malloc.
. "$top_srcdir/tests/lib.sh"

MKSNAP="$top_builddir/tests/tools/mksnap"
[ -x "$MKSNAP" ] || skip "mksnap not built"
unset DEBUGINFOD_URLS
R=524288

# none: no sampled allocation; thin: 3 samples of 64-byte blocks (1.5 MiB by
# estimate, but as likely noise) beside 1 sample of a 1 MiB block (1.16 MiB,
# a block that large is nearly always sampled); mapped: 64 MiB outside malloc;
# heap: 78 MiB of malloc'd 4 KiB blocks, every one recorded
"$MKSNAP" -R $R -g 0 -s 0 -k 0 none.snap || fail "mksnap none.snap"
"$MKSNAP" -R $R -g 0 -s 0 -k 0 -t 3 -B 1 thin.snap || fail "mksnap thin.snap"
"$MKSNAP" -R $R -g 0 -s 0 -k 0 -t 3 -B 1 -M 64 thinmapped.snap || fail "mksnap thinmapped.snap"
"$MKSNAP" -R $R -g 0 -s 0 -k 0 -M 64 mapped.snap || fail "mksnap mapped.snap"
"$MKSNAP" -g 20000 -s 0 -k 0 heap.snap || fail "mksnap heap.snap"

# show: the large block heads, the three thin samples follow, marked, with
# their standard error (a sample of a 64-byte block at 512 KiB: as large as
# the estimate, times 1/sqrt(3))
run_mw 0 show thin.snap
expect_grep '^ +1 +1\.16 MiB +±[0-9.]+ KiB .* 1   big_site ' out
expect_grep '^ +2 +1\.50 MiB +±88[0-9] KiB .* 3\?  tiny_site ' out
expect_grep '^  \? too few samples to tell from sampling noise' out

# diff: the same order, and the growth the stacks do not explain is said
run_mw 0 diff none.snap thinmapped.snap
expect_grep '^ +1 +\+1\.16 MiB +±[0-9.]+ KiB .* 1  +new +big_site ' out
expect_grep '^ +2 +\+1\.50 MiB +±88[0-9] KiB .* 3\? +new +tiny_site ' out
expect_grep '^  unexplained: sampled stacks explain only [0-9] % of the RSS growth \(\+6[4-9]\.[0-9] MiB\)$' out
# ... near the top: before the first row
un=$(grep -n '^  unexplained' out | cut -d: -f1)
first=$(grep -En '^ +1 ' out | head -n 1 | cut -d: -f1)
[ -n "$un" ] && [ -n "$first" ] && [ "$un" -lt "$first" ] || fail "the unexplained line is not above the rows"

# growth outside malloc only: not "nothing grew"
run_mw 0 diff none.snap mapped.snap
expect_grep '^  unexplained: sampled stacks explain only 0 % of the RSS growth' out
expect_grep '^  \(no sampled stack grew\)$' out
expect_no_grep 'nothing grew' out

# growth that malloc explains says so, and nothing more
run_mw 0 diff none.snap heap.snap
expect_grep '^  sampled stacks explain (9[0-9]|100) % of the RSS growth \(\+[0-9.]+ MiB\)$' out
expect_no_grep 'unexplained' out
expect_no_grep '\?  ' out

# no growth at all: nothing grew, and no claim about RSS
run_mw 0 diff none.snap none.snap
expect_grep '^  \(nothing grew\)$' out
expect_no_grep 'explain' out

# the same facts in JSON
run_mw 0 diff -F json none.snap thinmapped.snap
if need_python; then
	"$PYTHON" - out <<'PY' || fail "diff json does not carry the uncertainty and the explained share"
import json, sys
d = json.load(open(sys.argv[1]))
g = d["grown"]
assert [r["frames"][0]["function"] for r in g] == ["big_site", "tiny_site"], g
assert not g[0]["weak"] and g[1]["weak"], g
assert g[1]["after_samples"] == 3 and g[1]["stderr_bytes"] > 800 * 1024, g[1]
assert d["rss_growth_bytes"] >= 64 << 20, d["rss_growth_bytes"]
assert 0 <= d["explained"] < 0.1, d["explained"]
PY
fi
run_mw 0 diff -F json none.snap none.snap
expect_grep '^ "explained": null,$' out
finish
