/* inject.c: load the agent into a running process with ptrace. One thread is
 * stopped at a safe point, made to call dlopen() and memwatch_agent_start() on
 * its own stack, then put back exactly as it was; the others never stop. */
#include "config.h"
#include "inject.h"
#include "util.h"
#include "agent/protocol.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libunwind.h>
#include <libunwind-ptrace.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1           /* si_code of a SIGSYS raised by a seccomp filter */
#endif
#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

/* Kernel-internal syscall return values a stopped thread can show in rax; the
 * kernel turns them into a restart when the thread resumes without a handler. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/* The injected calls return here: below vm.mmap_min_addr, so it is never
 * mapped, and canonical, so "ret" itself succeeds and the fetch faults with
 * rip == MAGIC_RETURN, which identifies completion without writing any code. */
#define MAGIC_RETURN 0x4d57UL
#define RED_ZONE 128
/* Stack the injected calls may use below the red zone; dlopen needs a few KiB. */
#define STACK_NEEDED (64 * 1024)
/* glibc's flag that makes __libc_dlopen_mode behave like dlopen (glibc < 2.34). */
#define RTLD_DLOPEN_FLAG 0x80000000
#define MAX_FRAMES 512
#define CALL_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 2000
#define RUN_TO_RETURN_MS 20
#define XSTATE_MAX (64 * 1024)
#define AGENT_SONAME "libmemwatch-agent.so"

#if defined(__x86_64__)

/* ---------------------------------------------------------------- maps */

struct mapping {
	uint64_t lo, hi, off, inode;
	unsigned dev_major, dev_minor;
	char perms[5];
	char *path;             /* "" for anonymous mappings */
};

struct maps {
	struct mapping *v;
	size_t n;
};

static void maps_free(struct maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* Read /proc/PID/maps. Returns 0 or -errno (-ENOENT when the process is gone). */
static int maps_read(int pid, struct maps *m)
{
	char fn[64], *line = NULL;
	size_t cap = 0, alloc = 0;
	FILE *f;

	m->v = NULL;
	m->n = 0;
	snprintf(fn, sizeof fn, "/proc/%d/maps", pid);
	if (!(f = fopen(fn, "re")))
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		struct mapping mp = { 0 };
		int pos = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &mp.lo, &mp.hi, mp.perms, &mp.off, &mp.dev_major, &mp.dev_minor,
			   &mp.inode, &pos) < 7)
			continue;
		line[strcspn(line, "\n")] = '\0';
		mp.path = xstrdup(pos > 0 ? line + pos : "");
		if (m->n == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			m->v = xrealloc(m->v, alloc * sizeof *m->v);
		}
		m->v[m->n++] = mp;
	}
	free(line);
	fclose(f);
	return m->n ? 0 : -ENOENT;
}

/* Basename of a mapping path ("" for anonymous ones). */
static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static bool is_libc_name(const char *b)
{
	return !strcmp(b, "libc.so.6") || (!strncmp(b, "libc-2.", 7) && strstr(b, ".so"));
}

static bool is_ldso_name(const char *b)
{
	return !strncmp(b, "ld-linux", 8) || (!strncmp(b, "ld-2.", 5) && strstr(b, ".so")) ||
	       !strncmp(b, "ld-musl", 7);
}

/* ---------------------------------------------------------------- ELF symbols */

enum sym_flags {
	SYM_BLOCKING = 1 << 0,  /* on the allow-list of blocking calls */
	SYM_BOTTOM = 1 << 1,    /* may sit at the bottom of a stack (__libc_start_main, clone) */
};

struct fsym {
	uint64_t lo, hi;        /* [lo, hi) relative to the load bias */
	char *name;
	const char *shown;      /* the plainest alias, for messages ("free", not "cfree") */
	unsigned flags;
};

/* A mapped ELF object: its address range in the target, the bias its symbols
 * are relative to, and its defined function symbols sorted by address. */
struct module {
	char *path;             /* as in /proc/PID/maps */
	uint64_t lo, hi;        /* union of its mappings */
	uint64_t bias;
	dev_t dev;
	uint64_t inode;
	struct fsym *syms;
	size_t nsyms;
};

static void module_free(struct module *mod)
{
	for (size_t i = 0; i < mod->nsyms; i++)
		free(mod->syms[i].name);
	free(mod->syms);
	free(mod->path);
	memset(mod, 0, sizeof *mod);
}

/* Exported libc functions a thread may be blocked in when we borrow it: thin
 * system call wrappers and waits that hold no libc lock while they block. */
static const char *const blocking_calls[] = {
	"read", "__read", "readv", "pread", "pread64", "preadv", "preadv2", "preadv64", "preadv64v2",
	"write", "__write", "writev", "pwrite", "pwrite64", "pwritev", "pwritev2", "pwritev64",
	"pwritev64v2", "recv", "__recv", "recvfrom", "recvmsg", "recvmmsg", "send", "__send",
	"sendto", "sendmsg", "sendmmsg", "accept", "accept4", "connect", "__connect",
	"poll", "__poll", "ppoll", "select", "__select", "pselect", "epoll_wait", "epoll_pwait",
	"epoll_pwait2", "nanosleep", "__nanosleep", "clock_nanosleep", "__clock_nanosleep",
	"usleep", "sleep", "pause", "sigsuspend", "__sigsuspend", "sigwait", "sigwaitinfo",
	"sigtimedwait", "wait", "__wait", "waitpid", "__waitpid", "wait3", "wait4", "__wait4",
	"waitid", "pthread_join", "pthread_timedjoin_np", "pthread_clockjoin_np",
	"pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
	"sem_wait", "sem_timedwait", "sem_clockwait", "pthread_mutex_lock",
	"__pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_clocklock",
	"pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_timedrdlock",
	"pthread_rwlock_timedwrlock", "pthread_rwlock_clockrdlock", "pthread_rwlock_clockwrlock",
	"pthread_barrier_wait", "pthread_spin_lock", "syscall", "msgrcv", "msgsnd", "mq_receive",
	"mq_timedreceive", "mq_send", "mq_timedsend", "flock", "fsync", "fdatasync",
	"sched_yield", "open", "open64", "__open", "__open64", "openat", "openat64", "close",
	"__close", "ioctl", "splice", "tee", "sendfile", "sendfile64", "getrandom",
	"fcntl", "fcntl64", "__fcntl", "lockf", "lockf64", "copy_file_range",
	"clock_gettime", "__clock_gettime", "gettimeofday", "time",
	/* stdio reads blocked in read(): they hold only their own stream's lock,
	 * which neither the loader nor the agent takes (the agent reads no
	 * stream); stdio writes are not here, as the agent may write to stderr */
	"fgets", "fgets_unlocked", "fgetc", "fgetc_unlocked", "getc", "_IO_getc", "getc_unlocked",
	"getchar", "getchar_unlocked", "fread", "_IO_fread", "fread_unlocked", "getline",
	"getdelim", "__getdelim", "_IO_getline", "_IO_getline_info", "fgetws", "fgetwc", "getwc",
	"getwchar", "scanf", "fscanf", "vscanf", "vfscanf", "__isoc99_scanf", "__isoc99_fscanf",
	"__isoc99_vscanf", "__isoc99_vfscanf", "__isoc23_scanf", "__isoc23_fscanf",
	"_IO_file_underflow", "__underflow", "__uflow", "_IO_default_uflow", "_IO_file_read",
	"__wunderflow", "__wuflow", "_IO_wfile_underflow",
	NULL,
};

static const char *const bottom_calls[] = {
	"__libc_start_main", "clone", "__clone", "clone3", "__clone3", NULL,
};

static bool in_list(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(*list, name))
			return true;
	return false;
}

static int fsym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->hi > y->hi) - (x->hi < y->hi);
}

/* Open the file behind a mapping: the very object mapped (map_files also works
 * when the file was replaced or deleted on disk), else through the process's
 * root (containers). Returns an fd or -errno. */
static int open_mapped(int pid, const struct mapping *mp)
{
	char fn[PATH_MAX + 64];
	int fd;

	snprintf(fn, sizeof fn, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, mp->lo, mp->hi);
	if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) >= 0)
		return fd;
	if (mp->path[0] == '/') {
		snprintf(fn, sizeof fn, "/proc/%d/root%s", pid, mp->path);
		if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) >= 0)
			return fd;
		if ((fd = open(mp->path, O_RDONLY | O_CLOEXEC)) >= 0)
			return fd;
	}
	return -errno;
}

/* Read the defined function symbols of .dynsym (the exported interface, which
 * survives stripping) and the lowest PT_LOAD address. syms false: none;
 * only_name: just that one; else all. Returns 0, or -1 with *cause (-2 when
 * the object is for another architecture). */
static int elf_read_syms(int fd, const char *what, bool syms, const char *only_name,
			 struct module *mod, uint64_t *min_vaddr, char **cause)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t nph, alloc = 0;
	int ret = -1;

	elf_version(EV_CURRENT);
	if (!(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		*cause = xasprintf("cannot read '%s': %s", what, elf_errmsg(-1));
		return -1;
	}
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		*cause = xasprintf("'%s' is not an ELF file", what);
		goto out;
	}
	if (gelf_getclass(elf) != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		*cause = xasprintf("'%s' is not an x86-64 object (only 64-bit x86 processes are supported)",
				   what);
		ret = -2;
		goto out;
	}
	*min_vaddr = UINT64_MAX;
	if (elf_getphdrnum(elf, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < *min_vaddr)
				*min_vaddr = ph.p_vaddr;
		}
	}
	if (*min_vaddr == UINT64_MAX)
		*min_vaddr = 0;
	*min_vaddr &= ~(uint64_t)0xfff;

	while (syms && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		if (!(data = elf_getdata(scn, NULL)))
			break;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			const char *name;
			int type;

			if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			type = GELF_ST_TYPE(s.st_info);
			if (type != STT_FUNC && type != STT_GNU_IFUNC)
				continue;
			if (!(name = elf_strptr(elf, sh.sh_link, s.st_name)) || !*name)
				continue;
			if (only_name && strcmp(name, only_name))
				continue;
			if (mod->nsyms == alloc) {
				alloc = alloc ? 2 * alloc : 1024;
				mod->syms = xrealloc(mod->syms, alloc * sizeof *mod->syms);
			}
			mod->syms[mod->nsyms++] = (struct fsym){
				.lo = s.st_value, .hi = s.st_value + s.st_size, .name = xstrdup(name),
				.flags = (in_list(blocking_calls, name) ? SYM_BLOCKING : 0) |
					 (in_list(bottom_calls, name) ? SYM_BOTTOM : 0),
			};
		}
		break;
	}
	if (mod->nsyms)
		qsort(mod->syms, mod->nsyms, sizeof *mod->syms, fsym_cmp);
	for (size_t i = 0; i < mod->nsyms; i++)
		mod->syms[i].shown = mod->syms[i].name;
	/* Aliases (read/__read) cover one range: merge their flags into each, so a
	 * lookup that lands on either sees the union. */
	for (size_t i = 0; i + 1 < mod->nsyms; i++) {
		size_t j = i + 1;
		while (j < mod->nsyms && mod->syms[j].lo == mod->syms[i].lo)
			j++;
		unsigned fl = 0;
		const char *best = mod->syms[i].name;
		for (size_t k = i; k < j; k++) {
			const char *nm = mod->syms[k].name;
			size_t u = strspn(nm, "_"), bu = strspn(best, "_");
			fl |= mod->syms[k].flags;
			if (u < bu || (u == bu && strlen(nm) < strlen(best)))
				best = nm;
		}
		for (size_t k = i; k < j; k++) {
			mod->syms[k].flags = fl;
			mod->syms[k].shown = best;
		}
		i = j - 1;
	}
	ret = 0;
