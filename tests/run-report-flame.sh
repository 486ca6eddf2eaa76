#!/bin/sh
# run-report-flame.sh: the pictures: show and diff as SVG flame graphs, opened
# in headless Chromium, which must run their scripts without an error and
# render the leaking function's label. The screenshots are kept beside this test's
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
expect_err_line "show: invalid --format 'svgz' \(table, folded, json or svg\)"
printf 'not a snapshot' > bad.snap
run_mw 3 diff -F svg -o never.svg a.snap bad.snap
expect_err_line "bad\.snap"
[ -e never.svg ] && fail "a failed diff left never.svg"

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
finish
