#!/bin/sh
# run-container-mntns.sh: a program whose file is visible only in its own
# mount namespace (unshare -m with a tmpfs over its directory, as systemd's
# BindPaths= or a snap does it): here the directory is empty, and the
# process's root is ours. The snapshots taken from here carry the symbols of
# that file, read through the process while it lives, and no others (its C
# library is ours); diff, show and snap -E name the leak with its file and
# line after the process is gone. A module that cannot be read at all (its
# file deleted, and memwatch without CAP_SYS_ADMIN for /proc/PID/map_files)
# is named in one warning, by snap and by the report.
. "$top_srcdir/tests/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "a private mount needs root"
command -v unshare > /dev/null || skip "no unshare (util-linux)"
command -v nsenter > /dev/null || skip "no nsenter (util-linux)"
command -v setpriv > /dev/null || skip "no setpriv (util-linux)"
unshare --mount true 2> /dev/null || skip "unshare of a mount namespace is not permitted here"
need_snapdump
# memwatch without CAP_SYS_ADMIN (nor CAP_CHECKPOINT_RESTORE) may not follow
# /proc/PID/map_files
nocap="setpriv --bounding-set=-sys_admin,-checkpoint_restore"
$nocap sh -c 'r=$(awk '\''$6 ~ /^\// { print $1; exit }'\'' /proc/$$/maps) &&
	! stat -L "/proc/$$/map_files/$r"' > /dev/null 2>&1 || nocap=

app="$tmp/app"
mkdir "$app" || fail "mkdir $app"

# start_private NAME: the demo, copied onto a tmpfs mounted over $app in a
# mount namespace of its own (unshare execs the shell, which execs the demo:
# one pid), output to NAME.out; $pid. The demo leaks about 6 MiB/s in
# cache_store (demo.c:25).
start_private() {
	unshare --mount --propagation private sh -c \
		'mount -t tmpfs none "$1" && cp "$2" "$1/demo" && exec "$1/demo" 60' \
		sh "$app" "$TARGETS/demo" > "$1.out" 2>&1 &
	pid=$!
	started_pids="$started_pids $pid"
	wait_until "[ \"\$(readlink /proc/$pid/exe)\" = '$app/demo' ]" 10 || { cat "$1.out" >&2; finish; }
	wait_libc "$pid"
	# its file is not here, and its root is ours: only its mounts differ
	[ -z "$(ls -A "$app")" ] || fail "the private directory is seen here: $(ls -A "$app")"
	[ -f "/proc/$pid/root$app/demo" ] || fail "the process does not see its own file"
	[ "$(stat -L -c %d:%i "/proc/$pid/root/")" = "$(stat -c %d:%i /)" ] ||
		fail "the process has another root than ours"
	[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] ||
		fail "the process shares our mount namespace"
}

# expect_only_own_symbols SNAP: SNAP carries symbols, for the demo's module
# alone (the libraries are ours at their paths: not embedded)
expect_only_own_symbols() {
	"$SNAPDUMP" "$1" > dump.txt || { fail "snapdump $1"; return 0; }
	demo_mod=$(awk -v p="path=\"$app/demo\"" '$1 == "module" && $NF == p { print $2 }' dump.txt)
	[ -n "$demo_mod" ] || { fail "$1 has no module $app/demo"; return 0; }
	grep "^symbol " dump.txt > symbols.txt
	expect_grep "^symbol $demo_mod:" symbols.txt
	grep -v "^symbol $demo_mod:" symbols.txt > others.txt
	[ ! -s others.txt ] || fail "$1 carries symbols of other modules: $(head -n 3 others.txt)"
}

start_private demo
run_mw 0 -p "$pid" -i 250ms -d 4s -q --capture now --snap-every 1s -o w.log
expect_grep "^# event [0-9.]+ $pid snapshot path=w\.$pid\.1\.snap" w.log
expect_grep "cache_store +demo\.c:25" out
expect_no_grep "no symbols" err
final=$(ls w."$pid".*-final.snap 2> /dev/null)
[ -n "$final" ] || fail "no final snapshot"
expect_only_own_symbols "$final"
run_mw 0 snap -p "$pid" -w 1s -E -o e.snap
kill -0 "$pid" 2> /dev/null || fail "the process died"

# the process is gone: the snapshots still name the leak
kill -9 "$pid"
wait "$pid" 2> /dev/null
run_mw 0 diff "w.$pid.1.snap" "$final"
expect_grep "^ +1 .* (grown|new) +cache_store +demo\.c:25$" out
expect_no_grep "<unknown>" out
[ ! -s err ] || fail "diff wrote to stderr: $(cat err)"
run_mw 0 show "$final"
expect_grep "cache_store +demo\.c:25" out
run_mw 0 show e.snap
expect_grep "cache_store +demo\.c:25" out
expect_grep "handle_request +demo\.c:50" out

if [ -z "$nocap" ]; then
	echo "SKIP: the unreadable module: map_files can be followed without CAP_SYS_ADMIN here, or setpriv cannot drop it" >&2
	finish
fi
# its file deleted in its namespace after the agent is in: neither its root
# nor map_files reaches the file any more
start_private gone
run_prog 0 $nocap "$MEMWATCH" snap -p "$pid" -w 1s -o a.snap
expect_no_grep "no symbols" err
nsenter --target "$pid" --mount rm "$app/demo" || fail "cannot delete the file in its namespace"
run_prog 0 $nocap "$MEMWATCH" snap -p "$pid" -w 1s -o b.snap
expect_grep "^memwatch: warning: pid $pid: no symbols for demo \(deleted\): the file mapped is not at its path here, and neither /proc/$pid/root nor /proc/$pid/map_files reaches it \(Operation not permitted: map_files needs CAP_SYS_ADMIN\)$" err
[ "$(grep -c 'no symbols' err)" -eq 1 ] || fail "snap did not name the module once"
kill -9 "$pid"
wait "$pid" 2> /dev/null

run_mw 0 show b.snap
expect_grep "<unknown> +\(demo \(deleted\)\+0x[0-9a-f]+\)" out
expect_err_line "warning: no symbols for demo \(deleted\): $app/demo \(deleted\) is not here, nor a debug file with build-id [0-9a-f]+, and the snapshot does not carry them$"
# the first one, taken before, named it: the diff does, from it
run_mw 0 diff a.snap b.snap
expect_grep "cache_store +demo\.c:25" out
finish
