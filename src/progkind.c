/* progkind.c: whether the agent can be loaded into a program, told by what the
 * program is rather than by the names of its files. An ELF program with no
 * interpreter (PT_INTERP) is statically linked, unless it is a dynamic
 * loader run as a program; a Go program (Go's own sections) allocates from
 * Go's heap, and one run by glibc's loader (cgo) allocates with glibc's malloc
 * in its C code, which a preloaded agent samples; otherwise the interpreter tells the C
 * library: glibc's loader defines glibc's symbol versions (GLIBC_2.*), musl's
 * loader is musl's libc itself and names itself "musl libc". The same facts
 * are read from a file about to be run (memwatch run) and from a running
 * process (the injector), whose files are read through /proc/PID. */
#include "config.h"
#include "progkind.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What one ELF file says of itself. */
struct elf_facts {
	bool elf;            /* an ELF executable or shared object of our word size */
	bool dyn;            /* ET_DYN (a PIE, a shared object, a loader) */
	bool has_interp;
	char interp[256];
	bool go;             /* Go's sections */
	bool glibc_loader;   /* defines glibc's symbol versions */
	bool musl;           /* musl's C library, which is its loader too */
};

/* Whether the object defines a symbol version named GLIBC_*: glibc's loader
 * and C library do (GLIBC_2.2.5 and on), musl's defines none. */
static bool defines_glibc_versions(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t off = 0;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_GNU_verdef || !(d = elf_getdata(scn, NULL)))
			continue;
		for (GElf_Word i = 0; i < sh.sh_info; i++) {
			GElf_Verdef vd;
			GElf_Verdaux va;
			const char *name;
			if (!gelf_getverdef(d, (int)off, &vd) || !gelf_getverdaux(d, (int)(off + vd.vd_aux), &va))
				break;
			name = elf_strptr(elf, sh.sh_link, va.vda_name);
			if (name && !strncmp(name, "GLIBC_", 6))
				return true;
			if (!vd.vd_next)
				break;
			off += vd.vd_next;
		}
	}
	return false;
}

/* Whether the object carries one of Go's own sections. */
static bool has_go_sections(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".gopclntab") ||
		     !strcmp(name, ".note.go.buildid")))
			return true;
	return false;
}

/* The facts of the ELF file open on fd (not closed here). */
static void elf_facts_read(int fd, struct elf_facts *f)
{
	Elf *elf;
	GElf_Ehdr eh;
	size_t nph, size = 0;
	const char *raw;

	memset(f, 0, sizeof *f);
	elf_version(EV_CURRENT);
	if (!(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    gelf_getclass(elf) != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
	    elf_getphdrnum(elf, &nph) != 0 || !(raw = elf_rawfile(elf, &size)))
		goto out;
	f->elf = true;
	f->dyn = eh.e_type == ET_DYN;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP)
			continue;
		f->has_interp = true;
		if (ph.p_offset < size && ph.p_filesz > 0) {
			size_t n = ph.p_filesz < size - ph.p_offset ? ph.p_filesz : size - ph.p_offset;
			if (n >= sizeof f->interp)
				n = sizeof f->interp - 1;
			memcpy(f->interp, raw + ph.p_offset, n);
			f->interp[n] = '\0';
		}
	}
	f->go = has_go_sections(elf);
	f->glibc_loader = defines_glibc_versions(elf);
	/* musl's loader prints "musl libc (ARCH)" when run as a program: its own
	 * words, in no other C library. Looked for only in what may be a loader
	 * (a shared object, no interpreter of its own), not in every static
	 * program however large. */
	f->musl = f->dyn && !f->has_interp && !f->go && !f->glibc_loader &&
		  memmem(raw, size, "musl libc (", 11) != NULL;
out:
	elf_end(elf);
}

/* The kind of a program of facts p, whose interpreter (when it has one) is
 * open on interp_fd (-1: it could not be opened). */
static enum prog_kind kind_of(const struct elf_facts *p, int interp_fd)
{
	struct elf_facts in;

