#!/bin/sh
# run-watch-basic.sh: watching one process writes a run.log with the metadata, the
# column header and about duration/interval samples; a growing target's RSS grows
# by what it allocated, a flat one's stays flat; no status line off a terminal.
. "$top_srcdir/tests/lib.sh"

cols='time_s pid rss_kib anon_kib file_kib shmem_kib swap_kib vsz_kib pss_kib uss_kib hwm_kib cgroup_kib cgroup_limit_kib'

# grow: 1 MiB every 100 ms, 30 times (30 MiB over 3 s), then hold
start_target "$TARGETS/grow" 1024 100 30
grow=$target_pid
# the shell's fork has become the target (its command line is in the log)
wait_until "grep -q grow /proc/$grow/cmdline 2>/dev/null" 10
run_mw 0 -p "$grow" -i 200ms -d 4s -o grow.log
[ -s err ] && fail "stderr is not empty off a terminal: $(cat err)"
expect_grep '^# memwatch run\.log 2$' grow.log
expect_grep "^# command: memwatch -p $grow -i 200ms -d 4s -o grow.log\$" grow.log
expect_grep '^# start: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z [0-9]+\.[0-9]{3}$' grow.log
expect_grep '^# interval_ms: 200$' grow.log
expect_grep "^# process: $grow .*/grow 1024 100 30\$" grow.log
expect_grep '^# pss: no$' grow.log
expect_grep '^# event 0\.000 - start$' grow.log
expect_grep '^# event [0-9.]+ - end reason=duration$' grow.log
[ "$(grep -v '^#' grow.log | head -n 1)" = "$cols" ] || fail "column header is not '$cols'"
# every sample line: 13 columns, the pid, numbers and '-' for pss/uss, VmHWM,
# the memory cgroup's usage and limit ('-' when there is none)
bad=$(grep -v '^#' grow.log | sed 1d | grep -Evc "^[0-9]+\.[0-9]{3} $grow( [0-9]+){6} - - [0-9]+ ([0-9]+|-) ([0-9]+|-)\$")
[ "$bad" -eq 0 ] || fail "$bad malformed sample lines"
# VmHWM is the most RSS it ever had: never below RSS, never falling
awk -v p="$grow" '$2 == p { if ($11 < $3 || (n++ && $11 < hwm)) bad = 1; hwm = $11 }
	END { exit bad }' grow.log || fail "hwm_kib is below rss_kib or fell"
# 4 s at 200 ms: 21 samples on an idle machine; a loaded one may skip a few
n=$(grep -Ec "^[0-9.]+ $grow " grow.log)
[ "$n" -ge 12 ] && [ "$n" -le 22 ] || fail "$n samples for 4 s at 200 ms"
# RSS and anon never fall, and grew by about the 30 MiB allocated
awk -v p="$grow" '$2 == p { if (n++ && ($3 < rss || $4 < anon)) bad = 1; rss = $3; anon = $4 }
	END { exit bad }' grow.log || fail "RSS or anon fell while the target only grew"
first=$(awk -v p="$grow" '$2 == p { print $4; exit }' grow.log)
last=$(awk -v p="$grow" '$2 == p { v = $4 } END { print v }' grow.log)
growth=$((last - first))
[ "$growth" -ge 15000 ] && [ "$growth" -le 40000 ] ||
	fail "anon grew by $growth KiB, expected about 30720"
# the sample times go up in steps of about the interval
awk -v p="$grow" '$2 == p { if (n++ && ($1 <= t || $1 - t > 2)) bad = 1; t = $1 }
	END { exit bad }' grow.log || fail "sample times are not increasing by about 200 ms"
# the last sample is at the duration
awk -v p="$grow" '$2 == p { t = $1 } END { exit !(t >= 3.9 && t <= 5) }' grow.log ||
	fail "last sample not at about 4 s"

