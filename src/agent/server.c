/* server.c: the agent's control thread: the abstract socket memwatch talks to
 * (protocol.h), the holds on the shared capture and their lifetime, and the
 * periodic look for modules loaded behind our back. The snapshots it sends
 * are built by collect.c. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "protocol.h"

#define MAX_CLIENTS 8
#define LINE_MAX_LEN 256
#define SEND_TIMEOUT_S 10

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

/* A descriptor of the agent's, with the identity of what it refers to.
 * The control thread has a descriptor table of its own (see own_table), so
 * the program neither sees nor touches its descriptors. Where the kernel
 * cannot give it one (before Linux 5.9) it shares the program's, and the
 * program may close descriptors it did not open (a daemon closing everything
 * at start, for one) and get the same numbers back for files of its own: the
 * agent then must neither read nor write nor close them. So every use is
 * preceded by a check that the number still names our object, and one that
 * does not is forgotten, never closed. The descriptors are also moved high,
 * out of the range programs usually hand out. */
struct owned {
	int fd;
	dev_t dev;
	ino_t ino;
};

struct client {
	struct owned o;
	bool holds;             /* this connection holds the capture (start or hold) */
	int peer_pid;           /* from SO_PEERCRED, to name it to other clients */
	size_t len;
	char buf[LINE_MAX_LEN];
};

static struct owned listener = { -1, 0, 0 };
static int server_pid_v;
/* The control thread's descriptors are in a table of its own. */
static bool private_fds;
/* The control thread's start, which the starting thread waits for: 1 when it
 * listens, -1 when it could not (boot_why names the call), -2 when the
 * starting thread gave up waiting (the thread then ends by itself). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int state;
	const char *why;
} boot = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL };
static struct client clients[MAX_CLIENTS];
/* A capture the agent started on its own (capture=now) is held by the agent
 * until a client takes it over with "hold": a client that joins it and leaves
 * must not end it. */
static bool self_hold;

int mw_server_pid(void)
{
	return server_pid_v;
}

/* Remember what fd is, having moved it above the numbers a program usually
 * uses when move is set. Moving grows the process's descriptor table, which in
 * a multithreaded process waits for the other threads (about 10 ms): it is
 * done on the control thread only, never on a thread borrowed by the injector.
 * Returns the descriptor to use (fd itself if it was not moved). */
static int adopt(int fd, struct owned *o, bool move)
{
	struct rlimit rl;
	struct stat st;
	long hi = 200;
	int nfd;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 400)
		hi = (long)rl.rlim_cur - 100 < 4000 ? (long)rl.rlim_cur - 100 : 4000;
	nfd = move ? fcntl(fd, F_DUPFD_CLOEXEC, (int)hi) : -1;
	if (nfd >= 0) {
		close(fd);
		fd = nfd;
	}
	o->fd = fd;
	if (fstat(fd, &st) == 0) {
		o->dev = st.st_dev;
		o->ino = st.st_ino;
	} else {
		o->dev = 0;
		o->ino = 0;
	}
	return fd;
}

/* Does o still name the object we opened? */
static bool ours(const struct owned *o)
{
	struct stat st;
	return o->fd >= 0 && fstat(o->fd, &st) == 0 && st.st_ino == o->ino && st.st_dev == o->dev;
}

/* Close o if it is still ours; forget it either way. */
static void release(struct owned *o)
{
	if (ours(o))
		close(o->fd);
	o->fd = -1;
}

/* The child of a fork has none of the parent's threads: forget the server and
 * close the descriptors it would otherwise keep open behind the parent's back
 * (a client seeing its owner connection stay open in a child, for one). */
void mw_server_atfork_child(void)
{
	int i;
	pthread_mutex_init(&boot.lock, NULL);
	pthread_cond_init(&boot.cond, NULL);
	if (!server_pid_v)
		return;
	/* Private descriptors were never in the table the child copied. */
	if (private_fds)
		listener.fd = -1;
	release(&listener);
	for (i = 0; i < MAX_CLIENTS; i++) {
		if (private_fds)
			clients[i].o.fd = -1;
		release(&clients[i].o);
		clients[i].holds = false;
	}
	private_fds = false;
	self_hold = false;
	server_pid_v = 0;
}