out:
	elf_end(elf);
	return ret;
}

/* The exported function covering off (relative to the bias), or NULL. */
static const struct fsym *module_lookup(const struct module *mod, uint64_t off)
{
	size_t lo = 0, hi = mod->nsyms;

	/* last symbol with start <= off, then scan back over overlapping ones */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (mod->syms[mid].lo <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;) {
		if (mod->syms[i].lo <= off && off < mod->syms[i].hi)
			return &mod->syms[i];
		if (off - mod->syms[i].lo > (1u << 20))
			break;
	}
	return NULL;
}

static const struct fsym *module_find(const struct module *mod, const char *name)
{
	for (size_t i = 0; i < mod->nsyms; i++)
		if (!strcmp(mod->syms[i].name, name))
			return &mod->syms[i];
	return NULL;
}

/* Describe the object whose mappings have basename/path matching the
 * predicate (or the given dev/inode): address range and load bias. Symbols
 * are loaded when load_syms (only_name restricts them). Returns 1 when found,
 * 0 when not mapped, -1 with *cause on a read error (-2: another architecture). */
static int module_from_maps(int pid, const struct maps *m, bool (*pred)(const char *),
			    dev_t dev, uint64_t inode, bool load_syms, const char *only_name,
			    struct module *mod, char **cause)
{
	const struct mapping *first = NULL;
	uint64_t min_vaddr = 0;

	memset(mod, 0, sizeof *mod);
	for (size_t i = 0; i < m->n; i++) {
		const struct mapping *mp = &m->v[i];
		bool match;

		if (mp->path[0] != '/')
			continue;
		if (pred)
			match = pred(base_name(mp->path));
		else
			match = mp->inode == inode && makedev(mp->dev_major, mp->dev_minor) == dev;
		if (!match)
			continue;
		if (!first) {
			first = mp;
			mod->path = xstrdup(mp->path);
			mod->lo = mp->lo;
			mod->dev = makedev(mp->dev_major, mp->dev_minor);
			mod->inode = mp->inode;
		} else if (strcmp(mp->path, first->path) || mp->inode != first->inode) {
			continue;   /* a second, different object with a matching name */
		}
		if (mp->hi > mod->hi)
			mod->hi = mp->hi;
	}
	if (!first)
		return 0;
	/* The load bias comes from the mapping of file offset 0. */
	const struct mapping *zero = NULL;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].off == 0 && m->v[i].inode == mod->inode && !strcmp(m->v[i].path, mod->path)) {
			zero = &m->v[i];
			break;
		}
	if (!zero) {
		*cause = xasprintf("cannot find the load address of '%s'", mod->path);
		module_free(mod);
		return -1;
	}
	int fd = open_mapped(pid, zero);
	if (fd < 0) {
		*cause = xasprintf("cannot open '%s': %s", mod->path, strerror(-fd));
		module_free(mod);
		return -1;
	}
	int r = elf_read_syms(fd, mod->path, load_syms, only_name, mod, &min_vaddr, cause);
	close(fd);
	if (r < 0) {
		module_free(mod);
		return r;
	}
	mod->bias = zero->lo - min_vaddr;
	return 1;
}

static bool match_libc(const char *b) { return is_libc_name(b); }
static bool match_ldso(const char *b) { return is_ldso_name(b); }
static bool match_libdl(const char *b) { return !strcmp(b, "libdl.so.2") || !strncmp(b, "libdl-2.", 8); }
static bool match_libpthread(const char *b)
{
	return !strcmp(b, "libpthread.so.0") || !strncmp(b, "libpthread-2.", 13);
}
static bool match_agent(const char *b) { return !strcmp(b, AGENT_SONAME); }

/* The remote unwinder (libunwind-ptrace) reads unwind tables from the files
 * named in /proc/PID/maps, opened by path in our own mount namespace. Find an
 * executable mapping for which that would go wrong: the file of the program,
 * libc or the loader deleted or replaced since it was mapped (its stacks could
 * never be checked), or, for a process in another root (a container), a path
 * that names a different file for us than for it (wrong tables: unsafe).
 * Returns the path (in m) and sets *deleted, or NULL. */
static const char *unwind_blind_spot(int pid, const struct maps *m, bool *deleted)
{
	char fn[PATH_MAX + 64], exe[PATH_MAX];
	struct stat root_us, root_it, ours, theirs;
	ssize_t n;

	snprintf(fn, sizeof fn, "/proc/%d/exe", pid);
	n = readlink(fn, exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	*deleted = true;
	for (size_t i = 0; i < m->n; i++) {
		const struct mapping *mp = &m->v[i];
		const char *sfx = strstr(mp->path, " (deleted)");
		if (mp->perms[2] != 'x' || mp->path[0] != '/' || !sfx || sfx[10] != '\0')
			continue;
		const char *b = base_name(mp->path);
		if (is_libc_name(b) || is_ldso_name(b) || !strcmp(mp->path, exe))
			return mp->path;
	}
	*deleted = false;
	snprintf(fn, sizeof fn, "/proc/%d/root/", pid);
	if (stat("/", &root_us) < 0 || stat(fn, &root_it) < 0 ||
	    (root_us.st_dev == root_it.st_dev && root_us.st_ino == root_it.st_ino))
		return NULL;
	for (size_t i = 0; i < m->n; i++) {
		const struct mapping *mp = &m->v[i];
		if (mp->perms[2] != 'x' || mp->path[0] != '/' || strstr(mp->path, " (deleted)"))
			continue;
		snprintf(fn, sizeof fn, "/proc/%d/root%s", pid, mp->path);
		if (stat(fn, &theirs) < 0)
			continue;
		if (stat(mp->path, &ours) < 0 || ours.st_dev != theirs.st_dev ||
		    ours.st_ino != theirs.st_ino)
			return mp->path;
	}
	return NULL;
}

/* ---------------------------------------------------------------- /proc */

struct proc_status {
	char name[64];
	char state;
	int tgid, tracer;
	unsigned uid[4], gid[4];
	int seccomp;
};

/* Parse /proc/PID/status (or a task's). Returns 0 or -errno. */
static int read_status(const char *fn, struct proc_status *st)
{
	char line[512];
	FILE *f;

	memset(st, 0, sizeof *st);
	st->seccomp = -1;
	if (!(f = fopen(fn, "re")))
		return -errno;
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, "Name:", 5))
			sscanf(line + 5, " %63[^\n]", st->name);
		else if (!strncmp(line, "State:", 6))
			sscanf(line + 6, " %c", &st->state);
		else if (!strncmp(line, "Tgid:", 5))
			sscanf(line + 5, "%d", &st->tgid);
		else if (!strncmp(line, "TracerPid:", 10))
			sscanf(line + 10, "%d", &st->tracer);
		else if (!strncmp(line, "Uid:", 4))
			sscanf(line + 4, "%u %u %u %u", &st->uid[0], &st->uid[1], &st->uid[2], &st->uid[3]);
		else if (!strncmp(line, "Gid:", 4))
			sscanf(line + 4, "%u %u %u %u", &st->gid[0], &st->gid[1], &st->gid[2], &st->gid[3]);
		else if (!strncmp(line, "Seccomp:", 8))
			sscanf(line + 8, "%d", &st->seccomp);
	}
	fclose(f);
	return 0;
}

static int read_small_file(const char *fn, char *buf, size_t n)
{
	int fd = open(fn, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = read(fd, buf, n - 1);
	int e = errno;
	close(fd);
	if (r < 0)
		return -e;
	buf[r] = '\0';
	return (int)r;
}

/* Whether we hold CAP_SYS_PTRACE (bit 19 of CapEff). */
static bool have_cap_sys_ptrace(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	bool cap = false;

	if (!f)
		return geteuid() == 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long v;
		if (!strncmp(line, "CapEff:", 7) && sscanf(line + 7, "%llx", &v) == 1)
			cap = (v >> 19) & 1;
	}
	fclose(f);
	return cap;
}

static int yama_scope(void)
{
	char buf[32];
	if (read_small_file("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof buf) <= 0)
		return -1;
	return atoi(buf);
}

/* True when the process sits in a frozen cgroup (v2 cgroup.events "frozen 1",
 * or the v1 freezer in state FROZEN). */
static bool cgroup_frozen(int pid)
{
	char fn[PATH_MAX + 64], line[PATH_MAX];
	bool frozen = false;
	FILE *f;

	snprintf(fn, sizeof fn, "/proc/%d/cgroup", pid);
	if (!(f = fopen(fn, "re")))
		return false;
	while (!frozen && fgets(line, sizeof line, f)) {
		char buf[256], *path;
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "0::", 3)) {
			path = line + 3;
			snprintf(fn, sizeof fn, "/sys/fs/cgroup%s/cgroup.events", path);
			if (read_small_file(fn, buf, sizeof buf) > 0 && strstr(buf, "frozen 1"))
				frozen = true;
		} else if ((path = strstr(line, ":freezer:"))) {
			path += 9;
			snprintf(fn, sizeof fn, "/sys/fs/cgroup/freezer%s/freezer.state", path);
			if (read_small_file(fn, buf, sizeof buf) > 0 &&
			    (!strncmp(buf, "FROZEN", 6) || !strncmp(buf, "FREEZING", 8)))
				frozen = true;
		}
	}
	fclose(f);
	return frozen;
}

/* ---------------------------------------------------------------- threads */

enum cand_class {
	CAND_RESTARTABLE,       /* blocked in a system call that restarts transparently */
	CAND_RUNNING,           /* running user code: needs the stack check */
	CAND_SOCKET,            /* socket calls: may return EINTR when they have a timeout */
	CAND_SKIP,              /* never interrupted */
};

struct cand {
	int tid;
	enum cand_class cls;
	long nr;                /* system call number, -1 when not in one */
	char why[96];           /* last reason it was not used */
};

/* System calls after which a stop makes the call fail with EINTR (signal(7),
 * "Interruption of system calls ... by stop signals"): never interrupt them. */
static bool eintr_prone(long nr)
{
	switch (nr) {
	case SYS_epoll_wait: case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_semop: case SYS_semtimedop: case SYS_rt_sigtimedwait:
		return true;
	}
	return false;
}

/* The allocator's own system calls: a thread in one holds an arena lock. Also
 * process-creation calls, whose state must not be disturbed. */
static bool allocator_or_process_syscall(long nr)
{
	switch (nr) {
	case SYS_mmap: case SYS_munmap: case SYS_mremap: case SYS_brk: case SYS_madvise:
	case SYS_mprotect: case SYS_vfork: case SYS_clone: case SYS_execve: case SYS_execveat:
	case SYS_exit: case SYS_exit_group:
#ifdef SYS_clone3
	case SYS_clone3:
#endif
		return true;
	}
	return false;
}

