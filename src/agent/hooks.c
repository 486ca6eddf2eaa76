/* hooks.c: the allocation hooks that every loaded module's calls to malloc,
 * free and friends, the mmap family, brk/sbrk (and dlopen) are routed through
 * (by patch.c), and the table of the program's own sampled mappings. */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent.h"
#include "snapshot.h"

struct mw_orig mw_orig;

/* ------------------------------------------------------------------------- */
/* The hooks. When capture is off each is one predictable branch and a tail
 * call; when on, the unsampled path is a thread-local subtraction and compare. */

/* Count an allocation of size bytes at p against this thread's countdown; the
 * rare crossing of a sample point goes to the slow path. */
static inline __attribute__((always_inline)) void *account(void *p, size_t size, int epoch)
{
	uint64_t left = mw_tls.left;
	if (likely(size < left && mw_tls.epoch == (uint32_t)epoch)) {
		mw_tls.left = left - size - 1;
		return p;
	}
	return mw_sampled_alloc(p, size);
}

static inline int capturing(void)
{
	return __atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED);
}

/* Each hook keeps its common paths free of any frame of ours: capture off, or
 * an allocation that is not a sample point, ends in a tail jump to the
 * allocator; only a sample point goes through a separate function (which
 * calls the allocator and then records the block). */
#define ON __attribute__((noinline))

static ON void *malloc_slow(size_t n)
{
	return mw_sampled_alloc(mw_orig.malloc(n), n);
}

static void *hk_malloc(size_t n)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.malloc(n);
	return malloc_slow(n);
}

static ON void *calloc_slow(size_t a, size_t b, size_t n)
{
	return mw_sampled_alloc(mw_orig.calloc(a, b), n);
}

static void *hk_calloc(size_t a, size_t b)
{
	int e = capturing();
	size_t n;
	if (likely(!e) || __builtin_mul_overflow(a, b, &n) || likely(mw_unsampled(n, e)))
		return mw_orig.calloc(a, b);
	return calloc_slow(a, b, n);
}

static ON void free_on(void *p)
{
	/* The record goes before the block: once freed, another thread may get
	 * the same address back and sample it. */
	mw_sampled_free(p);
	mw_orig.free(p);
}

static void hk_free(void *p)
{
	if (likely(!capturing()) || !p || likely(!mw_maybe_sampled(p)))
		return mw_orig.free(p);
	free_on(p);
}

/* A realloc is the free of the old block and the allocation of the new one,
 * attributed to the realloc's own call stack. */
static ON void *realloc_on(void *p, size_t n, bool array, size_t a, size_t b, int e)
{
	struct mw_taken t;
	bool had = false;
	void *q;

	if (p && mw_maybe_sampled(p))
		had = mw_take_record(p, &t);
	q = array ? mw_orig.reallocarray(p, a, b) : mw_orig.realloc(p, n);
	if (!q) {
		/* Failed with n > 0: the old block is still there. n == 0: freed. */
		if (had && n != 0)
			mw_put_record(p, &t);
		return q;
	}
	return account(q, n, e);
}

static void *hk_realloc(void *p, size_t n)
{
	int e = capturing();
	if (likely(!e))
		return mw_orig.realloc(p, n);
	return realloc_on(p, n, false, 0, 0, e);
}

static void *hk_reallocarray(void *p, size_t a, size_t b)
{
	int e = capturing();
	size_t n;
	if (likely(!e) || __builtin_mul_overflow(a, b, &n))
		return mw_orig.reallocarray(p, a, b);
	return realloc_on(p, n, true, a, b, e);
}

static ON int posix_memalign_slow(void **m, size_t align, size_t n)
{
	int r = mw_orig.posix_memalign(m, align, n);
	if (r == 0)
		mw_sampled_alloc(*m, n);
	return r;
}

static int hk_posix_memalign(void **m, size_t align, size_t n)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.posix_memalign(m, align, n);
	return posix_memalign_slow(m, align, n);
}

static ON void *aligned_alloc_slow(size_t align, size_t n)
{
	return mw_sampled_alloc(mw_orig.aligned_alloc(align, n), n);
}

static void *hk_aligned_alloc(size_t align, size_t n)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.aligned_alloc(align, n);
	return aligned_alloc_slow(align, n);
}

static ON void *memalign_slow(size_t align, size_t n)
{
	return mw_sampled_alloc(mw_orig.memalign(align, n), n);
}

