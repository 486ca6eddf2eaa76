/* hotspot.c: a HotSpot JVM asked for its perf map, so that the Java methods
 * it compiled are named in snapshots. HotSpot's attach mechanism on Linux: a
 * file .attach_pid<PID> in the JVM's working directory (or its /tmp), then
 * SIGQUIT, makes its signal thread start an attach listener on the Unix
 * socket /tmp/.java_pid<PID> (PID as the JVM knows itself, in its own PID
 * namespace; /tmp in its own mount namespace). A request is the protocol
 * version "1", a command and three arguments, each ending in a NUL; the reply
 * is the result code in decimal and a newline, then the command's output. The
 * command here is "jcmd" with "Compiler.perfmap" (JDK 17 and later), which
 * writes /tmp/perf-<PID>.map. */
#include "config.h"
#include "hotspot.h"
#include "container.h"
#include "proc.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The JVM whose library a process maps, if any. */
enum jvm_kind {
	JVM_NONE,
	JVM_HOTSPOT,
	JVM_OPENJ9,      /* Eclipse OpenJ9 maps a libjvm.so too, and its own libj9vm */
};

/* What pid's mappings say: HotSpot maps lib/server/libjvm.so (or client/,
 * zero/); OpenJ9 maps its libj9vm29.so beside its libjvm.so. */
static enum jvm_kind jvm_kind_of(int pid)
{
	char fn[64], *line = NULL;
	size_t cap = 0;
	bool jvm = false, j9 = false;
	FILE *f;

	snprintf(fn, sizeof fn, "/proc/%d/maps", pid);
	if (!(f = fopen(fn, "re")))
		return JVM_NONE;
	while (getline(&line, &cap, f) > 0) {
		char *path = strchr(line, '/');
		const char *b;
		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		b = base_name(path);
		/* a JDK upgraded under a running JVM leaves "libjvm.so (deleted)" */
		if (!strcmp(b, "libjvm.so") || !strcmp(b, "libjvm.so (deleted)"))
			jvm = true;
		else if (!strncmp(b, "libj9vm", 7))
			j9 = true;
	}
	free(line);
	fclose(f);
	return !jvm ? JVM_NONE : j9 ? JVM_OPENJ9 : JVM_HOTSPOT;
}

/* The file /proc/PID/what, up to max bytes (NUL added; caller frees), its
 * length in *len; NULL when it cannot be read. */
