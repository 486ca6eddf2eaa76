#!/bin/sh
# run-node-worker-start.sh: worker threads are found however slowly they
# start. V8 forgets the interrupts asked of an isolate while node is still
# making it (a thread's first v8::Locker clears them), so a start asked then
# never runs: the agent asks again. Here each worker's start-up runs at nice
# 19 on one processor beside a busy loop, which stretches it from
# milliseconds to a second or more, so that the agent's look for new threads
# (once a second) finds most of them starting. All five workers are sampled,
# and a snapshot has their objects.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/node-lib.sh"
need_ptrace
need_node
need_snapdump
nice -n 19 sh -c 'renice -n 0 -p $$' >/dev/null 2>&1 ||
	skip "a thread cannot go back from nice 19 to 0 here (that needs CAP_SYS_NICE)"
cpu=$(taskset -pc $$ 2>/dev/null | sed -n 's/^.*: *\([0-9][0-9]*\).*$/\1/p')
[ -n "$cpu" ] || skip "taskset does not say which processors this test may use"

taskset -c "$cpu" sh -c 'while :; do :; done' &
started_pids="$started_pids $!"
start_fifo_target wk taskset -c "$cpu" "$NODE" "$JS" workers
t=$target_pid
wait_ready wk 1 60 || finish
"$MEMWATCH" -p "$t" --capture now -i 200ms -q -o w.log >w.report 2>w.stderr &
mw=$!
started_pids="$started_pids $mw"
workers 1
n=1
while [ "$n" -lt 5 ]; do
	n=$((n + 1))
	step wk || break
	wait_ready wk "$n" 120 || break
done
workers 5
run_mw 0 snap -p "$t" -w 0 -o a.snap
if "$SNAPDUMP" a.snap >a.txt 2>a.err; then
	expect_grep '"\(worker thread\)"' a.txt
else
	fail "snapdump a.snap: $(cat a.err)"
fi

kill -INT "$mw"
wait "$mw"
st=$?
[ "$st" -eq 130 ] || fail "memwatch -p ended by SIGINT: status $st, not 130: $(cat w.stderr)"
expect_no_grep 'Segmentation|Abort|FATAL' wk.err
end_target wk
expect_target_exit "$t" wk
finish
