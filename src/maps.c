/* maps.c: where a process's resident memory is, by kind of mapping, from
 * /proc/PID/smaps. Read only when a snapshot is stored: smaps walks the page
 * tables of every mapping, which is too dear for the watch's every sample. */
#include "config.h"
#include "maps.h"
#include "perfmap.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's non-main arenas are heaps reserved HEAP_MAX_SIZE at a time (64 MiB on
 * 64-bit: twice the largest mmap threshold) and aligned to it; the part not yet
 * in use stays PROT_NONE right above. Each heap starts with its heap_info: the
 * arena's state (right after it in an arena's first heap), the heap before it,
 * its size in use and the size made read-write (glibc 2.35 added the page size
 * after them). Other allocators reserve aligned regions too (mimalloc's
 * segments): only that header in the memory tells a glibc heap. */
#define ARENA_HEAP_MAX ((uint64_t)64 << 20)

struct heap_info {
	uint64_t ar_ptr, prev, size, mprotect_size;
};

/* One mapping of smaps, with the figures of its lines. */
struct mapping {
	uint64_t lo, hi;
	char perms[5];
	uint64_t inode;
	char *path;                  /* malloc'd; "" for an anonymous mapping */
	uint64_t size, rss, anon, swap;
};

/* The sums being built, keyed by (kind, name). */
struct sums {
	struct snap_region *v;
	size_t n, cap;
	bool failed;
};

static void sums_add(struct sums *s, uint32_t kind, const char *name, const struct mapping *m)
{
	size_t i;
	struct snap_region *g;

	for (i = 0; i < s->n; i++) {
		g = &s->v[i];
		if (g->kind == kind && (g->name == name || (g->name && name && !strcmp(g->name, name))))
			break;
	}
	if (i == s->n) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 32;
			struct snap_region *v = realloc(s->v, cap * sizeof *v);
			if (!v) {
				s->failed = true;
				return;
			}
			s->v = v;
			s->cap = cap;
		}
		g = &s->v[s->n];
		memset(g, 0, sizeof *g);
		g->kind = kind;
		if (name && !(g->name = strdup(name))) {
			s->failed = true;
			return;
		}
		s->n++;
	}
	g = &s->v[i];
	g->mappings++;
	g->size += m->size;
	g->rss += m->rss;
	g->anon += m->anon;
	g->swap += m->swap;
}

/* Does the mapping hold the stack pointer of some thread? */
static bool holds_sp(const struct mapping *m, const uint64_t *sps, size_t nsps)
{
	for (size_t i = 0; i < nsps; i++)
		if (sps[i] >= m->lo && sps[i] < m->hi)
			return true;
	return false;
}

static bool is_guard(const struct mapping *m)
{
	return m && !m->path[0] && strncmp(m->perms, "---", 3) == 0;
}

/* Does the read-write mapping m start with a glibc heap_info (read through
 * rd)? The heap's sizes fit the mapping, the heap before it is another heap,
 * and its arena is right after it (a first heap: sizeof (heap_info) is 32, or
 * 48 from glibc 2.35) or in another heap. */
static bool glibc_heap(const struct mapping *m, maps_read_mem *rd, void *ctx)
{
	struct heap_info h;
	uint64_t len = m->hi - m->lo;

	if (!rd || m->lo % ARENA_HEAP_MAX != 0 || len > ARENA_HEAP_MAX ||
	    strncmp(m->perms, "rw", 2) != 0 || !rd(ctx, m->lo, &h, sizeof h))
		return false;
	if (h.size == 0 || h.size > len || h.mprotect_size < h.size || h.mprotect_size > ARENA_HEAP_MAX ||
	    h.size % 4096 != 0 || h.mprotect_size % 4096 != 0)
		return false;
	if (h.prev == 0)
		return h.ar_ptr == m->lo + 32 || h.ar_ptr == m->lo + 48;
	return h.prev % ARENA_HEAP_MAX == 0 && h.prev != m->lo &&
	       (h.ar_ptr % ARENA_HEAP_MAX == 32 || h.ar_ptr % ARENA_HEAP_MAX == 48);
}

/* The kind of mapping m, after prev (NULL at the start) of kind prev_kind; *name
 * is set for the kinds that are summed by name. A thread stack is a mapping
 * that holds a thread's stack pointer, or the kernel's [stack]; an arena is a
 * glibc heap (its header read through rd) and the reserve right above it; any
 * other private anonymous mapping is anonymous: no guess from its neighbours or
 * its alignment, which other allocators' regions share. */
