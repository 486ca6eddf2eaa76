#!/bin/sh
# run-robust-diskfull.sh: the disk fills while a watch captures. The log hits
# the file size limit (ulimit -f; memwatch ignores SIGXFSZ, so write fails with
# EFBIG) or a full tmpfs (as root): one clear line, status 1, every line
# written before the failure intact, snapshots whole or absent. Snapshots that
# do not fit on a full tmpfs: a warning each, a snapshot-failed event, no
# partial file, the log complete. The target goes on running in every case,
# its agent no longer capturing.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
need_ptrace

# expect_one_error PATTERN: stderr holds one error line matching PATTERN,
# besides warnings and hints (a snapshot may fail to fit before the log does).
expect_one_error() {
	[ "$(grep -v '^memwatch: warning: ' err | grep -c '^memwatch: ')" -eq 1 ] ||
		fail "not one error line: $(cat err)"
	expect_grep "^memwatch: $1" err
	grep -v '^memwatch: ' err | grep -vq '^  hint: ' && fail "stray stderr: $(cat err)"
}

mounted=
cleanup_extra='[ -n "$mounted" ] && umount "$mounted"'

: >churn.out
start_churn churn.out 1 0 4096

# 1. the file size limit: a few KiB of log at a 10 ms interval
(ulimit -f 8 && exec "$MEMWATCH" -p "$t" -i 10ms -q --capture now --snap-every 200ms \
	-o fsize.log >out 2>err)
status=$?
[ "$status" -eq 1 ] || fail "file size limit: status $status, expected 1"
expect_one_error "cannot write 'fsize\.log': File too large$"
log_lines_whole "file size limit" fsize.log
expect_grep "^# event [0-9.]+ $t capture-start " fsize.log
snaps_complete "file size limit" fsize.*.snap
no_temp_files "file size limit"
target_free "file size limit" "$t" churn.out
capture_off "file size limit" "$t"

# 2. a full tmpfs (root, and mounting allowed)
mkdir fs
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=256k tmpfs fs 2>/dev/null; then
	echo "not root or mount refused: the tmpfs cases are left out" >&2
	finish
fi
mounted=$tmp/fs

# 2a. the log fills it: leave it about 12 KiB
dd if=/dev/zero of=fs/filler bs=4096 count=61 2>/dev/null
run_mw 1 -p "$t" -i 10ms -q --capture now --snap-every 200ms -o fs/full.log
expect_one_error "cannot write 'fs/full\.log': No space left on device$"
log_lines_whole "full tmpfs" fs/full.log
snaps_complete "full tmpfs" fs/full.*.snap
no_temp_files "full tmpfs"
target_free "full tmpfs" "$t" churn.out
capture_off "full tmpfs" "$t"
kill "$t"
rm -f fs/*

# 2b. snapshots of 16384 stacks (1.5 MiB) cannot fit; the log does
"$robust" stacks 16384 30 0.3 >stacks.out &
t=$!
started_pids="$started_pids $t"
"$MEMWATCH" -p "$t" -i 100ms -q -r 1 --capture now --snap-every 700ms -d 2s -o fs/s.log >out 2>err
status=$?
# the watch ran its course, but what it was to write was lost: status 1, the
# first failure said once, and a count at the end
[ "$status" -eq 1 ] || fail "snapshots on a full tmpfs: status $status, expected 1"
expect_grep "^memwatch: warning: pid $t: cannot write 'fs/s\.$t\.[0-9]+(-final)?\.snap': No space left on device\$" err
[ "$(grep -c 'cannot write' err)" -eq 1 ] || fail "snapshots on a full tmpfs: the failure was said more than once"
expect_grep "^memwatch: pid $t: [0-9]+ snapshots? could not be written\$" err
grep -v '^memwatch: ' err | grep -vq '^  hint: ' && fail "snapshots on a full tmpfs: stderr: $(cat err)"
expect_grep "^# event [0-9.]+ $t snapshot-failed path=fs/s\.$t\." fs/s.log
log_ended "snapshots on a full tmpfs" fs/s.log
log_lines_whole "snapshots on a full tmpfs" fs/s.log
ls fs/*.snap >/dev/null 2>&1 && fail "snapshots on a full tmpfs: files left: $(ls fs)"
no_temp_files "snapshots on a full tmpfs"
kill -0 "$t" || fail "snapshots on a full tmpfs: the target died"
capture_off "snapshots on a full tmpfs" "$t"
# a log write cut short by the file size limit leaves no half line
: >churn2.out
start_churn churn2.out 1 0 4096
(ulimit -f 8 && exec "$MEMWATCH" -p "$t" -i 10ms -q --capture never -o fsize2.log >out 2>err)
[ "$(tail -c 1 fsize2.log | od -An -c | tr -d ' ')" = '\n' ] ||
	fail "the log ends in a half line: '$(tail -n 1 fsize2.log)'"
kill "$t"
finish
