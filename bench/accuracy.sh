#!/bin/sh
# accuracy.sh: how close the agent's estimates are to the truth, for sites of
# known size (bench/accuracy.c): RUNS runs at the default rate and one at rate 1
# (which must be exact). For each site: the true live bytes, the mean of
# estimate/truth, the measured RMS relative error and the one expected from
# the sampling (sqrt((1-p)/(N p)) for N blocks each sampled with probability p),
# and whether every run was within 10%.
#
# Usage: bench/accuracy.sh [-n RUNS] [BUILDDIR]   (make check builds what it needs)
set -u
runs=10
while getopts n: opt; do
	case $opt in
	n) runs=$OPTARG ;;
	*) sed -n '2,11s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-.}
prog=$build/bench/accuracy
mw=$build/memwatch
dump=$build/tests/tools/snapdump
agent=${MEMWATCH_AGENT:-$build/.libs/libmemwatch-agent.so}
for f in "$prog" "$mw" "$dump" "$agent"; do
	[ -e "$f" ] || { echo "accuracy.sh: $f is not built (make check)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-accuracy.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# sites: name, true live bytes, block size
sites="site_16m 16777216 4096
site_64m 67108864 65536
site_256m 268435456 1048576
site_small 4194304 64
site_freed 0 16384"

# one RATE OUT: run the program once, snapshot it at its known point, and
# append "site estimate" lines to OUT.
one() {
	local rate=$1 out=$2 p h i
	rm -f "$tmp/in" "$tmp/out"
	mkfifo "$tmp/in"
	LD_PRELOAD=$agent MEMWATCH_AGENT_OPTIONS=capture=now,rate=$rate "$prog" <"$tmp/in" >"$tmp/out" &
	p=$!
	sleep 60 >"$tmp/in" &
	h=$!
	i=0
	until grep -q '^ready 1' "$tmp/out" 2>/dev/null; do
		sleep 0.05
		i=$((i + 1))
		[ $i -lt 1200 ] || { echo "accuracy.sh: the program did not get ready" >&2; exit 1; }
	done
	"$mw" snap -p "$p" -o "$tmp/s.snap" -f >/dev/null || exit 1
	echo go >"$tmp/in"
	wait "$p"
	kill "$h" 2>/dev/null
	wait "$h" 2>/dev/null
	"$dump" "$tmp/s.snap" >"$tmp/s.txt" || exit 1
	echo "$sites" | while read -r name bytes block; do
		range=$(nm -S --defined-only "$prog" | awk -v f="$name" '$4 == f { print $1, $2 }')
		awk -v base="${prog##*/}" -v lo="$(printf %d "0x${range% *}")" \
			-v size="$(printf %d "0x${range#* }")" -v name="$name" '
		function hex(s,   i, v) { s = tolower(s); sub(/^0x/, "", s); v = 0
			for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v }
		function flush() { if (inst && hit) sum += val; inst = 0 }
		/^module / { if (match($0, /path="[^"]*"/)) { p = substr($0, RSTART + 6, RLENGTH - 7)
			n = split(p, a, "/"); if (a[n] == base) mod = $2 } }
		/^stack / { flush(); inst = 1; hit = 0; split($3, kv, "="); val = kv[2] }
		/^  [0-9]+:0x/ { split($1, fr, ":"); if (fr[1] == mod) { o = hex(fr[2])
			if (o >= lo && o < lo + size) hit = 1 } }
		END { flush(); printf "%s %.0f\n", name, sum }' "$tmp/s.txt" >>"$out"
	done
}

: >"$tmp/exact"
one 1 "$tmp/exact"
: >"$tmp/est"
i=0
while [ $i -lt "$runs" ]; do
	one 524288 "$tmp/est"
	i=$((i + 1))
done

echo "sample rate 512 KiB, $runs runs; rate 1 once"
printf '%-11s %11s %10s %9s %9s %9s %9s\n' site true_bytes rate1 mean_est rms_err expected within10
echo "$sites" | while read -r name bytes block; do
	exact=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/exact")
	awk -v n="$name" -v t="$bytes" -v b="$block" -v x="$exact" -v runs="$runs" '
	$1 == n { k++; e = $2; s += e; if (t > 0) { r = (e - t) / t; q += r * r; if (r > 0.1 || r < -0.1) out++ }
		else if (e != 0) out++ }
	END {
		R = 524288; p = 1 - exp(-(b + 1) / R); N = (t > 0) ? t / b : 0
		sd = N > 0 ? sqrt((1 - p) / (N * p)) : 0
		printf "%-11s %11d %10s %9s %8.1f%% %8.1f%% %9s\n", n, t, (x == t ? "exact" : x),
			(t > 0 ? sprintf("%.3f", s / k / t) : sprintf("%d", s / k)),
			(t > 0 ? 100 * sqrt(q / k) : 0), 100 * sd, (out ? sprintf("%d/%d out", out, k) : "all")
	}' "$tmp/est"
done
