/* agent_fnptr.c: known allocation sites reached both by direct calls and
 * through a struct of pointers to malloc, free, calloc and realloc, built as a
 * PIE and as a non-PIE executable. A non-PIE program that takes the address of
 * malloc makes its PLT entry the address of malloc for every module: the case
 * where a hook that calls "malloc" as dlsym finds it would call itself.
 *
 * Usage: agent_fnptr early|late [through]
 *   early: the pointers are the ones stored at link time (a static initializer;
 *          in a non-PIE program, the PLT entries; in a PIE, what the loader put
 *          there before any hook existed)
 *   late:  the pointers are taken again at the start of phase 1
 *   through: no waiting on stdin, and what phase 2 keeps is never freed
 *
 *   phase 0: prints "ready 0", waits for a line
 *   phase 1: direct_malloc keeps 256 x 64 KiB, direct_calloc 100 x 10000 bytes,
 *            direct_realloc 64 blocks grown from 1000 to 100000 bytes,
 *            direct_churn allocates and frees 1000 x 4096 bytes;
 *            fptr_malloc keeps 256 x 32 KiB, fptr_calloc 128 x 3000 bytes,
 *            fptr_realloc 64 blocks grown from 500 to 50000 bytes,
 *            fptr_churn allocates and frees 1000 x 8192 bytes
 *            (the fptr_ ones through the struct); prints "ready 1", waits
 *   phase 2: frees every second block of each kept site, the direct ones by
 *            free, the others through the struct; prints "ready 2", waits
 *   end:     checks every block's pattern, frees the rest, prints "ok" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct alloc_ops {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
};

static struct alloc_ops early = { malloc, free, calloc, realloc };
/* volatile: every call loads its pointer, as a program's allocator table is
 * read in general; the compiler may not turn it back into a direct call. */
static struct alloc_ops *volatile ops = &early;
static struct alloc_ops late;

#define MALLOC_N 256
#define MALLOC_SIZE (64 * 1024)
#define CALLOC_N 100
#define CALLOC_SIZE 10000
#define REALLOC_N 64
#define REALLOC_FROM 1000
#define REALLOC_SIZE 100000
#define CHURN_N 1000

#define FMALLOC_SIZE (32 * 1024)
#define FCALLOC_N 128
#define FCALLOC_SIZE 3000
#define FREALLOC_FROM 500
#define FREALLOC_SIZE 50000

static unsigned char *dm[MALLOC_N], *dc[CALLOC_N], *dr[REALLOC_N];
static unsigned char *fm[MALLOC_N], *fc[FCALLOC_N], *fr[REALLOC_N];

static void *must(void *p)
{
	if (!p)
		exit(2);
	return p;
}

/* The pointers as the program takes them now: after the hooks are in, in a
 * PIE they come from the program's own (hooked) GOT slots. */
__attribute__((noinline)) static void take_late(void)
{
	late.malloc = malloc;
	late.free = free;
	late.calloc = calloc;
	late.realloc = realloc;
	ops = &late;
}

/* Each site has its own non-inlined function, so its stack is its own. */
__attribute__((noinline)) static void direct_malloc(void)
{
	for (int i = 0; i < MALLOC_N; i++)
		memset(dm[i] = must(malloc(MALLOC_SIZE)), i & 0xff, MALLOC_SIZE);
}

__attribute__((noinline)) static void direct_calloc(void)
{
	for (int i = 0; i < CALLOC_N; i++) {
		dc[i] = must(calloc(1, CALLOC_SIZE));
		memset(dc[i], (i + 1) & 0xff, CALLOC_SIZE);
	}
}

__attribute__((noinline)) static void direct_realloc(void)
{
	for (int i = 0; i < REALLOC_N; i++) {
		unsigned char *p = must(malloc(REALLOC_FROM));
		p[0] = 1;
		dr[i] = must(realloc(p, REALLOC_SIZE));
		memset(dr[i], (i + 2) & 0xff, REALLOC_SIZE);
	}
}

