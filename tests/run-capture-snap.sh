#!/bin/sh
# run-capture-snap.sh: memwatch snap on a process with no agent attaches one,
# samples for --wait, writes the snapshot and stops capture; --embed-symbols
# makes it readable without the binaries; Ctrl-C while sampling writes nothing.
. "$top_srcdir/tests/lib.sh"

# a copy of the demo, deleted once the snapshot is taken
cp "$TARGETS/demo" ./demo-copy
./demo-copy 30 > demo.out &
demo=$!
started_pids="$started_pids $demo"
wait_libc "$demo"

run_mw 0 snap -p "$demo" -w 2s -E -o a.snap
expect_grep "^a\.snap$" out
expect_grep "^pid $demo: .* live \(estimated\) in [0-9]+ stacks" out
expect_grep "^memwatch: pid $demo: agent attached \(thread $demo paused [0-9.]+ ms\)" err
expect_grep "capture started now; sampling for 2\.0 s" err
[ -s a.snap ] || fail "no snapshot written"

# the symbols travel with the snapshot: the report needs neither the program
# nor its debug information
rm -f demo-copy
run_mw 0 show a.snap
expect_grep "cache_store +demo\.c:25" out

# capture stopped after the snapshot: a second snap starts it again (agent reused)
run_mw 0 snap -p "$demo" -w 1s -o b.snap
expect_no_grep "agent attached" err
expect_grep "capture started now" err

# an existing file is refused before any sampling
run_mw 1 snap -p "$demo" -o b.snap
expect_err_line "'b\.snap' exists \(use --force to overwrite\)"

# Ctrl-C while sampling: no file, status 130, capture stopped
"$MEMWATCH" snap -p "$demo" -w 30s -o c.snap > out 2> err &
mw=$!
wait_until "grep -q 'capture started now' err" 20
kill -INT "$mw"
wait "$mw"
st=$?
[ "$st" -eq 130 ] || fail "snap interrupted: exit status $st, expected 130"
[ ! -e c.snap ] || fail "an interrupted snap left c.snap"
ls c.snap.tmp.* > /dev/null 2>&1 && fail "an interrupted snap left a temporary file"

kill -0 "$demo" 2>/dev/null || fail "the demo died"
wait "$demo"
st=$?
[ "$st" -eq 0 ] || fail "the demo exited with status $st"
finish