/* ------------------------------------------------------------------------- */
/* The protocol. */

/* Send all of buf; a client that stops reading is dropped after the send
 * timeout, and never raises SIGPIPE in the target. */
static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int reply(int fd, const char *fmt, ...)
{
	char line[1024];     /* the client reads up to 1024 (control.c's REPLY_MAX) */
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	return send_all(fd, line, (size_t)n);
}

/* Value of key=NUMBER in a request line; 0 when absent, -1 when malformed. */
static int request_num(const char *line, const char *key, uint64_t *v)
{
	size_t klen = strlen(key);
	const char *p = line;
	while ((p = strstr(p, key)) != NULL) {
		if ((p == line || p[-1] == ' ') && p[klen] == '=') {
			char *end;
			unsigned long long n;
			errno = 0;
			n = strtoull(p + klen + 1, &end, 10);
			if (errno || end == p + klen + 1 || (*end && *end != ' '))
				return -1;
			*v = n;
			return 1;
		}
		p += klen;
	}
	return 0;
}

static unsigned holders(void);

static int do_status(int fd)
{
	struct mw_heap_figures f;
	int on = __atomic_load_n(&mw_hot.capturing, __ATOMIC_ACQUIRE) != 0;
	char rt[768];
	mw_heap_figures(&f);
	/* the runtimes' fields, then their sentences, which close the line:
	 * python-why up to a tab, js-why to the end */
	mw_runtimes_status(rt, sizeof rt);
	return reply(fd, "ok capturing=%d rate=%llu samples=%llu stacks=%llu live=%llu pid=%d hooks=%u "
		     "holders=%u%s",
		     on, (unsigned long long)mw_rate, (unsigned long long)f.samples,
		     (unsigned long long)f.stacks, (unsigned long long)f.live_bytes, (int)getpid(),
		     mw_hooks_installed() ? mw_hooks_slots() : 0, holders(), rt);
}

/* The high-water mark, from counters read without a lock: cheap enough for
 * every sample of the watch. peak-ms is the last peak's age. */
static int do_peak(int fd)
{
	uint64_t count = __atomic_load_n(&mw_peak.count, __ATOMIC_ACQUIRE);
	uint64_t ns = __atomic_load_n(&mw_peak.ns, __ATOMIC_RELAXED), now = mw_now_ns();
	return reply(fd, "ok peaks=%llu peak=%llu live=%llu age-ms=%llu", (unsigned long long)count,
		     (unsigned long long)__atomic_load_n(&mw_peak.bytes, __ATOMIC_RELAXED),
		     (unsigned long long)__atomic_load_n(&mw_peak.live, __ATOMIC_RELAXED),
		     (unsigned long long)(count && now > ns ? (now - ns) / 1000000u : 0));
}

/* "snapshot" or "snapshot referrers=<ms> objects=<n>" */
static int do_snapshot(int fd, const char *args)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	unsigned long long ms = 0, objs = 0;
	int r, used = 0;

	if (*args) {
		if (sscanf(args, " referrers=%llu objects=%llu%n", &ms, &objs, &used) != 2 ||
		    args[used] || ms == 0 || ms > 600000 || objs == 0)
			return reply(fd, "err bad snapshot request '%.100s'", args);
	}
	if (mw_collect(&buf, &len, MW_RUNTIME_WAIT_NS, ms * 1000000ull, objs) < 0)
		return reply(fd, "err cannot build the snapshot: out of memory");
	r = reply(fd, "ok %zu", len);
	if (r == 0)
		r = send_all(fd, buf, len);
	free(buf);
	return r;
}

