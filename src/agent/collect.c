/* collect.c: a snapshot of this process, built inside it: the loaded modules
 * (with their build-ids and load biases, so that frames can be stored
 * module-relative), the process's figures (command line, RSS, glibc's
 * mallinfo), and the sampled stacks copied out of heap.c, with what each
 * runtime (runtime.h) adds at its snapshot moments, encoded in the
 * snapshot format (snapshot/). The control thread sends it (server.c); at exit
 * it is written into a file memwatch run handed over (agent.c). */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "snapshot.h"

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
	/* The agent loaded from a memfd (the injector's /proc/self/fd/N, closed
	 * since): named as the process's maps show it. */
	if (lo <= mw_self_lo && mw_self_lo < hi && !strncmp(name, "/proc/self/fd/", 14))
		name = "/memfd:libmemwatch-agent.so (deleted)";
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

int mw_collect(unsigned char **buf, size_t *len, uint64_t wait_ns, uint64_t refs_ns,
	       uint64_t refs_objects)
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
	s->has_temp = true;
	s->temp_window_ns = mw_temp_window_ns();
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
		d->temp_bytes = st[i].temp_bytes;
		d->temp_blocks = st[i].temp_blocks;
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
	/* the types before a reset may renumber the stacks */
	if (mw_runtimes_types(s) < 0)
		goto out;
	mw_snapshot_end();
	locked = false;
	if (mw_runtimes_snapshot(s, wait_ns) < 0)
		goto out;
	/* after the heap's lock is let go: a search may wait for the runtime's
	 * lock (CPython's GIL), which a thread that holds it may hold while it
	 * waits for the heap's */
	if (refs_ns && mw_runtimes_referrers(s, refs_ns, refs_objects) < 0)
		goto out;
	r = snapshot_encode(s, buf, len);
out:
	if (locked)
		mw_snapshot_end();
	free(st);
	snapshot_free(s);
	return r;
}

int mw_collect_write(int fd)
{
	unsigned char *buf = NULL;
	size_t len = 0, off = 0;
	int r = -1;

	if (mw_collect(&buf, &len, 0, 0, 0) < 0)
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
