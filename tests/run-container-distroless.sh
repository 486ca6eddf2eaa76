#!/bin/sh
# run-container-distroless.sh: a container as a distroless image with
# Kubernetes' readOnlyRootFilesystem makes it: a root that holds only the
# program, the C library and the loader (copies of the host's files), mounted
# read-only, with no writable /tmp, /var/tmp or /dev/shm. memwatch -p attaches
# (the agent needs nothing from the root but the C library, and is loaded from
# a memfd), names the leaking function with its file and line, its sampled
# stacks explain at least 85 % of the RSS growth, the agent's own frames do not
# show, and not one file is added to the root.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/container-lib.sh"

libdir=/usr/lib/x86_64-linux-gnu
[ -e "$libdir/libc.so.6" ] && [ -e "$libdir/ld-linux-x86-64.so.2" ] ||
	skip "no $libdir/libc.so.6 and loader to copy into an image"
r="$tmp/root"
# the image: the demo and what ldd says it needs, nothing else; the mount
# points start_container uses (its /usr, /tmp and the test programs are
# unmounted again before the root is made read-only)
mkdir -p "$r/app" "$r$libdir" "$r/lib64" "$r/usr" "$r/tmp" "$r/proc" "$r/dev" "$r/.old" "$r$TARGETS" ||
	fail "cannot make the root"
ldd "$TARGETS/demo" > demo-libs.txt
for f in $(awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' demo-libs.txt | sort -u); do
	case $(basename "$f") in
	ld-linux-x86-64.so.2) cp "$(readlink -f "$f")" "$r/lib64/ld-linux-x86-64.so.2" ;;
	libc.so.6) cp "$(readlink -f "$f")" "$r$libdir/libc.so.6" ;;
	*) fail "the demo needs $f, which a root of glibc alone lacks" ;;
	esac || fail "cannot copy $f"
done
cp "$TARGETS/demo" "$r/app/demo" || fail "cannot copy the demo"
[ ! -e /app/demo ] || skip "/app/demo exists here"

# the demo service leaks about 6 MiB/s in cache_store (demo.c:25)
CT_SETUP='umount "$r$TARGETS" && umount "$r/tmp" && umount "$r/usr" &&
	mount -o remount,bind,ro "$r"'
start_container "$r" demo.out /app/demo 60
pid=$ct_pid
# nothing in it is writable
for d in / /tmp /var/tmp /dev/shm /app; do
	! touch "/proc/$pid/root$d/.w" 2> /dev/null || fail "the container's $d is writable"
done
# what the root holds, before and after (the proc mount aside, and the old
# root that a root without umount keeps under /.old)
list_root() {
	(cd "/proc/$pid/root" && find . -xdev -path ./.old -prune -o -printf '%p %y %s %T@\n' | sort) > "$1" ||
		fail "cannot list the container's root"
}
list_root before.list
grep -q '^\./app/demo f ' before.list || fail "the listing does not show the program"

# at 64 KiB the sampling error (sqrt(R/M)) on ~30 MiB is 5 %, not 13 %
run_mw 0 -p "$pid" -i 250ms -d 5s -q --capture now --snap-every 1s -r 64KiB -o w.log
expect_grep "^# event [0-9.]+ $pid attach pause_ms=" w.log
expect_grep "^# event [0-9.]+ $pid snapshot path=w\.$pid\.[0-9]+-final\.snap" w.log
expect_grep "cache_store +demo\.c:25" out
pct=$(sed -n 's/^  sampled stacks explain \([0-9]*\) % of the RSS growth.*/\1/p' out)
echo "the sampled stacks explain ${pct:-no} % of the RSS growth"
case $pct in
'' | *[!0-9]*) fail "no share of the RSS growth explained in the report" ;;
*) [ "$pct" -ge 85 ] || fail "the sampled stacks explain $pct % of the RSS growth, expected >= 85" ;;
esac
# the agent's own frames (its module now the memfd) never show
final=$(ls w."$pid".*-final.snap 2> /dev/null)
if [ -n "$final" ]; then
	run_mw 0 show --all-frames --depth 64 "$final"
	expect_grep "cache_store +demo\.c:25" out
	expect_no_grep 'libmemwatch-agent|memfd:|hooks\.c:[0-9]' out
fi
grep -q " /memfd:libmemwatch-agent\.so (deleted)$" "/proc/$pid/maps" ||
	fail "the agent is not mapped from a memfd"
list_root after.list
cmp -s before.list after.list || {
	fail "the container's root changed:"
	diff before.list after.list >&2
}
kill -0 "$pid" 2> /dev/null || fail "the container's process died"
finish
