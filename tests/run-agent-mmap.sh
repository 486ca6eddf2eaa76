#!/bin/sh
# run-agent-mmap.sh: the program's own mmaps are sampled as the mmap kind (shared
# anonymous ones too; mappings of a file or a memfd
# as the file kind, its own brk/sbrk growth as the brk kind), by the
# length mapped: kept, partially unmapped, mremapped (grown, shrunk, moved, or
# grown from a mapping never seen), replaced by MAP_FIXED; mappings made by a
# raw system call are not counted, and malloc's own mmaps (glibc's, and
# jemalloc's) are counted once, as malloc.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_mmap
MIB=1048576

start_agent_target a capture=now,rate=1 "$T"
pa=$target_pid
wait_ready a 1
take_snap "$pa" a1.snap
expect_eq "keep_map live bytes" "$(site live_bytes a1.snap "$T" keep_map mmap)" $((8 * MIB))
expect_eq "keep_map live blocks" "$(site live_blocks a1.snap "$T" keep_map mmap)" 1
expect_eq "keep_map as malloc" "$(site live_bytes a1.snap "$T" keep_map malloc)" 0
expect_eq "part_map live bytes" "$(site live_bytes a1.snap "$T" part_map mmap)" $((6 * MIB))
expect_eq "part_map pieces" "$(site live_samples a1.snap "$T" part_map mmap)" 2
expect_eq "part_map allocated bytes" "$(site alloc_bytes a1.snap "$T" part_map mmap)" $((8 * MIB))
expect_eq "grow_map live bytes" "$(site live_bytes a1.snap "$T" grow_map mmap)" $((12 * MIB))
# the 4 MiB mapped, moved by the mremap, and the 8 MiB it added
expect_eq "grow_map live samples" "$(site live_samples a1.snap "$T" grow_map mmap)" 2
expect_eq "fixed_map live bytes" "$(site live_bytes a1.snap "$T" fixed_map mmap)" $((4 * MIB))
expect_eq "file_map live bytes" "$(site live_bytes a1.snap "$T" file_map file)" $MIB
expect_eq "file_map as mmap" "$(site live_bytes a1.snap "$T" file_map mmap)" 0
expect_eq "memfd_map live bytes" "$(site live_bytes a1.snap "$T" memfd_map file)" $MIB
expect_eq "raw_map live bytes" "$(site live_bytes a1.snap "$T" raw_map)" 0
expect_eq "shrink_map live bytes" "$(site live_bytes a1.snap "$T" shrink_map mmap)" $((3 * MIB))
expect_eq "shrink_map allocated bytes" "$(site alloc_bytes a1.snap "$T" shrink_map mmap)" $((8 * MIB))
expect_eq "move_map live bytes" "$(site live_bytes a1.snap "$T" move_map mmap)" $((4 * MIB))
expect_eq "unseen_grow live bytes" "$(site live_bytes a1.snap "$T" unseen_grow mmap)" $((4 * MIB))
expect_eq "sbrk_grow live bytes" "$(site live_bytes a1.snap "$T" sbrk_grow brk)" $((2 * MIB))
expect_eq "sbrk_grow allocated bytes" "$(site alloc_bytes a1.snap "$T" sbrk_grow brk)" $((3 * MIB))
expect_eq "brk_grow live bytes" "$(site live_bytes a1.snap "$T" brk_grow brk)" $MIB
expect_eq "big_malloc live bytes" "$(site live_bytes a1.snap "$T" big_malloc)" $MIB
expect_eq "big_malloc as malloc" "$(site live_bytes a1.snap "$T" big_malloc malloc)" $MIB
expect_eq "big_realloc as malloc" "$(site live_bytes a1.snap "$T" big_realloc malloc)" $((4 * MIB))
# malloc's own mmaps and mremaps are never also mapping rows: every mapping
# row is one of the sites above
expect_eq "all mmap rows" "$(site live_bytes a1.snap "" "" mmap)" $((41 * MIB))
expect_eq "all file rows" "$(site live_bytes a1.snap "" "" file)" $((2 * MIB))
expect_eq "all brk rows" "$(site live_bytes a1.snap "" "" brk)" $((3 * MIB))

