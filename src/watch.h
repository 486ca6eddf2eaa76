/* watch.h: the watch of one or more processes: its options, shared by
 * `memwatch [watch]` and `memwatch run`, and the sampling loop. */
#ifndef MEMWATCH_WATCH_H
#define MEMWATCH_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"

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
