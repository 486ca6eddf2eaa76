#!/bin/sh
# man/demo-pictures.sh: remakes man/demo-plot.png and man/demo-report.png, the
# README's pictures of memwatch plot and of the page memwatch report makes:
# the demo service watched with no options until it ends (about 30 s), its
# run plotted, and its page opened in headless Chromium at 1200x1000, without
# its memory plot (the picture above it): the time line of the snapshots, the
# growth table, the flame graph and the events.
#
#   man/demo-pictures.sh [BUILDDIR]   (a built tree; default .)
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-.}" && pwd)
for f in "$build/memwatch" "$build/.libs/libmemwatch-agent.so" "$build/tests/targets/demo"; do
	[ -e "$f" ] || { echo "man/demo-pictures.sh: $f is missing (make check in $build first)" >&2; exit 1; }
done
chromium=
for c in chromium chromium-browser; do
	command -v "$c" >/dev/null 2>&1 && { chromium=$c; break; }
done
[ -n "$chromium" ] || { echo "man/demo-pictures.sh: chromium is needed" >&2; exit 1; }
command -v gnuplot >/dev/null 2>&1 || { echo "man/demo-pictures.sh: gnuplot is needed" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-pictures.XXXXXX")
demo=
trap '[ -n "$demo" ] && kill "$demo" 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir" || exit 1
export MEMWATCH_AGENT="$build/.libs/libmemwatch-agent.so"
export MEMWATCH_DATADIR="${MEMWATCH_DATADIR:-$src/plot}"

# started from the build directory: the plot and page name ./tests/targets/demo
(cd "$build" && exec ./tests/targets/demo 30) >demo.out 2>&1 &
demo=$!
"$build/memwatch" -q -p "$demo" -o run.log >watch.out 2>&1
status=$?
[ "$status" -eq 0 ] || [ "$status" -eq 7 ] || { echo "man/demo-pictures.sh: the watch failed (status $status)" >&2; cat watch.out >&2; exit 1; }
wait "$demo"
demo=
"$build/memwatch" plot -o plot.png run.log || exit 1
"$build/memwatch" report -o run.html run.log || exit 1
# the page as written, and a script that takes out its memory section
{ cat run.html; cat <<'JS'; } >shot.html
<script>
(function () {
	var h = document.getElementsByTagName("h2"), m = null, i;
	for (i = 0; i < h.length; i++)
		if (h[i].textContent.indexOf("memory") === 0) { m = h[i]; break; }
	while (m && m.nextElementSibling && m.nextElementSibling.tagName !== "H2")
		m.parentNode.removeChild(m.nextElementSibling);
	if (m) m.parentNode.removeChild(m);
})();
</script>
JS
timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
	--user-data-dir="$dir/chromium" --hide-scrollbars --window-size=1200,1000 \
	--screenshot="$dir/report.png" "file://$dir/shot.html" >shot.out 2>&1 ||
	{ echo "man/demo-pictures.sh: chromium made no screenshot" >&2; cat shot.out >&2; exit 1; }
mv plot.png "$src/man/demo-plot.png" && mv report.png "$src/man/demo-report.png" || exit 1
echo "man/demo-plot.png, man/demo-report.png: remade"