static bool socket_syscall(long nr)
{
	switch (nr) {
	case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg: case SYS_sendto:
	case SYS_sendmsg: case SYS_sendmmsg: case SYS_accept: case SYS_accept4: case SYS_connect:
		return true;
	}
	return false;
}

static const char *syscall_name(long nr)
{
	switch (nr) {
	case SYS_read: return "read";
	case SYS_write: return "write";
	case SYS_poll: return "poll";
	case SYS_ppoll: return "ppoll";
	case SYS_select: return "select";
	case SYS_pselect6: return "pselect6";
	case SYS_nanosleep: return "nanosleep";
	case SYS_clock_nanosleep: return "clock_nanosleep";
	case SYS_futex: return "futex";
	case SYS_wait4: return "wait4";
	case SYS_waitid: return "waitid";
	case SYS_pause: return "pause";
	case SYS_rt_sigsuspend: return "rt_sigsuspend";
	case SYS_epoll_wait: return "epoll_wait";
	case SYS_epoll_pwait: return "epoll_pwait";
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2: return "epoll_pwait2";
#endif
	case SYS_semop: return "semop";
	case SYS_semtimedop: return "semtimedop";
	case SYS_rt_sigtimedwait: return "rt_sigtimedwait";
	case SYS_mmap: return "mmap";
	case SYS_munmap: return "munmap";
	case SYS_mremap: return "mremap";
	case SYS_brk: return "brk";
	case SYS_madvise: return "madvise";
	case SYS_mprotect: return "mprotect";
	case SYS_recvfrom: return "recvfrom";
	case SYS_recvmsg: return "recvmsg";
	case SYS_accept: return "accept";
	case SYS_accept4: return "accept4";
	case SYS_sendto: return "sendto";
	case SYS_sendmsg: return "sendmsg";
	case SYS_connect: return "connect";
	case SYS_vfork: return "vfork";
	case SYS_clone: return "clone";
	case SYS_execve: return "execve";
	}
	return NULL;
}

/* Classify a thread from outside, without stopping it: its state letter and
 * /proc/PID/task/TID/syscall ("running", "-1 sp pc", or "nr args... sp pc"). */
static void cand_classify(int pid, struct cand *c)
{
	char fn[96], buf[256];
	struct proc_status st;

	c->nr = -1;
	c->cls = CAND_RUNNING;
	c->why[0] = '\0';
	snprintf(fn, sizeof fn, "/proc/%d/task/%d/status", pid, c->tid);
	if (read_status(fn, &st) < 0) {
		c->cls = CAND_SKIP;
		snprintf(c->why, sizeof c->why, "exited");
		return;
	}
	if (st.state == 'Z' || st.state == 'X' || st.state == 'T' || st.state == 't' ||
	    st.state == 'D') {
		c->cls = CAND_SKIP;
		snprintf(c->why, sizeof c->why, "in state %c", st.state);
		return;
	}
	snprintf(fn, sizeof fn, "/proc/%d/task/%d/syscall", pid, c->tid);
	if (read_small_file(fn, buf, sizeof buf) <= 0 || !strncmp(buf, "running", 7))
		return;
	c->nr = strtol(buf, NULL, 10);
	if (c->nr < 0)
		return;
	const char *name = syscall_name(c->nr);
	char nm[32];
	if (!name) {
		snprintf(nm, sizeof nm, "system call %ld", c->nr);
		name = nm;
	}
	if (eintr_prone(c->nr)) {
		c->cls = CAND_SKIP;
		snprintf(c->why, sizeof c->why, "in %s (would see EINTR)", name);
	} else if (allocator_or_process_syscall(c->nr)) {
		c->cls = CAND_SKIP;
		snprintf(c->why, sizeof c->why, "in %s", name);
	} else if (socket_syscall(c->nr)) {
		c->cls = CAND_SOCKET;
	} else {
		c->cls = CAND_RESTARTABLE;
	}
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->cls != y->cls)
		return (int)x->cls - (int)y->cls;
	return x->tid - y->tid;
}

/* List the threads of pid, best candidates first. Returns the count, or -errno. */
static int list_threads(int pid, struct cand **out)
{
	char fn[64];
	struct dirent *de;
	struct cand *v = NULL;
	size_t n = 0, alloc = 0;
	DIR *d;

	snprintf(fn, sizeof fn, "/proc/%d/task", pid);
	if (!(d = opendir(fn)))
		return -errno;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 16;
			v = xrealloc(v, alloc * sizeof *v);
		}
		memset(&v[n], 0, sizeof v[n]);
		v[n].tid = atoi(de->d_name);
		cand_classify(pid, &v[n]);
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof *v, cand_cmp);
	*out = v;
	return (int)n;
}

/* ---------------------------------------------------------------- ptrace */

static double ms_since(uint64_t t0)
{
	return (double)(mono_ns() - t0) / 1e6;
}

static void nap_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* Wait for a state change of tid for up to timeout_ms. Returns 1 with *status,
 * 0 on timeout, -errno on error (-ECHILD: not our tracee any more). Polls so
 * that a timeout needs no signal and no thread. */
static int wait_tid(int tid, int *status, unsigned timeout_ms)
{
	uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000u;
	unsigned nap = 20;

	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		if (r == tid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (mono_ns() >= end)
			return 0;
		nap_us(nap);
		if (nap < 1000)
			nap *= 2;
	}
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static bool is_fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP ||
	       sig == SIGSYS;
}

/* One seized thread and what must be given back to it at detach. */
struct seized {
	int tid;
	bool seized, stopped;
	int pending_sig;        /* held at a signal-delivery-stop: delivered at detach */
	int pending_stop;       /* a stop signal that arrived during a call: re-raised */
	bool regs_saved;
	struct user_regs_struct regs;
	unsigned char *xstate;
	size_t xstate_len;
	bool xstate_is_fp;      /* fallback: only the legacy FP state could be saved */
	bool dr_armed;          /* our hardware breakpoint is in DR0/DR7 */
	long saved_dr0, saved_dr7;
	uint64_t t_interrupt;
	double ran_ms;          /* time it ran free to a return address: not a pause */
};

/* Outcome of waiting for a stop. */
enum stop_result {
	STOP_OK = 0,
	STOP_GONE = -1,         /* the thread (or process) exited */
	STOP_TIMEOUT = -2,
	STOP_GROUP = -3,        /* the process is in a job-control stop */
	STOP_FAULT = -4,        /* the thread is taking a fault signal: left to it */
	STOP_ERROR = -5,
};

/* Seize tid and bring it to an interrupt stop. A signal dequeued meanwhile is
 * delivered at once (a fault signal instead makes us let go, delivering it).
 * The caller releases the thread in every case; one that never stops stays
 * seized until it does (the kernel detaches it at the latest when we exit). */
static int seize_and_stop(struct seized *s, int *err)
{
	int status, r;

	*err = 0;
	if (ptrace(PTRACE_SEIZE, s->tid, NULL, NULL) < 0) {
		*err = errno;
		return STOP_ERROR;
	}
	s->seized = true;
	s->t_interrupt = mono_ns();
	if (ptrace(PTRACE_INTERRUPT, s->tid, NULL, NULL) < 0) {
		*err = errno;
		return errno == ESRCH ? STOP_GONE : STOP_ERROR;
	}
	for (;;) {
		r = wait_tid(s->tid, &status, STOP_TIMEOUT_MS);
		if (r == 0)
			return STOP_TIMEOUT;
		if (r < 0) {
			*err = -r;
			s->seized = false;
			return STOP_GONE;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			s->seized = false;
			return STOP_GONE;
		}
		if (!WIFSTOPPED(status))
			continue;
		int sig = WSTOPSIG(status), event = status >> 16;
		if (event == PTRACE_EVENT_STOP) {
			s->stopped = true;
			if (sig == SIGTRAP)
				return STOP_OK;
			return STOP_GROUP;
		}
		if (event != 0) {
			ptrace(PTRACE_CONT, s->tid, NULL, NULL);
			continue;
		}
		/* A signal-delivery-stop before our interrupt was reported. Nothing
		 * has been changed yet, so it is delivered now, as it would have
		 * been (a signal given when resuming from the interrupt stop would
		 * be dropped by the kernel). A fault signal means the thread is not
		 * worth vetting: let go, delivering it. */
		s->stopped = true;
		if (is_fault_signal(sig)) {
			s->pending_sig = sig;
			return STOP_FAULT;
		}
		s->stopped = false;
		if (ptrace(PTRACE_CONT, s->tid, NULL, (void *)(long)sig) < 0) {
			*err = errno;
			return errno == ESRCH ? STOP_GONE : STOP_ERROR;
		}
	}
}

#define DR_OFFSET(i) (offsetof(struct user, u_debugreg) + (i) * sizeof(long))

/* Put the thread's debug registers back as they were (the thread is stopped). */
static void disarm(struct seized *s)
{
	if (!s->dr_armed || !s->stopped)
		return;
	ptrace(PTRACE_POKEUSER, s->tid, (void *)DR_OFFSET(7), (void *)s->saved_dr7);
	ptrace(PTRACE_POKEUSER, s->tid, (void *)DR_OFFSET(0), (void *)s->saved_dr0);
	s->dr_armed = false;
}

/* Let go of a thread: give back registers if asked, then detach re-delivering
 * what it was about to receive. Safe to call in any state. */
static void release(int pid, struct seized *s, bool restore)
{
	if (!s->seized)
		goto out;
	if (!s->stopped) {
		/* a running tracee cannot be detached: stop it first */
		int status;
		if (ptrace(PTRACE_INTERRUPT, s->tid, NULL, NULL) == 0) {
			for (int i = 0; i < 20; i++) {
				int r = wait_tid(s->tid, &status, 100);
				if (r < 0 || (r == 1 && (WIFEXITED(status) || WIFSIGNALED(status)))) {
					s->seized = false;
					goto out;
				}
				if (r == 1 && WIFSTOPPED(status)) {
					int sig = WSTOPSIG(status);
					struct user_regs_struct now;
					if ((status >> 16) == 0 && sig == SIGSEGV &&
					    ptrace(PTRACE_GETREGS, s->tid, NULL, &now) == 0 &&
					    now.rip == MAGIC_RETURN) {
						/* a late return from our call: now it can be undone */
						s->stopped = true;
						restore = true;
						break;
					}
					if ((status >> 16) == 0 && !is_stop_signal(sig)) {
						/* a signal on its way: let it through, keep waiting */
						ptrace(PTRACE_CONT, s->tid, NULL, (void *)(long)sig);
						continue;
					}
					if ((status >> 16) == 0)
						s->pending_sig = sig;   /* a stop signal: detach delivers it */
					s->stopped = true;
					break;
				}
			}
		}
	}
	disarm(s);
	if (restore && s->regs_saved && s->stopped) {
		if (s->xstate) {
			if (s->xstate_is_fp) {
				ptrace(PTRACE_SETFPREGS, s->tid, NULL, s->xstate);
			} else {
				struct iovec iov = { s->xstate, s->xstate_len };
				ptrace(PTRACE_SETREGSET, s->tid, (void *)NT_X86_XSTATE, &iov);
			}
		}
		ptrace(PTRACE_SETREGS, s->tid, NULL, &s->regs);
	}
	ptrace(PTRACE_DETACH, s->tid, NULL, (void *)(long)s->pending_sig);
	s->seized = false;
	if (s->pending_stop)
		kill(pid, s->pending_stop);
out:
	free(s->xstate);
	s->xstate = NULL;
	s->stopped = false;
}

