/* mksnap.c: a target that writes a heap snapshot of itself, for the report
 * tests: it allocates at known call sites (one of them in an always_inline
 * helper), captures its own stack at each (glibc backtrace(): return addresses,
 * as the agent records them), makes the frames module-relative with the module
 * table of dl_iterate_phdr, and writes a .snap with snapshot_write. Every
 * allocation is recorded (sample rate 1), so the figures are exact.
 *
 *   mksnap [options] OUT.snap
 *     -g N   blocks of 4096 bytes from the inlined helper (grow_site)   default 10
 *     -s N   blocks of 1000 bytes (steady_site) and of 2000 bytes (calloc_site,
 *            recorded under a calloc frame, as an allocator frame on top) default 5
 *     -k N   blocks of 512 bytes at shrink_site                         default 3
 *     -t N   blocks of 64 bytes at tiny_site                            default 0
 *     -B N   blocks of 1 MiB at big_site                                default 0
 *     -M N   also map and touch N MiB that are not recorded (RSS the
 *            snapshot's stacks do not explain)
 *     -R R   record as if sampled at mean rate R with every allocation a
 *            sample: each block weighs s / (1 - e^(-s/R)) bytes, as the
 *            agent's estimate of a sampled block does (default 1: exact)
 *     -m     keep only the frames in the main program (fixtures that must
 *            not depend on this machine's libc)
 *     -e     embed the symbols (symbolize_embed) before writing
 *     -S N   instead: N synthetic distinct stacks whose frames are random
 *            code addresses of the loaded modules (libc, libstdc++, libz,
 *            this program), for benchmarks; -d DEPTH frames each (default 8);
 *            -r SEED varies the figures (not the frames) between snapshots
 *     -p     print the bias of the main program on stdout
 *
 * Lines tagged LINE:name are looked up by the tests. */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <inttypes.h>
#include <link.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "snapshot.h"
#include "symbolize.h"
#include "util.h"

#define MAX_FRAMES 64

static struct snapshot snap;
static size_t stacks_cap;
static bool main_only;
static void *calloc_addr;

/* Called by dl_iterate_phdr: one module entry per loaded object. */
static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
	struct snap_module *m;
	uint64_t lo = UINT64_MAX, hi = 0;
	int i;

	(void)size;
	(void)data;
	snap.modules = xrealloc(snap.modules, (snap.nmodules + 1) * sizeof *snap.modules);
	m = &snap.modules[snap.nmodules++];
	memset(m, 0, sizeof *m);
	if (snap.nmodules == 1) {
		/* the main program: dl_iterate_phdr names it "" */
		char buf[4096];
		ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
		buf[n > 0 ? n : 0] = '\0';
		m->path = xstrdup(buf);
	} else {
		m->path = xstrdup(info->dlpi_name ? info->dlpi_name : "");
	}
	m->bias = info->dlpi_addr;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD) {
			if (ph->p_vaddr < lo)
				lo = ph->p_vaddr;
			if (ph->p_vaddr + ph->p_memsz > hi)
				hi = ph->p_vaddr + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE) {
			/* walk the notes for NT_GNU_BUILD_ID "GNU" */
			const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
			const char *end = p + ph->p_memsz;
			while (p + sizeof(ElfW(Nhdr)) <= end) {
				const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
				const char *name = p + sizeof *nh;
				const char *desc = name + ((nh->n_namesz + 3) & ~3u);
				if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
				    memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= 64) {
					memcpy(m->build_id, desc, nh->n_descsz);
					m->build_id_len = nh->n_descsz;
				}
				p = desc + ((nh->n_descsz + 3) & ~3u);
			}
		}
	}
	m->lo = info->dlpi_addr + (lo == UINT64_MAX ? 0 : lo);
	m->hi = info->dlpi_addr + hi;
	return 0;
}

/* The module holding address a, or SNAP_NO_MODULE. */
static uint32_t module_of(uintptr_t a)
{
	size_t i;
	for (i = 0; i < snap.nmodules; i++)
		if (a >= snap.modules[i].lo && a < snap.modules[i].hi)
			return (uint32_t)i;
	return SNAP_NO_MODULE;
}

static uint64_t rate = 1;

