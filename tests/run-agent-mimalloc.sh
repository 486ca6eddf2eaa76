#!/bin/sh
# run-agent-mimalloc.sh: a program that calls mimalloc's own API (mi_malloc,
# mi_zalloc, mi_realloc, mi_strdup, mi_malloc_aligned, mi_free) directly, under
# the agent: each is sampled as malloc is (exact at rate 1: what it keeps is
# live at its function, what it frees is not), and its function heads the row.
# mimalloc's segments (aligned, with PROT_NONE parts) are anonymous mappings:
# not thread stacks, not glibc's malloc arenas. The same program on glibc's
# malloc has its threads' blocks in malloc arenas. Built here with Debian's
# libmimalloc-dev.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

[ -f "$MEMWATCH_AGENT" ] || skip "the agent is not built ($MEMWATCH_AGENT)"
CC=${CC:-cc}
src="$top_srcdir/tests/targets/agent_mimalloc.c"
[ -f /usr/include/mimalloc.h ] || skip "mimalloc is not installed (Debian package libmimalloc-dev)"
"$CC" -O2 -g -fno-omit-frame-pointer -pthread -o agent_mimalloc "$src" -lmimalloc ||
	skip "$CC cannot build agent_mimalloc.c with -lmimalloc"
"$CC" -O2 -g -fno-omit-frame-pointer -pthread -DWITH_GLIBC -o agent_glibc "$src" ||
	fail "$CC cannot build agent_mimalloc.c with glibc's malloc"
unset DEBUGINFOD_URLS
L_keep=$(grep -n "LINE:keep" "$src" | cut -d: -f1)

# snap_of PROGRAM SNAP: start PROGRAM under the agent, snapshot it when ready
snap_of() {
	rm -f target.out
	LD_PRELOAD="$MEMWATCH_AGENT" MEMWATCH_AGENT_OPTIONS=capture=now,rate=1 \
		start_target "./$1" >target.out
	wait_until "grep -q ready target.out" 30 || return 0
	take_snap "$target_pid" "$2"
	kill "$target_pid"
	wait "$target_pid" 2>/dev/null
}

snap_of agent_mimalloc mi.snap
expect_eq "keep_records live bytes" "$(site live_bytes mi.snap agent_mimalloc keep_records)" \
	$((4 * 800 * 32768))
expect_eq "keep_aligned live bytes" "$(site live_bytes mi.snap agent_mimalloc keep_aligned)" \
	$((100 * 4096))
expect_eq "churn live bytes" "$(site live_bytes mi.snap agent_mimalloc churn)" 0
# mi_zalloc's 32 KiB, mi_realloc's 64 KiB and mi_strdup's 15 bytes, 2000 times
expect_eq "churn allocated bytes" "$(site alloc_bytes mi.snap agent_mimalloc churn)" \
	$((2000 * (32768 + 65536 + 15)))
run_mw 0 show --details mi.snap
expect_grep "^ +1 +100 MiB .* 3200 +3200   keep_records  agent_mimalloc\.c:$L_keep$" out
# the segments are anonymous memory; the stacks are the five threads' own
expect_grep "^  anonymous mappings +1[0-9][0-9](\.[0-9])? MiB " out
expect_no_grep "malloc arenas" out
expect_grep "^  thread stacks +[0-9.]+ KiB " out

# glibc's malloc: the threads' blocks in its arenas, told by their header
snap_of agent_glibc glibc.snap
run_mw 0 show --details glibc.snap
expect_grep "^ +1 +100 MiB .* 3200 +3200   keep_records  agent_mimalloc\.c:$L_keep$" out
expect_grep "^  malloc arenas +(9[0-9]|1[0-9][0-9])(\.[0-9]+)? MiB " out
expect_grep "^  thread stacks +[0-9.]+ KiB " out
finish
