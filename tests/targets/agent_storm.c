/* agent_storm.c: a multithreaded allocation storm that checks its own memory:
 * every block is filled with a pattern of its owner and checked before it is
 * freed or reallocated, through every allocation function the agent hooks.
 * Usage: agent_storm THREADS SECONDS. Prints "ready 1" once the threads run,
 * then "ok ops=N" (or "corrupt ...", status 1) at the end. With SECONDS 0 the
 * threads run until a line (or end of file) arrives on stdin. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 512

struct slot {
	unsigned char *p;
	size_t size;
	unsigned char tag;
};

static double seconds;
static volatile int stop_now;
static unsigned long long total_ops;
static unsigned long long total_bad;
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(unsigned char *p, size_t n, unsigned char tag)
{
	memset(p, tag, n);
}

static unsigned long check(const unsigned char *p, size_t n, unsigned char tag)
{
	unsigned long bad = 0;
	for (size_t i = 0; i < n; i += (n > 4096 ? 61 : 1))
		bad += p[i] != tag;
	if (n)
		bad += p[n - 1] != tag;
	return bad;
}

/* A size from 1 byte to 64 KiB, mostly small. */
static size_t pick_size(uint64_t *s)
{
	uint64_t r = next(s);
	switch (r % 8) {
	case 0: return 1 + r % 16;
	case 1: case 2: case 3: return 16 + (r >> 8) % 256;
	case 4: case 5: return 256 + (r >> 8) % 4096;
	case 6: return 4096 + (r >> 8) % 32768;
	default: return (r >> 8) % 65537;
	}
}

static void *worker(void *arg)
{
	struct slot slots[SLOTS] = { { 0 } };
	uint64_t s = 0x9E3779B97F4A7C15ull * ((uintptr_t)arg + 1);
	unsigned long long ops = 0, bad = 0;
	unsigned char tag = (unsigned char)((uintptr_t)arg * 16 + 1);
	double end = now() + seconds;

	while ((ops & 1023) || (seconds > 0 ? now() < end : !stop_now)) {
		struct slot *sl = &slots[next(&s) % SLOTS];
		size_t n = pick_size(&s);
		unsigned op = (unsigned)(next(&s) % 10);
		void *q = NULL;
		ops++;
		if (sl->p)
			bad += check(sl->p, sl->size, sl->tag);
		tag++;
		if (op == 0 && sl->p) {
			/* realloc keeps the common prefix */
			unsigned char *r = realloc(sl->p, n);
			if (!r) {
				/* realloc(p, 0) frees p; otherwise a failure */
				if (n == 0)
					sl->p = NULL;
				else
					bad++;
				continue;
			}
			bad += check(r, n < sl->size ? n : sl->size, sl->tag);
			sl->p = r;
			sl->size = n;
			sl->tag = tag;
			fill(r, n, tag);
			continue;
		}
		free(sl->p);
		sl->p = NULL;
		switch (op) {
		case 1: q = calloc(1, n);
			for (size_t i = 0; q && i < n; i += 97)
				bad += ((unsigned char *)q)[i] != 0;
			break;
		case 2: if (posix_memalign(&q, 64, n) != 0) q = NULL;
			bad += q && ((uintptr_t)q & 63);
			break;
		case 3: q = aligned_alloc(256, (n + 255) & ~(size_t)255);
			bad += q && ((uintptr_t)q & 255);
			n = (n + 255) & ~(size_t)255;
			break;
		case 4: q = memalign(32, n);
			bad += q && ((uintptr_t)q & 31);
			break;
		case 5: q = reallocarray(NULL, n, 1); break;
		case 6: q = realloc(NULL, n); break;
		default: q = malloc(n); break;
		}
		if (!q) {
			fprintf(stderr, "allocation of %zu failed\n", n);
			bad++;
			continue;
		}
		sl->p = q;
		sl->size = n;
		sl->tag = tag;
		fill(q, n, tag);
	}
	for (int i = 0; i < SLOTS; i++) {
		if (slots[i].p)
			bad += check(slots[i].p, slots[i].size, slots[i].tag);
		free(slots[i].p);
	}
	pthread_mutex_lock(&total_lock);
	total_ops += ops;
	total_bad += bad;
	pthread_mutex_unlock(&total_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t th[64];
	seconds = argc > 2 ? atof(argv[2]) : 3;
	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i) != 0)
			return 2;
	printf("ready 1\n");
	fflush(stdout);
	if (seconds <= 0) {
		char line[64];
		if (!fgets(line, sizeof line, stdin))
			line[0] = 0;
		stop_now = 1;
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (total_bad) {
		printf("corrupt %llu of %llu operations\n", total_bad, total_ops);
		return 1;
	}
	printf("ok ops=%llu\n", total_ops);
	return 0;
}
