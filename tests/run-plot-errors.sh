#!/bin/sh
# run-plot-errors.sh: every way memwatch plot can fail says so in one line, with
# its exit status, and leaves no output file, no temporary file and nothing on
# standard output.
. "$top_srcdir/tests/lib.sh"
data=$top_srcdir/tests/data
fake=$top_srcdir/tests/data/plot-fake-gnuplot.sh

# nothing_left: no image, no temporary file, nothing on standard output
nothing_left() {
	for f in mem.png mem.svg; do
		[ -e "$f" ] && fail "$*: '$f' was left"
	done
	ls -a | grep -q '\.tmp\.' && fail "$*: temporary file left: $(ls -a | grep '\.tmp\.')"
	[ -s out ] && fail "$*: something was written on standard output"
	rm -f mem.png mem.svg
}

# an image is not written to a terminal
if command -v script >/dev/null 2>&1 && script -qec "test -t 1" /dev/null > /dev/null 2>&1 </dev/null; then
	script -qec "'$MEMWATCH' plot '$data/plot-one.log'" /dev/null > tty.out 2>&1 </dev/null
	status=$?
	[ "$status" -eq 2 ] || fail "plot to a terminal: exit status $status, expected 2"
	tr -d '\r' < tty.out > tty.txt
	grep -q '^memwatch: plot: will not write a PNG image to a terminal: use -o FILE, or redirect' tty.txt ||
		{ fail "plot to a terminal: no refusal"; cat tty.txt >&2; }
	[ "$(grep -c '' tty.txt)" = 1 ] || fail "plot to a terminal: more than one line"
	# --script is text: it may go to a terminal
	script -qec "'$MEMWATCH' plot --script '$data/plot-one.log'" /dev/null > tty.out 2>&1 </dev/null ||
		fail "plot --script to a terminal failed"
else
	echo "no script(1) or no pseudo-terminal: the terminal check is not tested" >&2
fi

# gnuplot missing: by option, by environment, not on PATH
run_mw 6 plot --gnuplot /nonexistent/gnuplot -o mem.png "$data/plot-one.log"
expect_err_line "plot: gnuplot not found \('/nonexistent/gnuplot'\): install it \(apt-get install gnuplot-nox\), or name it with --gnuplot PROG or MEMWATCH_GNUPLOT$"
nothing_left "missing gnuplot"
MEMWATCH_GNUPLOT=/nonexistent/gp run_mw 6 plot "$data/plot-one.log"
expect_err_line "gnuplot not found \('/nonexistent/gp'\)"
nothing_left "missing MEMWATCH_GNUPLOT"
mkdir empty
PATH=$tmp/empty run_mw 6 plot -o mem.png "$data/plot-one.log"
expect_err_line "gnuplot not found \('gnuplot'\): install it \(apt-get install gnuplot-nox\)"
nothing_left "gnuplot not on PATH"
# a file that cannot be run
run_mw 6 plot --gnuplot "$data/plot-one.log" -o mem.png "$data/plot-one.log"
expect_err_line "cannot run gnuplot '.*plot-one.log': Permission denied"
nothing_left "gnuplot not executable"

# gnuplot fails: its own first error line is shown; its half image is dropped
run_mw 6 plot --gnuplot "$fake" -o mem.png "$data/plot-one.log"
expect_err_line "plot: gnuplot failed \(exit status 1\): line 3 of the program: fake gnuplot: cannot draw this$"
nothing_left "failing gnuplot, -o"
run_mw 6 plot --gnuplot "$fake" "$data/plot-one.log"
expect_err_line "gnuplot failed \(exit status 1\)"
nothing_left "failing gnuplot, stdout"
MEMWATCH_GNUPLOT=$fake run_mw 6 plot -o mem.svg "$data/plot-one.log"
expect_err_line "gnuplot failed"
nothing_left "failing MEMWATCH_GNUPLOT"

# stopped while gnuplot runs (SIGTERM, SIGINT): gnuplot is stopped, nothing is
# left, the status tells the signal
for sig in TERM INT; do
	rm -f started
	PLOT_STARTED=$tmp/started "$MEMWATCH" plot --gnuplot "$data/plot-slow-gnuplot.sh" \
		-o mem.png "$data/plot-one.log" > out 2> err &
	mw=$!
	started_pids="$started_pids $mw"
	wait_until "[ -s started ]" 30
	kill -$sig "$mw"
	wait "$mw"
	status=$?
	want=$((128 + $(kill -l $sig)))
	[ "$status" -eq "$want" ] || { fail "SIG$sig during gnuplot: exit status $status, expected $want"; cat err >&2; }
	[ -s err ] && { fail "SIG$sig during gnuplot: messages"; cat err >&2; }
	# the slow gnuplot was stopped (and reaped) with memwatch, not left sleeping
	gp=$(cat started)
	if kill -0 "$gp" 2>/dev/null; then
		fail "SIG$sig during gnuplot: gnuplot ($gp) left running"
		kill "$gp"
	fi
	nothing_left "SIG$sig during gnuplot"
done

