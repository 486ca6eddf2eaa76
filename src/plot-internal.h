/* plot-internal.h: what plot.c (the command, running gnuplot) and
 * plot-head.c (the head of the gnuplot program) share. */
#ifndef MEMWATCH_PLOT_INTERNAL_H
#define MEMWATCH_PLOT_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include "report.h"
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
	unsigned stacks;          /* --stacks N: stacks drawn over time (0: none) */
	bool size_given, stacks_given;
	bool quiet;               /* snapshots not found are not warned about */
	const char **dirs;        /* more directories for debug files */
	size_t ndirs;
};

/* The stacks over time: the snapshots the log names (those found), and the
 * top stacks' live bytes at each. */
struct plot_stacks {
	size_t nsnaps;
	double *t;                /* time of each snapshot, seconds */
	struct report_series *v;
	size_t n;
};

/* Pixels the stacks panel adds below the memory panel when the height is not
 * given. */
#define STACKS_PANEL_HEIGHT 400

/* Write the head of the gnuplot program: the variables and the data that the
 * script (written after it, from script_path) draws. */
void write_head(FILE *f, const struct plot_opts *o, const struct runlog_data *d,
		const struct plot_stacks *st, const char *script_path);

#endif
