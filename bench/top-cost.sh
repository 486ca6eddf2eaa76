#!/bin/sh
# bench/top-cost.sh: what memwatch top's view snapshots cost the target, and
# the cadence top chooses from it, on the demo service and on report_stacks
# with 100 000 distinct live stacks (every allocation recorded: rate 1). top
# runs in a tmux of its own for SECS seconds at -i 500ms; its header says what
# one snapshot cost (the CPU time of the agent's thread, the wall time) and
# the cadence chosen; the agent thread's CPU time over the whole run, from
# its schedstat, gives the share of one CPU the view took in the target.
#
#   bench/top-cost.sh [BUILDDIR] [SECS]   (BUILDDIR: a built tree, after make
#                                          check; default .; SECS default 20)
set -u
build=$(cd "${1:-.}" && pwd)
secs=${2:-20}
mw="$build/memwatch"
agent="$build/.libs/libmemwatch-agent.so"
stacks="$build/bench/report_stacks"
demo="$build/tests/targets/demo"
for f in "$mw" "$agent" "$stacks" "$demo"; do
	[ -e "$f" ] || { echo "bench/top-cost.sh: $f is missing (make check in $build first)" >&2; exit 1; }
done
command -v tmux >/dev/null 2>&1 || { echo "bench/top-cost.sh: tmux is needed" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-bench-top.XXXXXX")
sock=$dir/tmux.sock
pids=
trap 'tmux -S "$sock" kill-server 2>/dev/null; for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
cd "$dir" || exit 1
export MEMWATCH_AGENT="$agent"

# agent_cpu_ns PID: the CPU time of the agent's thread in PID (0: none)
agent_cpu_ns() {
	for t in /proc/"$1"/task/*; do
		if [ "$(cat "$t/comm" 2>/dev/null)" = memwatch-agent ]; then
			cut -d' ' -f1 "$t/schedstat"
			return
		fi
	done
	echo 0
}

# measure LABEL PID: top on PID for $secs seconds; prints its header's figures
measure() {
	label=$1
	pid=$2
	# the capture is on before top comes (shared): its start is not counted
	c0=$(agent_cpu_ns "$pid")
	tmux -f /dev/null -S "$sock" new-session -d -s top -x 160 -y 40 \
		"'$mw' top -p $pid -i 500ms --capture now --no-report -f -o top.log 2>top.err; sleep 600"
	t0=$(date +%s.%N)
	sleep "$secs"
	tmux -S "$sock" capture-pane -p -t top >pane.txt
	c1=$(agent_cpu_ns "$pid")
	t1=$(date +%s.%N)
	tmux -S "$sock" send-keys -t top q
	sleep 2
	tmux -S "$sock" kill-session -t top 2>/dev/null
	view=$(grep -o 'view every .*' pane.txt | head -n 1)
	printf "%-34s %s\n" "$label" "${view:-no view: $(head -n 3 pane.txt | tr '\n' ' ')}"
	printf "%-34s agent thread CPU %.1f ms over %.1f s: %.3f %% of one CPU\n" "" \
		"$(echo "($c1 - $c0) / 1000000" | bc -l)" "$(echo "$t1 - $t0" | bc -l)" \
		"$(echo "($c1 - $c0) / 10000000 / ($t1 - $t0)" | bc -l)"
}

# the demo, attached (its capture started by top)
"$demo" $((secs + 30)) >demo.out 2>&1 &
d=$!
pids="$pids $d"
sleep 1
measure "demo (attached, 512 KiB rate)" "$d"
kill "$d" 2>/dev/null

# 100 000 stacks, preloaded, every allocation recorded
LD_PRELOAD="$agent" MEMWATCH_AGENT_OPTIONS="capture=now,rate=1,max-stacks=201000" \
	"$stacks" 100000 wait >w.out 2>w.err &
w=$!
pids="$pids $w"
i=0
while ! grep -q ready w.out 2>/dev/null && [ $i -lt 1200 ]; do
	sleep 0.1
	i=$((i + 1))
done
"$mw" snap -p "$w" -o s.snap -f >snap.out 2>&1
printf "%-34s %s\n" "report_stacks 100000 (rate 1)" "$(grep -o 'in [0-9]* stacks' snap.out | head -n 1)"
measure "report_stacks 100000 (rate 1)" "$w"
kill "$w" 2>/dev/null
