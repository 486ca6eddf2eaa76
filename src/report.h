/* report.h: what memwatch diff and show make, for the commands and for other
 * code to use without a command line (the end of a capture prints one, memwatch
 * report puts them in its HTML page). */
#ifndef MEMWATCH_REPORT_H
#define MEMWATCH_REPORT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum report_by { REPORT_BY_STACK, REPORT_BY_FUNCTION, REPORT_BY_LINE, REPORT_BY_TYPE };
/* --kind: all, or one enum snap_kind plus one */
enum report_kind { REPORT_KIND_ALL, REPORT_KIND_MALLOC, REPORT_KIND_MMAP, REPORT_KIND_BRK, REPORT_KIND_FILE };
/* The output formats; each is written by its own file (report-FORMAT.c), and
 * report.c's table of formats names them. */
enum report_format {
	REPORT_FMT_TABLE, REPORT_FMT_FOLDED, REPORT_FMT_JSON, REPORT_FMT_PPROF, REPORT_FMT_SVG,
};

/* What to report and how: the options of diff and show. Set up with
 * report_options_init, released with report_options_release. */
struct report_options {
	unsigned long top;            /* rows shown (0: all) */
	bool top_set;
	uint64_t min_bytes;
	enum report_by by;
	unsigned long depth;          /* source frames shown per stack */
	bool depth_set;
	enum report_format format;
	const char **dirs;            /* more directories for debug files (owned) */
	size_t ndirs;
	const char *output;           /* NULL or "-": standard output */
	const char *embed;            /* show --embed-symbols FILE */
	bool all_frames;              /* rows headed by their innermost frame, not the user's */
	enum report_kind kind;        /* --kind: the stacks kept */
	bool full_names;              /* C++ names with their template arguments in tables */
	bool details;                 /* the long header: every figure of every snapshot */
	bool has_hide, has_focus;
	regex_t hide, focus;          /* --hide: frames that are not the user's; --focus: rows kept */
};

/* The defaults of memwatch diff and show (a table of the top 10 rows). */
void report_options_init(struct report_options *o);

/* Free what o holds (its directories, its patterns). */
void report_options_release(struct report_options *o);

/* Read the snapshots at paths (two: their diff; one: what it holds) and write
 * the report o asks for, as memwatch diff or show does. Returns 0, or an exit
 * status (enum mw_exit) once the error is said on stderr. */
int report_write(const struct report_options *o, char *const *paths, int npaths);

/* Read the snapshots at paths (two: their diff; one: what it holds) and write
 * the table, as memwatch diff or show prints it, to table, and the flame graph,
 * as an <svg> element to put in an HTML page, to svg, and when the snapshots
 * say what their CPython objects are, the table by type to types (any may be
 * NULL).
 * dirs: more directories for debug files. Returns 0, or an exit status (enum
 * mw_exit) once the error is said on stderr. */
int report_parts(char *const *paths, int npaths, const char **dirs, size_t ndirs, FILE *table,
		 FILE *svg, FILE *types);

#endif
