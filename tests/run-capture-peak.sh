#!/bin/sh
# run-capture-peak.sh: a burst that is freed again. The program builds about
# 160 MiB in build_report() within about 2 s, holds it 3 s and frees it; the
# last snapshot holds nothing of it, and the report's section "at the peak"
# names build_report with its file and line. The snapshots are far apart
# (--snap-every), so the peak is between them: held while the heap rose, it
# is written once, when the heap came down, as the one peak snapshot on disk
# with one event. The run log's VmHWM keeps the peak RSS after it fell.
. "$top_srcdir/tests/lib.sh"

need_ptrace

start_target "$TARGETS/burst" 30 1500
b=$target_pid
wait_libc "$b"
run_mw 0 -p "$b" -t +32MiB --snap-every +1GiB -i 250ms -d 11s -q -o burst.log
expect_grep "^# event [0-9.]+ $b trigger " burst.log
expect_grep "^# event [0-9.]+ $b snapshot path=burst\.$b\.[0-9]+-final\.snap live=[0-9]+ .*final=1" burst.log

# the main report: growth between the first and the last snapshot, in which
# the burst is gone
sed -n "1,/^memwatch: pid $b: at the peak/p" out > main.txt
sed -n "/^memwatch: pid $b: at the peak/,\$p" out > peak.txt
expect_grep "^memwatch: pid $b: [0-9]+ snapshots; growth between burst\.$b\.1\.snap and burst\.$b\.[0-9]+-final\.snap:" main.txt
# (build_report may be there as shrunk: a little of it was in the first snapshot)
expect_no_grep "^ +[0-9]+ +\+[0-9.]+ [KM]iB .*build_report" main.txt
# the section at the peak: its time, RSS and live heap, and the stack with
# its file and line
expect_grep "^memwatch: pid $b: at the peak, [0-9.]+ s: RSS [0-9.]+ MiB, live heap [0-9.]+ MiB \([0-9.]+ [KM]?i?B at the end\); growth between burst\.$b\.1\.snap and the peak burst\.$b\.peak\.snap:" peak.txt
expect_grep "^ +1 +\+[0-9.]+ MiB .* (new|grown) +build_report +burst\.c:[0-9]+$" peak.txt
# the peak's live heap: most of the 160 MiB (the capture starts at +32 MiB)
peak_mib=$(sed -n "s/^memwatch: pid $b: at the peak, .* live heap \([0-9]*\)[0-9.]* MiB .*/\1/p" peak.txt)
expect_range "live heap at the peak (MiB)" "$peak_mib" 80 220

# one peak snapshot on disk, written once: when the heap had come down,
# after the peak it holds
n=0
for f in burst.*peak*.snap; do
	[ -e "$f" ] && n=$((n + 1))
done
[ "$n" -eq 1 ] || fail "$n peak snapshots on disk, not 1"
[ -s "burst.$b.peak.snap" ] || fail "no peak snapshot burst.$b.peak.snap"
n=$(grep -Ec "^# event [0-9.]+ $b peak-snapshot " burst.log)
[ "$n" -eq 1 ] || fail "$n peak-snapshot events, not 1"
expect_grep "^# event [0-9.]+ $b peak-snapshot path=burst\.$b\.peak\.snap live=[0-9]+ stacks=[0-9]+ peak_s=[0-9.]+" burst.log
ev=$(sed -n "s/^# event \([0-9.]*\) $b peak-snapshot .* live=\([0-9]*\) .* peak_s=\([0-9.]*\).*/\1 \2 \3/p" burst.log)
read -r ev_t ev_live ev_peak <<EOF
$ev
EOF
awk -v w="$ev_t" -v p="$ev_peak" 'BEGIN { exit !(p + 0 < w + 0) }' ||
	fail "the peak snapshot was written at $ev_t s, not after its peak at $ev_peak s"
expect_range "the peak snapshot's live heap (MiB)" "$((ev_live >> 20))" 80 220
run_mw 0 show burst.$b.peak.snap
expect_grep "build_report +burst\.c:[0-9]+$" out

# VmHWM: the RSS of the burst, still there in the last sample after it fell
last=$(awk -v p="$b" '$2 == p { rss = $3; hwm = $11 } END { print rss, hwm }' burst.log)
rss=${last% *}
hwm=${last#* }
expect_range "VmHWM at the end (KiB)" "$hwm" 160000 400000
[ "$rss" -lt $((hwm / 2)) ] || fail "RSS $rss KiB did not fall well below VmHWM $hwm KiB"

# nothing is said about the OOM killer of a process that lives
expect_no_grep "OOM killer" out
kill -0 "$b" 2>/dev/null || fail "the burst program died while or after being watched"

# A steady leak ends at its peak: no section "at the peak", and no peak
# snapshot: the final snapshot is the peak, so the peaks the agent marked on
# the way up are neither written nor logged.
start_target "$TARGETS/grow" 1024 20 300
g=$target_pid
wait_libc "$g"
run_mw 0 -p "$g" --capture now -i 250ms -d 6s -q -o grow.log
expect_grep "^memwatch: pid $g: " out
expect_no_grep "at the peak" out
expect_grep "^# event [0-9.]+ $g snapshot path=grow\.$g\.[0-9]+-final\.snap .*final=1" grow.log
expect_no_grep "^# event [0-9.]+ $g peak-snapshot " grow.log
for f in grow.*peak*.snap; do
	[ -e "$f" ] && fail "a steady leak left a peak snapshot: $f"
done

# The same leak run to its exit, with one numbered snapshot (its peaks are
# all held): what it never freed at exit is its end, and its peak; no peak
# snapshot either.
run_mw 0 run --capture now --snap-every +1GiB -i 250ms -q -o exit.log -- "$TARGETS/grow" 1024 20 250 0
expect_grep "^# event [0-9.]+ [0-9]+ snapshot path=exit\.[0-9]+\.[0-9]+-exit\.snap .*exit=1" exit.log
expect_no_grep "^# event [0-9.]+ [0-9]+ peak-snapshot " exit.log
for f in exit.*peak*.snap; do
	[ -e "$f" ] && fail "a leak that ran to its exit left a peak snapshot: $f"
done
finish