static char *read_proc(int pid, const char *what, size_t max, size_t *len)
{
	char fn[64], *buf;
	size_t n = 0;
	ssize_t r;
	int fd;

	snprintf(fn, sizeof fn, "/proc/%d/%s", pid, what);
	if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	buf = xmalloc(max + 1);
	while (n < max && (r = read(fd, buf + n, max - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* One option word: a later setting of DisableAttachMechanism wins. */
static void attach_word(const char *w, size_t n, int *disabled)
{
	static const char on[] = "-XX:+DisableAttachMechanism",
			  off[] = "-XX:-DisableAttachMechanism",
			  set[] = "-XX:DisableAttachMechanism=";

	if (n == sizeof on - 1 && !memcmp(w, on, n))
		*disabled = 1;
	else if (n == sizeof off - 1 && !memcmp(w, off, n))
		*disabled = 0;
	else if (n > sizeof set - 1 && !memcmp(w, set, sizeof set - 1))
		*disabled = w[sizeof set - 1] == 't' || w[sizeof set - 1] == '1';
}

/* The words of an options variable (separated by white space, as HotSpot
 * reads JAVA_TOOL_OPTIONS). */
static void attach_words(const char *s, int *disabled)
{
	while (*s) {
		size_t n;
		s += strspn(s, " \t\n");
		n = strcspn(s, " \t\n");
		if (n)
			attach_word(s, n, disabled);
		s += n;
	}
}

/* The value of variable name in the environment block env (len bytes). */
static const char *env_get(const char *env, size_t len, const char *name)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
		if (!strncmp(env + i, name, nl) && env[i + nl] == '=')
			return env + i + nl + 1;
	}
	return NULL;
}

/* Whether the JVM was started with -XX:+DisableAttachMechanism: such a JVM
 * never starts its listener, and prints a thread dump at each SIGQUIT. The
 * options are read where HotSpot reads them, in its order (the last wins):
 * JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS (the launcher puts them before its
 * arguments), the command line, _JAVA_OPTIONS. An option file (-XX:Flags=,
 * @argfiles) is not read: a JVM whose socket does not come is told apart by
 * the wait. The command line is looked at whole, the program's own arguments
 * too: a false "disabled" only costs the names. */
static bool attach_disabled(int pid)
{
	size_t elen = 0, clen = 0;
	char *env = read_proc(pid, "environ", 1 << 20, &elen);
	char *cmd = read_proc(pid, "cmdline", 1 << 20, &clen);
	const char *v;
	int disabled = 0;

	if (env && (v = env_get(env, elen, "JAVA_TOOL_OPTIONS")))
		attach_words(v, &disabled);
	if (env && (v = env_get(env, elen, "JDK_JAVA_OPTIONS")))
		attach_words(v, &disabled);
	for (size_t i = 0; cmd && i < clen; i += strlen(cmd + i) + 1)
		attach_word(cmd + i, strlen(cmd + i), &disabled);
	if (env && (v = env_get(env, elen, "_JAVA_OPTIONS")))
		attach_words(v, &disabled);
	free(env);
	free(cmd);
	return disabled;
}

/* Milliseconds left until end (monotonic ns), at least 0. */
static int ms_left(uint64_t end)
{
	uint64_t now = mono_ns();
	return now >= end ? 0 : (int)((end - now + 999999) / 1000000);
}

/* Connect to the JVM's socket .java_pid<nspid> in the directory dirfd (its
 * /tmp). The path goes through our descriptor of that directory, so it fits
 * sun_path's 108 bytes whatever the path of the process's root. The fd, or
 * -errno (*cause set for a step before connect). */
static int attach_connect(int pid, int dirfd, int nspid, int timeout_ms, char **cause)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/.java_pid%d", dirfd,
			 nspid);

	return container_connect_path(pid, (struct sockaddr *)&sa,
				      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1),
				      timeout_ms > 0 ? timeout_ms : 1, cause);
}

/* Whether the JVM's socket is there. */
static bool socket_there(int dirfd, int nspid)
{
	char name[32];
	struct stat sb;

	snprintf(name, sizeof name, ".java_pid%d", nspid);
	return fstatat(dirfd, name, &sb, 0) == 0 && S_ISSOCK(sb.st_mode);
}

/* The attach trigger memwatch made. */
struct trigger {
	int dirfd;       /* the directory it is in, held so that it can be removed
			  * once the process is gone (when /proc/PID/cwd leads
			  * nowhere); -1: none of ours */
	bool as_user;    /* made with the JVM's user for file access */
	uid_t uid;
	gid_t gid;
};

/* As root, act on files with the JVM's effective user and group (on) or our
 * own again (off), in this thread: the trigger is made as its user would
 * make it, where its user may write, owned by its user (HotSpot takes only a
 * trigger of its own user or root, and our root is nobody in a user
 * namespace of its own, whose file systems cannot even record us). */
static void trigger_ids(const struct trigger *t, bool on)
{
	if (!t->as_user)
		return;
	if (on) {
		setfsgid(t->gid);
		setfsuid(t->uid);
	} else {
		setfsuid(geteuid());
		setfsgid(getegid());
	}
}

/* Create the trigger .attach_pid<nspid> where the JVM looks for it: its
 * working directory, else its /tmp. t->dirfd stays -1 when another tool's
 * trigger is there already, which serves as well and is not ours to remove.
 * 0 or -errno. */
