/* mmap_workload.c: an mmap-heavy program for bench/mmap-overhead.sh: THREADS
 * threads each churn a ring of anonymous private mappings through the
 * program's own mmap, munmap and mremap (unmap one, map another of a random
 * size from 4 KiB to 256 KiB, touch it; one operation in eight grows a mapping
 * to twice its size with mremap instead), then report their own wall and CPU
 * time the way bench/workload does, so that the runs under the agent compare
 * with the plain one.
 * Usage: mmap_workload [-t THREADS] [-n OPS] [-l LIVE] [-w full|head]
 *   -n  operations per thread (default 200000)
 *   -l  live mappings per thread (default 64)
 *   -w  touch every page (full) or only the first (head, default: the system
 *       calls themselves, the hooks' share at its largest)
 * Prints: "wall_s=S cpu_s=C ops=N maxrss_kib=K checksum=X user_s=U sys_s=Y
 * vcsw=V ivcsw=I". */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#define PAGE 4096

static long ops_per_thread = 200000;
static long live = 64;
static int full_touch;

struct slot {
	char *p;
	size_t len;
};

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static void touch(char *p, size_t len, uint64_t *sum)
{
	size_t o;
	if (!full_touch) {
		p[0] = 1;
		*sum += (unsigned char)p[0];
		return;
	}
	for (o = 0; o < len; o += PAGE)
		p[o] = 1;
	*sum += (unsigned char)p[len - 1];
}

static __attribute__((noinline)) char *map_one(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static void *worker(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1, sum = 0;
	struct slot *ring = calloc((size_t)live, sizeof *ring);
	long i;

	if (!ring)
		exit(1);
	for (i = 0; i < ops_per_thread; i++) {
		struct slot *sl = &ring[i % live];
		uint64_t r = rnd(&s);
		if (sl->p && r % 8 == 0 && sl->len <= 128 * PAGE) {
			char *q = mremap(sl->p, sl->len, sl->len * 2, MREMAP_MAYMOVE);
			if (q == MAP_FAILED) {
				perror("mremap");
				exit(1);
			}
			sl->p = q;
			sl->len *= 2;
		} else {
			if (sl->p)
				munmap(sl->p, sl->len);
			sl->len = (size_t)(1 + (r >> 8) % 64) * PAGE;
			sl->p = map_one(sl->len);
		}
		touch(sl->p, sl->len, &sum);
	}
	for (i = 0; i < live; i++)
		if (ring[i].p)
			munmap(ring[i].p, ring[i].len);
	free(ring);
	return (void *)(uintptr_t)sum;
}

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int threads = 1, opt, i;
	pthread_t *t;
	uint64_t checksum = 0;
	double w0, c0;
	struct rusage ru;

	while ((opt = getopt(argc, argv, "t:n:l:w:")) != -1) {
		switch (opt) {
		case 't': threads = atoi(optarg); break;
		case 'n': ops_per_thread = atol(optarg); break;
		case 'l': live = atol(optarg); break;
		case 'w': full_touch = strcmp(optarg, "full") == 0; break;
		default:
			fprintf(stderr, "usage: mmap_workload [-t THREADS] [-n OPS] [-l LIVE] [-w full|head]\n");
			return 2;
		}
	}
	if (threads < 1 || ops_per_thread < 1 || live < 1) {
		fprintf(stderr, "mmap_workload: -t, -n and -l must be positive\n");
		return 2;
	}
	t = calloc((size_t)threads, sizeof *t);
	if (!t)
		return 1;
	w0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	for (i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	for (i = 0; i < threads; i++) {
		void *r;
		pthread_join(t[i], &r);
		checksum += (uint64_t)(uintptr_t)r;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("wall_s=%.3f cpu_s=%.3f ops=%ld maxrss_kib=%ld checksum=%llu user_s=%.3f sys_s=%.3f "
	       "vcsw=%ld ivcsw=%ld\n",
	       now(CLOCK_MONOTONIC) - w0, now(CLOCK_PROCESS_CPUTIME_ID) - c0,
	       ops_per_thread * threads, ru.ru_maxrss, (unsigned long long)checksum,
	       (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6, ru.ru_nvcsw,
	       ru.ru_nivcsw);
	free(t);
	return 0;
}
