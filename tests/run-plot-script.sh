#!/bin/sh
# run-plot-script.sh: memwatch plot --script prints the whole gnuplot program:
# the series, units and event marks worked out from the log, and the script.
. "$top_srcdir/tests/lib.sh"
data=$top_srcdir/tests/data

# get NAME: the value a program line "NAME = VALUE" sets, from out
get() {
	sed -n "s/^$1 = //p" out | head -n 1
}
# titles: the series' titles, one a line
titles() {
	sed -n "s/^mw_series_title\[[0-9]*\] = '\([^']*\)'.*/\1/p" out
}

# one process: its breakdown, seconds and MiB, every event marked
run_mw 0 plot --script "$data/plot-one.log"
[ "$(titles | tr '\n' ,)" = "RSS,anon,file,shmem,swap,PSS,USS," ] ||
	fail "one process: series $(titles | tr '\n' ,)"
[ "$(get mw_xunit)" = "'s'" ] || fail "one process: time unit $(get mw_xunit)"
[ "$(get mw_yunit)" = "'MiB'" ] || fail "one process: memory unit $(get mw_yunit)"
[ "$(get mw_ydiv)" = 1024.0 ] || fail "one process: mw_ydiv $(get mw_ydiv)"
[ "$(get mw_format)" = "'png'" ] || fail "default format $(get mw_format)"
[ "$(get mw_width)x$(get mw_height)" = 1200x700 ] || fail "default size $(get mw_width)x$(get mw_height)"
# a line for each of the 10 events, a label for every one of them
[ "$(get mw_nevents)" = 10 ] || fail "mw_nevents is $(get mw_nevents), the log has 10 events"
[ "$(grep -c "^mw_event_t\\[" out)" = 10 ] || fail "not 10 event lines"
for label in start 'trigger +8MiB' attach capture-start 'snapshot run.4242.1.snap' \
	'snapshot run.4242.2.snap' 'snapshot run.4242.3.snap' capture-stop 'exit status 0' 'end (exited)'; do
	grep "^mw_label_t" out | grep -qF "$label" || fail "no event label '$label'"
done
# the program draws them: arrows and labels from the arrays, and the data
expect_grep '^[[:space:]]*set arrow i from first mw_event_t\[i\]' out
expect_grep '^[[:space:]]*set label i mw_label_text\[i\]' out
expect_grep '^\$mw_data << EOD$' out
[ "$(grep -c '^EOD$' out)" = 1 ] || fail "the data block is not closed once"
# block 1 is RSS: 91 samples, the first as in the log
awk '/^\$mw_data << EOD$/ { on = 1; next } on && /^$/ { exit } on && !/^#/ { n++ } END { print n }' out > n
[ "$(cat n)" = 91 ] || fail "RSS block has $(cat n) samples, the log 91"
expect_grep '^0\.000 14848$' out
# the script follows, whole
expect_grep '^# memwatch.gp: ' out
tail -n 1 "$top_srcdir/plot/memwatch.gp" > last
[ "$(tail -n 1 out)" = "$(cat last)" ] || fail "the program does not end with the script"

# a short image has short labels: kinds only, then cut
run_mw 0 plot --script --size 800x300 "$data/plot-one.log"
grep "^mw_label_t" out | grep -qF "mw_label_text[2] = 'trigger, attach, c...'" ||
	{ fail "a short image: the trigger's label was not shortened"; grep '^mw_label_t' out >&2; }

# a failed attach shows its cause, as capture writes it (cause=)
run_mw 0 plot --script "$data/plot-long.log"
grep "^mw_label_t" out | grep -qF "attach-failed 777 (EPERM)" ||
	grep "^mw_label_t" out | grep -qF "attach-failed (EPERM)" ||
	{ fail "the failed attach's label has no cause"; grep '^mw_label_t' out >&2; }

# several processes: one RSS line each, then the total; minutes
run_mw 0 plot --script "$data/plot-multi.log"
[ "$(titles | tr '\n' ,)" = "5000 sh,5001 cc1,5002 ld,5003 python3,total," ] ||
	fail "several processes: series $(titles | tr '\n' ,)"
[ "$(get mw_nseries)" = 5 ] || fail "several processes: mw_nseries $(get mw_nseries)"
[ "$(get mw_xunit)" = "'min'" ] || fail "several processes: time unit $(get mw_xunit)"
[ "$(get mw_xdiv)" = 60.0 ] || fail "several processes: mw_xdiv $(get mw_xdiv)"
grep "^mw_label_t" out | grep -qF 'exit 5001 status 1' || fail "no 'exit 5001 status 1' label"
grep "^mw_label_t" out | grep -qF 'signal 5000 SIGTERM, signal 5002 SIGTERM, end (signal)' ||
	fail "events at one time do not share one label"
[ "$(grep -c '^# series [0-9]*: ' out)" = 5 ] || fail "not 5 data blocks"
expect_grep '^# series 3: 5002 ld$' out

# too many processes to tell apart: the 20 largest, and a warning
{ head -n 7 "$data/plot-one.log"
  for t in 0 1 2; do
	for p in $(seq 101 125); do echo "$t.000 $p $((p * 100)) 0 0 0 0 0 - -"; done
	echo "$t.000 total 99999 - - - - - - -"
  done; } > many.log
run_mw 0 plot --script many.log
[ "$(get mw_nseries)" = 21 ] || fail "25 processes: $(get mw_nseries) series, expected 20 and the total"
expect_grep "^memwatch: warning: plot: drawing the 20 largest processes; 5 more left out$" err
titles | grep -q '^pid 105$' && fail "25 processes: a small one was drawn"
titles | grep -q '^pid 125$' || fail "25 processes: the largest was not drawn"
[ "$(titles | tail -n 1)" = total ] || fail "25 processes: the total is not the last series"

# hours and GiB for a long run; no PSS line when it was not measured
run_mw 0 plot --script "$data/plot-long.log"
[ "$(get mw_xunit)" = "'h'" ] || fail "long run: time unit $(get mw_xunit)"
[ "$(get mw_yunit)" = "'GiB'" ] || fail "long run: memory unit $(get mw_yunit)"
[ "$(titles | tr '\n' ,)" = "RSS,anon,file,swap," ] || fail "long run: series $(titles | tr '\n' ,)"
# the sample that could not be read is a gap, not a zero
expect_grep '^7380\.250 NaN$' out

# days and KiB; seconds and TiB
{ head -n 7 "$data/plot-one.log"; echo '0.000 1 500 400 100 0 0 900 - -'; echo '400000.000 1 700 600 100 0 0 900 - -'; } > days.log
run_mw 0 plot --script days.log
[ "$(get mw_xunit) $(get mw_xdiv) $(get mw_yunit) $(get mw_ydiv)" = "'d' 86400.0 'KiB' 1.0" ] ||
	fail "days and KiB: $(get mw_xunit) $(get mw_xdiv) $(get mw_yunit) $(get mw_ydiv)"
{ head -n 7 "$data/plot-one.log"; echo '0.000 1 2147483648 0 0 0 0 0 - -'; echo '100.000 1 2147483649 0 0 0 0 0 - -'; } > tib.log
run_mw 0 plot --script tib.log
[ "$(get mw_xunit) $(get mw_yunit) $(get mw_ydiv)" = "'s' 'TiB' 1073741824.0" ] ||
	fail "seconds and TiB: $(get mw_xunit) $(get mw_yunit) $(get mw_ydiv)"

# a cut last line is left out
run_mw 0 plot --script "$data/plot-truncated.log"
expect_no_grep '^20\.497' out
[ "$(get mw_nevents)" = 2 ] || fail "truncated log: $(get mw_nevents) events, expected 2"

# the title and the format as asked, the title quoted for gnuplot
run_mw 0 plot --script -t "it's 100%" --format svg -s 300x200 "$data/plot-one.log"
[ "$(get mw_title)" = "'it''s 100%'" ] || fail "title written as $(get mw_title)"
[ "$(get mw_format)" = "'svg'" ] || fail "--format svg gave $(get mw_format)"
[ "$(get mw_width)x$(get mw_height)" = 300x200 ] || fail "--size 300x200 gave $(get mw_width)x$(get mw_height)"
run_mw 0 plot --script -o prog.gp "$data/plot-one.log"
[ -s out ] && fail "--script -o FILE wrote on standard output"
grep -q "^mw_format = 'png'" prog.gp || fail "--script -o prog.gp: no program in prog.gp"

# the printed program is complete: gnuplot draws it as it is
if command -v gnuplot >/dev/null 2>&1; then
	run_mw 0 plot --script -t "it's 100%" "$data/plot-one.log"
	gnuplot out > img 2> gp.err || { fail "gnuplot failed on the printed program"; cat gp.err >&2; }
	od -An -tx1 -N4 img | grep -q '89 50 4e 47' || fail "the printed program did not draw a PNG"
fi
# a member found later (--children) is named after the program in its event
cat > kids.log <<'LOG'
# memwatch run.log 1
# process: 100 /usr/bin/sh -c work
# children: yes
# pss: no
time_s pid rss_kib anon_kib file_kib shmem_kib swap_kib vsz_kib pss_kib uss_kib
# event 0.000 - start
0.000 100 16 16 0 0 0 512 - -
0.000 total 16 16 0 0 0 512 - -
# event 0.250 101 process ppid=100 cmd=/opt/bin/worker%20--fast
0.250 100 16 16 0 0 0 512 - -
0.250 101 900 800 100 0 0 4096 - -
0.250 total 916 816 100 0 0 4608 - -
LOG
run_mw 0 plot --script kids.log
expect_grep "= '101 worker'" out
expect_grep "= '100 sh'" out
finish
