/* runlog.c: writing run.log: metadata, the column header, one line per sample and
 * event lines, each written with one write(2) so a killed memwatch loses at most
 * the line it was writing. (Reading is in runlog-read.c.) */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runlog.h"
#include "util.h"

#define COLUMNS "time_s pid rss_kib anon_kib file_kib shmem_kib swap_kib vsz_kib pss_kib uss_kib " \
	"hwm_kib cgroup_kib cgroup_limit_kib\n"

struct runlog {
	char *path;
	int fd;
	bool own_fd;             /* false for "-" (standard output) */
	bool regular;            /* a regular file (not a device or FIFO): cut back on failure */
	bool pss;
	bool columns_written;    /* "# pss:" and the column header are out */
	int err;                 /* errno of the first failed write, 0 if none */
	off_t end;               /* bytes written whole so far */
	uint64_t start_ns;       /* monotonic */
};

/* Write one line; after the first failure nothing more is written, and the
 * error is kept for runlog_error and runlog_close. A line that did not fit
 * whole (a full disk, a file size limit) is cut off again, so that the log
 * ends with the last complete line. */
static void put(struct runlog *log, const char *buf, size_t len)
{
	int r;
	if (log->err)
		return;
	r = write_all(log->fd, buf, len);
	if (r < 0) {
		log->err = -r;
		if (log->regular)
			(void)!ftruncate(log->fd, log->end);
		return;
	}
	log->end += (off_t)len;
}

/* Write the n formatted bytes of buf (size cap, n clamped to it) as one line:
 * whatever a value holds, a newline in it becomes a space. */
static void put_line(struct runlog *log, char *buf, size_t n, size_t cap)
{
	if (n > cap - 2)
		n = cap - 2;
	for (char *p = buf; p < buf + n; p++)
		if (*p == '\n')
			*p = ' ';
	buf[n++] = '\n';
	put(log, buf, n);
}

/* The metadata that must come last, and the column header, before the first
 * sample or event line (so that "# process:" lines can come before them). */
static void put_columns(struct runlog *log)
{
	char buf[160];
	int n;
	if (log->columns_written)
		return;
	log->columns_written = true;
	n = snprintf(buf, sizeof buf, "# pss: %s\n" COLUMNS, log->pss ? "yes" : "no");
	put(log, buf, (size_t)n);
}

