#!/bin/sh
# run-report-alloc.sh: the allocation volume of a real run. A function whose
# blocks are all freed at once (churn_temp) leads show --sample alloc and
# --sample temp and go tool pprof -sample_index=alloc_space; one whose blocks
# are held 150 ms (churn_slow) is allocated but not temporary; the live heap
# is only what is kept (hold_some). The snapshot carries the temporary
# figures; --sample goes to json, folded and diff too.
. "$top_srcdir/tests/lib.sh"

"$MEMWATCH" run -q -r 64KiB --no-report -o churn.log -- "$TARGETS/alloc_churn" > out 2> err
status=$?
[ "$status" -eq 0 ] || { fail "memwatch run exited $status"; cat err >&2; }
expect_grep '^ok$' out
snap=$(ls churn.*-exit.snap 2>/dev/null)
[ -s "$snap" ] || { fail "no snapshot at exit"; finish; }

# the first row of a table, and its bytes in MiB
first() { awk '/^ +# +bytes/ { on = 1; next } on && /^ +1 / { print; exit }' out; }
mib() { first | awk '{ v = $2; u = $3; if (u == "KiB") v /= 1024; else if (u == "GiB") v *= 1024; else if (u != "MiB") v = 0; printf "%d\n", v }'; }

# the live heap: only what is kept, 8 MiB
run_mw 0 show "$snap"
first | grep -q 'hold_some' || fail "show: the first row is not hold_some: $(first)"
expect_no_grep 'churn_' out

# allocated in all: churn_temp's 256 MiB first, churn_slow's 16 MiB too
run_mw 0 show --sample alloc "$snap"
expect_grep '^allocated by call stack' out
expect_grep 'allocated [0-9.]+ MiB in [0-9]+ blocks since capture start; temporary [0-9.]+ MiB' out
first | grep -Eq 'churn_temp +alloc_churn\.c:17' || fail "--sample alloc: the first row is not churn_temp: $(first)"
expect_range "churn_temp's allocated MiB" "$(mib)" 230 282
expect_grep 'churn_slow +alloc_churn\.c:3[0-9]' out
expect_grep 'hold_some' out

# temporary: churn_temp only; churn_slow's blocks lived 150 ms
run_mw 0 show --sample temp "$snap"
expect_grep '^temporary by call stack' out
first | grep -q 'churn_temp' || fail "--sample temp: the first row is not churn_temp: $(first)"
expect_range "churn_temp's temporary MiB" "$(mib)" 230 282
expect_no_grep 'churn_slow' out
expect_no_grep 'hold_some' out

# json and folded follow --sample
run_mw 0 show --sample alloc -F json "$snap"
expect_grep '"sample": "alloc"' out
expect_grep '"temp_bytes": [1-9][0-9]*' out
run_mw 0 show --sample temp -F folded "$snap"
expect_grep 'churn_temp [0-9]+$' out
expect_no_grep 'hold_some' out

# a diff of the snapshot with itself allocated nothing between
run_mw 0 diff --sample alloc "$snap" "$snap"
expect_grep '^allocated between the snapshots by call stack' out
expect_grep '\(nothing grew\)|\(no sampled stack grew\)' out

run_mw 2 show --sample peak "$snap"
expect_err_line "show: invalid --sample 'peak' \(live, alloc or temp\)"

# go tool pprof: -sample_index=alloc_space names churn_temp first; with
# --sample alloc that is the profile's default type
if command -v go >/dev/null 2>&1; then
	export HOME="$tmp" GOCACHE="$tmp/gocache" GOPATH="$tmp/go" PPROF_TMPDIR="$tmp/pprof"
	unset DEBUGINFOD_URLS GOFLAGS
	run_mw 0 show -F pprof -o churn.pb.gz "$snap"
	go tool pprof -sample_index=alloc_space -top churn.pb.gz > top.out 2> top.err ||
		fail "go tool pprof -sample_index=alloc_space -top: exit status $?"
	awk '/flat%/ { on = 1; next } on { print; exit }' top.out > top1
	grep -q ' churn_temp$' top1 || { fail "pprof alloc_space: the first function is not churn_temp"; sed 's/^/  | /' top.out >&2; }
	expect_grep 'Type: alloc_space' top.out
	go tool pprof -top churn.pb.gz > top.out 2> top.err || fail "go tool pprof -top: exit status $?"
	expect_grep 'Type: inuse_space' top.out
	expect_no_grep 'churn_temp' top.out
	run_mw 0 show --sample alloc -F pprof -o alloc.pb.gz "$snap"
	go tool pprof -top alloc.pb.gz > top.out 2> top.err || fail "go tool pprof -top: exit status $?"
	expect_grep 'Type: alloc_space' top.out
	awk '/flat%/ { on = 1; next } on { print; exit }' top.out > top1
	grep -q ' churn_temp$' top1 || fail "pprof of --sample alloc: the first function is not churn_temp"
else
	echo "go is not installed: go tool pprof not run" >&2
fi
finish
