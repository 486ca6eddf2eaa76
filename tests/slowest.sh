#!/bin/sh
# tests/slowest.sh: the ten slowest tests of a run, from the time
# tests/harness.sh writes as the last line of each test's log:
#   sh tests/slowest.sh [-n N] [--banner] LOG...
# A LOG may be named without its .log. make check prints it just before its
# summary (tests/tests.am), with --banner: a rule under it.
n=10
banner=
while :; do
	case ${1:-} in
	-n) n=$2; shift 2 ;;
	--banner) banner=1; shift ;;
	*) break ;;
	esac
done
for log in "$@"; do
	case $log in *.log) ;; *) log=$log.log ;; esac
	[ -f "$log" ] || continue
	sed -n 's/^harness: \(.*\): \([0-9][0-9.]*\) s (limit \([0-9]*\) s)$/\2 \3 \1/p' "$log" | tail -n 1
done > "${TMPDIR:-/tmp}/slowest.$$"
awk -v n="$n" '
	{ sum += $1; t[NR] = $0 }
	END {
		if (NR == 0) exit
		printf "The %d slowest of %d tests (%.0f s of tests in all):\n", (NR < n ? NR : n), NR, sum
	}' "${TMPDIR:-/tmp}/slowest.$$"
sort -k1,1 -rn "${TMPDIR:-/tmp}/slowest.$$" | head -n "$n" |
	awk '{ t = $3; sub(/^(\.\.?\/)+/, "", t); printf "  %7.1f s  %s (limit %d s)\n", $1, t, $2 }'
rm -f "${TMPDIR:-/tmp}/slowest.$$"
[ -n "$banner" ] && echo "============================================================================"
exit 0
