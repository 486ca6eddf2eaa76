/* metrics.c: the Prometheus text exposition of a watch. One file, replaced
 * whole after every sample, so that a scrape never reads half of one. */
#include "config.h"
#include "metrics.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A label value: backslash, double quote and newline escaped, as the format
 * asks; a command line longer than 200 bytes is cut (labels are for telling
 * processes apart, not for storing arguments). */
static void put_label(FILE *f, const char *v)
{
	size_t n = 0;
	for (const char *p = v ? v : ""; *p && n < 200; p++, n++) {
		if (*p == '\\' || *p == '"')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
}

static void labels(FILE *f, const struct metrics_proc *p)
{
	fprintf(f, "{pid=\"%d\",command=\"", p->pid);
	put_label(f, p->command);
	fputs("\"}", f);
}

/* A gauge of every process whose figure is known (KiB in, bytes out). */
static void gauge_kib(FILE *f, const char *name, const char *help, const struct metrics_proc *v,
		      size_t n, size_t off)
{
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		uint64_t kib = *(const uint64_t *)((const char *)v[i].s + off);
		if (kib == RUNLOG_NONE)
			continue;
		if (!any)
			fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
		any = true;
		fputs(name, f);
		labels(f, &v[i]);
		fprintf(f, " %" PRIu64 "\n", kib * 1024);
	}
}

int metrics_write(const char *path, const struct metrics_proc *v, size_t n, double t,
		  char **cause)
{
	static const char *const states[] = { "idle", "capturing", "stopped", "failed", "off" };
	struct outfile *out = outfile_open(path, true, cause);
	FILE *f;
	size_t i, k;

	if (!out)
		return -1;
	f = outfile_stream(out);
	gauge_kib(f, "memwatch_rss_bytes", "Resident set size of the process.", v, n,
		  offsetof(struct mem_sample, rss));
	gauge_kib(f, "memwatch_anon_bytes", "Resident anonymous memory.", v, n,
		  offsetof(struct mem_sample, anon));
	gauge_kib(f, "memwatch_file_bytes", "Resident file-backed memory.", v, n,
		  offsetof(struct mem_sample, file));
	gauge_kib(f, "memwatch_shmem_bytes", "Resident shared memory.", v, n,
		  offsetof(struct mem_sample, shmem));
	gauge_kib(f, "memwatch_swap_bytes", "Memory swapped out.", v, n,
		  offsetof(struct mem_sample, swap));
	gauge_kib(f, "memwatch_vsz_bytes", "Virtual memory size.", v, n,
		  offsetof(struct mem_sample, vsz));
	gauge_kib(f, "memwatch_pss_bytes", "Proportional set size (with --pss).", v, n,
		  offsetof(struct mem_sample, pss));
	gauge_kib(f, "memwatch_uss_bytes", "Unique set size (with --pss).", v, n,
		  offsetof(struct mem_sample, uss));

	for (i = 0, k = 0; i < n; i++) {
		if (!v[i].have_growth)
			continue;
		if (k++ == 0)
			fputs("# HELP memwatch_rss_growth_bytes_per_second Least-squares slope of RSS over the last minute.\n"
			      "# TYPE memwatch_rss_growth_bytes_per_second gauge\n", f);
		fputs("memwatch_rss_growth_bytes_per_second", f);
		labels(f, &v[i]);
		fprintf(f, " %.1f\n", v[i].growth_bps);
	}
	if (n)
		fputs("# HELP memwatch_capture_state Capture of the process: 1 for the state it is in.\n"
		      "# TYPE memwatch_capture_state gauge\n", f);
	for (i = 0; i < n; i++)
		for (k = 0; k < sizeof states / sizeof states[0]; k++) {
			fprintf(f, "memwatch_capture_state{pid=\"%d\",command=\"", v[i].pid);
			put_label(f, v[i].command);
			fprintf(f, "\",state=\"%s\"} %d\n", states[k],
				v[i].capture && !strcmp(v[i].capture, states[k]));
		}
	if (n)
		fputs("# HELP memwatch_snapshots_total Heap snapshots written.\n"
		      "# TYPE memwatch_snapshots_total counter\n", f);
	for (i = 0; i < n; i++) {
		fputs("memwatch_snapshots_total", f);
		labels(f, &v[i]);
		fprintf(f, " %u\n", v[i].snapshots);
	}
	fputs("# HELP memwatch_watch_seconds How long the watch has run.\n"
	      "# TYPE memwatch_watch_seconds gauge\n", f);
	fprintf(f, "memwatch_watch_seconds %.3f\n", t);
	fputs("# HELP memwatch_processes Processes watched now.\n"
	      "# TYPE memwatch_processes gauge\n", f);
	fprintf(f, "memwatch_processes %zu\n", n);
	if (outfile_commit(out, cause) < 0)
		return -1;
	return 0;
}
