/* cgroup.h: the memory cgroup of a watched process: what it uses, its limit,
 * and how many times the OOM killer killed in it, from cgroup v2
 * (memory.current, memory.max, memory.events) or v1 (memory.usage_in_bytes,
 * memory.limit_in_bytes, memory.oom_control), read at every sample through
 * files held open. */
#ifndef MEMWATCH_CGROUP_H
#define MEMWATCH_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One process's memory cgroup, followed as it moves. */
struct cgmem;

/* The reader for pid, whose /proc/PID/cgroup names its cgroups and whose
 * hierarchies are mounted at v1root (the memory controller's, e.g.
 * /sys/fs/cgroup/memory) and v2root (e.g. /sys/fs/cgroup); NULL roots are
 * looked up in /proc/self/mountinfo. Never NULL; nothing is opened yet. */
struct cgmem *cgmem_new(int pid);
struct cgmem *cgmem_new_at(const char *proc_cgroup, const char *v1root, const char *v2root);
void cgmem_free(struct cgmem *cg);

/* One reading. */
struct cgmem_sample {
	bool found;              /* the process is in a memory cgroup we can read */
	int version;             /* 1 or 2 */
	uint64_t usage;          /* bytes the cgroup uses */
	uint64_t limit;          /* its limit, bytes; 0 when it has none */
	uint64_t oom_kills;      /* the kernel's count of OOM kills in it */
	bool have_oom_kills;     /* ... when the kernel counts them */
};

/* Read the cgroup now: the three files of its cgroup, each one pread; and
 * first, at the first reading and every 16th, /proc/PID/cgroup (a process may
 * move: its new cgroup's files are opened then; and when its cgroup's files
 * can no longer be read). Returns 0, or -1 when it is in no memory cgroup we
 * can read (out->found false). */
int cgmem_read(struct cgmem *cg, struct cgmem_sample *out);

/* The count of OOM kills of the cgroup of the last reading, read again
 * through its held file: for a process that is gone (whose /proc/PID/cgroup
 * is no more). 0, or -1 when it cannot be read. */
int cgmem_oom_kills_now(struct cgmem *cg, uint64_t *n);

/* ---- the parsers, for the reader and its tests ---- */

/* The memory cgroup's path ("/a/b") in the text of /proc/PID/cgroup: the v1
 * line whose controllers include memory, when want_v1; else the v2 line
 * ("0::/a/b"). False when there is none. */
bool cgmem_parse_path(const char *text, bool want_v1, char *out, size_t size);
/* A limit file's text (v2 memory.max "max" or bytes; v1 limit_in_bytes, where
 * a figure near 2^63 means none): bytes, 0 for no limit. False when it is not
 * a number. */
bool cgmem_parse_limit(const char *text, uint64_t *limit);
/* The "oom_kill N" line of v2 memory.events or v1 memory.oom_control. */
bool cgmem_parse_oom_kills(const char *text, uint64_t *n);

/* The usage's recent growth, for the time left until the limit: what counts
 * near a limit is how fast it grows now, so the window is short (the last
 * 10 s, from 1 s on), unlike the trigger's minute. Zero-initialised. */
struct cgmem_trend {
	double t[32], v[32];
	unsigned n, head;
};
void cgmem_trend_push(struct cgmem_trend *tr, double t, double v);
/* Least-squares slope, bytes per second; false while the points span less
 * than 1 s or are fewer than 3. */
bool cgmem_trend_rate(const struct cgmem_trend *tr, double *rate);

/* The seconds until usage reaches limit at rate bytes per second; -1 when
 * there is no limit or usage is not growing. */
double cgmem_seconds_to_limit(uint64_t usage, uint64_t limit, double rate);

#endif