/* Attribute one allocation of size n to the stack given by raw addresses. */
static void account(void **pcs, int n, size_t size)
{
	struct snap_frame fr[MAX_FRAMES + 1];
	uint32_t nf = 0;
	size_t i;
	int j;

	for (j = 0; j < n && nf < MAX_FRAMES; j++) {
		uint32_t m = module_of((uintptr_t)pcs[j]);
		if (main_only && m != 0)
			continue;
		fr[nf].module = m;
		fr[nf].offset = m == SNAP_NO_MODULE ? (uintptr_t)pcs[j]
						    : (uintptr_t)pcs[j] - snap.modules[m].bias;
		nf++;
	}
	for (i = 0; i < snap.nstacks; i++) {
		struct snap_stack *st = &snap.stacks[i];
		if (st->nframes == nf && memcmp(st->frames, fr, nf * sizeof *fr) == 0)
			break;
	}
	if (i == snap.nstacks) {
		struct snap_stack *st;
		if (snap.nstacks == stacks_cap) {
			stacks_cap = stacks_cap ? stacks_cap * 2 : 64;
			snap.stacks = xrealloc(snap.stacks, stacks_cap * sizeof *snap.stacks);
		}
		st = &snap.stacks[snap.nstacks++];
		memset(st, 0, sizeof *st);
		st->nframes = nf;
		st->frames = xmalloc((nf ? nf : 1) * sizeof *fr);
		memcpy(st->frames, fr, nf * sizeof *fr);
	}
	{
		double p = rate > 1 ? -expm1(-(double)size / (double)rate) : 1;
		uint64_t bytes = (uint64_t)((double)size / p + 0.5);
		uint64_t blocks = (uint64_t)(1 / p + 0.5);
		snap.stacks[i].live_bytes += bytes;
		snap.stacks[i].live_blocks += blocks;
		snap.stacks[i].live_samples++;
		snap.stacks[i].alloc_bytes += bytes;
		snap.stacks[i].alloc_blocks += blocks;
	}
}

/* Record the allocation p of n bytes under the caller's stack; returns p. With
 * under_calloc, a frame inside libc's calloc goes on top, as an allocator frame
 * an unwinder inside a hook would see. */
static __attribute__((noinline)) void *record_as(void *p, size_t n, bool under_calloc)
{
	void *pcs[MAX_FRAMES + 2];
	int k = backtrace(pcs + 1, MAX_FRAMES + 1);

	if (!p)
		abort();
	/* pcs[1] is inside this function: drop it */
	if (under_calloc) {
		pcs[1] = (char *)calloc_addr + 16;
		account(pcs + 1, k, n);
	} else {
		account(pcs + 2, k - 1, n);
	}
	return p;
}

static __attribute__((noinline)) void *record(void *p, size_t n)
{
	return record_as(p, n, false);
}

/* The leak lives in an inlined helper: the report must show the helper, its
 * line, and the line of its caller. */
static inline __attribute__((always_inline)) void *leaky_helper(size_t n)
{
	return record(malloc(n), n); /* LINE:helper */
}

static __attribute__((noinline)) void grow_site(int count)
{
	for (int i = 0; i < count; i++)
		leaky_helper(4096); /* LINE:grow_call */
}

static __attribute__((noinline)) void steady_site(int count)
{
	for (int i = 0; i < count; i++)
		record(malloc(1000), 1000); /* LINE:steady */
}

static __attribute__((noinline)) void calloc_site(int count)
{
	for (int i = 0; i < count; i++)
		record_as(calloc(1, 2000), 2000, true); /* LINE:calloc */
}

static __attribute__((noinline)) void shrink_site(int count)
{
	for (int i = 0; i < count; i++)
		record(malloc(512), 512); /* LINE:shrink */
}

static __attribute__((noinline)) void tiny_site(int count)
{
	for (int i = 0; i < count; i++)
		record(malloc(64), 64); /* LINE:tiny */
}

static __attribute__((noinline)) void big_site(int count)
{
	for (int i = 0; i < count; i++)
		record(malloc(1 << 20), 1 << 20); /* LINE:big */
}

/* Executable ranges of the loaded modules, to draw synthetic frames from. */
struct range {
	uint32_t module;
	uint64_t lo, hi;        /* offsets */
};
static struct range *ranges;
static size_t nranges;

static int add_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
	uint32_t m = module_of(info->dlpi_addr + info->dlpi_phdr[0].p_vaddr);
	(void)size;
	(void)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || m == SNAP_NO_MODULE ||
		    strstr(snap.modules[m].path, "vdso"))
			continue;
		ranges = xrealloc(ranges, (nranges + 1) * sizeof *ranges);
		ranges[nranges].module = m;
		ranges[nranges].lo = ph->p_vaddr + 16;
		ranges[nranges].hi = ph->p_vaddr + ph->p_memsz;
		nranges++;
	}
	return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t value_seed;
static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* n distinct stacks of depth frames over a pool of code addresses shared
 * between stacks (as real programs share their callers). */
