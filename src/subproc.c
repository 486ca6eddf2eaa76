/* subproc.c: starting other programs with signals blocked across fork, and
 * running one as a filter (input in, output and errors collected). */
#include "config.h"
#include "subproc.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Move fd to a number of at least 3, so that dup2 onto 0..2 cannot clobber it. */
static int fd_above_stdio(int fd)
{
	return fd < 0 || fd > 2 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

/* In the child: memwatch's handlers must not run here between unblocking and
 * exec; dispositions that are ignored (nohup) stay as they are, but for the
 * ones sp names. */
static void child_signals(const struct subproc *sp, const sigset_t *old)
{
	struct sigaction dfl;
	sigset_t none;

	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction cur;
		if (sigaction(sig, NULL, &cur) == 0 && cur.sa_handler != SIG_DFL &&
		    cur.sa_handler != SIG_IGN)
			sigaction(sig, &dfl, NULL);
	}
	for (const int *s = sp->default_signals; s && *s; s++)
		sigaction(*s, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, sp->unblock_all ? &none : old, NULL);
}

/* In the child: descriptors in place, then exec; never returns. */
static void child(const struct subproc *sp, const sigset_t *old, int ex)
{
	int fd[3], e;

	child_signals(sp, old);
	for (int i = 0; i < 3; i++)
		fd[i] = fd_above_stdio(sp->fd[i]);
	for (int i = 0; i < 3; i++) {
		if (sp->fd[i] >= 0 && (fd[i] < 0 || dup2(fd[i], i) < 0)) {
			e = errno;
			(void)!write(ex, &e, sizeof e);
			_exit(127);
		}
	}
	if (sp->before_exec)
		sp->before_exec(sp->arg);
	execvp(sp->argv[0], sp->argv);
	e = errno;
	(void)!write(ex, &e, sizeof e);
	_exit(127);
}

pid_t subproc_start(const struct subproc *sp, int *exec_errno, int *status)
{
	int ex[2], e;
	sigset_t all, old;
	pid_t pid;
	ssize_t n;

	*exec_errno = 0;
	if (pipe2(ex, O_CLOEXEC) < 0)
		return -errno;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0)
		child(sp, &old, ex[1]);
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(ex[1]);
	if (pid < 0) {
		close(ex[0]);
		return -e;
	}
	/* did the exec work? the pipe closes on exec, or brings the errno */
	do
		n = read(ex[0], &e, sizeof e);
	while (n < 0 && errno == EINTR);
	close(ex[0]);
	if (n == (ssize_t)sizeof e) {
		*exec_errno = e;
		while (waitpid(pid, status, 0) < 0 && errno == EINTR)
			;
		return 0;
	}
	return pid;
}

/* Read what is there on fd into b; 0 at end of file, 1 for more, -errno. */
static int buf_read(struct subproc_buf *b, int fd)
{
	ssize_t n;

	if (b->cap - b->len < 65536) {
		b->cap = b->cap ? b->cap * 2 : 131072;
		b->p = xrealloc(b->p, b->cap + 1);
	}
	n = read(fd, b->p + b->len, b->cap - b->len);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -errno;
	if (n == 0)
		return 0;
	b->len += (size_t)n;
	b->p[b->len] = '\0';
	return 1;
}

/* Read from *fd into b while there is more; at its end (or an error) close it. */
static void drain(struct subproc_buf *b, int *fd)
{
	if (buf_read(b, *fd) <= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* Feed input to pid on in, and collect out and err, until both end or a stop
 * signal comes. 0, or -errno. */
static int pump(pid_t pid, int *in, int *out, int *err, const char *input, size_t inlen,
		struct subproc_run *run)
{
	size_t off = 0;
	ssize_t n;

	fcntl(*in, F_SETFL, O_NONBLOCK);
	if (inlen == 0) {
		close(*in);
		*in = -1;
	}
	while (*out >= 0 || *err >= 0) {
		struct pollfd pf[3];
		int np = 0, iw = -1, io = -1, ie = -1;

		if (stop_signal_pending()) {
			run->stop_signal = stop_signal_pending();
			kill(pid, SIGTERM);
			return 0;
		}
		if (*in >= 0) {
			iw = np;
			pf[np++] = (struct pollfd){ .fd = *in, .events = POLLOUT };
		}
		if (*out >= 0) {
			io = np;
			pf[np++] = (struct pollfd){ .fd = *out, .events = POLLIN };
		}
		if (*err >= 0) {
			ie = np;
			pf[np++] = (struct pollfd){ .fd = *err, .events = POLLIN };
		}
		if (poll(pf, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			kill(pid, SIGTERM);
			return (int)n;
		}
		if (iw >= 0 && pf[iw].revents) {
			n = write(*in, input + off, inlen - off < 65536 ? inlen - off : 65536);
			if (n > 0)
				off += (size_t)n;
			/* a program that stopped reading (it failed) ends the feed */
			if ((n < 0 && errno != EINTR && errno != EAGAIN) || off == inlen ||
			    (pf[iw].revents & (POLLERR | POLLHUP))) {
				close(*in);
				*in = -1;
			}
		}
		if (io >= 0 && pf[io].revents)
			drain(&run->out, out);
		if (ie >= 0 && pf[ie].revents)
			drain(&run->err, err);
	}
	return 0;
}

int subproc_run(struct subproc *sp, const char *input, size_t inlen, struct subproc_run *run)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	struct sigaction ign, oldpipe;
	pid_t pid;
	int rc = 0;

	memset(run, 0, sizeof *run);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out;
	}
	sp->fd[0] = in[0];
	sp->fd[1] = out[1];
	sp->fd[2] = err[1];
	pid = subproc_start(sp, &run->exec_errno, &run->status);
	if (pid <= 0) {
		rc = pid;
		goto out;
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	in[0] = out[1] = err[1] = -1;

	/* a program that dies early must give EPIPE, not kill memwatch with
	 * SIGPIPE */
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &oldpipe);
	rc = pump(pid, &in[1], &out[0], &err[0], input, inlen, run);
	while (waitpid(pid, &run->status, 0) < 0) {
		if (errno != EINTR)
			break;
	}
	/* a Ctrl-C reaches the program too: its end is then ours, not its failure */
	if (stop_signal_pending())
		run->stop_signal = stop_signal_pending();
	sigaction(SIGPIPE, &oldpipe, NULL);
out:
	for (int *fd = (int[]){ in[0], in[1], out[0], out[1], err[0], err[1] }, *end = fd + 6;
	     fd < end; fd++)
		if (*fd >= 0)
			close(*fd);
	return rc;
}
