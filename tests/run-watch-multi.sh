#!/bin/sh
# run-watch-multi.sh: several pids (a list and repeated -p) get one line each and
# a total; --children follows the whole tree, re-scanned every sample, with a
# process event for each member that joins.
. "$top_srcdir/tests/lib.sh"

start_target "$TARGETS/flat" 4
a=$target_pid
start_target "$TARGETS/flat" 8
b=$target_pid
start_target "$TARGETS/flat" 2
c=$target_pid
sleep 0.3
run_mw 0 -p "$a,$b" -p "$c" -i 100ms -d 600ms -o multi.log
for p in "$a" "$b" "$c"; do
	expect_grep "^# process: $p " multi.log
	n=$(grep -c "^[0-9.]* $p " multi.log)
	[ "$n" -ge 3 ] || fail "only $n samples of pid $p"
done
# each total line is the sum of the lines of its time
awk '$1 !~ /^#/ && $2 ~ /^[0-9]+$/ { s[$1] += $3 }
	$2 == "total" { n++; if (s[$1] != $3) bad = 1 }
	END { exit bad || !n }' multi.log || fail "total lines missing or not the sums"
# the default name for several pids
run_mw 0 -p "$a,$b" -i 100ms -d 200ms
[ -s "memwatch-$a-$b.log" ] || fail "no default log memwatch-$a-$b.log"

# a tree: 3 children 300 ms apart, the first with a grandchild; 8 MiB each
start_target "$TARGETS/forker" 3 8 300
root=$target_pid
# (the watch's 2.5 s count from its start, which came before the forker's
# exec: under a doubled load its last child once had not yet touched its
# memory at the last sample)
wait_exec "$root" "$TARGETS/forker"
run_mw 0 -p "$root" --children -i 100ms -d 2500ms -o tree.log
expect_grep '^# children: yes$' tree.log
n=$(grep -c "^# event [0-9.]* [0-9]* process ppid=[0-9]* cmd=.*forker" tree.log)
[ "$n" -eq 4 ] || fail "$n process events, expected 4 (3 children and a grandchild)"
# a grandchild's parent is a child, not the root
kid=$(awk -v r="$root" '$5 == "process" && $6 == "ppid=" r { print $4; exit }' tree.log)
expect_grep "^# event [0-9.]* [0-9]* process ppid=$kid " tree.log
# the members joined one after another: the first sample times differ
first_times=$(awk '$5 == "process" { print $3 }' tree.log | sort -u | wc -l)
[ "$first_times" -ge 2 ] || fail "every member joined at once: the tree was not re-scanned"
# at the end 5 processes and a total holding their 32 MiB
if ! awk '$2 == "total" { t = $4 } END { exit !(t >= 32768) }' tree.log; then
	fail "the last total's anon is below the 4 x 8 MiB of the tree"
	# (what each member read at the end)
	tail -n 12 tree.log >&2
fi
last=$(awk '$2 == "total" { t = $1 } END { print t }' tree.log)
n=$(awk -v t="$last" '$1 == t && $2 ~ /^[0-9]+$/' tree.log | wc -l)
[ "$n" -eq 5 ] || fail "$n processes in the last sample, expected 5"

# a member that exits and stays a zombie (its parent never reaps it) leaves the
# watch once: one process event, one exit event, no coming back
start_target "$TARGETS/forker" 1 1 100 600
root=$target_pid
run_mw 0 -p "$root" --children -i 100ms -d 2s -o zombie.log
n=$(grep -c '^# event [0-9.]* [0-9]* process ' zombie.log)
[ "$n" -eq 3 ] || fail "$n process events, expected 3 (a child, a grandchild, the one that exits)"
n=$(grep -c '^# event [0-9.]* [0-9]* exit$' zombie.log)
[ "$n" -eq 1 ] || fail "$n exit events, expected 1"
z=$(awk '$5 == "exit" { print $4 }' zombie.log)
grep -Eq '^State:[[:space:]]*Z' "/proc/$z/status" 2>/dev/null ||
	fail "pid $z is not a zombie: the test proves nothing"
last=$(awk '$2 == "total" { t = $1 } END { print t }' zombie.log)
awk -v z="$z" -v t="$last" '$1 == t && $2 == z { exit 1 }' zombie.log ||
	fail "the zombie $z is still sampled at the end"

# a zombie given with -p: it has exited
run_mw 4 -p "$z"
expect_err_line "pid $z: the process has exited"
finish