static void *hk_memalign(size_t align, size_t n)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.memalign(align, n);
	return memalign_slow(align, n);
}

static ON void *valloc_slow(size_t n)
{
	return mw_sampled_alloc(mw_orig.valloc(n), n);
}

static void *hk_valloc(size_t n)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.valloc(n);
	return valloc_slow(n);
}

static ON void *pvalloc_slow(size_t n)
{
	return mw_sampled_alloc(mw_orig.pvalloc(n), n);
}

static void *hk_pvalloc(size_t n)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.pvalloc(n);
	return pvalloc_slow(n);
}

/* True when the object behind lm names a search path of its own: only then can
 * a slash-less dlopen from it find something the agent's own lookup would not. */
static bool has_own_search_path(const struct link_map *lm)
{
	const ElfW(Dyn) *d;
	if (!lm || !lm->l_ld)
		return false;
	for (d = lm->l_ld; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_RPATH || d->d_tag == DT_RUNPATH)
			return true;
	return false;
}

/* dlopen on behalf of the code at caller: glibc searches a slash-less name along
 * the *calling* object's RPATH/RUNPATH, and with the hook in between the caller
 * would be the agent. So walk the caller's search path (dlinfo RTLD_DI_SERINFO,
 * which has $ORIGIN expanded) and open the first file that loads; otherwise
 * fall back to the plain lookup (LD_LIBRARY_PATH, ld.so.cache, default dirs). */
static void *open_for_caller(const char *name, int flags, const void *caller)
{
	struct link_map *lm = NULL;
	Dl_info info;
	Dl_serinfo size, *si = NULL;
	void *h = NULL;
	unsigned i;
	size_t nlen;

	if (!name || strchr(name, '/') || !caller)
		return mw_orig.dlopen(name, flags);
	if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !has_own_search_path(lm))
		return mw_orig.dlopen(name, flags);
	/* Already loaded under that name: the loader would return it first. */
	h = mw_orig.dlopen(name, flags | RTLD_NOLOAD);
	if (h)
		return h;
	if (dlinfo(lm, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size < sizeof size)
		goto plain;
	si = malloc(size.dls_size);
	if (!si)
		goto plain;
	memcpy(si, &size, sizeof size);
	if (dlinfo(lm, RTLD_DI_SERINFO, si) != 0)
		goto plain;
	nlen = strlen(name);
	for (i = 0; i < si->dls_cnt && !h; i++) {
		const char *dir = si->dls_serpath[i].dls_name;
		size_t dlen = strlen(dir);
		char *path = malloc(dlen + nlen + 2);
		if (!path)
			break;
		memcpy(path, dir, dlen);
		path[dlen] = '/';
		memcpy(path + dlen + 1, name, nlen + 1);
		if (access(path, F_OK) == 0)
			h = mw_orig.dlopen(path, flags);
		free(path);
	}
plain:
	free(si);
	if (!h)
		return mw_orig.dlopen(name, flags);
	dlerror(); /* a file that failed along the way is no error of the caller's */
	return h;
}

static void *hk_dlopen(const char *name, int flags)
{
	const void *caller = __builtin_return_address(0);
	void *h;

	/* No guard around the load: the new library's constructors allocate on
	 * the caller's behalf (through slots already hooked) and are sampled
	 * like any other code. */
	h = open_for_caller(name, flags, caller);
	/* New modules get their slots patched before the caller uses them. If the
	 * patcher is busy (a load from inside another load's constructor while the
	 * control thread waits for the loader lock), the control thread's next
	 * tick does it. */
	if (h && mw_hooks_installed()) {
		mw_tls.guard++;
		mw_hooks_refresh(false);
		mw_tls.guard--;
	}
	return h;
}

/* ------------------------------------------------------------------------- */
/* The mmap family and brk. Every mapping the program makes through its own
 * slots is sampled on the same countdown as malloc, by the length it asked for
 * (what its mmap mapped, touched or not): an anonymous one (private or shared)
 * of kind mmap, one of a descriptor (a file, memfd, shm) of kind file; the
 * program's own brk/sbrk growth of kind brk. An allocator's own calls never
 * come here: glibc's malloc calls its internal __mmap, __mremap and __sbrk
 * (libc.so.6 has no relocation for these names), and the slots of a module that
 * defines the real malloc are left alone (allocator_module). A table of the
 * sampled ranges, under a lock (these are system calls anyway), lets munmap,
 * mremap, MAP_FIXED and a lower break take them out or move them: a partial
 * unmap shrinks or splits a record, each remaining piece weighed by its share
 * of the length. A call made while the agent itself runs on this thread
 * (libunwind, a handler that interrupted a hook) passes straight through. */

