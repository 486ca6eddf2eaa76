#!/bin/sh
# run-container-seccomp.sh: a service in a container whose seccomp filter
# forbids memfd_create (hardened profiles may). The agent cannot come through a
# memfd: it is copied into the container's /tmp, loaded and the copy removed,
# and the report names the growth. With a read-only root as well, nothing can
# bring it in: one line names both causes, status 5, and the process runs on
# without an agent.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/container-lib.sh"

line=$(grep -n 'char \*p = malloc(n);' "$top_srcdir/tests/targets/nomemfd.c" | cut -d: -f1)

make_root "$tmp/root"
start_container "$tmp/root" svc.out "$TARGETS/nomemfd" 60
pid=$ct_pid
wait_until "grep -q '^filtered\$' svc.out" 20 || { cat svc.out >&2; finish; }
grep -Eq '^Seccomp:[[:space:]]+2$' "/proc/$pid/status" || fail "the service runs without a seccomp filter"
MEMWATCH_INJECT_DEBUG=1 run_mw 0 snap -p "$pid" -w 2s -o a.snap
expect_grep "^inject: no memfd \(memfd_create failed in the process \(it runs under a seccomp filter\)\): copying the agent into its root$" err
expect_grep "^memwatch: pid $pid: agent attached" err
grep -q " /tmp/memwatch-[0-9]*-[^/]*/libmemwatch-agent\.so (deleted)$" "/proc/$pid/maps" ||
	fail "the agent is not mapped from its removed copy"
ct_tmp_list "$pid" > tmp.list
[ ! -s tmp.list ] || fail "the agent's copy was left in the container's /tmp: $(cat tmp.list)"
run_mw 0 show a.snap
expect_grep "nomemfd_keep +nomemfd\.c:$line" out
kill -0 "$pid" 2> /dev/null || fail "the service died"
kill -9 "$pid"

# read-only, its /tmp too: neither way
make_root "$tmp/ro"
CT_SETUP='mount -o remount,bind,ro "$r/tmp" && mount -o remount,bind,ro "$r"'
start_container "$tmp/ro" ro.out "$TARGETS/nomemfd" 60
pid=$ct_pid
wait_until "grep -q '^filtered\$' ro.out" 20 || { cat ro.out >&2; finish; }
run_mw 5 snap -p "$pid" -w 1s -o ro.snap
expect_err_line "pid $pid: cannot attach: cannot load the agent: through a memfd, memfd_create failed in the process \(it runs under a seccomp filter\); as a copy in the process's root, no writable place for the agent in the process's container \(/tmp, /var/tmp and /dev/shm are read-only, noexec or missing\)"
expect_grep "^  hint: give the container a writable /tmp that allows code" err
[ ! -e ro.snap ] || fail "a snapshot was written"
kill -0 "$pid" 2> /dev/null || fail "the service died"
! grep -q libmemwatch-agent "/proc/$pid/maps" || fail "an agent was loaded into $pid"
finish
