# tests/container-lib.sh: sourced by the run-container-*.sh tests after
# lib.sh. Makes containers the way Docker and Podman do, with unshare: new
# user, mount, PID, network, IPC, UTS and cgroup namespaces, and a private root
# entered with pivot_root, whose /tmp is its own tmpfs.

[ "$(id -u)" -eq 0 ] || skip "making containers needs root"
command -v unshare > /dev/null || skip "no unshare (util-linux)"
command -v pgrep > /dev/null || skip "no pgrep (procps)"
command -v setpriv > /dev/null || skip "no setpriv (util-linux)"
unshare --user --mount --pid --net --ipc --uts --cgroup --fork true 2> /dev/null ||
	skip "unshare of user, mount, PID and network namespaces is not permitted here"

# Whoever the container's root is must be able to reach its root directory.
chmod 0755 "$tmp"

# make_root DIR: a root holding the host's /usr (so the same libraries at the
# same paths, /lib and /bin through Debian's merged-/usr links) and the test
# programs, with empty /tmp, /proc and /dev to mount on. The programs are
# mounted after the container's own /tmp, so that a build tree under /tmp
# stays visible in it.
make_root() {
	mkdir -p "$1/usr" "$1/tmp" "$1/proc" "$1/dev" "$1/.old" "$1$TARGETS" &&
		ln -s usr/lib "$1/lib" && ln -s usr/lib64 "$1/lib64" && ln -s usr/bin "$1/bin" ||
		fail "cannot make the root $1"
}

# ct_tmp_list PID: what is in the container's /tmp, but for the mount point
# of the test programs (there when the build tree is under /tmp).
ct_tmp_list() {
	local keep=
	case $TARGETS in /tmp/*) keep=${TARGETS#/tmp/}; keep=${keep%%/*} ;; esac
	ls "/proc/$1/root/tmp" | grep -vxF -- "${keep:-/}"
}

# start_container ROOT OUT PROGRAM ARGS...: run PROGRAM as pid 1 of a new
# container rooted at ROOT (made by make_root), stdout and stderr to OUT.
# CT_UID (default 0): the host uid its root is mapped to. CT_SETUP: shell
# commands run inside before pivot_root, with the root in $r. Both apply to
# this call only. Sets $ct_pid, the program's pid here.
start_container() {
	ct_root=$1
	ct_out=$2
	shift 2
	# its root is CT_UID here: unshare run as that user maps it to root
	ct_as=
	[ "${CT_UID:-0}" = 0 ] || ct_as="setpriv --reuid=$CT_UID --regid=$CT_UID --clear-groups"
	CT_SETUP=${CT_SETUP:-} $ct_as unshare --user --map-root-user --mount --pid --net --ipc --uts --cgroup --fork sh -c '
		r=$1 targets=$2
		shift 2
		mount --bind "$r" "$r" &&
		mount --bind /usr "$r/usr" &&
		mount -t tmpfs -o mode=1777 tmpfs "$r/tmp" &&
		mkdir -p "$r$targets" &&
		mount --bind "$targets" "$r$targets" &&
		mount -t proc proc "$r/proc" || exit 99
		eval "${CT_SETUP:-}" || exit 99
		cd "$r" && pivot_root . .old && cd / || exit 99
		# (a root without umount keeps the old root hidden under /.old)
		umount -l /.old 2> /dev/null
		exec "$@"
	' sh "$ct_root" "$TARGETS" "$@" > "$ct_out" 2>&1 &
	ct_unshare=$!
	started_pids="$started_pids $ct_unshare"
	# assignments before a function call outlive it in some shells
	unset CT_UID CT_SETUP
	ct_pid=
	ct_i=0
	while [ $ct_i -lt 200 ]; do
		ct_pid=$(pgrep -P "$ct_unshare")
		if [ -n "$ct_pid" ] && grep -q "^NSpid:.*[[:space:]]1$" "/proc/$ct_pid/status" 2> /dev/null &&
			[ "$(cat "/proc/$ct_pid/comm")" = "$(basename "$1")" ]; then
			break
		fi
		ct_i=$((ct_i + 1))
		sleep 0.05
	done
	[ $ct_i -lt 200 ] || { cat "$ct_out" >&2; fail "the container did not start"; finish; }
	started_pids="$started_pids $ct_pid"
	wait_libc "$ct_pid"
	# its namespaces are other than ours, its root too
	for ns in mnt pid net user; do
		[ "$(readlink "/proc/$ct_pid/ns/$ns")" != "$(readlink "/proc/self/ns/$ns")" ] ||
			fail "the container shares our $ns namespace"
	done
}
