/* plot-internal.h: what plot.c (the command, running gnuplot) and
 * plot-head.c (the head of the gnuplot program) share. */
#ifndef MEMWATCH_PLOT_INTERNAL_H
#define MEMWATCH_PLOT_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include "runlog.h"

enum plot_format { FMT_PNG, FMT_SVG };

/* What the command line asked for. */
struct plot_opts {
	const char *log;
	const char *output;       /* NULL or "-": standard output */
	bool force;
	enum plot_format format;
	bool format_given;
	unsigned width, height;
	const char *title;        /* NULL: made up from the log */
	const char *gnuplot;
	bool script;
};

/* Write the head of the gnuplot program: the variables and the data that the
 * script (written after it, from script_path) draws. */
void write_head(FILE *f, const struct plot_opts *o, const struct runlog_data *d,
		const char *script_path);

#endif