	if (!p->elf)
		return PROG_UNKNOWN;
	if (p->go) {
		if (!p->has_interp || interp_fd < 0)
			return PROG_GO;
		elf_facts_read(interp_fd, &in);
		return in.elf && in.glibc_loader ? PROG_CGO : PROG_GO;
	}
	if (!p->has_interp) {
		/* a loader run as a program (ld.so ./prog) runs what it loads */
		if (p->glibc_loader)
			return PROG_GLIBC;
		if (p->musl && p->dyn)
			return PROG_MUSL;
		return PROG_STATIC;
	}
	if (interp_fd < 0)
		return PROG_UNKNOWN;
	elf_facts_read(interp_fd, &in);
	if (!in.elf)
		return PROG_UNKNOWN;
	if (in.glibc_loader)
		return PROG_GLIBC;
	return in.musl ? PROG_MUSL : PROG_OTHER;
}

static void info_set(struct prog_info *pi, const struct elf_facts *f, const char *judged)
{
	pi->has_interp = f->has_interp;
	snprintf(pi->interp, sizeof pi->interp, "%s", f->interp);
	snprintf(pi->judged, sizeof pi->judged, "%s", judged);
}

char *prog_find_in_path(const char *name)
{
	const char *path = getenv("PATH"), *p, *end;
	struct stat st;

	if (!*name)
		return NULL;
	if (strchr(name, '/'))
		return xstrdup(name);
	/* execvp's default when PATH is not set */
	for (p = path ? path : "/bin:/usr/bin";; p = end + 1) {
		end = strchrnul(p, ':');
		char *cand = end == p ? xasprintf("./%s", name) : xasprintf("%.*s/%s", (int)(end - p), p, name);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
			return cand;
		free(cand);
		if (!*end)
			return NULL;
	}
}

/* The interpreter of a #! script at fd: *interp and its one optional argument,
 * as the kernel splits the line. False when it is no such script. */
static bool script_line(int fd, char *interp, size_t isz, char *arg, size_t asz)
{
	char line[256], *p, *e;
	ssize_t n = pread(fd, line, sizeof line - 1, 0);

	if (n < 3 || line[0] != '#' || line[1] != '!')
		return false;
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	for (p = line + 2; *p == ' ' || *p == '\t'; p++)
		;
	e = p + strcspn(p, " \t");
	if (e == p)
		return false;
	snprintf(interp, isz, "%.*s", (int)(e - p), p);
	for (p = e; *p == ' ' || *p == '\t'; p++)
		;
	for (e = p + strlen(p); e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'); e--)
		;
	snprintf(arg, asz, "%.*s", (int)(e - p), p);
	return true;
}

static void judge_file(const char *path, struct prog_info *pi, int depth)
{
	struct elf_facts f;
	char interp[PATH_MAX], arg[256];
	int fd, ifd = -1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	elf_facts_read(fd, &f);
	if (!f.elf) {
		/* a script runs its interpreter (nested up to 4 deep, as Linux allows) */
		bool script = depth < 4 && script_line(fd, interp, sizeof interp, arg, sizeof arg);
		close(fd);
		if (!script)
			return;
		pi->script = true;
		/* "#!/usr/bin/env NAME": the program is NAME, found on PATH */
		if (!strcmp(base_name(interp), "env") && arg[0] && arg[0] != '-' && !strpbrk(arg, " \t")) {
			char *found = prog_find_in_path(arg);
			if (!found)
				return;
			snprintf(interp, sizeof interp, "%s", found);
			free(found);
		}
		judge_file(interp, pi, depth + 1);
		return;
	}
	close(fd);
	if (f.has_interp)
		ifd = open(f.interp, O_RDONLY | O_CLOEXEC);
	pi->kind = kind_of(&f, ifd);
	info_set(pi, &f, path);
	if (ifd >= 0)
		close(ifd);
}

void prog_judge_file(const char *path, struct prog_info *pi)
{
	memset(pi, 0, sizeof *pi);
	pi->kind = PROG_UNKNOWN;
	judge_file(path, pi, 0);
}

/* Where the process's interpreter is mapped (AT_BASE of its auxiliary
 * vector), or 0. */
static uint64_t interp_base(int pid)
{
	char fn[64];
	uint64_t v[512], base = 0;
	ssize_t n;
	int fd;

	snprintf(fn, sizeof fn, "/proc/%d/auxv", pid);
	if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, v, sizeof v);
	close(fd);
	for (ssize_t i = 0; i + 1 < n / (ssize_t)sizeof *v && v[i] != AT_NULL; i += 2)
		if (v[i] == AT_BASE)
			base = v[i + 1];
	return base;
}

