#!/bin/sh
# run-harness-selftest.sh: tests/harness.sh, which runs every test, bounds it
# and gives it the same environment however make check was started. A test
# that hangs is ended at its limit, named with what it was waiting for, and
# leaves no process behind, even one in a session of its own or one that
# ignores SIGTERM; a test of tests/lib.sh still runs its cleanup. A test
# started with signals ignored (nohup), umask 077, a TMPDIR with a space in
# it and another locale runs with none of that. Exit statuses and declared
# limits go through.
. "$top_srcdir/tests/lib.sh"

H="$top_srcdir/tests/harness.sh"
# the limits checked here are exact: not scaled as the ASan build's suite
# scales every test's
MEMWATCH_TEST_LIMIT_SCALE=1
export MEMWATCH_TEST_LIMIT_SCALE

# harness NAME: run the test NAME.sh under the harness, its output in
# NAME.out, what it writes to the console (fd 9) in NAME.console; its status
# in $status, its wall time in whole seconds in $secs.
harness() {
	local s
	s=$(date +%s)
	sh "$H" --shell /bin/sh "$tmp/$1.sh" > "$1.out" 2>&1 9> "$1.console"
	status=$?
	secs=$(($(date +%s) - s))
}

# gone_all FILE: every pid in FILE has ended (none is left for init to reap)
gone_all() {
	local p
	for p in $(cat "$1"); do
		[ -e "/proc/$p" ] && ! ended "$p" && return 1
	done
	return 0
}

# A hang: children in the test's process group, one in a session of its own,
# one that ignores SIGTERM, all while the test waits for them for ever.
cat > hang.sh << EOF
#!/bin/sh
# limit: 2
sleep 1000 &
echo \$! >> '$tmp/hang.pids'
setsid sleep 1001 &
echo \$! >> '$tmp/hang.pids'
sh -c 'trap "" TERM; sleep 1002 & echo \$! >> "$tmp/hang.pids"; wait' &
echo \$! >> '$tmp/hang.pids'
echo \$\$ >> '$tmp/hang.pids'
wait
EOF
MEMWATCH_TEST_GRACE=2 harness hang
[ "$status" -eq 99 ] || fail "a hung test: status $status, expected 99"
expect_range "seconds until a hung test of limit 2 s is ended" "$secs" 2 12
expect_grep "^harness: $tmp/hang\.sh: ended at its limit of 2 s$" hang.out
expect_grep "^harness: still running:$" hang.out
expect_grep "^  pid [0-9]+ \(parent [0-9]+, .*\): /bin/sh $tmp/hang\.sh $" hang.out
expect_grep "^  pid [0-9]+ .*: sleep 1000 $" hang.out
expect_grep "^  pid [0-9]+ .*: sleep 1001 $" hang.out
expect_grep "^  pid [0-9]+ .*: sleep 1002 $" hang.out
expect_grep "^FAIL: $tmp/hang\.sh was ended at its limit of 2 s$" hang.out
expect_grep "^harness: $tmp/hang\.sh: ended at its limit of 2 s$" hang.console
[ "$(grep -c '' hang.pids)" -eq 5 ] || fail "the hung test did not start all it should: $(cat hang.pids)"
wait_until "gone_all hang.pids" 5 || fail "processes of the hung test are left: $(cat hang.pids)"

# A test of tests/lib.sh stuck in one of its waits: the harness says which,
# and the test's own cleanup runs.
cat > stuck.sh << EOF
#!/bin/sh
# limit: 2
. "\$top_srcdir/tests/lib.sh"
cleanup_extra="echo cleaned > '$tmp/stuck.cleaned'"
wait_until "[ -e '$tmp/never' ]" 1000
finish
EOF
MEMWATCH_TEST_GRACE=5 harness stuck
[ "$status" -eq 99 ] || fail "a stuck test: status $status, expected 99"
expect_grep "^harness: its last wait: wait_until \(up to 1000s, since [0-9:]+\): \[ -e '$tmp/never' \]$" stuck.out
[ -s stuck.cleaned ] || fail "the stuck test's cleanup did not run"

# The environment, started as from nohup with stdin closed, umask 077, a
# TMPDIR with a space and another locale.
cat > env.sh << 'EOF'
#!/bin/sh
echo "ignored $(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status)"
echo "umask $(umask)"
echo "tmpdir $TMPDIR"
[ -d "$TMPDIR" ] && [ -w "$TMPDIR" ] && echo "tmpdir usable"
echo "locale ${LC_ALL:-} ${LANGUAGE:-unset}"
echo "stdin $(readlink /proc/self/fd/0)"
# field 7 of stat is the controlling terminal; 6 the session
set -- $(sed 's/.*) //' /proc/self/stat)
echo "tty $5"
[ "$4" = $$ ] && echo "session leader"
exit 0
EOF
mkdir "$tmp/a space"
status=0
TMPDIR="$tmp/a space" LC_ALL=fr_FR.UTF-8 LANGUAGE=fr \
	env --ignore-signal=HUP --ignore-signal=INT --ignore-signal=QUIT --ignore-signal=PIPE \
	sh -c 'umask 077; exec sh "$1" --shell /bin/sh "$2" <&- > env.out 2>&1' sh "$H" "$tmp/env.sh" ||
	status=$?
[ "$status" -eq 0 ] || { fail "the environment test: status $status"; sed 's/^/  | /' env.out >&2; }
# (but for 32 and 33, the C library's own, which make leaves ignored and
# every program's C library takes over as it starts)
expect_grep '^ignored 0{7}[01][08]0{7}$' env.out
expect_grep '^umask 0022$' env.out
expect_grep '^tmpdir /tmp/memwatch-test-env\.[A-Za-z0-9]+/tmp$' env.out
expect_grep '^tmpdir usable$' env.out
expect_grep '^locale C\.UTF-8 unset$' env.out
expect_grep '^stdin /dev/null$' env.out
expect_grep '^tty 0$' env.out
expect_grep '^session leader$' env.out
d=$(sed -n 's/^tmpdir \(\/.*\)$/\1/p' env.out)
[ -n "$d" ] && [ ! -e "$d" ] || fail "the test's TMPDIR $d is left behind"
expect_grep "^harness: $tmp/env\.sh: [0-9]+\.[0-9] s \(limit 300 s\)$" env.out

# the test's status goes through; a declared limit, scaled
printf '#!/bin/sh\n# a comment\n# limit: 7\nexit 77\n' > skip.sh
MEMWATCH_TEST_LIMIT_SCALE=3 harness skip
[ "$status" -eq 77 ] || fail "a skipped test: status $status, expected 77"
expect_grep "^harness: $tmp/skip\.sh: [0-9.]+ s \(limit 21 s\)$" skip.out
printf '#!/bin/sh\nexit 1\n' > fails.sh
harness fails
[ "$status" -eq 1 ] || fail "a failed test: status $status, expected 1"
finish
