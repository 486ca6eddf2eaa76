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
enum report_kind { REPORT_KIND_ALL, REPORT_KIND_MALLOC, REPORT_KIND_MMAP, REPORT_KIND_BRK, REPORT_KIND_FILE,
		   REPORT_KIND_JS };
/* The output formats; each is written by its own file (report-FORMAT.c), and
 * report.c's table of formats names them. */
/* --sample: the figure rows are ranked and diffed by: the live heap, every
 * byte allocated since capture start, or the bytes freed soon after their
 * allocation (temporary). */
enum report_sample { REPORT_SAMPLE_LIVE, REPORT_SAMPLE_ALLOC, REPORT_SAMPLE_TEMP };
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
	enum report_sample sample;    /* --sample: what rows are ranked by */
	bool full_names;              /* C++ names with their template arguments in tables */
	bool details;                 /* the long header: every figure of every snapshot */
	bool verdict_set;             /* --verdict: only the rows of one verdict (of */
	int verdict;                  /*   three snapshots or more; enum trend_verdict) */
	bool has_hide, has_focus;
	regex_t hide, focus;          /* --hide: frames that are not the user's; --focus: rows kept */
};

/* The defaults of memwatch diff and show (a table of the top 10 rows). */
void report_options_init(struct report_options *o);
/* One chain of a referrer search as a line of text ("__main__.AUDIT_LOG
 * (list) -> [3] -> Event"); the caller frees it. */
struct snap_refchain;
char *report_chain_text(const struct snap_refchain *c);

/* Free what o holds (its directories, its patterns). */
void report_options_release(struct report_options *o);

/* Read the snapshots at paths (two: their diff; one: what it holds) and write
 * the report o asks for, as memwatch diff or show does. Returns 0, or an exit
 * status (enum mw_exit) once the error is said on stderr. */
int report_write(const struct report_options *o, char *const *paths, int npaths);

/* The trend of a run (memwatch diff of three snapshots or more): the npaths
 * snapshots at paths, of one process in time order, each row with its live
 * bytes at every snapshot and its verdict (trend.h), written as o asks (table
 * or json). Returns 0, or an exit status (enum mw_exit) once the error is
 * said on stderr. */
int report_trend_write(const struct report_options *o, char *const *paths, int npaths);
/* Likewise of the snapshots a run log names (log: its path) of process pid
 * (0: the log's only process with snapshots), with the time until its memory
 * cgroup's limit from the log's samples. quiet: the snapshots it names and
 * that are not found are not warned about. */
int report_trend_log(const struct report_options *o, const char *log, int pid, bool quiet);

/* Read the snapshots at paths (two: their diff; one: what it holds) and write
 * the table, as memwatch diff or show prints it, to table, and the flame graph,
 * as an <svg> element to put in an HTML page, to svg, and when the snapshots
 * say what their CPython objects are, the table by type to types (any may be
 * NULL).
 * dirs: more directories for debug files. Returns 0, or an exit status (enum
 * mw_exit) once the error is said on stderr. */
int report_parts(char *const *paths, int npaths, const char **dirs, size_t ndirs, FILE *table,
		 FILE *svg, FILE *types);

/* One stack's estimated live bytes across the snapshots of a run
 * (report_stack_series). */
struct report_series {
	char *label;                  /* its head frame, as flame graphs name it */
	int pid;                      /* the process its snapshots are of */
	double *bytes;                /* at each snapshot; NaN at those of other pids */
	double peak;                  /* the largest of them */
};

/* The rows by function (the user's own frame as head) of the npaths
 * snapshots at paths, taken one by one: the top rows by their largest live
 * bytes, at most top of them, each with its bytes at every snapshot (0 where
 * a snapshot of its process does not hold it). pids[i] is the process of
 * snapshot i; the label is "PID: " prefixed when they are not all one. A
 * snapshot that cannot be read has NaN everywhere (and is warned about unless
 * quiet).
 * *out (caller frees with report_series_free), *nout of them. */
