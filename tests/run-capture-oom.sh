#!/bin/sh
# run-capture-oom.sh: a program in a memory cgroup (v1) limited to 160 MiB
# grows from fill_orders() until the OOM killer kills it. The run log has the
# cgroup's usage and limit, --metrics the time left until the limit while it
# grows, and the end says it was the OOM killer, with the limit and how close
# the last snapshot was, and names the leak. The cgroup is made by the test
# and removed at its end; without the memory controller of cgroup v1 (or the
# right to make a cgroup in it) the test is skipped. (Version 2's files are
# read in tests/unit/test_cgroup.)
. "$top_srcdir/tests/lib.sh"

need_ptrace

memcg_v1 memwatch-test
echo $((160 << 20)) > "$cg/memory.limit_in_bytes" || skip "cannot set a memory cgroup's limit"
# no swap to escape to
[ -w "$cg/memory.memsw.limit_in_bytes" ] && echo $((160 << 20)) > "$cg/memory.memsw.limit_in_bytes" 2>/dev/null
[ -w "$cg/memory.swappiness" ] && echo 0 > "$cg/memory.swappiness" 2>/dev/null
grep -q '^oom_kill ' "$cg/memory.oom_control" || skip "this kernel does not count OOM kills (oom_kill in memory.oom_control)"

# the program moves itself into the cgroup, then runs; it grows by 25 MiB/s
# after 1.5 s of quiet
sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" 1500' sh "$cg" "$TARGETS/oom_leaker" > leaker.out &
l=$!
started_pids="$started_pids $l"
wait_exec "$l" "$TARGETS/oom_leaker"
wait_libc "$l"
grep -q "^[0-9]*:\([^:]*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}:$cgrel\$" "/proc/$l/cgroup" ||
	fail "the program is not in the test's cgroup: $(cat /proc/$l/cgroup)"

"$MEMWATCH" -p "$l" -t +32MiB -i 250ms -d 40s -q -o oom.log --metrics oom.prom >out 2>err &
w=$!
started_pids="$started_pids $w"
# while it grows: the seconds until the limit, which come down to what the
# growth of 25 MiB/s leaves (the first figures, as it starts, are longer)
wait_until "grep -Eq '^memwatch_seconds_to_limit\{pid=\"$l\",command=\"[^\"]*oom_leaker 1500\"\} [0-9.]+\$' oom.prom 2>/dev/null" 30
cp oom.prom first.prom
expect_grep "^memwatch_cgroup_limit_bytes\{pid=\"$l\",[^}]*\} $((160 << 20))\$" first.prom
expect_grep "^memwatch_cgroup_usage_bytes\{pid=\"$l\",[^}]*\} [0-9]+\$" first.prom
wait_until "awk '/^memwatch_seconds_to_limit\{pid=\"$l\"/ { found = 1; exit !(\$NF < 10) } END { if (!found) exit 1 }' oom.prom 2>/dev/null" 30

# the OOM killer ends the program, and with it the watch (a -p process gone: 7)
wait "$w"
st=$?
[ "$st" -eq 7 ] || { fail "memwatch exited $st, expected 7"; sed 's/^/  | /' err >&2; }
wait "$l"
lst=$?
[ "$lst" -eq 137 ] || fail "the program exited $lst, expected 137 (SIGKILL)"
grep -q '^oom_kill [1-9]' "$cg/memory.oom_control" || fail "the cgroup counted no OOM kill"

# the run log: usage and limit in every sample (but one of a process that is
# exiting, whose memory is gone already); the exit says oom
awk -v p="$l" '$2 == p && $3 > 0 { n++; if ($13 != 163840 || $12 !~ /^[0-9]+$/) bad = 1 }
	END { exit bad || !n }' oom.log || fail "a sample without the cgroup's usage and limit"
expect_grep "^# event [0-9.]+ $l exit oom=1 limit=$((160 << 20))\$" oom.log
# the end: who killed it, at which limit, how close the last snapshot was;
# then the leak, with its file and line, and no section at the peak (the
# last snapshot is the peak)
expect_grep "^memwatch: pid $l was killed by the OOM killer at [0-9.]+ s: its cgroup's limit is 160 MiB; the last snapshot, [0-9.]+ s before, is the report's end\$" out
# (the table of two snapshots: its status; the trend of three or more: its
# verdict, a steady leak)
expect_grep "^ +1 +\+[0-9.]+ MiB .*((new|grown) +| leak\? .* )fill_orders +oom_leaker\.c:[0-9]+$" out
expect_no_grep "at the peak" out
# the last snapshot came within a few intervals of the kill
before=$(sed -n "s/.*the last snapshot, \([0-9]*\)\.[0-9] s before.*/\1/p" out)
expect_range "seconds from the last snapshot to the kill" "${before:-x}" 0 3

# On a terminal, the status line says the time left until the limit, and the
# kill is said at the end without a capture too.
if command -v script >/dev/null 2>&1; then
	sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" 500' sh "$cg" "$TARGETS/oom_leaker" > leaker2.out &
	l2=$!
	started_pids="$started_pids $l2"
	wait_exec "$l2" "$TARGETS/oom_leaker"
	script -qec "'$MEMWATCH' -p $l2 --capture never -i 250ms -d 40s -o tty.log" typescript >/dev/null 2>&1 </dev/null
	wait "$l2"
	grep -aEq 'RSS [0-9.]+ MiB .* elapsed  limit in [0-9.]+ m?s' typescript ||
		fail "no time to the limit on the status line: $(tr '\r' '\n' < typescript | cat -v | tail -n 5)"
	grep -aq "memwatch: pid $l2 was killed by the OOM killer at [0-9.]* s: its cgroup's limit is 160 MiB" typescript ||
		fail "the kill is not said without a capture: $(cat -v typescript | tail -n 3)"
fi

# A process in no limited cgroup: nothing said of OOM or limits.
start_target "$TARGETS/grow" 1024 50 40
g=$target_pid
wait_libc "$g"
run_mw 0 -p "$g" --capture never -i 250ms -d 2s -q -o free.log --metrics free.prom
expect_no_grep "OOM killer" out
finish