static uint32_t classify(const struct mapping *m, const struct mapping *prev, uint32_t prev_kind,
			 const uint64_t *sps, size_t nsps, maps_read_mem *rd, void *ctx,
			 const char **name)
{
	const char *p = m->path;
	bool shared = m->perms[3] == 's';

	*name = NULL;
	if (!strcmp(p, "[heap]"))
		return SNAP_REGION_HEAP;
	if (!strcmp(p, "[stack]") || !strncmp(p, "[stack:", 7))
		return SNAP_REGION_STACK;
	if (!strncmp(p, "[anon:", 6)) {
		*name = p;
		return SNAP_REGION_ANON_NAMED;
	}
	if (!strncmp(p, "[anon_shmem:", 12)) {
		*name = p;
		return SNAP_REGION_SHMEM;
	}
	if (p[0] == '[')
		return SNAP_REGION_OTHER;
	if (p[0]) {
		*name = p;
		if (!strncmp(p, "/memfd:", 7) || !strncmp(p, "/dev/shm/", 9) ||
		    !strncmp(p, "/SYSV", 5) || !strncmp(p, "/dev/zero", 9))
			return SNAP_REGION_SHMEM;
		return SNAP_REGION_FILE;
	}
	if (shared)
		return SNAP_REGION_SHMEM;
	if (glibc_heap(m, rd, ctx))
		return SNAP_REGION_ARENA;
	if (is_guard(m) && prev && prev_kind == SNAP_REGION_ARENA && !is_guard(prev) &&
	    prev->hi == m->lo && m->hi <= prev->lo + ARENA_HEAP_MAX)
		return SNAP_REGION_ARENA;
	if (!is_guard(m) && holds_sp(m, sps, nsps))
		return SNAP_REGION_STACK;
	return SNAP_REGION_ANON;
}

/* A header line of smaps: "lo-hi perms offset dev inode [path]". */
static bool parse_header(const char *line, struct mapping *m)
{
	unsigned long long lo, hi, off, inode;
	char perms[5], dev[16];
	int pos = 0;
	const char *path;

	if (sscanf(line, "%llx-%llx %4s %llx %15s %llu %n", &lo, &hi, perms, &off, dev, &inode,
		   &pos) < 6)
		return false;
	path = pos ? line + pos : "";
	while (*path == ' ')
		path++;
	memset(m, 0, sizeof *m);
	m->lo = lo;
	m->hi = hi;
	memcpy(m->perms, perms, sizeof m->perms);
	m->inode = inode;
	m->path = strdup(path);
	if (!m->path)
		return false;
	m->path[strcspn(m->path, "\n")] = '\0';
	return true;
}

/* A figure line ("Rss:    1234 kB") into m. */
static void parse_figure(const char *line, struct mapping *m)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "Size:", offsetof(struct mapping, size) },
		{ "Rss:", offsetof(struct mapping, rss) },
		{ "Anonymous:", offsetof(struct mapping, anon) },
		{ "Swap:", offsetof(struct mapping, swap) },
	};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		size_t k = strlen(keys[i].key);
		if (!strncmp(line, keys[i].key, k)) {
			*(uint64_t *)((char *)m + keys[i].off) = strtoull(line + k, NULL, 10) * 1024;
			return;
		}
	}
}

int maps_parse(FILE *f, const uint64_t *sps, size_t nsps, maps_read_mem *rd, void *ctx,
	       struct snap_region **out, size_t *n)
{
	uint32_t kind = SNAP_REGION_OTHER;
	struct mapping *v = NULL;
	size_t nv = 0, cap = 0, i;
	struct sums s = { 0 };
	char *line = NULL;
	size_t linecap = 0;
	bool failed = false;

	/* the whole list first: a reserve's kind depends on the mapping below */
	while (getline(&line, &linecap, f) > 0) {
		if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
			if (nv == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct mapping *nvv = realloc(v, ncap * sizeof *v);
				if (!nvv) {
					failed = true;
					break;
				}
				v = nvv;
				cap = ncap;
			}
			if (parse_header(line, &v[nv]))
				nv++;
		} else if (nv) {
			parse_figure(line, &v[nv - 1]);
		}
	}
	free(line);
	for (i = 0; i < nv && !failed; i++) {
		const char *name;
		kind = classify(&v[i], i ? &v[i - 1] : NULL, kind, sps, nsps, rd, ctx, &name);
		sums_add(&s, kind, name, &v[i]);
	}
	for (i = 0; i < nv; i++)
		free(v[i].path);
	free(v);
	if (failed || s.failed) {
		maps_free(s.v, s.n);
		return -1;
	}
	*out = s.v;
	*n = s.n;
	return 0;
}

/* The stack pointers of pid's threads that are in a system call or stopped
 * (/proc/PID/task/TID/syscall: "nr args... sp pc", or "-1 sp pc"); a running
 * thread has none to give. Caller frees. */
