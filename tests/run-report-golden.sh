#!/bin/sh
# run-report-golden.sh: the committed snapshots (tests/data/report_*.snap, of a
# committed stripped binary whose debug file is found by build-id under
# tests/data/debug) give exactly the committed reports, so the output formats
# stay pinned. tests/data/report-fixtures.sh says how all of it was made.
. "$top_srcdir/tests/lib.sh"
need_snapdump

data="$top_srcdir/tests/data"
unset DEBUGINFOD_URLS
cp "$data/report_a.snap" "$data/report_b.snap" .
dd="$data/debug"

# check NAME ARGS...: memwatch ARGS must print tests/data/NAME.expected exactly,
# and nothing on stderr, or the one line want_err matches when set
check() {
	name=$1
	shift
	run_mw 0 "$@"
	if ! cmp -s out "$data/$name.expected"; then
		fail "memwatch $* differs from $name.expected:"
		diff -u "$data/$name.expected" out | head -n 40 >&2
	fi
	if [ -n "$want_err" ]; then
		expect_err_line "$want_err"
	elif [ -s err ]; then
		fail "memwatch $* wrote to stderr: $(cat err)"
	fi
}
want_err=

check report_show show -D "$dd" report_a.snap
check report_show_details show --details -D "$dd" report_a.snap
# without its debug file the binary has no symbols: the report says so
want_err="warning: no symbols for report_golden: /tmp/memwatch-golden/report_golden is not here, nor a debug file with build-id 16d7aad18282e804e586e41de5b292629ae26eae, and the snapshot does not carry them$"
check report_show_nodebug show report_a.snap
want_err=
check report_show_json show -D "$dd" -F json report_a.snap
check report_show_folded_line show -D "$dd" -F folded --by line report_a.snap
check report_diff diff -D "$dd" report_a.snap report_b.snap
check report_diff_details diff --details -D "$dd" report_a.snap report_b.snap
check report_diff_json diff -D "$dd" -F json report_a.snap report_b.snap
check report_diff_folded diff -D "$dd" -F folded report_a.snap report_b.snap
check report_diff_function diff -D "$dd" --by function --depth 1 report_a.snap report_b.snap

# the trend of a run (three snapshots or more of one process): the committed
# snapshots as one process's, a minute apart, a then b then b then a
t0=1795306620729544986
as_run() {
	"$SNAPDUMP" "$1" > "$3.txt" || { fail "snapdump $1"; return; }
	sed -i "s/^pid .*/pid 635/; s/^time_ns .*/time_ns $2/" "$3.txt"
	"$SNAPDUMP" --from-text "$3.txt" "$3" || fail "snapdump --from-text $3.txt"
}
as_run report_a.snap "$t0" s1.snap
as_run report_b.snap $((t0 + 60000000000)) s2.snap
as_run report_b.snap $((t0 + 120000000000)) s3.snap
as_run report_a.snap $((t0 + 180000000000)) s4.snap
check report_trend diff -D "$dd" s1.snap s2.snap s3.snap s4.snap
check report_trend_json diff -D "$dd" -F json s1.snap s2.snap s3.snap s4.snap
check report_trend_steady diff -D "$dd" --verdict steady --depth 1 s1.snap s2.snap s3.snap

# the same through -o, and a relative --debug-dir
cp -r "$dd" ./debug
run_mw 0 diff --debug-dir debug -o d.txt report_a.snap report_b.snap
cmp -s d.txt "$data/report_diff.expected" || fail "diff -o d.txt differs from report_diff.expected"
finish
