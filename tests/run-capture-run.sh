#!/bin/sh
# run-capture-run.sh: memwatch run: the command's stdin and stdout are its own,
# memwatch exits with its status, and the snapshot taken at its exit lists what
# was never freed, exactly at --sample-rate 1.
. "$top_srcdir/tests/lib.sh"

printf 'hello\nworld\n' > input
"$MEMWATCH" run -q -r 1 -o leak.log -- "$TARGETS/run_leaker" 3 < input > out 2> err
status=$?
[ "$status" -eq 3 ] || { fail "memwatch run exited $status, expected the command's 3"; cat err >&2; }
expect_grep '^echo: hello$' out
expect_grep '^echo: world$' out
pid=$(sed -n 's/^# process: \([0-9]*\) .*/\1/p' leak.log)
[ -n "$pid" ] || fail "no process line in the run log"
expect_grep "^# event [0-9.]+ $pid exit status=3" leak.log
expect_grep "^# event [0-9.]+ $pid snapshot path=leak\.$pid\.[0-9]+-exit\.snap .*exit=1" leak.log
snap=$(ls leak.*-exit.snap 2>/dev/null)
[ -s "$snap" ] || fail "no snapshot at exit"
# the leak view, printed at the end, names the site: one row, although the loop
# that calls it may be unrolled into several call sites (stacks that show the
# same frames are one row)
expect_grep 'never freed at exit' out
expect_grep '3.00 MiB +±0 B +[0-9.]+% +3 +3 +leak_block +run_leaker\.c:13' out
# the freed buffers are not in it
expect_no_grep 'churn' out

# by line, the file holds exactly the 3 MiB leaked there in 3 blocks
run_mw 0 show --by line "$snap"
expect_grep '3.00 MiB +±0 B +[0-9.]+% +3 +3 +leak_block +run_leaker\.c:13' out

# --capture never: no agent, no snapshot, same status
"$MEMWATCH" run -q --capture never -o plain.log -- "$TARGETS/run_leaker" 5 < input > out 2> err
status=$?
[ "$status" -eq 5 ] || fail "memwatch run --capture never exited $status, expected 5"
[ -z "$(ls plain.*.snap 2>/dev/null)" ] || fail "--capture never wrote a snapshot"

# a command that does not exist: 127, one line
run_mw 127 run -q -o none.log -- ./no-such-program
expect_err_line "cannot run './no-such-program': No such file or directory"
# no command at all: a usage error
run_mw 2 run -q
expect_err_line "run: no command given"
# --children: every process's last snapshot and capture-stop at the end of the
# watch are written in time order, however long the earlier ones took. (The
# sleeps outlive the watch: each says its pid, to be stopped at the test's
# end, whether or not its capture started in time on a loaded machine.)
run_mw 0 run -q -c --capture now -d 1500ms -o order.log -- \
	sh -c 'for i in 1 2 3; do sleep 30 & echo $! >> kids; done; wait'
for p in $(cat kids) $(sed -n 's/^# event [0-9.]* \([0-9]*\) capture-start .*/\1/p' order.log); do
	started_pids="$started_pids $p"
done
n=$(grep -c '^# event [0-9.]* [0-9]* capture-stop ' order.log)
[ "$n" -ge 3 ] || fail "$n capture-stop events, expected one per process (at least 3)"
awk '$2 == "event" { if ($3 + 0 < last) { print "event at " $3 " after one at " last; bad = 1 } last = $3 + 0 }
	END { exit bad }' order.log > order.out || fail "run.log's events are not in time order: $(cat order.out)"

finish
