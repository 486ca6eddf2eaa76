/* capture-report.c: what the capture of one process prints at its end: the
 * report of memwatch diff between its first and last snapshot (or show of
 * the one), what was never freed at exit, the peak when it was well above
 * the end, and the OOM kill. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "capture-internal.h"
#include "report.h"
#include "util.h"

/* The report of memwatch show (one path) or diff (two), top rows, on
 * standard output. */
static void print_snap_report(int top, char *a, char *b)
{
	char *paths[2] = { a, b };
	struct report_options o;

	report_options_init(&o);
	o.top = (unsigned long)top;
	o.top_set = true;
	fflush(stdout);
	report_write(&o, paths, b ? 2 : 1);
	report_options_release(&o);
	fflush(stdout);
}

/* The report's section "at the peak", when the snapshot that held the most
 * live heap holds well more than the end (a burst freed again, a peak before a
 * kill): what grew from the first snapshot to it. */
static void print_peak(struct capture *c)
{
	char rss[32], live[32], end[32];
	uint64_t margin = c->peak.live / 4 > (8u << 20) ? c->peak.live / 4 : (8u << 20);

	if (!c->peak.path || c->peak.live < c->last_live + margin ||
	    (c->last_snap && strcmp(c->peak.path, c->last_snap) == 0))
		return;
	fmt_bytes(rss, sizeof rss, (double)c->peak.rss);
	fmt_bytes(live, sizeof live, (double)c->peak.live);
	fmt_bytes(end, sizeof end, (double)c->last_live);
	printf("\nmemwatch: pid %d: at the peak, %.1f s: RSS %s, live heap %s (%s at the end); ",
	       c->pid, c->peak.t, rss, live, end);
	if (c->first_snap && strcmp(c->first_snap, c->peak.path) != 0) {
		printf("growth between %s and the peak %s:\n", c->first_snap, c->peak.path);
		print_snap_report(5, c->first_snap, c->peak.path);
	} else {
		printf("live heap in %s:\n", c->peak.path);
		print_snap_report(5, c->peak.path, NULL);
	}
}

/* The line that says the process was killed by the OOM killer, before its
 * report: the limit, and how close the last snapshot came to the kill. */
void print_oom(struct capture *c)
{
	FILE *f = c->o.report ? stdout : stderr;
	char lim[32];

	if (!c->oom.killed)
		return;
	fflush(stdout);
	fprintf(f, "%smemwatch: pid %d was killed by the OOM killer at %.1f s", f == stdout ? "\n" : "",
		c->pid, c->oom.t);
	if (c->oom.limit) {
		fmt_bytes(lim, sizeof lim, (double)c->oom.limit);
		fprintf(f, ": its cgroup's limit is %s", lim);
	}
	if (c->last_snap && c->nsnaps)
		fprintf(f, "; the last snapshot, %.1f s before, is the report's end", c->oom.t - c->last_snap_t);
	fputs("\n", f);
	fflush(f);
}

/* The trend of the snapshots the run log names of c's process (memwatch
 * diff LOG), top rows; false when it could not be made (said). */
static bool print_trend(struct capture *c)
{
	struct report_options o;
	int st;

	report_options_init(&o);
	o.top = 5;
	o.top_set = true;
	printf("growth between %s and %s:\n", c->first_snap, c->last_snap);
	fflush(stdout);
	st = report_trend_log(&o, runlog_path(c->log), c->pid, true);
	report_options_release(&o);
	fflush(stdout);
	return st == 0;
}

/* Print what grew between the first and the last snapshot, with the report of
 * memwatch diff (or show, when there is only one); from three snapshots on,
 * the trend of them all. */
void print_report(struct capture *c)
{
	if (c->o.report && c->exit_snap) {
		fflush(stdout);
		printf("\nmemwatch: pid %d: never freed at exit (%s):\n", c->pid, c->exit_snap);
		print_snap_report(10, c->exit_snap, NULL);
		if (c->nsnaps >= 3) {
			printf("\nmemwatch: pid %d: %u snapshots; ", c->pid, c->nsnaps);
			print_trend(c);
		}
		print_peak(c);
		return;
	}
	if (!c->o.report || !c->last_snap)
		return;
	fflush(stdout);
	printf("\nmemwatch: pid %d: %u snapshot%s; ", c->pid, c->nsnaps, c->nsnaps == 1 ? "" : "s");
	/* (not when the report's end is the peak snapshot, after the last one
	 * the run log counts: a process the OOM killer ended) */
	if (c->nsnaps >= 3 && !(c->peak.file && strcmp(c->last_snap, c->peak.file) == 0) &&
	    print_trend(c)) {
		/* the trend of every snapshot, each row with its verdict */
	} else if (c->first_snap && strcmp(c->first_snap, c->last_snap) != 0) {
		printf("growth between %s and %s:\n", c->first_snap, c->last_snap);
		print_snap_report(5, c->first_snap, c->last_snap);
	} else {
		/* one snapshot: nothing to measure growth from (--capture now takes
		 * no reference snapshot; growth capture ended before a second) */
		printf("live heap in %s\n(one snapshot, so no growth to show: this is all the sampled "
		       "memory still live,\n grown or not; take a second snapshot, or capture on growth, "
		       "for a diff):\n",
		       c->last_snap);
		print_snap_report(5, c->last_snap, NULL);
	}
	print_peak(c);
}
