/* workload.c: a malloc-heavy program for bench/overhead.sh: THREADS threads
 * each churn a live set of blocks (free one, allocate another of a random size
 * from 16 B to 64 KiB, write it), then report their own wall time and peak RSS
 * so that every way of running it (plain, under the agent, under heaptrack) is
 * measured the same way.
 * Usage: workload [-t THREADS] [-n OPS] [-l LIVE] [-s small|uniform|churn] [-w full|head] [-H]
 *   -t  threads, 1 - 4096 (past 256 each gets a 256 KiB stack)
 *   -n  operations per thread (default 2000000)
 *   -l  live blocks per thread (default 4096)
 *   -s  size mix: "small" (default: 90% up to 256 B, 9% up to 4 KiB, 1% up to
 *       64 KiB, as in most programs), "uniform" (log-uniform 16 B - 64 KiB) or
 *       "churn" (uniform 16 - 2000 B)
 *   -w  write the whole block (default) or only its first and last bytes
 *   -H  hold: each thread, its work done, waits until all are done, so that
 *       all of them are alive at once (a thread pool) when the peak is taken
 * Prints: "wall_s=S cpu_s=C ops=N maxrss_kib=K checksum=X user_s=U sys_s=Y
 * vcsw=V ivcsw=I" (CPU time, user + system, is steadier than wall time on a
 * loaded machine; voluntary context switches count the times a thread slept). */
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static long ops_per_thread = 2000000;
static long live = 4096;
static int uniform, churn;
static int head_only;
static int hold;
static pthread_barrier_t all_done;

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static size_t pick_size(uint64_t *s)
{
	uint64_t r = rnd(s);
	if (churn)
		return 16 + (size_t)((r >> 8) % (2000 - 16 + 1));
	if (uniform) {
		/* log-uniform over [16, 65536]: 2^(4 + 12u) */
		double u = (double)(r >> 11) * 0x1.0p-53;
		double v = 16.0;
		for (double e = 12.0 * u; e >= 1.0; e -= 1.0)
			v *= 2.0;
		return (size_t)v + (size_t)((r & 0xffff) % (size_t)v);
	}
	switch (r % 100) {
	case 0:
		return 4096 + (size_t)((r >> 8) % (65536 - 4096));
	case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9:
		return 256 + (size_t)((r >> 8) % (4096 - 256));
	default:
		return 16 + (size_t)((r >> 8) % (256 - 16));
	}
}

static void *worker(void *arg)
{
	uint64_t s = 0x9E3779B97F4A7C15ull * ((uintptr_t)arg + 1);
	unsigned char **slots = calloc((size_t)live, sizeof *slots);
	uint64_t sum = 0;
	long i;

	if (!slots)
		return NULL;
	for (i = 0; i < ops_per_thread; i++) {
		long k = (long)(rnd(&s) % (uint64_t)live);
		size_t n = pick_size(&s);
		unsigned char *p;
		if (slots[k]) {
			sum += slots[k][0];
			free(slots[k]);
		}
		p = malloc(n);
		if (!p)
			abort();
		if (head_only) {
			p[0] = (unsigned char)i;
			p[n - 1] = (unsigned char)i;
		} else {
			memset(p, (int)(i & 0xff), n);
		}
		slots[k] = p;
	}
	for (i = 0; i < live; i++)
		free(slots[i]);
	free(slots);
	if (hold)
		pthread_barrier_wait(&all_done);
	return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "ops", required_argument, NULL, 'n' },
		{ "live", required_argument, NULL, 'l' },
		{ "sizes", required_argument, NULL, 's' },
		{ "write", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int threads = 1, c, i;
	static pthread_t th[4096];
	pthread_attr_t attr;
	struct timespec a, b;
	struct rusage ru;
	uint64_t sum = 0;

	while ((c = getopt_long(argc, argv, "t:n:l:s:w:H", longopts, NULL)) != -1) {
		switch (c) {
		case 't': threads = atoi(optarg); break;
		case 'n': ops_per_thread = atol(optarg); break;
		case 'l': live = atol(optarg); break;
		case 's':
			uniform = strcmp(optarg, "uniform") == 0;
			churn = strcmp(optarg, "churn") == 0;
			break;
		case 'w': head_only = strcmp(optarg, "head") == 0; break;
		case 'H': hold = 1; break;
		default:
			fprintf(stderr, "usage: workload [-t THREADS] [-n OPS] [-l LIVE] "
				"[-s small|uniform|churn] [-w full|head] [-H]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > 4096 || ops_per_thread < 1 || live < 1)
		return 2;
	pthread_attr_init(&attr);
	if (threads > 256)
		pthread_attr_setstacksize(&attr, 256 * 1024);
	if (hold)
		pthread_barrier_init(&all_done, NULL, (unsigned)threads);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], &attr, worker, (void *)(uintptr_t)i) != 0) {
			fprintf(stderr, "workload: cannot create thread %d\n", i + 1);
			return 2;
		}
	for (i = 0; i < threads; i++) {
		void *r;
		pthread_join(th[i], &r);
		sum += (uintptr_t)r;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	getrusage(RUSAGE_SELF, &ru);
	printf("wall_s=%.4f cpu_s=%.4f ops=%ld maxrss_kib=%ld checksum=%llu user_s=%.4f "
	       "sys_s=%.4f vcsw=%ld ivcsw=%ld\n",
	       (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
	       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
	       ops_per_thread * threads, ru.ru_maxrss, (unsigned long long)sum,
	       (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6, ru.ru_nvcsw,
	       ru.ru_nivcsw);
	return 0;
}