# flat: 16 MiB touched once; /proc/PID form; the watch command's name
start_target "$TARGETS/flat" 16
flat=$target_pid
# until its memory is touched (a loaded machine may take a while)
wait_until "awk '/^RssAnon:/ { exit !(\$2 >= 16384) }' /proc/$flat/status 2>/dev/null" 20
run_mw 0 watch -p "/proc/$flat" -i 100ms -d 1s -o flat.log --pss
expect_grep "^# command: memwatch watch -p /proc/$flat " flat.log
expect_grep '^# pss: yes$' flat.log
n=$(grep -Ec "^[0-9.]+ $flat( [0-9]+){9} ([0-9]+|-) ([0-9]+|-)\$" flat.log)
[ "$n" -ge 5 ] || fail "$n samples with PSS and USS for the flat target"
awk -v p="$flat" '$2 == p { if ($4 < min || !n++) min = $4; if ($4 > max) max = $4 }
	END { exit !(max - min <= 256 && min >= 16384) }' flat.log ||
	fail "flat target's anon is not flat at >= 16 MiB"
# the figures are the kernel's: RSS, anon and VSZ as /proc/PID/status has them now
# (the flat target does not change; allow a few pages of drift)
awk -v p="$flat" '$2 == p { r = $3; a = $4; v = $8 }
	END { print r, a, v }' flat.log >logged
awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 } /^VmSize:/ { v = $2 }
	END { print r, a, v }' "/proc/$flat/status" >kernel
read -r lr la lv <logged
read -r kr ka kv <kernel
for pair in "$lr $kr RSS" "$la $ka anon" "$lv $kv VSZ"; do
	set -- $pair
	d=$(($1 - $2))
	[ "${d#-}" -le 64 ] || fail "$3 logged $1 KiB, /proc/$flat/status says $2 KiB"
done
# PSS and USS are at most RSS, and USS covers the 16 MiB touched
awk -v p="$flat" '$2 == p && ($9 > $3 || $10 > $3 || $10 < 16384) { bad = 1 } END { exit bad }' flat.log ||
	fail "PSS/USS out of range"

# the log on standard output holds nothing but log lines, even when a capture
# would print its report there (the report is left out)
start_target "$TARGETS/grow" 1024 50 40
g2=$target_pid
wait_until "grep -q grow /proc/$g2/cmdline 2>/dev/null" 10
run_mw 0 -p "$g2" -i 100ms -d 2s -t +4MiB -o -
bad=$(grep -Evc '^(#|time_s |[0-9]+\.[0-9]{3} )' out)
[ "$bad" -eq 0 ] || fail "$bad lines on stdout that are not the log's: $(grep -Ev '^(#|time_s |[0-9])' out | head -3)"
expect_grep '^# event [0-9.]+ - end reason=duration$' out
kill "$g2"

# the default name: memwatch-PID.log, in the current directory
run_mw 0 -p "$flat" -i 100ms -d 300ms
[ -s "memwatch-$flat.log" ] || fail "no default log memwatch-$flat.log"
# and a second run does not overwrite it
cp "memwatch-$flat.log" before.log
run_mw 1 -p "$flat" -i 100ms -d 300ms
expect_err_line "'memwatch-$flat.log' exists \(use --force to overwrite\)"
cmp -s before.log "memwatch-$flat.log" || fail "existing log was changed"
run_mw 0 -p "$flat" -i 100ms -d 300ms --force
cmp -s before.log "memwatch-$flat.log" && fail "--force did not overwrite"

# on a terminal: the live status line, cleared at the end
if command -v script >/dev/null 2>&1; then
	script -qec "'$MEMWATCH' -p $flat -i 100ms -d 500ms -o tty.log" typescript >/dev/null 2>&1 </dev/null
	grep -aq 'RSS [0-9.]* MiB .* since start .*/min .* elapsed' typescript ||
		fail "no status line on a terminal: $(cat -v typescript)"
	script -qec "'$MEMWATCH' -q -p $flat -i 100ms -d 300ms -o tty-q.log" typescript-q >/dev/null 2>&1 </dev/null
	grep -aq 'since start' typescript-q && fail "--quiet still shows the status line"
fi
finish