/* Save the general registers of the stopped thread (enough to vet it). */
static int save_regs(struct seized *s, int *err)
{
	if (ptrace(PTRACE_GETREGS, s->tid, NULL, &s->regs) < 0) {
		*err = errno;
		return -1;
	}
	s->regs_saved = true;
	return 0;
}

/* Save the extended state (x87, SSE, AVX...) of the thread chosen: the thread
 * stopped at an arbitrary instruction, so all of it is live. */
static int save_xstate(struct seized *s, int *err)
{
	s->xstate = xmalloc(XSTATE_MAX);
	struct iovec iov = { s->xstate, XSTATE_MAX };
	if (ptrace(PTRACE_GETREGSET, s->tid, (void *)NT_X86_XSTATE, &iov) == 0) {
		s->xstate_len = iov.iov_len;
	} else if (ptrace(PTRACE_GETFPREGS, s->tid, NULL, s->xstate) == 0) {
		s->xstate_is_fp = true;
		s->xstate_len = sizeof(struct user_fpregs_struct);
	} else {
		*err = errno;
		free(s->xstate);
		s->xstate = NULL;
		return -1;
	}
	return 0;
}

/* Let a thread that was stopped inside libc or the loader run until it returns
 * into the application at addr (a return address on its stack): there every
 * function above has returned and released its locks. The thread runs alone
 * to that point under a hardware execution breakpoint, which lives in its own
 * debug registers: no code is written and no other thread can hit it. Returns
 * STOP_OK with the thread stopped at addr (s->regs refreshed), or STOP_TIMEOUT
 * (stopped again elsewhere), STOP_GROUP, STOP_GONE or STOP_ERROR. */
static int run_to_return(struct seized *s, uint64_t addr, unsigned timeout_ms)
{
	int status, r;

	errno = 0;
	long dr7 = ptrace(PTRACE_PEEKUSER, s->tid, (void *)DR_OFFSET(7), NULL);
	if (errno || (dr7 & 0xff))
		return STOP_ERROR;      /* debug registers in use (a debugger's watchpoint) */
	long dr0 = ptrace(PTRACE_PEEKUSER, s->tid, (void *)DR_OFFSET(0), NULL);
	if (errno)
		return STOP_ERROR;
	s->saved_dr0 = dr0;
	s->saved_dr7 = dr7;
	/* DR0 = addr; DR7: L0 enabled, break on execution (R/W0 = 00, LEN0 = 00) */
	if (ptrace(PTRACE_POKEUSER, s->tid, (void *)DR_OFFSET(0), (void *)addr) < 0)
		return STOP_ERROR;
	s->dr_armed = true;
	if (ptrace(PTRACE_POKEUSER, s->tid, (void *)DR_OFFSET(7), (void *)(dr7 | 1)) < 0 ||
	    ptrace(PTRACE_CONT, s->tid, NULL, NULL) < 0) {
		disarm(s);
		return errno == ESRCH ? STOP_GONE : STOP_ERROR;
	}
	s->stopped = false;
	uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000u;
	bool interrupted = false;
	for (;;) {
		uint64_t now = mono_ns();
		unsigned left = now >= end ? 0 : (unsigned)((end - now) / 1000000u) + 1;
		r = wait_tid(s->tid, &status, interrupted ? STOP_TIMEOUT_MS : left);
		if (r == 0 && !interrupted) {
			/* still not back: stop it wherever it is */
			if (ptrace(PTRACE_INTERRUPT, s->tid, NULL, NULL) < 0)
				return STOP_ERROR;
			interrupted = true;
			continue;
		}
		if (r == 0)
			return STOP_TIMEOUT;    /* not even stopped: release() retries */
		if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
			s->seized = false;
			s->dr_armed = false;
			return STOP_GONE;
		}
		if (!WIFSTOPPED(status))
			continue;
		int sig = WSTOPSIG(status), event = status >> 16;
		s->stopped = true;
		if (event == PTRACE_EVENT_STOP) {
			disarm(s);
			if (is_stop_signal(sig))
				return STOP_GROUP;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &s->regs) < 0)
				return STOP_ERROR;
			return STOP_TIMEOUT;
		}
		if (event == 0 && sig == SIGTRAP) {
			struct user_regs_struct now_regs;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &now_regs) == 0 && now_regs.rip == addr) {
				/* there; the SIGTRAP is never delivered (resumed with 0) */
				disarm(s);
				s->regs = now_regs;
				return STOP_OK;
			}
		}
		/* any other signal goes to the program as it would have */
		if (ptrace(PTRACE_CONT, s->tid, NULL, (void *)(long)(event ? 0 : sig)) < 0) {
			if (errno == ESRCH) {
				s->seized = false;
				s->dr_armed = false;
				return STOP_GONE;
			}
		}
		s->stopped = false;
	}
}

/* ---------------------------------------------------------------- the safe-point rule */

enum frame_kind { FK_APP, FK_LDSO, FK_VDSO, FK_LIBC, FK_AGENT };

struct classifier {
	struct module libc, libpthread, ldso;
	uint64_t vdso_lo, vdso_hi;
	uint64_t agent_lo, agent_hi;    /* an agent already loaded: its hooks take locks */
	struct maps maps;
	unw_addr_space_t as;
};

/* What an address is: application (including other libraries), the loader,
 * the vDSO, or libc; for libc, the exported function covering it (or NULL
 * when the address is in libc-internal code). */
static enum frame_kind classify_ip(const struct classifier *cl, uint64_t ip, const struct fsym **sym)
{
	*sym = NULL;
	if (cl->ldso.hi && ip >= cl->ldso.lo && ip < cl->ldso.hi)
		return FK_LDSO;
	if (ip >= cl->vdso_lo && ip < cl->vdso_hi)
		return FK_VDSO;
	if (ip >= cl->agent_lo && ip < cl->agent_hi)
		return FK_AGENT;
	if (ip >= cl->libc.lo && ip < cl->libc.hi) {
		*sym = module_lookup(&cl->libc, ip - cl->libc.bias);
		return FK_LIBC;
	}
	if (cl->libpthread.hi && ip >= cl->libpthread.lo && ip < cl->libpthread.hi) {
		*sym = module_lookup(&cl->libpthread, ip - cl->libpthread.bias);
		return FK_LIBC;
	}
	return FK_APP;
}

/* Unwind the stopped thread and decide whether it may call dlopen: it must not
 * hold any lock that the loader or malloc takes. Accepted: a thread blocked in
 * an allow-listed libc call made by the application, or running application
 * code; libc may appear under the application only as the bottom frames of a
 * thread or of main. Returns true, or false with *why. */
/* Whether frames from..n-1 are fit to sit under the hijacked call: application
 * code, with libc only as the bottom frames of a thread or of main. */
static bool app_tail_ok(const enum frame_kind *kinds, const struct fsym *const *syms, int from,
			int n, char *why, size_t whylen)
{
	for (int i = from; i < n; i++) {
		if (kinds[i] == FK_APP)
			continue;
		if (kinds[i] == FK_LIBC && i >= n - 3 && (!syms[i] || (syms[i]->flags & SYM_BOTTOM)))
			continue;
		if (kinds[i] == FK_LDSO)
			snprintf(why, whylen, "called from the dynamic loader (a constructor?)");
		else if (kinds[i] == FK_LIBC && syms[i])
			snprintf(why, whylen, "in a callback from %s", syms[i]->shown);
		else {
			/* internal helpers (msort...): name the exported caller below */
			int k = i;
			while (k < n && kinds[k] == FK_LIBC && !syms[k])
				k++;
			if (k < n && kinds[k] == FK_LIBC && syms[k])
				snprintf(why, whylen, "in a callback from %s", syms[k]->shown);
			else
				snprintf(why, whylen, "in a callback from libc");
		}
		return false;
	}
	return true;
}

static bool safe_point(struct classifier *cl, int tid, uint64_t rip, uint64_t *run_to, char *why,
		       size_t whylen)
{
	uint64_t ips[MAX_FRAMES];
	const struct fsym *syms[MAX_FRAMES];
	enum frame_kind kinds[MAX_FRAMES];
	int n = 0, r;
	unw_cursor_t cur;
	void *upt;
	const struct fsym *top;

	*run_to = 0;
	/* Refusals that need no unwinding (which costs a millisecond over ptrace) */
	switch (classify_ip(cl, rip, &top)) {
	case FK_AGENT:
		snprintf(why, whylen, "inside the memwatch agent");
		return false;
	case FK_VDSO:
		/* libunwind-ptrace cannot read the vDSO's unwind tables (it has no
		 * file): the stack below could not be checked */
		snprintf(why, whylen, "in the vDSO (clock_gettime...)");
		return false;
	default:
		break;
	}
	if (!(upt = _UPT_create(tid))) {
		snprintf(why, whylen, "cannot unwind");
		return false;
	}
	if ((r = unw_init_remote(&cur, cl->as, upt)) < 0) {
		snprintf(why, whylen, "cannot unwind: %s", unw_strerror(r));
		_UPT_destroy(upt);
		return false;
	}
	bool ok = true;
	for (;;) {
		unw_word_t ip;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		if (n > 0 && unw_is_signal_frame(&cur) > 0) {
			snprintf(why, whylen, "running a signal handler");
			ok = false;
			break;
		}
		if (n == MAX_FRAMES) {
			snprintf(why, whylen, "stack deeper than %d frames", MAX_FRAMES);
			ok = false;
			break;
		}
		ips[n] = ip;
		/* a return address points after the call, maybe past the caller's end */
		kinds[n] = classify_ip(cl, n ? ip - 1 : ip, &syms[n]);
		n++;
		r = unw_step(&cur);
		if (r == 0)
			break;
		if (r < 0) {
			/* The walk may end in garbage below the outermost frame; that is
			 * fine only once a bottom frame (or main's _start) was seen. */
			bool bottom = kinds[n - 1] == FK_LIBC &&
				      (!syms[n - 1] || (syms[n - 1]->flags & SYM_BOTTOM));
			if (!bottom) {
				snprintf(why, whylen, "cannot unwind past %#" PRIx64 ": %s", (uint64_t)ip,
					 unw_strerror(r));
				ok = false;
			}
			break;
		}
	}
	_UPT_destroy(upt);
	if (getenv("MEMWATCH_INJECT_DEBUG")) {
		static const char *const kn[] = { "app", "ld.so", "vdso", "libc", "agent" };
		for (int k = 0; k < n; k++)
			fprintf(stderr, "inject:   #%d %#" PRIx64 " %s %s\n", k, ips[k], kn[kinds[k]],
				syms[k] ? syms[k]->shown : "");
	}
	if (!ok)
		return false;
	if (n == 0) {
		snprintf(why, whylen, "no stack");
		return false;
	}

	/* A thread inside the agent (a hook, the sampler) may hold its locks,
	 * which its start function could need. */
	for (int k = 0; k < n; k++)
		if (kinds[k] == FK_AGENT) {
			snprintf(why, whylen, "inside the memwatch agent");
			return false;
		}

	int i = 0;
	bool top_ok = true;
	/* top: libc-internal code (lock waits, cancellation points)... */
	while (i < n && kinds[i] == FK_LIBC && !syms[i])
		i++;
	int internal_top = i;
	/* ...under allow-listed blocking calls made by the application */
	while (i < n && kinds[i] == FK_LIBC && syms[i] && (syms[i]->flags & SYM_BLOCKING))
		i++;
	if (internal_top && i == internal_top && i < n) {
		if (kinds[i] == FK_LIBC && syms[i])
			snprintf(why, whylen, "in %s", syms[i]->shown);
		else
			snprintf(why, whylen, "inside libc (internal code at %#" PRIx64 ")", ips[0]);
		top_ok = false;
	} else if (i < n && kinds[i] == FK_LDSO) {
		snprintf(why, whylen, "in the dynamic loader");
		top_ok = false;
	} else if (i < n && kinds[i] == FK_LIBC) {
		if (syms[i])
			snprintf(why, whylen, "in %s", syms[i]->shown);
		else
			snprintf(why, whylen, "inside libc (%#" PRIx64 ") under %s", ips[i],
				 i ? syms[i - 1]->shown : "?");
		top_ok = false;
	}
	if (!top_ok) {
		/* Stopped inside libc or the loader, called from the application:
		 * once that call returns, nothing above holds a lock. Worth running
		 * to that return address if the stack below it is fit. */
		int k = i;
		while (k < n && kinds[k] != FK_APP)
			k++;
		char tail_why[96];
		if (k > 0 && k < n && app_tail_ok(kinds, syms, k, n, tail_why, sizeof tail_why))
			*run_to = ips[k];
		return false;
	}
	if (i == n) {
		snprintf(why, whylen, "no application frame on the stack");
		return false;
	}
	/* application frames; libc again only at the very bottom */
	return app_tail_ok(kinds, syms, i, n, why, whylen);
}