/* ------------------------------------------------------------------------- */
/* Holds. Several memwatch processes may use one agent at once (two watches, a
 * watch and a snap, memwatch run and a watch of its program). They share one
 * capture: it runs while anyone holds it, and a client that leaves drops only
 * its own hold. The rate is the first holder's: changing it under a running
 * capture would mix samples of two weights in one table and corrupt the other
 * clients' estimates, so a later client joins at the rate in force and is told
 * which (every snapshot records it too). */

/* How many hold the capture: clients, and the agent itself (self_hold). */
static unsigned holders(void)
{
	unsigned n = self_hold ? 1 : 0;
	int i;
	for (i = 0; i < MAX_CLIENTS; i++)
		n += clients[i].o.fd >= 0 && clients[i].holds;
	return n;
}

/* The pid of a client other than c that holds the capture, or 0 when none
 * does (the agent's own hold, or nobody). */
static int other_holder(const struct client *c)
{
	int i;
	for (i = 0; i < MAX_CLIENTS; i++)
		if (&clients[i] != c && clients[i].o.fd >= 0 && clients[i].holds)
			return clients[i].peer_pid;
	return 0;
}

/* c lets go of the capture; the last hold to go stops it and removes the
 * hooks, leaving the target as it was before memwatch came. */
static void drop_hold(struct client *c)
{
	if (!c->holds)
		return;
	c->holds = false;
	if (!holders())
		mw_capture_stop(true);
}

static int do_start(struct client *c, const char *line)
{
	uint64_t rate = MW_DEFAULT_RATE, depth = MW_DEFAULT_DEPTH, ms = 0;
	int fd = c->o.fd;

	if (request_num(line, "rate", &rate) < 0 || request_num(line, "depth", &depth) < 0 ||
	    request_num(line, "max-stacks", &ms) < 0 || rate == 0 || depth > MW_MAX_DEPTH)
		return reply(fd, "err bad start request '%.100s'", line);
	if (__atomic_load_n(&mw_hot.capturing, __ATOMIC_ACQUIRE)) {
		/* join the capture in force, at its settings */
		uint64_t now = mw_now_ns(), since = mw_capture_start_ns;
		c->holds = true;
		return reply(fd, "ok already capturing rate=%llu depth=%u holders=%u holder-pid=%d "
			     "age-ms=%llu", (unsigned long long)mw_rate, mw_depth, holders(),
			     other_holder(c), (unsigned long long)(since && now > since ?
								  (now - since) / 1000000u : 0));
	}
	if (mw_capture_start(rate, (unsigned)depth, ms) < 0)
		return reply(fd, "err capture is not safe in this process: it was forked "
			     "while the agent was unwinding");
	c->holds = true;
	return reply(fd, "ok capturing rate=%llu depth=%u slots=%u holders=%u",
		     (unsigned long long)mw_rate, mw_depth, mw_hooks_slots(), holders());
}

/* stop: a holder lets go (capture ends with the last hold). A client that
 * holds nothing may stop a capture nobody holds, never one another memwatch
 * holds. */
static int do_stop(struct client *c)
{
	int fd = c->o.fd, other;

	if (c->holds) {
		drop_hold(c);
		if (holders())
			return reply(fd, "ok released holders=%u", holders());
		return reply(fd, "ok stopped");
	}
	other = other_holder(c);
	if (other)
		return reply(fd, "err capture is held by memwatch pid %d: it goes on until "
			     "that one stops", other);
	self_hold = false;
	mw_capture_stop(true);
	return reply(fd, "ok stopped");
}

/* One request line. Returns -1 when the connection is to be dropped. */
static int handle_line(struct client *c, char *line)
{
	int fd = c->o.fd;

	if (strncmp(line, "start", 5) == 0 && (line[5] == 0 || line[5] == ' '))
		return do_start(c, line);
	if (strcmp(line, "stop") == 0)
		return do_stop(c);
	if (strcmp(line, "hold") == 0) {
		/* take over the agent's own hold, or add one */
		self_hold = false;
		c->holds = true;
		return reply(fd, "ok holding holders=%u", holders());
	}
	if (strcmp(line, "status") == 0)
		return do_status(fd);
	if (strncmp(line, "snapshot", 8) == 0 && (line[8] == 0 || line[8] == ' '))
		return do_snapshot(fd, line + 8);
	if (strcmp(line, "peak") == 0)
		return do_peak(fd);
	return reply(fd, "err unknown request '%.100s'", line);
}

