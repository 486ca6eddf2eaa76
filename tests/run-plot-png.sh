#!/bin/sh
# run-plot-png.sh: memwatch plot draws PNG images of the requested size, to a
# file (-o) or to standard output, for one process, several, and a long run.
. "$top_srcdir/tests/lib.sh"
data=$top_srcdir/tests/data
command -v gnuplot >/dev/null 2>&1 || skip "gnuplot is not installed (apt-get install gnuplot-nox)"

# png_size FILE: "WIDTH HEIGHT" from the IHDR chunk, or "" when FILE is no PNG.
png_size() {
	magic=$(od -An -tx1 -N8 "$1" | tr -d ' \n')
	ihdr=$(od -An -c -j12 -N4 "$1" | tr -d ' \n')
	[ "$magic" = 89504e470d0a1a0a ] && [ "$ihdr" = IHDR ] || return 0
	od -An -tu1 -j16 -N8 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4, $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }'
}
# expect_png FILE W H
expect_png() {
	size=$(png_size "$1")
	[ "$size" = "$2 $3" ] || fail "$1: expected a $2x$3 PNG, found '${size:-no PNG}'"
	# the image ends with its IEND chunk: gnuplot's output was taken whole
	tail -c 8 "$1" | od -An -c | tr -d ' \n' | grep -q '^IEND' || fail "$1: no IEND chunk at the end"
}

# default size, to a file
run_mw 0 plot -o one.png "$data/plot-one.log"
expect_png one.png 1200 700
[ -s out ] && fail "-o FILE: something was written on standard output"
[ -s err ] && { fail "success with messages on stderr"; cat err >&2; }

# to standard output (redirected), with another size and a title
run_mw 0 plot --size 640x480 --title "it's a test" "$data/plot-one.log"
expect_png out 640 480

# options after the log, the short forms
run_mw 0 plot "$data/plot-multi.log" -s 800x600 -o multi.png -t multi
expect_png multi.png 800 600
run_mw 0 plot -F png -o long.png "$data/plot-long.log"
expect_png long.png 1200 700

# a log cut short by a killed memwatch is drawn
run_mw 0 plot -o cut.png "$data/plot-truncated.log"
expect_png cut.png 1200 700

# an existing file is kept unless --force
echo keep > kept.png
run_mw 1 plot -o kept.png "$data/plot-one.log"
expect_err_line "'kept.png' exists \(use --force to overwrite\)"
[ "$(cat kept.png)" = keep ] || fail "an existing file was changed without --force"
run_mw 0 plot --force -o kept.png "$data/plot-one.log"
expect_png kept.png 1200 700

# --gnuplot and MEMWATCH_GNUPLOT name the program; the option wins
gp=$(command -v gnuplot)
run_mw 0 plot --gnuplot "$gp" -o named.png "$data/plot-one.log"
expect_png named.png 1200 700
MEMWATCH_GNUPLOT=/nonexistent/gnuplot run_mw 0 plot -g "$gp" -o named2.png "$data/plot-one.log"
expect_png named2.png 1200 700

# no temporary file is left beside the outputs
ls -a | grep -q '\.tmp\.' && fail "temporary files left: $(ls -a | grep '\.tmp\.')"
finish
