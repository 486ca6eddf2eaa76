#!/bin/sh
# run-attach-rule.sh: the safe-point rule on threads placed on purpose. The
# main thread waits in epoll_wait (never interrupted); one other thread blocks
# in read() inside a callback from dl_iterate_phdr (which holds the loader's
# lock), inside qsort's comparator, or inside a signal handler: each must be
# refused by name. A thread in usleep() is accepted.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/attach-lib.sh"

for place in dl_iterate_phdr qsort handler; do
	case $place in
	handler) why="running a signal handler" ;;
	qsort) why="in a callback from qsort(_r)?" ;;
	*) why="in a callback from $place" ;;
	esac
	start_attach_target "ready-$place" --seconds 2 --main-epoll --place "$place" >"t-$place.out" 2>&1
	t=$target_pid
	run_inject 5 --deadline 300 "$t" "$PROBE" "marker=$tmp/marker-$place"
	expect_err_line "pid $t: cannot attach: no thread at a safe point within 300 ms \\([0-9]+ attempts\\): thread [0-9]+ $why; thread $t in epoll_wait"
	[ -f "marker-$place" ] && fail "$place: the start function ran"
	expect_target_ok "$t" 40 "t-$place.out"
done

start_attach_target ready-usleep --seconds 2 --main-epoll --place usleep >t-usleep.out 2>&1
t=$target_pid
run_inject 0 "$t" "$PROBE" "marker=$tmp/marker-usleep"
expect_grep "^start pid=$t " marker-usleep
expect_target_ok "$t" 40 t-usleep.out
finish
