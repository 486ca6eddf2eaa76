#!/bin/sh
# bench/attach.sh: what attaching costs the target, and how soon capture runs:
# memwatch's ptrace injection (one thread borrowed at a safe point) beside
# heaptrack -p (gdb stops the whole process to call dlopen), in one run, on an
# idle target (main thread sleeping, a read() thread) and a busy one (every
# thread in malloc/free).
#
#   sh bench/attach.sh [BUILDDIR] [RUNS] [HEAPTRACK_RUNS]
#     BUILDDIR: a built tree after `make check` (default .); RUNS: memwatch
#     attaches per target kind (default 30); HEAPTRACK_RUNS (default 3).
#     The default run takes about two minutes.
#
# Every attach is to a fresh target. Figures:
#  - pause: how long memwatch kept the borrowed thread stopped (interrupt to
#    detach, measured by the injector); the other threads never stop;
#  - capture: from the decision to attach until the agent answered "start"
#    (inject + dlopen + start + connect), measured by the driver;
#  - stall: the longest gap seen by a thread of the target that spins on the
#    clock: how long the process as a whole stopped running (memwatch prefers
#    blocked threads, but on the busy target it may borrow this one); beside
#    the same figure for targets nobody attaches to (scheduling noise);
#  - heaptrack attach: from `heaptrack -p` starting until it prints
#    "injection finished".
# Targets: memwatch pause p95 <= 50 ms; attach >= 20x faster than heaptrack.
set -u
build=$(cd "${1:-.}" && pwd)
runs=${2:-30}
hruns=${3:-3}
inject="$build/tests/tools/mw-inject"
target="$build/tests/targets/attach_target"
agent="$build/.libs/libmemwatch-agent.so"
for f in "$inject" "$target" "$agent"; do
	[ -e "$f" ] || { echo "bench/attach.sh: $f is missing (make check in $build first)" >&2; exit 1; }
done
have_heaptrack=no
command -v heaptrack >/dev/null 2>&1 && command -v gdb >/dev/null 2>&1 && have_heaptrack=yes
unset DEBUGINFOD_URLS
dir=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-bench-attach.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1

now() { date +%s.%N; }

# stats FILE: "median p95 max" of the numbers in FILE (nearest rank)
stats() {
	sort -g "$1" | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan nan nan"; exit }
		m = int((NR + 1) / 2); p = int(NR * 0.95 + 0.999); if (p > NR) p = NR
		printf "%.1f %.1f %.1f\n", v[m], v[p], v[NR] }'
}

# start_target KIND: a fresh target with a clock-spinning thread; $tpid
start_target() {
	rm -f ready stop
	case $1 in
	idle) "$target" --seconds 120 --until-file "$dir/stop" --ready ready --reader --ticker \
		>target.out 2>&1 & ;;
	busy) "$target" --seconds 120 --until-file "$dir/stop" --ready ready --busy --workers 2 \
		--ticker >target.out 2>&1 & ;;
	esac
	tpid=$!
	i=0
	while [ ! -s ready ] && [ "$i" -lt 200 ]; do sleep 0.02; i=$((i + 1)); done
	sleep 0.2
}

# stop_target: end it, check it ended cleanly, record its longest stall
stop_target() {
	touch stop
	wait "$tpid"
	st=$?
	[ "$st" -eq 0 ] || { echo "bench/attach.sh: target exited with $st:" >&2; cat target.out >&2; bad=$((bad + 1)); }
	sed -n 's/.*max_gap_ms=\([0-9.]*\).*/\1/p' target.out >>"$1"
}

