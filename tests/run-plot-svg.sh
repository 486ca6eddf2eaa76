#!/bin/sh
# run-plot-svg.sh: memwatch plot draws SVG with --format svg or an -o NAME.svg,
# of the requested size, as a complete SVG document.
. "$top_srcdir/tests/lib.sh"
data=$top_srcdir/tests/data
command -v gnuplot >/dev/null 2>&1 || skip "gnuplot is not installed (apt-get install gnuplot-nox)"

# expect_svg FILE W H: an XML document whose <svg> element is W x H pixels
expect_svg() {
	head -n 1 "$1" | grep -q '^<?xml ' || fail "$1: does not start as XML"
	grep -q '</svg>' "$1" || fail "$1: no closing </svg>: not whole"
	size=$(tr '\n' ' ' < "$1" | sed -n 's/.*<svg[^>]* width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p')
	[ "$size" = "$2 $3" ] || fail "$1: expected a $2x$3 SVG, found '${size:-no size}'"
	if command -v xmllint >/dev/null 2>&1; then
		xmllint --noout "$1" 2>/dev/null || fail "$1: not well-formed XML"
	fi
}

run_mw 0 plot --format svg "$data/plot-one.log"
expect_svg out 1200 700
run_mw 0 plot -o mem.svg --size 900x450 "$data/plot-multi.log"
expect_svg mem.svg 900 450
run_mw 0 plot -o MEM.SVG "$data/plot-long.log"
expect_svg MEM.SVG 1200 700
# --format wins over the name
run_mw 0 plot -o really.svg --format png "$data/plot-one.log"
od -An -tx1 -N4 really.svg | grep -q '89 50 4e 47' || fail "--format png with -o x.svg did not write a PNG"
# the events are drawn: their labels are in the SVG text
for label in 'trigger +8MiB' 'snapshot run.4242.2.snap' 'exit status 0'; do
	run_mw 0 plot --format svg "$data/plot-one.log"
	grep -qF "$label" out || fail "no '$label' label in the SVG"
done
# one line per process: their names are in the key
run_mw 0 plot --format svg "$data/plot-multi.log"
for name in '5000 sh' '5001 cc1' '5002 ld' '5003 python3' 'total'; do
	grep -qF ">$name<" out || fail "no '$name' in the SVG's key"
done
ls -a | grep -q '\.tmp\.' && fail "temporary files left: $(ls -a | grep '\.tmp\.')"
finish
