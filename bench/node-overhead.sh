#!/bin/sh
# node-overhead.sh: what capture costs an allocation-heavy node program
# (bench/js_workload.js: small records built into Maps, a tenth kept for a
# while), side by side in one run: the workload plain; with the agent attached
# but not capturing; and capturing at the default rate (malloc and mmap
# sampled, V8's sampling heap profiler running at the same rate). The workload
# times its own rounds (wall, and the CPU of the whole process, the agent's
# threads and V8's included), after the attach, so the attach itself is not
# counted. Prints the medians and their ratios to the plain run; variants are
# interleaved so that a noisy machine hurts them alike.
#
# Usage: bench/node-overhead.sh [-r REPEATS] [-n ROUNDS] [BUILDDIR]
#   BUILDDIR holds memwatch and tests/tools/agentctl (make check builds it).
#   NODE=PATH runs another node than /usr/bin/node: NODE=18 runs Debian's
#   node 18, NODE=22, 24 or 26 the official node of that version, where
#   tests/install-deps.sh --tests unpacks them.
set -u

repeats=5
rounds=40
while getopts r:n: opt; do
	case $opt in
	r) repeats=$OPTARG ;;
	n) rounds=$OPTARG ;;
	*) sed -n '2,15s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-.}
node=${NODE:-/usr/bin/node}
case $node in
18)
	node=/opt/memwatch-tests/node18/usr/bin/node
	LD_LIBRARY_PATH=/opt/memwatch-tests/node18/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
	;;
22 | 24 | 26) node=/opt/memwatch-tests/node$node/bin/node ;;
esac
mw=$build/memwatch
ctl=$build/tests/tools/agentctl
wl=$(dirname "$0")/js_workload.js
[ -x "$node" ] || { echo "node-overhead.sh: $node is not installed" >&2; exit 1; }
[ -x "$mw" ] && [ -x "$ctl" ] || { echo "node-overhead.sh: build memwatch and tests/tools/agentctl (make check)" >&2; exit 1; }

. "$(dirname "$0")/bench-lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-nodebench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run VARIANT: one run (attached_run); "wall cpu" in $tmp/VARIANT
run() {
	attached_run "$1" ' js=on ' "$node" "$wl" "$rounds"
}

attached_repeats
pw=$(cut -d' ' -f1 "$tmp/plain" | median_in)
pc=$(cut -d' ' -f2 "$tmp/plain" | median_in)
echo "node-overhead: $node $($node --version), $rounds rounds, $repeats repeats, medians"
printf '%-10s %9s %9s %8s %8s\n' variant wall_s cpu_s wall/x cpu/x
for v in plain attached capture; do
	w=$(cut -d' ' -f1 "$tmp/$v" | median_in)
	c=$(cut -d' ' -f2 "$tmp/$v" | median_in)
	awk -v v=$v -v w="$w" -v c="$c" -v pw="$pw" -v pc="$pc" \
		'BEGIN { printf "%-10s %9.3f %9.3f %8.3f %8.3f\n", v, w, c, w / pw, c / pc }'
done
