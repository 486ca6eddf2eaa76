#!/bin/sh
# run-report-debuginfod.sh: a stripped target whose debug info only a
# debuginfod server has. With the server: functions, files, lines and the
# inlined helper come back, whether the stripped binary is still on disk or
# also has to be fetched. Without it (unset, or a closed port with a short
# DEBUGINFOD_TIMEOUT): symbol-table names or <unknown>, exit 0, no hang.
. "$top_srcdir/tests/lib.sh"

MKSNAP="$top_builddir/tests/tools/mksnap"
src="$top_srcdir/tests/tools/mksnap.c"
[ -x "$MKSNAP" ] || skip "mksnap not built"
command -v debuginfod >/dev/null 2>&1 || skip "debuginfod (the server) is not installed"
command -v curl >/dev/null 2>&1 || skip "curl is not installed (needed to watch the server's scan)"
command -v objcopy >/dev/null 2>&1 || skip "objcopy is not installed"
unset DEBUGINFOD_URLS DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE
L_helper=$(grep -n "LINE:helper " "$src" | cut -d: -f1)
L_grow=$(grep -n "LINE:grow_call " "$src" | cut -d: -f1)

mkdir bin srv
cp "$MKSNAP" bin/mksnap-s
objcopy --only-keep-debug bin/mksnap-s srv/mksnap-s.debug || fail "objcopy --only-keep-debug"
objcopy --strip-debug bin/mksnap-s || fail "objcopy --strip-debug"
cp bin/mksnap-s srv/mksnap-s
bin/mksnap-s -g 10 a.snap || fail "the stripped target could not snapshot itself"

# no debuginfod: the symbol table still names the functions, no lines
run_mw 0 show a.snap
expect_grep "^ +1 +40\.0 KiB .*  grow_site  \(mksnap-s\+0x[0-9a-f]+\)$" out
expect_no_grep "mksnap\.c:" out

# a private server on a free port, indexing srv/
server_pid=
for try in 1 2 3 4 5; do
	port=$((20000 + ($$ * 7 + try * 131) % 30000))
	debuginfod -F srv -p "$port" -d "$tmp/db.sqlite" -t 0 -g 0 >server.log 2>&1 &
	server_pid=$!
	started_pids="$started_pids $server_pid"
	i=0
	while [ $i -lt 300 ]; do   # up to 30 s for the scan of two files
		if ! kill -0 "$server_pid" 2>/dev/null; then
			break
		fi
		n=$(curl -s "http://127.0.0.1:$port/metrics" | sed -n 's/^scanned_files_total{source="file"} \([0-9]*\).*/\1/p')
		[ "${n:-0}" -ge 2 ] && break
		sleep 0.1
		i=$((i + 1))
	done
	kill -0 "$server_pid" 2>/dev/null && [ "${n:-0}" -ge 2 ] && break
	kill "$server_pid" 2>/dev/null
	wait "$server_pid" 2>/dev/null
	server_pid=
done
[ -n "$server_pid" ] || { sed 's/^/  server: /' server.log >&2; skip "could not start a debuginfod server"; }

export DEBUGINFOD_URLS="http://127.0.0.1:$port"
export DEBUGINFOD_TIMEOUT=10
export DEBUGINFOD_CACHE_PATH="$tmp/cache1"
run_mw 0 show a.snap
expect_grep "^ +1 +40\.0 KiB .*  leaky_helper  mksnap\.c:$L_helper \[inlined\]$" out
expect_grep "^ +grow_site  mksnap\.c:$L_grow$" out
ls cache1/*/debuginfo >/dev/null 2>&1 || fail "nothing in the client cache: $(ls -R cache1 2>&1 | head -5)"

# on a terminal, a progress line while the file downloads, erased before the report
if command -v script >/dev/null 2>&1; then
	export DEBUGINFOD_CACHE_PATH="$tmp/cache_tty"
	script -qec "'$MEMWATCH' show --top 1 a.snap" tty.log >/dev/null 2>&1 </dev/null
	st=$?
	[ "$st" -eq 0 ] || fail "show on a terminal: exit status $st"
	grep -q 'memwatch: downloading debug info: ' tty.log || fail "no progress line on a terminal"
	grep -q "$(printf '\033\\[K')snapshot a.snap: " tty.log || fail "the progress line is not erased before the report"
	grep -q "leaky_helper  mksnap\.c:$L_helper \[inlined\]" tty.log || fail "show on a terminal lost the lines"
fi

# the binary gone too: the executable and its debug info both come from the server
rm -f bin/mksnap-s
export DEBUGINFOD_CACHE_PATH="$tmp/cache2"
run_mw 0 show a.snap
expect_grep "^ +1 +40\.0 KiB .*  leaky_helper  mksnap\.c:$L_helper \[inlined\]$" out
ls cache2/*/executable >/dev/null 2>&1 || fail "the executable was not fetched"

# the server stopped: its port is closed; names are unknown, nothing hangs
kill "$server_pid"
wait "$server_pid" 2>/dev/null
export DEBUGINFOD_TIMEOUT=2
export DEBUGINFOD_CACHE_PATH="$tmp/cache3"
t0=$(date +%s)
run_mw 0 show a.snap
t1=$(date +%s)
expect_grep "^ +1 +40\.0 KiB .*  <unknown>  \(mksnap-s\+0x[0-9a-f]+\)$" out
[ $((t1 - t0)) -le 30 ] || fail "show took $((t1 - t0)) s with the server down"
unset DEBUGINFOD_URLS
run_mw 0 show a.snap
expect_grep "^ +1 +40\.0 KiB .*  <unknown>  \(mksnap-s\+0x[0-9a-f]+\)$" out
finish
