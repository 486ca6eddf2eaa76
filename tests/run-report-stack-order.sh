#!/bin/sh
# run-report-stack-order.sh: a diff whose second snapshot holds the stacks of
# the first in another order (some of their figures changed) reports what the
# diff of the same stacks in the first's order does: a stack goes to the row
# of the previous snapshot's stack at its index (rows-same.c) only when it is
# that very stack, and to the row of its own frames otherwise.
. "$top_srcdir/tests/lib.sh"

SNAPDUMP="$top_builddir/tests/tools/snapdump"
MKSNAP="$top_builddir/tests/tools/mksnap"
[ -x "$SNAPDUMP" ] || skip "snapdump not built"
[ -x "$MKSNAP" ] || skip "mksnap not built"
unset DEBUGINFOD_URLS

"$MKSNAP" -S 400 -r 1 a.snap >mk.out 2>&1 || fail "mksnap: $(cat mk.out)"
"$SNAPDUMP" a.snap >a.txt 2>dump.err || fail "snapdump: $(cat dump.err)"
# in.txt: a's stacks in its order, every third one's live bytes doubled;
# rev.txt: the same stacks last first; swap.txt: each pair of them swapped
awk -v out=in.txt -v rev=rev.txt -v swap=swap.txt '
	/^stack / { n++; s[n] = ""; if ((n - 1) % 3 == 0) sub(/live_bytes=[0-9]+/, "live_bytes=" 2 * substr($3, 12)) }
	/^stacks / { next }
	n == 0 { head = head $0 "\n"; next }
	{ s[n] = s[n] $0 "\n" }
	END {
		printf "%s", head > out; printf "%s", head > rev; printf "%s", head > swap
		for (i = 1; i <= n; i++) printf "%s", s[i] > out
		for (i = n; i >= 1; i--) printf "%s", s[i] > rev
		for (i = 1; i <= n; i++) printf "%s", s[(i % 2) ? (i < n ? i + 1 : i) : i - 1] > swap
	}' a.txt || fail "awk failed"
grep -q '^stack ' rev.txt || fail "no stacks in the text of a.snap"
# each as b.snap in a directory of its own: the reports name their files
for t in in rev swap; do
	mkdir -p $t
	"$SNAPDUMP" --from-text $t.txt $t/b.snap >from.err 2>&1 || fail "snapdump --from-text $t.txt: $(cat from.err)"
done
for fmt in table folded; do
	for t in in rev swap; do
		(cd $t && "$MEMWATCH" diff -F $fmt ../a.snap b.snap >../$t.$fmt 2>../$t.err) ||
			fail "diff -F $fmt a.snap $t/b.snap: $(cat $t.err)"
		[ -s $t.$fmt ] || fail "diff -F $fmt a.snap $t/b.snap wrote nothing"
	done
	for t in rev swap; do
		cmp -s in.$fmt $t.$fmt ||
			fail "diff -F $fmt of the stacks in another order ($t) differs: $(diff in.$fmt $t.$fmt | head -n 8)"
	done
done
grep -q . in.folded || fail "the folded diff is empty"
finish
