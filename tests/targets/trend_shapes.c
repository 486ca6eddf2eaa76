/* trend_shapes.c: four allocation sites with four shapes over a run of STEPS
 * steps of PERIOD ms each (arguments: steps, default 36, the period,
 * default 250, and the leak's MiB a step, default 1):
 *   leak_steady  keeps LEAK MiB more at every step;
 *   cache_fill   keeps 2 MiB more at each step of the first third, then
 *                nothing (a cache at its cap);
 *   batch_grow   keeps 2 MiB more at each step of the second third, and
 *                frees it all at the first step after it;
 *   steady_ring  holds 16 MiB from the start and replaces one of its 128
 *                blocks at every step, and allocates and frees 1 MiB of
 *                short-lived blocks.
 * It prints "ready" before the first step, then at the end "leaked BYTES in
 * SECONDS" (what leak_steady kept after its first step, and the time from
 * its first step to its last) and "ok", and exits without freeing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1u << 20)
#define RING 128
#define RING_BLOCK (128u << 10)

static void *leaks[16384], *cache[1024], *batch[1024], *ring[RING];
static size_t nleaks, ncache, nbatch;
static int leak_mib = 1;

/* size bytes, touched, or the program ends. */
static void *get(size_t size, int fill)
{
	void *p = malloc(size);
	if (!p)
		abort();
	memset(p, fill, size);
	return p;
}

static __attribute__((noinline)) void leak_steady(void)
{
	for (int i = 0; i < 4 * leak_mib; i++)
		leaks[nleaks++] = get(MIB / 4, 1);
}

static __attribute__((noinline)) void cache_fill(void)
{
	for (int i = 0; i < 8; i++)
		cache[ncache++] = get(MIB / 4, 2);
}

static __attribute__((noinline)) void batch_grow(void)
{
	for (int i = 0; i < 8; i++)
		batch[nbatch++] = get(MIB / 4, 3);
}

static void batch_free(void)
{
	while (nbatch)
		free(batch[--nbatch]);
}

/* Step s of the ring: at -1 its every block, then one block a step (the
 * blocks always allocated at the same line, from the same caller). */
static __attribute__((noinline)) void steady_ring(int s)
{
	size_t from = s < 0 ? 0 : (size_t)s % RING, to = s < 0 ? RING : from + 1;

	for (size_t i = from; i < to; i++) {
		free(ring[i]);
		ring[i] = get(RING_BLOCK, 4);
	}
	for (int k = 0; s >= 0 && k < 16; k++) {
		void *volatile p = get(64u << 10, 5);
		free(p);
	}
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 36, period = argc > 2 ? atoi(argv[2]) : 250;
	struct timespec nap = { period / 1000, (long)(period % 1000) * 1000000L };
	double t0 = 0, t1 = 0;

	if (argc > 3)
		leak_mib = atoi(argv[3]);
	if (steps < 3 || steps > 1000 || period < 1 || leak_mib < 1 || (size_t)(steps * leak_mib * 4) > 16384) {
		fprintf(stderr, "usage: trend_shapes [STEPS (3-1000) [PERIOD_MS [LEAK_MIB]]]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int s = -1; s < steps; s++) {
		if (s >= 0) {
			nanosleep(&nap, NULL);
			leak_steady();
			if (s == 0)
				t0 = now();
			t1 = now();
			if (s < steps / 3)
				cache_fill();
			else if (s < 2 * steps / 3)
				batch_grow();
			else
				batch_free();
		}
		steady_ring(s);
		if (s < 0)
			printf("ready\n");
	}
	printf("leaked %zu in %.3f\n", (nleaks - 4 * (size_t)leak_mib) * (size_t)(MIB / 4), t1 - t0);
	printf("ok\n");
	return 0;
}