# a broken script: the error names the script and its own line
if command -v gnuplot >/dev/null 2>&1; then
	mkdir gp
	sed 's/^set ytics nomirror$/set ytics nomirror\nset frobnicate 1/' "$top_srcdir/plot/memwatch.gp" > gp/memwatch.gp
	line=$(grep -n '^set frobnicate' gp/memwatch.gp | cut -d: -f1)
	MEMWATCH_DATADIR=$tmp/gp run_mw 6 plot -o mem.png "$data/plot-one.log"
	expect_err_line "gnuplot failed \(exit status 1\): '$tmp/gp/memwatch.gp' line $line: "
	nothing_left "broken script"
	# a gnuplot that draws nothing
	printf 'set terminal dumb\n' > gp/memwatch.gp
	MEMWATCH_DATADIR=$tmp/gp run_mw 6 plot -o mem.png "$data/plot-one.log"
	expect_err_line "gnuplot wrote no PNG image"
	nothing_left "no image"
fi
# no script at all
mkdir nogp
MEMWATCH_DATADIR=$tmp/nogp run_mw 1 plot -o mem.png "$data/plot-one.log"
expect_err_line "plot: cannot read the plot script '$tmp/nogp/memwatch.gp': No such file or directory"
nothing_left "no script"

# logs that are not right: exit 3, the file and the line named
run_mw 3 plot -o mem.png "$data/plot-not-runlog.log"
expect_err_line "plot: '$data/plot-not-runlog.log' is not a memwatch run.log$"
nothing_left "not a run.log"
run_mw 3 plot -o mem.png "$data/plot-header-only.log"
expect_err_line "plot: '$data/plot-header-only.log' holds no samples$"
nothing_left "no samples"
run_mw 3 plot "$data/plot-badcols.log"
expect_err_line "plot: '$data/plot-badcols.log' line 13: expected 10 columns, found 3$"
nothing_left "bad column count"
# a 10 MB number in a column is not echoed whole: 40 bytes and an ellipsis
head -n 9 "$data/plot-one.log" > huge.log
{ printf '1.001 4242 '; head -c 10000000 /dev/zero | tr '\0' 7; printf ' 1 1 1 0 1 1 1\n'; } >> huge.log
run_mw 3 plot -o mem.png huge.log
expect_err_line "plot: 'huge.log' line 10: invalid rss_kib '7{40}…'\$"
[ "$(wc -c < err)" -lt 200 ] || fail "a huge column is echoed whole: $(wc -c < err) bytes on stderr"
nothing_left "huge column"
{ head -n 9 "$data/plot-one.log"; printf '# event '; head -c 100000 /dev/zero | tr '\0' 9; printf ' - end\n'; } > hugeev.log
run_mw 3 plot -o mem.png hugeev.log
expect_err_line "plot: 'hugeev.log' line 10: invalid event time '9{40}…'\$"
: > empty.log
run_mw 3 plot -o mem.png empty.log
expect_err_line "plot: 'empty.log' is empty, not a memwatch run.log$"
nothing_left "empty log"
run_mw 3 plot -o mem.png --script nonexistent.log
expect_err_line "plot: cannot open 'nonexistent.log': No such file or directory$"
nothing_left "no log"

{ head -n 7 "$data/plot-one.log"; echo '0.000 4242 - - - - - - - -'; echo '1.000 total - - - - - - - -'; } > nofig.log
run_mw 3 plot -o mem.png nofig.log
expect_err_line "plot: 'nofig.log' holds no memory figures \(every one is '-'\)$"
nothing_left "no figures"

# usage errors: exit 2
run_mw 2 plot -o mem.png
expect_err_line "plot: no run.log named$"
run_mw 2 plot "$data/plot-one.log" "$data/plot-one.log"
expect_err_line "one run.log at a time"
run_mw 2 plot --size 10x10 "$data/plot-one.log"
expect_err_line "plot: size '10x10' out of range"
run_mw 2 plot --size big "$data/plot-one.log"
expect_err_line "plot: invalid size 'big' \(use WIDTHxHEIGHT"
run_mw 2 plot --format jpeg "$data/plot-one.log"
expect_err_line "plot: unknown format 'jpeg' \(png or svg\)$"
run_mw 2 plot --frobnicate "$data/plot-one.log"
expect_err_line "plot: unknown option '--frobnicate'$"
run_mw 2 plot -Z "$data/plot-one.log"
expect_err_line "plot: unknown option '-Z'$"
run_mw 2 plot "$data/plot-one.log" -o
expect_err_line "plot: option '-o' needs an argument$"
run_mw 2 plot --gnuplot '' "$data/plot-one.log"
expect_err_line "plot: --gnuplot needs a program name$"
nothing_left "usage errors"

# --help: every option, one a line, each short one with its long form
run_mw 0 plot --help
for opt in '-o, --output FILE' '-f, --force' '-F, --format FMT' '-s, --size WxH' \
	'-t, --title TEXT' '-g, --gnuplot PROG' '-S, --script' '-h, --help'; do
	grep -qF -- "  $opt " out || fail "plot --help lacks '$opt'"
done
finish
