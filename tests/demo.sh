#!/bin/sh
# demo.sh: memwatch's main job on the bundled demo workload. The demo service
# leaks about 6 MiB a second; memwatch watches it with no options, the trigger
# fires at +64 MiB, the agent is attached, snapshots are taken, and the report
# names the leaking function. Then the run is plotted, and the whole of it made
# into one HTML page (plot, time line, growth table, flame graph).
# Usage: tests/demo.sh [BUILD_DIR]   (default: the current directory)
set -u
build=$(cd "${1:-.}" && pwd)
out="$build/demo-out"
mkdir -p "$out"
cd "$out" || exit 1
rm -f memwatch-*.log memwatch-*.snap memwatch-*.png memwatch-*.html demo.stdout

"$build/tests/targets/demo" 30 > demo.stdout &
pid=$!
echo "demo: the demo service runs as pid $pid and leaks about 6 MiB/s; watching it:"
echo "\$ memwatch -p $pid"
"$build/memwatch" -p "$pid"
status=$?
# 7: the watch ended because the demo exited, as expected here
if [ "$status" -ne 0 ] && [ "$status" -ne 7 ]; then
	echo "demo: memwatch failed with status $status" >&2
	kill "$pid" 2>/dev/null
	exit 1
fi
wait "$pid"
log="memwatch-$pid.log"
echo
echo "\$ memwatch plot $log -o memwatch-$pid.png"
"$build/memwatch" plot "$log" -o "memwatch-$pid.png" || exit 1
echo "\$ memwatch report $log -o memwatch-$pid.html"
"$build/memwatch" report "$log" -o "memwatch-$pid.html" || exit 1
echo
echo "demo: files written in $out (open the .html in a browser):"
ls -1 "$log" memwatch-$pid*.snap "memwatch-$pid.png" "memwatch-$pid.html" 2>/dev/null | sed 's/^/  /'