size_t mw_page_size;

struct mrange {
	uintptr_t lo, hi;
	uint32_t kind;               /* the stack flags it was recorded with */
};

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mrange *mranges;
static size_t nmranges, capmranges;

static bool mrange_add(uintptr_t lo, uintptr_t hi, uint32_t kind)
{
	if (!mw_grow((void **)&mranges, nmranges, &capmranges, sizeof *mranges))
		return false;
	mranges[nmranges].lo = lo;
	mranges[nmranges].hi = hi;
	mranges[nmranges].kind = kind;
	nmranges++;
	return true;
}

/* The part [lo, hi) of a record r taken out (t), put back delta bytes away. */
static void put_piece(uintptr_t lo, uintptr_t hi, const struct mrange *r, uintptr_t delta,
		      const struct mw_taken *t)
{
	struct mw_taken p = *t;
	p.bytes = (uint64_t)((unsigned __int128)t->bytes * (hi - lo) / (r->hi - r->lo));
	if (!mrange_add(lo + delta, hi + delta, r->kind))
		return;
	mw_put_record((void *)(lo + delta), &p);
}

/* The memory [lo, hi) went delta bytes away (mremap), of which only the part
 * below keep is still mapped (keep == lo: none, the munmap case): take the
 * sampled ranges out of it, keep their parts outside in place and move the
 * kept parts inside. The new place must not overlap [lo, hi) (the kernel
 * refuses that), so a piece moved is never looked at twice. Under maps_lock. */
static void move_range(uintptr_t lo, uintptr_t hi, uintptr_t keep, uintptr_t delta)
{
	size_t i = 0;
	if (!delta)
		lo = keep;   /* in place: what is kept stays as it is */
	while (i < nmranges) {
		struct mrange r = mranges[i];
		struct mw_taken t;
		uintptr_t a = r.lo > lo ? r.lo : lo, b = r.hi < keep ? r.hi : keep;
		if (r.hi <= lo || r.lo >= hi) {
			i++;
			continue;
		}
		mranges[i] = mranges[--nmranges];
		if (!mw_take_record((void *)r.lo, &t))
			continue;   /* dropped by a reset meanwhile */
		if (r.lo < lo)
			put_piece(r.lo, lo, &r, 0, &t);
		if (r.hi > hi)
			put_piece(hi, r.hi, &r, 0, &t);
		if (a < b)
			put_piece(a, b, &r, delta, &t);
		/* The pieces went to the end, past the ones left to look at. */
		if (r.lo < lo || r.hi > hi || a < b)
			i = 0;
	}
}

/* [lo, hi) is no longer mapped as it was: take the sampled ranges out of it,
 * keeping the parts outside. Under maps_lock. */
static void forget_range(uintptr_t lo, uintptr_t hi)
{
	move_range(lo, hi, lo, 0);
}

static uintptr_t page_end(uintptr_t a, size_t len)
{
	uintptr_t e = a + len;
	if (e < a)
		return UINTPTR_MAX & ~(mw_page_size - 1);
	return (e + mw_page_size - 1) & ~(mw_page_size - 1);
}

/* The kind a new mapping of these flags is recorded with. */
static uint32_t map_kind(int flags)
{
	return flags & MAP_ANONYMOUS ? SNAP_STACK_MMAP : SNAP_STACK_MMAP | SNAP_STACK_FILE;
}

static ON void *mmap_on(bool is64, void *addr, size_t len, int prot, int flags, int fd, off_t off,
			bool sample)
{
	void *p;
	int err;

	mw_tls.guard++;
	pthread_mutex_lock(&maps_lock);
	p = is64 ? mw_orig.mmap64(addr, len, prot, flags, fd, off)
		 : mw_orig.mmap(addr, len, prot, flags, fd, off);
	err = errno;
	if (p != MAP_FAILED) {
		uintptr_t lo = (uintptr_t)p, hi = page_end(lo, len);
		/* MAP_FIXED replaced what was there; anything else landed where
		 * nothing was, which a range left by an unmap the hooks did not see
		 * (a raw system call) may still claim */
		if (nmranges)
			forget_range(lo, hi);
		if (sample && mw_sampled_mmap(p, len, map_kind(flags)))
			mrange_add(lo, hi, map_kind(flags));
	}
	pthread_mutex_unlock(&maps_lock);
	mw_tls.guard--;
	errno = err;
	return p;
}

