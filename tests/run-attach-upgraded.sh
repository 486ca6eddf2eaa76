#!/bin/sh
# run-attach-upgraded.sh: a process whose program and C library were deleted
# on disk since it loaded them (a package upgrade under a running service:
# "(deleted)" in its maps) is attached as any other. Its stacks are unwound
# from the very objects it mapped (/proc/PID/map_files), the report names its
# functions, and it goes on running. Without CAP_SYS_ADMIN those objects
# cannot be read: one line and exit status 5, and the process goes on as it
# was.
. "$top_srcdir/tests/lib.sh"
need_ptrace
[ -f "$MEMWATCH_AGENT" ] || skip "the agent is not built ($MEMWATCH_AGENT)"
[ "$(id -u)" -eq 0 ] || skip "reading /proc/PID/map_files takes root"
unset DEBUGINFOD_URLS

libc=$(ldd "$TARGETS/demo" | sed -n 's/^[[:space:]]*libc\.so\.6 => \([^ ]*\) .*/\1/p')
[ -n "$libc" ] || { fail "cannot find the demo's libc with ldd"; finish; }

# upgraded DIR: a copy of the demo and of libc in DIR, the demo started on
# them (for 30 s), then both deleted; $demo.
upgraded() {
	mkdir -p "$1"
	cp "$TARGETS/demo" "$1/demo"
	cp -L "$libc" "$1/libc.so.6"
	chmod -R a+rX "$1"
	$2 env LD_LIBRARY_PATH="$1" "$1/demo" 30 >"$1.out" &
	demo=$!
	started_pids="$started_pids $demo"
	wait_exec "$demo" "$1/demo"
	wait_libc "$demo"
	rm -f "$1/demo" "$1/libc.so.6"
	expect_grep " $1/libc\\.so\\.6 \\(deleted\\)$" "/proc/$demo/maps"
	expect_grep " $1/demo \\(deleted\\)$" "/proc/$demo/maps"
}

upgraded "$tmp/up" ""
run_mw 0 snap -p "$demo" -w 2s -o a.snap
expect_grep "^memwatch: pid $demo: agent attached" err
run_mw 0 show a.snap
expect_grep "cache_store +demo\\.c:25" out
kill -0 "$demo" 2>/dev/null || fail "the upgraded demo died"

# without CAP_SYS_ADMIN (another user, owning the process): refused, untouched
if command -v setpriv >/dev/null 2>&1 && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	chmod a+x "$tmp"
	mkdir -m 777 "$tmp/nbout"
	upgraded "$tmp/nb" "setpriv --reuid=65534 --regid=65534 --clear-groups"
	nb=$demo
	setpriv --reuid=65534 --regid=65534 --clear-groups "$MEMWATCH" snap -p "$nb" -w 1s \
		-o "$tmp/nbout/b.snap" >out 2>err
	status=$?
	[ "$status" -eq 5 ] || fail "as uid 65534: exit status $status, expected 5"
	expect_err_line "pid $nb: cannot attach: '$tmp/nb/(demo|libc\\.so\\.6)' was replaced or deleted on disk since the process loaded it, and the copy it mapped cannot be read"
	expect_grep '^  hint: run memwatch as root' err
	expect_no_grep 'libmemwatch-agent' "/proc/$nb/maps"
	[ ! -e "$tmp/nbout/b.snap" ] || fail "a refused snap wrote b.snap"
	grep -q '^State:[[:space:]]*[RS]' "/proc/$nb/status" || fail "the refused process is not running: $(grep State "/proc/$nb/status")"
fi
finish
