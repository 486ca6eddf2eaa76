/* inject-memfd.c: load the agent into a process that does not see our file
 * (another root: a container, a chroot) without writing a file into its
 * filesystem. The borrowed thread makes a memfd (memfd_create in its own
 * libc), memwatch fills it from outside through /proc/PID/fd/N, the thread
 * dlopens /proc/self/fd/N and closes the descriptor (the mapping keeps the
 * memory). Where the kernel or the process refuses that (no memfd_create, a
 * seccomp filter, no /proc in its root, memfds that may not hold code), the
 * agent is copied into a writable place of its root as before; both refused
 * is one error naming both causes. */
#include "config.h"
#include "container.h"
#include "inject-internal.h"
#include "util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#define MEMFD_CLOEXEC 0x0001U
#define MEMFD_EXEC 0x0010U    /* Linux >= 6.3: executable even where memfds are noexec by default */

/* What the memfd is called: /proc/PID/maps shows "/memfd:NAME (deleted)". */
#define MEMFD_LINK "/memfd:" AGENT_SONAME " (deleted)"

bool memfd_possible(struct injector *ij)
{
	const struct fsym *mc = module_find(&ij->cl.libc, "memfd_create");
	const struct fsym *cl = module_find(&ij->cl.libc, "close");

	if (!mc || !cl || getenv("MEMWATCH_TEST_NO_MEMFD"))
		return false;
	ij->memfd_create_addr = ij->cl.libc.bias + mc->lo;
	ij->close_addr = ij->cl.libc.bias + cl->lo;
	return true;
}

/* memfd_create's flags: MFD_EXEC where the kernel knows it (EINVAL before). */
static unsigned memfd_flags(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;

	if (uname(&u) == 0 && sscanf(u.release, "%u.%u", &major, &minor) == 2 &&
	    (major > 6 || (major == 6 && minor >= 3)))
		return MEMFD_CLOEXEC | MEMFD_EXEC;
	return MEMFD_CLOEXEC;
}

/* The descriptors of pid that are our memfd, as a bit set of the first 4096
 * (the thread made it while stopped with us: it is the one new after). */
static int memfd_scan(int pid, unsigned char *set, size_t setlen)
{
	char dn[64], fn[96], link[128];
	DIR *d;
	struct dirent *e;
	int last = -1;

	snprintf(dn, sizeof dn, "/proc/%d/fd", pid);
	if (!(d = opendir(dn)))
		return -1;
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		ssize_t n;
		if (*end || fd < 0 || (size_t)fd >= setlen * 8)
			continue;
		snprintf(fn, sizeof fn, "%s/%ld", dn, fd);
		if ((n = readlink(fn, link, sizeof link - 1)) < 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, MEMFD_LINK)) {
			set[fd / 8] |= (unsigned char)(1u << (fd % 8));
			last = (int)fd;
		}
	}
	closedir(d);
	return last;
}

/* Write the agent file into the process's descriptor fd. Its device and
 * inode (as its maps will show them) into *st. 0 or -errno. */