static int trigger_make(int pid, int nspid, const struct proc_status *st, struct trigger *t)
{
	static const char *const where[] = { "cwd", "root/tmp" };
	char name[32];
	int err = ENOENT;

	*t = (struct trigger){ .dirfd = -1, .as_user = geteuid() == 0 && st->has_uid,
			       .uid = (uid_t)st->uid[1], .gid = (gid_t)st->gid[1] };
	snprintf(name, sizeof name, ".attach_pid%d", nspid);
	for (size_t i = 0; i < sizeof where / sizeof *where; i++) {
		char dir[64];
		int d, fd;

		/* the directory is opened as ourselves: /proc/PID/cwd is ours
		 * to follow, not necessarily its user's */
		snprintf(dir, sizeof dir, "/proc/%d/%s", pid, where[i]);
		if ((d = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
			err = errno;
			continue;
		}
		trigger_ids(t, true);
		fd = openat(d, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		err = errno;
		trigger_ids(t, false);
		if (fd >= 0) {
			close(fd);
			t->dirfd = d;
			return 0;
		}
		close(d);
		if (err == EEXIST)
			return 0;
	}
	return -err;
}

/* Remove the trigger t (if ours) and close its directory. */
static void trigger_remove(struct trigger *t, int nspid)
{
	char name[32];

	if (t->dirfd < 0)
		return;
	snprintf(name, sizeof name, ".attach_pid%d", nspid);
	trigger_ids(t, true);
	unlinkat(t->dirfd, name, 0);
	trigger_ids(t, false);
	close(t->dirfd);
	t->dirfd = -1;
}

/* Send the request "jcmd Compiler.perfmap" on fd and read the reply until
 * end. 0 when the JVM says it was done; -1 with *cause (caller frees), -2
 * with *cause when it did not answer in time. */
static int perfmap_command(int fd, uint64_t end, char **cause)
{
	static const char req[] = "1\0jcmd\0Compiler.perfmap\0\0";   /* + the final NUL */
	char reply[2048];
	size_t n = 0;
	long code;
	char *nl, *p;

	if (send(fd, req, sizeof req, MSG_NOSIGNAL) != (ssize_t)sizeof req) {
		*cause = xasprintf("cannot send the JVM a command: %s", strerror(errno));
		return -1;
	}
	/* the reply: its code, and what the command printed (to its end) */
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char drop[512];
		ssize_t r;
		int left = ms_left(end);

		if (left == 0 || stop_signal_pending()) {
			*cause = xstrdup("the JVM did not answer Compiler.perfmap in time");
			return -2;
		}
		if (poll(&pfd, 1, left) <= 0)
			continue;
		if (n < sizeof reply - 1)
			r = recv(fd, reply + n, sizeof reply - 1 - n, 0);
		else
			r = recv(fd, drop, sizeof drop, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		if (n < sizeof reply - 1)
			n += (size_t)r;
	}
	reply[n] = '\0';
	if (!(nl = strchr(reply, '\n'))) {
		/* HotSpot closes a connection whose peer it does not accept */
		*cause = xstrdup("the JVM closed its attach socket without an answer (it takes "
				 "commands from its own user and group, or root)");
		return -1;
	}
	code = strtol(reply, &p, 10);
	if (p == reply || p != nl) {
		*cause = xstrdup("the JVM answered on its attach socket in an unknown way");
		return -1;
	}
	if (code == 0)
		return 0;
	/* the first line of what it said: "java.lang.IllegalArgumentException:
	 * Unknown diagnostic command" before JDK 17 */
	p = nl + 1;
	p[strcspn(p, "\n")] = '\0';
	*cause = xasprintf("the JVM refused Compiler.perfmap (%ld%s%s)", code, *p ? ": " : "", p);
	return -1;
}

int hotspot_perfmap(struct hotspot *h, int pid, int timeout_ms, char **why)
{
	uint64_t t0 = mono_ns(), end = t0 + (uint64_t)timeout_ms * 1000000u;
	struct proc_status st;
	enum jvm_kind kind;
	char fn[64], *cause = NULL;
	struct trigger trigger = { .dirfd = -1 };
	int nspid, dirfd = -1, fd = -1, r, ret = -1;

	*why = NULL;
	if (h->given_up || proc_run_state(pid) != PROC_RUNNING)
		return 0;
	if ((kind = jvm_kind_of(pid)) == JVM_NONE)
		return 0;
	nspid = proc_inner_pid(pid);
	if (kind == JVM_OPENJ9) {
		h->given_up = true;
		*why = xasprintf("Java methods are not named: this JVM is OpenJ9, which has no "
				 "Compiler.perfmap; start it with -Xjit:perfTool to have it write "
				 "/tmp/perf-%d.map", nspid);
		return -1;
	}
	snprintf(fn, sizeof fn, "/proc/%d/root/tmp", pid);
	if ((dirfd = open(fn, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		cause = xasprintf("cannot look into the JVM's /tmp: %s", strerror(errno));
		h->given_up = true;
		goto out;
	}
	/* a listener up already: asked before, by jcmd, or started with the
	 * JVM (-Xrs does that) */
	if (socket_there(dirfd, nspid)) {
		fd = attach_connect(pid, dirfd, nspid, ms_left(end), &cause);
		/* refused: a socket left by an earlier process with its pid, no
		 * one listens; anything else is a listener up that we may not
		 * reach, and a SIGQUIT would only print a thread dump */
		if (fd < 0 && (cause || fd != -ECONNREFUSED)) {
			h->given_up = true;
			if (!cause)
				cause = xasprintf("cannot connect to the JVM's attach socket: %s",
						  strerror(-fd));
			goto out;
		}
	}
	if (fd < 0) {
		if (attach_disabled(pid)) {
			h->given_up = true;
			*why = xasprintf("Java methods are not named: the JVM was started with "
					 "-XX:+DisableAttachMechanism, which `jcmd %d Compiler.perfmap` "
					 "needs too; start it without that option", pid);
			goto out;
		}
		/* SIGQUIT kills a process that does not catch it: a JVM catches
		 * it from early in its start, except under -Xrs (whose listener
		 * is up from the start) */
		snprintf(fn, sizeof fn, "/proc/%d/status", pid);
		if (proc_status_read(fn, &st) < 0 || !((st.sigcgt >> (SIGQUIT - 1)) & 1)) {
			cause = xstrdup("the JVM does not catch SIGQUIT, which starts its attach "
					"listener (it may be starting)");
			goto out;
		}
		if ((r = trigger_make(pid, nspid, &st, &trigger)) < 0) {
			h->given_up = true;
			cause = xasprintf("cannot create the JVM's attach trigger .attach_pid%d: %s",
					  nspid, strerror(-r));
			goto out;
		}
		if (kill(pid, SIGQUIT) < 0) {
			h->given_up = true;
			cause = xasprintf("cannot send the JVM SIGQUIT: %s", strerror(errno));
			goto out;
		}
		h->signalled = true;
		while (fd < 0 && ms_left(end) > 0 && !stop_signal_pending()) {
			struct timespec ts = { 0, 10 * 1000000 };
			if (socket_there(dirfd, nspid)) {
				/* refused until it listens: bound, then listening */
				fd = attach_connect(pid, dirfd, nspid, ms_left(end), &cause);
				if (fd >= 0)
					break;
				if (cause || (fd != -ECONNREFUSED && fd != -ENOENT)) {
					if (!cause)
						cause = xasprintf("cannot connect to the JVM's attach "
								  "socket: %s", strerror(-fd));
					break;
				}
			}
			nanosleep(&ts, NULL);
		}
		trigger_remove(&trigger, nspid);
		if (fd < 0) {
			/* another SIGQUIT would print a thread dump: never again */
			h->given_up = true;
			if (!cause)
				cause = xasprintf("the JVM's attach socket did not come within %.1f s",
						  (double)timeout_ms / 1000);
			goto out;
		}
	}
	if ((r = perfmap_command(fd, end, &cause)) < 0) {
		/* one slow answer is no refusal: asked again next time */
		if (r != -2)
			h->given_up = true;
		goto out;
	}
	h->answered = true;
	ret = 1;
out:
	h->ms = (double)(mono_ns() - t0) / 1e6;
	if (ret < 0 && stop_signal_pending()) {
		/* cut short by memwatch's own stop: nothing to tell */
		free(*why);
		*why = NULL;
		free(cause);
		cause = NULL;
		ret = 0;
	}
	if (cause && !*why)
		*why = xasprintf("Java methods are not named: %s; run `jcmd %d Compiler.perfmap` "
				 "to have it write its perf map", cause, pid);
	free(cause);
	trigger_remove(&trigger, nspid);
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	return ret;
}
