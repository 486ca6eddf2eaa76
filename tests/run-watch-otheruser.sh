#!/bin/sh
# run-watch-otheruser.sh: watching another user's process reads what /proc shows
# every user (RSS, its split, swap, VSZ), says clearly what it cannot read (PSS,
# USS, capture), and writes '-' for PSS/USS; a process /proc hides entirely
# (hidepid) is refused with status 4. Needs root to become nobody.
. "$top_srcdir/tests/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root to run memwatch as another user"
command -v setpriv >/dev/null 2>&1 || skip "setpriv (util-linux) is missing"
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
as_nobody test -x "$MEMWATCH" || skip "user nobody cannot run $MEMWATCH"

# a root-owned target, watched by nobody; the log goes to stdout, kept by the shell
start_target "$TARGETS/flat" 8
p=$target_pid
# until its memory is touched (a loaded machine may take a while)
wait_until "awk '/^RssAnon:/ { exit !(\$2 >= 8192) }' /proc/$p/status 2>/dev/null" 20
as_nobody "$MEMWATCH" -p "$p" --pss -i 100ms -d 500ms -o - >out 2>err
status=$?
[ "$status" -eq 0 ] || fail "status $status watching root's process as nobody: $(cat err)"
[ "$(grep -c '' err)" -eq 1 ] || fail "expected exactly one warning line: $(cat err)"
expect_grep "^memwatch: warning: pid $p belongs to another user \(uid 0\): .*RSS.*not PSS/USS; no capture" err
# the readable figures are there; PSS and USS are '-'
n=$(grep -Ec "^[0-9.]+ $p( [0-9]+){6} - -( ([0-9]+|-)){3}\$" out)
[ "$n" -ge 3 ] || fail "$n samples with RSS and '-' for PSS/USS"
awk -v p="$p" '$2 == p && $4 < 8192 { bad = 1 } END { exit bad }' out ||
	fail "anon below the 8 MiB the target touched"

# without --pss the warning is there all the same, once
as_nobody "$MEMWATCH" -p "$p" -i 100ms -d 300ms -o - >out 2>err
[ "$(grep -c '' err)" -eq 1 ] || fail "expected exactly one warning line: $(cat err)"
expect_grep "belongs to another user" err

# the default log in a directory we cannot write: the error says where it went
as_nobody sh -c "cd / && exec '$MEMWATCH' -p $p -d 300ms" >out 2>err
status=$?
[ "$status" -eq 1 ] || fail "status $status writing the log in /, expected 1"
expect_grep "^memwatch: cannot create 'memwatch-$p.log': Permission denied" err
expect_grep '^  hint: .*-o FILE' err

# nothing readable: /proc mounted with hidepid (in a mount namespace of our own)
# hides the process (invisible) or its files (noaccess): status 4, one line
for hp in invisible noaccess; do
	unshare -m sh -c "mount -t proc -o hidepid=$hp proc /proc" 2>/dev/null || continue
	unshare -m sh -c "mount -t proc -o hidepid=$hp proc /proc &&
		exec setpriv --reuid=nobody --regid=nogroup --clear-groups '$MEMWATCH' -p $p -d 300ms -o -" >out 2>err
	status=$?
	[ "$status" -eq 4 ] || fail "hidepid=$hp: status $status, expected 4"
	expect_err_line "pid $p: cannot read /proc/$p"
	[ -s out ] && fail "hidepid=$hp: a log was written"
done
finish