/* A mapping at a sample point (the countdown moves for the others), or a
 * MAP_FIXED one that may replace sampled ranges: the slow path. */
static inline bool mmap_slow(size_t len, int flags, int e, bool *sample)
{
	if (mw_tls.guard)
		return false;
	*sample = len && !mw_unsampled(len, e);
	return *sample || ((flags & MAP_FIXED) && __atomic_load_n(&nmranges, __ATOMIC_RELAXED));
}

static void *hk_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	int e = capturing();
	bool sample;
	if (likely(!e) || !mmap_slow(len, flags, e, &sample))
		return mw_orig.mmap(addr, len, prot, flags, fd, off);
	return mmap_on(false, addr, len, prot, flags, fd, off, sample);
}

static void *hk_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	int e = capturing();
	bool sample;
	if (likely(!e) || !mmap_slow(len, flags, e, &sample))
		return mw_orig.mmap64(addr, len, prot, flags, fd, off);
	return mmap_on(true, addr, len, prot, flags, fd, off, sample);
}

static ON int munmap_on(void *addr, size_t len)
{
	int r, err;
	mw_tls.guard++;
	pthread_mutex_lock(&maps_lock);
	r = mw_orig.munmap(addr, len);
	err = errno;
	if (r == 0)
		forget_range((uintptr_t)addr, page_end((uintptr_t)addr, len));
	pthread_mutex_unlock(&maps_lock);
	mw_tls.guard--;
	errno = err;
	return r;
}

static int hk_munmap(void *addr, size_t len)
{
	if (likely(!capturing()) || mw_tls.guard || !__atomic_load_n(&nmranges, __ATOMIC_RELAXED))
		return mw_orig.munmap(addr, len);
	return munmap_on(addr, len);
}

/* The sampled ranges of the old mapping go where the kernel put it, cut at its
 * new length; growth is new memory, on the countdown like a new mapping of
 * nlen - olen bytes (sample), at the mremap's own call stack, of the kind of
 * the sampled range that ended the old mapping (mmap when none did: a mapping
 * never sampled, or mapped before capture, whose kind the table cannot tell). */
static ON void *mremap_on(void *old, size_t olen, size_t nlen, int flags, void *naddr, bool sample)
{
	void *q;
	int err;
	size_t i;

	mw_tls.guard++;
	pthread_mutex_lock(&maps_lock);
	q = mw_orig.mremap(old, olen, nlen, flags, naddr);
	err = errno;
	if (q != MAP_FAILED) {
		uintptr_t lo = (uintptr_t)old, hi = page_end(lo, olen);
		uintptr_t nlo = (uintptr_t)q, nhi = page_end(nlo, nlen), grow = nlo + (hi - lo);
		uint32_t kind = SNAP_STACK_MMAP;
		for (i = 0; i < nmranges && olen; i++)
			if (mranges[i].lo < hi && mranges[i].hi >= hi)
				kind = mranges[i].kind;
		/* where the mapping now reaches was not mapped before (or
		 * MREMAP_FIXED unmapped it): a range there is stale */
		if (nlo != lo && nmranges)
			forget_range(nlo, nhi);
		else if (nhi > hi && nmranges)
			forget_range(hi, nhi);
		if (olen && nmranges)
			move_range(lo, hi, nhi - nlo < hi - lo ? lo + (nhi - nlo) : hi, nlo - lo);
		if (sample && nhi > grow && mw_sampled_mmap((void *)grow, nlen - olen, kind))
			mrange_add(grow, nhi, kind);
	}
	pthread_mutex_unlock(&maps_lock);
	mw_tls.guard--;
	errno = err;
	return q;
}

static void *hk_mremap(void *old, size_t olen, size_t nlen, int flags, ...)
{
	void *naddr = NULL;
	int e = capturing();
	bool sample;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		naddr = va_arg(ap, void *);
		va_end(ap);
	}
	if (likely(!e) || mw_tls.guard)
		return mw_orig.mremap(old, olen, nlen, flags, naddr);
	sample = nlen > olen && !mw_unsampled(nlen - olen, e);
	if (!sample && !__atomic_load_n(&nmranges, __ATOMIC_RELAXED))
		return mw_orig.mremap(old, olen, nlen, flags, naddr);
	return mremap_on(old, olen, nlen, flags, naddr, sample);
}