/* ---------------------------------------------------------------- remote calls */

/* Copy len bytes into the target at addr. */
static int poke(int pid, int tid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = { (void *)buf, len }, r = { (void *)addr, len };
	if (process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)len)
		return 0;
	/* fall back to word writes (process_vm_writev may be filtered) */
	const unsigned char *p = buf;
	for (size_t i = 0; i < len; i += sizeof(long)) {
		long w;
		size_t k = len - i < sizeof(long) ? len - i : sizeof(long);
		if (k < sizeof(long)) {
			errno = 0;
			w = ptrace(PTRACE_PEEKDATA, tid, (void *)(addr + i), NULL);
			if (errno)
				return -errno;
		}
		memcpy(&w, p + i, k);
		if (ptrace(PTRACE_POKEDATA, tid, (void *)(addr + i), (void *)w) < 0)
			return -errno;
	}
	return 0;
}

/* Read a NUL-terminated string of at most n-1 bytes from the target. */
static void peek_string(int pid, int tid, uint64_t addr, char *buf, size_t n)
{
	struct iovec l = { buf, n - 1 }, r = { (void *)addr, n - 1 };
	ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

	if (got <= 0) {
		size_t i;
		for (i = 0; i + sizeof(long) <= n - 1; i += sizeof(long)) {
			errno = 0;
			long w = ptrace(PTRACE_PEEKDATA, tid, (void *)(addr + i), NULL);
			if (errno)
				break;
			memcpy(buf + i, &w, sizeof w);
			if (memchr(&w, 0, sizeof w))
				break;
		}
		got = (ssize_t)i + (ssize_t)sizeof(long);
		if (got > (ssize_t)n - 1)
			got = (ssize_t)n - 1;
	}
	buf[got > 0 ? got : 0] = '\0';
	buf[n - 1] = '\0';
}

/* Whether the SIGSYS the thread is stopped with comes from a seccomp filter
 * (not kill) and the program does not catch SIGSYS (SigCgt in its status). */
static bool seccomp_trap_unhandled(int pid, int tid)
{
	siginfo_t si;
	char fn[64], line[256];
	bool caught = false;
	FILE *f;

	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0 || si.si_code != SYS_SECCOMP)
		return false;
	snprintf(fn, sizeof fn, "/proc/%d/status", pid);
	if (!(f = fopen(fn, "re")))
		return true;
	while (fgets(line, sizeof line, f)) {
		unsigned long long mask;
		if (!strncmp(line, "SigCgt:", 7) && sscanf(line + 7, "%llx", &mask) == 1)
			caught = (mask >> (SIGSYS - 1)) & 1;
	}
	fclose(f);
	return !caught;
}

enum call_result {
	CALL_OK = 0,
	CALL_GONE = -1,         /* the process exited or was killed */
	CALL_TIMEOUT = -2,      /* the function did not return: state cannot be rolled back */
	CALL_ERROR = -3,        /* a ptrace request failed before the call started */
	CALL_CRASH = -4,        /* the process died of a fault during the call */
};

/* Make the stopped thread call fn(arg0, arg1) where arg0 may be a string copied
 * onto its stack (str != NULL). The frame goes below the red zone, 16-byte
 * aligned as at any call; the return address is MAGIC_RETURN. Signals arriving
 * meanwhile are delivered (their handlers run on top of our frame), stop
 * signals are held. *ret gets rax. */
static enum call_result remote_call(int pid, struct seized *s, uint64_t fn, const char *str,
				    uint64_t arg1, uint64_t *ret, unsigned timeout_ms, char *msg,
				    size_t msglen)
{
	struct user_regs_struct r = s->regs;
	size_t slen = str ? strlen(str) + 1 : 0;
	uint64_t top = s->regs.rsp - RED_ZONE;
	uint64_t straddr = (top - slen) & ~(uint64_t)15;
	uint64_t sp = straddr - 8;
	size_t blen = (size_t)(top - sp);
	unsigned char *block = xcalloc(1, blen);
	uint64_t magic = MAGIC_RETURN;
	int status, w;

	memcpy(block, &magic, 8);
	if (str)
		memcpy(block + 8, str, slen);
	if (poke(pid, s->tid, sp, block, blen) < 0) {
		snprintf(msg, msglen, "cannot write the call frame: %s", strerror(errno));
		free(block);
		return CALL_ERROR;
	}
	free(block);
	r.rsp = sp;
	r.rip = fn;
	r.rdi = str ? straddr : 0;
	r.rsi = arg1;
	r.rax = 0;
	r.eflags &= ~(1ULL << 10);          /* DF, as the ABI wants at any call */
	r.orig_rax = (uint64_t)-1;          /* no syscall restart into our call */
	if (ptrace(PTRACE_SETREGS, s->tid, NULL, &r) < 0) {
		snprintf(msg, msglen, "PTRACE_SETREGS: %s", strerror(errno));
		return CALL_ERROR;
	}
	if (ptrace(PTRACE_CONT, s->tid, NULL, NULL) < 0) {
		snprintf(msg, msglen, "PTRACE_CONT: %s", strerror(errno));
		return errno == ESRCH ? CALL_GONE : CALL_ERROR;
	}
	s->stopped = false;
	uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		uint64_t now = mono_ns();
		if (now >= end)
			return CALL_TIMEOUT;
		w = wait_tid(s->tid, &status, (unsigned)((end - now) / 1000000u) + 1);
		if (w == 0)
			return CALL_TIMEOUT;
		if (w < 0 || WIFEXITED(status)) {
			s->seized = false;
			return CALL_GONE;
		}
		if (WIFSIGNALED(status)) {
			s->seized = false;
			snprintf(msg, msglen, "the process was killed by signal %d (%s)", WTERMSIG(status),
				 strsignal(WTERMSIG(status)));
			return is_fault_signal(WTERMSIG(status)) ? CALL_CRASH : CALL_GONE;
		}
		if (!WIFSTOPPED(status))
			continue;
		s->stopped = true;
		int sig = WSTOPSIG(status), event = status >> 16;
		int deliver = 0;
		if (event == PTRACE_EVENT_STOP) {
			/* a job-control stop of the process: finish our call first, stop after */
			if (is_stop_signal(sig))
				s->pending_stop = sig;
		} else if (event != 0) {
			/* an event we did not ask for: ignore */
		} else if (sig == SIGSEGV) {
			struct user_regs_struct now_regs;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &now_regs) < 0) {
				s->seized = errno != ESRCH;
				return CALL_GONE;
			}
			if (now_regs.rip == MAGIC_RETURN) {
				*ret = now_regs.rax;
				return CALL_OK;
			}
			snprintf(msg, msglen, "segmentation fault at %#llx during the call",
				 (unsigned long long)now_regs.rip);
			deliver = sig;
		} else if (sig == SIGSYS && seccomp_trap_unhandled(pid, s->tid)) {
			/* A seccomp filter trapped a system call of the loader and the
			 * program has no SIGSYS handler to emulate it: make the call fail
			 * with EPERM instead of letting SIGSYS kill the process (the
			 * kernel rolled rax back to the system call number). */
			struct user_regs_struct now_regs;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &now_regs) == 0) {
				now_regs.rax = (uint64_t)-EPERM;
				ptrace(PTRACE_SETREGS, s->tid, NULL, &now_regs);
			}
			snprintf(msg, msglen, "a seccomp filter blocked a system call");
		} else if (is_stop_signal(sig)) {
			s->pending_stop = sig;
		} else {
			deliver = sig;
		}
		if (ptrace(PTRACE_CONT, s->tid, NULL, (void *)(long)deliver) < 0) {
			if (errno == ESRCH) {
				s->seized = false;
				return CALL_GONE;
			}
		}
		s->stopped = false;
	}
}

/* ---------------------------------------------------------------- inject_agent */

struct injector {
	int pid;
	const char *options;
	char *agent_abs;            /* absolute path of the agent file */
	struct stat agent_st;
	struct proc_status st;
	uint64_t dlopen_addr, dlerror_addr;
	bool dlopen_is_private;     /* __libc_dlopen_mode */
	uint64_t start_off;         /* memwatch_agent_start in the agent file, relative to its bias */
	struct module loaded;       /* the agent already mapped (already_loaded) */
	struct classifier cl;
	unsigned long long start_time;  /* of the process: tells a reused pid apart */
	int busy_by;                /* INJECT_EBUSY: the memwatch that is attaching */
};

/* Internal to this file: another memwatch is attaching to the process. */
#define INJECT_EBUSY 100

/* Field 22 of /proc/PID/stat (start time in clock ticks), or 0. */
static unsigned long long proc_start_time(int pid)
{
	char fn[64], buf[1024], *p;
	unsigned long long t = 0;

	snprintf(fn, sizeof fn, "/proc/%d/stat", pid);
	if (read_small_file(fn, buf, sizeof buf) <= 0 || !(p = strrchr(buf, ')')))
		return 0;
	/* after "pid (comm)": state is field 3, starttime field 22 */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
		   "%*d %*d %llu", &t) != 1)
		return 0;
	return t;
}

/* Whether the stopped thread is still one of the process we prepared for:
 * neither the pid nor the thread id was reused by another process meanwhile (a
 * stopped thread cannot change process, so this holds until we let go).
 * Returns 1 when it is, 0 when the thread is another's (the process lives
 * on), -1 when the process itself is gone. */
