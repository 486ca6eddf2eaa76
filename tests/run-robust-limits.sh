#!/bin/sh
# run-robust-limits.sh: a target with more distinct stacks (16384, each call
# path chosen by the bits of a number) than --max-stacks 1000 lets the agent
# keep: the snapshot keeps at most 1000 and counts the others as dropped, with
# their bytes; memwatch snap, show (table and JSON) say so; the snapshot stays
# small and the target's memory bounded.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"

# every allocation recorded (-r 1), so every one of the 16384 stacks is met
run_mw 0 run -r 1 --max-stacks 1000 -i 100ms -d 2s -q -o lim.log -- "$robust" stacks 16384 3
pid=$(sed -n 's/^# process: \([0-9]*\) .*/\1/p' lim.log)
[ -n "$pid" ] && started_pids="$started_pids $pid"
expect_grep '^ready$' out
expect_grep "^# event [0-9.]+ $pid snapshot path=lim\.$pid\.[0-9]+-final\.snap .*stacks=(1000|[1-9][0-9]{0,2}) final=1" lim.log
snap=$(ls lim.*-final.snap 2>/dev/null | head -n 1)
[ -n "$snap" ] || { fail "no final snapshot"; finish; }
snaps_complete "limits" "$snap"
# the end-of-run report says how many stacks were left out
expect_grep "; [0-9]+ stacks dropped \([0-9.]+ [KM]iB\)$" out
expect_grep "\([0-9]+ samples in [0-9]+ stacks\)" out

run_mw 0 show "$snap"
expect_grep "[0-9]+ stacks dropped" out
dropped=$(sed -n 's/.* \([0-9][0-9]*\) stacks dropped.*/\1/p' out | head -n 1)
[ "${dropped:-0}" -ge 15000 ] || fail "show: $dropped stacks dropped, expected more than 15000"
run_mw 0 show -F json "$snap"
expect_grep '"stacks": (1000|[1-9][0-9]{0,2}), "dropped_stacks": [0-9]{5}, "dropped_bytes": [1-9][0-9]*' out

# bounded: 16384 stacks of ~30 frames would be over 1 MiB of snapshot
size=$(wc -c <"$snap")
[ "$size" -lt 400000 ] || fail "the snapshot of 1000 stacks is $size bytes"
rss=$("$snapdump" "$snap" | sed -n 's/^rss_bytes \([0-9]*\)$/\1/p')
[ -n "$rss" ] && [ "$rss" -gt $((64 << 20)) ] && fail "the target's RSS was $rss bytes"

# an agent started with the limit answers memwatch snap the same way
"$MEMWATCH" run -r 1 --max-stacks 1000 -i 100ms -q -o lim2.log -- "$robust" stacks 16384 20 >out2 2>err2 &
mw=$!
started_pids="$started_pids $mw"
wait_until "grep -q '^ready' out2" 20
pid=$(sed -n 's/^# process: \([0-9]*\) .*/\1/p' lim2.log)
[ -n "$pid" ] && started_pids="$started_pids $pid"
run_mw 0 snap --wait 0 -p "$pid" -o now.snap
expect_grep "in (1000|[1-9][0-9]{0,2}) stacks, .*\(some stacks dropped: over the stack limit\)" out
snaps_complete "snap" now.snap
kill -TERM "$mw"
wait "$mw"
no_temp_files "limits"
finish
