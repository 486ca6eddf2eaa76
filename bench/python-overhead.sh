#!/bin/sh
# python-overhead.sh: what capture costs an allocation-heavy CPython program
# (bench/py_workload.py: dicts, tuples, short strings, lists built and dropped,
# nearly all of them pymalloc's), side by side in one run: the workload plain;
# with the agent attached but not capturing; and capturing at the default rate
# (pymalloc wrapped, Python frames read at each sample). The workload times its
# own rounds (wall, and the CPU of the whole process, the agent's threads
# included), after the attach, so the attach itself is not counted. Prints the
# medians and their ratios to the plain run; variants are interleaved so that
# a noisy machine hurts them alike.
#
# Usage: bench/python-overhead.sh [-r REPEATS] [-n ROUNDS] [-w objects|json]
#                                 [-p PYTHON]... [-s PY]... [-P PREVBUILD] [BUILDDIR]
#   BUILDDIR holds memwatch and tests/tools/agentctl (make check builds it).
#   -w json: records encoded to JSON and decoded back instead (see the workload).
#   -p PYTHON: the interpreter (default /usr/bin/python3); given more than
#   once, each is measured in turn, its variants side by side.
#   -s PY: the interpreter PY (python3.14, python3.15...) of the Debian sid
#   root of tests/install-deps.sh --tests, run inside that root
#   (tests/sid-python.sh), memwatch attaching from here.
#   -P PREVBUILD: also capturing with a previous build's memwatch, agentctl
#   and agent (variant prev), beside this one's.
#   RATE=BYTES in the environment: the capture's sample rate (default 512 KiB;
#   RATE=1 records every allocation). peak_MiB is each run's peak RSS.
set -u

repeats=5
rounds=40
kind=objects
pythons=
sids=
prev_mw=
prev_ctl=
while getopts r:n:w:p:s:P: opt; do
	case $opt in
	r) repeats=$OPTARG ;;
	n) rounds=$OPTARG ;;
	w) kind=$OPTARG ;;
	p) pythons="$pythons $OPTARG" ;;
	s) sids="$sids $OPTARG" ;;
	P) prev_mw=$OPTARG/memwatch prev_ctl=$OPTARG/tests/tools/agentctl ;;
	*) sed -n '2,24s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-.}
[ -n "$pythons$sids" ] || pythons=/usr/bin/python3
mw=$build/memwatch
ctl=$build/tests/tools/agentctl
wl=$(dirname "$0")/py_workload.py
for py in $pythons; do
	[ -x "$py" ] || { echo "python-overhead.sh: $py is not installed" >&2; exit 1; }
done
[ -x "$mw" ] && [ -x "$ctl" ] || { echo "python-overhead.sh: build memwatch and tests/tools/agentctl (make check)" >&2; exit 1; }
[ -z "$prev_mw" ] || { [ -x "$prev_mw" ] && [ -x "$prev_ctl" ]; } ||
	{ echo "python-overhead.sh: build memwatch and tests/tools/agentctl in the previous build (make check)" >&2; exit 1; }

. "$(dirname "$0")/bench-lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-pybench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# each of the sid root's: a program that runs it inside the root
for s in $sids; do
	sid=${MEMWATCH_TEST_SID:-/opt/memwatch-tests/sid}
	[ -x "$sid/usr/bin/$s" ] || { echo "python-overhead.sh: $sid has no $s (sh tests/install-deps.sh --tests)" >&2; exit 1; }
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$(cd "$(dirname "$0")/.." && pwd)/tests/sid-python.sh" "$s" >"$tmp/sid-$s"
	chmod 755 "$tmp/sid-$s"
	pythons="$pythons $tmp/sid-$s"
done

# run VARIANT: one run (attached_run); "wall cpu peak_rss_kib" in $tmp/VARIANT
run() {
	attached_run "$1" ' python=on$' "$py" "$wl" "$rounds" "$kind"
}

for py in $pythons; do
	attached_repeats
	pw=$(cut -d' ' -f1 "$tmp/plain" | median_in)
	pc=$(cut -d' ' -f2 "$tmp/plain" | median_in)
	pr=$(cut -d' ' -f3 "$tmp/plain" | median_in)
	echo "python-overhead: $py, $kind, $rounds rounds, $repeats repeats, rate ${RATE:-524288}, medians"
	printf '%-10s %9s %9s %8s %8s %9s %7s\n' variant wall_s cpu_s wall/x cpu/x peak_MiB rss/x
	for v in plain attached capture ${prev_mw:+prev}; do
		w=$(cut -d' ' -f1 "$tmp/$v" | median_in)
		c=$(cut -d' ' -f2 "$tmp/$v" | median_in)
		r=$(cut -d' ' -f3 "$tmp/$v" | median_in)
		awk -v v=$v -v w="$w" -v c="$c" -v r="$r" -v pw="$pw" -v pc="$pc" -v pr="$pr" \
			'BEGIN { printf "%-10s %9.3f %9.3f %8.3f %8.3f %9.1f %7.2f\n", v, w, c, w / pw, c / pc, r / 1024, r / pr }'
	done
done
