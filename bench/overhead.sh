#!/bin/sh
# overhead.sh: what the agent costs a malloc-heavy program, side by side in one
# run: the workload plain, with the agent loaded but idle (hooks installed, off),
# capturing at the default rate, at 64 KiB, at 4 KiB and every allocation
# (rate 1), and under heaptrack (which records every call); at 1, 2 and 4
# threads. Prints, as medians of the repeats (variants interleaved so that a
# noisy machine hurts them alike), wall and CPU time with their ratios to the
# plain run, system time as a share of user time, voluntary context switches
# (a thread that sleeps, on a lock for instance, makes one) and peak RSS with
# its ratio; heaptrack's peak and its CPU time count its helper processes (the
# interpreter it pipes into and the compressor) besides the program: the work
# it moves out of the program is still work (their CPU time as last seen every
# 50 ms, so a helper's last moments may be missed).
#
# Usage: bench/overhead.sh [-r REPEATS] [-n OPS] [-l LIVE] [-s small|uniform|churn]
#                          [-t "1 2 4"] [-v VARIANTS] [-p PREVBUILD] [-H] [-q] [-i]
#                          [BUILDDIR]
#   BUILDDIR holds bench/workload and .libs/libmemwatch-agent.so (default: .);
#   make bench/workload builds the workload. The default workload is a churn
#   of a ring of 256 blocks per thread, sizes 16 - 2000 B. -v: a subset of
#   "plain idle default r64k r4k rate1 heaptrack" (plain always runs). -p: the
#   agent of another build (PREVBUILD/.libs/libmemwatch-agent.so, a previous
#   commit's) runs too, as prev-default and prev-rate1 (and prev-r64k,
#   prev-r4k if named in -v), beside this one's. -H: the
#   threads wait for each other before they exit, so that all are alive at the
#   peak (many threads' memory: -H -t 2000 -n 2000 -l 16). -q: a quick sanity
#   run. -i: also count the instructions of one thread with cachegrind, a
#   figure that a busy machine does not disturb.
set -u
. "$(dirname "$0")/bench-lib.sh"

repeats=5
ops=2000000
live=256
sizes=churn
threads="1 2 4"
icount=no
hold=
variants="plain idle default r64k r4k rate1 heaptrack"
prev=
while getopts r:n:l:s:t:v:p:Hqi opt; do
	case $opt in
	r) repeats=$OPTARG ;;
	n) ops=$OPTARG ;;
	l) live=$OPTARG ;;
	s) sizes=$OPTARG ;;
	t) threads=$OPTARG ;;
	v) variants="plain $(echo "$OPTARG" | sed 's/\bplain\b//g')" ;;
	q) repeats=3; ops=300000 ;;
	i) icount=yes ;;
	p) prev=$OPTARG/.libs/libmemwatch-agent.so ;;
	H) hold=-H ;;
	*) sed -n '2,29s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-.}
wl=$build/bench/workload
agent=${MEMWATCH_AGENT:-$build/.libs/libmemwatch-agent.so}
[ -x "$wl" ] || { echo "overhead.sh: $wl not built (make bench/workload)" >&2; exit 1; }
[ -f "$agent" ] || { echo "overhead.sh: $agent not built" >&2; exit 1; }
if [ -n "$prev" ]; then
	[ -f "$prev" ] || { echo "overhead.sh: $prev not built" >&2; exit 1; }
	case " $variants " in *" prev-"*) ;; *) variants="$variants prev-default prev-rate1" ;; esac
