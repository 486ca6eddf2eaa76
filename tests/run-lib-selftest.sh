#!/bin/sh
# run-lib-selftest.sh: the helpers of the tests can fail. Each case is a small
# test script run in its own process; its exit status must be the verdict the
# helpers promise: a failure inside $(...) or a pipeline still fails the test,
# a broken site() call fails the test, expect_err_line wants exactly one error
# line, the checks of the fifo targets and of py-lib.sh fail when they should,
# a process left running fails the test, and a script with no failure passes.
. "$top_srcdir/tests/lib.sh"

# case NAME WANT BODY: run BODY as a test script; its status must be WANT.
case_status() {
	name=$1 want=$2
	shift 2
	{
		echo '. "$top_srcdir/tests/lib.sh"'
		echo '. "$top_srcdir/tests/agent-lib.sh"'
		printf '%s\n' "$@"
		echo 'finish'
	} > "case-$name.sh"
	sh "case-$name.sh" > "case-$name.out" 2>&1
	st=$?
	[ "$st" -eq "$want" ] || { fail "case $name: status $st, expected $want"; sed 's/^/  | /' "case-$name.out" >&2; }
}

case_status pass 0 'x=$(echo 1)' 'expect_eq one "$x" 1'
case_status subshell 1 'x=$(fail "inside a command substitution"; echo 1)'
case_status pipeline 1 'echo a | while read -r l; do fail "inside a pipeline"; done'
case_status site 1 'v=$(site live_bytes missing.snap /bin/true main)' 'expect_eq "a missing symbol" "$v" 0'
case_status range-empty 1 'expect_range "no number" "" 1 9'
case_status range-out 1 'expect_range "out of range" 10 1 9'
case_status range-in 0 'expect_range "in range" 5 1 9'
case_status step-dead 1 'mkfifo dead.in' 'step dead && echo "step returned 0"'
case_status ready-never 1 'echo "ready 0" > never.out' 'wait_ready never 1 1'
case_status live-missing 1 '. "$top_srcdir/tests/py-lib.sh"' 'live_total missing.snap && echo "live_total returned 0"'
printf '   1  +5.0 MiB  f  py_grow.py:7\n' > row.report
case_status top-row 1 '. "$top_srcdir/tests/py-lib.sh"' 'expect_top_row x "'"$tmp"'/row.report" f 8'
case_status top-row-ok 0 '. "$top_srcdir/tests/py-lib.sh"' 'expect_top_row x "'"$tmp"'/row.report" f 7'
printf '  sampled stacks explain 85 %% of the RSS growth\n' > pct.report
case_status explained 1 '. "$top_srcdir/tests/py-lib.sh"' 'expect_explained x "'"$tmp"'/pct.report" 90'
case_status explained-ok 0 '. "$top_srcdir/tests/py-lib.sh"' 'expect_explained x "'"$tmp"'/pct.report" 80 90'
printf 'memwatch: first\nmemwatch: second\n' > two.err
case_status errline 1 'cp "'"$tmp"'/two.err" err' 'expect_err_line first'
printf 'memwatch: first\n  hint: do this\n' > one.err
case_status errhint 0 'cp "'"$tmp"'/one.err" err' 'expect_err_line first'
# a process the test started and left running fails the test, and is ended:
# one never named, and one under a shell that was named and killed
case_status left 1 'sleep 61 & echo $! > "'"$tmp"'/left.pid"'
# (a duration of its own, so that no other test's sleep is taken for it)
s62=62.$$
case_status left-under 1 'sh -c "sleep '"$s62"'; true" & started_pids="$started_pids $!"' \
	'wait_until "pgrep -x -f \"sleep '"$s62"'\" >/dev/null" 10'
case_status ended 0 'sleep 63 & started_pids="$started_pids $!"'
# one forked for `cmd &` that has not exec'd yet has the environment the test's
# shell started with, without its id: here it never execs, blocked opening a
# fifo nobody writes
mkfifo never.fifo
case_status left-unexeced 1 '( read -r x < "'"$tmp"'/never.fifo"; exec sleep 64 ) &' \
	'echo $! > "'"$tmp"'/unexeced.pid"'
p=$(cat left.pid)
wait_until "! kill -0 $p 2>/dev/null" 10
pgrep -x -f "sleep $s62" > /dev/null && fail "the process left under a shell was not ended"
p2=$(cat unexeced.pid)
wait_until "! kill -0 $p2 2>/dev/null" 10
expect_grep "^FAIL: the test left pid $p2 running: sh case-left-unexeced.sh" case-left-unexeced.out
expect_grep "^FAIL: the test left pid $p running: sleep 61\$" case-left.out
finish
