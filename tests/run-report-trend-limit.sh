#!/bin/sh
# run-report-trend-limit.sh: in a memory cgroup (v1) with a limit, the leak
# row of memwatch diff RUN.log says when the cgroup reaches its limit at the
# leak's slope: within 25 % of the time the program's own allocation rate
# gives from the cgroup's usage the report names. The header has the time at
# the slope of the RSS. The cgroup is made by the test and removed at its end;
# without the memory controller of cgroup v1 (or the right to make a cgroup in
# it) the test is skipped.
. "$top_srcdir/tests/lib.sh"

memcg_v1 memwatch-trend
limit=$((2 << 30))
echo "$limit" > "$cg/memory.limit_in_bytes" || skip "cannot set a memory cgroup's limit"

# memwatch and the program in the cgroup; 36 steps of 250 ms, the leak 4 MiB
# a step (about 16 MiB/s: some 300 samples at the default rate, so that the
# slope's sampling error is well under the 25 %)
sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
	"$MEMWATCH" run -q --capture now -i 200ms --snap-every 1s --max-snaps 30 -o lim.log \
	-- "$TARGETS/trend_shapes" 36 250 4 > run.out 2> run.err
status=$?
[ "$status" -eq 0 ] || { fail "memwatch run exited $status"; sed 's/^/  | /' run.err >&2; }
expect_grep '^ok$' run.out
expect_grep '^leaked [0-9]+ in [0-9.]+$' run.out

run_mw 0 diff -F json -n 0 lim.log
cp out lim.json
expect_grep "\"cgroup\": \\{\"usage_bytes\": [0-9]+, \"limit_bytes\": $limit, \"seconds_to_limit\": [0-9.]+\\}" lim.json
# the leak's row: the time the program's own rate gives from the usage named
awk -v limit="$limit" '
	FNR == NR { if ($1 == "leaked") rate = $2 / $4; next }
	/"cgroup": \{/ { u = $0; sub(/.*"usage_bytes": /, "", u); sub(/,.*/, "", u); usage = u + 0 }
	/"verdict": "leak\?"/ { t = $0; sub(/.*"seconds_to_limit": /, "", t); sub(/,.*/, "", t); got = t; n++ }
	END {
		if (n != 1 || got == "null") { print "no leak? row with a time to the limit (" n " leak? rows)"; exit 1 }
		want = (limit - usage) / rate; got += 0
		printf "leak row %.1f s, the program'"'"'s rate gives %.1f s (%.0f B/s, usage %.0f B)\n", got, want, rate, usage
		exit !(got >= 0.75 * want && got <= 1.25 * want)
	}' run.out lim.json > cmp.out || fail "the time to the limit: $(cat cmp.out)"
cat cmp.out >&2

# the table: the header's time at the RSS's slope, the row's time
run_mw 0 diff --verdict leak lim.log
expect_grep '; cgroup [0-9.]+ [KMG]iB of 2\.00 GiB: the limit in [0-9.]+ (s|min|h) at the RSS.s slope$' out
expect_grep 'to limit  status  where$' out
expect_grep ' leak\? +100% .* [0-9.]+ (s|min)  +(new|grown) +get ' out
finish
