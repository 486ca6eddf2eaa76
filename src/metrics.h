/* metrics.h: a watch's current figures in the Prometheus text exposition
 * format, written whole after every sample for node_exporter's textfile
 * collector (memwatch --metrics FILE). */
#ifndef MEMWATCH_METRICS_H
#define MEMWATCH_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "runlog.h"

/* One watched process as the metrics show it. */
struct metrics_proc {
	int pid;
	const char *command;            /* its command line (a label) */
	const struct mem_sample *s;     /* KiB, as in the run log */
	bool have_growth;
	double growth_bps;              /* RSS growth, bytes per second, over the last minute */
	const char *capture;            /* "idle", "capturing", "stopped", "failed", "off" */
	unsigned snapshots;             /* written so far */
	double to_limit;                /* seconds until its memory cgroup's limit at the
					 * cgroup's growth over the last 10 s; -1 none */
};

/* Write the metrics of procs[0..n) to path atomically (a temporary file beside
 * it, renamed), t seconds into the watch; within half a second of the last
 * write nothing is done, but for the last one (procs NULL: the watch is over).
 * 0, or -1 with *cause. */
int metrics_write(const char *path, const struct metrics_proc *procs, size_t n, double t,
		  char **cause);

#endif
