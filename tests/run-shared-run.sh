#!/bin/sh
# run-shared-run.sh: memwatch run of a program and a memwatch -p of the same
# process. The watch joins the preloaded agent's capture; its end leaves memwatch
# run capturing: run's later snapshots and its snapshot at exit hold the leak.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/shared-lib.sh"

# The demo leaks about 6 MiB/s in cache_store (demo.c:25).
start_mw r run -i 250ms -q --snap-every 1s --max-snaps 40 -o r.log -- "$TARGETS/demo" 20
r=$mw_pid
wait_until "grep -q '^# process: ' r.log 2>/dev/null" 20
c=$(sed -n 's/^# process: \([0-9]*\) .*/\1/p' r.log)
[ -n "$c" ] && started_pids="$started_pids $c"
wait_until "grep -q ' snapshot path=' r.log 2>/dev/null" 20 || show_err r

run_mw 0 -p "$c" -i 250ms -d 3s -q --capture now -o w.log
expect_grep "^# event [0-9.]+ $c attach .*reused=1" w.log
expect_grep "^# event [0-9.]+ $c capture-start rate=524288 .*shared=1" w.log
snaps_not_empty w w.log
expect_grep "cache_store" out

n=$(grep -c ' snapshot path=' r.log)
wait_until "[ \$(grep -c ' snapshot path=' r.log) -ge $((n + 2)) ]" 20 || show_err r
wait_mw r "$r" 0
snaps_not_empty r r.log
expect_grep "^# event [0-9.]+ $c snapshot path=r\.$c\.[0-9]+-exit\.snap .*exit=1" r.log
expect_grep "never freed at exit" r.out
expect_grep "cache_store" r.out
finish
