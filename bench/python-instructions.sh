#!/bin/sh
# python-instructions.sh: what capture costs bench/py_workload.py in
# instructions (valgrind --tool=callgrind, Ir), which a loaded machine does not
# disturb as it does times: the workload plain; under the agent (preloaded,
# capture=now) with the wrappers in but no sample taken (a rate of 1 TiB); and
# capturing at the default rate. Each is run with ROUNDS rounds and with none,
# and the difference (the rounds alone, start-up and the agent's own start
# left out) is compared to the plain run's. PYTHONHASHSEED is fixed, so that
# dicts probe alike in every run.
#
# Usage: bench/python-instructions.sh [-n ROUNDS] [-w objects|json] [-p PYTHON] [BUILDDIR]
#   BUILDDIR holds .libs/libmemwatch-agent.so (make builds it).
#   -p PYTHON: the interpreter (default /usr/bin/python3).
set -u

rounds=3
kind=objects
py=/usr/bin/python3
while getopts n:w:p: opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	w) kind=$OPTARG ;;
	p) py=$OPTARG ;;
	*) sed -n '2,13s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-.}
agent=$build/.libs/libmemwatch-agent.so
wl=$(dirname "$0")/py_workload.py
[ -x "$py" ] || { echo "python-instructions.sh: $py is not installed" >&2; exit 1; }
[ -r "$agent" ] || { echo "python-instructions.sh: no $agent (run make)" >&2; exit 1; }
command -v valgrind >/dev/null 2>&1 || { echo "python-instructions.sh: valgrind is not installed" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-pyinsn.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ir ROUNDS [AGENT_OPTIONS]: the instructions of one run. The workload waits
# for a line before its rounds; the pause lets the agent's helper swap the
# allocators in first.
ir() {
	local n=$1 opts=${2:-}
	if [ -n "$opts" ]; then
		(sleep 8; echo go) | env LD_PRELOAD="$agent" MEMWATCH_AGENT_OPTIONS="$opts" PYTHONHASHSEED=0 \
			valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$py" "$wl" "$n" "$kind" \
			>"$tmp/out" 2>"$tmp/err"
	else
		(sleep 8; echo go) | env PYTHONHASHSEED=0 \
			valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$py" "$wl" "$n" "$kind" \
			>"$tmp/out" 2>"$tmp/err"
	fi
	sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/err"
}

echo "python-instructions: $py, $kind, $rounds rounds, instructions of the rounds alone"
printf '%-10s %14s %8s\n' variant Ir x
base=
for v in plain wrapped capture; do
	case $v in
	plain) o= ;;
	wrapped) o=capture=now,rate=1099511627776 ;;
	*) o=capture=now ;;
	esac
	a=$(ir "$rounds" $o)
	z=$(ir 0 $o)
	d=$((a - z))
	[ -n "$base" ] || base=$d
	awk -v v=$v -v d="$d" -v b="$base" 'BEGIN { printf "%-10s %14d %8.3f\n", v, d, d / b }'
done