bad=0
for kind in idle busy; do
	: >"base-stall-$kind"
	for i in 1 2 3; do
		start_target "$kind"
		sleep 0.3
		stop_target "base-stall-$kind"
	done
	: >"mw-pause-$kind" ; : >"mw-capture-$kind"; : >"mw-stall-$kind"; : >"mw-attempts-$kind"
	for i in $(seq 1 "$runs"); do
		start_target "$kind"
		if "$inject" --deadline 10000 --control 524288 "$tpid" "$agent" "capture=idle" >out 2>err; then
			sed -n 's/.*pause_ms=\([0-9.]*\).*/\1/p' out >>"mw-pause-$kind"
			sed -n 's/.*attempts=\([0-9]*\).*/\1/p' out >>"mw-attempts-$kind"
			sed -n 's/^capture_ms=\([0-9.]*\)/\1/p' out >>"mw-capture-$kind"
		else
			echo "bench/attach.sh: memwatch attach ($kind) failed: $(head -n 2 err)" >&2
			bad=$((bad + 1))
		fi
		stop_target "mw-stall-$kind"
	done
	: >"ht-attach-$kind"; : >"ht-stall-$kind"
	[ "$have_heaptrack" = yes ] || continue
	for i in $(seq 1 "$hruns"); do
		start_target "$kind"
		rm -f ht.out
		t0=$(now)
		timeout 60 heaptrack -o "$dir/ht" -p "$tpid" >ht.out 2>&1 &
		hpid=$!
		j=0
		while ! grep -q 'injection finished' ht.out 2>/dev/null && [ "$j" -lt 6000 ]; do
			sleep 0.01
			j=$((j + 1))
		done
		t1=$(now)
		if grep -q 'injection finished' ht.out; then
			echo "($t1 - $t0) * 1000" | bc -l >>"ht-attach-$kind"
		else
			echo "bench/attach.sh: heaptrack -p ($kind) did not finish injecting within 60 s" >&2
			bad=$((bad + 1))
		fi
		stop_target "ht-stall-$kind"
		wait "$hpid" 2>/dev/null
		rm -f "$dir"/ht*.zst "$dir"/ht*.gz
	done
done

echo "attach cost, fresh targets; $runs memwatch attaches and $hruns heaptrack -p per kind (ms)"
printf "%-6s %-34s %9s %9s %9s\n" target measure median p95 max
for kind in idle busy; do
	set -- $(stats "mw-pause-$kind"); printf "%-6s %-34s %9s %9s %9s\n" "$kind" "memwatch pause (borrowed thread)" "$@"
	mp95=$2
	set -- $(stats "mw-capture-$kind"); printf "%-6s %-34s %9s %9s %9s\n" "$kind" "memwatch decision->capture" "$@"
	mcap=$1
	set -- $(stats "mw-stall-$kind"); printf "%-6s %-34s %9s %9s %9s\n" "$kind" "memwatch process stall" "$@"
	mstall=$1
	set -- $(stats "base-stall-$kind"); printf "%-6s %-34s %9s %9s %9s\n" "$kind" "no attach: process stall (noise)" "$@"
	set -- $(stats "mw-attempts-$kind"); printf "%-6s %-34s %9s %9s %9s\n" "$kind" "memwatch threads tried" "$@"
	if [ "$have_heaptrack" = yes ] && [ -s "ht-attach-$kind" ]; then
		set -- $(stats "ht-attach-$kind"); printf "%-6s %-34s %9s %9s %9s\n" "$kind" "heaptrack -p attach" "$@"
		hatt=$1
		set -- $(stats "ht-stall-$kind"); printf "%-6s %-34s %9s %9s %9s\n" "$kind" "heaptrack process stall" "$@"
		hstall=$1
		printf "%-6s attach: heaptrack/memwatch = %.0fx (target >= 20x); process stall: heaptrack %s ms vs memwatch %s ms\n" \
			"$kind" "$(echo "$hatt / $mcap" | bc -l)" "$hstall" "$mstall"
	fi
	printf "%-6s memwatch pause p95 %s ms (target <= 50 ms)\n" "$kind" "$mp95"
done
[ "$have_heaptrack" = yes ] || echo "heaptrack or gdb not installed: no comparison"
[ "$bad" -eq 0 ] || { echo "bench/attach.sh: $bad failure(s)" >&2; exit 1; }
