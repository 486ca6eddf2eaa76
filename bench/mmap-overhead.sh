#!/bin/sh
# mmap-overhead.sh: what the hooks of the mmap family (mmap, munmap, mremap,
# brk, sbrk) cost, in two figures.
#  1. On an mmap-heavy program (bench/mmap_workload: a ring of anonymous
#     mappings churned by mmap, munmap and mremap), side by side in one run:
#     plain, agent idle (hooks installed, off), capturing at the default rate,
#     at 64 KiB and every call (rate 1). Medians of the repeats, variants
#     interleaved; CPU time (user + system) and its ratio to the plain run,
#     wall time likewise (noisier on a loaded machine).
#  2. On overhead.sh's malloc workload (bench/workload): glibc's malloc maps,
#     remaps and moves the break with its own internal calls, not through any
#     GOT slot, so the mmap hooks are never on its path. With -i, callgrind
#     counts the instructions of a capturing run by function: the hooks' share
#     is printed (a figure a busy machine does not disturb), and the same for
#     the mmap workload at the default rate.
#
# Usage: bench/mmap-overhead.sh [-r REPEATS] [-n OPS] [-t "1 2"] [-w head|full] [-i] [BUILDDIR]
#   BUILDDIR holds bench/mmap_workload, bench/workload and
#   .libs/libmemwatch-agent.so (default: .); make check builds them.
set -u
. "$(dirname "$0")/bench-lib.sh"

repeats=5
ops=200000
threads="1 2"
touch=head
icount=no
while getopts r:n:t:w:i opt; do
	case $opt in
	r) repeats=$OPTARG ;;
	n) ops=$OPTARG ;;
	t) threads=$OPTARG ;;
	w) touch=$OPTARG ;;
	i) icount=yes ;;
	*) sed -n '2,20s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-.}
wl=$build/bench/mmap_workload
mwl=$build/bench/workload
agent=${MEMWATCH_AGENT:-$build/.libs/libmemwatch-agent.so}
for f in "$wl" "$mwl"; do
	[ -x "$f" ] || { echo "mmap-overhead.sh: $f not built (make check builds it)" >&2; exit 1; }
done
[ -f "$agent" ] || { echo "mmap-overhead.sh: $agent not built" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-mmap-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
variants="plain idle default r64k rate1"

# run VARIANT THREADS: one run; appends "wall cpu" to $tmp/VARIANT.THREADS
run() {
	local v=$1 t=$2 opts out=$tmp/out
	variant_opts "$v"
	if [ "$v" = plain ]; then
		"$wl" -t "$t" -n "$ops" -w "$touch" >"$out" 2>&1
	else
		LD_PRELOAD=$agent MEMWATCH_AGENT_OPTIONS=$opts "$wl" -t "$t" -n "$ops" -w "$touch" >"$out" 2>&1
	fi
	sed -n 's/.*wall_s=\([0-9.]*\) cpu_s=\([0-9.]*\) .*/\1 \2/p' "$out" >>"$tmp/$v.$t"
	grep -q wall_s= "$out" || { echo "mmap-overhead.sh: $v run failed:" >&2; cat "$out" >&2; }
}

echo "mmap workload: $ops operations per thread (mmap/munmap, 1 in 8 an mremap growing x2)," \
	"4 - 256 KiB, touch $touch; median of $repeats runs"
echo "agent: $agent"
printf '%-4s %-9s %8s %8s %8s %8s\n' thr variant wall_s ratio cpu_s ratio
for t in $threads; do
	run_repeats "$t"
	pw=$(median 1 "$tmp/plain.$t")
	pc=$(median 2 "$tmp/plain.$t")
	for v in $variants; do
		w=$(median 1 "$tmp/$v.$t")
		c=$(median 2 "$tmp/$v.$t")
		awk -v t="$t" -v v="$v" -v w="$w" -v c="$c" -v pw="$pw" -v pc="$pc" 'BEGIN {
			rw = pw > 0 ? w / pw : 0; rc = pc > 0 ? c / pc : 0
			printf "%-4s %-9s %8.3f %8.3f %8.3f %8.3f\n", t, v, w, rw, c, rc }'
	done
done

[ "$icount" = yes ] || exit 0
if ! command -v valgrind >/dev/null 2>&1 || ! command -v callgrind_annotate >/dev/null 2>&1; then
	echo "valgrind: not installed, no instruction counts"
	exit 0
fi
# hooks_share NAME CMD...: callgrind CMD under the agent at the default rate;
# print the total instructions and those of the mmap family's hooks (the
# functions of hooks.c that serve mmap, munmap, mremap, brk and sbrk,
# inclusive of what they call, the C library's system call wrappers too).
hooks_share() {
	local name=$1
	shift
	LD_PRELOAD=$agent MEMWATCH_AGENT_OPTIONS=capture=now valgrind --tool=callgrind \
		--callgrind-out-file="$tmp/cg.$name" "$@" >"$tmp/cg.$name.out" 2>&1 ||
		{ echo "mmap-overhead.sh: callgrind $name failed" >&2; return 0; }
	callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$tmp/cg.$name" 2>/dev/null |
		awk -v name="$name" '
		/PROGRAM TOTALS/ { gsub(/,/, "", $1); total = $1 }
		/hooks\.c:(hk_mmap|hk_mmap64|hk_munmap|hk_mremap|hk_brk|hk_sbrk) / {
			gsub(/,/, "", $1); hooks += $1 }
		END { printf "%-13s %12.0f Ir in all, %10.0f in the mmap hooks (%.5f %%)\n",
			name, total, hooks, total ? 100 * hooks / total : 0 }'
}
# ir OPTIONS CMD...: the user-space instructions of CMD (under the agent with
# OPTIONS, or plain when OPTIONS is -)
ir() {
	local o=$1
	shift
	if [ "$o" = - ]; then
		valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.ir" "$@" >"$tmp/cg.ir.out" 2>&1
	else
		LD_PRELOAD=$agent MEMWATCH_AGENT_OPTIONS=$o valgrind --tool=callgrind \
			--callgrind-out-file="$tmp/cg.ir" "$@" >"$tmp/cg.ir.out" 2>&1
	fi
	sed -n 's/.*I *refs: *//p' "$tmp/cg.ir.out" | tr -d ,
}
n=20000
echo "instructions (callgrind, one thread, capture at the default rate):"
hooks_share malloc-churn "$mwl" -t 1 -n 200000 -l 256 -s churn
p=$(ir - "$wl" -t 1 -n $n -w "$touch")
i=$(ir capture=idle "$wl" -t 1 -n $n -w "$touch")
d=$(ir capture=now "$wl" -t 1 -n $n -w "$touch")
awk -v p="$p" -v i="$i" -v d="$d" -v n="$n" 'BEGIN {
	printf "mmap workload, %d operations: user-space Ir plain %.0f, idle %.0f, default %.0f;\n", n, p, i, d
	printf "  capture adds %.0f Ir per operation over idle (the kernel\047s share is not counted)\n", (d - i) / n }'
