/* agent_apis.c: one allocation site per hooked function, with known sizes, and
 * realloc's edge cases; every block is checked (alignment, contents kept by
 * realloc) so that the hooks provably change nothing for the program.
 *   phase 0: early() allocates 100 blocks of 3000 bytes; prints "ready 0"
 *   phase 1: every site holds 10 blocks; prints "ready 1"
 *   phase 2: the early blocks and the blocks of every site but keep_calloc are
 *            freed; 10 more early-sized blocks from late(); prints "ready 2"
 *   end:     frees the rest, prints "ok" (or what went wrong, status 1) */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 10
static int bad;
static void *early_p[100], *late_p[N];
static void *p_calloc[N], *p_pm[N], *p_aa[N], *p_ma[N], *p_va[N], *p_pva[N];
static void *p_grow[N], *p_shrink[N], *p_null[N], *p_rarr[N], *p_dup[N];

#define CHECK(c) do { if (!(c)) { printf("failed: %s (line %d)\n", #c, __LINE__); bad++; } } while (0)
#define NOINLINE __attribute__((noinline))

static void pattern(void *p, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		((unsigned char *)p)[i] = (unsigned char)(i * 31 + seed);
}

static int has_pattern(const void *p, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)p)[i] != (unsigned char)(i * 31 + seed))
			return 0;
	return 1;
}

NOINLINE static void early(void) { for (int i = 0; i < 100; i++) { early_p[i] = malloc(3000); CHECK(early_p[i]); } }
NOINLINE static void late(void) { for (int i = 0; i < N; i++) { late_p[i] = malloc(3000); CHECK(late_p[i]); } }

NOINLINE static void keep_calloc(void)
{
	for (int i = 0; i < N; i++) {
		unsigned char *p = p_calloc[i] = calloc(1000, 100);
		CHECK(p);
		for (int k = 0; p && k < 100000; k += 1000)
			CHECK(p[k] == 0);
	}
	CHECK(calloc(SIZE_MAX / 2, 4) == NULL);   /* overflow: refused, not recorded */
}

NOINLINE static void keep_posix_memalign(void)
{
	for (int i = 0; i < N; i++) {
		CHECK(posix_memalign(&p_pm[i], 4096, 10000) == 0);
		CHECK(((uintptr_t)p_pm[i] & 4095) == 0);
	}
	void *x;
	CHECK(posix_memalign(&x, 3, 100) != 0);   /* bad alignment: an error, no block */
}

NOINLINE static void keep_aligned_alloc(void)
{
	for (int i = 0; i < N; i++) {
		p_aa[i] = aligned_alloc(64, 6400);
		CHECK(p_aa[i] && ((uintptr_t)p_aa[i] & 63) == 0);
	}
}

NOINLINE static void keep_memalign(void)
{
	for (int i = 0; i < N; i++) {
		p_ma[i] = memalign(128, 3000);
		CHECK(p_ma[i] && ((uintptr_t)p_ma[i] & 127) == 0);
	}
}

NOINLINE static void keep_valloc(void)
{
	for (int i = 0; i < N; i++) {
		p_va[i] = valloc(5000);
		CHECK(p_va[i] && ((uintptr_t)p_va[i] & 4095) == 0);
	}
}

NOINLINE static void keep_pvalloc(void)
{
	for (int i = 0; i < N; i++) {
		p_pva[i] = pvalloc(100);
		CHECK(p_pva[i] && ((uintptr_t)p_pva[i] & 4095) == 0);
	}
}

/* Not a tail call: the site needs a frame of its own. */
NOINLINE static void *base_alloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* realloc grows (100 -> 20000) and shrinks (50000 -> 1000); contents kept. */
NOINLINE static void keep_realloc_grow(void)
{
	for (int i = 0; i < N; i++) {
		void *p = base_alloc(100);
		pattern(p, 100, i);
		p_grow[i] = realloc(p, 20000);
		CHECK(p_grow[i] && has_pattern(p_grow[i], 100, i));
	}
}

NOINLINE static void keep_realloc_shrink(void)
{
	for (int i = 0; i < N; i++) {
		void *p = base_alloc(50000);
		pattern(p, 50000, i);
		p_shrink[i] = realloc(p, 1000);
		CHECK(p_shrink[i] && has_pattern(p_shrink[i], 1000, i));
	}
}

/* realloc(NULL, n) is malloc; realloc(p, 0) frees; a huge realloc fails and
 * leaves the block as it was. */
NOINLINE static void keep_realloc_null(void)
{
	for (int i = 0; i < N; i++) {
		p_null[i] = realloc(NULL, 7000);
		CHECK(p_null[i]);
		pattern(p_null[i], 7000, i);
		CHECK(realloc(p_null[i], SIZE_MAX - 4096) == NULL);
		CHECK(has_pattern(p_null[i], 7000, i));
		void *z = base_alloc(9000);
		CHECK(realloc(z, 0) == NULL);
	}
}

NOINLINE static void keep_reallocarray(void)
{
	for (int i = 0; i < N; i++) {
		p_rarr[i] = reallocarray(NULL, 100, 30);
		CHECK(p_rarr[i]);
	}
	CHECK(reallocarray(NULL, SIZE_MAX / 2, 3) == NULL);
}

/* strdup allocates inside libc: its own malloc slot must be hooked too. */
NOINLINE static void keep_strdup(void)
{
	char s[1000];
	memset(s, 'x', sizeof s - 1);
	s[sizeof s - 1] = 0;
	for (int i = 0; i < N; i++) {
		p_dup[i] = strdup(s);
		CHECK(p_dup[i] && strlen(p_dup[i]) == 999);
	}
}

static int wait_line(int phase)
{
	char line[64];
	printf("ready %d\n", phase);
	fflush(stdout);
	return fgets(line, sizeof line, stdin) != NULL;
}

static void free_all(void **p, int n)
{
	for (int i = 0; i < n; i++) {
		free(p[i]);
		p[i] = NULL;
	}
}

int main(void)
{
	early();
	if (!wait_line(0))
		return 3;
	keep_calloc();
	keep_posix_memalign();
	keep_aligned_alloc();
	keep_memalign();
	keep_valloc();
	keep_pvalloc();
	keep_realloc_grow();
	keep_realloc_shrink();
	keep_realloc_null();
	keep_reallocarray();
	keep_strdup();
	if (!wait_line(1))
		return 3;
	free_all(early_p, 100);
	late();
	free_all(p_pm, N); free_all(p_aa, N); free_all(p_ma, N); free_all(p_va, N);
	free_all(p_pva, N); free_all(p_grow, N); free_all(p_shrink, N); free_all(p_null, N);
	free_all(p_rarr, N); free_all(p_dup, N);
	if (!wait_line(2))
		return 3;
	free_all(p_calloc, N);
	free_all(late_p, N);
	free(NULL);
	if (bad)
		return 1;
	printf("ok\n");
	return 0;
}
