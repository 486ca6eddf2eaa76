#!/bin/sh
# run-report-agent.sh: show and diff on snapshots the real agent took of a
# running target (preloaded, every allocation recorded): the inlined helper
# with its caller's line, no agent or allocator frames on top, and the growth
# between two snapshots on the one site that grew.
. "$top_srcdir/tests/lib.sh"

[ -f "$MEMWATCH_AGENT" ] || skip "the agent is not built ($MEMWATCH_AGENT)"
T="$TARGETS/report_leaky"
[ -x "$T" ] || skip "report_leaky not built"
unset DEBUGINFOD_URLS
src="$top_srcdir/tests/targets/report_leaky.c"
L_helper=$(grep -n "LINE:helper " "$src" | cut -d: -f1)
L_grow=$(grep -n "LINE:grow_call " "$src" | cut -d: -f1)
L_steady=$(grep -n "LINE:steady " "$src" | cut -d: -f1)

LD_PRELOAD="$MEMWATCH_AGENT" MEMWATCH_AGENT_OPTIONS=capture=now,rate=1 \
	start_target "$T" 10 >target.out
wait_until "grep -q ready target.out" 30 || finish
run_mw 0 snap -p "$target_pid" -o a.snap
kill -USR1 "$target_pid"
wait_until "grep -q grown target.out" 30 || finish
run_mw 0 snap -p "$target_pid" -o b.snap

run_mw 0 show a.snap
expect_grep "^ +1 +40\.0 KiB .* +10 +[0-9]+  +leaky_helper  report_leaky\.c:$L_helper \[inlined\]$" out
expect_grep "^ +grow_site  report_leaky\.c:$L_grow$" out
expect_grep "  steady_site  report_leaky\.c:$L_steady$" out
# nothing of the agent or of malloc itself on top of a stack
expect_no_grep "^ +[0-9]+ .*  (malloc|calloc|__libc_malloc|__libc_calloc|<unknown>)  .*libmemwatch-agent" out
expect_no_grep "^ +[0-9]+ .* [0-9]+  (malloc|calloc|realloc|__libc_malloc|__libc_calloc|__libc_realloc)  " out

run_mw 0 diff a.snap b.snap
# the second round comes from another line of main: a new stack
expect_grep "^ +1 +\+40\.0 KiB +±0 B +0 B +40\.0 KiB +\+10 +10  +new +leaky_helper  report_leaky\.c:$L_helper \[inlined\]$" out
expect_grep "; 1 new, 0 grown, 0 shrunk, 0 gone, 4 unchanged stacks$" out
expect_no_grep "steady_site" out
# by function both rounds are one row, which grew
run_mw 0 diff --by function a.snap b.snap
expect_grep "^ +1 +\+40\.0 KiB +±0 B +40\.0 KiB +80\.0 KiB +\+10 +20  +grown +leaky_helper  \(report_leaky\)$" out
run_mw 0 diff -F folded --by function a.snap b.snap
expect_grep '^leaky_helper 40960$' out
finish