static int still_ours(const struct injector *ij, int tid)
{
	char fn[96];
	struct proc_status st;

	if (proc_start_time(ij->pid) != ij->start_time)
		return -1;
	snprintf(fn, sizeof fn, "/proc/%d/task/%d/status", ij->pid, tid);
	if (read_status(fn, &st) < 0 || st.tgid != ij->pid)
		return 0;
	return 1;
}

/* Set the error and return its negated kind. */
static int fail(int kind, char **cause, char **hint, const char *h, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int fail(int kind, char **cause, char **hint, const char *h, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(*cause);
	*cause = xvasprintf(fmt, ap);
	va_end(ap);
	free(*hint);
	*hint = h ? xstrdup(h) : NULL;
	return -kind;
}

static bool process_exists(int pid)
{
	char fn[64];
	struct proc_status st;
	snprintf(fn, sizeof fn, "/proc/%d/status", pid);
	return read_status(fn, &st) == 0 && st.state != 'Z' && st.state != 'X';
}

/* Whether the program is written in Go: its goroutines run on small stacks
 * of its own making, where a call into dlopen would overflow, and its threads
 * do not unwind through libc's tables. Recognised by Go's own ELF sections. */
static bool is_go_program(int pid)
{
	char fn[64];
	bool go = false;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	snprintf(fn, sizeof fn, "/proc/%d/exe", pid);
	if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	elf_version(EV_CURRENT);
	if ((elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		while (!go && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;
			if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)))
				go = !strcmp(name, ".go.buildinfo") || !strcmp(name, ".gopclntab");
		}
	}
	elf_end(elf);
	close(fd);
	return go;
}

/* Is pid another memwatch (the same program as this one, or one named so)? */
static bool is_memwatch(int pid)
{
	char fn[64], comm[32] = "";
	struct stat a, b;

	if (pid <= 0 || pid == getpid())
		return false;
	snprintf(fn, sizeof fn, "/proc/%d/exe", pid);
	if (stat(fn, &a) == 0 && stat("/proc/self/exe", &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		return true;
	snprintf(fn, sizeof fn, "/proc/%d/comm", pid);
	if (read_small_file(fn, comm, sizeof comm) <= 0)
		return false;
	comm[strcspn(comm, "\n")] = '\0';
	return !strcmp(comm, "memwatch");
}

/* The pid of another memwatch tracing a thread of pid (it is attaching: for
 * a few milliseconds), or 0. */
static int memwatch_tracing(int pid)
{
	char fn[320];
	struct dirent *de;
	DIR *d;
	int found = 0;

	snprintf(fn, sizeof fn, "/proc/%d/task", pid);
	if (!(d = opendir(fn)))
		return 0;
	while (!found && (de = readdir(d))) {
		struct proc_status st;
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(fn, sizeof fn, "/proc/%d/task/%s/status", pid, de->d_name);
		if (read_status(fn, &st) == 0 && st.tracer && is_memwatch(st.tracer))
			found = st.tracer;
	}
	closedir(d);
	return found;
}

/* Explain an EPERM from PTRACE_SEIZE with what we can see of the cause. */
static int explain_eperm(struct injector *ij, char **cause, char **hint)
{
	unsigned me = getuid();
	bool cap = have_cap_sys_ptrace();
	int scope = yama_scope();
	char fn[64];

	snprintf(fn, sizeof fn, "/proc/%d/status", ij->pid);
	read_status(fn, &ij->st);
	if (ij->st.tracer)
		return fail(INJECT_EPERM, cause, hint, "detach the debugger first, then retry",
			    "already traced by pid %d", ij->st.tracer);
	if (scope == 3)
		return fail(INJECT_EPERM, cause, hint,
			    "kernel.yama.ptrace_scope=3 can only be lowered by rebooting",
			    "ptrace is disabled for everyone (kernel.yama.ptrace_scope=3)");
	if (!cap && (ij->st.uid[0] != me || ij->st.uid[1] != me || ij->st.uid[2] != me)) {
		char *h = xasprintf("run memwatch as uid %u (the process's owner) or as root",
				    ij->st.uid[1]);
		int r = fail(INJECT_EPERM, cause, hint, h,
			     "ptrace not permitted: the process belongs to uid %u and you are uid %u",
			     ij->st.uid[1], me);
		free(h);
		return r;
	}
	if (!cap && scope >= 1)
		return fail(INJECT_EPERM, cause, hint,
			    "set kernel.yama.ptrace_scope=0 (sysctl -w kernel.yama.ptrace_scope=0) or run as root",
			    "ptrace not permitted by kernel.yama.ptrace_scope=%d", scope);
	snprintf(fn, sizeof fn, "/proc/%d/environ", ij->pid);
	if (!cap && access(fn, R_OK) < 0)
		return fail(INJECT_EPERM, cause, hint, "run memwatch as root",
			    "ptrace not permitted: the process is not dumpable (set-uid, or PR_SET_DUMPABLE 0)");
	return fail(INJECT_EPERM, cause, hint,
		    cap ? "a security module (SELinux, AppArmor) or a container may forbid ptrace"
			: "run memwatch as root (CAP_SYS_PTRACE)",
		    "ptrace not permitted: %s", strerror(EPERM));
}

/* Everything that can be learnt without stopping a thread: process state,
 * permissions, where dlopen is, the agent's start symbol. */
static int prepare(struct injector *ij, const char *agent_path, char **cause, char **hint)
{
	char fn[PATH_MAX];
	int pid = ij->pid, r;

	snprintf(fn, sizeof fn, "/proc/%d/status", pid);
	if (read_status(fn, &ij->st) < 0)
		return fail(INJECT_ENOPROC, cause, hint, NULL, "no such process");
	if (ij->st.state == 'Z' || ij->st.state == 'X')
		return fail(INJECT_ENOPROC, cause, hint, NULL, "the process has exited (zombie)");
	ij->start_time = proc_start_time(pid);
	if (ij->st.tgid && ij->st.tgid != pid)
		return fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
			    "%d is a thread of process %d, not a process", pid, ij->st.tgid);
	if (pid == getpid())
		return fail(INJECT_EUNSUPPORTED, cause, hint, NULL, "memwatch cannot attach to itself");
	if (ij->st.tracer && is_memwatch(ij->st.tracer)) {
		ij->busy_by = ij->st.tracer;
		return -INJECT_EBUSY;
	}
	if (ij->st.tracer) {
		char comm[80] = "?";
		snprintf(fn, sizeof fn, "/proc/%d/comm", ij->st.tracer);
		if (read_small_file(fn, comm, sizeof comm) > 0)
			comm[strcspn(comm, "\n")] = '\0';
		char *h = xasprintf("detach the debugger (pid %d, %s) first, then retry", ij->st.tracer, comm);
		r = fail(INJECT_EPERM, cause, hint, h, "already traced by pid %d (%s)", ij->st.tracer, comm);
		free(h);
		return r;
	}
	if (ij->st.state == 'T' || ij->st.state == 't') {
		char *h = xasprintf("resume it (kill -CONT %d) and retry", pid);
		r = fail(INJECT_ENOSAFEPOINT, cause, hint, h,
			 "the process is stopped: it cannot run the agent's start-up");
		free(h);
		return r;
	}
	if (cgroup_frozen(pid))
		return fail(INJECT_ENOSAFEPOINT, cause, hint, "thaw its cgroup and retry",
			    "the process is in a frozen cgroup");

	/* Permission problems are visible before any ptrace call: reading the maps
	 * needs the same access (PTRACE_MODE_READ). */
	if ((r = maps_read(pid, &ij->cl.maps)) < 0) {
		if (!process_exists(pid))
			return fail(INJECT_ENOPROC, cause, hint, NULL, "no such process");
		if (pid_is_kernel_thread(pid))
			return fail(INJECT_EINTERNAL, cause, hint, NULL,
				    "pid %d is a kernel thread: it has no user memory", pid);
		if (r == -EACCES || r == -EPERM)
			return explain_eperm(ij, cause, hint);
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot read its memory map: %s",
			    strerror(-r));
	}
	/* Another memwatch attaching now (its thread may be anywhere in dlopen of
	 * the agent, which the maps just read may show half loaded): wait for it,
	 * then use the agent it loaded. Looked at after reading the maps, so an
	 * agent seen mapped with no memwatch tracing is one fully started. */
	if ((ij->busy_by = memwatch_tracing(pid)))
		return -INJECT_EBUSY;
	for (size_t i = 0; i < ij->cl.maps.n; i++)
		if (!strcmp(ij->cl.maps.v[i].path, "[vdso]")) {
			ij->cl.vdso_lo = ij->cl.maps.v[i].lo;
			ij->cl.vdso_hi = ij->cl.maps.v[i].hi;
		}

	r = module_from_maps(pid, &ij->cl.maps, match_libc, 0, 0, true, NULL, &ij->cl.libc, cause);
	if (r < 0)
		return r == -2 ? -INJECT_EUNSUPPORTED : -INJECT_EINTERNAL;
	if (r == 0) {
		bool musl = false, any_loader = false;
		for (size_t i = 0; i < ij->cl.maps.n; i++) {
			const char *b = base_name(ij->cl.maps.v[i].path);
			if (!strncmp(b, "ld-musl", 7) || !strncmp(b, "libc.musl", 9))
				musl = true;
			if (is_ldso_name(b))
				any_loader = true;
		}
		if (musl)
			return fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
				    "the process uses musl libc; only glibc processes can be attached to");
		if (!any_loader)
			return fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
				    "the process is statically linked (no libc.so or dynamic loader mapped)");
		/* the dynamic loader and no C library yet: the program is starting */
		return fail(INJECT_ESTARTING, cause, hint, NULL,
			    "the process is still starting (its C library is not loaded yet)");
	}
	if (is_go_program(pid))
		return fail(INJECT_EUNSUPPORTED, cause, hint,
			    "Go programs have their own heap profiler (runtime/pprof)",
			    "the process is a Go program: its goroutine stacks are too small "
			    "to load a library on");
	bool deleted;
	const char *blind = unwind_blind_spot(pid, &ij->cl.maps, &deleted);
	if (blind && deleted)
		return fail(INJECT_EUNSUPPORTED, cause, hint,
			    "restart the program, or start it with memwatch run",
			    "'%.*s' was replaced or deleted on disk since the process loaded it: "
			    "its stacks cannot be checked for a safe point",
			    (int)(strstr(blind, " (deleted)") - blind), blind);
	if (blind)
		return fail(INJECT_EUNSUPPORTED, cause, hint,
			    "run memwatch inside the process's container, or start the program with memwatch run",
			    "'%s' is not the same file for memwatch as inside the process's root "
			    "(a container): its stacks cannot be checked for a safe point",
			    blind);
	if (module_from_maps(pid, &ij->cl.maps, match_ldso, 0, 0, false, NULL, &ij->cl.ldso, cause) < 0)
		return -INJECT_EINTERNAL;
	if (module_from_maps(pid, &ij->cl.maps, match_libpthread, 0, 0, true, NULL, &ij->cl.libpthread,
			     cause) < 0)
		return -INJECT_EINTERNAL;

	const struct fsym *f;
	if ((f = module_find(&ij->cl.libc, "dlopen"))) {
		ij->dlopen_addr = ij->cl.libc.bias + f->lo;
		if ((f = module_find(&ij->cl.libc, "dlerror")))
			ij->dlerror_addr = ij->cl.libc.bias + f->lo;
	} else {
		/* glibc < 2.34: libdl's dlopen if the program uses it, else libc's
		 * private entry point (no dlerror then) */
		struct module dl;
		r = module_from_maps(pid, &ij->cl.maps, match_libdl, 0, 0, true, NULL, &dl, cause);
		if (r < 0)
			return -INJECT_EINTERNAL;
		if (r > 0 && (f = module_find(&dl, "dlopen"))) {
			ij->dlopen_addr = dl.bias + f->lo;
			if ((f = module_find(&dl, "dlerror")))
				ij->dlerror_addr = dl.bias + f->lo;
		}
		if (r > 0)
			module_free(&dl);
		if (!ij->dlopen_addr && (f = module_find(&ij->cl.libc, "__libc_dlopen_mode"))) {
			ij->dlopen_addr = ij->cl.libc.bias + f->lo;
			ij->dlopen_is_private = true;
		}
		if (!ij->dlopen_addr)
			return fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
				    "no dlopen in the process's libc (%s)", ij->cl.libc.path);
	}

	/* The agent: already mapped (this very file, or any memwatch agent), or
	 * to be loaded from agent_path, which must be the same file inside the
	 * process's root (containers). */
	if (stat(agent_path, &ij->agent_st) < 0)
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot use the agent '%s': %s",
			    agent_path, strerror(errno));
	if (!(ij->agent_abs = realpath(agent_path, NULL)))
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot use the agent '%s': %s",
			    agent_path, strerror(errno));
	r = module_from_maps(pid, &ij->cl.maps, NULL, ij->agent_st.st_dev, ij->agent_st.st_ino, true,
			     MEMWATCH_AGENT_START_SYMBOL, &ij->loaded, cause);
	if (r == 0)
		r = module_from_maps(pid, &ij->cl.maps, match_agent, 0, 0, true, MEMWATCH_AGENT_START_SYMBOL,
				     &ij->loaded, cause);
	if (r < 0)
		return -INJECT_EINTERNAL;
	if (r > 0) {
		if (!(f = module_find(&ij->loaded, MEMWATCH_AGENT_START_SYMBOL)))
			return fail(INJECT_ESTART, cause, hint, NULL, "'%s' is loaded but exports no %s",
				    ij->loaded.path, MEMWATCH_AGENT_START_SYMBOL);
		ij->start_off = f->lo;
		ij->cl.agent_lo = ij->loaded.lo;
		ij->cl.agent_hi = ij->loaded.hi;
		return 0;
	}
	struct stat in_root;
	snprintf(fn, sizeof fn, "/proc/%d/root%s", pid, ij->agent_abs);
	if (stat(fn, &in_root) < 0 || in_root.st_ino != ij->agent_st.st_ino ||
	    in_root.st_dev != ij->agent_st.st_dev)
		return fail(INJECT_EUNSUPPORTED, cause, hint,
			    "make the same file visible at that path inside the process's root (container)",
			    "the agent '%s' is not visible to the process under that path", ij->agent_abs);
	struct module agent = { 0 };
	uint64_t minv;
	int fd = open(ij->agent_abs, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot open the agent '%s': %s",
			    ij->agent_abs, strerror(errno));
	r = elf_read_syms(fd, ij->agent_abs, true, MEMWATCH_AGENT_START_SYMBOL, &agent, &minv, cause);
	close(fd);
	if (r < 0)
		return r == -2 ? -INJECT_EUNSUPPORTED : -INJECT_EINTERNAL;
	if (!agent.nsyms) {
		module_free(&agent);
		return fail(INJECT_ESTART, cause, hint, NULL, "the agent '%s' exports no %s", ij->agent_abs,
			    MEMWATCH_AGENT_START_SYMBOL);
	}
	ij->start_off = agent.syms[0].lo;
	module_free(&agent);
	return 0;
}

