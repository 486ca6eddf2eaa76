#!/bin/sh
# run-report-trend.sh: a program with four allocation sites of four shapes (a
# steady leak, a cache that fills in the first third and stops, a batch that
# grows and is freed, a ring replaced in a steady state) is run at the default
# sample rate with a snapshot every second: the report at its end and memwatch
# diff of its run log give each row its verdict (leak?, plateau, burst,
# steady), the steady one is not under --verdict leak, and the JSON carries
# every point and its error. Then the errors: snapshots of two processes, in
# the wrong order, a malformed one.
. "$top_srcdir/tests/lib.sh"

# 36 steps of 250 ms: about 9 s, 9 or more snapshots
"$MEMWATCH" run -q --capture now -i 200ms --snap-every 1s --max-snaps 30 -o shapes.log \
	-- "$TARGETS/trend_shapes" 36 250 > run.out 2> run.err
status=$?
[ "$status" -eq 0 ] || { fail "memwatch run exited $status"; sed 's/^/  | /' run.err >&2; }
expect_grep '^ok$' run.out
nsnaps=$(grep -c '^# event [0-9.]* [0-9]* snapshot ' shapes.log)
[ "$nsnaps" -ge 6 ] || fail "the run took $nsnaps snapshots, expected 6 or more"

# verdicts SITE...: the verdict of the row of each site in the JSON report
# "out" ('-' when it has none), one per line
verdicts() {
	for site in "$@"; do
		awk -v site="$site" '/"verdict": "/ { v = $0; sub(/.*"verdict": "/, "", v); sub(/".*/, "", v) }
			$0 ~ "\"function\": \"" site "\"" && v != "" { print v; found = 1; exit }
			END { if (!found) print "-" }' out
	done
}

# the report at the end of the run: the trend, each row with its verdict
expect_grep 'snapshots; growth between [^ ]+\.1\.snap and [^ ]+\.snap:$' run.out
expect_grep '^trend of [0-9]+ snapshots over ' run.out
awk '/^trend of [0-9]+ snapshots over / { on = 1 } on && /^ +[0-9]+ / { v = $0; next }
	on && v && /^ +(leak_steady|cache_fill|batch_grow|steady_ring) / { print $1, v; v = "" }' run.out > end.rows
for want in 'leak_steady .* leak\? ' 'cache_fill .* plateau ' 'batch_grow .* burst ' 'steady_ring .* steady '; do
	expect_grep "^$want" end.rows
done

# memwatch diff of the run log, as JSON
run_mw 0 diff -F json -n 0 shapes.log
cp out all.json
[ "$(verdicts leak_steady cache_fill batch_grow steady_ring | tr '\n' ' ')" = "leak? plateau burst steady " ] ||
	fail "verdicts of leak_steady cache_fill batch_grow steady_ring: $(verdicts leak_steady cache_fill batch_grow steady_ring | tr '\n' ' '), expected leak? plateau burst steady"
# every row has a point and its error at every snapshot
awk -v n="$nsnaps" '/"bytes": \[/ { b = $0; sub(/.*"bytes": \[/, "", b); sub(/\].*/, "", b)
		s = $0; sub(/.*"sd": \[/, "", s); sub(/\].*/, "", s)
		if (split(b, x, ", ") != n || split(s, y, ", ") != n) bad = 1; rows++ }
	END { exit bad || rows < 4 }' all.json || fail "rows without $nsnaps points and their errors"
expect_grep '"slope_bytes_per_min": [0-9]' all.json
# the leak grew in (nearly) every interval: each one when the machine is idle,
# all but one or two when the target misses a step between two snapshots
awk '/"verdict": "leak\?"/ { s = $0; sub(/.*"grown_share": /, "", s); sub(/,.*/, "", s)
		s += 0; exit !(s >= 0.75) }' all.json ||
	fail "the leak's grown share is under 0.75: $(grep '"verdict": "leak?"' all.json)"