fi
if ! command -v heaptrack >/dev/null 2>&1; then
	echo "heaptrack: not installed, left out"
	variants=$(echo "$variants" | sed 's/\bheaptrack\b//g')
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# helper_peak PID: while PID runs, the peak RSS (KiB) and the user and system
# CPU time (s) of its descendants other than the workload, each summed over
# processes; printed as "KIB USER SYS" when PID is gone.
helper_peak() {
	local top=$1 c g t kids more
	: >"$tmp/hwm"
	while kill -0 "$top" 2>/dev/null; do
		kids=$(pgrep -P "$top")
		more=$kids
		while [ -n "$more" ]; do
			c=$more
			more=
			for g in $c; do
				more="$more $(pgrep -P "$g")"
			done
			more=$(echo $more)
			kids="$kids $more"
		done
		for c in $kids; do
			[ "$(cat "/proc/$c/comm" 2>/dev/null)" = workload ] && continue
			g=$(awk '/^VmHWM:/ { print $2 }' "/proc/$c/status" 2>/dev/null)
			# utime and stime: fields 14 and 15, counted after the ")" of comm
			t=$(sed 's/.*) //' "/proc/$c/stat" 2>/dev/null | cut -d' ' -f12,13)
			[ -n "$g" ] && [ -n "$t" ] && echo "$c $g $t" >>"$tmp/hwm"
		done
		sleep 0.05
	done
	awk -v hz="$(getconf CLK_TCK)" '{
		if ($2 > m[$1]) m[$1] = $2
		if ($3 > u[$1]) u[$1] = $3
		if ($4 > y[$1]) y[$1] = $4
	} END {
		for (p in m) { s += m[p]; us += u[p]; sy += y[p] }
		printf "%d %.3f %.3f\n", s, us / hz, sy / hz
	}' "$tmp/hwm"
}

# run VARIANT THREADS: one run; appends "wall rss cpu sys user vcsw" to $tmp/VARIANT.THREADS
run() {
	local v=$1 t=$2 out=$tmp/out extra="0 0 0" opts hp a=$agent
	set -- "$wl" -t "$t" -n "$ops" -l "$live" -s "$sizes" $hold
	variant_opts "${v#prev-}"
	case $v in prev-*) a=$prev ;; esac
	case $v in
	plain) "$@" >"$out" 2>&1 ;;
	heaptrack)
		heaptrack -o "$tmp/ht" "$@" >"$out" 2>&1 &
		hp=$!
		helper_peak $hp >"$tmp/extra" &
		wait $hp
		wait
		extra=$(cat "$tmp/extra")
		rm -f "$tmp"/ht* ;;
	*) LD_PRELOAD=$a MEMWATCH_AGENT_OPTIONS=$opts "$@" >"$out" 2>&1 ;;
	esac
	sed -n 's/.*wall_s=\([0-9.]*\) cpu_s=\([0-9.]*\) .*maxrss_kib=\([0-9]*\).*user_s=\([0-9.]*\) sys_s=\([0-9.]*\) vcsw=\([0-9]*\).*/\1 \3 \2 \5 \4 \6/p' \
		"$out" | awk -v x="$extra" '{
			split(x, e, " ")
			$2 += e[1]; $3 += e[2] + e[3]; $4 += e[3]; $5 += e[2]
			print }' >>"$tmp/$v.$t"
	grep -q wall_s= "$out" || { echo "overhead.sh: $v run failed:" >&2; cat "$out" >&2; }
}

echo "workload: $ops operations per thread, $live live blocks per thread, sizes $sizes;" \
	"median of $repeats runs"
echo "agent: $agent"
[ -n "$prev" ] && echo "previous build's agent (prev-*): $prev"
printf '%-4s %-12s %8s %8s %8s %8s %6s %8s %9s %8s\n' thr variant wall_s ratio cpu_s ratio sys% vcsw peak_MiB ratio
for t in $threads; do
	run_repeats "$t"
	pw=$(median 1 "$tmp/plain.$t")
	pr=$(median 2 "$tmp/plain.$t")
	pc=$(median 3 "$tmp/plain.$t")
	for v in $variants; do
		w=$(median 1 "$tmp/$v.$t")
		r=$(median 2 "$tmp/$v.$t")
		c=$(median 3 "$tmp/$v.$t")
		sy=$(median 4 "$tmp/$v.$t")
		us=$(median 5 "$tmp/$v.$t")
		cs=$(median 6 "$tmp/$v.$t")
		awk -v t="$t" -v v="$v" -v w="$w" -v r="$r" -v c="$c" -v pw="$pw" -v pr="$pr" \
			-v pc="$pc" -v sy="$sy" -v us="$us" -v cs="$cs" 'BEGIN {
			printf "%-4s %-12s %8.3f %7.2fx %8.3f %7.2fx %5.1f%% %8d %9.1f %7.2fx\n", t, v, w,
				(pw > 0 ? w / pw : 0), c, (pc > 0 ? c / pc : 0),
				(us > 0 ? 100 * sy / us : 0), cs, r / 1024, (pr > 0 ? r / pr : 0) }'
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
