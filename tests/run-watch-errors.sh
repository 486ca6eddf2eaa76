#!/bin/sh
# run-watch-errors.sh: bad input gives one line "memwatch: ..." and its status:
# bad interval, duration, size, trigger (2), -p missing (2), no such process (4),
# an existing output (1, untouched), an unwritable output path (1), a full disk (1).
. "$top_srcdir/tests/lib.sh"

start_target "$TARGETS/flat" 1
p=$target_pid

run_mw 2 -p "$p" -i 0
expect_err_line "--interval: duration '0' out of range \\(1ms to 36500d\\)"
run_mw 2 -p "$p" -i 1e99s
expect_err_line "--interval: duration '1e99s' out of range \\(1ms to 36500d\\)\$"
# (-d 1ms: a memwatch that took the interval would end at once, not in 100 years)
run_mw 2 -p "$p" -d 1ms -i 36501d -o toolong.log
expect_err_line "--interval: duration '36501d' out of range \\(1ms to 36500d\\)\$"
rm -f toolong.log
run_mw 2 -p "$p" -i 5x
expect_err_line "--interval: invalid duration '5x'"
run_mw 2 -p "$p" --interval=
expect_err_line "--interval: invalid duration ''"
run_mw 2 -p "$p" -d -3s
expect_err_line "--duration: invalid duration '-3s'"
run_mw 2 -p "$p" -d soon
expect_err_line "--duration: invalid duration 'soon'"
run_mw 2 -p "$p" -r 12Q
expect_err_line "invalid size '12Q'"
run_mw 2 -p "$p" -r 0
expect_err_line "invalid sample rate '0'"
# the agent keeps at most 256 frames: a deeper --max-depth is refused at once,
# not by the agent after it is loaded (one limit, in the protocol header)
run_mw 2 -p "$p" --max-depth 300 --capture now -d 1s -o depth.log
expect_err_line "invalid --max-depth '300' \\(a whole number from 1 to 256\\)$"
[ -e depth.log ] && fail "--max-depth 300 started a watch"
run_mw 0 -p "$p" --max-depth 256 --capture now -i 100ms -d 1s -q -o depth.log
expect_grep "capture-start rate=[0-9]+ depth=256" depth.log
rm -f depth.*
run_mw 2 -p "$p" -t 64MiB
expect_err_line "invalid trigger '64MiB'"
run_mw 2 -p "$p" --snap-every sometimes
expect_err_line "invalid snapshot step 'sometimes'"
run_mw 2 -p "$p" --capture maybe
expect_err_line "invalid --capture 'maybe'"
run_mw 2 -p "$p" --max-snaps -1
expect_err_line "invalid --max-snaps '-1'"
run_mw 2 -p "$p" --frobnicate
expect_err_line "unknown option '--frobnicate'"
run_mw 2 -p
expect_err_line "option '-p' needs an argument"
expect_grep "^  hint: memwatch --help$" err
# every command says it the same way, its name first (memwatch-safety(7): errors)
run_mw 2 snap -p
expect_err_line "snap: option '-p' needs an argument$"
expect_grep "^memwatch: snap: option '-p' needs an argument$" err
expect_grep "^  hint: memwatch snap --help$" err
run_mw 2 snap --frobnicate
expect_err_line "snap: unknown option '--frobnicate'$"
expect_grep "^  hint: memwatch snap --help$" err
run_mw 2 run --frobnicate -- true
expect_err_line "unknown option '--frobnicate'$"
expect_grep "^memwatch: unknown option '--frobnicate'$" err
run_mw 2 -p 12ab
expect_err_line "invalid pid '12ab'"
run_mw 2 -i 1s
expect_err_line "no process to watch: -p PID is missing"
run_mw 2 watch
expect_err_line "no process to watch: -p PID is missing"
run_mw 2 -p "$p" "$p"
expect_err_line "unexpected argument '$p'"
[ -n "$(ls)" ] && [ "$(ls | grep -v '^out$' | grep -v '^err$')" != "" ] &&
	fail "a usage error left files: $(ls)"

# a pid that does not exist: the highest possible pid + 1 cannot
max=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 4194304)
run_mw 4 -p "$max"
expect_err_line "pid $max: no such process"
[ -e "memwatch-$max.log" ] && fail "a log was created for a missing pid"

# a kernel thread (pid 2, kthreadd, outside a pid namespace) has no user
# memory: said as such, status 4, no log
kt=
for f in /proc/2/stat /proc/[0-9]*/stat; do
	fl=$(sed 's/.*) //' "$f" 2>/dev/null | cut -d' ' -f7)
	case $fl in '' | *[!0-9]*) continue ;; esac
	if [ $((fl / 2097152 % 2)) -eq 1 ]; then
		kt=${f#/proc/}
		kt=${kt%/stat}
		break
	fi
done
if [ -n "$kt" ]; then
	run_mw 4 -p "$kt" -i 100ms -d 300ms -o kthread.log
	expect_err_line "pid $kt is a kernel thread: it has no user memory to watch\$"
	[ -e kthread.log ] && fail "a log was created for a kernel thread"
	run_mw 4 snap -p "$kt" -w 1s -o kthread.snap
	expect_err_line "pid $kt is a kernel thread: it has no heap to snapshot\$"
	[ -e kthread.snap ] && fail "a snapshot was written for a kernel thread"
	rm -f kthread.log kthread.snap
else
	echo "no kernel thread is visible here: the kernel thread case is left out" >&2
fi

# a thread id stands for its process, with a warning; twice the same process is
# a usage error
start_target "$TARGETS/flat" 1 -1 1
thr=$target_pid
wait_until "[ \$(ls /proc/$thr/task 2>/dev/null | wc -l) -ge 2 ]" 10
tid=$(ls "/proc/$thr/task" | grep -vx "$thr" | head -n 1)
run_mw 0 -p "$tid" -i 100ms -d 200ms -o thread.log
expect_grep "^memwatch: warning: pid $tid is a thread of process $thr: watching the process\$" err
expect_grep "^[0-9.]+ $thr " thread.log
expect_grep "^# process: $thr " thread.log
run_mw 2 -p "$thr,$tid" -d 200ms -o thread2.log
expect_err_line "pid $tid is a thread of process $thr, which is watched already"

# an existing output is refused and left as it was
echo precious > keep.log
run_mw 1 -p "$p" -d 200ms -o keep.log
expect_err_line "'keep.log' exists \(use --force to overwrite\)"
[ "$(cat keep.log)" = precious ] || fail "keep.log was changed"
# also through a symbolic link to elsewhere
ln -s keep.log link.log
run_mw 1 -p "$p" -d 200ms -o link.log
expect_err_line "'link.log' exists"
[ "$(cat keep.log)" = precious ] || fail "keep.log was changed through a link"

# an unwritable path
run_mw 1 -p "$p" -d 200ms -o no/such/dir/run.log
expect_err_line "cannot create 'no/such/dir/run.log': No such file or directory"
if [ "$(id -u)" -ne 0 ]; then
	mkdir ro && chmod 555 ro
	run_mw 1 -p "$p" -d 200ms -o ro/run.log
	expect_err_line "cannot create 'ro/run.log': Permission denied"
fi

# a full disk: the watch ends at once with status 1 and says so
if [ -w /dev/full ]; then
	run_mw 1 -p "$p" -i 100ms -d 10s -o /dev/full --force
	expect_err_line "cannot write '/dev/full': No space left on device"
fi
finish
