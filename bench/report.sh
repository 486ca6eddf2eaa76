#!/bin/sh
# bench/report.sh: how long memwatch show and diff take, and how much memory,
# on snapshots of 1 000, 10 000 and 100 000 distinct stacks, beside
# heaptrack_print on a heaptrack recording of the same workload, in one run.
#
#   bench/report.sh [BUILDDIR] [SIZES...]     (BUILDDIR: a built tree, after
#                                              make check; default .)
# Two kinds of snapshots per size:
#  - real: the agent, preloaded with every allocation recorded, snapshots
#    bench/report_stacks (one allocation per distinct stack, ~2 log2(N) frames
#    of its own plus libc's), ten times: the first two are diffed, and the
#    ten are one trend (diff of ten snapshots), beside the two-snapshot diff;
#    two more are taken with -E (symbols resolved and embedded as they are
#    taken, as heaptrack resolves them while it records), shown and diffed;
#  - synthetic: mksnap -S, frames drawn at random from the code of libc (whose
#    DWARF libc6-dbg provides), libstdc++, libz, libdw and mksnap itself, 8 per
#    stack, so that symbolization looks up many distinct places.
# Every command runs once to warm the caches (files, debug info: the warm run
# of the first writes the decompressed copies of the debug files into a cache
# of the bench's own, see debugcache.c; show and diff also run without it), then
# measured REPS times (environment, default 1; the median wall time, to the
# millisecond, and peak RSS from /usr/bin/time). heaptrack symbolizes while it records
# (heaptrack_interpret), so its print step is the counterpart of memwatch's
# report: it runs first, and each memwatch row ends with its time and peak
# RSS as multiples of heaptrack_print's; heaptrack's recording time is shown
# apart. heaptrack_print -F (its folded stacks, for flamegraph.pl) is
# measured beside memwatch's folded stacks. BASELINE (environment: another
# built tree, e.g. of the main branch) adds its show (table, pprof, SVG), diff
# of two and trend of ten on the same snapshots, beside this build's, to
# compare two builds in one run.
set -u
build=$(cd "${1:-.}" && pwd)
shift 2>/dev/null
sizes=${*:-1000 10000 100000}
mw="$build/memwatch"
agent="$build/.libs/libmemwatch-agent.so"
stacks="$build/bench/report_stacks"
mksnap="$build/tests/tools/mksnap"
for f in "$mw" "$agent" "$stacks" "$mksnap"; do
	[ -e "$f" ] || { echo "bench/report.sh: $f is missing (make check in $build first)" >&2; exit 1; }
done
base_mw=
if [ -n "${BASELINE:-}" ]; then
	base_mw="$(cd "$BASELINE" && pwd)/memwatch"
	[ -x "$base_mw" ] || { echo "bench/report.sh: $base_mw is missing (BASELINE must be a built tree)" >&2; exit 1; }
fi
[ -x /usr/bin/time ] || { echo "bench/report.sh: /usr/bin/time is needed" >&2; exit 1; }
have_heaptrack=no
command -v heaptrack >/dev/null 2>&1 && command -v heaptrack_print >/dev/null 2>&1 && have_heaptrack=yes
unset DEBUGINFOD_URLS
dir=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-bench-report.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
export MEMWATCH_DEBUG_CACHE="$dir/debug-cache"

reps=${REPS:-1}
ht_secs=
ht_kib=

