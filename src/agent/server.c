/* server.c: the agent's control thread: the abstract socket memwatch talks to
 * (protocol.h), the holds on the shared capture and their lifetime, the
 * periodic look for modules loaded behind our back, and the building of
 * snapshots. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
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
#include "snapshot.h"

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
/* Snapshots. */

struct modlist {
	struct snap_module *m;
	size_t n, cap;
	const char *exe;
	bool failed;
};

/* The GNU build-id of a loaded object, from its PT_NOTE segments. */
static void read_build_id(const struct dl_phdr_info *info, struct snap_module *m)
{
	int i;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *p, *end;
		size_t align;
		if (ph->p_type != PT_NOTE)
			continue;
		align = ph->p_align == 8 ? 8 : 4;
		p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const unsigned char *name = p + sizeof *nh;
			const unsigned char *desc = name + ((nh->n_namesz + align - 1) & ~(align - 1));
			const unsigned char *next = desc + ((nh->n_descsz + align - 1) & ~(align - 1));
			if (next > end || next <= p)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= sizeof m->build_id) {
				memcpy(m->build_id, desc, nh->n_descsz);
				m->build_id_len = nh->n_descsz;
				return;
			}
			p = next;
		}
	}
}

/* dl_iterate_phdr callback: one snap_module per loaded object. */
static int modules_cb(struct dl_phdr_info *info, size_t sz, void *data)
{
	struct modlist *l = data;
	struct snap_module *m;
	uint64_t lo = UINT64_MAX, hi = 0;
	int i;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	(void)sz;

	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		struct snap_module *n = realloc(l->m, ncap * sizeof *n);
		if (!n) {
			l->failed = true;
			return 1;
		}
		l->m = n;
		l->cap = ncap;
	}
	m = &l->m[l->n];
	memset(m, 0, sizeof *m);
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (hi == 0)
		return 0;
	/* The main program is "" to the loader: name it by /proc/self/exe. */
	if (!name[0] && l->n == 0 && l->exe)
		name = l->exe;
	m->path = strdup(name);
	if (!m->path) {
		l->failed = true;
		return 1;
	}
	m->bias = info->dlpi_addr;
	m->lo = lo;
	m->hi = hi;
	read_build_id(info, m);
	l->n++;
	return 0;
}

static int module_cmp(const void *a, const void *b)
{
	const struct snap_module *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The module holding a return address (looked up as addr - 1: a call that is
 * the last instruction of a segment returns just past it). */
static uint32_t find_module(const struct snap_module *m, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	uint64_t a = addr ? addr - 1 : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (a < m[mid].lo)
			hi = mid;
		else if (a >= m[mid].hi)
			lo = mid + 1;
		else
			return (uint32_t)mid;
	}
	return SNAP_NO_MODULE;
}

static char *read_link_self(void)
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return strdup("");
	buf[n] = 0;
	return strdup(buf);
}

/* The command line with its arguments joined by spaces. */
static char *read_cmdline(void)
{
	char buf[4096];
	ssize_t n, i;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return strdup("");
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return strdup("");
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (i = 0; i < n; i++)
		if (buf[i] == 0)
			buf[i] = ' ';
	buf[n] = 0;
	return strdup(buf);
}

