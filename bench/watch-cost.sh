#!/bin/sh
# watch-cost.sh: what watching costs: memwatch's CPU time per sample (us), its
# share of one core at 1 s and 100 ms intervals, and its own peak RSS, while it
# watches a 1 GiB and an 8 GiB process (anonymous memory, every page touched),
# with and without --pss, and what --metrics adds. Each sample also reads the
# watched process's memory cgroup (its usage, limit and OOM kills: three
# preads, and /proc/PID/cgroup every 16th sample); the closing note says which
# cgroup the targets were in (none: those reads are not in the figures).
#
# Run from the build directory after `make check` (which builds the helpers):
#   sh /path/to/src/bench/watch-cost.sh
# Environment: MEMWATCH (default ./memwatch), TARGETS (./tests/targets),
# RUSAGE (./bench/watch-cost-rusage), SIZES_GIB (default "1 8"),
# SHARE_S (seconds of each CPU-share run at 1 s; default 6). The default run
# takes about a minute.
#
# How: the per-sample cost is the difference in CPU time between a long and a
# short run at a 1 ms interval, divided by the difference in samples written,
# so start-up and exit cancel out and what remains is one sample, its log line
# and one timer wake-up. The CPU share is memwatch's CPU time over the middle of
# a run at 1 s (100 ms), from /proc/PID/schedstat in nanoseconds. The
# watched process is the baseline: its own run needs no instrumentation, so the
# figures are absolute; the targets are < 50 us per sample without --pss, < 0.1 %
# of a core at 1 s, and < 4 MiB of memwatch's own RSS.
set -u

MEMWATCH=${MEMWATCH:-./memwatch}
TARGETS=${TARGETS:-./tests/targets}
RUSAGE=${RUSAGE:-./bench/watch-cost-rusage}
SIZES_GIB=${SIZES_GIB:-1 8}
SHARE_S=${SHARE_S:-6}

for f in "$MEMWATCH" "$TARGETS/flat" "$RUSAGE"; do
	if [ ! -x "$f" ]; then
		echo "watch-cost: '$f' is missing: run from the build directory after make check" >&2
		exit 2
	fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/watch-cost.XXXXXX")
