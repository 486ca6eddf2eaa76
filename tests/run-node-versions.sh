#!/bin/sh
# run-node-versions.sh: the JavaScript heap by JavaScript function on each
# node newer than the nodejs package's that tests/install-deps.sh --tests puts
# beside it: the official builds of node 22 (V8 12.4), 24 (V8 13.6) and 26
# (V8 14.6, whose profile samples are laid out anew and whose handle scopes
# are opened inline), and Debian sid's nodejs 24 (its shared libnode.so.137)
# run inside the sid root as a container would run it, memwatch on the host.
# On each: retainObjects() keeping small objects is the top row of memwatch
# -p's report with its file and line, of kind js, and explains >= 80 % of the
# RSS growth; a worker thread's workerObjects() is sampled too, its stacks
# ending in "(worker thread)", >= 80 % explained. On the first one present,
# a V8 made unreadable (MEMWATCH_TEST_V8_LAYOUT=fail in the target) is
# captured native-only, said in one line. A node that is missing is skipped
# with its reason; the test skips when none is there. NODE_VERSIONS="24 sid"
# runs only those.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
. "$top_srcdir/tests/node-lib.sh"
need_ptrace
need_snapdump

# js V: js_grow.js map watched by memwatch -p for 8 s on node V
js() {
	start_js "m$1" map 14 || return 0
	run_mw 0 -p "$t" -i 200ms -d 8s -q --trigger +32MiB -o "m$1.log"
	cp out "m$1.report"
	expect_no_grep 'js-not-sampled' "m$1.log"
	expect_no_grep 'node:' err
	expect_top_js "node $1: memwatch -p" "m$1.report"
	expect_explained "node $1: memwatch -p" "m$1.report" 80
	step "m$1"
	expect_target_exit "$t" "m$1"
	expect_no_grep 'Segmentation|Abort|FATAL' "m$1.err"
}

# worker V: js_grow.js worker on node V: its isolate found and sampled; a
# diff of two snapshots 64 MiB of RSS apart has workerObjects on top, under
# "(worker thread)"
worker() {
	local mw st row rss0
	start_js "w$1" worker || return 0
	"$MEMWATCH" -p "$t" --capture now -i 200ms -q -o "w$1.log" >"w$1.report" 2>"w$1.stderr" &
	mw=$!
	started_pids="$started_pids $mw"
	if wait_until "\"$CTL\" $t status 2>/dev/null | grep -q ' js-workers=1 '" 60; then
		run_mw 0 snap -p "$t" -w 0 -o "w$1a.snap"
		rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$t/status")
		wait_until "[ \$(awk '/^VmRSS:/ { print \$2 }' /proc/$t/status) -gt $((rss0 + 65536)) ]" 60
		run_mw 0 snap -p "$t" -w 0 -o "w$1b.snap"
		run_mw 0 diff "w$1a.snap" "w$1b.snap"
		cp out "w$1.diff"
		row=$(grep -E '^ +1 +\+' "w$1.diff")
		case $row in
		*"  workerObjects  "*"js_grow.js:"*"[js]"*) ;;
		*) fail "node $1: the top row of the diff is not workerObjects: $row"
		   sed 's/^/  | /' "w$1.diff" | head -n 30 >&2 ;;
		esac
		expect_grep '^ +\(worker thread\)' "w$1.diff"
		# (as run-node-worker: a worker's heap holds garbage while its
		# collector lags on a loaded machine; 78 % was seen at a load of 16)
		expect_explained "node $1: memwatch diff" "w$1.diff" 70
	else
		fail "node $1: no worker isolate sampled: $("$CTL" "$t" status 2>&1)"
	fi
	kill -INT "$mw"
	wait "$mw"
	st=$?
	[ "$st" -eq 130 ] || fail "node $1: memwatch -p ended by SIGINT: status $st, not 130: $(cat "w$1.stderr")"
	# two lines: the first terminates the worker and starts another
	step "w$1" && wait_ready "w$1" 2 && step "w$1"
	expect_target_exit "$t" "w$1"
	expect_no_grep 'Segmentation|Abort|FATAL' "w$1.err"
}

# unreadable V: node V told its V8 is not laid out as its headers say
unreadable() {
	local z
	MEMWATCH_TEST_V8_LAYOUT=fail start_fifo_target "u$1" "$NODE" "$JS" map 14
	z=$target_pid
	wait_until "[ -f u$1.out ] && grep -q '^ready' u$1.out" 30 || return 0
	run_mw 0 snap -p "$z" -w 1 -o "u$1.snap"
	expect_grep "^memwatch: pid $z: node: V8 $(echo "$V8_VERSION" | sed 's/\./\\./g') is not laid out as its headers say: captured native-only, without its JavaScript objects\$" err
	[ "$(grep -c 'node:' err)" -eq 1 ] || fail "node $1: more than one line about node: $(cat err)"
	"$CTL" "$z" status >"u$1.ctl" 2>&1 || fail "agentctl status: $(cat "u$1.ctl")"
	expect_grep ' js=unsupported ' "u$1.ctl"
	run_mw 0 show --kind js "u$1.snap"
	expect_no_grep 'retainObjects' out
	step "u$1"
	expect_target_exit "$z" "u$1"
}

ran=
skipped=
for v in ${NODE_VERSIONS:-22 24 26 sid}; do
	if ! node_find "$v"; then
		echo "node $v: skipped: $node_why"
		skipped="$skipped; node $v: $node_why"
		continue
	fi
	js "$v"
	worker "$v"
	[ -n "$ran" ] || unreadable "$v"
	ran="$ran $v"
done
[ -n "$ran" ] || skip "no node newer than 20 here${skipped}"
echo "ran on node$ran"
finish
