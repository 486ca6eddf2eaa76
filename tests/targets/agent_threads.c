/* agent_threads.c: many threads that each allocate a little and then wait, in
 * two waves: the first wave's threads exit before the second starts. Prints
 * the resident set while each wave's threads are all alive, having allocated.
 * Usage: agent_threads THREADS OPS. Prints "wave1 rss_kib=K", "wave2
 * rss_kib=K" and "ok" (status 0), or a reason on stderr (status 1). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nops;
static pthread_barrier_t allocated, done;

/* Churn a ring of 16 blocks, free them, and wait until the wave is counted. */
static void *work(void *arg)
{
	void *ring[16] = { 0 };
	uint32_t s = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
	int i;
	for (i = 0; i < nops; i++) {
		s = s * 1103515245u + 12345u;
		free(ring[i & 15]);
		ring[i & 15] = malloc(16 + (s >> 8) % 2000);
		if (ring[i & 15])
			memset(ring[i & 15], 1, 16);
	}
	for (i = 0; i < 16; i++)
		free(ring[i]);
	pthread_barrier_wait(&allocated);
	pthread_barrier_wait(&done);
	return NULL;
}

static long rss_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			v = atol(line + 6);
	fclose(f);
	return v;
}

/* One wave of n threads; its resident set on stdout. */
static int wave(int k, int n)
{
	pthread_t *t = calloc((size_t)n, sizeof *t);
	pthread_attr_t at;
	int i, err;
	if (!t)
		return -1;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 128 * 1024);
	pthread_barrier_init(&allocated, NULL, (unsigned)n + 1);
	pthread_barrier_init(&done, NULL, (unsigned)n + 1);
	for (i = 0; i < n; i++) {
		err = pthread_create(&t[i], &at, work, (void *)(uintptr_t)(i + k * n));
		if (err) {
			fprintf(stderr, "agent_threads: pthread_create: %s\n", strerror(err));
			exit(1);
		}
	}
	pthread_barrier_wait(&allocated);
	printf("wave%d rss_kib=%ld\n", k, rss_kib());
	fflush(stdout);
	pthread_barrier_wait(&done);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&allocated);
	pthread_barrier_destroy(&done);
	pthread_attr_destroy(&at);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	int n;
	if (argc != 3) {
		fprintf(stderr, "usage: agent_threads THREADS OPS\n");
		return 2;
	}
	n = atoi(argv[1]);
	nops = atoi(argv[2]);
	if (wave(1, n) < 0 || wave(2, n) < 0)
		return 1;
	printf("ok\n");
	return 0;
}
