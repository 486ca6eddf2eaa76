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

#include "control.h"
#include "agent/protocol.h"
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

int control_connect(int pid, int timeout_ms, char **cause)
{
	struct sockaddr_un sa;
	struct timeval tv;
	socklen_t salen;
	int fd, n, err;

	if (kill(pid, 0) != 0 && errno == ESRCH) {
		*cause = xasprintf("pid %d: no such process", pid);
		return -ESRCH;
	}
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	n = snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "%s%d", MEMWATCH_SOCKET_PREFIX, pid);
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = errno;
		*cause = xasprintf("socket: %s", strerror(err));
		return -err;
	}
	if (timeout_ms <= 0)
		timeout_ms = 10000;
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&sa, salen) != 0) {
		err = errno;
		if (err == ECONNREFUSED || err == ENOENT)
			*cause = xasprintf("pid %d: no memwatch agent is listening", pid);
		else if (err == EAGAIN)
			*cause = xasprintf("pid %d: the memwatch agent is not accepting connections", pid);
		else
			*cause = xasprintf("pid %d: cannot connect to the memwatch agent: %s", pid,
					   strerror(err));
		close(fd);
		return -err;
	}
	return fd;
}

/* Read one reply line (without its '\n') into buf. Byte by byte: whatever
 * follows the line (snapshot bytes) must stay in the socket. */
static int read_line(int fd, char *buf, size_t size, char **cause)
{
	size_t n = 0;
	for (;;) {
		char c;
		ssize_t r = recv(fd, &c, 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				*cause = xasprintf("pid %d: the memwatch agent did not answer in time",
						   peer_pid_of(fd));
			else
				*cause = xasprintf("pid %d: reading from the memwatch agent: %s",
						   peer_pid_of(fd), strerror(errno));
			return -1;
		}
		if (r == 0) {
			*cause = xasprintf("pid %d: the memwatch agent closed the connection",
					   peer_pid_of(fd));
			return -1;
		}
		if (c == '\n')
			break;
		if (n + 1 >= size) {
			*cause = xasprintf("pid %d: the memwatch agent sent an overlong reply",
					   peer_pid_of(fd));
			return -1;
		}
		buf[n++] = c;
	}
	buf[n] = 0;
	return 0;
}

/* Send one request line and read the reply; "ok ..." leaves the text after
 * "ok" in buf, "err ..." becomes the cause. */
static int request(int fd, const char *line, char *buf, size_t size, char **cause)
{
	char *req = xasprintf("%s\n", line);
	size_t len = strlen(req), off = 0;
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
	if (read_line(fd, buf, size, cause) < 0)
		return -1;
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

int control_start(int fd, uint64_t rate, unsigned depth, uint64_t max_stacks, char **cause)
{
	char line[128], buf[REPLY_MAX];
	if (max_stacks)
		snprintf(line, sizeof line, "start rate=%llu depth=%u max-stacks=%llu",
			 (unsigned long long)rate, depth, (unsigned long long)max_stacks);
	else
		snprintf(line, sizeof line, "start rate=%llu depth=%u", (unsigned long long)rate, depth);
	return request(fd, line, buf, sizeof buf, cause);
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
	}
	return 0;
}

const char *control_python_note(const struct control_status *st, char *buf, size_t len)
{
	if (!strcmp(st->python, "unsupported"))
		snprintf(buf, len, "CPython %u.%u is not supported (3.11 is): captured native-only, "
			 "without its small objects and Python frames", st->python_major, st->python_minor);
	else if (!strcmp(st->python, "waiting"))
		snprintf(buf, len, "CPython: the GIL was not had yet: small objects are not sampled "
			 "until it is");
	else if (!strcmp(st->python, "finalized"))
		snprintf(buf, len, "CPython finalized: captured native-only");
	else
		return NULL;
	return buf;
}

int control_snapshot(int fd, unsigned char **out, size_t *len, char **cause)
{
	char buf[REPLY_MAX], *end;
	unsigned long long n;
	unsigned char *data;
	int r;

	if (request(fd, "snapshot", buf, sizeof buf, cause) < 0)
		return -1;
	errno = 0;
	n = strtoull(buf, &end, 10);
	if (errno || end == buf || *end || n == 0) {
		*cause = xasprintf("pid %d: the memwatch agent sent a malformed snapshot header: %s",
				   peer_pid_of(fd), buf);
		return -1;
	}
	if (n > SNAPSHOT_MAX_BYTES) {
		*cause = xasprintf("pid %d: the memwatch agent announced a snapshot of %llu bytes, "
				   "more than the %zu accepted", peer_pid_of(fd), n, SNAPSHOT_MAX_BYTES);
		return -1;
	}
	data = malloc((size_t)n);
	if (!data) {
		*cause = xasprintf("cannot allocate %llu bytes for the snapshot", n);
		return -1;
	}
	r = read_all(fd, data, (size_t)n);
	if (r < 0) {
		*cause = xasprintf("pid %d: receiving the snapshot: %s", peer_pid_of(fd),
				   r == -EPIPE ? "the agent closed the connection early" :
				   r == -EAGAIN ? "timed out" : strerror(-r));
		free(data);
		return -1;
	}
	*out = data;
	*len = (size_t)n;
	return 0;
}
