/* util.h: small helpers every memwatch command shares: errors, exit statuses,
 * parsing of sizes and durations, atomic output files, finding installed files. */
#ifndef MEMWATCH_UTIL_H
#define MEMWATCH_UTIL_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses, one per kind of failure; documented in memwatch(1) and --help. */
enum mw_exit {
	MW_EXIT_OK = 0,         /* done: duration elapsed, report printed, file written */
	MW_EXIT_FAILURE = 1,    /* run-time failure: I/O error, cannot write output */
	MW_EXIT_USAGE = 2,      /* bad command line: unknown option, bad interval or size */
	MW_EXIT_BADFILE = 3,    /* an input file is not what it should be: snapshot, run.log */
	MW_EXIT_NOPROC = 4,     /* no such process, it cannot be read (another user), a kernel thread */
	MW_EXIT_ATTACH = 5,     /* the agent could not be loaded or reached: ptrace refused, no safe point */
	MW_EXIT_EXTERNAL = 6,   /* an external program is missing or failed (gnuplot) */
	MW_EXIT_GONE = 7,       /* every watched process exited during the watch */
	MW_EXIT_SIGNAL = 128,   /* + signal number: ended by SIGINT (130) or SIGTERM (143) */
};

/* Print "memwatch: <message>" on stderr. */
void mw_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "memwatch: warning: <message>" on stderr. */
void mw_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print a hint line (the fix) under an error: "  hint: ...". */
void mw_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The one usage error (and the hint "memwatch [CMD] --help") for an option
 * getopt_long refused, called with what it returned (c: ':' a missing
 * argument, with the option string starting with ':'; else an unknown
 * option) and its optind and optopt. cmd: the command's name ("snap") put in
 * front of the message, NULL for memwatch [watch] and run. Errors are
 * "memwatch: CMD: ..." for the commands named by a word, "memwatch: ..." for
 * the watch. Returns MW_EXIT_USAGE. */
int mw_option_error(const char *cmd, int c, char **argv, int optind_now, int optopt_now);
/* The one usage error for an option argument a parser refused: "memwatch:
 * WHAT: CAUSE" ("memwatch: CAUSE" when what is NULL), where what is the
 * command ("snap") or the option ("--interval"). Frees cause. Returns
 * MW_EXIT_USAGE. */
int mw_usage_error(const char *what, char *cause);
/* A command's --help: "Usage:" and usage on standard output. Returns
 * MW_EXIT_OK. */
int mw_usage_print(const char *usage);

/* Allocation that cannot fail: aborts with a message when memory is exhausted. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Formatted string, caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);

/* Parse a duration ("500ms", "1s", "2m", "1h", "1.5s"; a bare number is seconds)
 * into *ms, from 1ms to 36500d. Returns 0, or -1 with *cause set (caller frees). */
int parse_duration_ms(const char *s, uint64_t *ms, char **cause);
/* Parse a size ("512", "64K", "64KiB", "1.5MiB", "2G"; binary units) into bytes. */
int parse_size(const char *s, uint64_t *bytes, char **cause);
/* Parse a PID argument: "123" or "/proc/123". Returns the pid or -1 with *cause. */
int parse_pid(const char *s, int *pid, char **cause);

/* The last component of a path (after its last '/'; "" stays ""). */
const char *base_name(const char *path);
/* Format bytes for people: "812 B", "12.3 KiB", "1.50 GiB". buf holds >= 32. */
const char *fmt_bytes(char *buf, size_t n, double bytes);
/* Format a duration in seconds for people: "950 ms", "12.5 s", "3 m 20 s". */
const char *fmt_seconds(char *buf, size_t n, double seconds);
/* --referrers-limit and --referrers-objects (snap, watch, run): their
 * defaults, and their parsing (0 or -1 with *cause). */
#define MW_REFERRERS_LIMIT_MS 1000
#define MW_REFERRERS_OBJECTS 50000000ull
int parse_referrers_limit(const char *arg, uint64_t *ms, char **cause);
int parse_referrers_objects(const char *arg, uint64_t *n, char **cause);

/* Monotonic and wall clock, nanoseconds. */
uint64_t mono_ns(void);
uint64_t wall_ns(void);

/* How an output path is written. Only a regular file is ever replaced: by a
 * temporary file beside it, renamed over it, so that a reader never sees it
 * half written. A symbolic link is followed (the link stays, the file it leads
 * to is replaced); a character device, terminal, FIFO or socket is opened and
 * written as it is (nothing is replaced, so no --force is needed); a block
 * device is written as it is with force only; a directory and a link to
 * nothing are refused. */