static uint64_t *thread_sps(pid_t pid, size_t *n)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	uint64_t *v = NULL;
	size_t nv = 0, cap = 0;

	*n = 0;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return NULL;
	while ((e = readdir(d)) != NULL) {
		char buf[256], *last, *prev;
		FILE *f;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%.16s/syscall", (int)pid, e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof buf, f)) {
			buf[strcspn(buf, "\n")] = '\0';
			last = strrchr(buf, ' ');
			if (last) {
				*last = '\0';
				prev = strrchr(buf, ' ');
				if (prev && nv < 4096) {
					if (nv == cap) {
						cap = cap ? cap * 2 : 16;
						v = xrealloc(v, cap * sizeof *v);
					}
					v[nv++] = strtoull(prev + 1, NULL, 16);
				}
			}
		}
		fclose(f);
	}
	closedir(d);
	*n = nv;
	return v;
}

/* maps_read_mem through /proc/PID/mem (ctx: its descriptor). */
static bool read_proc_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	int fd = *(int *)ctx;
	return fd >= 0 && pread(fd, buf, len, (off_t)addr) == (ssize_t)len;
}

int maps_read(pid_t pid, struct snap_region **out, size_t *n, char **cause)
{
	char path[64];
	FILE *f;
	uint64_t *sps;
	size_t nsps;
	int rc, memfd;

	snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		*cause = xasprintf("cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	sps = thread_sps(pid, &nsps);
	/* arenas are told by their header: without the right to read the
	 * process's memory, they are anonymous mappings */
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	memfd = open(path, O_RDONLY | O_CLOEXEC);
	rc = maps_parse(f, sps, nsps, read_proc_mem, &memfd, out, n);
	if (memfd >= 0)
		close(memfd);
	snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
	if (rc == 0 && ferror(f)) {
		maps_free(*out, *n);
		rc = -1;
		*cause = xasprintf("cannot read %s: %s", path, strerror(errno));
	} else if (rc < 0) {
		*cause = xasprintf("cannot read %s: out of memory", path);
	}
	fclose(f);
	free(sps);
	return rc;
}

void maps_free(struct snap_region *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
}

const char *maps_kind_name(uint32_t kind)
{
	switch (kind) {
	case SNAP_REGION_HEAP: return "brk heap";
	case SNAP_REGION_ARENA: return "malloc arenas";
	case SNAP_REGION_ANON: return "anonymous mappings";
	case SNAP_REGION_ANON_NAMED: return "named anonymous";
	case SNAP_REGION_STACK: return "thread stacks";
	case SNAP_REGION_FILE: return "files";
	case SNAP_REGION_SHMEM: return "shared memory";
	default: return "other";
	}
}

int maps_add_to_snapshot(struct snapshot *s, pid_t pid, char **cause)
{
	struct snap_region *v;
	size_t n;

	if (maps_read(pid, &v, &n, cause) < 0)
		return -1;
	maps_free(s->regions, s->nregions);
	s->regions = v;
	s->nregions = n;
	s->has_regions = true;
	return 0;
}

/* What the agent could not read of its process where no /proc is mounted in
 * the process's root (a chroot, a container without one): its executable
 * (the main program's module is named by it), its command line and its RSS,
 * read from ours. The executable's path is then the one here, where its
 * symbols are read. */
static void identity_from_proc(struct snapshot *s, pid_t pid)
{
	char path[64], buf[4096];
	ssize_t n;
	FILE *f;

	if (!s->exe || !*s->exe) {
		snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
		n = readlink(path, buf, sizeof buf - 1);
		if (n > 0) {
			buf[n] = 0;
			free(s->exe);
			s->exe = xstrdup(buf);
			/* the loader names the main program "" */
			for (size_t i = 0; i < s->nmodules; i++)
				if (s->modules[i].path && !*s->modules[i].path) {
					free(s->modules[i].path);
					s->modules[i].path = xstrdup(buf);
				}
		}
	}
	if (!s->cmdline || !*s->cmdline) {
		snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
		f = fopen(path, "re");
		n = f ? (ssize_t)fread(buf, 1, sizeof buf - 1, f) : 0;
		if (f)
			fclose(f);
		while (n > 0 && buf[n - 1] == 0)
			n--;
		if (n > 0) {
			for (ssize_t i = 0; i < n; i++)
				if (buf[i] == 0)
					buf[i] = ' ';
			buf[n] = 0;
			free(s->cmdline);
			s->cmdline = xstrdup(buf);
		}
	}
	if (!s->rss_bytes) {
		unsigned long long size, rss;
		snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
		f = fopen(path, "re");
		if (f) {
			if (fscanf(f, "%llu %llu", &size, &rss) == 2)
				s->rss_bytes = (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
			fclose(f);
		}
	}
}

void maps_enrich_snapshot(struct snapshot *s, pid_t pid)
{
	char *cause = NULL;

	identity_from_proc(s, pid);
	if (maps_add_to_snapshot(s, pid, &cause) < 0)
		free(cause);
	perfmap_embed(s, pid);
}