__attribute__((noinline)) static void direct_churn(void)
{
	for (int i = 0; i < CHURN_N; i++) {
		unsigned char *p = must(malloc(4096));
		p[0] = 1;
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
}

__attribute__((noinline)) static void fptr_malloc(void)
{
	for (int i = 0; i < MALLOC_N; i++)
		memset(fm[i] = must(ops->malloc(FMALLOC_SIZE)), (i + 3) & 0xff, FMALLOC_SIZE);
}

__attribute__((noinline)) static void fptr_calloc(void)
{
	for (int i = 0; i < FCALLOC_N; i++) {
		fc[i] = must(ops->calloc(3, FCALLOC_SIZE / 3));
		memset(fc[i], (i + 4) & 0xff, FCALLOC_SIZE);
	}
}

__attribute__((noinline)) static void fptr_realloc(void)
{
	for (int i = 0; i < REALLOC_N; i++) {
		unsigned char *p = must(ops->malloc(FREALLOC_FROM));
		p[0] = 1;
		fr[i] = must(ops->realloc(p, FREALLOC_SIZE));
		memset(fr[i], (i + 5) & 0xff, FREALLOC_SIZE);
	}
}

__attribute__((noinline)) static void fptr_churn(void)
{
	for (int i = 0; i < CHURN_N; i++) {
		unsigned char *p = must(ops->malloc(8192));
		p[0] = 1;
		__asm__ volatile("" : : "r"(p) : "memory");
		ops->free(p);
	}
}

static int wait_line(int phase, int through)
{
	char line[64];
	printf("ready %d\n", phase);
	fflush(stdout);
	return through || fgets(line, sizeof line, stdin) != NULL;
}

/* Blocks of one site whose pattern is wrong; frees them through f. */
static int check_free(unsigned char **v, int n, size_t size, int add, void (*f)(void *), int keep)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		if (!v[i])
			continue;
		for (size_t k = 0; k < size; k += 256)
			bad += v[i][k] != ((i + add) & 0xff);
		if (!keep) {
			f(v[i]);
			v[i] = NULL;
		}
	}
	return bad;
}

/* Free every second block of a site through f. */
static void free_half(unsigned char **v, int n, void (*f)(void *))
{
	for (int i = 0; i < n; i += 2) {
		f(v[i]);
		v[i] = NULL;
	}
}

int main(int argc, char **argv)
{
	int through = argc > 2 && strcmp(argv[2], "through") == 0;
	int bad = 0;

	if (argc < 2 || (strcmp(argv[1], "early") != 0 && strcmp(argv[1], "late") != 0)) {
		fprintf(stderr, "usage: agent_fnptr early|late [through]\n");
		return 2;
	}
	if (!wait_line(0, through))
		return 3;
	if (argv[1][0] == 'l')
		take_late();
	direct_malloc();
	direct_calloc();
	direct_realloc();
	direct_churn();
	fptr_malloc();
	fptr_calloc();
	fptr_realloc();
	fptr_churn();
	if (!wait_line(1, through))
		return 3;
	free_half(dm, MALLOC_N, free);
	free_half(dc, CALLOC_N, free);
	free_half(dr, REALLOC_N, free);
	free_half(fm, MALLOC_N, ops->free);
	free_half(fc, FCALLOC_N, ops->free);
	free_half(fr, REALLOC_N, ops->free);
	if (!wait_line(2, through))
		return 3;
	bad += check_free(dm, MALLOC_N, MALLOC_SIZE, 0, free, through);
	bad += check_free(dc, CALLOC_N, CALLOC_SIZE, 1, free, through);
	bad += check_free(dr, REALLOC_N, REALLOC_SIZE, 2, free, through);
	bad += check_free(fm, MALLOC_N, FMALLOC_SIZE, 3, ops->free, through);
	bad += check_free(fc, FCALLOC_N, FCALLOC_SIZE, 4, ops->free, through);
	bad += check_free(fr, REALLOC_N, FREALLOC_SIZE, 5, ops->free, through);
	if (bad) {
		printf("corrupt %d\n", bad);
		return 1;
	}
	printf("ok\n");
	return 0;
}
