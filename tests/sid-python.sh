#!/bin/sh
# sid-python.sh [--noproc] PY [SCRIPT] [ARGS...]: run the Debian sid root's
# interpreter PY (python3.14, python3.15d...; the root of
# tests/install-deps.sh --tests, or $MEMWATCH_TEST_SID) inside that root as a
# container would see it: a mount namespace of its own, the root entered by
# chroot, /proc (not with --noproc, as in a plain chroot) and a /tmp of its
# own, the directory of SCRIPT (a .py file) at /mnt/s and the current
# directory at /mnt/w, where it runs. PY may be a program of ours instead
# (a path here, such as one linked with the root's libpython), its directory
# then at /mnt/p. The interpreter is this very process
# (nothing forks on the way), so its pid is the one that started this script.
# Needs root (unshare, mount, chroot).
proc=yes
if [ "${1:-}" = --noproc ]; then
	proc=
	shift
fi
root=${MEMWATCH_TEST_SID:-/opt/memwatch-tests/sid}
py=${1:?usage: sid-python.sh [--noproc] PY [SCRIPT] [ARGS...]}
shift
p=/usr/bin/$py pd=/nonexistent
case $py in
/*) pd=${py%/*} p=/mnt/p/${py##*/} ;;
esac
s=${1:-}
case $s in
*.py)
	case $s in /*) ;; *) s=$PWD/$s ;; esac
	d=${s%/*}
	shift
	set -- "/mnt/s/${s##*/}" "$@"
	;;
*) d=$PWD ;;
esac
exec unshare --mount sh -c '
	r=$1 d=$2 w=$3 proc=$4 pd=$5
	shift 5
	mount -t tmpfs -o mode=1777 tmpfs "$r/tmp" && mount -t tmpfs tmpfs "$r/mnt" &&
	mkdir "$r/mnt/s" "$r/mnt/w" "$r/mnt/p" && mount --bind "$d" "$r/mnt/s" && mount --bind "$w" "$r/mnt/w" || exit 99
	if [ -d "$pd" ]; then mount --bind "$pd" "$r/mnt/p" || exit 99; fi
	if [ -n "$proc" ]; then mount -t proc proc "$r/proc" || exit 99; fi
	exec chroot "$r" /bin/sh -c "cd /mnt/w && exec \"\$@\"" sh "$@"
' sh "$root" "$d" "$PWD" "$proc" "$pd" "$p" "$@"
