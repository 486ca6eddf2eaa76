#!/bin/sh
# capture-throughput.sh: what a capture costs the watched program while it runs,
# and that nothing is left of it afterwards. One malloc-heavy target
# (tests/targets/robust_target churn: random sizes 16-512 B through a ring of
# 1024 blocks, a small steady leak) prints its own throughput every 0.5 s; it is
# measured before memwatch comes, while memwatch -p PID --capture now samples it
# at the default rate, and after memwatch has gone (agent loaded, hooks
# removed). Prints each phase's median throughput and its ratio to "before"
# (after should be 1.00x within noise). About 40 s.
#
# Usage: bench/capture-throughput.sh [-s SECONDS_PER_PHASE] [-l LEAK_KIB_PER_S] [BUILDDIR]
#   BUILDDIR holds memwatch and tests/targets/robust_target (make check builds
#   it, or make tests/targets/robust_target); default: .
set -u

secs=10
leak=256
while getopts s:l: opt; do
	case $opt in
	s) secs=$OPTARG ;;
	l) leak=$OPTARG ;;
	*) sed -n '2,14s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=$(cd "${1:-.}" && pwd) || exit 1
mw=$build/memwatch
target=$build/tests/targets/robust_target
[ -x "$mw" ] || { echo "capture-throughput.sh: $mw not built" >&2; exit 1; }
[ -x "$target" ] || { echo "capture-throughput.sh: $target not built (make tests/targets/robust_target)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-bench.XXXXXX")
tpid=
trap '[ -n "$tpid" ] && kill "$tpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# mark NAME: the phase NAME starts at the next line of the target's output.
mark() {
	echo "$1 $(($(grep -c '' out) + 1))" >>marks
}
# median FROM TO: the median of the throughput lines FROM..TO-1, leaving out
# the first (it straddles the change of phase).
median() {
	sed -n "$(($1 + 1)),$(($2 - 1))p" out | awk '/^ops_per_s /{ v[n++] = $2 } END {
		if (n == 0) { print 0; exit }
		for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		print v[int(n / 2)] }'
}

: >out
"$target" churn 0 "$leak" >out &
tpid=$!
sleep 1
mark before
sleep "$secs"
mark during
"$mw" -p "$tpid" --capture now -d "${secs}s" -i 1s -q --no-report -o run.log >mw.out 2>mw.err
st=$?
[ "$st" -eq 0 ] || { echo "capture-throughput.sh: memwatch failed ($st): $(cat mw.err)" >&2; exit 1; }
mark after
sleep "$secs"
mark end
kill "$tpid"
wait "$tpid" 2>/dev/null
tpid=

b=$(median "$(awk '$1=="before"{print $2}' marks)" "$(awk '$1=="during"{print $2}' marks)")
d=$(median "$(awk '$1=="during"{print $2}' marks)" "$(awk '$1=="after"{print $2}' marks)")
a=$(median "$(awk '$1=="after"{print $2}' marks)" "$(awk '$1=="end"{print $2}' marks)")
grep -q ' capture-start ' run.log || echo "warning: the capture did not start: $(cat mw.err)" >&2
echo "capture throughput: robust_target churn (leak ${leak} KiB/s), ${secs} s per phase, median of 0.5 s reports"
awk -v b="$b" -v d="$d" -v a="$a" 'BEGIN {
	printf "  %-34s %14.0f ops/s  %5.2fx\n", "before memwatch", b, 1
	printf "  %-34s %14.0f ops/s  %5.2fx\n", "capturing (default rate 512 KiB)", d, d / b
	printf "  %-34s %14.0f ops/s  %5.2fx\n", "after (agent idle, hooks removed)", a, a / b }'
