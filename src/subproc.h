/* subproc.h: starting other programs (gnuplot, the command of memwatch run)
 * with one discipline: signals blocked across fork, memwatch's handlers reset
 * in the child before it unblocks them, a failed exec reported through a
 * close-on-exec pipe and the child _exits. */
#ifndef MEMWATCH_SUBPROC_H
#define MEMWATCH_SUBPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A program to start. */
struct subproc {
	char **argv;                  /* argv[0] is looked up in PATH; the child may
				       * change the array (before_exec) */
	int fd[3];                    /* the child's 0, 1, 2 (-1: as memwatch's) */
	/* signals set to their default in the child even where memwatch ignores
	 * them (0-terminated; NULL: none); caught ones are always reset, ignored
	 * ones (nohup) otherwise stay ignored */
	const int *default_signals;
	bool unblock_all;             /* the child starts with no signal blocked
				       * (else with memwatch's mask) */
	void (*before_exec)(void *arg); /* in the child, its descriptors in place;
					 * may be NULL */
	void *arg;
};

/* Start sp. Returns the pid; 0 when exec failed (*exec_errno set, *status
 * the child's wait status: it is reaped); -errno when it could not be set up. */
pid_t subproc_start(const struct subproc *sp, int *exec_errno, int *status);

/* A growing byte buffer for what a program writes (NUL-terminated). */
struct subproc_buf {
	char *p;                      /* caller frees */
	size_t len, cap;
};

/* How a subproc_run ended. */
struct subproc_run {
	int exec_errno;               /* exec failed with this errno (0: it ran) */
	int status;                   /* wait status */
	int stop_signal;              /* memwatch was asked to stop while it ran */
	struct subproc_buf out, err;
};

/* Run sp (its fd ignored) with input on its standard input; collect its
 * standard output and error, feeding and reading at once so that neither side
 * waits on a full pipe; SIGINT or SIGTERM (util.h's stop signals) end it.
 * 0, or -errno (set up). */
int subproc_run(struct subproc *sp, const char *input, size_t inlen, struct subproc_run *run);

#endif
