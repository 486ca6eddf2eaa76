# memwatch.gp: how `memwatch plot` draws a run.log. memwatch sends gnuplot a
# program made of variables and data worked out from the log, followed by this
# script; `memwatch plot --script run.log` prints that program. Copy this file
# into a directory of your own and point MEMWATCH_DATADIR at it to change the
# look of every plot.
#
# What memwatch sets before this script runs:
#   mw_format            'png' or 'svg'
#   mw_width, mw_height  image size in pixels
#   mw_title             title ('' for none)
#   mw_xdiv, mw_xunit    the data's times are seconds; shown divided by mw_xdiv,
#                        in mw_xunit ('s', 'min', 'h' or 'd'); mw_xmax: last time
#   mw_ydiv, mw_yunit    the data's sizes are KiB; shown divided by mw_ydiv, in
#                        mw_yunit ('KiB', 'MiB', 'GiB' or 'TiB'); mw_ymax: largest
#   mw_nseries           number of lines; line i is block i-1 of $mw_data
#                        (columns: time_s value_kib; NaN where not measured),
#                        drawn with mw_series_title[i], mw_series_color[i],
#                        mw_series_width[i]; mw_series_points[i] is 1 when the
#                        line has a single sample (drawn as a point)
#   mw_nevents           number of events; event i is at mw_event_t[i] seconds,
#                        drawn in mw_event_color[i]
#   mw_nlabels           number of event labels (events too close together for
#                        a label each share one); label i is mw_label_text[i]
#                        at mw_label_t[i] seconds, in mw_label_color[i], left
#                        of its line unless mw_label_right[i] (no room there)
#   mw_nstacks           number of stacks drawn over time below the memory (0:
#                        no such panel); stack i is block i-1 of $mw_stacks
#                        (columns: time_s live_kib, one row per snapshot of
#                        its process), drawn with mw_stack_title[i] (its head
#                        frame) and mw_stack_color[i]; mw_stack_ydiv,
#                        mw_stack_yunit and mw_stack_ymax are its memory axis,
#                        mw_stack_panel the height of its panel in pixels

set encoding utf8
if (mw_format eq 'svg') {
	set terminal svg size mw_width, mw_height fixed noenhanced font 'Sans,12' background rgb 'white'
} else {
	if (strstrt(' ' . GPVAL_TERMINALS . ' ', ' pngcairo ') > 0) {
		set terminal pngcairo size mw_width, mw_height noenhanced font 'Sans,11' background rgb 'white'
	} else {
		set terminal png size mw_width, mw_height noenhanced background rgb 'white'
	}
}

if (strlen(mw_title) > 0) { set title mw_title font ',13' }
set xlabel sprintf('time (%s)', mw_xunit) offset 0, 0.3
set ylabel sprintf('memory (%s)', mw_yunit)
set border 3 lc rgb '#444444'
set xtics nomirror
set ytics nomirror
set grid xtics ytics lc rgb '#e0e0e0' lt 1
set key below horizontal noreverse spacing 1.2 width 1
set format y '%g'
set format x '%g'
set xrange [0:(mw_xmax > 0 ? mw_xmax : 1) / mw_xdiv]
# memory from zero, so that growth is seen at its true size
set yrange [0:(mw_ymax > 0 ? mw_ymax * 1.08 : 1) / mw_ydiv]
set offsets 0, 0, 0, 0

# each event is a dashed vertical line (thinner when there are many); the labels
# are written downwards from the top, just left of their line
mw_event_lw = mw_nevents > 100 ? 0.5 : 1.2
do for [i=1:mw_nevents] {
	set arrow i from first mw_event_t[i] / mw_xdiv, graph 0 to first mw_event_t[i] / mw_xdiv, graph 1 \
		nohead back lc rgb mw_event_color[i] lw mw_event_lw dt (6,4)
}
do for [i=1:mw_nlabels] {
	set label i mw_label_text[i] at first mw_label_t[i] / mw_xdiv, graph 0.985 \
		right rotate by 90 offset (mw_label_right[i] ? 1.2 : -0.8), 0 \
		textcolor rgb mw_label_color[i] font ',9' front
}

# with stacks, the memory takes the top of the image and they the bottom, the
# two on one time axis (the same margins, so that a time is at one x in both)
if (mw_nstacks > 0) {
	set multiplot
	mw_stack_frac = real(mw_stack_panel) / mw_height
	set lmargin 10
	set rmargin 4
	set origin 0, mw_stack_frac
	set size 1, 1 - mw_stack_frac
}

# lines, and a dot for a series with a single sample (no line to draw)
plot for [i=1:mw_nseries] $mw_data index (i - 1) using ($1 / mw_xdiv):($2 / mw_ydiv) \
	with lines lw mw_series_width[i] lc rgb mw_series_color[i] title mw_series_title[i], \
     for [i=1:mw_nseries] $mw_data index (i - 1) \
	using ($1 / mw_xdiv):(mw_series_points[i] ? $2 / mw_ydiv : NaN) \
	with points pt 7 ps 1.2 lc rgb mw_series_color[i] notitle

# the stacks over time: each stack's estimated live heap at each snapshot,
# under the same event lines (their labels are in the panel above)
if (mw_nstacks > 0) {
	unset title
	unset label
	set origin 0, 0
	set size 1, mw_stack_frac
	set ylabel sprintf('live heap by stack (%s)', mw_stack_yunit)
	set yrange [0:(mw_stack_ymax > 0 ? mw_stack_ymax * 1.08 : 1) / mw_stack_ydiv]
	set key below vertical maxrows 4 spacing 1.1 width 1 font ',9'
	plot for [i=1:mw_nstacks] $mw_stacks index (i - 1) using ($1 / mw_xdiv):($2 / mw_stack_ydiv) \
		with linespoints lw 2 pt 7 ps 0.6 lc rgb mw_stack_color[i] title mw_stack_title[i]
	unset multiplot
}
