#!/bin/sh
# run-node-exit.sh: node ending while its JavaScript heap is captured, with
# snapshots taken every few MiB of growth: its event loop running dry (node
# tears its environment and isolate down: the agent's cleanup hook forgets
# them), process.exit(), and the same under memwatch run (whose last
# snapshot is written at exit). node exits 0 every time, no crash; memwatch -p
# exits 7 (every watched process exited) with its report, memwatch run with
# node's status, 0; neither says more of the end than that.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/node-lib.sh"
need_ptrace
need_node

# ends NAME MODE: js_grow.js MODE 3 watched by memwatch -p until it ends
ends() {
	start_js "$1" "$2" 3 || return 0
	run_mw 7 -p "$t" -i 100ms -q --capture now --snap-every +4MiB -o "$1.log"
	cp out "$1.report"
	cp err "$1.stderr"
	expect_target_exit "$t" "$1"
	expect_no_grep 'Segmentation|Abort|FATAL|core dumped' "$1.err"
	expect_grep "^# event [0-9.]+ $t capture-start " "$1.log"
	expect_grep "^# event [0-9.]+ $t snapshot .*path=.*\\.2\\.snap" "$1.log"
	expect_grep 'retainObjects  .*js_grow\.js' "$1.report"
	# a snapshot between the isolate's end and the process's may say that
	# the isolate was torn down; early ones on a loaded machine that the
	# profiler has not started yet
	expect_no_grep 'not sampled: (no |out of|V8)|crash|signal' "$1.stderr"
}

ends dry end
ends exit exit

# memwatch run: its last snapshot written by the agent at exit
run_mw 0 run -q -i 100ms --snap-every +4MiB -o run.log -- "$NODE" "$JS" end 3
cp out run.report
cp err run.stderr
expect_grep '^ok ' run.report
expect_grep 'never freed at exit' run.report
expect_no_grep 'Segmentation|Abort|FATAL' run.stderr
# (at the start, on a loaded machine, the first snapshots may come before
# V8's profiler starts, and say so; a snapshot that comes as node ends may
# find its isolate torn down: said once, the one line)
expect_no_grep 'not sampled: (no |out of|V8)' run.stderr
[ "$(grep -c 'not sampled: the isolate' run.stderr)" -le 1 ] ||
	fail "the torn-down isolate was said more than once: $(cat run.stderr)"
# the last snapshot taken while it grew, once V8's profiler had started, has
# its JavaScript objects. On a loaded machine the snapshots taken while it
# grew may all come before the agent found node's JavaScript thread, before
# node made its environment (node 18 answers before that: the thread is asked
# again), or before that thread's first safe point, and say so: then there is
# none to check (the watches above check the rows under memwatch -p)
found= early=0
for snap in $(ls run.*.snap | grep -v -e -exit -e -final | sort -t. -k3 -n -r); do
	run_mw 0 show --kind js "$snap"
	if grep -Eq 'not sampled in this snapshot: the JavaScript thread (has not reached a safe point|is not found yet|is not in a node environment yet)' out; then
		early=$((early + 1))
		continue
	fi
	found=$snap
	expect_grep 'retainObjects  .*js_grow\.js' out
	break
done
if [ -z "$found" ]; then
	[ "$early" -gt 0 ] || fail "memwatch run took no snapshot while node grew"
	echo "note: memwatch run's $early snapshots while node grew all came before V8's profiler started" >&2
fi
finish
