/* cgroup.c: a watched process's memory cgroup (see cgroup.h): where it is,
 * found again from /proc/PID/cgroup every 16 readings, and its usage, limit
 * and OOM kills read through files held open, so that a reading costs three
 * preads (about 2.3 us; the fourth, every 16th time, 3 us more). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "util.h"

struct cgmem {
	char *proc_path;         /* /proc/PID/cgroup */
	const char *v1root, *v2root;
	char *own_v1, *own_v2;   /* roots given to cgmem_new_at */
	int proc_fd;             /* -1 not opened, -2 gone */
	char path[512];          /* the cgroup the files below are of, "" none */
	int version;
	int usage_fd, limit_fd, events_fd;
	unsigned reads;          /* readings since /proc/PID/cgroup was read */
};

/* /proc/PID/cgroup is read again once in this many readings: it costs as much
 * as the three files of the cgroup together (the kernel prints every
 * hierarchy), and a process seldom moves. */
#define RECHECK_EVERY 16

/* The mount points of the memory controller's v1 hierarchy and of the v2
 * one, from our mountinfo; looked up once. */
static void cgroup_mounts(const char **v1, const char **v2)
{
	static char *m1, *m2;
	static bool done;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	if (!done) {
		done = true;
		f = fopen("/proc/self/mountinfo", "re");
		while (f && getline(&line, &cap, f) > 0) {
			/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - FSTYPE SOURCE SUPEROPTS */
			char mnt[512], fstype[64], super[512];
			const char *dash = strstr(line, " - ");
			if (!dash || sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1 ||
			    sscanf(dash + 3, "%63s %*s %511s", fstype, super) != 2)
				continue;
			if (!m2 && strcmp(fstype, "cgroup2") == 0) {
				m2 = xstrdup(mnt);
			} else if (!m1 && strcmp(fstype, "cgroup") == 0) {
				char *tok, *save = NULL;
				for (tok = strtok_r(super, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
					if (strcmp(tok, "memory") == 0)
						m1 = xstrdup(mnt);
			}
		}
		if (f)
			fclose(f);
		free(line);
	}
	*v1 = m1;
	*v2 = m2;
}

struct cgmem *cgmem_new(int pid)
{
	struct cgmem *cg = xcalloc(1, sizeof *cg);
	cg->proc_path = xasprintf("/proc/%d/cgroup", pid);
	cgroup_mounts(&cg->v1root, &cg->v2root);
	cg->proc_fd = cg->usage_fd = cg->limit_fd = cg->events_fd = -1;
	return cg;
}

struct cgmem *cgmem_new_at(const char *proc_cgroup, const char *v1root, const char *v2root)
{
	struct cgmem *cg = xcalloc(1, sizeof *cg);
	cg->proc_path = xstrdup(proc_cgroup);
	cg->v1root = cg->own_v1 = v1root ? xstrdup(v1root) : NULL;
	cg->v2root = cg->own_v2 = v2root ? xstrdup(v2root) : NULL;
	cg->proc_fd = cg->usage_fd = cg->limit_fd = cg->events_fd = -1;
	return cg;
}

/* Close the files of the cgroup (it moved, or was removed). */
static void cg_close(struct cgmem *cg)
{
	int *fds[] = { &cg->usage_fd, &cg->limit_fd, &cg->events_fd };
	for (size_t i = 0; i < 3; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	cg->path[0] = '\0';
}

void cgmem_free(struct cgmem *cg)
{
	if (!cg)
		return;
	cg_close(cg);
	if (cg->proc_fd >= 0)
		close(cg->proc_fd);
	free(cg->proc_path);
	free(cg->own_v1);
	free(cg->own_v2);
	free(cg);
}

/* The text of a held file from its start, NUL-terminated; length or -1. */
static ssize_t pread_text(int fd, char *buf, size_t size)
{
	ssize_t n;
	do
		n = pread(fd, buf, size - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

bool cgmem_parse_path(const char *text, bool want_v1, char *out, size_t size)
{
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c2) {
			size_t clen = (size_t)(c2 - c1 - 1), plen = len - (size_t)(c2 + 1 - line);
			bool match = false;
			if (!want_v1) {
				match = clen == 0 && c1 - line == 1 && line[0] == '0';
			} else {
				/* "4:memory:/a" or "4:cpu,memory:/a" */
				const char *p = c1 + 1;
				while (p < c2 && !match) {
					const char *e = memchr(p, ',', (size_t)(c2 - p));
					if (!e)
						e = c2;
					match = (size_t)(e - p) == 6 && memcmp(p, "memory", 6) == 0;
					p = e + 1;
				}
			}
			if (match && plen > 0 && plen < size && c2[1] == '/') {
				memcpy(out, c2 + 1, plen);
				out[plen] = '\0';
				return true;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

bool cgmem_parse_limit(const char *text, uint64_t *limit)
{
	char *end;
	unsigned long long v;

	while (*text == ' ')
		text++;
	if (strncmp(text, "max", 3) == 0 && (text[3] == '\n' || !text[3])) {
		*limit = 0;
		return true;
	}
	if (!(*text >= '0' && *text <= '9'))
		return false;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || (*end && *end != '\n'))
		return false;
	/* v1's "no limit" is PAGE_COUNTER_MAX pages: just under 2^63 */
	*limit = v >= (1ull << 62) ? 0 : v;
	return true;
}

bool cgmem_parse_oom_kills(const char *text, uint64_t *n)
{
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, "oom_kill ", 9) == 0) {
			char *end;
			errno = 0;
			*n = strtoull(p + 9, &end, 10);
			return !errno && end != p + 9;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

#define TREND_WINDOW_S 10.0
#define TREND_MIN_SPAN_S 1.0
#define TREND_SPACING_S 0.2
#define TREND_CAP (sizeof ((struct cgmem_trend *)0)->t / sizeof(double))

/* Index of the i-th oldest point. */
static unsigned trend_at(const struct cgmem_trend *tr, unsigned i)
{
	return (tr->head + TREND_CAP - tr->n + i) % TREND_CAP;
}

void cgmem_trend_push(struct cgmem_trend *tr, double t, double v)
{
	if (tr->n > 0 && t - tr->t[trend_at(tr, tr->n - 1)] < TREND_SPACING_S)
		return;
	if (tr->n == TREND_CAP)
		tr->n--;
	tr->t[tr->head] = t;
	tr->v[tr->head] = v;
	tr->head = (tr->head + 1) % TREND_CAP;
	tr->n++;
	while (tr->n > 3 && t - tr->t[trend_at(tr, 0)] > TREND_WINDOW_S)
		tr->n--;
}

bool cgmem_trend_rate(const struct cgmem_trend *tr, double *rate)
{
	double t0, mt = 0, mv = 0, sxx = 0, sxy = 0;
	unsigned i, n = tr->n;

	if (n < 3)
		return false;
	t0 = tr->t[trend_at(tr, 0)];
	if (tr->t[trend_at(tr, n - 1)] - t0 < TREND_MIN_SPAN_S)
		return false;
	for (i = 0; i < n; i++) {
		mt += tr->t[trend_at(tr, i)] - t0;
		mv += tr->v[trend_at(tr, i)];
	}
	mt /= n;
	mv /= n;
	for (i = 0; i < n; i++) {
		double dt = tr->t[trend_at(tr, i)] - t0 - mt;
		sxx += dt * dt;
		sxy += dt * (tr->v[trend_at(tr, i)] - mv);
	}
	if (sxx <= 0)
		return false;
	*rate = sxy / sxx;
	return true;
}

double cgmem_seconds_to_limit(uint64_t usage, uint64_t limit, double rate)
{
	if (!limit || rate <= 0)
		return -1;
	if (usage >= limit)
		return 0;
	return (double)(limit - usage) / rate;
}

/* Open the files of the cgroup at path (version 1 or 2). */
static bool cg_open(struct cgmem *cg, int version, const char *path)
{
	static const char *const names[2][3] = {
		{ "memory.usage_in_bytes", "memory.limit_in_bytes", "memory.oom_control" },
		{ "memory.current", "memory.max", "memory.events" },
	};
	int *fds[] = { &cg->usage_fd, &cg->limit_fd, &cg->events_fd };
	const char *root = version == 1 ? cg->v1root : cg->v2root;
	char file[1024];

	cg_close(cg);
	for (size_t i = 0; i < 3; i++) {
		if ((size_t)snprintf(file, sizeof file, "%s%s/%s", root, strcmp(path, "/") ? path : "",
				     names[version - 1][i]) >= sizeof file)
			return false;
		*fds[i] = open(file, O_RDONLY | O_CLOEXEC);
		/* the usage is what a memory cgroup has: without it there is none
		 * (the root of v2 has no memory.current) */
		if (*fds[i] < 0 && i == 0)
			return false;
	}
	snprintf(cg->path, sizeof cg->path, "%s", path);
	cg->version = version;
	return true;
}

int cgmem_read(struct cgmem *cg, struct cgmem_sample *out)
{
	char text[4096], path[512];
	bool v1 = false;

	memset(out, 0, sizeof *out);
	if (cg->proc_fd == -2 || (!cg->v1root && !cg->v2root))
		return -1;
	if (cg->proc_fd < 0 && (cg->proc_fd = open(cg->proc_path, O_RDONLY | O_CLOEXEC)) < 0) {
		cg->proc_fd = -2;
		return -1;
	}
	if (cg->path[0] && ++cg->reads < RECHECK_EVERY)
		goto read_files;
	cg->reads = 0;
	if (pread_text(cg->proc_fd, text, sizeof text) <= 0)
		return -1;
	/* a memory controller mounted for v1 is not in v2's hierarchy */
	if (cg->v1root && cgmem_parse_path(text, true, path, sizeof path))
		v1 = true;
	else if (!cg->v2root || !cgmem_parse_path(text, false, path, sizeof path))
		return -1;
	/* the root cgroup is the whole machine: no limit of its own */
	if (strcmp(path, "/") == 0)
		return -1;
	if ((strcmp(path, cg->path) != 0 || cg->version != (v1 ? 1 : 2)) &&
	    !cg_open(cg, v1 ? 1 : 2, path)) {
		cg_close(cg);
		return -1;
	}
read_files:
	if (pread_text(cg->usage_fd, text, sizeof text) <= 0 ||
	    !cgmem_parse_limit(text, &out->usage)) {
		/* the cgroup was removed: found again at the next reading */
		cg_close(cg);
		return -1;
	}
	if (cg->limit_fd >= 0 && pread_text(cg->limit_fd, text, sizeof text) > 0)
		cgmem_parse_limit(text, &out->limit);
	if (cg->events_fd >= 0 && pread_text(cg->events_fd, text, sizeof text) > 0)
		out->have_oom_kills = cgmem_parse_oom_kills(text, &out->oom_kills);
	out->found = true;
	out->version = cg->version;
	return 0;
}

int cgmem_oom_kills_now(struct cgmem *cg, uint64_t *n)
{
	char text[4096];

	if (cg->events_fd < 0 || pread_text(cg->events_fd, text, sizeof text) <= 0 ||
	    !cgmem_parse_oom_kills(text, n))
		return -1;
	return 0;
}
