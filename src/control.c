/* control.c: the CLI side of the agent control protocol (agent/protocol.h):
 * connecting to a target's agent, requests and their replies, snapshot bytes. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "container.h"
#include "control.h"
#include "proc.h"
#include "agent/protocol.h"
#define MW_PYVERSIONS_TABLE 1
#include "agent/pyversions.h"
#include "util.h"

/* Largest snapshot accepted from an agent: far above any real one, low enough
 * that a confused peer cannot make us allocate without bound. */
#define SNAPSHOT_MAX_BYTES ((size_t)1 << 30)
#define REPLY_MAX 1024

/* The pid a connection talks to, for messages; set by control_connect. */
static int peer_pid_of(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof cr;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
		return 0;
	return cr.pid;
}

/* Reply lines still owed on a connection: a request whose reply was not read
 * (a stop signal ended the wait, or the agent was slow) leaves that line to
 * come. It is read and dropped before the next request on the connection, so
 * that a reply is never taken for the next request's (a final snapshot once
 * read a status line as its header). */
#define OWED_MAX 32
static struct {
	int fd;
	unsigned lines;
} owed[OWED_MAX];

/* The count of fd (a free entry taken when add), or NULL. */
static unsigned *owed_of(int fd, bool add)
{
	int i, free_i = -1;
	for (i = 0; i < OWED_MAX; i++) {
		if (owed[i].lines && owed[i].fd == fd)
			return &owed[i].lines;
		if (!owed[i].lines && free_i < 0)
			free_i = i;
	}
	if (!add || free_i < 0)
		return NULL;
	owed[free_i].fd = fd;
	return &owed[free_i].lines;
}

static void owed_forget(int fd)
{
	unsigned *o = owed_of(fd, false);
	if (o)
		*o = 0;
}

int control_connect(int pid, int timeout_ms, char **cause)
{
	struct sockaddr_un sa;
	socklen_t salen;
	char *why = NULL;
	int fd, n, err;

	if (kill(pid, 0) != 0 && errno == ESRCH) {
		*cause = xasprintf("pid %d: no such process", pid);
		return -ESRCH;
	}
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	/* The agent names its socket with its getpid(), the pid of its own PID
	 * namespace, and the abstract name lives in its network namespace. */
	n = snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "%s%d", MEMWATCH_SOCKET_PREFIX,
		     proc_inner_pid(pid));
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	if (timeout_ms <= 0)
		timeout_ms = 10000;
	fd = container_connect(pid, (struct sockaddr *)&sa, salen, timeout_ms, &why);
	if (fd < 0 && why) {
		*cause = why;
		return fd;
	}
	if (fd < 0) {
		err = -fd;
		if (err == ECONNREFUSED || err == ENOENT)
			*cause = xasprintf("pid %d: no memwatch agent is listening", pid);
		else if (err == EAGAIN)
			*cause = xasprintf("pid %d: the memwatch agent is not accepting connections", pid);
		else
			*cause = xasprintf("pid %d: cannot connect to the memwatch agent: %s", pid,
					   strerror(err));
		return -err;
	}
	owed_forget(fd);   /* a new connection owes nothing, whatever its number had */
	return fd;
}

/* A wait for the agent ends early when this says so: by default when SIGINT
 * or SIGTERM came (stop_signals_install); see control_set_interrupt. */
static bool default_interrupted(void)
{
	return stop_signal_pending() != 0;
}

static bool (*interrupted)(void) = default_interrupted;

void control_set_interrupt(bool (*fn)(void))
{
	interrupted = fn ? fn : default_interrupted;
}

bool control_interrupted(void)
{
	return interrupted();
}

/* A signal is looked at this often while the agent is waited for. */
#define WAIT_SLICE_MS 100

/* The bound of a request on this connection, as control_connect set it. */
static int conn_timeout_ms(int fd)
{
	struct timeval tv;
	socklen_t len = sizeof tv;
	if (getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) != 0 ||
	    (tv.tv_sec == 0 && tv.tv_usec == 0))
		return 10000;
	return (int)(tv.tv_sec * 1000 + tv.tv_usec / 1000);
}

/* Wait until fd has something to read (or is closed) or the monotonic deadline
 * passes, in slices, so that a signal is seen at once: a stopped target never
 * answers, and nothing may hold Ctrl-C off. 1 readable, 0 deadline passed,
 * -EINTR interrupted, or -errno. */