target=
cleanup() {
	[ -n "$target" ] && kill "$target" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# measure ARGS...: run memwatch with ARGS, log to $tmp/run.log; sets cpu_us,
# maxrss_kib and samples. With SPAN="A B" (seconds into the run) also share, the
# CPU share of one core between A and B from /proc/PID/schedstat (nanoseconds,
# so start-up and exit are left out), and anon_kib and pss_kib, memwatch's own
# anonymous memory and PSS at B.
measure() {
	rm -f "$tmp/run.log"
	"$RUSAGE" "$tmp/ru" "$MEMWATCH" -q --capture never -o "$tmp/run.log" "$@" >/dev/null 2>"$tmp/err" &
	helper=$!
	anon_kib=- pss_kib=- share=-
	if [ -n "${SPAN:-}" ]; then
		set -- $SPAN
		sleep "$1"
		mw=$(pgrep -P "$helper" | head -n 1)
		if [ -n "$mw" ]; then
			read -r ns1 _ </proc/"$mw"/schedstat
			t1=$(date +%s%N)
			sleep "$(awk -v a="$1" -v b="$2" 'BEGIN { print b - a }')"
			read -r ns2 _ </proc/"$mw"/schedstat
			t2=$(date +%s%N)
			share=$(awk -v a="$ns1" -v b="$ns2" -v s="$t1" -v e="$t2" 'BEGIN { printf "%.4f", (b - a) / (e - s) * 100 }')
			anon_kib=$(awk '/^RssAnon:/ { print $2 }' "/proc/$mw/status")
			pss_kib=$(awk '/^Pss:/ { print $2 }' "/proc/$mw/smaps_rollup")
		fi
	fi
	wait "$helper"
	read -r u s maxrss_kib st <"$tmp/ru"
	if [ "$st" -ne 0 ]; then
		echo "watch-cost: memwatch failed ($st): $(cat "$tmp/err")" >&2
		exit 1
	fi
	cpu_us=$((u + s))
	samples=$(grep -c '^[0-9]' "$tmp/run.log")
}

# the baseline: what a bare timer wake-up costs here (memwatch pays one per sample)
"$RUSAGE" --ticks 2000 1000 "$tmp/ru"
read -r u s _ _ <"$tmp/ru"
wake_us=$(awk -v c=$((u + s)) 'BEGIN { printf "%.1f", c / 2000 }')
echo "baseline: a bare timer wake-up (sleep to an absolute deadline) costs $wake_us us of CPU here"
echo
printf '%-7s %-4s %10s %10s %11s %12s %9s %9s %9s\n' "target" "pss" "us/sample" "-wake us" \
	"CPU% at 1s" "CPU% 100ms" "peak RSS" "anon" "PSS"
worst_us=0 worst_share=0 worst_anon=0 worst_rss=0 worst_metrics=0 plain_us=0
for gib in $SIZES_GIB; do
	"$TARGETS/flat" $((gib * 1024)) &
	target=$!
	# wait until every page is touched
	want=$((gib * 1024 * 1024 * 95 / 100))
	i=0
	while :; do
		anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$target/status" 2>/dev/null)
		[ "${anon:-0}" -ge "$want" ] && break
		i=$((i + 1))
		if [ "$i" -gt 600 ]; then
			echo "watch-cost: the ${gib} GiB target did not fill its memory" >&2
			exit 1
		fi
		sleep 0.1
	done
	cgline=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}:\(\/..*\)$/cgroup v1 \3/p' "/proc/$target/cgroup")
	[ -n "$cgline" ] || cgline=$(sed -n 's/^0::\(\/..*\)$/cgroup v2 \1/p' "/proc/$target/cgroup")
	for pss in no yes; do
		opt=
		[ "$pss" = yes ] && opt=--pss
		# per sample: a long and a short run at 1 ms
		measure -p "$target" $opt -i 1ms -d 2s
		c2=$cpu_us n2=$samples
		measure -p "$target" $opt -i 1ms -d 500ms
		c1=$cpu_us n1=$samples
		us=$(awk -v a="$c2" -v b="$c1" -v m="$n2" -v n="$n1" 'BEGIN { printf "%.1f", (a - b) / (m - n) }')
		work=$(awk -v a="$us" -v w="$wake_us" 'BEGIN { printf "%.1f", a - w }')
		# the share of a core in the steady state, at 1 s and 100 ms
		SPAN="1.5 $((SHARE_S - 1)).5" measure -p "$target" $opt -i 1s -d "${SHARE_S}s"
		share1=$share rss1=$maxrss_kib anon1=$anon_kib pss1=$pss_kib
		SPAN="0.5 2.5" measure -p "$target" $opt -i 100ms -d 3s
		share01=$share
		rss=$((rss1 > maxrss_kib ? rss1 : maxrss_kib))
		printf '%-7s %-4s %10s %10s %10s%% %11s%% %5s KiB %5s KiB %5s KiB\n' "${gib}GiB" "$pss" \
			"$us" "$work" "$share1" "$share01" "$rss" "$anon1" "$pss1"
		if [ "$pss" = no ]; then
			plain_us=$us
			worst_us=$(awk -v a="$worst_us" -v b="$us" 'BEGIN { print (b > a ? b : a) }')
			worst_share=$(awk -v a="$worst_share" -v b="$share1" 'BEGIN { print (b > a ? b : a) }')
		fi
		[ "$anon1" != - ] && [ "$anon1" -gt "$worst_anon" ] && worst_anon=$anon1
		[ "$rss" -gt "$worst_rss" ] && worst_rss=$rss
	done
	# --metrics: what the Prometheus file adds per sample (at 1 ms, where it is
	# rewritten at most twice a second) and to the share of a core at 1 s
	# (one write per sample), in this directory and on tmpfs
	for where in "$tmp" /dev/shm; do
		[ -d "$where" ] && [ -w "$where" ] || continue
		m="$where/watch-cost.$$.prom"
		measure -p "$target" -i 1ms -d 2s --metrics "$m"
		c2=$cpu_us n2=$samples
		measure -p "$target" -i 1ms -d 500ms --metrics "$m"
		c1=$cpu_us n1=$samples
		us=$(awk -v a="$c2" -v b="$c1" -v m="$n2" -v n="$n1" 'BEGIN { printf "%.1f", (a - b) / (m - n) }')
		SPAN="1.5 $((SHARE_S - 1)).5" measure -p "$target" -i 1s -d "${SHARE_S}s" --metrics "$m"
		share1=$share
		rm -f "$m"
		fs=$(stat -f -c %T "$where" 2>/dev/null)
		printf '%-7s %-4s %10s %10s %10s%%   --metrics on %s (%s)\n' "${gib}GiB" no "$us" \
			"$(awk -v a="$us" -v b="$plain_us" 'BEGIN { printf "%+.1f", a - b }')" "$share1" "$where" "$fs"
		added=$(awk -v a="$us" -v b="$plain_us" 'BEGIN { printf "%.1f", a - b }')
		worst_metrics=$(awk -v a="$worst_metrics" -v b="$added" 'BEGIN { print (b > a ? b : a) }')
	done
	kill "$target"
	wait "$target" 2>/dev/null
	target=
done
echo
echo "us/sample: memwatch's CPU per sample, timer wake-up included; -wake: without it"
echo "CPU%: memwatch's share of one core in the middle of a run (start-up left out)"
echo "peak RSS counts the shared libraries' resident pages; anon is memwatch's own memory"
echo "--metrics rows: -wake us is there what --metrics adds to the plain row's us/sample"
echo "memory cgroup of the targets, read with every sample: ${cgline:-none (not measured)}"
# verdict: the targets, each on its own
verdict() {
	if awk -v v="$2" -v t="$3" 'BEGIN { exit !(v < t) }'; then
		echo "  ok    $1: $2 (target < $3)"
	else
		echo "  over  $1: $2 (target < $3)"
	fi
}
echo
echo "targets (without --pss, the worst of the sizes):"
verdict "us per sample" "$worst_us" 50
verdict "% of a core at 1 s" "$worst_share" 0.1
verdict "own anonymous memory, KiB" "$worst_anon" 4096
verdict "peak RSS with shared libraries, KiB" "$worst_rss" 4096
verdict "us per sample added by --metrics" "$worst_metrics" 10