static uint64_t read_rss(void)
{
	char buf[128];
	unsigned long long size, rss;
	ssize_t n;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu", &size, &rss) != 2)
		return 0;
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* glibc's figures, unless another allocator serves malloc (its arenas would
 * then be someone else's, nearly empty). */
static void read_mallinfo(struct snap_mallinfo *mi)
{
	Dl_info info;
	struct mallinfo2 m;
	memset(mi, 0, sizeof *mi);
	if (!dladdr((void *)mw_orig.malloc, &info) || !info.dli_fname ||
	    !strstr(info.dli_fname, "libc.so"))
		return;
	m = mallinfo2();
	mi->present = true;
	mi->arena = m.arena;
	mi->mmapped = m.hblkhd;
	mi->in_use = m.uordblks + m.hblkhd;
	mi->free_bytes = m.fordblks;
	mi->releasable = m.keepcost;
}

/* Build and encode a snapshot of this process. 0, or -1 (out of memory). */
static int build_snapshot(unsigned char **buf, size_t *len)
{
	struct snapshot *s = calloc(1, sizeof *s);
	struct modlist ml = { 0 };
	struct mw_stack_copy *st = NULL;
	struct mw_heap_figures fig;
	size_t nst = 0, i, k;
	bool locked = false;
	int r = -1;

	if (!s)
		return -1;
	s->version = SNAPSHOT_VERSION;
	s->pid = getpid();
	s->exe = read_link_self();
	s->cmdline = read_cmdline();
	s->time_ns = mw_now_ns();
	if (!s->exe || !s->cmdline)
		goto out;
	ml.exe = s->exe;
	mw_loader_enter();
	dl_iterate_phdr(modules_cb, &ml);
	mw_loader_leave();
	s->modules = ml.m;
	s->nmodules = ml.n;
	if (ml.failed)
		goto out;
	qsort(s->modules, s->nmodules, sizeof *s->modules, module_cmp);
	s->rss_bytes = read_rss();
	mw_loader_enter();
	read_mallinfo(&s->mallinfo);
	mw_loader_leave();
	mw_snapshot_begin();
	locked = true;
	if (mw_heap_copy_stacks(&st, &nst, &fig) < 0)
		goto out;
	s->capture_start_ns = __atomic_load_n(&mw_hot.capturing, __ATOMIC_ACQUIRE) ? mw_capture_start_ns : 0;
	s->sample_rate = mw_rate;
	s->max_depth = mw_depth;
	s->dropped_stacks = fig.dropped_stacks;
	s->dropped_bytes = fig.dropped_bytes;
	if (nst) {
		s->stacks = calloc(nst, sizeof *s->stacks);
		if (!s->stacks)
			goto out;
	}
	for (i = 0; i < nst; i++) {
		struct snap_stack *d = &s->stacks[s->nstacks];
		d->flags = st[i].flags;
		d->live_bytes = st[i].live_bytes;
		d->live_blocks = st[i].live_blocks;
		d->live_samples = st[i].live_samples;
		d->alloc_bytes = st[i].alloc_bytes;
		d->alloc_blocks = st[i].alloc_blocks;
		d->frames = calloc(st[i].nframes ? st[i].nframes : 1, sizeof *d->frames);
		if (!d->frames)
			goto out;
		d->nframes = st[i].nframes;
		s->nstacks++;
		for (k = 0; k < st[i].nframes; k++) {
			uint64_t a = st[i].frames[k];
			uint32_t mi = find_module(s->modules, s->nmodules, a);
			d->frames[k].module = mi;
			d->frames[k].offset = mi == SNAP_NO_MODULE ? a : a - s->modules[mi].bias;
		}
	}
	mw_snapshot_end();
	locked = false;
	if (mw_python_snapshot(s) < 0)
		goto out;
	r = snapshot_encode(s, buf, len);
out:
	if (locked)
		mw_snapshot_end();
	free(st);
	snapshot_free(s);
	return r;
}

int mw_server_write_snapshot(int fd)
{
	unsigned char *buf = NULL;
	size_t len = 0, off = 0;
	int r = -1;

	if (build_snapshot(&buf, &len) < 0)
		return -1;
	if (ftruncate(fd, 0) == 0) {
		while (off < len) {
			ssize_t n = pwrite(fd, buf + off, len - off, (off_t)off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			off += (size_t)n;
		}
		r = off == len ? 0 : -1;
	}
	free(buf);
	return r;
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
	char line[512];
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
	unsigned long pyv;
	int py = mw_python_state(&pyv);
	mw_heap_figures(&f);
	return reply(fd, "ok capturing=%d rate=%llu samples=%llu stacks=%llu live=%llu pid=%d hooks=%u "
		     "holders=%u python=%s python-version=%lu.%lu",
		     on, (unsigned long long)mw_rate, (unsigned long long)f.samples,
		     (unsigned long long)f.stacks, (unsigned long long)f.live_bytes, (int)getpid(),
		     mw_hooks_installed() ? mw_hooks_slots() : 0, holders(), mw_python_state_name(py),
		     (pyv >> 24) & 0xff, (pyv >> 16) & 0xff);
}

static int do_snapshot(int fd)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	int r;
	if (build_snapshot(&buf, &len) < 0)
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
	if (strcmp(line, "snapshot") == 0)
		return do_snapshot(fd);
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