enum outpath_kind {
	OUTPATH_NEW,      /* nothing there: created (a temporary file renamed) */
	OUTPATH_REGULAR,  /* an existing regular file (force): *real is replaced */
	OUTPATH_DIRECT,   /* a device, FIFO, socket: opened for writing as it is */
};
/* Decide for path; without force an existing regular file or block device is
 * refused (-EEXIST). *real (caller frees) is the regular file to replace,
 * symbolic links resolved, else NULL. 0, or -EEXIST or -1 with *cause (caller
 * frees). */
int outpath_resolve(const char *path, bool force, enum outpath_kind *kind, char **real,
		    char **cause);
/* The same decision made early, before work whose result would have nowhere to
 * go ("-" is always fine). 0, or -1 with *cause (caller frees). */
int outfile_check(const char *path, bool force, char **cause);

/* Output written by the rule above. */
struct outfile;
/* Open "path" for writing. Returns NULL with *cause set. "-" means stdout. */
struct outfile *outfile_open(const char *path, bool force, char **cause);
FILE *outfile_stream(struct outfile *o);
const char *outfile_path(const struct outfile *o);
/* Flush (fsync and rename a regular file into place) and free. Returns 0, or
 * -1 with *cause set (the temporary file is removed then). */
int outfile_commit(struct outfile *o, char **cause);
/* Remove the temporary file and free. */
void outfile_abort(struct outfile *o);

/* Where memwatch's own files are: the agent library and the plot scripts.
 * Looked up in the environment (MEMWATCH_AGENT, MEMWATCH_DATADIR), then beside
 * the executable (an uninstalled build tree), then in the installed location.
 * Caller frees. */
char *find_agent_library(void);
char *find_data_file(const char *name);

/* Field number "field" (from 1, as proc(5) counts; 3 or more) of /proc/PID/stat
 * into *v. 0 or -errno. */
int pid_stat_field(int pid, int field, unsigned long long *v);
/* True when pid is a kernel thread (PF_KTHREAD in /proc/PID/stat): it has no
 * user memory to watch, snapshot or load an agent into. */
bool pid_is_kernel_thread(int pid);

/* Write all of buf to fd, retrying on EINTR and short writes. 0 or -errno. */
int write_all(int fd, const void *buf, size_t len);
/* Read exactly len bytes. 0, -errno, or -EPIPE on early end of file. */
int read_all(int fd, void *buf, size_t len);

/* The signals memwatch acts on. One handler records them all (the last one,
 * its origin, a count) without SA_RESTART, so that sleeps wake; nothing else
 * is done in the handler. */
enum signals_flags {
	SIGS_HUP = 1 << 0,      /* SIGHUP too, unless it is ignored (nohup) */
	SIGS_FORWARD = 1 << 1,  /* memwatch run: SIGINT, SIGTERM (and SIGHUP) are
				 * for the child, not a request to stop:
				 * stop_signal_pending() stays 0 */
	SIGS_CHLD = 1 << 2,     /* a child's exit is recorded (child_exit_seen) */
	SIGS_NOPIPE = 1 << 3,   /* SIGPIPE ignored: a closed pipe is a write error */
};
/* The actions signals_install replaced, for signals_restore. */
struct signals_saved {
	unsigned n;
	int sig[5];
	struct sigaction old[5];
};
/* Install the handler for SIGINT and SIGTERM and, by flags, the others. The
 * actions replaced go into *saved (may be NULL), except SIGINT's and SIGTERM's
 * outside SIGS_FORWARD: a watch, snap or plot told to stop ends. */
void signals_install(unsigned flags, struct signals_saved *saved);
/* Give back the actions signals_install replaced. */
void signals_restore(const struct signals_saved *saved);
/* signals_install(0, NULL): SIGINT and SIGTERM end the command. */
void stop_signals_install(void);
/* The SIGINT or SIGTERM that asked us to stop, or 0 (always 0 under
 * SIGS_FORWARD). */
int stop_signal_pending(void);
/* Whether a SIGHUP came (SIGS_HUP, not SIGS_FORWARD): it ends a watch, but
 * does not cut short what stop_signal_pending() does (an injection, a
 * gnuplot run). */
bool hangup_seen(void);
/* How many signals came: a second Ctrl-C is told from the first. */
unsigned stop_signal_count(void);
/* The last signal that came (0: none); *from_tty (may be NULL): the kernel
 * sent it, i.e. a key typed at the terminal, which the terminal's whole
 * foreground process group got too. */
int signal_last(bool *from_tty);
/* Whether a child exited since child_exit_clear (SIGS_CHLD). */
bool child_exit_seen(void);
void child_exit_clear(void);

#endif
