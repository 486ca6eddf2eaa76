#!/bin/sh
# run-agent-cxx.sh: C++ new, new[], delete and std::vector go through the
# allocator's slots in libstdc++ and are recorded exactly at rate 1.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_cxx
[ -x "$T" ] || skip "no C++ compiler: $T not built"
fn() {
	nm --defined-only "$T" | awk -v f="$1" '$3 ~ f { print $3; exit }'
}
start_agent_target c capture=now,rate=1 "$T"
p=$target_pid
wait_ready c 1
take_snap "$p" c1.snap
expect_eq "make_objs live bytes" "$(site live_bytes c1.snap "$T" "$(fn make_objs)")" 400000
expect_eq "make_objs live blocks" "$(site live_blocks c1.snap "$T" "$(fn make_objs)")" 100
expect_eq "make_vector live bytes" "$(site live_bytes c1.snap "$T" "$(fn make_vector)")" $((1000000 + 24))
expect_eq "make_arrays live bytes" "$(site live_bytes c1.snap "$T" "$(fn make_arrays)")" 50000
step c
wait_ready c 2
take_snap "$p" c2.snap
for f in make_objs make_vector make_arrays; do
	expect_eq "$f live bytes after delete" "$(site live_bytes c2.snap "$T" "$(fn $f)")" 0
done
step c
expect_target_exit "$p" c
finish
