#!/bin/sh
# run-report-flame.sh: the pictures: show and diff as SVG flame graphs, and
# memwatch report's HTML page for a real watch of the demo; both opened in
# headless Chromium, which must run their scripts without an error and render
# the leaking function's label. The screenshots are kept beside this test's
# log (tests/run-report-flame-*.png) and their paths printed.
. "$top_srcdir/tests/lib.sh"

MKSNAP="$top_builddir/tests/tools/mksnap"
[ -x "$MKSNAP" ] || skip "mksnap not built"
unset DEBUGINFOD_URLS

"$MKSNAP" -g 10 -s 5 -k 3 a.snap || fail "mksnap a.snap"
"$MKSNAP" -g 30 -s 5 -k 1 b.snap || fail "mksnap b.snap"

# show: a flame graph of the live heap, widths by bytes, self-contained
run_mw 0 show --format svg -o show.svg a.snap
[ -s err ] && fail "show --format svg wrote to stderr: $(cat err)"
expect_grep '^<\?xml version="1\.0"' show.svg
expect_grep '^<svg .*xmlns="http://www\.w3\.org/2000/svg"' show.svg
expect_grep '<script type="text/ecmascript">' show.svg
# the inlined helper's box, with its source line and share in the tooltip
expect_grep '^<g class="mwf"><title>leaky_helper_\[i\]$' show.svg
expect_grep '^mksnap\.c:[0-9]+ in mksnap \[inlined\]$' show.svg
expect_grep '^40\.0 KiB, 7[0-9]\.[0-9]% of the live heap, 10 blocks</title>' show.svg
expect_grep '<title>all$' show.svg
# nothing is fetched from anywhere
expect_no_grep '(href|src)=' show.svg

# diff: growth red, shrinkage blue, widths by the bytes that changed
run_mw 0 diff -F svg -o diff.svg a.snap b.snap
expect_grep '^\+80\.0 KiB \(grew 80\.0 KiB, shrank 0 B\); blocks \+20$' diff.svg
expect_grep '^before 40\.0 KiB, after 120 KiB</title><rect [^>]*fill="rgb\(255,50,50\)"' diff.svg
expect_grep '^-1\.00 KiB \(grew 0 B, shrank 1\.00 KiB\); blocks -2$' diff.svg
expect_grep '^before 1\.50 KiB, after 512 B</title><rect [^>]*fill="rgb\(50,50,255\)"' diff.svg
expect_grep '^<g class="mwf"><title>shrink_site$' diff.svg
# the same stacks as the folded format, frame for frame
run_mw 0 diff -F folded a.snap b.snap
top_frame=$(sed -n '1s/ [0-9]*$//; 1s/.*;//p' out)
[ "$top_frame" = "leaky_helper_[i]" ] || fail "folded's top frame is '$top_frame'"
# to standard output as well
run_mw 0 show -F svg a.snap
expect_grep '^</svg>$' out

# bad input: one line, the usual statuses
run_mw 2 show -F svgz a.snap
expect_err_line "show: invalid --format 'svgz' \(table, folded, json, svg or pprof\)"
printf 'not a snapshot' > bad.snap
run_mw 3 diff -F svg -o never.svg a.snap bad.snap
expect_err_line "bad\.snap"
[ -e never.svg ] && fail "a failed diff left never.svg"

# memwatch report: a real watch of the demo, which leaks in cache_store, with
# a snapshot a second (at a finer rate than the default, for a sampling error
# well below a second's growth)
need_ptrace
"$TARGETS/demo" 30 > demo.out &
demo=$!
started_pids="$started_pids $demo"
run_mw 0 -p "$demo" -i 250ms -d 8s -q --trigger +16MiB --snap-every 1s -r 64KiB -o flow.log
kill "$demo" 2>/dev/null
expect_grep "^# event [0-9.]+ $demo snapshot path=flow\.$demo\.[0-9]+-final\.snap" flow.log

