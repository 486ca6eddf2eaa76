#!/bin/sh
# plot-fake-gnuplot.sh: stands for a gnuplot that fails: reads its program,
# says what is wrong on stderr as gnuplot does, writes half an image, exits 1.
cat "${1:--}" > /dev/null
printf '\211PNG\r\n\032\nhalf an image'
printf '\nplot $nothing\n     ^\n"%s" line 3: fake gnuplot: cannot draw this\n\n' "${1:-stdin}" >&2
exit 1
