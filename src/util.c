/* util.c: helpers shared by every command: errors, parsing, atomic output files. */
#include "config.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fflush(stdout);
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void mw_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("memwatch: ", fmt, ap);
	va_end(ap);
}

void mw_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("memwatch: warning: ", fmt, ap);
	va_end(ap);
}

void mw_hint(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("  hint: ", fmt, ap);
	va_end(ap);
}

static void oom(void)
{
	fputs("memwatch: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		oom();
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *s;
	if (vasprintf(&s, fmt, ap) < 0)
		oom();
	return s;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

/* The last component of a path. */
const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Split "1.5MiB" into a finite non-negative number and its unit suffix. */
static int split_number(const char *s, double *v, const char **unit, char **cause,
			const char *what)
{
	char *end;
	if (!s || !*s || !(*s >= '0' && *s <= '9') ) {
		if (!(s && *s == '.' && s[1] >= '0' && s[1] <= '9')) {
			*cause = xasprintf("invalid %s '%s'", what, s ? s : "");
			return -1;
		}
	}
	errno = 0;
	*v = strtod(s, &end);
	if (errno || end == s || !isfinite(*v) || *v < 0) {
		*cause = xasprintf("invalid %s '%s'", what, s);
		return -1;
	}
	*unit = end;
	return 0;
}

#define DURATION_MAX_MS (36500.0 * 86400000.0)

int parse_duration_ms(const char *s, uint64_t *ms, char **cause)
{
	static const struct { const char *u; double ms; } units[] = {
		{ "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "sec", 1000 },
		{ "m", 60000 }, { "min", 60000 }, { "h", 3600000 }, { "d", 86400000 },
	};
	const char *unit;
	double v;
	size_t i;

	if (split_number(s, &v, &unit, cause, "duration") < 0)
		return -1;
	for (i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(unit, units[i].u) == 0) {
			double r = v * units[i].ms;
			/* 100 years: far beyond any watch, and its nanoseconds
			 * still fit in 64 bits when added to the clock */
			if (r < 1 || r > DURATION_MAX_MS) {
				*cause = xasprintf("duration '%s' out of range (1ms to 36500d)", s);
				return -1;
			}
			*ms = (uint64_t)(r + 0.5);
			return 0;
		}
	}
	*cause = xasprintf("invalid duration '%s' (use ms, s, m, h or d, e.g. 500ms, 1s, 2m)", s);
	return -1;
}

int parse_referrers_limit(const char *arg, uint64_t *ms, char **cause)
{
	uint64_t v;
	char *why = NULL;
	if (parse_duration_ms(arg, &v, &why) < 0) {
		*cause = xasprintf("--referrers-limit: %s", why);
		free(why);
		return -1;
	}
	if (v < 10 || v > 600000) {
		*cause = xasprintf("--referrers-limit '%s' out of range (10ms to 10m)", arg);
		return -1;
	}
	*ms = v;
	return 0;
}

int parse_referrers_objects(const char *arg, uint64_t *n, char **cause)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (!(arg[0] >= '0' && arg[0] <= '9') || *end || errno || v < 1000 || v > 1000000000000ull) {
		*cause = xasprintf("invalid --referrers-objects '%s' (a whole number from 1000 to 10^12)", arg);
		return -1;
	}
	*n = v;
	return 0;
}

int parse_size(const char *s, uint64_t *bytes, char **cause)
{
	static const struct { const char *u; double mul; } units[] = {
		{ "", 1 }, { "B", 1 },
		{ "K", 1024.0 }, { "KB", 1024.0 }, { "KiB", 1024.0 }, { "k", 1024.0 },
		{ "M", 1048576.0 }, { "MB", 1048576.0 }, { "MiB", 1048576.0 },
		{ "G", 1073741824.0 }, { "GB", 1073741824.0 }, { "GiB", 1073741824.0 },
		{ "T", 1099511627776.0 }, { "TB", 1099511627776.0 }, { "TiB", 1099511627776.0 },
	};
	const char *unit;
	double v;
	size_t i;

	if (split_number(s, &v, &unit, cause, "size") < 0)
		return -1;
	for (i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(unit, units[i].u) == 0) {
			double r = v * units[i].mul;
			if (r >= 18446744073709551615.0) {
				*cause = xasprintf("size '%s' out of range", s);
				return -1;
			}
			*bytes = (uint64_t)(r + 0.5);
			return 0;
		}
	}
	*cause = xasprintf("invalid size '%s' (use K, M, G or T, binary units, e.g. 64MiB)", s);
	return -1;
}