/* Forget a connection (closing it if it is still ours). A holder that went
 * away without "stop" (killed, crashed) drops its hold. */
static void drop_client(struct client *c)
{
	drop_hold(c);
	release(&c->o);
	c->len = 0;
}

/* Read what a client sent and answer every complete line. */
static void serve_client(struct client *c)
{
	ssize_t n;
	size_t start = 0, i;

	if (!ours(&c->o)) {
		c->o.fd = -1;
		drop_client(c);
		return;
	}
	n = recv(c->o.fd, c->buf + c->len, sizeof c->buf - c->len, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		drop_client(c);
		return;
	}
	if (n < 0)
		return;
	c->len += (size_t)n;
	for (i = 0; i < c->len; i++) {
		if (c->buf[i] != '\n')
			continue;
		c->buf[i] = 0;
		if (i > start && c->buf[i - 1] == '\r')
			c->buf[i - 1] = 0;
		if (handle_line(c, c->buf + start) < 0) {
			drop_client(c);
			return;
		}
		start = i + 1;
	}
	memmove(c->buf, c->buf + start, c->len - start);
	c->len -= start;
	if (c->len == sizeof c->buf) {
		reply(c->o.fd, "err request too long");
		drop_client(c);
	}
}

/* Only the target's own user, or root, may drive its agent. *pid: the peer's. */
static bool peer_allowed(int fd, int *pid)
{
	struct ucred cr;
	socklen_t len = sizeof cr;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
		return false;
	*pid = cr.pid;
	return cr.uid == 0 || cr.uid == geteuid() || cr.uid == getuid();
}

static void accept_client(void)
{
	struct timeval tv = { SEND_TIMEOUT_S, 0 };
	int fd, i, pid = 0;

	if (!ours(&listener))
		return;
	fd = accept4(listener.fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (!peer_allowed(fd, &pid)) {
		reply(fd, "err permission denied: not the target's user");
		close(fd);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	for (i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].o.fd < 0) {
			adopt(fd, &clients[i].o, !private_fds);
			clients[i].len = 0;
			clients[i].holds = false;
			clients[i].peer_pid = pid;
			return;
		}
	reply(fd, "err too many connections");
	close(fd);
}

/* Bind and listen on this process's abstract name (moving the descriptor high
 * when move is set: see adopt). A descriptor, or -1 with *why naming the call
 * that failed. */
static int open_listener(const char **why, bool move)
{
	struct sockaddr_un sa;
	socklen_t salen;
	int fd, n;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	n = snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "%s%d", MEMWATCH_SOCKET_PREFIX,
		     (int)getpid());
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		*why = "socket";
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&sa, salen) != 0 || listen(fd, 8) != 0) {
		*why = "bind";
		close(fd);
		return -1;
	}
	return adopt(fd, &listener, move);
}

/* Check every descriptor before poll sees it: one the program closed (or
 * closed and reused) is forgotten; a lost listener is opened again. */
static void check_descriptors(void)
{
	const char *why;
	int i;
	if (listener.fd >= 0 && !ours(&listener))
		listener.fd = -1;
	if (listener.fd < 0)
		open_listener(&why, !private_fds);
	for (i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].o.fd >= 0 && !ours(&clients[i].o)) {
			clients[i].o.fd = -1;
			drop_client(&clients[i]);
		}
}

/* Give this thread a descriptor table of its own, empty (close_range with
 * CLOSE_RANGE_UNSHARE copies none of the program's descriptors, so none is
 * held open behind its back and none of its POSIX locks is touched): the
 * program's descriptors are then out of the agent's reach and the agent's out
 * of the program's, whatever either opens or closes. 0, 1 and 2 are taken by
 * /dev/null where there is one, so that no socket of ours has the number of a
 * standard stream. False where the kernel has no such call (before 5.9). */
