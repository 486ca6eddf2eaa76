/* mimalloc.c: the hooks of mimalloc's own API (mi_malloc and friends, which a
 * program that uses mimalloc directly calls instead of malloc), sampled as the
 * malloc family is. patch.c routes every module's slots for these names here,
 * but mimalloc's own: its entry points call one another, and a block would be
 * counted twice. The heap API (mi_heap_*) is not hooked: mi_heap_destroy frees
 * a heap's blocks without a call per block. */
#include "config.h"

#include <string.h>

#include "agent.h"

#define ON __attribute__((noinline))

/* As hooks.c's: the epoch being captured, or 0. */
static inline int capturing(void)
{
	return __atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED);
}

/* As hooks.c's: count size bytes of the block p after the call. */
static inline __attribute__((always_inline)) void *account(void *p, size_t size, int epoch)
{
	uint64_t left = mw_tls.left;
	if (likely(size < left && mw_tls.epoch == (uint32_t)epoch)) {
		mw_tls.left = left - size - 1;
		return p;
	}
	return mw_sampled_alloc(p, size);
}

/* Allocations: the common path (capture off, or no sample point) is a tail
 * jump to mimalloc; a sample point goes through the _slow function. */

static ON void *malloc_slow(size_t n)
{
	return mw_sampled_alloc(mw_orig.mi_malloc(n), n);
}

void *mw_hk_mi_malloc(size_t n)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.mi_malloc(n);
	return malloc_slow(n);
}

static ON void *zalloc_slow(size_t n)
{
	return mw_sampled_alloc(mw_orig.mi_zalloc(n), n);
}

void *mw_hk_mi_zalloc(size_t n)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.mi_zalloc(n);
	return zalloc_slow(n);
}

static ON void *malloc_small_slow(size_t n)
{
	return mw_sampled_alloc(mw_orig.mi_malloc_small(n), n);
}

void *mw_hk_mi_malloc_small(size_t n)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.mi_malloc_small(n);
	return malloc_small_slow(n);
}

static ON void *zalloc_small_slow(size_t n)
{
	return mw_sampled_alloc(mw_orig.mi_zalloc_small(n), n);
}

void *mw_hk_mi_zalloc_small(size_t n)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.mi_zalloc_small(n);
	return zalloc_small_slow(n);
}

static ON void *calloc_slow(size_t a, size_t b, size_t n)
{
	return mw_sampled_alloc(mw_orig.mi_calloc(a, b), n);
}

void *mw_hk_mi_calloc(size_t a, size_t b)
{
	int e = capturing();
	size_t n;
	if (likely(!e) || __builtin_mul_overflow(a, b, &n) || likely(mw_unsampled(n, e)))
		return mw_orig.mi_calloc(a, b);
	return calloc_slow(a, b, n);
}

static ON void *mallocn_slow(size_t a, size_t b, size_t n)
{
	return mw_sampled_alloc(mw_orig.mi_mallocn(a, b), n);
}

void *mw_hk_mi_mallocn(size_t a, size_t b)
{
	int e = capturing();
	size_t n;
	if (likely(!e) || __builtin_mul_overflow(a, b, &n) || likely(mw_unsampled(n, e)))
		return mw_orig.mi_mallocn(a, b);
	return mallocn_slow(a, b, n);
}

static ON void *malloc_aligned_slow(size_t n, size_t align)
{
	return mw_sampled_alloc(mw_orig.mi_malloc_aligned(n, align), n);
}

void *mw_hk_mi_malloc_aligned(size_t n, size_t align)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.mi_malloc_aligned(n, align);
	return malloc_aligned_slow(n, align);
}

static ON void *zalloc_aligned_slow(size_t n, size_t align)
{
	return mw_sampled_alloc(mw_orig.mi_zalloc_aligned(n, align), n);
}

void *mw_hk_mi_zalloc_aligned(size_t n, size_t align)
{
	int e = capturing();
	if (likely(!e) || likely(mw_unsampled(n, e)))
		return mw_orig.mi_zalloc_aligned(n, align);
	return zalloc_aligned_slow(n, align);
}

static ON void *calloc_aligned_slow(size_t a, size_t b, size_t align, size_t n)
{
	return mw_sampled_alloc(mw_orig.mi_calloc_aligned(a, b, align), n);
}

void *mw_hk_mi_calloc_aligned(size_t a, size_t b, size_t align)
{
	int e = capturing();
	size_t n;
	if (likely(!e) || __builtin_mul_overflow(a, b, &n) || likely(mw_unsampled(n, e)))
		return mw_orig.mi_calloc_aligned(a, b, align);
	return calloc_aligned_slow(a, b, align, n);
}

