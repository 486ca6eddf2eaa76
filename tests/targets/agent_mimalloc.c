/* agent_mimalloc.c: a program that calls mimalloc's own API (mi_malloc and
 * friends), not malloc, for run-agent-mimalloc.sh. Four threads each keep 800
 * blocks of 32 KiB from keep_records (100 MiB in all, in mimalloc's segments,
 * which it reserves aligned with PROT_NONE parts), then sleep; the main thread
 * then allocates, grows, copies and frees 2000 times in churn, keeps 100
 * aligned pages in keep_aligned, prints "ready" and sleeps (at most a minute).
 * Built with -DWITH_GLIBC, the same calls are glibc's malloc family (whose
 * threads' blocks are in its arenas). */
#ifdef WITH_GLIBC
#include <stdlib.h>
#define mi_malloc malloc
#define mi_zalloc(n) calloc(1, n)
#define mi_realloc realloc
#define mi_free free
#define mi_strdup strdup
#define mi_malloc_aligned(n, a) aligned_alloc(a, n)
#else
#include <mimalloc.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define RECORDS 800
#define RECORD (32 * 1024)

static void *kept[THREADS][RECORDS];
static void *aligned[100];
static pthread_barrier_t done;

static __attribute__((noinline)) void keep_records(void **v)
{
	for (int i = 0; i < RECORDS; i++) {
		v[i] = mi_malloc(RECORD); // LINE:keep
		memset(v[i], i & 0xff, RECORD);
	}
}

static void *worker(void *arg)
{
	keep_records(arg);
	pthread_barrier_wait(&done);
	for (int t = 0; t < 600; t++)
		usleep(100000);
	return NULL;
}

static __attribute__((noinline)) void churn(void)
{
	for (int i = 0; i < 2000; i++) {
		char *p = mi_zalloc(RECORD), *s;
		p[0] = 1;
		p = mi_realloc(p, 2 * RECORD);
		mi_free(p);
		s = mi_strdup("churned string");
		mi_free(s);
	}
}

static __attribute__((noinline)) void keep_aligned(void)
{
	for (int i = 0; i < 100; i++)
		aligned[i] = mi_malloc_aligned(4096, 4096);
}

int main(void)
{
	pthread_t t[THREADS];

	pthread_barrier_init(&done, NULL, THREADS + 1);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, kept[i]) != 0)
			return 1;
	pthread_barrier_wait(&done);
	churn();
	keep_aligned();
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < 600; i++)
		usleep(100000);
	return 0;
}
