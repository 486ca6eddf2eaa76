#!/bin/sh
# run-container-host.sh: memwatch on the host, given the host's pid of a
# process in a container (other user, mount, PID, network and cgroup
# namespaces, its own root and /tmp): snap attaches the agent (loaded from a
# memfd made in the process: nothing is written into the container), the agent is reached over
# its socket in the container's network namespace under the pid the process
# has there; the watch triggers, attaches, snapshots and reports the leak;
# diff names it; everything is written on the host. Where memfds are not to be
# had (MEMWATCH_TEST_NO_MEMFD), the agent is copied into the container's /tmp
# and removed once loaded, as it is when the memfd cannot be loaded (no /proc
# in the container): a copy left by a memwatch killed before it could remove
# it is removed by a later attach. Then the same for a
# container whose root is an unprivileged host uid, as rootless Podman and
# Docker's userns-remap make them.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/container-lib.sh"

make_root "$tmp/root"
# the demo service leaks about 6 MiB/s in cache_store (demo.c:25)
start_container "$tmp/root" demo.out "$TARGETS/demo" 60
pid=$ct_pid

# the agent is not in the container: it is loaded from a memfd
[ ! -e "$tmp/root$MEMWATCH_AGENT" ] || fail "the agent is visible in the container by itself"
MEMWATCH_INJECT_DEBUG=1 run_mw 0 snap -p "$pid" -w 2s -o a.snap
expect_grep "^inject: the agent loaded from a memfd$" err
expect_grep "^a\.snap$" out
expect_grep "^memwatch: pid $pid: agent attached \(thread $pid paused [0-9.]+ ms\)" err
expect_grep "^pid $pid: .* live \(estimated\) in [0-9]+ stacks" out
[ -s a.snap ] || fail "no snapshot written on the host"
grep -q " /memfd:libmemwatch-agent\.so (deleted)$" "/proc/$pid/maps" ||
	fail "the agent is not mapped from a memfd"
ls -l "/proc/$pid/fd" > fd.list
! grep -q '/memfd:' fd.list || fail "the memfd was left open in the process: $(grep /memfd: fd.list)"
ct_tmp_list "$pid" > tmp.list
[ ! -s tmp.list ] || fail "something was written into the container's /tmp: $(cat tmp.list)"
run_mw 0 show a.snap
expect_grep "cache_store +demo\.c:25" out
expect_grep "^snapshot a\.snap: pid 1 demo" out

# the watch: trigger, attach (the agent is there already), snapshots, report
run_mw 0 -p "$pid" -i 250ms -d 6s -q --trigger +16MiB --snap-every +16MiB -o flow.log
expect_grep "^# event [0-9.]+ $pid trigger rss=[0-9]+ baseline=[0-9]+" flow.log
expect_grep "^# event [0-9.]+ $pid attach pause_ms=[0-9.]+ .* reused=1" flow.log
expect_grep "^# event [0-9.]+ $pid capture-start rate=524288" flow.log
expect_grep "^# event [0-9.]+ $pid snapshot path=flow\.$pid\.1\.snap" flow.log
expect_grep "^# event [0-9.]+ $pid snapshot path=flow\.$pid\.[0-9]+-final\.snap .*final=1" flow.log
expect_grep "cache_store +demo\.c:25" out
final=$(ls flow."$pid".*-final.snap 2> /dev/null)
[ -n "$final" ] || fail "no final snapshot"
run_mw 0 diff "flow.$pid.1.snap" "$final"
expect_grep "cache_store +demo\.c:25" out

kill -0 "$pid" 2> /dev/null || fail "the container's process died"
kill -9 "$pid" 2> /dev/null

# A container without /proc: the memfd cannot be opened as /proc/self/fd/N,
# so the agent is copied into its /tmp (and removed once loaded)
make_root "$tmp/root4"
CT_SETUP='umount "$r/proc"'
start_container "$tmp/root4" demo4.out "$TARGETS/demo" 60
pid=$ct_pid
[ ! -e "/proc/$pid/root/proc/self" ] || fail "the container has a /proc"
MEMWATCH_INJECT_DEBUG=1 run_mw 0 snap -p "$pid" -w 1s -o d.snap
expect_grep "^inject: no memfd \(dlopen failed: /proc/self/fd/[0-9]+: cannot open shared object file: No such file or directory\): copying the agent into its root$" err
expect_grep "^memwatch: pid $pid: agent attached" err
grep -q " /tmp/memwatch-[0-9]*-[^/]*/libmemwatch-agent\.so (deleted)$" "/proc/$pid/maps" ||
	fail "the agent is not mapped from its removed copy"
ls -l "/proc/$pid/fd" > fd4.list
! grep -q '/memfd:' fd4.list || fail "the memfd was left open in the process: $(grep /memfd: fd4.list)"
ct_tmp_list "$pid" > tmp4.list
[ ! -s tmp4.list ] || fail "the agent's copy was left in the container's /tmp: $(cat tmp4.list)"
kill -9 "$pid" 2> /dev/null

# Without memfds, memwatch killed after placing its copy, before loading it
# (before its first ptrace request, MEMWATCH_TEST_KILL_AT=1), twice: both
# copies stay, named after it. The next attach removes the one older than any
# attach (aged here), keeps the young one, and removes its own once loaded.
export MEMWATCH_TEST_NO_MEMFD=1
make_root "$tmp/root3"
start_container "$tmp/root3" demo3.out "$TARGETS/demo" 60
pid=$ct_pid
for k in 1 2; do
	MEMWATCH_TEST_KILL_AT=1 "$MEMWATCH" snap -p "$pid" -w 1s -o k.snap > k.out 2> k.err
	st=$?
	[ "$st" -eq 137 ] || fail "memwatch killed at its first request: status $st"
done
ct_tmp_list "$pid" > left.list
[ "$(grep -c '^memwatch-[0-9]*-' left.list)" -eq 2 ] ||
	fail "expected two copies left in the container's /tmp: $(cat left.list)"
old=$(head -n 1 left.list)
young=$(tail -n 1 left.list)
touch -d '-20 minutes' "/proc/$pid/root/tmp/$old"
run_mw 0 snap -p "$pid" -w 1s -o c.snap
expect_grep "^memwatch: pid $pid: agent attached" err
ct_tmp_list "$pid" > after.list
[ "$(cat after.list)" = "$young" ] ||
	fail "after the attach, the container's /tmp has '$(cat after.list)', expected only '$young'"
grep -q " /tmp/memwatch-[0-9]*-[^/]*/libmemwatch-agent\.so (deleted)$" "/proc/$pid/maps" ||
	fail "the agent is not mapped from its removed copy"
kill -0 "$pid" 2> /dev/null || fail "the container's process died"
kill -9 "$pid" 2> /dev/null
unset MEMWATCH_TEST_NO_MEMFD

# A container whose root is uid 100000 here: the copy of the agent belongs to
# that uid, and the agent, which accepts its own user or root as its user
# namespace sees them, is reached as that uid.
make_root "$tmp/root2"
CT_UID=100000
start_container "$tmp/root2" demo2.out "$TARGETS/demo" 60
pid=$ct_pid
grep -Eq "^Uid:[[:space:]]+100000[[:space:]]" "/proc/$pid/status" || fail "the container's root is not uid 100000 here"
run_mw 0 snap -p "$pid" -w 2s -o b.snap
expect_grep "^memwatch: pid $pid: agent attached" err
run_mw 0 show b.snap
expect_grep "cache_store +demo\.c:25" out
kill -0 "$pid" 2> /dev/null || fail "the container's process died"
finish