# the leak grows by 4 MiB/s (1 MiB a step of 250 ms, slower when the machine
# is loaded): its slope is within a factor of 2 below and 1.6 above the rate
# the target says it leaked at ("leaked BYTES in SECONDS"). (The slope is a
# fit of sampled sizes, about 80 samples of 512 KiB here, at times a loaded
# machine may take a snapshot late at: 1.3 times the rate was seen under ASan
# at a load of 19.)
rate=$(awk '/^leaked [0-9]+ in [0-9.]+$/ && $4 > 0 { printf "%.0f", $2 / $4 * 60 }' run.out)
if [ -n "$rate" ]; then
	awk -v r="$rate" '/"verdict": "leak\?"/ { s = $0; sub(/.*"slope_bytes_per_min": /, "", s); sub(/,.*/, "", s)
			s += 0; exit !(s > r / 2 && s < r * 1.6) }' all.json ||
		fail "the leak's slope is not within 0.5 and 1.6 times the $rate bytes/min it leaked at: $(grep '"verdict": "leak?"' all.json)"
else
	fail "the target did not say how much it leaked: $(cat run.out)"
fi

# --verdict leak: the leak only
run_mw 0 diff -F json --verdict leak shapes.log
[ "$(verdicts leak_steady steady_ring cache_fill batch_grow | tr '\n' ' ')" = "leak? - - - " ] ||
	fail "--verdict leak lists $(verdicts leak_steady steady_ring cache_fill batch_grow | tr '\n' ' ')"
run_mw 0 diff --verdict steady shapes.log
expect_grep 'steady_ring ' out
expect_no_grep 'leak_steady ' out
expect_grep '^[0-9]+ leak\?, [0-9]+ plateau, [0-9]+ burst, [0-9]+ steady, ' out

# the snapshots themselves, in the log's order: the same trend; two of them:
# the two-snapshot diff as before
awk '/^# event [0-9.]* [0-9]* snapshot / { for (i = 1; i <= NF; i++) if ($i ~ /^path=/) print substr($i, 6) }' shapes.log > snaps
set -- $(cat snaps)
run_mw 0 diff -F json -n 0 "$@"
[ "$(verdicts leak_steady cache_fill batch_grow steady_ring | tr '\n' ' ')" = "leak? plateau burst steady " ] ||
	fail "the snapshots given one by one: $(verdicts leak_steady cache_fill batch_grow steady_ring | tr '\n' ' ')"
first=$1
shift $(($# - 1))
last=$1
run_mw 0 diff "$first" "$last"
expect_grep '^before ' out
expect_no_grep 'verdict' out

# errors: one line each, with its exit status
set -- $(cat snaps)
run_mw 2 diff "$3" "$2" "$1"
expect_err_line "diff: '$2' was taken [0-9.]+ s before '$3': give the snapshots in time order$"
cp "$top_srcdir/tests/data/report_a.snap" other.snap
run_mw 3 diff "$1" "$2" other.snap
expect_err_line "diff: '$1' is of pid [0-9]+ and 'other.snap' of pid [0-9]+: the snapshots of a trend are of one process$"
head -c 100 "$2" > cut.snap
run_mw 3 diff "$1" cut.snap "$3"
expect_err_line "cut.snap"
run_mw 2 diff --verdict leak "$1" "$2"
expect_err_line "diff: --verdict takes three snapshots or more, or a run log"
run_mw 2 diff --verdict maybe shapes.log
expect_err_line "diff: invalid --verdict 'maybe'"
# a log that names the snapshots of two processes
cp shapes.log two.log
echo "# event 9.900 1 snapshot path=other.snap live=1 stacks=1" >> two.log
run_mw 2 diff two.log
expect_err_line "diff: 'two.log' names the snapshots of more than one process \\([0-9]+, 1\\): give the snapshots of one$"
run_mw 2 diff --sample alloc shapes.log
expect_err_line "diff: a trend of [0-9]+ snapshots is of the live heap \\(--sample alloc takes two snapshots\\)$"
run_mw 2 diff -F svg shapes.log
expect_err_line "diff: a trend of [0-9]+ snapshots is a table or json"
finish
