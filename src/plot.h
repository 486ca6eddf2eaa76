/* plot.h: the memory plot of a run, for another command to use (memwatch report
 * puts it in its HTML page); memwatch plot is its command line. */
#ifndef MEMWATCH_PLOT_H
#define MEMWATCH_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "runlog.h"

struct outfile;

/* Draw the run log d (read from the file log) through gnuplot ($MEMWATCH_GNUPLOT,
 * else the default), as memwatch plot does: SVG, or PNG; width x height pixels,
 * and below, when the log names snapshots, the live bytes of their top stacks
 * (nstacks of them, 0: none; dirs: more directories for debug files) over
 * time in a panel that makes the image taller: *height is its height.
 * The image goes to *img (caller frees), its size to *len. Returns 0, or an
 * exit status (enum mw_exit) with *cause set (caller frees) and maybe *hint
 * (static). SIGINT and SIGTERM stop gnuplot when stop_signals_install() is in
 * force: the status is then 128 + the signal, without a cause. */
int plot_image(const char *log, const struct runlog_data *d, bool svg, unsigned width,
	       unsigned *height, unsigned nstacks, const char **dirs, size_t ndirs, char **img,
	       size_t *len, char **cause, const char **hint);

/* What the commands that make one file of a run log share (plot, report). */

/* One snapshot a run log names, found on disk. */
struct cmdfile_snap {
	double t;
	int pid;
	char *path;               /* where it is */
	char *shown;              /* as the log names it */
	bool final;               /* the final snapshot of its process */
};

/* The snapshots that the run log d (read from the file log) names and that
 * are found, in the log's order, into *out (free with cmdfile_snaps_free);
 * returns their number. Those not found are counted in *nmissing, and the
 * first of them is named in *missing (caller frees; NULL when none). */
size_t cmdfile_snapshots(const char *log, const struct runlog_data *d, struct cmdfile_snap **out,
			 size_t *nmissing, char **missing);
void cmdfile_snaps_free(struct cmdfile_snap *v, size_t n);

/* The run log at path, read (caller frees with runlog_data_free); NULL once
 * "memwatch: CMD: why" is said. */
struct runlog_data *cmdfile_read_log(const char *cmd, const char *log);

/* Open output (NULL or "-": standard output) as outfile_open does, after
 * stop_signals_install: from here SIGINT and SIGTERM are only noted, so that
 * the temporary file is removed and a child stopped before memwatch ends.
 * NULL once said. */
struct outfile *cmdfile_open(const char *cmd, const char *output, bool force);

/* outfile_commit of, said on failure. MW_EXIT_OK or MW_EXIT_FAILURE. */
int cmdfile_commit(const char *cmd, struct outfile *of);

#endif