static int wait_readable(int fd, uint64_t deadline_ns)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now;
		int ms, r;

		if (interrupted())
			return -EINTR;
		now = mono_ns();
		if (now >= deadline_ns)
			return 0;
		ms = (int)((deadline_ns - now + 999999) / 1000000);
		r = poll(&p, 1, ms < WAIT_SLICE_MS ? ms : WAIT_SLICE_MS);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* Read up to len bytes that have come, without blocking: >0, 0 none yet,
 * -EPIPE closed, or -errno. */
static ssize_t recv_some(int fd, void *buf, size_t len)
{
	ssize_t r;
	do
		r = recv(fd, buf, len, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r > 0)
		return r;
	if (r == 0)
		return -EPIPE;
	return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
}

/* Add what has come of one reply line to line[*n]; 1 when it is whole
 * (NUL-terminated, without its '\n'), 0 when more is to come, -1 with *cause.
 * Byte by byte: whatever follows the line (snapshot bytes) must stay in the
 * socket. */
static int line_some(int fd, char *line, size_t size, size_t *n, char **cause)
{
	for (;;) {
		char c;
		ssize_t r = recv_some(fd, &c, 1);
		if (r == 0)
			return 0;
		if (r == -EPIPE) {
			*cause = xasprintf("pid %d: the memwatch agent closed the connection",
					   peer_pid_of(fd));
			return -1;
		}
		if (r < 0) {
			*cause = xasprintf("pid %d: reading from the memwatch agent: %s",
					   peer_pid_of(fd), strerror((int)-r));
			return -1;
		}
		if (c == '\n') {
			line[*n] = 0;
			return 1;
		}
		if (*n + 1 >= size) {
			*cause = xasprintf("pid %d: the memwatch agent sent an overlong reply",
					   peer_pid_of(fd));
			return -1;
		}
		line[(*n)++] = c;
	}
}

/* Read one reply line (without its '\n') into buf, waiting no longer than the
 * connection's timeout, and no longer at all once a stop signal came. 0, -1
 * with *cause, or -2 with *cause when the line may still come (interrupted,
 * or not in time). */
static int read_line(int fd, char *buf, size_t size, char **cause)
{
	uint64_t deadline = mono_ns() + (uint64_t)conn_timeout_ms(fd) * 1000000u;
	size_t n = 0;
	for (;;) {
		int r = line_some(fd, buf, size, &n, cause);
		if (r != 0)
			return r > 0 ? 0 : -1;
		r = wait_readable(fd, deadline);
		if (r == 0) {
			*cause = xasprintf("pid %d: the memwatch agent did not answer in time",
					   peer_pid_of(fd));
			return -2;   /* the line, or its rest, is owed */
		}
		if (r == -EINTR) {
			*cause = xasprintf("pid %d: interrupted while waiting for the memwatch agent",
					   peer_pid_of(fd));
			return -2;   /* the line, or its rest, is owed */
		}
		if (r < 0) {
			*cause = xasprintf("pid %d: waiting for the memwatch agent: %s",
					   peer_pid_of(fd), strerror(-r));
			return -1;
		}
	}
}

/* Read and drop the reply lines fd owes. 0, or -1 with *cause. */
static int drain_owed(int fd, char **cause)
{
	unsigned *o = owed_of(fd, false);
	char buf[REPLY_MAX];

	while (o && *o) {
		if (read_line(fd, buf, sizeof buf, cause) < 0)
			return -1;
		(*o)--;
	}
	return 0;
}

/* Send one request line and read the reply; "ok ..." leaves the text after
 * "ok" in buf, "err ..." becomes the cause. */
static int request(int fd, const char *line, char *buf, size_t size, char **cause)
{
	char *req;
	size_t len, off = 0;
	int r;

	if (drain_owed(fd, cause) < 0)
		return -1;
	req = xasprintf("%s\n", line);
	len = strlen(req);
	while (off < len) {
		ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int err = errno;
			char *ignored = NULL;
			free(req);
			/* An agent that refuses a peer says why and hangs up at once: its
			 * reason may be waiting while our request could not be sent. */
			if ((err == EPIPE || err == ECONNRESET) &&
			    read_line(fd, buf, size, &ignored) == 0 && strncmp(buf, "err ", 4) == 0) {
				*cause = xasprintf("pid %d: the memwatch agent refused '%s': %s",
						   peer_pid_of(fd), line, buf + 4);
				return -1;
			}
			free(ignored);
			*cause = xasprintf("pid %d: writing to the memwatch agent: %s", peer_pid_of(fd),
					   err == EAGAIN ? "timed out" : strerror(err));
			return -1;
		}
		off += (size_t)w;
	}
	free(req);
	if ((r = read_line(fd, buf, size, cause)) < 0) {
		unsigned *o;
		if (r == -2 && (o = owed_of(fd, true)))
			(*o)++;
		return -1;
	}
	if (strncmp(buf, "ok", 2) == 0 && (buf[2] == 0 || buf[2] == ' ')) {
		memmove(buf, buf + (buf[2] ? 3 : 2), strlen(buf + (buf[2] ? 3 : 2)) + 1);
		return 0;
	}
	if (strncmp(buf, "err ", 4) == 0)
		*cause = xasprintf("pid %d: the memwatch agent refused '%s': %s", peer_pid_of(fd), line,
				   buf + 4);
	else
		*cause = xasprintf("pid %d: the memwatch agent sent a malformed reply", peer_pid_of(fd));
	return -1;
}