/* The break moved from cur to to (brk or sbrk, under maps_lock): growth at a
 * sample point is recorded at cur, of kind brk; a lower break takes the
 * sampled ranges above it out. */
static void brk_moved(uintptr_t cur, uintptr_t to, bool sample)
{
	const uint32_t kind = SNAP_STACK_MMAP | SNAP_STACK_BRK;
	if (to < cur && nmranges)
		forget_range(to, cur);
	else if (to > cur && sample && mw_sampled_mmap((void *)cur, to - cur, kind))
		mrange_add(cur, to, kind);
}

static ON void *sbrk_on(intptr_t incr, bool sample)
{
	void *old;
	int err;
	mw_tls.guard++;
	pthread_mutex_lock(&maps_lock);
	old = mw_orig.sbrk(incr);
	err = errno;
	if (old != (void *)-1)
		brk_moved((uintptr_t)old, (uintptr_t)old + (uintptr_t)incr, sample);
	pthread_mutex_unlock(&maps_lock);
	mw_tls.guard--;
	errno = err;
	return old;
}

/* sbrk and brk called by the program itself (glibc's malloc moves the break
 * with its internal __sbrk, never through these slots). */
static void *hk_sbrk(intptr_t incr)
{
	int e = capturing();
	bool sample = false;
	if (likely(!e) || mw_tls.guard || incr == 0)
		return mw_orig.sbrk(incr);
	if (incr > 0)
		sample = !mw_unsampled((size_t)incr, e);
	if (!sample && (incr > 0 || !__atomic_load_n(&nmranges, __ATOMIC_RELAXED)))
		return mw_orig.sbrk(incr);
	return sbrk_on(incr, sample);
}

static ON int brk_on(void *addr, int e)
{
	void *cur;
	int r, err;
	mw_tls.guard++;
	pthread_mutex_lock(&maps_lock);
	cur = mw_orig.sbrk(0);
	r = mw_orig.brk(addr);
	err = errno;
	if (r == 0 && cur != (void *)-1) {
		uintptr_t c = (uintptr_t)cur, a = (uintptr_t)addr;
		brk_moved(c, a, a > c && !mw_unsampled(a - c, e));
	}
	pthread_mutex_unlock(&maps_lock);
	mw_tls.guard--;
	errno = err;
	return r;
}

/* brk is rare: with capture on, always the slow path (it must learn the old
 * break to know the growth). */
static int hk_brk(void *addr)
{
	int e = capturing();
	if (likely(!e) || mw_tls.guard || !mw_orig.sbrk)
		return mw_orig.brk(addr);
	return brk_on(addr, e);
}

void mw_maps_reset_begin(void)
{
	pthread_mutex_lock(&maps_lock);
	nmranges = 0;
}

void mw_maps_reset_end(void)
{
	pthread_mutex_unlock(&maps_lock);
}

/* A fork's child: the table may have been mid-change; it starts with no
 * samples. */
void mw_maps_atfork_child(void)
{
	pthread_mutex_init(&maps_lock, NULL);
	nmranges = 0;
}

void *const mw_hook_fn[F_COUNT] = {
	(void *)hk_malloc, (void *)hk_calloc, (void *)hk_realloc, (void *)hk_reallocarray,
	(void *)hk_free, (void *)hk_posix_memalign, (void *)hk_aligned_alloc,
	(void *)hk_memalign, (void *)hk_valloc, (void *)hk_pvalloc, (void *)hk_dlopen,
	(void *)hk_mmap, (void *)hk_mmap64, (void *)hk_munmap, (void *)hk_mremap,
	(void *)hk_brk, (void *)hk_sbrk,
	(void *)mw_hk_mi_malloc, (void *)mw_hk_mi_calloc, (void *)mw_hk_mi_realloc,
	(void *)mw_hk_mi_free, (void *)mw_hk_mi_zalloc, (void *)mw_hk_mi_mallocn,
	(void *)mw_hk_mi_reallocn, (void *)mw_hk_mi_reallocf, (void *)mw_hk_mi_strdup,
	(void *)mw_hk_mi_strndup, (void *)mw_hk_mi_malloc_aligned, (void *)mw_hk_mi_zalloc_aligned,
	(void *)mw_hk_mi_calloc_aligned, (void *)mw_hk_mi_realloc_aligned,
	(void *)mw_hk_mi_malloc_small, (void *)mw_hk_mi_zalloc_small, (void *)mw_hk_mi_free_size,
	(void *)mw_hk_mi_free_aligned, (void *)mw_hk_mi_free_size_aligned,
};

