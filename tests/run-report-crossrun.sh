#!/bin/sh
# run-report-crossrun.sh: diff of snapshots of two runs of the same binary, each
# with its own address layout (ASLR): stacks match by build-id and offset, so
# the sites that did the same in both runs cancel out and only the one that
# grew differently shows. A diff of different programs warns and goes on;
# the frames of the one whose file is not here say so.
. "$top_srcdir/tests/lib.sh"

MKSNAP="$top_builddir/tests/tools/mksnap"
SNAPDUMP="$top_builddir/tests/tools/snapdump"
[ -x "$MKSNAP" ] || skip "mksnap not built"
unset DEBUGINFOD_URLS

bias_a=$("$MKSNAP" -p -g 10 -s 4 -k 3 a.snap) || fail "mksnap a.snap"
bias_b=$("$MKSNAP" -p -g 25 -s 4 -k 3 b.snap) || fail "mksnap b.snap"
if [ "$bias_a" = "$bias_b" ]; then
	bias_b=$("$MKSNAP" -p -g 25 -s 4 -k 3 b.snap) || fail "mksnap b.snap"
	[ "$bias_a" = "$bias_b" ] && skip "address space layout randomization is off (both runs at $bias_a)"
fi

run_mw 0 diff a.snap b.snap
expect_grep "; 0 new, 1 grown, 0 shrunk, 0 gone, 3 unchanged stacks$" out
expect_grep "^ +1 +\+60\.0 KiB +±0 B +40\.0 KiB +100 KiB +\+15 +25  +grown +leaky_helper  mksnap\.c:[0-9]+ \[inlined\]$" out
expect_no_grep "^shrinkage" out
[ -s err ] && fail "diff of two runs of one binary wrote to stderr: $(cat err)"

run_mw 0 diff -F folded a.snap b.snap
[ "$(grep -c '' out)" -eq 1 ] || fail "folded: $(grep -c '' out) lines, expected 1"
expect_grep ';grow_site;leaky_helper_\[i\] 61440$' out

# by line and by function the same holds
run_mw 0 diff --by line a.snap b.snap
expect_grep "; 0 new, 1 grown, 0 shrunk, 0 gone, 3 unchanged lines$" out

# another program (the main module's build-id changed): a warning, then the diff
if [ -x "$SNAPDUMP" ]; then
	"$SNAPDUMP" a.snap > a.txt || fail "snapdump a.snap"
	sed '/^module 0 /s/build_id=[0-9a-f]*/build_id=00112233445566778899aabbccddeeff00112233/' a.txt > o.txt
	"$SNAPDUMP" --from-text o.txt other.snap || fail "snapdump --from-text"
	run_mw 0 diff other.snap b.snap
	expect_grep "^memwatch: warning: 'other\.snap' and 'b\.snap' are of different programs" err
	# the file here is not of that build: its frames say why they are unnamed
	expect_grep "^memwatch: warning: no symbols for mksnap: .*/mksnap here is another build than 00112233445566778899aabbccddeeff00112233, and the snapshot does not carry them$" err
	[ "$(grep -c '' err)" -eq 2 ] || fail "the warnings are not said once each"
fi
finish
