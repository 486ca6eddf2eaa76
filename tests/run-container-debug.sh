#!/bin/sh
# run-container-debug.sh: memwatch in a debugging container that shares only
# the target's PID namespace (kubectl debug --target), with its own mount
# namespace and /proc, the host's network and user namespaces: the target is
# pid 1 there. snap attaches (the agent copied into the target's root) and
# names the leak; the watch triggers, snapshots and reports it; diff names it.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/container-lib.sh"
command -v nsenter > /dev/null || skip "no nsenter (util-linux)"

make_root "$tmp/root"
# the demo service leaks about 6 MiB/s in cache_store (demo.c:25)
start_container "$tmp/root" demo.out "$TARGETS/demo" 60
pid=$ct_pid

# debug CMD ARGS...: run CMD in the debugging container, stdout to out,
# stderr to err; its exit status in $status
debug() {
	nsenter --target "$pid" --pid -- unshare --mount --fork sh -c \
		'mount -t proc proc /proc && exec "$@"' sh "$@" > out 2> err
	status=$?
}

debug "$MEMWATCH" snap -p 1 -w 2s -o d.snap
[ "$status" -eq 0 ] || { cat err >&2; fail "snap in the debugging container: exit status $status"; }
expect_grep "^memwatch: pid 1: agent attached \(thread 1 paused [0-9.]+ ms\)" err
expect_grep "^pid 1: .* live \(estimated\) in [0-9]+ stacks" out
ct_tmp_list "$pid" > tmp.list
[ ! -s tmp.list ] || fail "the agent's copy was left in the container's /tmp: $(cat tmp.list)"
run_mw 0 show d.snap
expect_grep "cache_store +demo\.c:25" out

debug "$MEMWATCH" -p 1 -i 250ms -d 6s -q --trigger +16MiB --snap-every +16MiB -o dbg.log
[ "$status" -eq 0 ] || { cat err >&2; fail "watch in the debugging container: exit status $status"; }
expect_grep "^# event [0-9.]+ 1 trigger rss=[0-9]+" dbg.log
expect_grep "^# event [0-9.]+ 1 attach pause_ms=[0-9.]+ .* reused=1" dbg.log
expect_grep "^# event [0-9.]+ 1 snapshot path=dbg\.1\.1\.snap" dbg.log
expect_grep "cache_store +demo\.c:25" out
final=$(ls dbg.1.*-final.snap 2> /dev/null)
[ -n "$final" ] || fail "no final snapshot"
run_mw 0 diff dbg.1.1.snap "$final"
expect_grep "cache_store +demo\.c:25" out

kill -0 "$pid" 2> /dev/null || fail "the container's process died"
finish
