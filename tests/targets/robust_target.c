/* robust_target.c: the target of the failure-matrix tests (tests/run-robust-*.sh)
 * and of bench/capture-throughput.sh. Three modes:
 *   churn SECS LEAK_KIB_PER_S   malloc/free as fast as it can, leak a steady amount
 *                               in robust_leak(), print "ops_per_s N" every 0.5 s
 *   zombie SECS [CHILD_SECS]    fork a child that exits at once (or after
 *                               CHILD_SECS) and never reap it; print its pid
 *   stacks N SECS [DELAY]       after DELAY seconds (default 0), keep N blocks
 *                               allocated from N distinct call stacks (a path of
 *                               calls chosen by the bits of i), print "ready",
 *                               then sleep
 * SECS 0 means until killed. Output is line-buffered so tests can read it live. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the monotonic clock. */
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The one leaking site: a block of kib KiB, touched so that it is resident. */
static __attribute__((noinline)) void *robust_leak(size_t kib)
{
	char *p = malloc(kib * 1024);
	if (p)
		memset(p, 0x5a, kib * 1024);
	return p;
}

/* churn mode: the malloc-heavy workload whose throughput is reported. */
static int churn(double secs, double leak_kib_s)
{
	enum { SLOTS = 1024 };
	static void *ring[SLOTS];
	uint64_t ops = 0, last_ops = 0, rnd = 88172645463325252ull;
	double t0 = now(), last = t0, leaked = 0;
	unsigned i = 0;

	for (;;) {
		/* a batch between clock reads keeps the clock out of the figure */
		for (int k = 0; k < 256; k++) {
			size_t sz;
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			sz = 16 + (rnd % 497);
			free(ring[i]);
			ring[i] = malloc(sz);
			if (ring[i])
				((volatile char *)ring[i])[0] = (char)k;
			i = (i + 1) % SLOTS;
			ops++;
		}
		double t = now();
		/* leak at the asked rate, in 64 KiB blocks */
		while (leak_kib_s > 0 && leaked + 64 <= (t - t0) * leak_kib_s) {
			if (!robust_leak(64))
				return 1;
			leaked += 64;
		}
		if (t - last >= 0.5) {
			printf("ops_per_s %.0f\n", (double)(ops - last_ops) / (t - last));
			last_ops = ops;
			last = t;
		}
		if (secs > 0 && t - t0 >= secs)
			break;
	}
	for (i = 0; i < SLOTS; i++)
		free(ring[i]);
	printf("done\n");
	return 0;
}

/* zombie mode: a child that exits and is never waited for. */
static int zombie(double secs, double child_secs)
{
	pid_t c = fork();
	if (c < 0)
		return 1;
	if (c == 0) {
		if (child_secs > 0)
			usleep((useconds_t)(child_secs * 1e6));
		_exit(0);
	}
	printf("%d\n", (int)c);
	if (secs > 0)
		usleep((useconds_t)(secs * 1e6));
	else
		for (;;)
			pause();
	return 0;
}

static volatile uintptr_t sink;

static void *walk_a(unsigned bits, int level);
static void *walk_b(unsigned bits, int level);

/* One step of the path: bit `level` of bits picks walk_a or walk_b, so every
 * value of bits gives its own chain of return addresses. The store after the
 * call keeps it from being a tail call. */
static __attribute__((noinline)) void *walk_step(unsigned bits, int level)
{
	void *p;
	if (level == 0)
		return malloc(32);
	p = (bits >> (level - 1)) & 1 ? walk_b(bits, level - 1) : walk_a(bits, level - 1);
	sink += (uintptr_t)p;
	return p;
}
static __attribute__((noinline)) void *walk_a(unsigned bits, int level)
{
	void *p = walk_step(bits, level);
	sink ^= (uintptr_t)p;
	return p;
}
static __attribute__((noinline)) void *walk_b(unsigned bits, int level)
{
	void *p = walk_step(bits, level);
	sink -= (uintptr_t)p;
	return p;
}

/* stacks mode: n live blocks from n distinct stacks, allocated after a delay
 * (so that a capture started from outside sees them). */
static int stacks(unsigned n, double secs, double delay)
{
	int levels = 1;
	void **keep;
	if (delay > 0)
		usleep((useconds_t)(delay * 1e6));
	keep = calloc(n, sizeof *keep);
	if (!keep)
		return 1;
	while ((1u << levels) < n)
		levels++;
	for (unsigned i = 0; i < n; i++)
		keep[i] = walk_step(i, levels);
	printf("ready\n");
	if (secs > 0)
		usleep((useconds_t)(secs * 1e6));
	else
		for (;;)
			pause();
	for (unsigned i = 0; i < n; i++)
		free(keep[i]);
	free(keep);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "churn") == 0)
		return churn(atof(argv[2]), atof(argv[3]));
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "zombie") == 0)
		return zombie(atof(argv[2]), argc == 4 ? atof(argv[3]) : 0);
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "stacks") == 0)
		return stacks((unsigned)strtoul(argv[2], NULL, 10), atof(argv[3]),
			      argc == 5 ? atof(argv[4]) : 0);
	fprintf(stderr, "usage: robust_target churn SECS LEAK_KIB_PER_S | zombie SECS [CHILD_SECS] | "
		"stacks N SECS [DELAY]\n");
	return 2;
}
