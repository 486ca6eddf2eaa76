/* container.c: a target in other namespaces (Docker, Podman, Kubernetes) seen
 * from outside. Its pid inside its PID namespace names the agent's socket; its
 * root may hold other files than ours, so the agent is copied into it when it
 * is not there (its symbols are read through it: container-files.c); its
 * network namespace holds the agent's abstract socket. */
#include "config.h"
#include "container.h"
#include "proc.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

bool container_ns_differs(int pid, const char *kind)
{
	char fn[64], self[64];
	struct stat a, b;

	snprintf(fn, sizeof fn, "/proc/%d/ns/%s", pid, kind);
	snprintf(self, sizeof self, "/proc/self/ns/%s", kind);
	if (stat(fn, &a) < 0 || stat(self, &b) < 0)
		return false;
	return a.st_ino != b.st_ino || a.st_dev != b.st_dev;
}

bool container_other_root(int pid)
{
	char fn[64];
	struct stat us, it;

	snprintf(fn, sizeof fn, "/proc/%d/root/", pid);
	if (stat("/", &us) < 0 || stat(fn, &it) < 0)
		return false;
	return us.st_dev != it.st_dev || us.st_ino != it.st_ino;
}

/* ---------------------------------------------------------------- libraries */

/* The DT_NEEDED names of the ELF file at fn (at most max, caller frees each). */
static size_t elf_needed(const char *fn, char **out, size_t max)
{
	size_t n = 0;
	int fd = open(fn, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	if (!(e = elf_begin(fd, ELF_C_READ, NULL))) {
		close(fd);
		return 0;
	}
	while ((scn = elf_nextscn(e, scn)) && n < max) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize && n < max; i++) {
			GElf_Dyn dyn;
			const char *name;
			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
				continue;
			if ((name = elf_strptr(e, sh.sh_link, dyn.d_un.d_val)))
				out[n++] = xstrdup(name);
		}
	}
	elf_end(e);
	close(fd);
	return n;
}

/* Where the dynamic loader looks by default (Debian's multiarch first). */
static const char *const lib_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
	"/lib", "/usr/lib", "/usr/local/lib", "/usr/local/lib64",
};

/* The path of the library name (seen from here, caller frees) in the
 * container's /etc/ld.so.cache (directories of its ld.so.conf), or NULL. The
 * cache's string table holds each soname followed by its path. */
