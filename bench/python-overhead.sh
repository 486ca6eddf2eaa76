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
#                                 [-p PYTHON]... [BUILDDIR]
#   BUILDDIR holds memwatch and tests/tools/agentctl (make check builds it).
#   -w json: records encoded to JSON and decoded back instead (see the workload).
#   -p PYTHON: the interpreter (default /usr/bin/python3); given more than
#   once, each is measured in turn, its variants side by side.
#   RATE=BYTES in the environment: the capture's sample rate (default 512 KiB;
#   RATE=1 records every allocation). peak_MiB is each run's peak RSS.
set -u

repeats=5
rounds=40
kind=objects
pythons=
while getopts r:n:w:p: opt; do
	case $opt in
	r) repeats=$OPTARG ;;
	n) rounds=$OPTARG ;;
	w) kind=$OPTARG ;;
	p) pythons="$pythons $OPTARG" ;;
	*) sed -n '2,22s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-.}
pythons=${pythons:-/usr/bin/python3}
mw=$build/memwatch
ctl=$build/tests/tools/agentctl
wl=$(dirname "$0")/py_workload.py
for py in $pythons; do
	[ -x "$py" ] || { echo "python-overhead.sh: $py is not installed" >&2; exit 1; }
done
[ -x "$mw" ] && [ -x "$ctl" ] || { echo "python-overhead.sh: build memwatch and tests/tools/agentctl (make check)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-pybench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run VARIANT: one run; appends "wall cpu peak_rss_kib" to $tmp/VARIANT
run() {
	local v=$1 pid hold c=""
	rm -f "$tmp/in" "$tmp/out"
	mkfifo "$tmp/in"
	"$py" "$wl" "$rounds" "$kind" <"$tmp/in" >"$tmp/out" 2>&1 &
	pid=$!
	sleep 3600 >"$tmp/in" &
	hold=$!
	while ! grep -q ready "$tmp/out" 2>/dev/null; do sleep 0.05; done
	if [ "$v" != plain ]; then
		# attach (and capture for a moment, which ends before the rounds)
		"$mw" snap -p "$pid" -w 100ms -f -o "$tmp/a.snap" >/dev/null 2>&1 ||
			echo "python-overhead.sh: attach failed" >&2
	fi
	if [ "$v" = capture ]; then
		"$ctl" "$pid" start=${RATE:-524288} sleep=3600000 >/dev/null 2>&1 &
		c=$!
		while ! "$ctl" "$pid" status 2>/dev/null | grep -q ' python=on$'; do sleep 0.05; done
	fi
	echo go >"$tmp/in"
	wait "$pid"
	kill "$hold" 2>/dev/null
	[ -n "$c" ] && kill "$c" 2>/dev/null
	wait 2>/dev/null
	sed -n 's/^wall_s=\([0-9.]*\) cpu_s=\([0-9.]*\) maxrss_kib=\([0-9]*\)$/\1 \2 \3/p' "$tmp/out" >>"$tmp/$v"
}

median() {
	sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

for py in $pythons; do
	rm -f "$tmp/plain" "$tmp/attached" "$tmp/capture"
	# the order turns at every repeat, so that no variant always follows another
	i=0
	while [ $i -lt "$repeats" ]; do
		case $((i % 3)) in
		0) order="plain attached capture" ;;
		1) order="attached capture plain" ;;
		*) order="capture plain attached" ;;
		esac
		for v in $order; do
			run $v
		done
		i=$((i + 1))
	done
	pw=$(cut -d' ' -f1 "$tmp/plain" | median)
	pc=$(cut -d' ' -f2 "$tmp/plain" | median)
	pr=$(cut -d' ' -f3 "$tmp/plain" | median)
	echo "python-overhead: $py, $kind, $rounds rounds, $repeats repeats, rate ${RATE:-524288}, medians"
	printf '%-10s %9s %9s %8s %8s %9s %7s\n' variant wall_s cpu_s wall/x cpu/x peak_MiB rss/x
	for v in plain attached capture; do
		w=$(cut -d' ' -f1 "$tmp/$v" | median)
		c=$(cut -d' ' -f2 "$tmp/$v" | median)
		r=$(cut -d' ' -f3 "$tmp/$v" | median)
		awk -v v=$v -v w="$w" -v c="$c" -v r="$r" -v pw="$pw" -v pc="$pc" -v pr="$pr" \
			'BEGIN { printf "%-10s %9.3f %9.3f %8.3f %8.3f %9.1f %7.2f\n", v, w, c, w / pw, c / pc, r / 1024, r / pr }'
	done
done
