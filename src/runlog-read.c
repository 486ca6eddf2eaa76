/* runlog-read.c: the strict reader of run.log files (see runlog.h for the format),
 * used by memwatch plot. Every complaint names the file and the line. */
#include "config.h"
#include "runlog.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The column header of version 2, in order; version 1 has the first
 * NCOLUMNS_V1. */
static const char *const columns[] = {
	"time_s", "pid", "rss_kib", "anon_kib", "file_kib", "shmem_kib",
	"swap_kib", "vsz_kib", "pss_kib", "uss_kib", "hwm_kib", "cgroup_kib", "cgroup_limit_kib",
};
#define NCOLUMNS_V2 (sizeof columns / sizeof columns[0])
#define NCOLUMNS_V1 10
#define NCOLUMNS (r->ncols)

/* Tokens kept per line: more than any valid line has, so that a line with too
 * many columns is still counted right without storing them. */
#define MAXTOK 16

/* The reader's state while it goes through the file. */
struct reader {
	const char *path;
	size_t lineno;
	struct runlog_data *d;
	size_t samples_cap, events_cap, pids_cap, procs_cap;
	/* open-addressing set pid -> seen, so that many processes stay linear */
	int *pidset;             /* slots hold pid + 1 (0 = empty; total is 0 -> 1) */
	size_t pidset_cap;
	bool header_seen;
	size_t ncols;            /* columns of the file's version */
};

/* Split s in place on blanks; store up to MAXTOK tokens, return how many there are. */
static size_t split(char *s, char **tok)
{
	size_t n = 0;
	char *p = s;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		if (n < MAXTOK)
			tok[n] = p;
		n++;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (*p)
			*p++ = '\0';
	}
	return n;
}

/* Parse a time in seconds: a finite non-negative decimal number, nothing else. */
static int parse_time(const char *s, double *t)
{
	char *end;

	if (!((*s >= '0' && *s <= '9') || (*s == '.' && s[1] >= '0' && s[1] <= '9')))
		return -1;
	errno = 0;
	*t = strtod(s, &end);
	if (errno || *end || !isfinite(*t) || *t < 0)
		return -1;
	return 0;
}

/* Parse a pid: a positive decimal int. */
static int parse_pid_field(const char *s, int *pid)
{
	char *end;
	long v;

	if (!(*s >= '1' && *s <= '9'))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return -1;
	*pid = (int)v;
	return 0;
}

/* Parse a KiB figure: decimal digits, or "-" for one not measured. */
static int parse_kib(const char *s, uint64_t *v)
{
	const char *p;
	uint64_t r = 0;

	if (strcmp(s, "-") == 0) {
		*v = RUNLOG_NONE;
		return 0;
	}
	if (!*s)
		return -1;
	for (p = s; *p; p++) {
		unsigned dgt;
		if (*p < '0' || *p > '9')
			return -1;
		dgt = (unsigned)(*p - '0');
		/* RUNLOG_NONE itself is reserved for "-" */
		if (r > (UINT64_MAX - 1 - dgt) / 10)
			return -1;
		r = r * 10 + dgt;
	}
	*v = r;
	return 0;
}

/* A field of the file as an error echoes it: at most 40 bytes (not cut inside
 * a UTF-8 character), then an ellipsis (U+2026), so that a 10 MB field makes a short line.
 * Returns buf (of 64 bytes). */
static const char *clip(const char *s, char buf[64])
{
	size_t n = strlen(s);
	if (n <= 40)
		return s;
	n = 40;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	snprintf(buf, 64, "%.*s\u2026", (int)n, s);
	return buf;
}

