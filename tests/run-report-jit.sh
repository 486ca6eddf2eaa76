#!/bin/sh
# run-report-jit.sh: frames in code compiled at run time (JIT) are named from
# the runtime's perf map (/tmp/perf-PID.map), read when the snapshot is stored
# and embedded in it, so the names outlive the map. First a target whose "JIT"
# stub (written into an executable mapping at run time) calls the leaking
# function; then Debian's node with --perf-basic-prof.
. "$top_srcdir/tests/lib.sh"

[ -f "$MEMWATCH_AGENT" ] || skip "the agent is not built ($MEMWATCH_AGENT)"
unset DEBUGINFOD_URLS

LD_PRELOAD="$MEMWATCH_AGENT" MEMWATCH_AGENT_OPTIONS=capture=now,rate=1 \
	start_target "$TARGETS/jit_leaker" 16 >target.out
wait_until "grep -q ready target.out" 30 || finish
[ -s "/tmp/perf-$target_pid.map" ] || fail "jit_leaker wrote no /tmp/perf-$target_pid.map"
run_mw 0 snap -p "$target_pid" -o a.snap
run_mw 0 snap -p "$target_pid" -E -o e.snap
kill "$target_pid"
wait "$target_pid" 2>/dev/null
rm -f "/tmp/perf-$target_pid.map"

# the map is gone: the names are in the snapshots
for s in a.snap e.snap; do
	run_mw 0 show --depth 3 "$s"
	expect_grep "^ +1 +1\.00 MiB .*   leak_fn  jit_leaker\.c:[0-9]+$" out
	expect_grep "^ +LazyCompile:\*handleRequest server\.js:42  \(0x[0-9a-f]+\)$" out
	expect_grep "^ +main  jit_leaker\.c:[0-9]+$" out
done
run_mw 0 show -F folded a.snap
expect_grep ';main;LazyCompile:\*handleRequest server\.js:42;leak_fn 1048576$' out

# node: Buffers made by a JavaScript function; its name comes from node's map
node=$(command -v node || command -v nodejs || true)
if [ -z "$node" ]; then
	echo "node is not installed: its half is skipped" >&2
	finish
fi
cat > grow.js <<'JS'
const kept = [];
function growBuffers() {
  for (let i = 0; i < 8; i++) kept.push(Buffer.alloc(256 * 1024, 1));
}
console.log("ready");
const timer = setInterval(() => {
  if (kept.length < 1600) growBuffers();
}, 100);
setTimeout(() => clearInterval(timer), 60000);
JS
start_target "$node" --perf-basic-prof --interpreted-frames-native-stack grow.js >node.out
wait_until "grep -q ready node.out" 30 || finish
# V8 writes its map through a buffer: the snapshot is taken once the map
# names the function (memwatch reads the map as it is when it stores one)
wait_until "grep -q growBuffers /tmp/perf-$target_pid.map" 30
run_mw 0 snap -p "$target_pid" -w 2 -o n.snap
kill "$target_pid"
wait "$target_pid" 2>/dev/null
rm -f "/tmp/perf-$target_pid.map"
run_mw 0 show -F folded n.snap
expect_grep 'growBuffers' out
finish
