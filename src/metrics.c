/* metrics.c: the Prometheus text exposition of a watch. One file, replaced
 * whole after every sample, so that a scrape never reads half of one.
 *
 * It is rewritten at every sample, so each write is kept to four system
 * calls (create, write, close, rename): where the file goes is decided once
 * (the one output rule, util.c), and the file is not synced: a crash may leave
 * it old or empty, which the next sample mends; a reader never sees half of
 * one. */
#include "config.h"
#include "metrics.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A label value: backslash, double quote and newline escaped, as the format
 * asks; a command line longer than 200 bytes is cut (labels are for telling
 * processes apart, not for storing arguments). */
static void put_label(FILE *f, const char *v)
{
	const char *p = v ? v : "";
	size_t left = strnlen(p, 200);

	while (left) {
		size_t span = strcspn(p, "\\\"\n");
		if (span > left)
			span = left;
		fwrite(p, 1, span, f);
		p += span;
		left -= span;
		if (!left)
			break;
		fputs(*p == '\n' ? "\\n" : *p == '"' ? "\\\"" : "\\\\", f);
		p++;
		left--;
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

#define METRICS_MIN_GAP_S 0.5
/* When the file was last written (seconds into the watch). */
static double last_t = -1;

/* Where the metrics go, decided at the first write: the file replaced (a
 * symbolic link's target), the temporary name beside it, or a device, FIFO
 * or socket written as it is. */
static struct {
	char *path;
	char *final;
	char *tmp;
	bool direct;
} dest;

static int dest_decide(const char *path, char **cause)
{
	enum outpath_kind kind;
	char *real = NULL;

	if (dest.path && strcmp(dest.path, path) == 0)
		return 0;
	if (outpath_resolve(path, true, &kind, &real, cause) < 0)
		return -1;
	free(dest.path);
	free(dest.final);
	free(dest.tmp);
	dest.path = xstrdup(path);
	dest.final = real ? real : xstrdup(path);
	dest.direct = kind == OUTPATH_DIRECT;
	dest.tmp = xasprintf("%s.tmp.%d", dest.final, (int)getpid());
	return 0;
}

/* Put the text in place. The temporary file is created exclusively (one left
 * by a crash is removed first), so no file of another's is ever truncated. */
static int put(const char *buf, size_t len, char **cause)
{
	const char *name = dest.direct ? dest.path : dest.tmp;
	int fd, err = 0;

	if (dest.direct) {
		fd = open(name, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	} else {
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd < 0 && errno == EEXIST && unlink(name) == 0)
			fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	}
	if (fd < 0) {
		*cause = xasprintf("cannot write '%s': %s", dest.path, strerror(errno));
		return -1;
	}
	err = -write_all(fd, buf, len);
	if (close(fd) != 0 && !err)
		err = errno;
	if (!err && !dest.direct && rename(name, dest.final) != 0)
		err = errno;
	if (err) {
		*cause = xasprintf("cannot write '%s': %s", dest.path, strerror(err));
		if (!dest.direct)
			unlink(name);
		return -1;
	}
	return 0;
}

int metrics_write(const char *path, const struct metrics_proc *v, size_t n, double t,
		  char **cause)
{
	static const char *const states[] = { "idle", "capturing", "stopped", "failed", "off" };
	char *buf = NULL;
	size_t len = 0, i, k;
	FILE *f;
	int r;

	/* At short intervals the file is rewritten at most twice a second: a
	 * scrape (every 15 s or so) sees figures at most half a second old, and a
	 * watch at 1 ms does not spend its time renaming files. */
	if (v && last_t >= 0 && t - last_t < METRICS_MIN_GAP_S)
		return 0;
	last_t = t;
	if (dest_decide(path, cause) < 0)
		return -1;
	if (!(f = open_memstream(&buf, &len))) {
		*cause = xasprintf("cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	__fsetlocking(f, FSETLOCKING_BYCALLER);
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
	gauge_kib(f, "memwatch_rss_peak_bytes", "The most RSS the process ever had (VmHWM).", v, n,
		  offsetof(struct mem_sample, hwm));
	gauge_kib(f, "memwatch_cgroup_usage_bytes", "Memory its memory cgroup uses.", v, n,
		  offsetof(struct mem_sample, cg_usage));
	gauge_kib(f, "memwatch_cgroup_limit_bytes", "Its memory cgroup's limit (none: not shown).", v,
		  n, offsetof(struct mem_sample, cg_limit));
	for (i = 0, k = 0; i < n; i++) {
		if (v[i].to_limit < 0)
			continue;
		if (k++ == 0)
			fputs("# HELP memwatch_seconds_to_limit Seconds until its memory cgroup's usage reaches "
			      "the limit, at its growth over the last 10 s.\n"
			      "# TYPE memwatch_seconds_to_limit gauge\n", f);
		fputs("memwatch_seconds_to_limit", f);
		labels(f, &v[i]);
		fprintf(f, " %.1f\n", v[i].to_limit);
	}

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
	if (fclose(f) != 0) {
		*cause = xasprintf("cannot write '%s': %s", path, strerror(errno));
		free(buf);
		return -1;
	}
	r = put(buf, len, cause);
	free(buf);
	return r;
}