static char *in_ld_cache(int pid, const char *name)
{
	char fn[64], *buf, *p, *end, *found = NULL;
	size_t cap = 4 << 20, len = 0, nlen = strlen(name);
	ssize_t r;
	int fd;

	snprintf(fn, sizeof fn, "/proc/%d/root/etc/ld.so.cache", pid);
	if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	buf = xmalloc(cap);
	while (len < cap - 1 && (r = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	close(fd);
	buf[len] = '\0';
	for (p = buf, end = buf + len; !found && p < end; p += strlen(p) + 1) {
		/* a NUL-terminated path ending in /name, whose file is there */
		size_t n = strlen(p);
		if (p[0] == '/' && n > nlen && p[n - nlen - 1] == '/' && !strcmp(p + n - nlen, name)) {
			char *cand = xasprintf("/proc/%d/root%s", pid, p);
			if (access(cand, R_OK) == 0)
				found = cand;
			else
				free(cand);
		}
	}
	free(buf);
	return found;
}

/* Find the library name inside pid's root: its path there, seen from here
 * (caller frees), or NULL. Libraries the process has mapped already count. */
static char *find_in_root(int pid, const char *name, const char *maps)
{
	char key[PATH_MAX];
	const char *p;

	snprintf(key, sizeof key, "/%s\n", name);
	if (maps && (p = strstr(maps, key))) {
		const char *start = p;
		while (start > maps && start[-1] != ' ')
			start--;
		return xasprintf("/proc/%d/root%.*s", pid, (int)(p - start) + 1 + (int)strlen(name), start);
	}
	for (size_t i = 0; i < sizeof lib_dirs / sizeof lib_dirs[0]; i++) {
		char *fn = xasprintf("/proc/%d/root%s/%s", pid, lib_dirs[i], name);
		if (access(fn, R_OK) == 0)
			return fn;
		free(fn);
	}
	return in_ld_cache(pid, name);
}

/* The whole text of /proc/PID/maps (caller frees), or NULL. */
static char *read_maps_text(int pid)
{
	char fn[64], *buf = NULL;
	size_t len = 0, cap = 0;
	int fd;
	ssize_t r;

	snprintf(fn, sizeof fn, "/proc/%d/maps", pid);
	if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	for (;;) {
		if (cap - len < 4096)
			buf = xrealloc(buf, cap = cap ? cap * 2 : 65536);
		r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

/* Every library the agent needs, and theirs, resolves inside pid's root.
 * 0, or -1 with *cause naming the first one missing. */
static int check_libraries(int pid, const char *agent_abs, char **cause, char **hint)
{
	char *todo[64], *seen[64], *maps = read_maps_text(pid);
	size_t ntodo, nseen = 0, i;
	int r = 0;

	ntodo = elf_needed(agent_abs, todo, 64);
	while (ntodo > 0) {
		char *name = todo[--ntodo], *fn;
		for (i = 0; i < nseen && strcmp(seen[i], name); i++)
			;
		if (i < nseen || nseen == 64) {
			free(name);
			continue;
		}
		seen[nseen++] = name;
		if (!(fn = find_in_root(pid, name, maps))) {
			*cause = xasprintf("the agent needs %s, which is not in the process's "
					   "container (its root has no such library)", name);
			*hint = xasprintf("install it in the container image (Debian: the package "
					  "that ships %s), or start the program with memwatch run", name);
			r = -1;
			break;
		}
		char *more[16];
		size_t nm = elf_needed(fn, more, 16);
		free(fn);
		for (i = 0; i < nm; i++) {
			if (ntodo < 64)
				todo[ntodo++] = more[i];
			else
				free(more[i]);
		}
	}
	while (ntodo > 0)
		free(todo[--ntodo]);
	for (i = 0; i < nseen; i++)
		free(seen[i]);
	free(maps);
	return r;
}

/* ---------------------------------------------------------------- the agent */

/* Copy the open file in to dst (created, mode 0644). 0 or -errno. */
static int copy_file(int in, const char *dst)
{
	char buf[65536];
	int out, err = 0;
	ssize_t n;

	if (lseek(in, 0, SEEK_SET) < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0)
		return -errno;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write_all(out, buf, (size_t)n) < 0) {
			err = errno ? errno : EIO;
			break;
		}
	if (n < 0)
		err = errno;
	if (close(out) < 0 && !err)
		err = errno;
	if (err)
		unlink(dst);
	return -err;
}

/* A copy lives from its placing to the end of the dlopen that loads it: well
 * under this, however slow the attach. */
#define COPY_STALE_S 600

/* Remove the copies in dir (a place in the process's root) that a memwatch
 * killed between placing and removing them left behind: named after a memwatch
 * that is gone, and older than any attach. */
static void sweep_stale_copies(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	time_t now = time(NULL);

	if (!d)
		return;
	while ((e = readdir(d))) {
		char tail[16], *sub, *file;
		struct stat st;
		int owner;

		if (sscanf(e->d_name, "memwatch-%d-%15s", &owner, tail) != 2 || owner <= 0 ||
		    owner == getpid() || (kill(owner, 0) != 0 ? errno != ESRCH : true))
			continue;
		sub = xasprintf("%s/%s", dir, e->d_name);
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode) && now - st.st_mtime > COPY_STALE_S) {
			file = xasprintf("%s/libmemwatch-agent.so", sub);
			unlink(file);
			rmdir(sub);
			free(file);
		}
		free(sub);
	}
	closedir(d);
}

bool container_agent_visible(int pid, const char *agent_abs)
{
	char fn[PATH_MAX + 64];
	struct stat ours, theirs;

	snprintf(fn, sizeof fn, "/proc/%d/root%s", pid, agent_abs);
	return stat(agent_abs, &ours) == 0 && stat(fn, &theirs) == 0 && ours.st_ino == theirs.st_ino &&
	       ours.st_dev == theirs.st_dev;
}

int container_place_agent(int pid, const char *agent_abs, uid_t uid, gid_t gid,
			  struct container_agent *ca, char **cause, char **hint)
{
	static const char *const places[] = { "/tmp", "/var/tmp", "/dev/shm" };
	char fn[PATH_MAX + 64];
	struct stat theirs;
	int last_err = 0;

	*ca = (struct container_agent){ 0 };
	/* its root is seen with ptrace's permission (PTRACE_MODE_READ) */
	snprintf(fn, sizeof fn, "/proc/%d/root/", pid);
	if (stat(fn, &theirs) < 0 && (errno == EACCES || errno == EPERM)) {
		*cause = xasprintf("cannot see into the process's root (%s): %s", fn, strerror(errno));
		return -EACCES;
	}
	if (container_agent_visible(pid, agent_abs)) {
		ca->path = xstrdup(agent_abs);
		return 0;
	}
	if (check_libraries(pid, agent_abs, cause, hint) < 0)
		return -1;
	int in = open(agent_abs, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		*cause = xasprintf("cannot open the agent '%s': %s", agent_abs, strerror(errno));
		return -1;
	}
	/* Files are made as the process's user: they are its own, and a
	 * filesystem mounted in its user namespace takes no owner it cannot
	 * map (EOVERFLOW for our root). fsuid is this thread's alone. */
	uid_t fsuid = (uid_t)setfsuid(uid);
	gid_t fsgid = (gid_t)setfsgid(gid);
	for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
		struct statvfs vfs;
		char *dir;

		snprintf(fn, sizeof fn, "/proc/%d/root%s", pid, places[i]);
		/* dlopen maps code: a noexec mount refuses it (Docker's --tmpfs is noexec) */
		if (statvfs(fn, &vfs) < 0 || (vfs.f_flag & (ST_RDONLY | ST_NOEXEC)))
			continue;
		sweep_stale_copies(fn);
		/* named after us, so that a copy we could not remove is known */
		dir = xasprintf("%s/memwatch-%d-XXXXXX", fn, (int)getpid());
		if (!mkdtemp(dir)) {
			last_err = errno;
			free(dir);
			continue;
		}
		/* reachable by the process's user also when we could not take its
		 * uid (memwatch unprivileged, the owner of a rootless container) */
		chmod(dir, 0755);
		char *copy = xasprintf("%s/libmemwatch-agent.so", dir);
		int r = copy_file(in, copy);
		if (r < 0) {
			last_err = -r;
			free(copy);
			rmdir(dir);
			free(dir);
			continue;
		}
		ca->copy_dir = dir;
		ca->copy = copy;
		ca->copied = true;
		/* the same path without the /proc/PID/root prefix */
		ca->path = xasprintf("%s%s", places[i], dir + strlen(fn));
		ca->path = xrealloc(ca->path, strlen(ca->path) + sizeof "/libmemwatch-agent.so");
		strcat(ca->path, "/libmemwatch-agent.so");
		break;
	}
	setfsuid(fsuid);
	setfsgid(fsgid);
	close(in);
	if (ca->path)
		return 0;
	*cause = last_err ? xasprintf("no writable place for the agent in the process's container: %s",
				      strerror(last_err))
			  : xstrdup("no writable place for the agent in the process's container "
				    "(/tmp, /var/tmp and /dev/shm are read-only, noexec or missing)");
	*hint = xasprintf("give the container a writable /tmp that allows code (docker run "
			  "--tmpfs /tmp:exec), or mount memwatch's agent into it at %s", agent_abs);
	return -1;
}