/* Open the process's interpreter: the very file mapped at its base (through
 * map_files, which needs CAP_SYS_ADMIN), else its path in the process's root
 * (its own mounts too). An fd, or -1. */
static int open_interp(int pid, const char *interp)
{
	uint64_t base = interp_base(pid), lo, hi;
	char fn[PATH_MAX + 64], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int fd = -1;

	snprintf(fn, sizeof fn, "/proc/%d/maps", pid);
	if (base && (f = fopen(fn, "re"))) {
		while (fd < 0 && getline(&line, &cap, f) > 0)
			if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 && lo == base) {
				snprintf(fn, sizeof fn, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, lo, hi);
				fd = open(fn, O_RDONLY | O_CLOEXEC);
				break;
			}
		free(line);
		fclose(f);
	}
	if (fd < 0 && interp[0] == '/') {
		snprintf(fn, sizeof fn, "/proc/%d/root%s", pid, interp);
		fd = open(fn, O_RDONLY | O_CLOEXEC);
	}
	return fd;
}

void prog_judge_pid(int pid, struct prog_info *pi)
{
	struct elf_facts f;
	char fn[64], exe[PATH_MAX];
	ssize_t n;
	int fd, ifd = -1;

	memset(pi, 0, sizeof *pi);
	pi->kind = PROG_UNKNOWN;
	snprintf(fn, sizeof fn, "/proc/%d/exe", pid);
	if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	elf_facts_read(fd, &f);
	close(fd);
	n = readlink(fn, exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (f.has_interp)
		ifd = open_interp(pid, f.interp);
	pi->kind = kind_of(&f, ifd);
	info_set(pi, &f, exe);
	if (ifd >= 0)
		close(ifd);
}

bool prog_refused(enum prog_kind k)
{
	return k != PROG_GLIBC && k != PROG_UNKNOWN;
}

bool prog_unpreloadable(enum prog_kind k)
{
	return prog_refused(k) && k != PROG_CGO;
}

const char *prog_unseen(enum prog_kind k)
{
	return k == PROG_CGO ? "Go allocates its own objects from its own heap, which the agent does not see: "
			       "its C code's allocations (cgo) are sampled" : NULL;
}

const char *prog_what(const struct prog_info *pi, char *buf, size_t size)
{
	switch (pi->kind) {
	case PROG_STATIC:
		snprintf(buf, size, "is statically linked (it has no ELF interpreter)");
		break;
	case PROG_MUSL:
		if (pi->has_interp)
			snprintf(buf, size, "uses musl libc (its ELF interpreter is %s)", pi->interp);
		else
			snprintf(buf, size, "is musl libc's loader");
		break;
	case PROG_GO:
		snprintf(buf, size, "is a Go program (%s)",
			 pi->has_interp ? "dynamically linked" : "statically linked");
		break;
	case PROG_CGO:
		snprintf(buf, size, "is a Go program with cgo (dynamically linked)");
		break;
	case PROG_OTHER:
		snprintf(buf, size, "uses a C library other than glibc (its ELF interpreter is %s)",
			 pi->interp);
		break;
	default:
		snprintf(buf, size, "can take the agent");
		break;
	}
	return buf;
}

const char *prog_why(enum prog_kind k)
{
	switch (k) {
	case PROG_STATIC: return "no library can be loaded into it";
	case PROG_GO: return "Go allocates from its own heap, which the agent does not see";
	case PROG_CGO:
		return "the agent is not injected into Go's runtime, which owns its threads and signals";
	default: return "the agent is built for glibc";
	}
}

const char *prog_hint(enum prog_kind k)
{
	switch (k) {
	case PROG_STATIC:
		return "link it dynamically, or use its allocator's own profiler";
	case PROG_GO:
		return "use Go's heap profiler, runtime/pprof (net/http/pprof serves it at "
		       "/debug/pprof/heap for go tool pprof)";
	case PROG_CGO:
		return "start it with memwatch run -- PROGRAM to sample its C (cgo) allocations; for "
		       "the Go heap, use Go's heap profiler, runtime/pprof (go tool pprof)";
	case PROG_MUSL:
		return "build it with glibc (gcc rather than musl-gcc, a Debian rather than an "
		       "Alpine image) to sample its allocations";
	default:
		return "build it with glibc to sample its allocations";
	}
}