/* With the chosen thread stopped and its registers saved: dlopen the agent
 * (unless loaded), then call its start function. Returns 0 or -kind; *timed_out
 * when a call never returned (registers must then not be restored). */
static int do_calls(struct injector *ij, struct seized *s, struct inject_result *res, bool *no_restore,
		    char **cause, char **hint)
{
	char msg[256] = "";
	uint64_t ret = 0, start_addr;
	enum call_result cr;
	int pid = ij->pid;

	*no_restore = false;
	if (ij->loaded.path) {
		start_addr = ij->loaded.bias + ij->start_off;
		res->already_loaded = true;
	} else {
		uint64_t flags = RTLD_NOW | (ij->dlopen_is_private ? RTLD_DLOPEN_FLAG : 0);
		cr = remote_call(pid, s, ij->dlopen_addr, ij->agent_abs, flags, &ret, CALL_TIMEOUT_MS, msg,
				 sizeof msg);
		if (cr != CALL_OK)
			goto call_failed;
		if (ret == 0) {
			char err[512] = "";
			if (ij->dlerror_addr) {
				uint64_t p = 0;
				cr = remote_call(pid, s, ij->dlerror_addr, NULL, 0, &p, CALL_TIMEOUT_MS, msg,
						 sizeof msg);
				if (cr != CALL_OK)
					goto call_failed;
				if (p)
					peek_string(pid, s->tid, p, err, sizeof err);
			}
			return fail(INJECT_EDLOPEN, cause, hint,
				    ij->st.seccomp == 2 ? "the process runs under a seccomp filter, which may forbid loading code" : NULL,
				    "dlopen of the agent failed in the process: %s",
				    err[0] ? err : (msg[0] ? msg : "no reason given"));
		}
		/* find where it went */
		struct maps m;
		struct module mod;
		char *c2 = NULL;
		if (maps_read(pid, &m) < 0)
			return fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited during injection");
		int r = module_from_maps(pid, &m, NULL, ij->agent_st.st_dev, ij->agent_st.st_ino, false, NULL,
					 &mod, &c2);
		maps_free(&m);
		if (r <= 0) {
			r = fail(INJECT_EINTERNAL, cause, hint, NULL,
				 "dlopen succeeded but the agent is not in the memory map%s%s",
				 c2 ? ": " : "", c2 ? c2 : "");
			free(c2);
			return r;
		}
		start_addr = mod.bias + ij->start_off;
		module_free(&mod);
	}
	uint64_t t_start = mono_ns();
	cr = remote_call(pid, s, start_addr, ij->options, 0, &ret, CALL_TIMEOUT_MS, msg, sizeof msg);
	if (cr != CALL_OK)
		goto call_failed;
	if (getenv("MEMWATCH_INJECT_DEBUG"))
		fprintf(stderr, "inject: %s took %.2f ms\n", MEMWATCH_AGENT_START_SYMBOL, ms_since(t_start));
	if ((int)ret != 0)
		return fail(INJECT_ESTART, cause, hint, NULL, "%s(\"%s\") returned %d in the process",
			    MEMWATCH_AGENT_START_SYMBOL, ij->options, (int)ret);
	return 0;

call_failed:
	switch (cr) {
	case CALL_GONE:
		*no_restore = true;
		return fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited during injection%s%s",
			    msg[0] ? ": " : "", msg);
	case CALL_CRASH:
		*no_restore = true;
		return fail(INJECT_EINTERNAL, cause, hint,
			    ij->st.seccomp == 2 ? "the process runs under a seccomp filter, which may kill "
						  "it for the loader's system calls" : NULL,
			    "the process crashed during injection: %s",
			    msg[0] ? msg : "fatal signal");
	case CALL_TIMEOUT:
		*no_restore = true;
		return fail(INJECT_EINTERNAL, cause, hint,
			    "the thread was left running the call; its process may need a restart",
			    "a call in thread %d did not return within %u ms (left as is: rolling back would corrupt it)",
			    s->tid, CALL_TIMEOUT_MS);
	default:
		/* nothing ran: the saved registers are still valid */
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "%s", msg);
	}
}

/* Whether the stopped thread may be hijacked at all, from its registers: not
 * inside an allocator system call, and with stack left for dlopen. */
static bool regs_ok(struct injector *ij, struct seized *s, char *why, size_t whylen)
{
	long nr = (long)s->regs.orig_rax;
	if (nr >= 0 && allocator_or_process_syscall(nr)) {
		const char *n = syscall_name(nr);
		snprintf(why, whylen, "in %s", n ? n : "an allocator system call");
		return false;
	}
	for (size_t i = 0; i < ij->cl.maps.n; i++) {
		const struct mapping *mp = &ij->cl.maps.v[i];
		if (s->regs.rsp < mp->lo || s->regs.rsp >= mp->hi)
			continue;
		if (strcmp(mp->path, "[stack]") && s->regs.rsp - mp->lo < STACK_NEEDED + RED_ZONE) {
			snprintf(why, whylen, "too little stack left");
			return false;
		}
		if (mp->perms[1] != 'w') {
			snprintf(why, whylen, "stack not writable");
			return false;
		}
		return true;
	}
	/* a stack mapped after we read the maps: accept, the write would fail cleanly */
	return true;
}

/* A syscall interrupted by our stop that returned EINTR (timed sockets,
 * epoll_wait...) is made to restart instead, so the application never sees
 * it; only when no signal of its own is pending, which would explain an EINTR. */
static bool undo_eintr(struct seized *s)
{
	if ((long)s->regs.orig_rax >= 0 && (long)s->regs.rax == -EINTR && !s->pending_sig) {
		s->regs.rax = (uint64_t)-ERESTARTNOHAND;
		return true;
	}
	return false;
}

/* Keep the latest reason each thread was passed over, across rounds. */
static void remember_reasons(struct cand **seen, size_t *nseen, const struct cand *c, int n)
{
	for (int i = 0; i < n; i++) {
		size_t k;
		if (!c[i].why[0])
			continue;
		for (k = 0; k < *nseen; k++)
			if ((*seen)[k].tid == c[i].tid)
				break;
		if (k == *nseen) {
			*seen = xrealloc(*seen, (*nseen + 1) * sizeof **seen);
			(*nseen)++;
		}
		(*seen)[k] = c[i];
	}
}

static int rand_between(unsigned lo, unsigned hi)
{
	static unsigned seed;
	if (!seed)
		seed = (unsigned)mono_ns() ^ (unsigned)getpid();
	return (int)(lo + (unsigned)rand_r(&seed) % (hi - lo + 1));
}

/* Free what prepare and the search found, for another try or the end. */
static void injector_clear(struct injector *ij)
{
	if (ij->cl.as)
		unw_destroy_addr_space(ij->cl.as);
	maps_free(&ij->cl.maps);
	module_free(&ij->cl.libc);
	module_free(&ij->cl.ldso);
	module_free(&ij->cl.libpthread);
	module_free(&ij->loaded);
	free(ij->agent_abs);
	*ij = (struct injector){ .pid = ij->pid, .options = ij->options };
}

/* Another memwatch is attaching (ij->busy_by traces a thread): wait until it
 * has finished, within the deadline. 0, or -kind with the cause. */