void container_agent_remove(struct container_agent *ca)
{
	if (ca->copy)
		unlink(ca->copy);
	if (ca->copy_dir)
		rmdir(ca->copy_dir);
	free(ca->copy);
	free(ca->copy_dir);
	ca->copy = ca->copy_dir = NULL;
}

void container_agent_release(struct container_agent *ca)
{
	container_agent_remove(ca);
	free(ca->path);
	*ca = (struct container_agent){ 0 };
}

/* ---------------------------------------------------------------- the socket */

struct ns_connect {
	int pid;
	const struct sockaddr *sa;
	socklen_t salen;
	int timeout_ms;
	bool enter_net;          /* the process has its own network namespace */
	bool as_owner;           /* and its own user namespace: connect as its owner */
	uid_t uid;
	gid_t gid;
	int fd;                  /* the connected socket, or -errno */
	const char *what;        /* the step that failed */
};

/* Make the socket and connect it, in the calling thread. */
static void connect_here(struct ns_connect *a)
{
	struct timeval tv = { a->timeout_ms / 1000, (a->timeout_ms % 1000) * 1000 };
	int fd;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		a->fd = -errno;
		a->what = "socket";
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	/* The agent accepts its own user or root, as its user namespace sees
	 * them: our root may map to nobody there, its owner maps to itself. The
	 * raw system calls change this thread's credentials only, which are what
	 * the connection records (SO_PEERCRED). */
	if (a->as_owner && (syscall(SYS_setresgid, -1, a->gid, -1) < 0 ||
			    syscall(SYS_setresuid, -1, a->uid, -1) < 0)) {
		a->fd = -errno;
		a->what = "take the process's user";
		close(fd);
		return;
	}
	if (connect(fd, a->sa, a->salen) != 0) {
		a->fd = -errno;
		a->what = "connect";
		close(fd);
		return;
	}
	a->fd = fd;
}

