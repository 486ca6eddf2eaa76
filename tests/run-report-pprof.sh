#!/bin/sh
# run-report-pprof.sh: show and diff --format pprof read by the real consumer,
# go tool pprof (Debian's golang-go): the leaking function with its bytes in
# -top, its stack with the inlined frame in -traces, a diff's freed bytes as
# negative values, the mapping's build-id, the sampling period; exact figures
# from mksnap, estimates within the sampling error from the real agent; and
# the refusals (a terminal, --by).
. "$top_srcdir/tests/lib.sh"

MKSNAP="$top_builddir/tests/tools/mksnap"
[ -x "$MKSNAP" ] || skip "mksnap not built"
command -v go >/dev/null 2>&1 || skip "go is not installed (Debian package golang-go): go tool pprof reads the profiles"
# go needs a home and a build cache it can write, also as root in CI
export HOME="$tmp" GOCACHE="$tmp/gocache" GOPATH="$tmp/go" PPROF_TMPDIR="$tmp/pprof"
unset DEBUGINFOD_URLS GOFLAGS
go tool pprof -h >/dev/null 2>&1 || skip "go tool pprof does not run here"

# pprof FILE.out ARGS...: run go tool pprof, output to FILE.out; a failure or
# a complaint (a symbolization it tried, a malformed profile) fails
pprof() {
	local o=$1
	shift
	go tool pprof "$@" >"$o" 2>"$o.err" || fail "go tool pprof $*: exit status $?"
	[ -s "$o.err" ] && { fail "go tool pprof $* wrote to stderr:"; sed 's/^/  | /' "$o.err" >&2; }
	return 0
}
# is_gzip FILE: the file starts with the gzip magic
is_gzip() {
	[ "$(od -An -tx1 -N2 "$1" | tr -d ' ')" = 1f8b ] || fail "'$1' is not gzip"
}
# bytes_of FILE FUNCTION: the flat bytes of FUNCTION in a pprof -top -unit=B
bytes_of() {
	sed -n "s/^ *\(-\{0,1\}[0-9]*\)B .*  $2\( (inline)\)\{0,1\}\$/\1/p" "$1" | head -n 1
}
# within VALUE WANT PERCENT: VALUE is WANT within PERCENT %
within() {
	[ -n "$1" ] && [ "$1" -ge $(($2 - $2 * $3 / 100)) ] && [ "$1" -le $(($2 + $2 * $3 / 100)) ]
}