void report_stack_series(char *const *paths, const int *pids, size_t npaths, const char **dirs,
			 size_t ndirs, size_t top, bool quiet, struct report_series **out,
			 size_t *nout);
void report_series_free(struct report_series *v, size_t n);

/* A live view of the rows (memwatch top): the snapshots are the caller's,
 * refreshed as often as it likes; the symbols found are kept from one
 * update to the next. o is copied (its patterns and directories stay the
 * caller's and must live as long as the view). */
struct report_view;
struct snapshot;
enum report_sort { REPORT_SORT_GROWTH, REPORT_SORT_LIVE, REPORT_SORT_ALLOC };
struct report_line {
	char *key;                    /* the row from one update to the next */
	char *head;                   /* its head frame: "function  file:line"; by
				       * type, the type's name */
	int64_t growth;               /* since the base (no base: its live bytes) */
	double sd;                    /* the standard error of growth (no base: of
				       * its live bytes), from sampling */
	uint64_t live_bytes, live_blocks;   /* in the latest snapshot; by type,
					     * blocks are the estimated objects */
	double live_sd;               /* the standard error of live_bytes */
	uint64_t alloc_bytes;         /* allocated since the base (no base: in all) */
	const char *status;           /* new, grown, shrunk, gone, same; live */
	bool weak;                    /* within the sampling error */
};
struct report_view *report_view_new(const struct report_options *o);
void report_view_free(struct report_view *v);
/* The rows of what grew from base to now (base NULL: what now holds), in the
 * order sort asks (by type, alloc orders by live: types are counted in live
 * objects only). base and now must live until the next update or the free.
 * Returns 0. */
int report_view_update(struct report_view *v, struct snapshot *base, struct snapshot *now,
		       enum report_sort sort);
/* The rows of the last update; valid until the next. */
size_t report_view_rows(const struct report_view *v, const struct report_line **out);

/* One part of an opened row: by stack, a type its objects are; by type, a
 * line of the user's code that allocated its objects. */
struct report_part_line {
	char *text;                   /* the type's name, or "function  file:line" */
	int64_t growth;               /* since the base (no base: its live bytes) */
	uint64_t bytes, blocks;       /* in the latest snapshot */
};
/* What an opened row shows, each part in its own array (empty when the row
 * has none). Released with report_detail_release. */
struct report_detail {
	/* its whole stack, innermost first, one line per frame, the head marked
	 * with '>' (by type: none) */
	char **frames;
	size_t nframes;
	/* by stack: the types its objects are; by type: the lines that
	 * allocated them; the most growth first, then the most bytes now (by
	 * function or line: none) */
	struct report_part_line *parts;
	size_t nparts;
	/* what keeps its objects alive, one reference chain per line, from a
	 * root to the object ("__main__.AUDIT_LOG (list) -> [3] -> Event"), as
	 * the last search set (report_view_set_refs) found for a row of the same
	 * key (by stack or by type; none by function or line) */
	char **kept;
	size_t nkept;
	/* by type: what one object of the type held in that search ("one holds
	 * (56 B itself): 2 str 120 B"), or NULL */
	char *holds;
};
/* The referrer search (CPython) whose chains the opened rows show from now
 * on, until another is set (NULL: none): refs is a snapshot that carries
 * one; the chains of its rows go to the rows of later updates that have the
 * same key. refs is read now only (what it says is copied): the caller may
 * free it after. Set it again on a view made anew (other options). */
void report_view_set_refs(struct report_view *v, struct snapshot *refs);
/* Row i opened, into d (its parts at most max_parts, 0: all). Returns 0, or
 * -1 when there is no row i (d is then empty). */
int report_view_detail(struct report_view *v, size_t i, size_t max_parts, struct report_detail *d);
void report_detail_release(struct report_detail *d);
/* The share of the RSS growth the sampled heap explains (negative: not known). */
double report_view_explained(const struct report_view *v);
/* The sampled live heap of the latest snapshot. */
uint64_t report_view_live(const struct report_view *v);

#endif