static bool own_table(void)
{
	if (syscall(SYS_close_range, 0U, ~0U, CLOSE_RANGE_UNSHARE) != 0)
		return false;
	for (int i = 0; i < 3; i++)
		if (open("/dev/null", O_RDWR | O_CLOEXEC) < 0)
			break;
	return true;
}

/* Tell the starting thread how the start went. False if it gave up waiting. */
static bool boot_done(int state, const char *why)
{
	bool wanted;
	pthread_mutex_lock(&boot.lock);
	wanted = boot.state == 0;
	if (wanted) {
		boot.state = state;
		boot.why = why;
		pthread_cond_signal(&boot.cond);
	}
	pthread_mutex_unlock(&boot.lock);
	return wanted;
}

static void *server_main(void *arg)
{
	const char *why = NULL;
	(void)arg;
	/* Everything this thread allocates goes to the allocator unsampled. */
	mw_tls.guard = 1;
	private_fds = own_table();
	if (open_listener(&why, !private_fds) < 0) {
		boot_done(-1, why);
		return NULL;
	}
	if (!boot_done(1, NULL)) {
		release(&listener);
		return NULL;
	}
	for (;;) {
		struct pollfd pfd[MAX_CLIENTS + 1];
		int idx[MAX_CLIENTS];
		int n = 0, i, r;

		check_descriptors();
		if (listener.fd >= 0) {
			pfd[n].fd = listener.fd;
			pfd[n++].events = POLLIN;
		}
		for (i = 0; i < MAX_CLIENTS; i++)
			if (clients[i].o.fd >= 0) {
				idx[n] = i;
				pfd[n].fd = clients[i].o.fd;
				pfd[n++].events = POLLIN;
			}
		/* A short tick: modules loaded behind every hook's back (dlmopen,
		 * the C library's own loads) are found within a quarter second. */
		r = poll(pfd, (nfds_t)n, 250);
		if (mw_hooks_installed() && mw_modules_changed())
			mw_hooks_refresh(true);
		if (r <= 0)
			continue;
		for (i = 0; i < n; i++) {
			if (pfd[i].fd == listener.fd) {
				if (pfd[i].revents & POLLIN)
					accept_client();
				continue;
			}
			if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))
				serve_client(&clients[idx[i]]);
		}
	}
	return NULL;
}

int mw_server_start(char **why)
{
	const char *w = NULL;
	sigset_t all, old;
	pthread_attr_t attr;
	struct timespec until;
	pthread_t th;
	int i;

	for (i = 0; i < MAX_CLIENTS; i++) {
		clients[i].o.fd = -1;
		clients[i].holds = false;
	}
	boot.state = 0;
	server_pid_v = getpid();
	/* capture=now: the agent holds what it started until a client takes over.
	 * Set before the thread runs: a client may connect and take it over as
	 * soon as the thread listens. */
	self_hold = __atomic_load_n(&mw_hot.capturing, __ATOMIC_ACQUIRE) != 0;
	/* The thread blocks every signal: the target's handlers run on its own
	 * threads, as they did before the agent came. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	i = pthread_create(&th, &attr, server_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (i != 0) {
		*why = "pthread_create";
		self_hold = false;
		server_pid_v = 0;
		return -1;
	}
	/* Wait for it to listen (a few hundred microseconds), so that a name
	 * already taken is reported here; bounded, for a thread that never runs. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&boot.lock);
	while (boot.state == 0 && pthread_cond_timedwait(&boot.cond, &boot.lock, &until) == 0)
		;
	if (boot.state == 0)
		boot.state = -2;
	i = boot.state;
	w = boot.why;
	pthread_mutex_unlock(&boot.lock);
	if (i != 1) {
		*why = (char *)(i == -2 ? "the control thread did not start" : w);
		self_hold = false;
		server_pid_v = 0;
		return -1;
	}
#ifdef __GLIBC__
	pthread_setname_np(th, "memwatch-agent");
#endif
	return 0;
}