"$MKSNAP" -g 10 -s 5 -k 3 a.snap || fail "mksnap a.snap"
"$MKSNAP" -g 30 -s 5 -k 1 b.snap || fail "mksnap b.snap"
build_id=$(LC_ALL=C readelf -n "$MKSNAP" 2>/dev/null | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p')

# show: a gzipped profile that pprof reads; the leak and its exact bytes
run_mw 0 show --format pprof -o a.pb.gz a.snap
[ -s out ] && fail "-o also wrote to stdout"
[ -s err ] && fail "show wrote to stderr: $(cat err)"
is_gzip a.pb.gz
pprof top.txt -top -unit=B a.pb.gz
expect_grep '^Type: inuse_space$' top.txt
expect_grep '^ +40960B +[0-9.]+% +[0-9.]+% +40960B .*  leaky_helper \(inline\)$' top.txt
expect_grep '^ +10000B .*  calloc_site$' top.txt
expect_grep '^ +0 .* 40960B .*  grow_site$' top.txt
# allocator frames are trimmed as in the table
expect_no_grep '  (__libc_)?(malloc|calloc)$' top.txt
# the build-id of the main program, as readelf sees it
if [ -n "$build_id" ]; then
	expect_grep "^Build ID: $build_id\$" top.txt
fi
# the other sample types of a Go heap profile
pprof objs.txt -top -sample_index=inuse_objects a.pb.gz
expect_grep '^ +10 .*  leaky_helper \(inline\)$' objs.txt
pprof alloc.txt -top -unit=B -sample_index=alloc_space a.pb.gz
expect_grep '^ +40960B .*  leaky_helper \(inline\)$' alloc.txt
# the stack, innermost first: the inlined helper, its caller, main
pprof traces.txt -traces a.pb.gz
grep -A2 ' leaky_helper (inline)$' traces.txt > stack.txt
expect_grep '^ +grow_site$' stack.txt
expect_grep '^ +main$' stack.txt
# lines: the helper's own line and its caller's
L_helper=$(grep -n "LINE:helper " "$top_srcdir/tests/tools/mksnap.c" | cut -d: -f1)
pprof lines.txt -top -lines a.pb.gz
expect_grep "  leaky_helper (.*/)?mksnap\.c:$L_helper \(inline\)\$" lines.txt
# every allocation recorded: period 1
pprof raw.txt -raw a.pb.gz
expect_grep '^PeriodType: space bytes$' raw.txt
expect_grep '^Period: 1$' raw.txt

# to standard output when it is not a terminal
run_mw 0 show -F pprof a.snap
is_gzip out

# diff: the profile of the differences, freed bytes negative
run_mw 0 diff --format pprof -o d.pb.gz a.snap b.snap
is_gzip d.pb.gz
pprof dtop.txt -top -unit=B d.pb.gz
expect_grep '^ +81920B .*  leaky_helper \(inline\)$' dtop.txt
expect_grep '^ +-1024B .*  shrink_site$' dtop.txt
# unchanged stacks are not in the profile
expect_no_grep 'steady_site|calloc_site' dtop.txt
pprof dtraces.txt -traces -unit=B d.pb.gz
grep -A1 '^ *-1024B   shrink_site$' dtraces.txt > dstack.txt
expect_grep '^ +main$' dstack.txt
# the same as pprof's own -diff_base of the two show profiles
run_mw 0 show --format pprof -o b.pb.gz b.snap
pprof base.txt -top -unit=B -diff_base a.pb.gz b.pb.gz
expect_grep '^ +81920B .*  leaky_helper \(inline\)$' base.txt
expect_grep '^ +-1024B .*  shrink_site$' base.txt

# refusals: a terminal, --by
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
	script -qec "\"$MEMWATCH\" show -F pprof a.snap" /dev/null >tty.txt 2>&1
	status=$?
	[ "$status" -eq 2 ] || fail "pprof to a terminal: exit status $status, expected 2"
	expect_grep 'memwatch: show: --format pprof is binary and is not written to a terminal' tty.txt
	expect_no_grep "$(printf '\037')" tty.txt
	script -qec "\"$MEMWATCH\" diff -F pprof -o - a.snap b.snap" /dev/null >tty.txt 2>&1
	status=$?
	[ "$status" -eq 2 ] || fail "pprof to a terminal by -o -: exit status $status, expected 2"
	expect_grep 'memwatch: diff: --format pprof is binary' tty.txt
	script -qec "\"$MEMWATCH\" show -F pprof -o t.pb.gz a.snap" /dev/null >tty.txt 2>&1 ||
		fail "pprof -o from a terminal: exit status $?"
	is_gzip t.pb.gz
fi
run_mw 2 diff -F pprof --by function -o x.pb.gz a.snap b.snap
expect_err_line "diff: --by function does not apply to --format pprof"
[ -e x.pb.gz ] && fail "a refused report wrote its file"

# estimates of the real agent, sampled at 64 KiB: within the sampling error
if [ -f "$MEMWATCH_AGENT" ] && [ -x "$TARGETS/report_leaky" ]; then
	# 4096 blocks of 4 KiB, 16 MiB: about 256 samples, a standard error near 6 %
	LD_PRELOAD="$MEMWATCH_AGENT" MEMWATCH_AGENT_OPTIONS=capture=now,rate=65536 \
		start_target "$TARGETS/report_leaky" 4096 >target.out
	if wait_until "grep -q ready target.out" 60; then
		run_mw 0 snap -p "$target_pid" -o s1.snap
		kill -USR1 "$target_pid"
		wait_until "grep -q grown target.out" 60
		run_mw 0 snap -p "$target_pid" -o s2.snap
		run_mw 0 show -F pprof -o s1.pb.gz s1.snap
		pprof s1.txt -top -unit=B s1.pb.gz
		v=$(bytes_of s1.txt leaky_helper)
		within "$v" 16777216 35 || fail "show: leaky_helper has '$v' bytes, expected 16 MiB within 35 %"
		pprof s1raw.txt -raw s1.pb.gz
		expect_grep '^Period: 65536$' s1raw.txt
		run_mw 0 diff -F pprof -o s12.pb.gz s1.snap s2.snap
		pprof s12.txt -top -unit=B s12.pb.gz
		v=$(bytes_of s12.txt leaky_helper)
		within "$v" 16777216 35 || fail "diff: leaky_helper grew '$v' bytes, expected 16 MiB within 35 %"
	fi
fi
finish