/* The string copies: their size is known after the call. */
char *mw_hk_mi_strdup(const char *s)
{
	int e = capturing();
	char *q = mw_orig.mi_strdup(s);
	if (likely(!e) || !q)
		return q;
	return account(q, strlen(q) + 1, e);
}

char *mw_hk_mi_strndup(const char *s, size_t max)
{
	int e = capturing();
	char *q = mw_orig.mi_strndup(s, max);
	if (likely(!e) || !q)
		return q;
	return account(q, strlen(q) + 1, e);
}

/* Frees: the record goes before the block (once freed, another thread may get
 * the address back and sample it). */

static ON void free_on(void *p)
{
	mw_sampled_free(p);
	mw_orig.mi_free(p);
}

void mw_hk_mi_free(void *p)
{
	if (likely(!capturing()) || !p || likely(!mw_maybe_sampled(p)))
		return mw_orig.mi_free(p);
	free_on(p);
}

static ON void free_size_on(void *p, size_t n)
{
	mw_sampled_free(p);
	mw_orig.mi_free_size(p, n);
}

void mw_hk_mi_free_size(void *p, size_t n)
{
	if (likely(!capturing()) || !p || likely(!mw_maybe_sampled(p)))
		return mw_orig.mi_free_size(p, n);
	free_size_on(p, n);
}

static ON void free_aligned_on(void *p, size_t align)
{
	mw_sampled_free(p);
	mw_orig.mi_free_aligned(p, align);
}

void mw_hk_mi_free_aligned(void *p, size_t align)
{
	if (likely(!capturing()) || !p || likely(!mw_maybe_sampled(p)))
		return mw_orig.mi_free_aligned(p, align);
	free_aligned_on(p, align);
}

static ON void free_size_aligned_on(void *p, size_t n, size_t align)
{
	mw_sampled_free(p);
	mw_orig.mi_free_size_aligned(p, n, align);
}

void mw_hk_mi_free_size_aligned(void *p, size_t n, size_t align)
{
	if (likely(!capturing()) || !p || likely(!mw_maybe_sampled(p)))
		return mw_orig.mi_free_size_aligned(p, n, align);
	free_size_aligned_on(p, n, align);
}

/* Reallocations: the free of the old block and the allocation of the new one,
 * attributed to the call's own stack, as hooks.c's realloc. mimalloc's
 * realloc to 0 bytes gives a block (it frees nothing); a failure leaves the
 * old block, but for mi_reallocf, which frees it. */
enum how { R_REALLOC, R_REALLOCN, R_REALLOCF, R_REALLOC_ALIGNED };

static ON void *realloc_on(enum how how, void *p, size_t a, size_t b, size_t n, int e)
{
	struct mw_taken t;
	bool had = false;
	void *q;

	if (p && mw_maybe_sampled(p))
		had = mw_take_record(p, &t);
	switch (how) {
	case R_REALLOC:
		q = mw_orig.mi_realloc(p, a);
		break;
	case R_REALLOCN:
		q = mw_orig.mi_reallocn(p, a, b);
		break;
	case R_REALLOCF:
		q = mw_orig.mi_reallocf(p, a);
		break;
	default:
		q = mw_orig.mi_realloc_aligned(p, a, b);
		break;
	}
	if (!q) {
		if (had && how != R_REALLOCF)
			mw_put_record(p, &t);
		return q;
	}
	return account(q, n, e);
}

void *mw_hk_mi_realloc(void *p, size_t n)
{
	int e = capturing();
	if (likely(!e))
		return mw_orig.mi_realloc(p, n);
	return realloc_on(R_REALLOC, p, n, 0, n, e);
}

void *mw_hk_mi_reallocn(void *p, size_t a, size_t b)
{
	int e = capturing();
	size_t n;
	if (likely(!e) || __builtin_mul_overflow(a, b, &n))
		return mw_orig.mi_reallocn(p, a, b);
	return realloc_on(R_REALLOCN, p, a, b, n, e);
}

void *mw_hk_mi_reallocf(void *p, size_t n)
{
	int e = capturing();
	if (likely(!e))
		return mw_orig.mi_reallocf(p, n);
	return realloc_on(R_REALLOCF, p, n, 0, n, e);
}

void *mw_hk_mi_realloc_aligned(void *p, size_t n, size_t align)
{
	int e = capturing();
	if (likely(!e))
		return mw_orig.mi_realloc_aligned(p, n, align);
	return realloc_on(R_REALLOC_ALIGNED, p, n, align, n, e);
}