int parse_pid(const char *s, int *pid, char **cause)
{
	const char *p = s;
	char *end;
	long v;

	if (strncmp(p, "/proc/", 6) == 0)
		p += 6;
	if (!(*p >= '0' && *p <= '9')) {
		*cause = xasprintf("invalid pid '%s'", s);
		return -1;
	}
	errno = 0;
	v = strtol(p, &end, 10);
	if (*end == '/' && end[1] == '\0')
		end++;
	if (errno || *end || v <= 0 || v > INT_MAX) {
		*cause = xasprintf("invalid pid '%s'", s);
		return -1;
	}
	*pid = (int)v;
	return 0;
}

const char *fmt_bytes(char *buf, size_t n, double bytes)
{
	static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double a = fabs(bytes);
	int i = 0;
	while (a >= 1024 && i < 4) {
		a /= 1024;
		bytes /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, n, "%.0f %s", bytes, u[i]);
	else
		snprintf(buf, n, a >= 100 ? "%.0f %s" : a >= 10 ? "%.1f %s" : "%.2f %s", bytes, u[i]);
	return buf;
}

const char *fmt_seconds(char *buf, size_t n, double s)
{
	if (s < 1)
		snprintf(buf, n, "%.0f ms", s * 1000);
	else if (s < 60)
		snprintf(buf, n, "%.1f s", s);
	else if (s < 3600)
		snprintf(buf, n, "%d m %02d s", (int)s / 60, (int)s % 60);
	else
		snprintf(buf, n, "%d h %02d m", (int)s / 3600, (int)s % 3600 / 60);
	return buf;
}

uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The one decision about an output path, for every file memwatch writes (see
 * util.h): only a regular file is replaced, by a new file renamed over it; what
 * else the name leads to is written as it is, or refused. */
int outpath_resolve(const char *path, bool force, enum outpath_kind *kind, char **real,
		    char **cause)
{
	struct stat st;
	bool link = false;

	*real = NULL;
	if (lstat(path, &st) != 0) {
		if (errno == ENOENT) {
			*kind = OUTPATH_NEW;
			return 0;
		}
		*cause = xasprintf("cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode)) {
		link = true;
		if (stat(path, &st) != 0) {
			if (errno == ENOENT)
				*cause = xasprintf("cannot write '%s': it is a symbolic link to a file that does not exist",
						   path);
			else
				*cause = xasprintf("cannot write '%s': %s", path, strerror(errno));
			return -1;
		}
	}
	if (S_ISDIR(st.st_mode)) {
		*cause = xasprintf("cannot write '%s': it is a directory", path);
		return -1;
	}
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
		/* both hold data that writing destroys */
		if (!force) {
			*cause = xasprintf("'%s' exists (use --force to overwrite)", path);
			return -EEXIST;
		}
		if (S_ISBLK(st.st_mode)) {
			*kind = OUTPATH_DIRECT;
			return 0;
		}
		*kind = OUTPATH_REGULAR;
		if (link) {
			/* the link stays; the file it leads to is replaced */
			*real = realpath(path, NULL);
			if (!*real) {
				*cause = xasprintf("cannot write '%s': %s", path, strerror(errno));
				return -1;
			}
		} else {
			*real = xstrdup(path);
		}
		return 0;
	}
	/* a character device, a terminal, a FIFO, a socket: nothing to replace */
	*kind = OUTPATH_DIRECT;
	return 0;
}

int outfile_check(const char *path, bool force, char **cause)
{
	enum outpath_kind kind;
	char *real;

	if (strcmp(path, "-") == 0)
		return 0;
	if (outpath_resolve(path, force, &kind, &real, cause) < 0)
		return -1;
	free(real);
	return 0;
}

struct outfile {
	char *path;   /* the name given, or NULL for stdout */
	char *final;  /* the file renamed over (a symlink's target), NULL when direct */
	char *tmp;    /* temporary name beside final, NULL when direct */
	FILE *f;
};

static void outfile_free(struct outfile *o)
{
	free(o->path);
	free(o->final);
	free(o->tmp);
	free(o);
}

struct outfile *outfile_open(const char *path, bool force, char **cause)
{
	struct outfile *o = xcalloc(1, sizeof *o);
	enum outpath_kind kind;
	int fd;