# median: the middle of the numbers on stdin
median() {
	sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# measure LABEL CMD...: warm run, then $reps measured ones; prints a row (with
# the ratios to heaptrack_print once it was measured) and sets $secs, $kib
measure() {
	label=$1
	shift
	"$@" >/dev/null 2>&1
	: > runs.txt
	i=0
	while [ $i -lt "$reps" ]; do
		t0=$(date +%s%N)
		/usr/bin/time -f "%M" -o t.txt "$@" >/dev/null 2>err.txt || {
			echo "bench/report.sh: $label failed: $(head -n 3 err.txt)" >&2
			secs=nan
			return
		}
		t1=$(date +%s%N)
		echo "$(((t1 - t0) / 1000)) $(cat t.txt)" >> runs.txt
		i=$((i + 1))
	done
	secs=$(echo "$(cut -d' ' -f1 runs.txt | median) / 1000000" | bc -l)
	kib=$(cut -d' ' -f2 runs.txt | median)
	printf "%8s  %-44s %8.3f s %9.1f MiB" "$n" "$label" "$secs" "$(echo "$kib / 1024" | bc -l)"
	if [ -n "$ht_secs" ] && [ "$ht_secs" != nan ]; then
		printf "  %5.2fx %5.2fx" "$(echo "$secs / $ht_secs" | bc -l)" \
			"$(echo "$kib / $ht_kib" | bc -l)"
	fi
	printf "\n"
}

# snap_workload N OUT...: agent snapshots of one report_stacks N
snap_workload() {
	LD_PRELOAD="$agent" MEMWATCH_AGENT_OPTIONS="capture=now,rate=1,max-stacks=$(($1 * 2 + 1000))" \
		"$stacks" "$1" wait >w.out 2>w.err &
	wpid=$!
	i=0
	while ! grep -q ready w.out 2>/dev/null && [ $i -lt 1200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	shift
	# (each says that it shares the preloaded agent's capture at its rate)
	"$mw" snap -p "$wpid" -o "$1" -f >snap.out 2>snap.err
	shift
	for o in "$@"; do
		"$mw" snap -p "$wpid" -o "$o" -f >/dev/null 2>>snap.err
	done
	# two more with their symbols resolved and embedded as they are taken,
	# as heaptrack resolves them while it records
	"$mw" snap -E -p "$wpid" -o ae.snap -f >/dev/null 2>>snap.err
	"$mw" snap -E -p "$wpid" -o be.snap -f >/dev/null 2>>snap.err
	# the agent's own count, to see that the snapshot holds what was asked
	sed -n 's/.* in \([0-9]*\) stacks.*/\1/p' snap.out > stacks.txt
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
}

printf "%8s  %-44s %10s %13s  %s\n" stacks command wall "peak RSS" \
	"(x heaptrack_print: time, RSS)"
for n in $sizes; do
	rm -f a.snap b.snap ae.snap be.snap t*.snap s1.snap s2.snap
	snap_workload "$n" a.snap b.snap t3.snap t4.snap t5.snap t6.snap t7.snap t8.snap t9.snap t10.snap
	[ -s a.snap ] || { echo "bench/report.sh: no snapshot of the workload at $n" >&2; continue; }
	printf "%8s  %-44s %8s\n" "$n" "(stacks in the agent snapshot)" "$(cat stacks.txt)"
	"$mksnap" -S "$n" -r 1 s1.snap
	"$mksnap" -S "$n" -r 2 s2.snap
	ht_secs=
	if [ "$have_heaptrack" = yes ]; then
		rm -f ht.*
		start=$(date +%s.%N)
		heaptrack -o "$dir/ht" "$stacks" "$n" exit >/dev/null 2>&1
		rec=$(echo "$(date +%s.%N) - $start" | bc -l)
		ht=$(ls ht.* 2>/dev/null | head -n 1)
		if [ -n "$ht" ]; then
			measure "heaptrack_print (same workload)" heaptrack_print "$ht"
			printf "%8s  %-44s %8.2f s\n" "$n" "heaptrack recording (symbolizes as it goes)" "$rec"
			ht_secs=$secs
			ht_kib=$kib
		else
			echo "bench/report.sh: heaptrack wrote no file at $n" >&2
		fi
	fi
	measure "memwatch show (agent snapshot)" "$mw" show a.snap
	measure "memwatch show (agent snapshot, no debug cache)" \
		env MEMWATCH_DEBUG_CACHE= "$mw" show a.snap
	measure "memwatch show (agent snapshot, symbols embedded)" "$mw" show ae.snap
	measure "memwatch show -F folded (agent snapshot)" "$mw" show -F folded a.snap
	t_folded=$secs
	if [ -n "$ht_secs" ] && [ "$ht_secs" != nan ]; then
		# heaptrack's own folded stacks (for flamegraph.pl), beside ours
		ht_table=$ht_secs
		ht_secs=
		measure "heaptrack_print -F (folded stacks too)" heaptrack_print -F ht.folded "$ht"
		if [ "$secs" != nan ] && [ "$t_folded" != nan ]; then
			printf "%8s  %-44s %8.2f\n" "$n" "ratio memwatch folded / heaptrack_print -F" \
				"$(echo "$t_folded / $secs" | bc -l)"
		fi
		ht_secs=$ht_table
	fi
	measure "memwatch show -F pprof (agent snapshot)" "$mw" show -F pprof -o p.pb.gz a.snap
	measure "memwatch diff (two agent snapshots)" "$mw" diff a.snap b.snap
	t_diff=$secs
	measure "memwatch diff (two agent snapshots, no debug cache)" \
		env MEMWATCH_DEBUG_CACHE= "$mw" diff a.snap b.snap
	measure "memwatch diff (two agent snapshots, symbols embedded)" "$mw" diff ae.snap be.snap
	measure "memwatch diff (trend of ten agent snapshots)" "$mw" diff a.snap b.snap t3.snap t4.snap \
		t5.snap t6.snap t7.snap t8.snap t9.snap t10.snap
	if [ "$secs" != nan ] && [ "$t_diff" != nan ]; then
		printf "%8s  %-44s %8.2f\n" "$n" "ratio trend of ten / diff of two" \
			"$(echo "$secs / ($t_diff + 0.001)" | bc -l)"
	fi
	if [ -n "${BASELINE:-}" ]; then
		measure "baseline: memwatch show (agent snapshot)" "$base_mw" show a.snap
		measure "baseline: memwatch show -F pprof" "$base_mw" show -F pprof -o p.pb.gz a.snap
		measure "baseline: memwatch show -F svg" "$base_mw" show -F svg a.snap
		measure "baseline: memwatch diff (two agent snapshots)" "$base_mw" diff a.snap b.snap
		t_diff=$secs
		measure "baseline: memwatch diff (trend of ten)" "$base_mw" diff a.snap b.snap t3.snap \
			t4.snap t5.snap t6.snap t7.snap t8.snap t9.snap t10.snap
		if [ "$secs" != nan ] && [ "$t_diff" != nan ]; then
			printf "%8s  %-44s %8.2f\n" "$n" "baseline: ratio trend of ten / diff of two" \
				"$(echo "$secs / ($t_diff + 0.001)" | bc -l)"
		fi
	fi
	measure "memwatch diff -F pprof (two agent snapshots)" "$mw" diff -F pprof -o p.pb.gz a.snap b.snap
	measure "memwatch show -F svg (agent snapshot)" "$mw" show -F svg a.snap
	measure "memwatch show (synthetic, libc frames)" "$mw" show s1.snap
	measure "memwatch show -F pprof (synthetic)" "$mw" show -F pprof -o p.pb.gz s1.snap
	measure "memwatch diff (synthetic)" "$mw" diff s1.snap s2.snap
	measure "memwatch diff -F pprof (synthetic)" "$mw" diff -F pprof -o p.pb.gz s1.snap s2.snap
	measure "memwatch diff -F svg (two agent snapshots)" "$mw" diff -F svg a.snap b.snap
	measure "memwatch show -F svg (synthetic)" "$mw" show -F svg s1.snap
	measure "memwatch diff -F svg (synthetic)" "$mw" diff -F svg s1.snap s2.snap
done
