#!/bin/sh
# run-capture-peak.sh: a burst that is freed again. The program builds about
# 160 MiB in build_report() within about 2 s, holds it 3 s and frees it; the
# last snapshot holds nothing of it, and the report's section "at the peak"
# names build_report with its file and line. One peak snapshot at most is on
# disk, and the run log's VmHWM keeps the peak RSS after it fell.
. "$top_srcdir/tests/lib.sh"

need_ptrace

start_target "$TARGETS/burst" 30 1500
b=$target_pid
wait_libc "$b"
run_mw 0 -p "$b" -t +32MiB -i 250ms -d 11s -q -o burst.log
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
expect_grep "^memwatch: pid $b: at the peak, [0-9.]+ s: RSS [0-9.]+ MiB, live heap [0-9.]+ MiB \([0-9.]+ [KM]?i?B at the end\); growth between burst\.$b\.1\.snap and the peak burst\.$b\.(peak|[0-9]+)\.snap:" peak.txt
expect_grep "^ +1 +\+[0-9.]+ MiB .* (new|grown) +build_report +burst\.c:[0-9]+$" peak.txt
# the peak's live heap: most of the 160 MiB (the capture starts at +32 MiB)
peak_mib=$(sed -n "s/^memwatch: pid $b: at the peak, .* live heap \([0-9]*\)[0-9.]* MiB .*/\1/p" peak.txt)
expect_range "live heap at the peak (MiB)" "$peak_mib" 80 220

# at most one peak snapshot on disk, whatever the peaks marked
n=0
for f in burst.*peak*.snap; do
	[ -e "$f" ] && n=$((n + 1))
done
[ "$n" -le 1 ] || fail "$n peak snapshots on disk"
if grep -Eq "^# event [0-9.]+ $b peak-snapshot " burst.log; then
	[ -s "burst.$b.peak.snap" ] || fail "the log names a peak snapshot that is not there"
fi

# VmHWM: the RSS of the burst, still there in the last sample after it fell
last=$(awk -v p="$b" '$2 == p { rss = $3; hwm = $11 } END { print rss, hwm }' burst.log)
rss=${last% *}
hwm=${last#* }
expect_range "VmHWM at the end (KiB)" "$hwm" 160000 400000
[ "$rss" -lt $((hwm / 2)) ] || fail "RSS $rss KiB did not fall well below VmHWM $hwm KiB"

# nothing is said about the OOM killer of a process that lives
expect_no_grep "OOM killer" out
kill -0 "$b" 2>/dev/null || fail "the burst program died while or after being watched"

# A steady leak ends at its peak: no section "at the peak".
start_target "$TARGETS/grow" 1024 50 80
g=$target_pid
wait_libc "$g"
run_mw 0 -p "$g" --capture now -i 250ms -d 5s -q -o grow.log
expect_grep "^memwatch: pid $g: " out
expect_no_grep "at the peak" out
finish
