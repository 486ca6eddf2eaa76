#!/bin/sh
# run-report-mappings.sh: every snapshot records where the RSS is, by kind of
# mapping (/proc/PID/smaps), and a report says where growth that malloc did not
# make went: a program's own mmap'd arena, thread stacks, a mapped file. The
# target grows by 96 MiB one of those ways; memwatch -p triggers, captures, and
# its report must name the kind (and the file). A program growing through its
# own sbrk is explained by its stacks, of the kind brk.
. "$top_srcdir/tests/lib.sh"

need_ptrace
SNAPDUMP="$top_builddir/tests/tools/snapdump"

# watch_mode MODE KIND: grow_maps MODE grows; the report says KIND grew.
watch_mode() {
	mode=$1 kind=$2
	TMPDIR=$tmp "$TARGETS/grow_maps" "$mode" 96 10 > "$mode.out" &
	t=$!
	started_pids="$started_pids $t"
	wait_until "grep -q ready $mode.out" 10 || return 0
	run_mw 0 -p "$t" -i 200ms -d 7s -q --trigger +16MiB -o "$mode.log"
	expect_grep "^  unexplained: sampled stacks explain only [0-9] % of the RSS growth" out
	expect_grep "^    [0-9.]+ MiB of it is in $kind" out
	expect_grep "^resident memory by mapping$" out
	# the kind's own line: grown by tens of MiB
	expect_grep "^  $kind +[0-9.]+ [KM]iB -> +[0-9.]+ MiB  \+[3-9][0-9](\.[0-9])? MiB$" out
	kill -0 "$t" 2>/dev/null || fail "grow_maps $mode died"
	kill "$t" 2>/dev/null
	wait "$t" 2>/dev/null
}

watch_mode arena "anonymous mappings"
expect_grep "^    [0-9.]+ MiB of it is in anonymous mappings outside malloc" out
watch_mode threads "thread stacks"
watch_mode file "files"
expect_grep "^    grow_maps\.[0-9]+\.data \(deleted\) +[0-9.]+ [KM]iB -> +[0-9.]+ MiB  \+[0-9.]+ MiB$" out

# its own sbrk, after capture started: sampled, at brk_alloc, as [brk]
TMPDIR=$tmp "$TARGETS/grow_maps" brk 96 10 > brk.out &
t=$!
started_pids="$started_pids $t"
if wait_until "grep -q ready brk.out" 10; then
	run_mw 0 -p "$t" -i 200ms -d 7s -q --trigger +16MiB -o brk.log
	expect_grep "^  sampled stacks explain ([7-9][0-9]|1[0-9][0-9]) % of the RSS growth" out
	expect_no_grep "unexplained" out
	expect_grep "^   1 +\+[0-9.]+ MiB .* brk_alloc  grow_maps\.c:[0-9]+ \[brk\]$" out
	kill -0 "$t" 2>/dev/null || fail "grow_maps brk died"
	kill "$t" 2>/dev/null
	wait "$t" 2>/dev/null
fi

# the breakdown is in the snapshot itself: show prints it, snapdump reads it
snap=$(sed -n 's/^# event [0-9.]* [0-9]* snapshot path=\([^ ]*final\.snap\).*/\1/p' file.log)
[ -n "$snap" ] && [ -s "$snap" ] || fail "no final snapshot in file.log"
if [ -n "$snap" ]; then
	run_mw 0 show --details "$snap"
	expect_grep "^resident memory by mapping +resident +anonymous +swap +mappings$" out
	expect_grep "^  files +[0-9.]+ MiB " out
	expect_grep "^  thread stacks " out
	"$SNAPDUMP" "$snap" > dump.txt || fail "snapdump $snap"
	expect_grep '^region kind=6 .* name=".*grow_maps\.[0-9]+\.data \(deleted\)"$' dump.txt
	run_mw 0 show -F json "$snap"
	expect_grep '"regions": \[\{"kind": ' out
fi
finish