static int memfd_fill(int pid, int fd, const char *agent_abs, struct stat *st)
{
	char fn[64], buf[65536];
	int in, out, err = 0;
	ssize_t n;

	snprintf(fn, sizeof fn, "/proc/%d/fd/%d", pid, fd);
	if ((out = open(fn, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	if ((in = open(agent_abs, O_RDONLY | O_CLOEXEC)) < 0) {
		err = errno;
		close(out);
		return -err;
	}
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write_all(out, buf, (size_t)n) < 0) {
			err = errno ? errno : EIO;
			break;
		}
	if (n < 0 && !err)
		err = errno;
	if (!err && fstat(out, st) < 0)
		err = errno;
	close(in);
	close(out);
	return -err;
}

/* Put the string str into the process at addr (a buffer of frame_build's). */
static int write_string(int pid, uint64_t addr, const char *str)
{
	struct iovec l = { (void *)str, strlen(str) + 1 }, r = { (void *)addr, strlen(str) + 1 };
	return process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)l.iov_len ? 0 : -1;
}

/* dlopen path (already in the process at path_addr). CALL_OK or the failure
 * of the call. */
static enum call_result call_dlopen(struct injector *ij, struct seized *s, uint64_t path_addr, char *msg,
				    size_t msglen)
{
	uint64_t flags = RTLD_NOW | (ij->dlopen_is_private ? RTLD_DLOPEN_FLAG : 0);
	return remote_call(ij->pid, s, ij->dlopen_addr, path_addr, flags, CALL_TIMEOUT_MS, msg, msglen);
}

/* The agent's mapping: by device and inode, or (dev 0) by name. 1 found, 0
 * not there, -1 the process is gone. */
static int find_loaded(struct injector *ij, dev_t dev, uint64_t ino, struct module *mod)
{
	struct maps m;
	char *c = NULL;
	int r;

	if (procmaps_read(ij->pid, &m) < 0)
		return -1;
	r = module_from_maps(ij->pid, &m, dev ? NULL : match_agent, dev, ino, false, NULL, mod, &c);
	procmaps_free(&m);
	free(c);
	return r > 0 ? 1 : 0;
}

/* Why dlopen failed, from the thread's dlerror state (or the call's msg). */
static void dlopen_why(struct injector *ij, struct seized *s, const char *msg, char *why, size_t whylen)
{
	char err[512] = "";
	dlerror_read(ij->pid, &ij->cl.maps, &ij->cl.libc, s->regs.fs_base, err, sizeof err);
	snprintf(why, whylen, "dlopen failed: %s", err[0] ? err : (msg[0] ? msg : "no reason given"));
}

/* Through a memfd. 1 loaded (*mod), 0 refused (*why), -1 a call failed (*cr). */
static int load_memfd(struct injector *ij, struct seized *s, const uint64_t *addrs, struct module *mod,
		      enum call_result *cr, char *msg, size_t msglen, char *why, size_t whylen)
{
	unsigned char before[512] = { 0 }, after[512] = { 0 };
	char path[64];
	struct stat st;
	int fd = -1, r;

	memfd_scan(ij->pid, before, sizeof before);
	*cr = remote_call(ij->pid, s, ij->memfd_create_addr, addrs[3], memfd_flags(), CALL_TIMEOUT_MS, msg,
			  msglen);
	if (*cr != CALL_OK)
		return -1;
	memfd_scan(ij->pid, after, sizeof after);
	for (size_t i = 0; i < sizeof after * 8; i++)
		if ((after[i / 8] & ~before[i / 8]) & (1u << (i % 8)))
			fd = (int)i;
	if (fd < 0) {
		snprintf(why, whylen, "memfd_create failed in the process%s",
			 ij->st.seccomp == 2 ? " (it runs under a seccomp filter)" : "");
		return 0;
	}
	r = memfd_fill(ij->pid, fd, ij->agent_abs, &st);
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (r < 0)
		snprintf(why, whylen, "cannot write the agent into its memfd: %s", strerror(-r));
	else if (write_string(ij->pid, addrs[4], path) < 0)
		snprintf(why, whylen, "cannot write into the process: %s", strerror(errno));
	else if ((*cr = call_dlopen(ij, s, addrs[4], msg, msglen)) != CALL_OK)
		return -1;
	else if ((r = find_loaded(ij, st.st_dev, (uint64_t)st.st_ino, mod)) < 0)
		return *cr = CALL_GONE, -1;
	else if (r == 0)
		dlopen_why(ij, s, msg, why, whylen);
	/* the mapping keeps the memory: the descriptor is not the process's to keep */
	enum call_result c2 = remote_call(ij->pid, s, ij->close_addr, (uint64_t)fd, 0, CALL_TIMEOUT_MS, msg,
					  msglen);
	if (c2 != CALL_OK) {
		if (r > 0)
			module_free(mod);
		*cr = c2;
		return -1;
	}
	return r > 0 ? 1 : 0;
}

/* As a copy in a writable place of its root. 1 loaded (*mod), 0 refused
 * (*why, *hint), -1 a call failed (*cr). */
static int load_copy(struct injector *ij, struct seized *s, const uint64_t *addrs, struct module *mod,
		     enum call_result *cr, char *msg, size_t msglen, char *why, size_t whylen, char **hint)
{
	char *c = NULL;
	int r;

	container_agent_release(&ij->placed);
	r = container_place_agent(ij->pid, ij->agent_abs, ij->st.uid[1], ij->st.gid[1], &ij->placed, &c, hint);
	if (r < 0) {
		snprintf(why, whylen, "%s", c ? c : "cannot place it");
		free(c);
		return 0;
	}
	if (strlen(ij->placed.path) >= MEMFD_PATH_MAX || write_string(ij->pid, addrs[4], ij->placed.path) < 0) {
		snprintf(why, whylen, "cannot write into the process: %s",
			 strlen(ij->placed.path) >= MEMFD_PATH_MAX ? "path too long" : strerror(errno));
		container_agent_remove(&ij->placed);
		return 0;
	}
	*cr = call_dlopen(ij, s, addrs[4], msg, msglen);
	container_agent_remove(&ij->placed);
	if (*cr != CALL_OK)
		return -1;
	if ((r = find_loaded(ij, 0, 0, mod)) < 0)
		return *cr = CALL_GONE, -1;
	if (r == 0)
		dlopen_why(ij, s, msg, why, whylen);
	return r;
}

int memfd_load_agent(struct injector *ij, struct seized *s, const uint64_t *addrs, uint64_t *start_addr,
		     enum call_result *cr, char *msg, size_t msglen, char **cause, char **hint)
{
	char why_memfd[512], why_copy[512];
	char *copy_hint = NULL;
	struct module mod;
	bool debug = getenv("MEMWATCH_INJECT_DEBUG") != NULL;
	int r;

	r = load_memfd(ij, s, addrs, &mod, cr, msg, msglen, why_memfd, sizeof why_memfd);
	if (r < 0)
		return 1;
	if (r == 0) {
		if (debug)
			fprintf(stderr, "inject: no memfd (%s): copying the agent into its root\n", why_memfd);
		r = load_copy(ij, s, addrs, &mod, cr, msg, msglen, why_copy, sizeof why_copy, &copy_hint);
		if (r < 0) {
			free(copy_hint);
			return 1;
		}
		if (r == 0) {
			int k = inject_fail(INJECT_EUNSUPPORTED, cause, hint, copy_hint,
					    "cannot load the agent: through a memfd, %s; as a copy in the "
					    "process's root, %s", why_memfd, why_copy);
			free(copy_hint);
			return k;
		}
		free(copy_hint);
	} else if (debug) {
		fprintf(stderr, "inject: the agent loaded from a memfd\n");
	}
	*start_addr = mod.bias + ij->start_off;
	module_free(&mod);
	return 0;
}
