#!/bin/sh
# run-lib-selftest.sh: the helpers of the tests can fail. Each case is a small
# test script run in its own process; its exit status must be the verdict the
# helpers promise: a failure inside $(...) or a pipeline still fails the test,
# a broken site() call fails the test, expect_err_line wants exactly one error
# line, and a script with no failure passes.
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
printf 'memwatch: first\nmemwatch: second\n' > two.err
case_status errline 1 'cp "'"$tmp"'/two.err" err' 'expect_err_line first'
printf 'memwatch: first\n  hint: do this\n' > one.err
case_status errhint 0 'cp "'"$tmp"'/one.err" err' 'expect_err_line first'
finish