static bool status_field(const char *s, const char *key, uint64_t *v);

int control_start(int fd, uint64_t rate, unsigned depth, uint64_t max_stacks,
		  struct control_started *got, char **cause)
{
	char line[128], buf[REPLY_MAX];
	struct control_started g = { .rate = rate, .depth = depth };
	uint64_t v;

	if (max_stacks)
		snprintf(line, sizeof line, "start rate=%llu depth=%u max-stacks=%llu",
			 (unsigned long long)rate, depth, (unsigned long long)max_stacks);
	else
		snprintf(line, sizeof line, "start rate=%llu depth=%u", (unsigned long long)rate, depth);
	if (request(fd, line, buf, sizeof buf, cause) < 0)
		return -1;
	/* the agent says the settings in force, which a joined capture keeps */
	g.joined = strncmp(buf, "already", 7) == 0;
	if (status_field(buf, "rate", &v) && v)
		g.rate = v;
	if (status_field(buf, "depth", &v))
		g.depth = (unsigned)v;
	if (status_field(buf, "holder-pid", &v))
		g.holder_pid = (int)v;
	if (status_field(buf, "age-ms", &v))
		g.age_ms = v;
	if (got)
		*got = g;
	return 0;
}

void control_warn_rate(int pid, const struct control_started *got, uint64_t asked)
{
	/* no other memwatch holds it: the agent runs it on its own, as it was
	 * preloaded to (memwatch run, MEMWATCH_AGENT_OPTIONS capture=now) */
	char in_force[32], want[32], who[48] = "the preloaded agent";

	if (got->holder_pid > 0)
		snprintf(who, sizeof who, "memwatch pid %d", got->holder_pid);
	mw_warn("pid %d: sharing the capture of %s at its sample rate %s, not %s", pid, who,
		fmt_bytes(in_force, sizeof in_force, (double)got->rate),
		fmt_bytes(want, sizeof want, (double)asked));
}

int control_hold(int fd, char **cause)
{
	char buf[REPLY_MAX];
	return request(fd, "hold", buf, sizeof buf, cause);
}

int control_stop(int fd, char **cause)
{
	char buf[REPLY_MAX];
	return request(fd, "stop", buf, sizeof buf, cause);
}

/* Value of key=NUMBER in a status reply. */
static bool status_field(const char *s, const char *key, uint64_t *v)
{
	size_t klen = strlen(key);
	const char *p = s;
	while ((p = strstr(p, key)) != NULL) {
		if ((p == s || p[-1] == ' ') && p[klen] == '=') {
			char *end;
			errno = 0;
			*v = strtoull(p + klen + 1, &end, 10);
			return errno == 0 && end != p + klen + 1;
		}
		p += klen;
	}
	return false;
}

int control_status(int fd, struct control_status *st, char **cause)
{
	char buf[REPLY_MAX];
	uint64_t capturing;
	if (request(fd, "status", buf, sizeof buf, cause) < 0)
		return -1;
	memset(st, 0, sizeof *st);
	if (!status_field(buf, "capturing", &capturing) || !status_field(buf, "rate", &st->rate) ||
	    !status_field(buf, "samples", &st->samples) || !status_field(buf, "stacks", &st->stacks) ||
	    !status_field(buf, "live", &st->live_bytes)) {
		*cause = xasprintf("pid %d: the memwatch agent sent a malformed status: %s",
				   peer_pid_of(fd), buf);
		return -1;
	}
	st->capturing = capturing != 0;
	if (!status_field(buf, "hooks", &st->hooks))
		st->hooks = 0;
	{
		const char *p = strstr(buf, " python=");
		if (p)
			sscanf(p, " python=%15[a-z]", st->python);
		p = strstr(buf, " python-version=");
		if (p)
			sscanf(p, " python-version=%u.%u", &st->python_major, &st->python_minor);
		p = strstr(buf, " js=");
		if (p)
			sscanf(p, " js=%15[a-z]", st->js);
		p = strstr(buf, " js-workers=");
		if (p)
			sscanf(p, " js-workers=%u", &st->js_workers);
		p = strstr(buf, " js-version=");
		if (p)
			sscanf(p, " js-version=%47s", st->js_version);
		/* the two sentences: python-why ends at a tab, js-why at the line's end */
		p = strstr(buf, " python-why=");
		if (p)
			snprintf(st->python_why, sizeof st->python_why, "%.*s",
				 (int)strcspn(p + 12, "\t\n"), p + 12);
		p = strstr(buf, "\tjs-why=");
		if (p)
			snprintf(st->js_why, sizeof st->js_why, "%.*s", (int)strcspn(p + 8, "\n"), p + 8);
	}
	return 0;
}

