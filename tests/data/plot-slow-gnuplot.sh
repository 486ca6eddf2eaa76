#!/bin/sh
# plot-slow-gnuplot.sh: stands for a gnuplot that takes its time: reads its
# program, writes part of an image, writes its pid to the file $PLOT_STARTED
# and sleeps, so that memwatch can be stopped meanwhile.
cat "${1:--}" > /dev/null
printf '\211PNG\r\n\032\npart of an image'
echo $$ > "$PLOT_STARTED.tmp" && mv "$PLOT_STARTED.tmp" "$PLOT_STARTED"
exec sleep 60
