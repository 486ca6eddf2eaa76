#!/bin/sh
# run-node-serve.sh: memwatch snap -p on a node HTTP server on a loopback
# port, idle and then busy under a bounded client loop: the server keeps
# serving, no other port is opened (no inspector: checked with ss), and the
# largest delay of its event loop during the attach, the capture and the
# snapshot is measured (perf_hooks) and stated. Idle, the snapshot has the
# JavaScript objects or one line saying why not (V8's profiler starts at the
# JavaScript thread's next safe point, and an idle event loop runs no
# JavaScript); busy, it has them (at a 16 KiB rate: the records the server
# keeps of its requests, logRequest's).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/node-lib.sh"
need_ptrace
need_node
command -v ss >/dev/null 2>&1 || skip "ss is not installed (package iproute2)"
command -v curl >/dev/null 2>&1 || skip "curl is not installed (package curl)"

# listening PID: the TCP ports PID listens on, one a line, in listen.out
listening() {
	ss -ltnpH >ss.out 2>&1 || fail "ss -ltnp: $(cat ss.out)"
	grep "pid=$1," ss.out | awk '{ n = split($4, a, ":"); print a[n] }' >listen.out
}

# delay WHAT: the server's largest event loop delay since the last ask, said;
# it must stay under 1 s
delay() {
	if ! curl -sS -m 10 "http://127.0.0.1:$port/delay" >delay.out 2>&1; then
		fail "$1: the server did not answer: $(cat delay.out)"
		return 0
	fi
	echo "$1: the event loop's largest delay was $(cat delay.out) ms"
	expect_range "$1: event loop delay (ms)" "$(cat delay.out)" 0 999
}

start_js srv serve || finish
port=$(awk '$1 == "ready" { print $2 }' srv.out)
s=$t
listening "$s"
expect_range "ports the server listens on before" "$(grep -c '' listen.out)" 1 1
expect_grep "^$port\$" listen.out
delay "before"

# idle: the server answers after
run_mw 0 snap -p "$s" -w 1s -o idle.snap
cp err idle.err
expect_no_grep 'not sampled: [^t]|not sampled: the isolate' idle.err
run_mw 0 show idle.snap
delay "idle, attached and snapshot"

# busy: 6000 requests from a bounded client loop, a snapshot of 4 s taken
# meanwhile (on a loaded machine 2 s held too few of them); every request is
# answered
"$NODE" "$JS" client "$port" 6000 >client.out 2>client.err &
c=$!
started_pids="$started_pids $c"
wait_until "[ -s client.out ] || [ \$(grep -c . /dev/null) -eq 0 ]" 1 >/dev/null 2>&1
run_mw 0 snap -p "$s" -w 4s -r 16KiB -o busy.snap
expect_no_grep 'not sampled' err
wait "$c"
expect_grep '^ok 6000$' client.out
delay "busy, snapshot under load"
run_mw 0 show --kind js busy.snap
# the records logRequest keeps; once TurboFan has inlined it into the request
# handler, V8's sampling heap profiler names the handler's optimized frame
# alone (it does not expand inlined functions): seen on node 18 under a
# loaded machine's 6000 requests
L_handler=$(grep -n 'http.createServer((req, res) =>' "$JS_HOST" | cut -d: -f1)
expect_grep "  (logRequest  .*js_grow\.js:[0-9]+( \[js\])?|\(anonymous\)  js_grow\.js:$L_handler \[js\])\$" out

# no port but the server's: no inspector
listening "$s"
expect_range "ports the server listens on after" "$(grep -c '' listen.out)" 1 1
expect_grep "^$port\$" listen.out

step srv
expect_target_exit "$s" srv
finish
