#!/bin/sh
# run-container-refuse.sh: what cannot work for a process in a container gets
# one line, a hint with the fix and status 5 (the agent could not be loaded or
# reached), and leaves the process running without an agent: a read-only root
# whose /tmp is noexec (docker run --read-only --tmpfs /tmp) and which has no
# /proc, so that neither a memfd (dlopen of /proc/self/fd/N) nor a copy can
# bring the agent in; memwatch without CAP_SYS_ADMIN, which it needs
# to enter the network namespace where the agent's socket is; memwatch as root
# without CAP_SYS_PTRACE, where the kernel refuses it (else that case is
# skipped, with the reason).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/container-lib.sh"

# no_agent PID: the process lives and has no agent mapped
no_agent() {
	kill -0 "$1" 2> /dev/null || fail "the container's process died"
	! grep -q libmemwatch-agent "/proc/$1/maps" || fail "an agent was loaded into $1"
}

# a read-only root without /proc; its /tmp a tmpfs that allows no code
make_root "$tmp/ro"
CT_SETUP='mount -o remount,bind,noexec "$r/tmp" &&
	umount "$r/proc" && mount -o remount,bind,ro "$r"'
start_container "$tmp/ro" ro.out "$TARGETS/demo" 60
run_mw 5 snap -p "$ct_pid" -w 1s -o ro.snap
expect_err_line "pid $ct_pid: cannot attach: cannot load the agent: through a memfd, dlopen failed: /proc/self/fd/[0-9]+: cannot open shared object file: No such file or directory; as a copy in the process's root, no writable place for the agent in the process's container \(/tmp, /var/tmp and /dev/shm are read-only, noexec or missing\)"
ls -l "/proc/$ct_pid/fd" > fd.list
! grep -q '/memfd:' fd.list || fail "the memfd was left open in the process: $(grep /memfd: fd.list)"
expect_grep "^  hint: give the container a writable /tmp that allows code \(docker run --tmpfs /tmp:exec\)" err
[ ! -e ro.snap ] || fail "a snapshot was written"
no_agent "$ct_pid"
# the watch goes on without capture
run_mw 0 -p "$ct_pid" -i 250ms -d 1s -q --capture now -o ro.log
expect_grep "^# event [0-9.]+ $ct_pid attach-failed" ro.log
no_agent "$ct_pid"
kill -9 "$ct_pid"

make_root "$tmp/root"
start_container "$tmp/root" demo.out "$TARGETS/demo" 60
# without_cap CAP: a memwatch that runs as root without capability CAP
without_cap() {
	printf '#!/bin/sh\nexec setpriv --inh-caps=-%s --bounding-set=-%s "%s" "$@"\n' "$1" "$1" \
		"$MEMWATCH" > "mw-no-$1"
	chmod +x "mw-no-$1"
}
without_cap sys_admin
without_cap sys_ptrace
if ./mw-no-sys_admin --version > /dev/null 2>&1; then
	# root without CAP_SYS_ADMIN: refused before anything is loaded
	MEMWATCH=./mw-no-sys_admin run_mw 5 snap -p "$ct_pid" -w 1s -o b.snap
	expect_err_line "pid $ct_pid: cannot enter the process's network namespace, where its agent's socket is: Operation not permitted"
	expect_grep "^  hint: run memwatch as root with CAP_SYS_ADMIN" err
	# the watch attaches first: refused there, before anything is loaded
	MEMWATCH=./mw-no-sys_admin run_mw 0 -p "$ct_pid" -i 250ms -d 1s -q --capture now -o na.log
	expect_grep "^memwatch: pid $ct_pid: cannot attach: cannot enter the process's network namespace, where its agent's socket is: Operation not permitted" err
	expect_grep "^  hint: run memwatch as root with CAP_SYS_ADMIN" err
	no_agent "$ct_pid"
	# root without CAP_SYS_PTRACE, the process another user's: its root is
	# uid 100000 here, which made its user namespace. The kernel refuses
	# root without the capability only where root does not own the
	# process's user namespace (it holds every capability in those it owns),
	# and Yama may add its own rule: whether it refuses here is asked of it
	# first, by opening the process's memory as ptrace would attach.
	make_root "$tmp/root2"
	CT_UID=100000
	start_container "$tmp/root2" demo2.out "$TARGETS/demo" 60
	if setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace \
		sh -c 'exec 3< "/proc/$1/mem"' sh "$ct_pid" 2> /dev/null; then
		echo "SKIP (this case): the kernel lets root without CAP_SYS_PTRACE attach to" \
			"pid $ct_pid, uid 100000 in a user namespace it made" \
			"(user namespace $(readlink "/proc/$ct_pid/ns/user")): nothing to refuse"
	else
		MEMWATCH=./mw-no-sys_ptrace run_mw 5 snap -p "$ct_pid" -w 1s -o c.snap
		expect_err_line "pid $ct_pid: cannot attach: ptrace not permitted: memwatch runs as root without CAP_SYS_PTRACE"
		expect_grep "^  hint: give memwatch CAP_SYS_PTRACE" err
	fi
	no_agent "$ct_pid"
else
	echo "setpriv cannot drop capabilities here: those cases are not tried"
fi
finish
