/* watch.h: the watch of one or more processes: its options, shared by
 * `memwatch [watch]` and `memwatch run`, and the sampling loop. */
#ifndef MEMWATCH_WATCH_H
#define MEMWATCH_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"

struct watch_face;

struct watch_opts {
	int *pids;                   /* -p, in order given; xrealloc'd, see watch_opts_release */
	size_t npids;
	bool children;               /* -c: each pid's whole process tree */
	uint64_t interval_ms;        /* -i (default 1000) */
	uint64_t duration_ms;        /* -d (0: until the processes exit or a signal) */
	const char *output;          /* -o (NULL: the default name, see watch_loop) */
	bool force;                  /* -f: overwrite the log and snapshots */
	bool pss;                    /* --pss: PSS and USS too */
	bool quiet;                  /* -q: no status line */
	const char *metrics;         /* --metrics FILE: Prometheus text after every sample */
	struct capture_opts capture; /* --capture, --trigger, --snap-every, ... */
	int run_child;               /* >0: memwatch run's child, watched and reaped here */
	const struct watch_face *face; /* memwatch top: the view instead of the status line */
};

/* One watched process, as a face sees it after a sample. */
struct watch_member {
	int pid;
	const char *cmd;
	const struct mem_sample *s;  /* this sample's figures */
	struct capture *cap;         /* its capture (capture_peek, capture_state_name) */
};

/* What waits between samples and shows them instead of the status line
 * (memwatch top). The watch calls sampled after every sample, wait until the
 * next is due, and end before the captures end (their last snapshots and
 * report go to the terminal the face gives back). */
enum { FACE_DUE, FACE_QUIT, FACE_SIGNAL };
struct watch_face {
	void *arg;
	void (*sampled)(void *arg, double t, const struct watch_member *m, size_t n);
	/* Until the monotonic deadline: FACE_DUE then, FACE_QUIT when the user
	 * quits, FACE_SIGNAL as soon as stop() is true (a signal came). */
	int (*wait)(void *arg, uint64_t deadline_ns, bool (*stop)(void));
	void (*end)(void *arg);
};

/* Defaults for every field (capture_opts_init for the capture part). */
void watch_opts_init(struct watch_opts *o);
/* Free what watch_parse allocated (the pid list). */
void watch_opts_release(struct watch_opts *o);

/* Parse options. run_mode (memwatch run): stop at the first non-option or "--"
 * and leave *argi at the command; -p is then not accepted. Otherwise every
 * argument is an option and -p is required (*argi is argc). argv[0] is the
 * command's name. Returns 0, or an mw_exit status after printing the error, or
 * WATCH_PARSE_HELP for -h/--help (nothing printed: the caller prints its usage
 * and exits 0). */
#define WATCH_PARSE_HELP (-1)
int watch_parse(int argc, char **argv, struct watch_opts *o, bool run_mode, int *argi);

/* The same with more options of the caller's (memwatch top): their short
 * letters in more_short (getopt syntax), their long forms in more (ending in
 * a zero entry; long-only ones numbered from WATCH_OPT_MORE); each one found
 * is given to more_fn, which returns 0 or an mw_exit status after printing
 * the error. */
#define WATCH_OPT_MORE 512
struct option;
int watch_parse_more(int argc, char **argv, struct watch_opts *o, int *argi,
		     const char *more_short, const struct option *more,
		     int (*more_fn)(int c, const char *arg, void *ctx), void *ctx);

/* Watch until the duration elapses, a signal, or every process gone (in run
 * mode: until the child exits). Writes the run log (o->output, or by default
 * memwatch-PID.log, memwatch-PID1-PID2.log, memwatch-run-PID.log in run mode;
 * never overwriting unless o->force). command_line goes into the log's
 * metadata. Returns the exit status: 0 duration elapsed, 7 every process exited,
 * 128+N signal N (SIGINT, SIGTERM, SIGHUP), 4 no such process or a zombie, 1
 * cannot write the log; in run mode the
 * child's own status (128+N when killed by signal N). When it fails before the
 * watch starts in run mode, the child is left running and unreaped. The child's
 * command line is read from /proc at the start: exec it before calling this. */
int watch_loop(struct watch_opts *o, const char *command_line);

/* name ("memwatch run") and argv[1..argc) joined by spaces, arguments with
 * spaces quoted, for watch_loop's command_line. Caller frees. */
char *watch_command_line(const char *name, int argc, char **argv);

#endif