static int wait_other_memwatch(struct injector *ij, uint64_t deadline, unsigned deadline_ms,
			       char **cause, char **hint)
{
	int other = ij->busy_by;
	while (memwatch_tracing(ij->pid)) {
		if (stop_signal_pending())
			return fail(INJECT_ENOSAFEPOINT, cause, hint, NULL,
				    "interrupted while memwatch pid %d was attaching", other);
		if (mono_ns() >= deadline)
			return fail(INJECT_ENOSAFEPOINT, cause, hint, "retry when it has finished",
				    "memwatch pid %d is attaching to the process and did not finish "
				    "within %u ms", other, deadline_ms);
		nap_us(5000);
	}
	return process_exists(ij->pid) ? 0 : fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
}

int inject_agent(int pid, const char *agent_path, const char *options, unsigned deadline_ms,
		 struct inject_result *res, char **cause, char **hint)
{
	uint64_t t0 = mono_ns();
	uint64_t deadline = t0 + (uint64_t)deadline_ms * 1000000u;
	struct injector ij = { .pid = pid, .options = options ? options : "" };
	struct cand *cands = NULL, *seen = NULL;
	size_t nseen = 0;
	int ret, ncand = 0;
	unsigned eperm_retries = 0;
	bool debug = getenv("MEMWATCH_INJECT_DEBUG") != NULL;

	memset(res, 0, sizeof *res);
	*cause = NULL;
	*hint = NULL;
	if (pid <= 0)
		return fail(INJECT_ENOPROC, cause, hint, NULL, "no such process");
restart:
	if ((ret = prepare(&ij, agent_path, cause, hint)) == -INJECT_EBUSY)
		goto busy;
	if (ret < 0)
		goto out;

	if (debug)
		fprintf(stderr, "inject: prepared in %.2f ms\n", ms_since(t0));
	ij.cl.as = unw_create_addr_space(&_UPT_accessors, 0);
	if (!ij.cl.as) {
		ret = fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot create a libunwind address space");
		goto out;
	}
	unw_set_caching_policy(ij.cl.as, UNW_CACHE_GLOBAL);

	for (unsigned round = 0;; round++) {
		remember_reasons(&seen, &nseen, cands, ncand);
		free(cands);
		cands = NULL;
		if ((ncand = list_threads(pid, &cands)) <= 0) {
			ret = fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
			goto out;
		}
		for (int i = 0; i < ncand; i++) {
			struct cand *c = &cands[i];
			struct seized s = { .tid = c->tid };
			char why[96] = "";
			int err = 0;

			if (c->cls == CAND_SKIP)
				continue;
			if (mono_ns() >= deadline || stop_signal_pending())
				break;
			res->attempts++;
			int sr = seize_and_stop(&s, &err);
			if (sr == STOP_ERROR && err == EPERM) {
				release(pid, &s, false);
				/* another memwatch seized this thread to attach: wait for
				 * it (it may have let go already: look again, a few times) */
				if ((ij.busy_by = memwatch_tracing(pid)) || eperm_retries++ < 3)
					goto busy;
				ret = explain_eperm(&ij, cause, hint);
				goto out;
			}
			if (sr != STOP_OK) {
				if (sr == STOP_GROUP)
					snprintf(c->why, sizeof c->why, "stopped by job control");
				else if (sr == STOP_FAULT)
					snprintf(c->why, sizeof c->why, "taking signal %d", s.pending_sig);
				else if (sr == STOP_TIMEOUT)
					snprintf(c->why, sizeof c->why, "did not stop within %d ms", STOP_TIMEOUT_MS);
				else if (sr == STOP_GONE)
					snprintf(c->why, sizeof c->why, "exited");
				else
					snprintf(c->why, sizeof c->why, "ptrace: %s", strerror(err));
				release(pid, &s, false);
				if (sr == STOP_GROUP) {
					char *h = xasprintf("resume it (kill -CONT %d) and retry", pid);
					ret = fail(INJECT_ENOSAFEPOINT, cause, hint, h,
						   "the process is stopped: it cannot run the agent's start-up");
					free(h);
					goto out;
				}
				if (!process_exists(pid)) {
					ret = fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
					goto out;
				}
				continue;
			}
			int mine = still_ours(&ij, s.tid);
			if (mine <= 0) {
				release(pid, &s, false);
				if (mine < 0) {
					ret = fail(INJECT_ENOPROC, cause, hint, NULL,
						   "the process exited (its pid was reused)");
					goto out;
				}
				snprintf(c->why, sizeof c->why, "exited");
				continue;
			}
			if (save_regs(&s, &err) < 0) {
				snprintf(c->why, sizeof c->why, "cannot read registers: %s", strerror(err));
				release(pid, &s, false);
				continue;
			}
			bool fixed = undo_eintr(&s);
			uint64_t t_vet = mono_ns(), run_to = 0;
			bool ok = regs_ok(&ij, &s, why, sizeof why) &&
				  safe_point(&ij.cl, s.tid, s.regs.rip, &run_to, why, sizeof why);
			if (debug)
				fprintf(stderr, "inject: tid %d rax=%lld orig_rax=%lld stopped after %.2f ms, "
					"vetted in %.2f ms: %s%s%s\n", s.tid, (long long)s.regs.rax,
					(long long)s.regs.orig_rax, (double)(t_vet - s.t_interrupt) / 1e6,
					ms_since(t_vet), ok ? "accepted" : "rejected: ", ok ? "" : why,
					run_to && round > 0 ? " (running it to its return)" : "");
			/* From the second round on (no thread was at a safe point when
			 * stopped), a thread inside libc is run to its return instead:
			 * busy processes, rarely caught outside malloc, then still attach.
			 * The first round prefers threads that need no run, whose pause
			 * is shorter. */
			if (!ok && run_to && round > 0 &&
			    (!fixed || ptrace(PTRACE_SETREGS, s.tid, NULL, &s.regs) == 0)) {
				uint64_t t_run = mono_ns(), target = run_to;
				int rr = run_to_return(&s, target, RUN_TO_RETURN_MS);
				s.ran_ms = ms_since(t_run);
				fixed = false;
				if (rr == STOP_OK) {
					ok = regs_ok(&ij, &s, why, sizeof why) &&
					     safe_point(&ij.cl, s.tid, s.regs.rip, &run_to, why, sizeof why);
				} else if (rr == STOP_TIMEOUT) {
					snprintf(why, sizeof why, "did not return to the application within %d ms",
						 RUN_TO_RETURN_MS);
					fixed = s.stopped && undo_eintr(&s);
				} else if (rr == STOP_GROUP) {
					release(pid, &s, false);
					char *h = xasprintf("resume it (kill -CONT %d) and retry", pid);
					ret = fail(INJECT_ENOSAFEPOINT, cause, hint, h,
						   "the process is stopped: it cannot run the agent's start-up");
					free(h);
					goto out;
				}
				if (debug)
					fprintf(stderr, "inject: tid %d ran to %#llx in %.2f ms: %s%s\n", s.tid,
						(unsigned long long)target, s.ran_ms,
						rr != STOP_OK ? "not reached, " : "",
						ok ? "accepted" : why);
			}
			if (!ok) {
				snprintf(c->why, sizeof c->why, "%s", why);
				/* registers are written back only for the EINTR fix-up:
				 * nothing else was changed */
				release(pid, &s, fixed);
				continue;
			}
			if (save_xstate(&s, &err) < 0) {
				snprintf(c->why, sizeof c->why, "cannot read its extended registers: %s",
					 strerror(err));
				release(pid, &s, fixed);
				continue;
			}
			bool no_restore;
			res->tid = s.tid;
			uint64_t t_calls = mono_ns();
			ret = do_calls(&ij, &s, res, &no_restore, cause, hint);
			uint64_t t_release = mono_ns();
			release(pid, &s, !no_restore);
			res->pause_ms = ms_since(s.t_interrupt) - s.ran_ms;
			if (debug)
				fprintf(stderr, "inject: calls %.2f ms, restore and detach %.2f ms\n",
					(double)(t_release - t_calls) / 1e6, ms_since(t_release));
			res->total_ms = ms_since(t0);
			goto out;
		}
		if (stop_signal_pending()) {
			ret = fail(INJECT_ENOSAFEPOINT, cause, hint, NULL, "interrupted while looking for a safe point");
			goto out;
		}
		if (mono_ns() >= deadline)
			break;
		nap_us((unsigned)rand_between(1000, 5000));
	}

	/* no safe point: say what the threads were doing (the last reason seen
	 * for each, also for those the deadline cut off in the last round) */
	remember_reasons(&seen, &nseen, cands, ncand);
	for (int i = 0; i < ncand; i++)
		for (size_t k = 0; k < nseen; k++)
			if (seen[k].tid == cands[i].tid && !cands[i].why[0])
				memcpy(cands[i].why, seen[k].why, sizeof cands[i].why);
	{
		size_t cap = 512, len = 0;
		char *what = xmalloc(cap);
		int shown = 0;
		what[0] = '\0';
		for (int i = 0; i < ncand && shown < 4; i++) {
			if (!cands[i].why[0])
				continue;
			char *part = xasprintf("%sthread %d %s", shown ? "; " : "", cands[i].tid, cands[i].why);
			size_t pl = strlen(part);
			if (len + pl + 1 > cap) {
				cap = 2 * (len + pl + 1);
				what = xrealloc(what, cap);
			}
			memcpy(what + len, part, pl + 1);
			len += pl;
			free(part);
			shown++;
		}
		int more = 0;
		for (int i = 0; i < ncand; i++)
			more += cands[i].why[0] != '\0';
		more -= shown;
		ret = fail(INJECT_ENOSAFEPOINT, cause, hint,
			   "retry later, or start the program with memwatch run to preload the agent",
			   "no thread at a safe point within %u ms (%u attempts): %s%s", deadline_ms,
			   res->attempts, what[0] ? what : "no thread could be examined",
			   more > 0 ? "; ..." : "");
		free(what);
	}
	goto out;
busy:
	if (debug)
		fprintf(stderr, "inject: memwatch pid %d is attaching: waiting for it\n", ij.busy_by);
	free(cands);
	free(seen);
	cands = seen = NULL;
	ncand = 0;
	nseen = 0;
	nap_us((unsigned)rand_between(1000, 5000));
	if ((ret = wait_other_memwatch(&ij, deadline, deadline_ms, cause, hint)) < 0)
		goto out;
	injector_clear(&ij);
	goto restart;
out:
	if (ret == 0 || res->total_ms == 0)
		res->total_ms = ms_since(t0);
	free(cands);
	free(seen);
	injector_clear(&ij);
	return ret;
}

bool inject_agent_loaded(int pid)
{
	struct maps m;
	bool found = false;

	if (maps_read(pid, &m) < 0)
		return false;
	for (size_t i = 0; i < m.n && !found; i++)
		found = !strcmp(base_name(m.v[i].path), AGENT_SONAME);
	maps_free(&m);
	return found;
}

#else /* !__x86_64__ */

int inject_agent(int pid, const char *agent_path, const char *options, unsigned deadline_ms,
		 struct inject_result *res, char **cause, char **hint)
{
	(void)pid; (void)agent_path; (void)options; (void)deadline_ms;
	memset(res, 0, sizeof *res);
	*cause = xstrdup("attaching is implemented for x86-64 only");
	*hint = NULL;
	return -INJECT_EUNSUPPORTED;
}

bool inject_agent_loaded(int pid)
{
	(void)pid;
	return false;
}

#endif
