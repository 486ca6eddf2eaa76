#!/bin/sh
# run-python-minbase.sh: a CPython service in a Debian minbase root (the sid
# root of tests/install-deps.sh --tests) that has no libunwind: Debian's
# libunwind8 is hidden from it (whited out of an overlay of that root, in a
# private mount namespace of this test). memwatch -p attaches all the same (the
# agent brings its own libunwind), and its report's top row names the Python
# function that grows, with its file and line. The CPython is one the agent
# reads: the root's own where there is one, else pyenv's 3.13 mounted into it
# at its path (it needs only libc and libm, which the root has).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
[ "$(id -u)" -eq 0 ] || skip "mounting an overlay of the root needs root"
command -v unshare > /dev/null || skip "no unshare (util-linux)"

root=${MEMWATCH_TEST_SID:-/opt/memwatch-tests/sid}
libdir=/usr/lib/x86_64-linux-gnu
[ -x "$root/usr/bin/python3" ] || [ -d "$root$libdir" ] ||
	skip "no Debian minbase root at $root (sh tests/install-deps.sh --tests makes it)"
python= pyhome=
for v in 13; do
	if [ -x "$root/usr/bin/python3.$v" ]; then
		python=/usr/bin/python3.$v
		break
	fi
	find_cpython "$v"
	case $found in
	"${HOME:-/nonexistent}"/.pyenv/versions/*)
		python=$found
		pyhome=${found%/bin/*}
		break
		;;
	esac
done
[ -n "$python" ] || skip "no CPython the agent reads for $root (its own, or pyenv's 3.13)"
echo "CPython: $python in $root"

ov="$tmp/ov"
mkdir -p "$ov" || fail "cannot make $ov"
# the root as an overlay whose upper layer whites out every libunwind
unshare --mount --fork sh -c '
	root=$1 ov=$2 libdir=$3 script=$4 python=$5 pyhome=$6
	mount --make-rprivate / &&
	mount -t tmpfs tmpfs "$ov" &&
	mkdir -p "$ov/up$libdir" "$ov/up/app" "$ov/work" "$ov/merged" || exit 99
	for f in "$root$libdir"/libunwind*; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		mknod "$ov/up$libdir/${f##*/}" c 0 0 || exit 99
	done
	cp "$script" "$ov/up/app/py_grow.py" &&
	mount -t overlay overlay -o "lowerdir=$root,upperdir=$ov/up,workdir=$ov/work" "$ov/merged" &&
	mount -t proc proc "$ov/merged/proc" || exit 99
	if [ -n "$pyhome" ]; then
		mkdir -p "$ov/merged$pyhome" && mount --bind "$pyhome" "$ov/merged$pyhome" || exit 99
	fi
	exec chroot "$ov/merged" "$python" /app/py_grow.py objects 12
' sh "$root" "$ov" "$libdir" "$script" "$python" "$pyhome" > objects.out 2> objects.err &
us=$!
started_pids="$started_pids $us"
wait_until "grep -q ready objects.out 2> /dev/null" 30 || { cat objects.err >&2; finish; }
t=$(pgrep -P "$us")
[ -n "$t" ] || { fail "no CPython under unshare $us"; finish; }
started_pids="$started_pids $t"
# it runs in that root, which has no libunwind
[ "$(readlink "/proc/$t/root")" != / ] || fail "the CPython runs in our root"
[ -e "/proc/$t/root/app/py_grow.py" ] || fail "the CPython's root is not the overlay"
ls "/proc/$t/root$libdir" | grep libunwind > unw.list
[ ! -s unw.list ] || fail "the root has libunwind: $(cat unw.list)"

run_mw 0 -p "$t" -i 200ms -d 8s -q --trigger +32MiB -o objects.log -r 64KiB
cp out objects.report
expect_grep "^# event [0-9.]+ $t capture-start " objects.log
expect_top_row objects objects.report grow_small_objects "$small_line"
# (the script runs 12 s, the watch 8 s after it is ready)
if cp "/proc/$t/maps" maps.txt 2> /dev/null; then
	! grep -q libunwind maps.txt || fail "a libunwind is mapped in the CPython"
	grep -q " /memfd:libmemwatch-agent\.so (deleted)$" maps.txt ||
		fail "the agent is not mapped from a memfd"
else
	echo "the CPython ended before its maps could be read"
fi
wait "$us"
st=$?
[ "$st" -eq 0 ] || { fail "python exited with status $st"; sed 's/^/  | /' objects.err >&2; }
expect_grep '^ok$' objects.out
finish