/* Error "'path' line N: ..." into *cause; returns -1. */
static int line_error(struct reader *r, char **cause, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int line_error(struct reader *r, char **cause, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	*cause = xasprintf("'%s' line %zu: %s", r->path, r->lineno, msg);
	free(msg);
	return -1;
}

/* Grow an array of elements of size sz to hold one more; *cap doubles. */
static void *grow(void *arr, size_t n, size_t *cap, size_t sz)
{
	if (n < *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 64;
	return xrealloc(arr, *cap * sz);
}

/* Slot of a key in the pid set (Fibonacci hashing). */
static size_t pid_slot(int key, size_t mask)
{
	return (size_t)((unsigned)key * 2654435761u) & mask;
}

/* Note pid (0 = total) in the list of distinct pids, in order of appearance. */
static void note_pid(struct reader *r, int pid)
{
	struct runlog_data *d = r->d;
	size_t i, mask;

	/* keep the set at most half full */
	if ((d->npids + 1) * 2 > r->pidset_cap) {
		size_t ncap = r->pidset_cap ? r->pidset_cap * 2 : 64;
		int *nset = xcalloc(ncap, sizeof *nset);
		for (i = 0; i < r->pidset_cap; i++) {
			if (r->pidset[i]) {
				size_t j = pid_slot(r->pidset[i], ncap - 1);
				while (nset[j])
					j = (j + 1) & (ncap - 1);
				nset[j] = r->pidset[i];
			}
		}
		free(r->pidset);
		r->pidset = nset;
		r->pidset_cap = ncap;
	}
	mask = r->pidset_cap - 1;
	/* keys are pid + 1 so that the total (0) is not an empty slot; INT_MAX,
	 * which has no pid + 1, takes INT_MIN, which no pid uses */
	{
		int key = pid == INT_MAX ? INT_MIN : pid + 1;
		i = pid_slot(key, mask);
		while (r->pidset[i]) {
			if (r->pidset[i] == key)
				return;
			i = (i + 1) & mask;
		}
		r->pidset[i] = key;
	}
	d->pids = grow(d->pids, d->npids, &r->pids_cap, sizeof *d->pids);
	d->pids[d->npids++] = pid;
}

/* The column header line: the version 1 names, in order. */
static int read_header(struct reader *r, char *line, char **cause)
{
	char *tok[MAXTOK];
	size_t n = split(line, tok), i;

	if (n != NCOLUMNS)
		goto bad;
	for (i = 0; i < NCOLUMNS; i++)
		if (strcmp(tok[i], columns[i]) != 0)
			goto bad;
	r->header_seen = true;
	return 0;
bad:
	return line_error(r, cause, "expected the column header 'time_s pid rss_kib anon_kib "
			  "file_kib shmem_kib swap_kib vsz_kib pss_kib uss_kib%s'",
			  NCOLUMNS == NCOLUMNS_V2 ? " hwm_kib cgroup_kib cgroup_limit_kib" : "");
}

/* One sample line: time, pid or "total", eight figures in KiB or "-". */
static int read_sample(struct reader *r, char *line, char **cause)
{
	struct runlog_data *d = r->d;
	struct runlog_sample_rec rec;
	char *tok[MAXTOK];
	uint64_t *fig[] = {
		&rec.s.rss, &rec.s.anon, &rec.s.file, &rec.s.shmem,
		&rec.s.swap, &rec.s.vsz, &rec.s.pss, &rec.s.uss,
		&rec.s.hwm, &rec.s.cg_usage, &rec.s.cg_limit,
	};
	size_t n = split(line, tok), i;
	char cb[64];

	if (n != NCOLUMNS)
		return line_error(r, cause, "expected %zu columns, found %zu", NCOLUMNS, n);
	memset(&rec, 0, sizeof rec);
	rec.s.hwm = rec.s.cg_usage = rec.s.cg_limit = RUNLOG_NONE;
	if (parse_time(tok[0], &rec.t) < 0)
		return line_error(r, cause, "invalid time_s '%s'", clip(tok[0], cb));
	if (strcmp(tok[1], "total") == 0)
		rec.s.pid = 0;
	else if (parse_pid_field(tok[1], &rec.s.pid) < 0)
		return line_error(r, cause, "invalid pid '%s'", clip(tok[1], cb));
	for (i = 0; i < NCOLUMNS - 2; i++)
		if (parse_kib(tok[2 + i], fig[i]) < 0)
			return line_error(r, cause, "invalid %s '%s'", columns[2 + i],
					  clip(tok[2 + i], cb));
	if (rec.s.pss != RUNLOG_NONE)
		d->has_pss = true;
	d->samples = grow(d->samples, d->nsamples, &r->samples_cap, sizeof *d->samples);
	d->samples[d->nsamples++] = rec;
	note_pid(r, rec.s.pid);
	return 0;
}

/* "# event <time_s> <pid or -> <kind> [key=value ...]" (after "# event "). */
static int read_event(struct reader *r, char *rest, char **cause)
{
	struct runlog_data *d = r->d;
	struct runlog_event_rec ev;
	char *p = rest, *f[3], cb[64];
	size_t i;

	memset(&ev, 0, sizeof ev);
	/* three fields, then the detail verbatim */
	for (i = 0; i < 3; i++) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return line_error(r, cause, "malformed event (expected '# event TIME PID KIND [DETAIL]')");
		f[i] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (*p)
			*p++ = '\0';
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (parse_time(f[0], &ev.t) < 0)
		return line_error(r, cause, "invalid event time '%s'", clip(f[0], cb));
	if (strcmp(f[1], "-") == 0)
		ev.pid = 0;
	else if (parse_pid_field(f[1], &ev.pid) < 0)
		return line_error(r, cause, "invalid event pid '%s'", clip(f[1], cb));
	ev.kind = xstrdup(f[2]);
	ev.detail = xstrdup(p);
	/* trailing blanks are not part of the detail */
	for (i = strlen(ev.detail); i > 0 && (ev.detail[i - 1] == ' ' || ev.detail[i - 1] == '\t'); i--)
		ev.detail[i - 1] = '\0';
	d->events = grow(d->events, d->nevents, &r->events_cap, sizeof *d->events);
	d->events[d->nevents++] = ev;
	return 0;
}

/* "# process: <pid> <command line>": the processes of the run, for legends. */
static int read_process(struct reader *r, char *rest, char **cause)
{
	struct runlog_data *d = r->d;
	char *p = rest, *pidstr, cb[64];
	int pid;

	while (*p == ' ' || *p == '\t')
		p++;
	pidstr = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	if (*p)
		*p++ = '\0';
	while (*p == ' ' || *p == '\t')
		p++;
	if (parse_pid_field(pidstr, &pid) < 0)
		return line_error(r, cause, "invalid process pid '%s'", clip(pidstr, cb));
	d->procs = grow(d->procs, d->nprocs, &r->procs_cap, sizeof *d->procs);
	d->procs[d->nprocs].pid = pid;
	d->procs[d->nprocs].cmd = xstrdup(p);
	d->nprocs++;
	return 0;
}

/* A '#' line after the first: an event, metadata we use, or anything else (kept
 * for people and ignored, so that later writers may add metadata). */
static int read_comment(struct reader *r, char *line, char **cause)
{
	struct runlog_data *d = r->d;

	if (strncmp(line, "# event", 7) == 0 && (line[7] == ' ' || line[7] == '\t' || !line[7]))
		return read_event(r, line + 7, cause);
	if (strncmp(line, "# command: ", 11) == 0) {
		free(d->command);
		d->command = xstrdup(line + 11);
		return 0;
	}
	if (strncmp(line, "# process: ", 11) == 0)
		return read_process(r, line + 11, cause);
	if (strcmp(line, "# pss: yes") == 0)
		d->has_pss = true;
	return 0;
}

/* The first line: the magic and a version this reader knows. */
static int read_magic(struct reader *r, const char *line, char **cause)
{
	const char *v = line + strlen(RUNLOG_MAGIC);
	char *end;
	long ver;

	if (strncmp(line, RUNLOG_MAGIC, strlen(RUNLOG_MAGIC)) != 0 || !(*v >= '0' && *v <= '9')) {
		*cause = xasprintf("'%s' is not a memwatch run.log", r->path);
		return -1;
	}
	errno = 0;
	ver = strtol(v, &end, 10);
	if (errno || *end) {
		*cause = xasprintf("'%s' is not a memwatch run.log", r->path);
		return -1;
	}
	if (ver != 1 && ver != RUNLOG_VERSION) {
		*cause = xasprintf("'%s' is a run.log of version %ld; this memwatch reads versions 1 "
				   "and %d", r->path, ver, RUNLOG_VERSION);
		return -1;
	}
	r->ncols = ver == 1 ? NCOLUMNS_V1 : NCOLUMNS_V2;
	return 0;
}

/* Read and check a run.log (see runlog.h). A last line without its newline is
 * what a killed memwatch leaves: it is ignored, not an error. */
struct runlog_data *runlog_read(const char *path, char **cause)
{
	struct reader r;
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int err = 0;

	memset(&r, 0, sizeof r);
	r.path = path;
	r.d = xcalloc(1, sizeof *r.d);
	f = fopen(path, "re");
	if (!f) {
		*cause = xasprintf("cannot open '%s': %s", path, strerror(errno));
		runlog_data_free(r.d);
		return NULL;
	}
	errno = 0;
	while ((len = getline(&line, &cap, f)) > 0) {
		bool complete = line[len - 1] == '\n';
		r.lineno++;
		if (complete)
			line[--len] = '\0';
		if (len > 0 && line[len - 1] == '\r')
			line[--len] = '\0';
		if (strlen(line) != (size_t)len) {
			if (r.lineno == 1)
				*cause = xasprintf("'%s' is not a memwatch run.log", path);
			else
				line_error(&r, cause, "holds a NUL byte (binary data?)");
			goto fail;
		}
		/* the magic is checked even on a cut first line, so that a file
		 * that is something else is called so */
		if (r.lineno == 1) {
			if (read_magic(&r, line, cause) < 0)
				goto fail;
			continue;
		}
		if (!complete)
			break;
		if (len == 0)
			continue;
		if (line[0] == '#') {
			if (read_comment(&r, line, cause) < 0)
				goto fail;
		} else if (!r.header_seen) {
			if (read_header(&r, line, cause) < 0)
				goto fail;
		} else if (read_sample(&r, line, cause) < 0) {
			goto fail;
		}
		errno = 0;
	}
	if (ferror(f)) {
		err = errno ? errno : EIO;
		*cause = xasprintf("cannot read '%s': %s", path, strerror(err));
		goto fail;
	}
	if (r.lineno == 0) {
		*cause = xasprintf("'%s' is empty, not a memwatch run.log", path);
		goto fail;
	}
	if (r.d->nsamples == 0) {
		*cause = xasprintf("'%s' holds no samples", path);
		goto fail;
	}
	free(line);
	free(r.pidset);
	fclose(f);
	return r.d;
fail:
	free(line);
	free(r.pidset);
	fclose(f);
	runlog_data_free(r.d);
	return NULL;
}

/* Free what runlog_read returned; NULL is fine. */
void runlog_data_free(struct runlog_data *d)
{
	size_t i;

	if (!d)
		return;
	free(d->command);
	free(d->samples);
	for (i = 0; i < d->nevents; i++) {
		free(d->events[i].kind);
		free(d->events[i].detail);
	}
	free(d->events);
	free(d->pids);
	for (i = 0; i < d->nprocs; i++)
		free(d->procs[i].cmd);
	free(d->procs);
	free(d);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

char *runlog_decode(const char *v, size_t n)
{
	char *out = xmalloc(n + 1);
	size_t i, k = 0;
	int hi, lo;

	for (i = 0; i < n; i++) {
		if (v[i] == '%' && i + 2 < n + 1 && (hi = hexval(v[i + 1])) >= 0 &&
		    (lo = hexval(v[i + 2])) >= 0 && (hi || lo)) {
			out[k++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			out[k++] = v[i];
		}
	}
	out[k] = '\0';
	return out;
}

char *runlog_field(const char *detail, const char *key)
{
	size_t klen = strlen(key);
	const char *p = detail;

	while (p && *p) {
		while (*p == ' ')
			p++;
		if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
			const char *v = p + klen + 1;
			return runlog_decode(v, strcspn(v, " "));
		}
		p = strchr(p, ' ');
	}
	return NULL;
}
