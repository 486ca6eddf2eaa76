/* agent.c: the agent's entry points: the constructor (memwatch run preloads the
 * library), memwatch_agent_start (called by the injector, or by the constructor),
 * its option string, what happens at fork, and the snapshot at exit. The top of
 * the agent: it uses every other file (see agent.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "protocol.h"

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static bool inited;
static bool children_mode;

/* Parse an unsigned number with an optional binary unit (K, M, G, with or
 * without "iB"/"B"). */
static int parse_num(const char *s, size_t len, uint64_t *v)
{
	uint64_t n = 0, mul = 1;
	size_t i = 0;
	if (!len)
		return -1;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		if (n > UINT64_MAX / 10)
			return -1;
		n = n * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0)
		return -1;
	if (i < len) {
		switch (s[i]) {
		case 'k': case 'K': mul = 1024; break;
		case 'm': case 'M': mul = 1024 * 1024; break;
		case 'g': case 'G': mul = 1024 * 1024 * 1024; break;
		case 'b': case 'B': mul = 1; break;
		default: return -1;
		}
		i++;
		if (i < len && s[i] == 'i')
			i++;
		if (i < len && (s[i] == 'B' || s[i] == 'b'))
			i++;
		if (i != len)
			return -1;
	}
	if (mul > 1 && n > UINT64_MAX / mul)
		return -1;
	*v = n * mul;
	return 0;
}

static bool key_is(const char *k, size_t klen, const char *name)
{
	return strlen(name) == klen && memcmp(k, name, klen) == 0;
}

/* Parse "capture=now|idle,rate=N,depth=N,max-stacks=N,unwind-threads=N,
 * children=0|1,pid=N". depth=0 and max-stacks=0 mean the defaults. Unknown keys are ignored (a newer
 * memwatch may pass more); bad values are refused. pid is read by the
 * constructor only. */
int mw_parse_options(const char *s, struct mw_options *o)
{
	o->capture_now = false;
	o->rate = MW_DEFAULT_RATE;
	o->depth = MW_DEFAULT_DEPTH;
	o->max_stacks = MW_DEFAULT_MAX_STACKS;
	o->unwind_threads = MW_DEFAULT_UNWIND_THREADS;
	o->children = false;
	o->pid = 0;
	o->exit_fd = -1;
	o->exit_ino = 0;
	o->exit_pid = 0;
	while (s && *s) {
		const char *end = strchr(s, ','), *eq;
		size_t len = end ? (size_t)(end - s) : strlen(s), klen, vlen;
		const char *v;
		uint64_t n;
		eq = memchr(s, '=', len);
		if (!eq) {
			if (len)
				return -1;
			s = end ? end + 1 : s + len;
			continue;
		}
		klen = (size_t)(eq - s);
		v = eq + 1;
		vlen = len - klen - 1;
		if (key_is(s, klen, "capture")) {
			if (vlen == 3 && memcmp(v, "now", 3) == 0)
				o->capture_now = true;
			else if (vlen == 4 && memcmp(v, "idle", 4) == 0)
				o->capture_now = false;
			else
				return -1;
		} else if (key_is(s, klen, "rate")) {
			if (parse_num(v, vlen, &n) < 0 || n == 0)
				return -1;
			o->rate = n;
		} else if (key_is(s, klen, "depth")) {
			if (parse_num(v, vlen, &n) < 0 || n > MW_MAX_DEPTH)
				return -1;
			o->depth = n ? (unsigned)n : MW_DEFAULT_DEPTH;
		} else if (key_is(s, klen, "max-stacks")) {
			if (parse_num(v, vlen, &n) < 0)
				return -1;
			o->max_stacks = n ? n : MW_DEFAULT_MAX_STACKS;
		} else if (key_is(s, klen, "unwind-threads")) {
			if (parse_num(v, vlen, &n) < 0 || n > 1000000)
				return -1;
			o->unwind_threads = (unsigned)n;
		} else if (key_is(s, klen, "children")) {
			if (parse_num(v, vlen, &n) < 0 || n > 1)
				return -1;
			o->children = n == 1;
		} else if (key_is(s, klen, "pid")) {
			if (parse_num(v, vlen, &n) < 0 || n > INT32_MAX)
				return -1;
			o->pid = (int)n;
		} else if (key_is(s, klen, "exitfd")) {
			if (parse_num(v, vlen, &n) < 0 || n > INT32_MAX)
				return -1;
			o->exit_fd = (int)n;
		} else if (key_is(s, klen, "exitino")) {
			if (parse_num(v, vlen, &n) < 0)
				return -1;
			o->exit_ino = n;
		} else if (key_is(s, klen, "exitpid")) {
			if (parse_num(v, vlen, &n) < 0 || n > INT32_MAX)
				return -1;
			o->exit_pid = (int)n;
		}
		s = end ? end + 1 : s + len;
	}
	return 0;
}

/* fork. The prepare handler takes the heap lock so that the child cannot inherit
 * it half-held (the capture and patch locks are not taken: their holder may be
 * waiting for the loader lock, which a fork from a constructor holds; the child
 * just gets fresh ones). The child starts with no samples of its own. By default it stops
 * sampling (its hooks stay in place as pure pass-through: restoring slots would
 * mean reading the loader's module list, whose lock another thread may have
 * held at the fork); it has no control thread. With children=1 (memwatch run
 * --children) every child listens on its own pid's socket, and a child of a
 * capturing process goes on capturing from scratch, with its runtimes' frames. A child that execs gets a fresh agent from
 * LD_PRELOAD, or none. */