	if (strcmp(path, "-") == 0) {
		o->f = stdout;
		return o;
	}
	if (outpath_resolve(path, force, &kind, &o->final, cause) < 0)
		goto fail;
	o->path = xstrdup(path);
	if (kind == OUTPATH_DIRECT) {
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (fd < 0) {
			*cause = xasprintf("cannot write '%s': %s", path, strerror(errno));
			goto fail;
		}
	} else {
		if (!o->final)
			o->final = xstrdup(path);
		o->tmp = xasprintf("%s.tmp.XXXXXX", o->final);
		fd = mkstemp(o->tmp);
		if (fd < 0) {
			*cause = xasprintf("cannot write '%s': %s", path, strerror(errno));
			goto fail;
		}
		mode_t um = umask(0);
		umask(um);
		fchmod(fd, 0666 & ~um);
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		*cause = xasprintf("cannot write '%s': %s", path, strerror(errno));
		close(fd);
		if (o->tmp)
			unlink(o->tmp);
		goto fail;
	}
	return o;
fail:
	outfile_free(o);
	return NULL;
}

FILE *outfile_stream(struct outfile *o)
{
	return o->f;
}

const char *outfile_path(const struct outfile *o)
{
	return o->path ? o->path : "<stdout>";
}

int outfile_commit(struct outfile *o, char **cause)
{
	int err = 0;

	if (!o->path) {
		if (fflush(stdout) != 0 || ferror(stdout))
			err = errno ? errno : EIO;
		outfile_free(o);
		if (err) {
			*cause = xasprintf("cannot write to standard output: %s", strerror(err));
			return -1;
		}
		return 0;
	}
	if (fflush(o->f) != 0 || ferror(o->f))
		err = errno ? errno : EIO;
	/* fsync is for the file that is renamed; a device or FIFO has nothing to sync */
	if (!err && o->tmp && fsync(fileno(o->f)) != 0)
		err = errno;
	if (fclose(o->f) != 0 && !err)
		err = errno ? errno : EIO;
	if (!err && o->tmp && rename(o->tmp, o->final) != 0)
		err = errno;
	if (err) {
		*cause = xasprintf("cannot write '%s': %s", o->path, strerror(err));
		if (o->tmp)
			unlink(o->tmp);
		outfile_free(o);
		return -1;
	}
	outfile_free(o);
	return 0;
}

void outfile_abort(struct outfile *o)
{
	if (!o)
		return;
	if (o->path) {
		fclose(o->f);
		if (o->tmp)
			unlink(o->tmp);
	}
	outfile_free(o);
}

int pid_stat_field(int pid, int field, unsigned long long *v)
{
	char path[64], buf[1024], *p, *end;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof buf - 1);
	i = errno;
	close(fd);
	if (n < 0)
		return -i;
	buf[n] = '\0';
	/* the name in parentheses may hold anything: field 3 starts after the last ')' */
	p = strrchr(buf, ')');
	if (field < 3 || !p)
		return -EINVAL;
	p++;
	for (i = 3; i < field; i++) {
		while (*p == ' ')
			p++;
		p += strcspn(p, " ");
	}
	errno = 0;
	*v = strtoull(p, &end, 10);
	if (errno || end == p)
		return -EINVAL;
	return 0;
}

bool pid_is_kernel_thread(int pid)
{
	unsigned long long flags;
	return pid_stat_field(pid, 9, &flags) == 0 && (flags & 0x00200000ull);   /* PF_KTHREAD */
}

/* Directory of the running executable, caller frees; NULL if unknown. */
static char *exe_dir(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	char *slash;
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	return xstrdup(buf);
}

static char *first_existing(const char *env, const char *const *rel, const char *installed,
			    const char *name)
{
	const char *e = getenv(env);
	char *dir, *p;
	size_t i;

	if (e && *e) {
		struct stat st;
		if (stat(e, &st) == 0 && S_ISDIR(st.st_mode))
			return xasprintf("%s/%s", e, name);
		return xstrdup(e);
	}
	dir = exe_dir();
	for (i = 0; dir && rel[i]; i++) {
		p = xasprintf("%s/%s%s", dir, rel[i], name);
		if (access(p, R_OK) == 0) {
			free(dir);
			return p;
		}
		free(p);
	}
	free(dir);
	return xasprintf("%s/%s", installed, name);
}

char *find_agent_library(void)
{
	static const char *const rel[] = { "", ".libs/", NULL };
	return first_existing("MEMWATCH_AGENT", rel, PKGLIBDIR, "libmemwatch-agent.so");
}

