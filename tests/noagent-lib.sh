# tests/noagent-lib.sh: sourced (after lib.sh) by the tests of programs the
# agent cannot be loaded into (statically linked, musl, Go). check_noagent
# puts one such program under memwatch snap -p, memwatch -p and memwatch run,
# and checks that each says the one true reason with its hint, that nothing of
# memwatch gets into the program, and that run starts it all the same and
# exits with its own status. The programs (tests/targets/noagent_target.c,
# noagent_go.go) say "up PID preload=...", wait for the file NAME.go, say
# "done 1" and exit 3.

# The test's own environment preloads nothing.
unset LD_PRELOAD MEMWATCH_AGENT_OPTIONS

# noagent_start NAME PROG: start PROG in the background, its output in
# NAME.out; $na_pid once it said "up".
noagent_start() {
	# a stale NAME.out would say "up" before the new program does
	rm -f "$tmp/$1.go" "$1.out"
	"$2" "$tmp/$1.go" >"$1.out" 2>"$1.err" &
	na_pid=$!
	started_pids="$started_pids $na_pid"
	wait_until "grep -q '^up ' '$1.out'" 30
}

# expect_nothing_loaded PID [inherited]: the running process has no agent
# mapped and (unless it inherited them from a process that took the agent)
# no preload or agent options in its environment.
expect_nothing_loaded() {
	if [ ! -r "/proc/$1/maps" ]; then
		fail "pid $1 is not running"
		return 0
	fi
	expect_no_grep 'libmemwatch-agent' "/proc/$1/maps"
	[ "${2:-}" = inherited ] && return 0
	tr '\0' '\n' <"/proc/$1/environ" >"environ.$1"
	expect_no_grep '^(LD_PRELOAD|MEMWATCH_AGENT_OPTIONS)=' "environ.$1"
}

# noagent_end NAME PID: let the program finish; it exits 3, having said done.
noagent_end() {
	local st
	touch "$tmp/$1.go"
	wait "$2"
	st=$?
	[ "$st" -eq 3 ] || fail "$1: the program exited with status $st, expected 3"
	expect_grep '^done 1$' "$1.out"
}

# check_noagent NAME PROG WHAT WHY HINT: PROG is refused by snap -p and -p as
# "the process WHAT: WHY", with the hint HINT (each an extended regular
# expression); run starts it without the agent, says once that "'PROG' WHAT:
# its allocations cannot be sampled (WHY)", and exits 3 as PROG does.
check_noagent() {
	local name=$1 prog=$2 what=$3 why=$4 hint=$5 p mw n

	# snap -p: refused, exit status 5, one line and the hint
	noagent_start "$name" "$prog"
	p=$na_pid
	run_mw 5 snap -p "$p"
	expect_err_line "pid $p: cannot attach: the process $what: $why\$"
	expect_grep "^  hint: $hint" err
	expect_nothing_loaded "$p"

	# the watch: the same reason, said once, and the watch goes on
	run_mw 0 -p "$p" --capture now -d 1.5s -o "$name-p.log"
	n=$(grep -Ec "^memwatch: pid $p: cannot attach: the process $what: $why\$" err)
	[ "$n" -eq 1 ] || { fail "$name: -p said the reason $n times, expected once"; sed 's/^/  stderr: /' err >&2; }
	expect_grep "^  hint: $hint" err
	expect_grep "^# event [0-9.]+ $p attach-failed cause=the%20process" "$name-p.log"
	expect_nothing_loaded "$p"
	noagent_end "$name" "$p"

	# run: started without the agent, watched, its own exit status
	rm -f "$tmp/$name.go" "$name.out"
	"$MEMWATCH" run -o "$name-run.log" -- "$prog" "$tmp/$name.go" >"$name.out" 2>err &
	mw=$!
	started_pids="$started_pids $mw"
	wait_until "grep -q '^up ' '$name.out'" 30
	p=$(sed -n 's/^up \([0-9]*\) .*/\1/p' "$name.out")
	if [ -n "$p" ]; then
		expect_nothing_loaded "$p"
	else
		fail "$name: the program did not start under memwatch run"
		sed 's/^/  stderr: /' err >&2
	fi
	expect_grep '^up [0-9]+ preload=$' "$name.out"
	touch "$tmp/$name.go"
	wait "$mw"
	status=$?
	[ "$status" -eq 3 ] || { fail "$name: memwatch run exited $status, expected the program's 3"; sed 's/^/  stderr: /' err >&2; }
	expect_err_line "warning: '$prog' $what: its allocations cannot be sampled \\($why\\); its memory is watched only\$"
	expect_grep "^  hint: $hint" err
	expect_grep '^done 1$' "$name.out"
	expect_grep "^# event [0-9.]+ $p attach-failed cause=the%20program" "$name-run.log"
	expect_grep "^# event [0-9.]+ $p exit status=3" "$name-run.log"
}

# check_noagent_child NAME PROG WHAT WHY HINT: PROG started by the command of
# memwatch run --children (a glibc shell, which takes the agent) is told at
# once as "the process WHAT: WHY", with the hint; it runs, nothing is loaded
# into it, and its status comes back through the shell.
check_noagent_child() {
	local name=$1 prog=$2 what=$3 why=$4 hint=$5 p mw
	rm -f "$tmp/$name.go" "$name.out"
	"$MEMWATCH" run --children -i 200ms -o "$name-ch.log" -- \
		sh -c '"$1" "$2"; exit $?' sh "$prog" "$tmp/$name.go" >"$name.out" 2>err &
	mw=$!
	started_pids="$started_pids $mw"
	wait_until "grep -q '^up ' '$name.out'" 30
	p=$(sed -n 's/^up \([0-9]*\) .*/\1/p' "$name.out")
	if [ -n "$p" ]; then
		wait_until "grep -q 'pid $p: its allocations cannot be sampled' err" 30
		expect_nothing_loaded "$p" inherited
	else
		fail "$name: the program started by the command did not start"
	fi
	touch "$tmp/$name.go"
	wait "$mw"
	status=$?
	[ "$status" -eq 3 ] || { fail "$name (child): memwatch run exited $status, expected 3"; sed 's/^/  stderr: /' err >&2; }
	expect_grep '^done 1$' "$name.out"
	expect_err_line "pid $p: its allocations cannot be sampled: the process $what: $why\$"
	expect_grep "^  hint: $hint" err
	expect_grep "^# event [0-9.]+ $p attach-failed cause=the%20process" "$name-ch.log"
}