command -v gnuplot >/dev/null 2>&1 || skip "gnuplot is not installed (apt-get install gnuplot-nox)"
run_mw 0 report -o run.html flow.log
[ -s err ] && fail "report wrote to stderr: $(cat err)"
expect_grep '^<!DOCTYPE html>$' run.html
expect_grep '<img class="plot" [^>]*src="data:image/svg\+xml;base64,' run.html
expect_grep "^<h2>pid $demo: growth from flow\.$demo\.1\.snap to flow\.$demo\.[0-9]+-final\.snap</h2>$" run.html
expect_grep '^<g class="mwf"><title>cache_store$' run.html
expect_grep 'cache_store  demo\.c:25' run.html
# three snapshots or more: each row of the growth table has its verdict and
# the chart of its live heap at every snapshot; the leak is one
[ "$(grep -Ec "^# event [0-9.]+ $demo snapshot " flow.log)" -ge 3 ] || fail "fewer than 3 snapshots"
expect_grep '^trend +<svg class="trend" [^>]*></svg> +# +growth ' run.html
expect_grep '^<span class="verdict v-leak" title="grew in [0-9]+ % of the intervals; slope \+[0-9.]+ [KMG]iB/min">leak\?</span> +<svg class="trend" [^>]*><title>live heap at each snapshot: [^<]*</title><polyline [^>]*points="[0-9., ]+"/></svg> +[0-9]+ +\+[0-9.]+ [KMG]iB .*cache_store  demo\.c:25$' run.html
expect_grep '^<h2>time line: [0-9]+ snapshots</h2>$' run.html
# the events table shows the log's values decoded: the trigger's rule as words
expect_grep '<td>trigger</td><td>rss=[0-9]+ &middot; .*rule=\+16\.0 MiB over baseline</td>' run.html
expect_no_grep '%20' run.html
expect_no_grep '(href|src)="(https?:|//)' run.html
# the page is written atomically: an existing file is kept without --force
run_mw 1 report -o run.html flow.log
expect_err_line "run\.html"
run_mw 0 report -f -o run.html flow.log
# the options may follow the log, as the usage line writes them
run_mw 0 report flow.log -o after.html
cmp -s run.html after.html || [ -s after.html ] || fail "report flow.log -o after.html wrote nothing"

# without gnuplot the page is still made, without the plot, and a warning says so
MEMWATCH_GNUPLOT=/nonexistent/gnuplot
export MEMWATCH_GNUPLOT
run_mw 0 report -o noplot.html flow.log
unset MEMWATCH_GNUPLOT
expect_grep '^memwatch: warning: report: no memory plot in the page: gnuplot not found' err
expect_grep '^<p class="note">no memory plot: ' noplot.html
expect_grep '^<g class="mwf"><title>cache_store$' noplot.html
# bad input
run_mw 2 report
expect_err_line "report: expected one run log \(got 0\)"
run_mw 3 report -o x.html a.snap
expect_err_line "report: .*a\.snap"
[ -e x.html ] && fail "a failed report left x.html"
# a snapshot named in the log but gone: left out, said once
mv "flow.$demo.1.snap" gone.snap
run_mw 0 report -o partial.html flow.log
expect_grep "^memwatch: warning: report: 1 snapshot named in 'flow\.log' not found [(]'flow\.$demo\.1\.snap'[)]: left out$" err
mv gone.snap "flow.$demo.1.snap"
# one that is not a snapshot: one line naming it, no page
cp "flow.$demo.1.snap" keep.snap
printf 'garbage' > "flow.$demo.1.snap"
run_mw 3 report -o corrupt.html flow.log
expect_err_line "flow\.$demo\.1\.snap"
[ -e corrupt.html ] && fail "a report of a corrupt snapshot left corrupt.html"
mv keep.snap "flow.$demo.1.snap"
# the log's snapshots are found beside it when the report runs elsewhere
mkdir -p elsewhere && cd elsewhere || exit 99
run_mw 0 report -o ../far.html ../flow.log
cd .. || exit 99
expect_grep '^<g class="mwf"><title>cache_store$' far.html

# a real browser: headless Chromium loads each picture, runs its script and
# renders it; the screenshot is kept for people to look at
CHROMIUM=
for c in chromium chromium-browser; do
	command -v "$c" >/dev/null 2>&1 && { CHROMIUM=$c; break; }
done
if [ -z "$CHROMIUM" ]; then
	[ "$fails" -ne 0 ] && finish
	skip "chromium is not installed (apt-get install chromium): the pictures were not opened in a browser"
fi
shots="$top_builddir/tests"
# browse NAME FILE LABEL: screenshot and DOM of FILE; LABEL must be rendered
browse() {
	name=$1 file=$2 label=$3
	shot="$shots/$testname-$name.png"
	rm -f "$shot"
	timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$tmp/chromium" --enable-logging=stderr --v=0 \
		--window-size=1200,900 --screenshot="$shot" "file://$tmp/$file" \
		>"$name.shot.out" 2>"$name.shot.err"
	st=$?
	[ "$st" -eq 0 ] || fail "chromium --screenshot $file: exit status $st"
	timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$tmp/chromium" --enable-logging=stderr --v=0 \
		--dump-dom "file://$tmp/$file" >"$name.dom" 2>"$name.dom.err"
	st=$?
	[ "$st" -eq 0 ] || fail "chromium --dump-dom $file: exit status $st"
	if grep -h "Uncaught\|CONSOLE.*rror" "$name.shot.err" "$name.dom.err" >"$name.js.err"; then
		fail "$file: script errors in the browser:"
		sed 's/^/  | /' "$name.js.err" >&2
	fi
	# the flame graph's script ran to its end, over every box
	expect_grep 'class="mwflame"[^>]*data-ready="[1-9][0-9]*"|data-ready="[1-9][0-9]*"[^>]*class="mwflame"' "$name.dom"
	expect_grep "<title>$label" "$name.dom"
	if [ -s "$shot" ] && [ "$(head -c 4 "$shot" | od -An -c | tr -d ' ')" = "211PNG" ]; then
		echo "screenshot of $file: $shot"
	else
		fail "chromium made no PNG screenshot of $file"
	fi
}
browse show show.svg 'leaky_helper_\[i\]'
browse diff diff.svg 'leaky_helper_\[i\]'
browse report run.html 'cache_store'
finish
