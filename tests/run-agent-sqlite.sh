#!/bin/sh
# run-agent-sqlite.sh: Debian's sqlite3 shell (stripped, its library too)
# started under memwatch run, fed statements through a pipe: an in-memory
# database filled with 100 000 blobs of 1 000 bytes (about 95 MiB in SQLite's
# page cache, malloc'd). A snapshot taken while the shell holds them must show
# that memory in one stack that runs through libsqlite3 from the shell's main
# program; the shell then quits, and memwatch run exits with its status.
. "$top_srcdir/tests/lib.sh"

SQLITE=/usr/bin/sqlite3
[ -x "$SQLITE" ] || skip "$SQLITE is not installed (Debian package sqlite3)"

mkfifo in
sleep 3600 >in &
holder=$!
started_pids="$started_pids $holder"
timeout -k 5 120 "$MEMWATCH" run -i 200ms -t +16MiB -q -o s.log -- "$SQLITE" :memory: <in >out 2>err &
mw=$!
started_pids="$started_pids $mw"
# say SQL: one statement to the shell, bounded (a dead shell leaves no reader).
say() {
	timeout 10 sh -c 'echo "$1" >in' say "$1" || fail "cannot write to sqlite3 (did it die?)"
}
say "create table t(a blob);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 100000)
insert into t select randomblob(1000) from c;
select 'rows', count(*) from t;"
if wait_until "grep -q '^rows|100000$' out" 60; then
	pid=$(sed -n 's/^# process: \([0-9]*\) [^ ]*sqlite3 .*/\1/p' s.log | head -n 1)
	if [ -n "$pid" ]; then
		"$MEMWATCH" snap -p "$pid" -w 0 -o held.snap >snap.out 2>snap.err ||
			{ fail "memwatch snap -p $pid: status $?"; sed 's/^/  | /' snap.err >&2; }
		"$MEMWATCH" show held.snap >show.out 2>show.err ||
			{ fail "memwatch show held.snap: status $?"; sed 's/^/  | /' show.err >&2; }
		# The first row: its bytes and where it is headed.
		awk '$1 == "1" && $3 ~ /B$/ { print "bytes", $2, $3, $0 }' show.out >top
		if grep -q '^bytes [0-9.]* MiB ' top; then
			mib=$(sed -n 's/^bytes \([0-9]*\)[.0-9]* MiB .*/\1/p' top)
			[ "$mib" -ge 80 ] && [ "$mib" -le 130 ] ||
				fail "top row holds $mib MiB, expected 80..130 (100 000 x 1 000 B)"
			expect_grep 'via (up to )?[0-9]+(-[0-9]+)? frames in libsqlite3\.so' top
		else
			fail "the snapshot's report has no first row in MiB:"
			sed 's/^/  | /' show.out >&2
		fi
	else
		fail "s.log names no sqlite3 process"
	fi
fi
# A failing statement, then the end of input: the shell exits 1, and so does
# memwatch run.
say "select no_such_function(1);"
kill "$holder" 2>/dev/null
wait "$mw"
st=$?
[ "$st" -eq 1 ] || { fail "memwatch run -- sqlite3: status $st, expected the shell's 1"; sed 's/^/  | /' err >&2; }
expect_grep '^# event .* capture-start' s.log
expect_grep '^# event .* exit status=1' s.log
finish