# Reports: the kind is shown after the head frame, and --kind filters.
run_mw 0 show -n 0 a1.snap
expect_grep "map_anon .*\\[mmap\\]" out; expect_grep "keep_map" out
expect_grep "big_malloc" out
expect_no_grep "big_malloc.*\\[mmap\\]" out
run_mw 0 show -n 0 --kind mmap a1.snap
expect_grep "map_anon .*\\[mmap\\]" out; expect_grep "keep_map" out
expect_no_grep "big_malloc" out
run_mw 0 show -n 0 --kind malloc a1.snap
expect_no_grep "keep_map" out
expect_grep "big_malloc" out
run_mw 2 show --kind heap a1.snap
expect_err_line "invalid --kind 'heap'"
run_mw 0 show -n 0 a1.snap
expect_grep "sbrk_grow .*\\[brk\\]" out; expect_grep "file_map .*\\[file\\]" out
# every format carries the kind and is filtered by it alike
run_mw 0 show -n 0 -F json --kind brk a1.snap
expect_grep '"kind": "brk"' out; expect_grep '"function": "sbrk_grow"' out
expect_no_grep '"kind": "(mmap|malloc|file)"' out; expect_no_grep 'keep_map' out
run_mw 0 show -n 0 -F json a1.snap
expect_grep '"kind": "file"' out; expect_grep '"kind": "malloc"' out
run_mw 0 diff -n 0 -F json --kind file a1.snap a1.snap
expect_no_grep '"kind": "(mmap|malloc|brk)"' out
run_mw 0 show -F folded --kind file a1.snap
expect_grep "file_map" out; expect_no_grep "keep_map|sbrk_grow|big_malloc" out
run_mw 0 show -F svg --kind brk a1.snap
expect_grep "sbrk_grow" out; expect_no_grep "keep_map|file_map|big_malloc" out
run_mw 0 show -F pprof --kind mmap -o a1.pb.gz a1.snap
run_mw 0 show -F pprof -o all.pb.gz a1.snap
if command -v go >/dev/null 2>&1; then
	export HOME="$tmp" GOCACHE="$tmp/gocache" GOPATH="$tmp/go" PPROF_TMPDIR="$tmp/pprof"
	unset DEBUGINFOD_URLS GOFLAGS
	if go tool pprof -tags a1.pb.gz >tags.out 2>tags.err; then
		expect_grep ' mmap$' tags.out; expect_no_grep ' (malloc|brk|file)$' tags.out
		go tool pprof -tags all.pb.gz >tags.out 2>tags.err || fail "go tool pprof -tags all.pb.gz"
		expect_grep ' brk$' tags.out; expect_grep ' file$' tags.out; expect_grep ' malloc$' tags.out
	else
		echo "note: go tool pprof does not run here: the pprof labels are not read" >&2
	fi
fi
step a
wait_ready a 2
take_snap "$pa" a2.snap
expect_eq "keep_map live bytes after munmap" "$(site live_bytes a2.snap "$T" keep_map)" 0
expect_eq "part_map live bytes after munmap" "$(site live_bytes a2.snap "$T" part_map)" 0
expect_eq "grow_map live bytes after munmap" "$(site live_bytes a2.snap "$T" grow_map)" 0
expect_eq "fixed_map live bytes after munmap" "$(site live_bytes a2.snap "$T" fixed_map)" 0
expect_eq "shrink_map live bytes after munmap" "$(site live_bytes a2.snap "$T" shrink_map)" 0
expect_eq "move_map live bytes after munmap" "$(site live_bytes a2.snap "$T" move_map)" 0
expect_eq "unseen_grow live bytes after munmap" "$(site live_bytes a2.snap "$T" unseen_grow)" 0
expect_eq "all mmap rows after munmap" "$(site live_bytes a2.snap "" "" mmap)" 0
expect_eq "all file rows after munmap" "$(site live_bytes a2.snap "" "" file)" 0
expect_eq "all brk rows, the break kept" "$(site live_bytes a2.snap "" "" brk)" $((3 * MIB))
expect_eq "keep_map allocated bytes" "$(site alloc_bytes a2.snap "$T" keep_map mmap)" $((8 * MIB))
run_mw 0 diff -n 0 --kind mmap a1.snap a2.snap
expect_grep "map_anon .*\\[mmap\\]" out; expect_grep "keep_map" out
expect_no_grep "big_malloc" out
step a
expect_target_exit "$pa" a

# With jemalloc preloaded (it maps its own chunks through its own slots, left
# alone as the allocator's): the same mapping rows, and its blocks as malloc.
J=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -f "$J" ]; then
	start_agent_after "$J" j capture=now,rate=1 "$T"
	pj=$target_pid
	wait_ready j 1
	take_snap "$pj" j1.snap
	expect_eq "jemalloc: all mmap rows" "$(site live_bytes j1.snap "" "" mmap)" $((41 * MIB))
	expect_grep '^module .*libjemalloc' j1.snap.txt
	expect_eq "jemalloc: all file rows" "$(site live_bytes j1.snap "" "" file)" $((2 * MIB))
	expect_eq "jemalloc: all brk rows" "$(site live_bytes j1.snap "" "" brk)" $((3 * MIB))
	expect_eq "jemalloc: big_malloc as malloc" "$(site live_bytes j1.snap "$T" big_malloc malloc)" $MIB
	expect_eq "jemalloc: big_realloc as malloc" "$(site live_bytes j1.snap "$T" big_realloc malloc)" $((4 * MIB))
	step j
	wait_ready j 2
	step j
	expect_target_exit "$pj" j
else
	echo "note: libjemalloc2 is not installed: the preloaded allocator case is not run" >&2
fi

# A program's own arena (grow_maps arena): its 1 GiB reserve is counted as
# mapped, at arena_alloc, its caller, as the mmap kind (gcc names its one
# specialised copy arena_alloc.constprop.0).
G=$TARGETS/grow_maps
start_agent_target g capture=now,rate=1 "$G" arena 4 60
pg=$target_pid
wait_until "grep -q '^grown' g.out" 60
take_snap "$pg" g.snap
expect_eq "arena_alloc live bytes" "$(site live_bytes g.snap "$G" arena_alloc.constprop.0 mmap)" 1073741824
expect_eq "arena_alloc as malloc" "$(site live_bytes g.snap "$G" arena_alloc.constprop.0 malloc)" 0
kill "$pg"
wait "$pg" 2>/dev/null
end_target g

# Capture off: the hooks pass every call through.
start_agent_target b capture=idle "$T"
pb=$target_pid
wait_ready b 1
step b
wait_ready b 2
step b
expect_target_exit "$pb" b
finish
