#!/bin/sh
# run-shared-snaps.sh: two memwatch snap -w of one process at the same moment:
# both attach (the second waits for the first's attach instead of taking it for
# a debugger), share one capture, and write snapshots that hold the leak; the
# capture ends with the last of them.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/shared-lib.sh"

# The demo leaks about 6 MiB/s in cache_store (demo.c:25).
start_demo 60

# round 1 attaches the agent, round 2 finds it there
for round in 1 2; do
	start_mw x$round snap -p "$demo" -w 2s -o x$round.snap
	x=$mw_pid
	start_mw y$round snap -p "$demo" -w 2s -o y$round.snap
	y=$mw_pid
	wait_mw x$round "$x" 0
	wait_mw y$round "$y" 0
	for s in x$round y$round; do
		no_tracer_error $s
		expect_no_grep "capture is off" $s.out
		expect_grep "^pid $demo: .* live \(estimated\) in [1-9][0-9]* stacks" $s.out
		run_mw 0 show $s.snap
		expect_grep "cache_store" out
	done
	# the last one to leave stopped the capture
	run_mw 0 snap --wait 0 -p "$demo" -f -o off.snap
	expect_grep "capture is off" out
done
kill -0 "$demo" 2>/dev/null || fail "the demo died"
finish
