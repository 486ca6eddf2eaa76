/* report.h: what diff and show make, for another command to use without a
 * command line (memwatch report puts them in its HTML page). */
#ifndef MEMWATCH_REPORT_H
#define MEMWATCH_REPORT_H

#include <stddef.h>
#include <stdio.h>

/* Read the snapshots at paths (two: their diff; one: what it holds) and write
 * the table, as memwatch diff or show prints it, to table, and the flame graph,
 * as an <svg> element to put in an HTML page, to svg (either may be NULL).
 * dirs: more directories for debug files. Returns 0, or an exit status (enum
 * mw_exit) once the error is said on stderr. */
int report_parts(char *const *paths, int npaths, const char **dirs, size_t ndirs, FILE *table,
		 FILE *svg);

#endif