int control_peak(int fd, struct control_peak *pk, char **cause)
{
	char buf[REPLY_MAX];
	if (request(fd, "peak", buf, sizeof buf, cause) < 0)
		return -1;
	memset(pk, 0, sizeof *pk);
	if (!status_field(buf, "peaks", &pk->count) || !status_field(buf, "peak", &pk->bytes) ||
	    !status_field(buf, "live", &pk->live) || !status_field(buf, "age-ms", &pk->age_ms)) {
		*cause = xasprintf("pid %d: the memwatch agent sent a malformed peak: %s",
				   peer_pid_of(fd), buf);
		return -1;
	}
	return 0;
}

const char *control_js_note(const struct control_status *st, char *buf, size_t len)
{
	if (!strcmp(st->js, "unsupported"))
		snprintf(buf, len, "node: %s: captured native-only, without its JavaScript objects",
			 st->js_why[0] ? st->js_why : "its V8 is not one memwatch reads");
	else if (!strcmp(st->js, "waiting") || !strcmp(st->js, "off") || !strcmp(st->js, "gone") ||
		 (!strcmp(st->js, "on") && st->js_why[0]))
		snprintf(buf, len, "node: JavaScript objects not sampled: %s",
			 st->js_why[0] ? st->js_why : "V8's profiler is not running");
	else
		return NULL;
	return buf;
}

const char *control_python_note(const struct control_status *st, char *buf, size_t len)
{
	if (!strcmp(st->python, "unsupported") && st->python_major && st->python_why[0])
		snprintf(buf, len, "CPython %u.%u cannot be read (%s; 3.8 to 3.%u can, with the GIL): "
			 "captured native-only, without its small objects and Python frames",
			 st->python_major, st->python_minor, st->python_why,
			 mw_pyvers[sizeof mw_pyvers / sizeof mw_pyvers[0] - 1].minor);
	else if (!strcmp(st->python, "unsupported") && st->python_major)
		snprintf(buf, len, "CPython %u.%u cannot be read (3.8 to 3.%u can): captured native-only, "
			 "without its small objects and Python frames", st->python_major, st->python_minor,
			 mw_pyvers[sizeof mw_pyvers / sizeof mw_pyvers[0] - 1].minor);
	else if (!strcmp(st->python, "unsupported"))
		snprintf(buf, len, "CPython of a version memwatch cannot tell: captured native-only, "
			 "without its small objects and Python frames");
	else if (!strcmp(st->python, "unreadable"))
		snprintf(buf, len, "CPython %u.%u is not laid out as memwatch reads it (%s): captured "
			 "native-only, without its small objects and Python frames", st->python_major,
			 st->python_minor, st->python_why[0] ? st->python_why : "the check failed");
	else if (!strcmp(st->python, "waiting"))
		snprintf(buf, len, "CPython: the GIL was not had yet: small objects are not sampled "
			 "until it is");
	else if (!strcmp(st->python, "finalized"))
		snprintf(buf, len, "CPython finalized: captured native-only");
	else
		return NULL;
	return buf;
}

void control_snap_rx_release(struct control_snap_rx *rx)
{
	free(rx->data);
	memset(rx, 0, sizeof *rx);
}

int control_snapshot_send(int fd, struct control_snap_rx *rx, char **cause)
{
	return control_snapshot_send_refs(fd, rx, 0, 0, cause);
}

