/* runlog.h: the run.log file: one memory sample per line, with metadata and events.
 *
 * Format (version 2), plain text, readable by gnuplot, awk and people:
 *
 *   # memwatch run.log 2
 *   # command: memwatch -p 1234 -i 1s
 *   # start: 2026-11-22T10:00:00Z 1763805600.123
 *   # interval_ms: 1000
 *   # process: 1234 /usr/bin/foo --flag          (one per process, as found)
 *   # pss: yes|no
 *   time_s pid rss_kib anon_kib file_kib shmem_kib swap_kib vsz_kib pss_kib uss_kib hwm_kib cgroup_kib cgroup_limit_kib
 *   0.000 1234 10240 8192 2048 0 0 65536 - - 10240 51200 163840
 *   1.000 1234 10300 8252 2048 0 0 65536 - - 10300 51260 163840
 *   1.000 total 20600 ...                        (--children / several pids: the sum)
 *   # event 5.002 1234 trigger rss=75000 baseline=10240 rule=+64MiB
 *   # event 5.011 1234 attach pause_ms=9.8 tid=1236
 *   # event 5.300 1234 snapshot path=run.1234.1.snap live=123456
 *   # event 9.000 1234 exit status=0
 *   # event 9.000 - end reason=exited
 *
 * Sample lines: time in seconds since start, the pid (or "total"), then KiB;
 * "-" where a figure was not measured (pss/uss without --pss) or could not be read.
 * hwm_kib is VmHWM, the most RSS the process ever had; cgroup_kib and
 * cgroup_limit_kib its memory cgroup's usage and limit ("-" when it is in none
 * we can read, or the cgroup has no limit); the total line has "-" in these.
 * Version 1 had the first ten columns only; the reader takes both.
 * The column header is the first line that does not start with '#'.
 * Event lines: "# event <time_s> <pid or -> <kind> [key=value ...]"; a value
 * that is text (a path, a command, a cause) is written through runlog_encode:
 * bytes up to the space, '%' and DEL as %XX, so it holds no space and reads
 * back whole with runlog_field. Kinds: start,
 * process (a child joined), trigger, attach, attach-failed, capture-start,
 * snapshot, peak-snapshot (the snapshot at the high-water mark of the live
 * heap, peak_s=<its time>: written once the heap came down from it, one
 * file replaced by a higher peak, so only the last such event names what
 * the file holds), snapshot-failed, capture-stop, exit (oom=1 and
 * the cgroup's limit=<bytes> when the OOM killer killed it), signal, end; for a process
 * that is stopped: stopped, continued, snapshot-deferred, attach-deferred.
 * Every line is flushed when written, so a killed memwatch loses at most one line. */
#ifndef MEMWATCH_RUNLOG_H
#define MEMWATCH_RUNLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RUNLOG_MAGIC "# memwatch run.log "
#define RUNLOG_VERSION 2
#define RUNLOG_NONE UINT64_MAX /* a figure that was not measured */

/* One memory sample of one process (or the total). All sizes in KiB. */
struct mem_sample {
	int pid;                 /* 0 for the "total" line */
	uint64_t rss, anon, file, shmem, swap, vsz;
	uint64_t pss, uss;       /* RUNLOG_NONE unless measured */
	/* version 2: RUNLOG_NONE where unknown (and in the lines of version 1) */
	uint64_t hwm;            /* VmHWM: the most RSS the process ever had */
	uint64_t cg_usage;       /* its memory cgroup's usage */
	uint64_t cg_limit;       /*   and limit (RUNLOG_NONE: none) */
};

/* ---- writing ---- */
struct runlog;
/* Create path (refusing an existing file unless force); the header lines are
 * written at once. command is memwatch's own command line. NULL with *cause
 * (caller frees) and errno: EEXIST when the file is there and force is not. */
struct runlog *runlog_create(const char *path, bool force, const char *command,
			     uint64_t interval_ms, bool pss, char **cause);
/* "# <key>: <value>" metadata line. */
void runlog_meta(struct runlog *log, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A sample line at t seconds since start. */
void runlog_sample(struct runlog *log, double t, const struct mem_sample *s);
/* An event line: pid 0 is written "-"; detail is "key=value ..." or NULL. */
void runlog_event(struct runlog *log, double t, int pid, const char *kind,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
const char *runlog_path(const struct runlog *log);
/* 0, or the errno of the first write that failed (a full disk): the watch must
 * end then; what was written before stays. */
int runlog_error(const struct runlog *log);
/* Seconds since the log's start (monotonic). */
double runlog_elapsed(const struct runlog *log);
/* Flush and close; 0, or -1 with *cause when any write failed. */
int runlog_close(struct runlog *log, char **cause);

/* ---- reading (memwatch plot) ---- */
struct runlog_event_rec {
	double t;
	int pid;                 /* 0 for "-" */
	char *kind;
	char *detail;            /* the rest of the line, may be "" */
};

/* s as an event value: every byte <= ' ', '%' and 0x7f written %XX (caller
 * frees). */
char *runlog_encode(const char *s);
/* The n bytes at v with every %XX runlog_encode wrote decoded (caller frees). */
char *runlog_decode(const char *v, size_t n);
/* The value of key in an event's detail ("k=v k2=v2"), decoded; NULL when
 * absent. Caller frees. */
char *runlog_field(const char *detail, const char *key);

struct runlog_data {
	char *command;           /* from "# command:", may be NULL */
	bool has_pss;
	size_t nsamples;
	struct runlog_sample_rec { double t; struct mem_sample s; } *samples;
	size_t nevents;
	struct runlog_event_rec *events;
	size_t npids;
	int *pids;               /* distinct pids in order of appearance; 0 = total */
	size_t nprocs;           /* "# process:" lines, in order (names for legends) */
	struct runlog_process_rec { int pid; char *cmd; } *procs;
};

/* Parse a run.log. NULL with *cause ("'x.log' line 12: expected 10 columns, found 3",
 * "'x.log' is not a memwatch run.log", "'x.log' holds no samples"). */
struct runlog_data *runlog_read(const char *path, char **cause);
void runlog_data_free(struct runlog_data *d);

#endif
