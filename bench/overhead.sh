#!/bin/sh
# overhead.sh: what the agent costs a malloc-heavy program, side by side in one
# run: the workload plain, with the agent loaded but idle (hooks installed, off),
# capturing at the default rate, capturing every allocation (rate 1), and under
# heaptrack; at 1, 2 and 4 threads. Prints wall time and peak RSS as ratios to
# the plain run (median of the repeats, variants interleaved so that a noisy
# machine hurts them alike).
#
# Usage: bench/overhead.sh [-r REPEATS] [-n OPS] [-l LIVE] [-s small|uniform]
#                          [-t "1 2 4"] [-q] [-i] [BUILDDIR]
#   BUILDDIR holds bench/workload and .libs/libmemwatch-agent.so (default: .);
#   make bench/workload builds the workload. -q: a quick sanity run. -i: also
#   count the instructions of one thread with cachegrind, a figure that a busy
#   machine does not disturb.
set -u

repeats=5
ops=2000000
live=16384
sizes=small
threads="1 2 4"
icount=no
while getopts r:n:l:s:t:qi opt; do
	case $opt in
	r) repeats=$OPTARG ;;
	n) ops=$OPTARG ;;
	l) live=$OPTARG ;;
	s) sizes=$OPTARG ;;
	t) threads=$OPTARG ;;
	q) repeats=3; ops=300000 ;;
	i) icount=yes ;;
	*) sed -n '2,15s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-.}
wl=$build/bench/workload
agent=${MEMWATCH_AGENT:-$build/.libs/libmemwatch-agent.so}
[ -x "$wl" ] || { echo "overhead.sh: $wl not built (make bench/workload)" >&2; exit 1; }
[ -f "$agent" ] || { echo "overhead.sh: $agent not built" >&2; exit 1; }
have_heaptrack=no
command -v heaptrack >/dev/null 2>&1 && have_heaptrack=yes

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
variants="plain idle default rate1"
[ $have_heaptrack = yes ] && variants="$variants heaptrack"

# run VARIANT THREADS: one run; appends "wall rss" to $tmp/VARIANT.THREADS
run() {
	local v=$1 t=$2 out=$tmp/out
	set -- "$wl" -t "$t" -n "$ops" -l "$live" -s "$sizes"
	case $v in
	plain) "$@" >"$out" 2>&1 ;;
	idle) LD_PRELOAD=$agent MEMWATCH_AGENT_OPTIONS=capture=idle "$@" >"$out" 2>&1 ;;
	default) LD_PRELOAD=$agent MEMWATCH_AGENT_OPTIONS=capture=now "$@" >"$out" 2>&1 ;;
	rate1) LD_PRELOAD=$agent MEMWATCH_AGENT_OPTIONS=capture=now,rate=1 "$@" >"$out" 2>&1 ;;
	heaptrack) heaptrack -o "$tmp/ht" "$@" >"$out" 2>&1; rm -f "$tmp"/ht* ;;
	esac
	sed -n 's/.*wall_s=\([0-9.]*\) cpu_s=\([0-9.]*\) .*maxrss_kib=\([0-9]*\).*/\1 \3 \2/p' \
		"$out" >>"$tmp/$v.$t"
	grep -q wall_s= "$out" || { echo "overhead.sh: $v run failed:" >&2; cat "$out" >&2; }
}

# median COLUMN FILE
median() {
	cut -d' ' -f"$1" "$2" | sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print 0 }'
}

echo "workload: $ops operations per thread, $live live blocks per thread, sizes $sizes;" \
	"median of $repeats runs"
echo "agent: $agent"
[ $have_heaptrack = yes ] || echo "heaptrack: not installed, left out"
printf '%-8s %-10s %9s %8s %9s %8s %10s %8s\n' threads variant wall_s ratio cpu_s ratio peak_MiB ratio
for t in $threads; do
	i=0
	while [ $i -lt "$repeats" ]; do
		for v in $variants; do
			run "$v" "$t"
		done
		i=$((i + 1))
	done
	pw=$(median 1 "$tmp/plain.$t")
	pr=$(median 2 "$tmp/plain.$t")
	pc=$(median 3 "$tmp/plain.$t")
	for v in $variants; do
		w=$(median 1 "$tmp/$v.$t")
		r=$(median 2 "$tmp/$v.$t")
		c=$(median 3 "$tmp/$v.$t")
		awk -v t="$t" -v v="$v" -v w="$w" -v r="$r" -v c="$c" -v pw="$pw" -v pr="$pr" \
			-v pc="$pc" 'BEGIN {
			printf "%-8s %-10s %9.3f %7.3fx %9.3f %7.3fx %10.1f %7.3fx\n", t, v, w,
				(pw > 0 ? w / pw : 0), c, (pc > 0 ? c / pc : 0), r / 1024,
				(pr > 0 ? r / pr : 0) }'
	done
done

# Instructions (user space, one thread), which a loaded machine does not change.
if [ $icount = yes ] && command -v valgrind >/dev/null 2>&1; then
	iops=$((ops / 4))
	echo "instructions, 1 thread, $iops operations (cachegrind):"
	plain_ir=
	for v in plain idle default rate1; do
		case $v in
		plain) set -- env ;;
		idle) set -- env LD_PRELOAD="$agent" MEMWATCH_AGENT_OPTIONS=capture=idle ;;
		default) set -- env LD_PRELOAD="$agent" MEMWATCH_AGENT_OPTIONS=capture=now ;;
		rate1) set -- env LD_PRELOAD="$agent" MEMWATCH_AGENT_OPTIONS=capture=now,rate=1 ;;
		esac
		ir=$("$@" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
			"$wl" -t 1 -n "$iops" -l "$live" -s "$sizes" 2>&1 |
			sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,)
		[ -n "$plain_ir" ] || plain_ir=$ir
		awk -v v="$v" -v ir="$ir" -v p="$plain_ir" -v n="$iops" 'BEGIN {
			printf "  %-10s %14.0f instructions %7.3fx  (%+.1f per operation)\n", v, ir,
				(p > 0 ? ir / p : 0), (ir - p) / n }'
	done
fi