/* Create the log (O_EXCL unless forced) and write its first metadata lines. */
struct runlog *runlog_create(const char *path, bool force, const char *command,
			     uint64_t interval_ms, bool pss, char **cause)
{
	struct runlog *log;
	uint64_t wall = wall_ns();
	time_t secs = (time_t)(wall / 1000000000u);
	struct tm tm;
	char stamp[64];
	char *head;

	log = xcalloc(1, sizeof *log);
	log->pss = pss;
	log->start_ns = mono_ns();
	if (strcmp(path, "-") == 0) {
		log->fd = STDOUT_FILENO;
		log->path = xstrdup("<stdout>");
	} else {
		/* The log is written as the watch goes, so it cannot be written aside and
		 * renamed at the end: O_EXCL is what keeps an existing file safe. The
		 * rule of every output (util.h) decides: a device or FIFO is written as
		 * it is, a symbolic link leads to its file. */
		enum outpath_kind kind;
		char *real = NULL;
		int r = outpath_resolve(path, force, &kind, &real, cause);
		if (r < 0) {
			free(log);
			errno = r == -EEXIST ? EEXIST : EINVAL;
			return NULL;
		}
		if (kind == OUTPATH_NEW)
			log->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		else if (kind == OUTPATH_REGULAR)
			log->fd = open(real, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		else
			log->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		free(real);
		if (log->fd < 0) {
			int e = errno;
			if (e == EEXIST)
				*cause = xasprintf("'%s' exists (use --force to overwrite)", path);
			else
				*cause = xasprintf("cannot create '%s': %s", path, strerror(e));
			free(log);
			errno = e;
			return NULL;
		}
		log->regular = kind != OUTPATH_DIRECT;
		log->own_fd = true;
		log->path = xstrdup(path);
	}
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	head = xasprintf(RUNLOG_MAGIC "%d\n# command: %s\n# start: %s %llu.%03u\n"
			 "# interval_ms: %llu\n",
			 RUNLOG_VERSION, command ? command : "", stamp,
			 (unsigned long long)secs, (unsigned)(wall / 1000000u % 1000u),
			 (unsigned long long)interval_ms);
	put(log, head, strlen(head));
	free(head);
	if (log->err) {
		*cause = xasprintf("cannot write '%s': %s", path, strerror(log->err));
		if (log->own_fd)
			close(log->fd);
		free(log->path);
		free(log);
		return NULL;
	}
	return log;
}

/* One "# key: value" line; the value is kept on one line. */
void runlog_meta(struct runlog *log, const char *key, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n, m;

	n = snprintf(buf, sizeof buf, "# %s: ", key);
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	put_line(log, buf, (size_t)(n + m), sizeof buf);
}

/* Seconds with three decimals, in integers: printf's %f is the costliest part
 * of a sample line. Returns the length. */
static int put_time(char *buf, size_t size, double t)
{
	unsigned long long ms = t > 0 ? (unsigned long long)(t * 1000 + 0.5) : 0;
	return snprintf(buf, size, "%llu.%03u", ms / 1000, (unsigned)(ms % 1000));
}

/* Append " <v>" or " -" to buf at *n. */
static void put_kib(char *buf, size_t size, int *n, uint64_t v)
{
	if (v == RUNLOG_NONE)
		*n += snprintf(buf + *n, size - (size_t)*n, " -");
	else
		*n += snprintf(buf + *n, size - (size_t)*n, " %llu", (unsigned long long)v);
}

/* One sample line, formatted without floating point and written at once. */
void runlog_sample(struct runlog *log, double t, const struct mem_sample *s)
{
	char buf[256];
	int n;

	put_columns(log);
	n = put_time(buf, sizeof buf, t);
	if (s->pid > 0)
		n += snprintf(buf + n, sizeof buf - (size_t)n, " %d", s->pid);
	else
		n += snprintf(buf + n, sizeof buf - (size_t)n, " total");
	put_kib(buf, sizeof buf, &n, s->rss);
	put_kib(buf, sizeof buf, &n, s->anon);
	put_kib(buf, sizeof buf, &n, s->file);
	put_kib(buf, sizeof buf, &n, s->shmem);
	put_kib(buf, sizeof buf, &n, s->swap);
	put_kib(buf, sizeof buf, &n, s->vsz);
	put_kib(buf, sizeof buf, &n, s->pss);
	put_kib(buf, sizeof buf, &n, s->uss);
	put_kib(buf, sizeof buf, &n, s->hwm);
	put_kib(buf, sizeof buf, &n, s->cg_usage);
	put_kib(buf, sizeof buf, &n, s->cg_limit);
	buf[n++] = '\n';
	put(log, buf, (size_t)n);
}

/* One "# event" line, written at once. */
void runlog_event(struct runlog *log, double t, int pid, const char *kind,
		  const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;

	put_columns(log);
	n = snprintf(buf, sizeof buf, "# event ");
	n += put_time(buf + n, sizeof buf - (size_t)n, t);
	if (pid > 0)
		n += snprintf(buf + n, sizeof buf - (size_t)n, " %d %s", pid, kind);
	else
		n += snprintf(buf + n, sizeof buf - (size_t)n, " - %s", kind);
	if (fmt && *fmt) {
		int m;
		buf[n++] = ' ';
		va_start(ap, fmt);
		m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
		va_end(ap);
		if (m > 0)
			n += m;
	}
	put_line(log, buf, (size_t)n, sizeof buf);
}

const char *runlog_path(const struct runlog *log)
{
	return log->path;
}

double runlog_elapsed(const struct runlog *log)
{
	return (double)(mono_ns() - log->start_ns) / 1e9;
}

int runlog_error(const struct runlog *log)
{
	return log->err;
}

/* Close the log and report the first write that failed, if any. */
int runlog_close(struct runlog *log, char **cause)
{
	int err;

	if (!log)
		return 0;
	put_columns(log);
	err = log->err;
	if (log->own_fd) {
		/* data loss on close (NFS, a full disk found late) is a write error too */
		if (close(log->fd) != 0 && !err && errno != EINTR)
			err = errno;
	}
	if (err)
		*cause = xasprintf("cannot write '%s': %s", log->path, strerror(err));
	free(log->path);
	free(log);
	return err ? -1 : 0;
}

char *runlog_encode(const char *s)
{
	char *out = xmalloc(strlen(s) * 3 + 1), *p = out;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch <= ' ' || ch == '%' || ch == 0x7f)
			p += sprintf(p, "%%%02X", ch);
		else
			*p++ = (char)ch;
	}
	*p = '\0';
	return out;
}