char *find_data_file(const char *name)
{
	static const char *const rel[] = { "plot/", NULL };
	return first_existing("MEMWATCH_DATADIR", rel, PKGDATADIR, name);
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The one record of the signals memwatch acts on (see util.h): the last
 * SIGINT or SIGTERM that asks to stop, a hang-up, the last of all and its
 * origin, how many came, and whether a child exited. */
static volatile sig_atomic_t sig_stop, sig_hup, sig_last, sig_code, sig_count, sig_forward,
	chld_seen;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == SIGCHLD) {
		chld_seen = 1;
		return;
	}
	if (!sig_forward) {
		if (sig == SIGHUP)
			sig_hup = 1;
		else
			sig_stop = sig;
	}
	sig_last = sig;
	sig_code = si ? si->si_code : 0;
	sig_count++;
}

/* Install on_signal for sig, saving the old action in saved when given. */
static void catch_signal(int sig, int flags, struct signals_saved *saved)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, saved ? &saved->old[saved->n] : NULL);
	if (saved)
		saved->sig[saved->n++] = sig;
}

void signals_install(unsigned flags, struct signals_saved *saved)
{
	struct sigaction old;

	if (saved)
		saved->n = 0;
	sig_forward = (flags & SIGS_FORWARD) != 0;
	/* SIGINT and SIGTERM of a stop regime are never given back: memwatch
	 * ends after it */
	catch_signal(SIGINT, 0, flags & SIGS_FORWARD ? saved : NULL);
	catch_signal(SIGTERM, 0, flags & SIGS_FORWARD ? saved : NULL);
	if (flags & SIGS_CHLD) {
		chld_seen = 0;
		catch_signal(SIGCHLD, SA_NOCLDSTOP, saved);
	}
	/* nohup's ignored SIGHUP stays ignored */
	if (flags & SIGS_HUP) {
		sigaction(SIGHUP, NULL, &old);
		if (old.sa_handler != SIG_IGN) {
			catch_signal(SIGHUP, 0, saved);
		} else if (saved) {
			saved->old[saved->n] = old;
			saved->sig[saved->n++] = SIGHUP;
		}
	}
	if (flags & SIGS_NOPIPE) {
		struct sigaction ign;
		memset(&ign, 0, sizeof ign);
		ign.sa_handler = SIG_IGN;
		sigemptyset(&ign.sa_mask);
		sigaction(SIGPIPE, &ign, saved ? &saved->old[saved->n] : NULL);
		if (saved)
			saved->sig[saved->n++] = SIGPIPE;
	}
}

void signals_restore(const struct signals_saved *saved)
{
	unsigned i;
	for (i = 0; i < saved->n; i++)
		sigaction(saved->sig[i], &saved->old[i], NULL);
}

void stop_signals_install(void)
{
	signals_install(0, NULL);
}

int stop_signal_pending(void)
{
	return sig_stop;
}

bool hangup_seen(void)
{
	return sig_hup != 0;
}

unsigned stop_signal_count(void)
{
	return (unsigned)sig_count;
}

int signal_last(bool *from_tty)
{
	if (from_tty)
		*from_tty = sig_code == SI_KERNEL;
	return sig_last;
}

bool child_exit_seen(void)
{
	return chld_seen != 0;
}

void child_exit_clear(void)
{
	chld_seen = 0;
}

/* The error for an option getopt_long refused (see util.h). */
int mw_option_error(const char *cmd, int c, char **argv, int optind_now, int optopt_now)
{
	const char *pre = cmd ? cmd : "", *sep = cmd ? ": " : "";
	const char *arg = argv[optind_now - 1];

	if (c == ':')
		mw_error("%s%soption '%s' needs an argument", pre, sep, arg);
	else if (optopt_now > 0 && optopt_now < 256)
		mw_error("%s%sunknown option '-%c'", pre, sep, optopt_now);
	else
		mw_error("%s%sunknown option '%s'", pre, sep, arg);
	mw_hint("memwatch %s%s--help", pre, cmd ? " " : "");
	return MW_EXIT_USAGE;
}

/* An option argument refused by its parser (see util.h). */
int mw_usage_error(const char *what, char *cause)
{
	if (what)
		mw_error("%s: %s", what, cause);
	else
		mw_error("%s", cause);
	free(cause);
	return MW_EXIT_USAGE;
}

/* A command's help (see util.h). */
int mw_usage_print(const char *usage)
{
	fputs("Usage:\n", stdout);
	fputs(usage, stdout);
	return MW_EXIT_OK;
}