int control_snapshot_send_refs(int fd, struct control_snap_rx *rx, uint64_t refs_ms,
			       uint64_t refs_objects, char **cause)
{
	char req[96];
	size_t off = 0;

	if (refs_ms)
		snprintf(req, sizeof req, "snapshot referrers=%llu objects=%llu\n",
			 (unsigned long long)refs_ms, (unsigned long long)refs_objects);
	else
		snprintf(req, sizeof req, "snapshot\n");
	control_snap_rx_release(rx);
	if (drain_owed(fd, cause) < 0)
		return -1;
	while (off < strlen(req)) {
		ssize_t w = send(fd, req + off, strlen(req) - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			*cause = xasprintf("pid %d: writing to the memwatch agent: %s", peer_pid_of(fd),
					   errno == EAGAIN ? "timed out" : strerror(errno));
			return -1;
		}
		off += (size_t)w;
	}
	rx->active = true;
	return 0;
}

/* The reply line of a snapshot request: "ok <nbytes>" makes room for them. */
static int snap_header(int fd, struct control_snap_rx *rx, char **cause)
{
	unsigned long long n;
	char *end;

	if (strncmp(rx->line, "err ", 4) == 0) {
		*cause = xasprintf("pid %d: the memwatch agent refused 'snapshot': %s",
				   peer_pid_of(fd), rx->line + 4);
		return -1;
	}
	if (strncmp(rx->line, "ok ", 3) != 0) {
		*cause = xasprintf("pid %d: the memwatch agent sent a malformed reply", peer_pid_of(fd));
		return -1;
	}
	errno = 0;
	n = strtoull(rx->line + 3, &end, 10);
	if (errno || end == rx->line + 3 || *end || n == 0) {
		*cause = xasprintf("pid %d: the memwatch agent sent a malformed snapshot header: %s",
				   peer_pid_of(fd), rx->line + 3);
		return -1;
	}
	if (n > SNAPSHOT_MAX_BYTES) {
		*cause = xasprintf("pid %d: the memwatch agent announced a snapshot of %llu bytes, "
				   "more than the %zu accepted", peer_pid_of(fd), n, SNAPSHOT_MAX_BYTES);
		return -1;
	}
	rx->data = malloc((size_t)n);
	if (!rx->data) {
		*cause = xasprintf("cannot allocate %llu bytes for the snapshot", n);
		return -1;
	}
	rx->len = (size_t)n;
	rx->got = 0;
	rx->have_line = true;
	return 0;
}

int control_snapshot_recv(int fd, struct control_snap_rx *rx, int timeout_ms,
			  unsigned char **out, size_t *len, char **cause)
{
	uint64_t deadline = mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000u;

	for (;;) {
		int w;
		if (!rx->have_line) {
			int r = line_some(fd, rx->line, sizeof rx->line, &rx->linelen, cause);
			if (r < 0 || (r > 0 && snap_header(fd, rx, cause) < 0))
				goto failed;
		}
		while (rx->have_line && rx->got < rx->len) {
			ssize_t r = recv_some(fd, rx->data + rx->got, rx->len - rx->got);
			if (r == 0)
				break;
			if (r < 0) {
				*cause = xasprintf("pid %d: receiving the snapshot: %s", peer_pid_of(fd),
						   r == -EPIPE ? "the agent closed the connection early" :
						   strerror((int)-r));
				goto failed;
			}
			rx->got += (size_t)r;
		}
		if (rx->have_line && rx->got == rx->len) {
			*out = rx->data;
			*len = rx->len;
			rx->data = NULL;
			control_snap_rx_release(rx);
			return CONTROL_RX_DONE;
		}
		w = wait_readable(fd, deadline);
		if (w == 0)
			return CONTROL_RX_PENDING;
		if (w == -EINTR)
			return CONTROL_RX_INTERRUPTED;
		if (w < 0) {
			*cause = xasprintf("pid %d: waiting for the memwatch agent: %s", peer_pid_of(fd),
					   strerror(-w));
			goto failed;
		}
	}
failed:
	control_snap_rx_release(rx);
	return CONTROL_RX_FAILED;
}

int control_snapshot(int fd, unsigned char **out, size_t *len, char **cause)
{
	struct control_snap_rx rx = { 0 };
	int r;

	if (control_snapshot_send(fd, &rx, cause) < 0)
		return -1;
	r = control_snapshot_recv(fd, &rx, conn_timeout_ms(fd), out, len, cause);
	if (r == CONTROL_RX_PENDING || r == CONTROL_RX_INTERRUPTED)
		*cause = xasprintf(r == CONTROL_RX_PENDING ?
				   "pid %d: the memwatch agent did not answer in time" :
				   "pid %d: interrupted while waiting for the memwatch agent",
				   peer_pid_of(fd));
	control_snap_rx_release(&rx);
	return r == CONTROL_RX_DONE ? 0 : -1;
}
