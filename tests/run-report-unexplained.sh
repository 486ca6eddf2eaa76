#!/bin/sh
# run-report-unexplained.sh: programs nobody here wrote, growing in a way that
# malloc sampling alone cannot see: node growing JavaScript objects (V8's heap,
# its own mmaps) and Debian's python3 growing small objects (CPython's own
# arenas). The watch triggers, attaches and captures; the program goes on
# unharmed, and the report never says that nothing grew. The agent now samples
# CPython's object allocator (tests/run-python-watch.sh has more) and the
# program's own anonymous mmaps, so both reports explain the growth: node's
# is headed by the JavaScript function that grows, from V8's own sampling
# heap profiler (marked [js]), or by V8's page allocator ([mmap]) when the
# profiler could not be read in time.
. "$top_srcdir/tests/lib.sh"

need_ptrace
py=/usr/bin/python3
node=$(command -v node || command -v nodejs || true)
[ -x "$py" ] || [ -n "$node" ] || skip "neither /usr/bin/python3 nor node is installed (sh tests/install-deps.sh --tests)"

# watch_growth NAME CMD...: start CMD (it grows ~30 MiB/s up to 400 MiB, and
# runs for 300 s, longer than the slowest watch, unless stopped), watch it
# until 8 s with a +32 MiB trigger, check the report and the program: still
# running, then stopped by SIGTERM.
watch_growth() {
	name=$1
	shift
	"$@" > "$name.out" &
	t=$!
	started_pids="$started_pids $t"
	wait_until "grep -q ready $name.out" 30 || return 0
	run_mw 0 -p "$t" -i 200ms -d 8s -q --trigger +32MiB -o "$name.log"
	expect_grep "^# event [0-9.]+ $t capture-start " "$name.log"
	expect_grep "^memwatch: pid $t: [0-9]+ snapshots; growth between " out
	expect_grep "^  sampled stacks explain [0-9]+ % of the RSS growth \(\+[0-9.]+ MiB\)$" out
	if [ "$name" = python ]; then
		expect_grep "^ +1 +\+.*  <module>  .*grow_small\.py:[0-9]+" out
	else
		# (the JavaScript function when V8's profiler was read for the
		# last snapshot; V8's page allocator when it was not, on a loaded
		# machine: run-node-js.sh checks the JavaScript rows)
		expect_grep "^ +1 +\+.*(  \(anonymous\)  grow_js\.js:[0-9]+ \[js\]|  v8::.*\[mmap\])" out
	fi
	expect_no_grep "nothing grew" out
	kill -0 "$t" 2>/dev/null || fail "$name died while or after being watched"
	kill -TERM "$t" 2>/dev/null
	wait "$t"
	st=$?
	[ "$st" -eq 143 ] || fail "$name exited with status $st, not by the SIGTERM sent"
}

if [ -x "$py" ]; then
	watch_growth python "$py" "$top_srcdir/tests/targets/grow_small.py" 300 30 400
else
	echo "python3: /usr/bin/python3 is not installed, its half is skipped" >&2
fi
if [ -n "$node" ]; then
	watch_growth node "$node" "$top_srcdir/tests/targets/grow_js.js" 300 30 400
else
	echo "node: not installed, its half is skipped" >&2
fi
finish
