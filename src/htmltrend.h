/* htmltrend.h: memwatch report's growth table with each row's verdict and a
 * chart of its live heap over the process's snapshots. */
#ifndef MEMWATCH_HTMLTREND_H
#define MEMWATCH_HTMLTREND_H

#include <stddef.h>
#include <stdio.h>

/* Write table (the text of memwatch diff's table from paths[0] to
 * paths[n-1]) to f as a <pre> with, before each of its rows, the row's
 * verdict and a chart of its live heap at the n snapshots paths, taken at
 * times t (seconds, rising). dirs: more directories for debug files.
 * 0, or -1 (n < 3, or a snapshot could not be read: warned) with nothing
 * written. */
int html_trend_table(FILE *f, const char *table, char *const *paths, const double *t, size_t n,
		     const char **dirs, size_t ndirs);

#endif
