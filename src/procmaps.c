/* procmaps.c: what the injector reads about the target without stopping it:
 * its mappings, the function symbols of its ELF objects, and /proc files
 * (status, Yama, cgroup freezer). */
#include "config.h"
#include "inject-internal.h"
#include "util.h"

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

/* ---------------------------------------------------------------- maps */

void procmaps_free(struct maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* Read /proc/PID/maps. Returns 0 or -errno (-ENOENT when the process is gone). */
int procmaps_read(int pid, struct maps *m)
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

/* Is b, a base name from the maps, name? A file deleted since it was mapped
 * (a library upgraded under a running process) is named "NAME (deleted)". */
static bool name_is(const char *b, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(b, name, n) && (!b[n] || !strcmp(b + n, " (deleted)"));
}

static bool is_libc_name(const char *b)
{
	return name_is(b, "libc.so.6") || (!strncmp(b, "libc-2.", 7) && strstr(b, ".so"));
}

bool is_ldso_name(const char *b)
{
	return !strncmp(b, "ld-linux", 8) || (!strncmp(b, "ld-2.", 5) && strstr(b, ".so")) ||
	       !strncmp(b, "ld-musl", 7);
}

/* ---------------------------------------------------------------- ELF symbols */

void module_free(struct module *mod)
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
int elf_read_syms(int fd, const char *what, bool syms, const char *only_name,
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
const struct fsym *module_lookup(const struct module *mod, uint64_t off)
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

const struct fsym *module_find(const struct module *mod, const char *name)
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
int module_from_maps(int pid, const struct maps *m, bool (*pred)(const char *),
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

/* The address of libc's __restore_rt in the process: "mov $15,%rax;
 * syscall" (rt_sigreturn), where glibc's signal frames return to. It is not
 * a dynamic symbol, so it is found by its code, in libc's executable
 * mappings as the process has them; it must be there exactly once. 0 when
 * not found, with errno EPERM when its memory may not be read. */
uint64_t find_rt_sigreturn(int pid, const struct maps *m, const struct module *libc)
{
	static const unsigned char code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	enum { CHUNK = 256 * 1024 };
	unsigned char *buf = xmalloc(CHUNK + sizeof code);
	uint64_t found = 0;
	int count = 0;

	for (size_t i = 0; i < m->n && count < 2; i++) {
		const struct mapping *mp = &m->v[i];
		if (mp->perms[2] != 'x' || mp->inode != libc->inode || strcmp(mp->path, libc->path))
			continue;
		for (uint64_t a = mp->lo; a < mp->hi && count < 2; a += CHUNK) {
			size_t len = mp->hi - a < CHUNK + sizeof code ? (size_t)(mp->hi - a) : CHUNK + sizeof code;
			struct iovec l = { buf, len }, r = { (void *)a, len };
			if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)len) {
				if (errno == EPERM) {
					free(buf);
					return 0;     /* errno: not ours to read */
				}
				break;
			}
			/* chunks overlap by the code's length: a match at k < CHUNK
			 * belongs to this chunk only */
			unsigned char *p = buf, *hit;
			while ((hit = memmem(p, len - (size_t)(p - buf), code, sizeof code)) &&
			       hit - buf < CHUNK) {
				found = a + (uint64_t)(hit - buf);
				count++;
				p = hit + 1;
			}
		}
	}
	free(buf);
	errno = ENOENT;
	return count == 1 ? found : 0;
}

/* Read len bytes of the process at addr. 0 or -1. */
static int peek_mem(int pid, uint64_t addr, void *out, size_t len)
{
	struct iovec l = { out, len }, r = { (void *)addr, len };
	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* The message dlerror() would give in thread tid (whose fs base is fs_base)
 * after a failed dlopen, read from glibc's own record of it (glibc >= 2.34:
 * the thread's __libc_dlerror_result, reached through the TPOFF64 slot of
 * libc's GOT; struct dl_action_result: errcode, objname, errstring). The
 * injected calls' return values do not survive the signal frame they return
 * through, so dlerror() itself cannot be used. 0, or -1 when unknown. */
int dlerror_read(int pid, const struct maps *m, const struct module *libc, uint64_t fs_base,
		 char *out, size_t outlen)
{
	const struct mapping *zero = NULL;
	uint64_t tls_value = 0, got = 0;
	size_t sym_index = 0;
	bool have_sym = false, have_got = false;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	for (size_t i = 0; i < m->n && !zero; i++)
		if (m->v[i].off == 0 && m->v[i].inode == libc->inode && !strcmp(m->v[i].path, libc->path))
			zero = &m->v[i];
	if (!zero || (fd = open_mapped(pid, zero)) < 0)
		return -1;
	elf_version(EV_CURRENT);
	if (!(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		close(fd);
		return -1;
	}
	while ((scn = elf_nextscn(elf, scn)) && !have_sym) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t k = 0; sh.sh_entsize && k < sh.sh_size / sh.sh_entsize; k++) {
			GElf_Sym sym;
			const char *name;
			if (gelf_getsym(d, (int)k, &sym) && GELF_ST_TYPE(sym.st_info) == STT_TLS &&
			    (name = elf_strptr(elf, sh.sh_link, sym.st_name)) &&
			    !strcmp(name, "__libc_dlerror_result")) {
				tls_value = sym.st_value;
				sym_index = k;
				have_sym = true;
				break;
			}
		}
	}
	scn = NULL;
	while (have_sym && !have_got && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t k = 0; sh.sh_entsize && k < sh.sh_size / sh.sh_entsize; k++) {
			GElf_Rela ra;
			if (!gelf_getrela(d, (int)k, &ra) || GELF_R_TYPE(ra.r_info) != R_X86_64_TPOFF64)
				continue;
			if (GELF_R_SYM(ra.r_info) == sym_index ||
			    (GELF_R_SYM(ra.r_info) == 0 && (uint64_t)ra.r_addend == tls_value)) {
				got = ra.r_offset;
				have_got = true;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	if (!have_got)
		return -1;

	int64_t tpoff;
	uint64_t result;
	struct { int32_t errcode; char source; bool returned; char pad[2]; uint64_t objname, errstring; } r;
	char objname[256] = "", errstring[256] = "";
	if (peek_mem(pid, libc->bias + got, &tpoff, 8) < 0 ||
	    peek_mem(pid, fs_base + (uint64_t)tpoff, &result, 8) < 0 || result < 4096 ||
	    peek_mem(pid, result, &r, sizeof r) < 0 || !r.errstring)
		return -1;
	struct iovec l = { errstring, sizeof errstring - 1 }, rv = { (void *)r.errstring, sizeof errstring - 1 };
	if (process_vm_readv(pid, &l, 1, &rv, 1, 0) <= 0)
		return -1;
	errstring[sizeof errstring - 1] = '\0';
	if (r.objname) {
		struct iovec l2 = { objname, sizeof objname - 1 }, r2 = { (void *)r.objname, sizeof objname - 1 };
		if (process_vm_readv(pid, &l2, 1, &r2, 1, 0) <= 0)
			objname[0] = '\0';
		objname[sizeof objname - 1] = '\0';
	}
	snprintf(out, outlen, "%s%s%s%s%s", objname, objname[0] ? ": " : "", errstring,
		 r.errcode ? ": " : "", r.errcode ? strerror(r.errcode) : "");
	return 0;
}

bool match_libc(const char *b) { return is_libc_name(b); }
bool match_ldso(const char *b) { return is_ldso_name(b); }
bool match_libdl(const char *b) { return name_is(b, "libdl.so.2") || !strncmp(b, "libdl-2.", 8); }
bool match_libpthread(const char *b)
{
	return name_is(b, "libpthread.so.0") || !strncmp(b, "libpthread-2.", 13);
}
/* The agent, also as a copy placed in a container and removed once mapped. */
bool match_agent(const char *b)
{
	/* or loaded from a memfd (inject-memfd.c) */
	return name_is(b, AGENT_SONAME) || !strcmp(b, "memfd:" AGENT_SONAME " (deleted)");
}

/* The remote unwinder (libunwind-ptrace) reads unwind tables from the files
 * named in /proc/PID/maps, opened by path, which names another file, or none,
 * once the file mapped was deleted or replaced (a library upgraded under a
 * running service). Returns the path (in m) of such an executable mapping,
 * the program's, libc's or the loader's first, else any other; NULL when
 * there is none. *essential: it is one of those three (no stack could be
 * checked without their tables); *readable: map_files opens the very object
 * mapped for us (it takes CAP_SYS_ADMIN), so that it can be unwound from it
 * (container-unwind.c). */
const char *deleted_mapping(int pid, const struct maps *m, bool *essential, bool *readable)
{
	char fn[PATH_MAX + 64], exe[PATH_MAX];
	const struct mapping *found = NULL;
	ssize_t n;
	int fd;

	snprintf(fn, sizeof fn, "/proc/%d/exe", pid);
	n = readlink(fn, exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	*essential = false;
	for (size_t i = 0; i < m->n && !*essential; i++) {
		const struct mapping *mp = &m->v[i];
		const char *sfx = strstr(mp->path, " (deleted)");
		if (mp->perms[2] != 'x' || mp->path[0] != '/' || !sfx || sfx[10] != '\0')
			continue;
		const char *b = base_name(mp->path);
		*essential = is_libc_name(b) || is_ldso_name(b) || !strcmp(mp->path, exe);
		if (!found || *essential)
			found = mp;
	}
	if (!found)
		return NULL;
	snprintf(fn, sizeof fn, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, found->lo, found->hi);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	*readable = fd >= 0;
	if (fd >= 0)
		close(fd);
	return found->path;
}

/* ---------------------------------------------------------------- /proc */

int read_small_file(const char *fn, char *buf, size_t n)
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
bool have_cap_sys_ptrace(void)
{
	struct proc_status st;

	if (proc_status_read("/proc/self/status", &st) < 0)
		return geteuid() == 0;
	return (st.capeff >> 19) & 1;
}

int yama_scope(void)
{
	char buf[32];
	if (read_small_file("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof buf) <= 0)
		return -1;
	return atoi(buf);
}

/* True when the process sits in a frozen cgroup (v2 cgroup.events "frozen 1",
 * or the v1 freezer in state FROZEN). */
bool cgroup_frozen(int pid)
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