/* Thread body: enter the network namespace (if it is another), connect there. */
static void *connect_in_ns(void *arg)
{
	struct ns_connect *a = arg;
	char fn[64];
	int ns;

	if (!a->enter_net) {
		connect_here(a);
		return NULL;
	}
	snprintf(fn, sizeof fn, "/proc/%d/ns/net", a->pid);
	if ((ns = open(fn, O_RDONLY | O_CLOEXEC)) < 0) {
		a->fd = -errno;
		a->what = "open its network namespace";
		return NULL;
	}
	if (setns(ns, CLONE_NEWNET) < 0) {
		a->fd = -errno;
		a->what = "enter the process's network namespace, where its agent's socket is";
		close(ns);
		return NULL;
	}
	close(ns);
	connect_here(a);
	return NULL;
}

/* The effective uid and gid of pid, as we see them. 0 or -1. */
static int owner_of(int pid, uid_t *uid, gid_t *gid)
{
	char fn[64];
	struct proc_status st;

	snprintf(fn, sizeof fn, "/proc/%d/status", pid);
	if (proc_status_read(fn, &st) < 0 || !st.has_uid)
		return -1;
	*uid = (uid_t)st.uid[1];
	*gid = (gid_t)st.gid[1];
	return 0;
}

/* Thread body: whether this thread may enter the network namespace. */
static void *try_enter_net(void *arg)
{
	struct ns_connect *a = arg;
	char fn[64];
	int ns;

	snprintf(fn, sizeof fn, "/proc/%d/ns/net", a->pid);
	if ((ns = open(fn, O_RDONLY | O_CLOEXEC)) < 0)
		a->fd = -errno;
	else if (setns(ns, CLONE_NEWNET) < 0)
		a->fd = -errno;
	else
		a->fd = 0;
	if (ns >= 0)
		close(ns);
	return NULL;
}

int container_check_reach(int pid, char **cause, char **hint)
{
	struct ns_connect a = { .pid = pid, .fd = 0 };
	pthread_t th;
	int r;

	if (!container_ns_differs(pid, "net"))
		return 0;
	if ((r = pthread_create(&th, NULL, try_enter_net, &a)) != 0) {
		*cause = xasprintf("cannot reach its network namespace: pthread_create: %s", strerror(r));
		return -1;
	}
	pthread_join(th, NULL);
	if (a.fd == 0)
		return 0;
	*cause = xasprintf("cannot enter the process's network namespace, where its agent's "
			   "socket is: %s", strerror(-a.fd));
	if (a.fd == -EPERM)
		*hint = xstrdup(CONTAINER_HINT_NETNS);
	return -1;
}

/* Connect to sa for pid: in its network namespace when net and it is another,
 * as its owner when it has its own user namespace and we are root. */
static int connect_for(int pid, const struct sockaddr *sa, socklen_t salen, int timeout_ms,
		       bool net, char **cause)
{
	struct ns_connect a = { .pid = pid, .sa = sa, .salen = salen, .timeout_ms = timeout_ms,
				.fd = -EINVAL, .what = "connect" };
	pthread_t th;
	int r;

	a.enter_net = net && container_ns_differs(pid, "net");
	a.as_owner = geteuid() == 0 && container_ns_differs(pid, "user") &&
		     owner_of(pid, &a.uid, &a.gid) == 0;
	if (!a.enter_net && !a.as_owner) {
		connect_here(&a);
	} else {
		/* a thread of our own: its namespace and user go with it, the
		 * connection keeps them */
		if ((r = pthread_create(&th, NULL, connect_in_ns, &a)) != 0) {
			*cause = xasprintf("pid %d: cannot reach its agent: pthread_create: %s", pid,
					   strerror(r));
			return -r;
		}
		pthread_join(th, NULL);
	}
	if (a.fd < 0 && strcmp(a.what, "connect"))
		*cause = xasprintf("pid %d: cannot %s: %s", pid, a.what, strerror(-a.fd));
	return a.fd;
}

int container_connect(int pid, const struct sockaddr *sa, socklen_t salen, int timeout_ms,
		      char **cause)
{
	return connect_for(pid, sa, salen, timeout_ms, true, cause);
}

int container_connect_path(int pid, const struct sockaddr *sa, socklen_t salen, int timeout_ms,
			   char **cause)
{
	/* a socket bound to a path is found by its file, whatever the network
	 * namespace: entering it would only need more privilege */
	return connect_for(pid, sa, salen, timeout_ms, false, cause);
}