static void atfork_prepare(void)
{
	mw_hooks_atfork_prepare();
	mw_heap_atfork_prepare();
	mw_runtimes_atfork_prepare();
}

static void atfork_parent(void)
{
	mw_runtimes_atfork_parent();
	mw_heap_atfork_parent();
	mw_hooks_atfork_parent();
}

static void atfork_child(void)
{
	bool was = __atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED) != 0;
	char *why;

	pthread_mutex_init(&start_lock, NULL);
	mw_hooks_atfork_child();
	mw_heap_atfork_child();
	mw_runtimes_atfork_child();
	mw_server_atfork_child();
	if (mw_capture_atfork_child(children_mode && was && !mw_fork_tainted))
		mw_runtimes_capture_resume();
	/* memwatch run --children: every child listens, capturing or not, so
	 * that the watch finds its agent and starts capture when it wants it */
	if (children_mode && !mw_fork_tainted && mw_server_start(&why) < 0)
		__atomic_store_n(&mw_hot.capturing, 0, __ATOMIC_RELEASE);
}

/* The snapshot at exit (memwatch run): the file memwatch made, named by
 * descriptor and inode, and the one process that may write it. */
static int exit_fd = -1;
static uint64_t exit_ino;
static int exit_pid;

/* True when fd is still the file of inode ino (the program may have closed it
 * and opened something else under the same number). */
static bool same_file(int fd, uint64_t ino)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_ino == ino;
}

/* At exit, after the program's own atexit handlers and destructors have run:
 * what is still live was never freed. Written only by the process memwatch
 * started, only while capturing, and never from a thread that is inside the
 * agent (a signal handler calling exit there, say). */
__attribute__((destructor)) static void agent_dtor(void)
{
	if (exit_fd < 0 || getpid() != exit_pid || mw_tls.guard || mw_tls.locked ||
	    !__atomic_load_n(&mw_hot.capturing, __ATOMIC_ACQUIRE) || !same_file(exit_fd, exit_ino))
		return;
	mw_tls.guard++;
	mw_collect_write(exit_fd);
	mw_tls.guard--;
}

/* The one exported entry point: install the hooks, start the control thread,
 * and start capture when the options say capture=now. Short, so that the
 * injector's hijacked thread is released quickly. */
static int agent_start(const char *options);

/* The entry point (see protocol.h): *result, when given, gets the outcome
 * for an injector that cannot see the return value. */
/* Close the memfds an injector made to load the agent and could not close, as
 * it was killed between making one and closing it (a later injector closes its
 * own before calling here): found by their name in /proc/self/fd, read with
 * getdents64 and readlinkat, which allocate nothing. */
static void close_stale_memfds(void)
{
	static const char ours[] = "/memfd:libmemwatch-agent.so (deleted)";
	char buf[4096], link[sizeof ours + 1];
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	if (dir < 0)
		return;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n;) {
			struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *d =
				(void *)(buf + off);
			char *end;
			long fd = strtol(d->name, &end, 10);
			ssize_t l;
			off += d->reclen;
			if (*end || end == d->name || fd == dir)
				continue;
			l = readlinkat(dir, d->name, link, sizeof link - 1);
			if (l == (ssize_t)sizeof ours - 1 && !memcmp(link, ours, sizeof ours - 1))
				close((int)fd);
		}
	}
	close(dir);
}

__attribute__((visibility("default"))) int memwatch_agent_start(const char *options, int *result);
int memwatch_agent_start(const char *options, int *result)
{
	int r;

	close_stale_memfds();
	r = agent_start(options);
	if (result)
		*result = r;
	return r;
}

static int agent_start(const char *options)
{
	struct mw_options o;
	char *why = NULL;
	int r = 0;

	if (mw_parse_options(options, &o) < 0)
		return -1;
	mw_tls.guard++;
	pthread_mutex_lock(&start_lock);
	if (!inited) {
		if (mw_hooks_init(&why) < 0) {
			r = -1;
			goto out;
		}
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		inited = true;
	}
	/* Running already in this process: a second call changes nothing. */
	if (mw_server_pid() == getpid())
		goto out;
	children_mode = o.children;
	if (o.exit_fd >= 0 && o.exit_pid == getpid() && same_file(o.exit_fd, o.exit_ino)) {
		exit_fd = o.exit_fd;
		exit_ino = o.exit_ino;
		exit_pid = o.exit_pid;
	}
	mw_heap_configure(o.rate, o.depth, o.max_stacks);
	mw_unwind_threads(o.unwind_threads);
	mw_runtimes_init();
	mw_hooks_install(true);
	if (o.capture_now)
		mw_capture_start(o.rate, o.depth, o.max_stacks);
	if (mw_server_start(&why) < 0) {
		mw_capture_stop(true);
		r = -1;
	}
out:
	pthread_mutex_unlock(&start_lock);
	mw_tls.guard--;
	return r;
}

/* memwatch run: the preloaded agent starts itself from MEMWATCH_AGENT_OPTIONS.
 * With pid=N in the options only that process starts (its descendants, which
 * inherit the environment, stay unwatched) unless children=1. */
__attribute__((constructor)) static void agent_ctor(void)
{
	const char *env = getenv(MEMWATCH_AGENT_ENV);
	struct mw_options o;

	if (!env || mw_parse_options(env, &o) < 0)
		return;
	if (o.pid && o.pid != getpid() && !o.children)
		return;
	memwatch_agent_start(env, NULL);
}