static void synthetic(size_t n, unsigned depth)
{
	size_t pool = n / 2 + 1000, i;
	struct snap_frame *p = xmalloc(pool * sizeof *p);
	size_t total = 0;

	for (i = 0; i < nranges; i++)
		total += ranges[i].hi - ranges[i].lo;
	for (i = 0; i < pool; i++) {
		uint64_t x = next_random() % total;
		size_t r = 0;
		while (x >= ranges[r].hi - ranges[r].lo) {
			x -= ranges[r].hi - ranges[r].lo;
			r++;
		}
		p[i].module = ranges[r].module;
		p[i].offset = ranges[r].lo + x;
	}
	snap.stacks = xcalloc(n, sizeof *snap.stacks);
	snap.nstacks = n;
	for (i = 0; i < n; i++) {
		struct snap_stack *st = &snap.stacks[i];
		st->nframes = depth;
		st->frames = xmalloc(depth * sizeof *st->frames);
		/* the innermost frame is unique per stack: the stacks are distinct */
		st->frames[0] = p[i % pool];
		st->frames[0].offset += i / pool;
		for (unsigned j = 1; j < depth; j++)
			st->frames[j] = p[next_random() % pool];
		st->live_samples = 1 + (next_random() ^ value_seed * (i + 1)) % 8;
		st->live_blocks = st->live_samples;
		st->live_bytes = st->live_blocks * (64 + (next_random() ^ value_seed) % 4096);
		st->alloc_blocks = st->live_blocks * 2;
		st->alloc_bytes = st->live_bytes * 2;
	}
	free(p);
}

static uint64_t rss_bytes(void)
{
	unsigned long size, res;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &res) != 2)
		res = 0;
	fclose(f);
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

int main(int argc, char **argv)
{
	int grow = 10, steady = 5, shrink = 3, tiny = 0, big = 0, mapped = 0, c;
	unsigned depth = 8;
	size_t nsynth = 0;
	bool embed = false, print_bias = false;
	char *cause = NULL;
	struct mallinfo2 mi;
	size_t len = 0;

	while ((c = getopt(argc, argv, "g:s:k:t:B:M:R:meS:d:pr:")) != -1) {
		switch (c) {
		case 'g': grow = atoi(optarg); break;
		case 's': steady = atoi(optarg); break;
		case 'k': shrink = atoi(optarg); break;
		case 't': tiny = atoi(optarg); break;
		case 'B': big = atoi(optarg); break;
		case 'M': mapped = atoi(optarg); break;
		case 'R': rate = strtoull(optarg, NULL, 10); break;
		case 'm': main_only = true; break;
		case 'e': embed = true; break;
		case 'S': nsynth = strtoul(optarg, NULL, 10); break;
		case 'd': depth = (unsigned)atoi(optarg); break;
		case 'p': print_bias = true; break;
		case 'r': value_seed = strtoull(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: mksnap [-g N] [-s N] [-k N] [-t N] [-B N] [-M MiB] [-R RATE] [-m] [-e] [-S N [-d D]] [-p] OUT.snap\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: mksnap [-g N] [-s N] [-k N] [-t N] [-B N] [-M MiB] [-R RATE] [-m] [-e] [-S N [-d D]] [-p] OUT.snap\n");
		return 2;
	}
	snap.capture_start_ns = wall_ns();
	snap.pid = getpid();
	snap.sample_rate = rate ? rate : 1;
	snap.max_depth = MAX_FRAMES;
	{
		char buf[4096];
		ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
		buf[n > 0 ? n : 0] = '\0';
		snap.exe = xstrdup(buf);
	}
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	snap.cmdline = xcalloc(1, len + 1);
	for (int i = 0; i < argc; i++) {
		if (i)
			strcat(snap.cmdline, " ");
		strcat(snap.cmdline, argv[i]);
	}
	/* libraries whose code the synthetic stacks may use */
	if (nsynth) {
		dlopen("libstdc++.so.6", RTLD_NOW);
		dlopen("libz.so.1", RTLD_NOW);
	}
	calloc_addr = (void *)calloc;
	dl_iterate_phdr(add_module, NULL);

	if (nsynth) {
		dl_iterate_phdr(add_ranges, NULL);
		synthetic(nsynth, depth);
	} else {
		grow_site(grow);
		steady_site(steady);
		calloc_site(steady);
		shrink_site(shrink);
		tiny_site(tiny);
		big_site(big);
	}
	if (mapped > 0) {
		size_t n = (size_t)mapped << 20;
		char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			abort();
		memset(m, 1, n);
	}
	mi = mallinfo2();
	snap.mallinfo.present = true;
	snap.mallinfo.arena = mi.arena;
	snap.mallinfo.mmapped = mi.hblkhd;
	snap.mallinfo.in_use = mi.uordblks + mi.hblkhd;
	snap.mallinfo.free_bytes = mi.fordblks;
	snap.mallinfo.releasable = mi.keepcost;
	snap.rss_bytes = rss_bytes();
	snap.time_ns = wall_ns();
	if (embed && symbolize_embed(&snap, NULL, NULL, 0, &cause) < 0) {
		fprintf(stderr, "mksnap: %s\n", cause);
		return 1;
	}
	if (snapshot_write(&snap, argv[optind], true, &cause) < 0) {
		fprintf(stderr, "mksnap: %s\n", cause);
		return 1;
	}
	if (print_bias)
		printf("0x%" PRIx64 "\n", snap.modules[0].bias);
	return 0;
}
