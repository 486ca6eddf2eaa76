#!/bin/sh
# run-container-image.sh: a container whose image brings its own files, as
# Docker images do: its C library and loader are copies (other files at the
# same paths as ours), its program is at a path
# that does not exist here. Its stacks are unwound through the files it has
# mapped (/proc/PID/map_files), and the snapshots carry the symbols read
# through its root, so the reports name the leak after the container is gone.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/container-lib.sh"

libdir=/usr/lib/x86_64-linux-gnu
[ -e "$libdir/libc.so.6" ] || skip "no $libdir/libc.so.6 to copy into an image"
r="$tmp/root"
make_root "$r"
# the image: copies of the libraries the demo needs (the agent needs no other:
# it brings its own libunwind), and the demo
mkdir -p "$r/image$libdir" "$r/image/usr/lib64" "$r/app" || fail "cannot make the image"
ldd "$TARGETS/demo" > demo-libs.txt
ldd "$MEMWATCH_AGENT" > agent-libs.txt
for f in $(awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' demo-libs.txt | sort -u); do
	cp "$(readlink -f "$f")" "$r/image$libdir/$(basename "$f")" || fail "cannot copy $f"
done
for f in $(awk '$3 ~ /^\// { print $3 }' agent-libs.txt | sort -u); do
	[ -e "$r/image$libdir/$(basename "$f")" ] || fail "the agent needs $f, which the demo does not"
done
ln -s "$libdir/ld-linux-x86-64.so.2" "$r/image/usr/lib64/ld-linux-x86-64.so.2"
cp "$TARGETS/demo" "$r/app/demo" || fail "cannot copy the demo"
[ ! -e /app/demo ] || skip "/app/demo exists here"

# the demo service leaks about 6 MiB/s in cache_store (demo.c:25)
CT_SETUP='umount "$r$TARGETS" && umount "$r/usr" && mount --bind "$r/image/usr" "$r/usr"'
start_container "$r" demo.out /app/demo 60
pid=$ct_pid
# its C library is not ours
[ "$(stat -L -c %i "/proc/$pid/root$libdir/libc.so.6")" != "$(stat -L -c %i "$libdir/libc.so.6")" ] ||
	fail "the container's C library is ours"

run_mw 0 snap -p "$pid" -w 2s -o a.snap
expect_grep "^memwatch: pid $pid: agent attached \(thread $pid paused [0-9.]+ ms\)" err
run_mw 0 -p "$pid" -i 250ms -d 4s -q --capture now --snap-every 1s -o w.log
expect_grep "^# event [0-9.]+ $pid snapshot path=w\.$pid\.1\.snap" w.log
expect_grep "cache_store +demo\.c:25" out
kill -0 "$pid" 2> /dev/null || fail "the container's process died"

# the container is gone: the snapshots still name the leak
kill -9 "$pid"
run_mw 0 show a.snap
expect_grep "cache_store +demo\.c:25" out
final=$(ls w."$pid".*-final.snap 2> /dev/null)
[ -n "$final" ] || fail "no final snapshot"
run_mw 0 diff "w.$pid.1.snap" "$final"
expect_grep "cache_store +demo\.c:25" out
finish
