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
 *   steady BUSY_THREADS [read]  the main thread sleeps 20 ms at a time in nanosleep
 *                               (or, with "read", waits in read() for a byte that
 *                               a helper thread writes every 20 ms) with values
 *                               held in ymm15 (xmm15 without AVX), rbx and
 *                               r12-r15 across the system call, checks them, its
 *                               signal mask and its alternate signal stack after
 *                               each wait and prints "tick N eintr E";
 *                               BUSY_THREADS threads malloc, fill, check and free
 *                               blocks; any corruption prints "CORRUPT what" and
 *                               aborts (the kill-moment tests' target)
 * SECS 0 means until killed. Output is line-buffered so tests can read it live. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
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

/* Report a broken invariant and die: the test sees the line and the death. */
static void corrupt(const char *what)
{
	printf("CORRUPT %s\n", what);
	fflush(stdout);
	abort();
}

/* One system call (nanosleep(a1, a2) or read(a1, a2, a3)) with known values
 * in ymm15 (or xmm15), rbx and r12-r15, which the kernel keeps across it:
 * whatever borrows this thread meanwhile must give them back. Returns the
 * system call's result. */
static long syscall_checked(long nr, long a1, long a2, long a3, int avx)
{
	static const unsigned char pat[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
					       17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
	unsigned char out[32];
	register uint64_t rbx __asm__("rbx") = 0x1111111111111111ull;
	register uint64_t r12 __asm__("r12") = 0x1212121212121212ull;
	register uint64_t r13 __asm__("r13") = 0x1313131313131313ull;
	register uint64_t r14 __asm__("r14") = 0x1414141414141414ull;
	register uint64_t r15 __asm__("r15") = 0x1515151515151515ull;
	long ret = nr;

	memset(out, 0, sizeof out);
	if (avx)
		__asm__ volatile("vmovdqu (%[in]), %%ymm15\n\t"
				 "syscall\n\t"
				 "vmovdqu %%ymm15, (%[out])\n\t"
				 "vzeroupper"
				 : "+a"(ret), "+r"(rbx), "+r"(r12), "+r"(r13), "+r"(r14), "+r"(r15)
				 : "D"(a1), "S"(a2), "d"(a3), [in] "r"(pat), [out] "r"(out)
				 : "rcx", "r11", "memory", "xmm15");
	else
		__asm__ volatile("movdqu (%[in]), %%xmm15\n\t"
				 "syscall\n\t"
				 "movdqu %%xmm15, (%[out])"
				 : "+a"(ret), "+r"(rbx), "+r"(r12), "+r"(r13), "+r"(r14), "+r"(r15)
				 : "D"(a1), "S"(a2), "d"(a3), [in] "r"(pat), [out] "r"(out)
				 : "rcx", "r11", "memory", "xmm15");
	if (rbx != 0x1111111111111111ull || r12 != 0x1212121212121212ull ||
	    r13 != 0x1313131313131313ull || r14 != 0x1414141414141414ull ||
	    r15 != 0x1515151515151515ull)
		corrupt("general registers");
	if (memcmp(out, pat, avx ? 32 : 16))
		corrupt(avx ? "ymm15" : "xmm15");
	return ret;
}

/* A steady thread's work: blocks filled with a pattern of their own,
 * checked before they are freed. */
static void *busy_thread(void *arg)
{
	enum { SLOTS = 256 };
	static __thread unsigned char *ring[SLOTS];
	static __thread size_t len[SLOTS];
	uint64_t rnd = 88172645463325252ull ^ (uintptr_t)arg;
	(void)arg;
	for (unsigned i = 0;; i = (i + 1) % SLOTS) {
		if (ring[i]) {
			for (size_t k = 0; k < len[i]; k++)
				if (ring[i][k] != (unsigned char)(len[i] + k))
					corrupt("heap block");
			free(ring[i]);
		}
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		len[i] = 16 + (rnd % 497);
		if (!(ring[i] = malloc(len[i])))
			corrupt("malloc failed");
		for (size_t k = 0; k < len[i]; k++)
			ring[i][k] = (unsigned char)(len[i] + k);
	}
	return NULL;
}

static int feed_fd;

/* The helper of steady read mode: a byte every 20 ms. */
static void *feeder(void *arg)
{
	(void)arg;
	for (;;) {
		usleep(20000);
		if (write(feed_fd, "t", 1) != 1)
			corrupt("feeder write");
	}
	return NULL;
}

/* steady mode: see the top of the file. */
static int steady(int threads, int by_read)
{
	int pfd[2] = { -1, -1 };
	char byte;
	static char altstack[64 * 1024];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0 }, now;
	sigset_t mask, cur;
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int avx = __builtin_cpu_supports("avx");
	unsigned long eintr = 0;

	if (sigaltstack(&ss, NULL) < 0)
		return 1;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	sigaddset(&mask, SIGWINCH);
	if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
		return 1;
	for (int i = 0; i < threads; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, busy_thread, (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	}
	if (by_read) {
		pthread_t t;
		if (pipe(pfd) < 0)
			return 1;
		feed_fd = pfd[1];
		if (pthread_create(&t, NULL, feeder, NULL) != 0)
			return 1;
	}
	for (unsigned long n = 0;; n++) {
		long r = by_read ? syscall_checked(0, pfd[0], (long)&byte, 1, avx)
				 : syscall_checked(35, (long)&ts, 0, 0, avx);
		if (r == -4)
			eintr++;        /* EINTR: the call ended early, as after a signal */
		else if (r != (by_read ? 1 : 0))
			corrupt("system call result");
		if (sigaltstack(NULL, &now) < 0 || now.ss_sp != altstack || now.ss_size != sizeof altstack ||
		    (now.ss_flags & SS_DISABLE))
			corrupt("alternate signal stack");
		if (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0 || !sigismember(&cur, SIGUSR2) ||
		    !sigismember(&cur, SIGWINCH) || sigismember(&cur, SIGUSR1))
			corrupt("signal mask");
		printf("tick %lu eintr %lu\n", n, eintr);
	}
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
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "steady") == 0)
		return steady(atoi(argv[2]), argc == 4 && strcmp(argv[3], "read") == 0);
	fprintf(stderr, "usage: robust_target churn SECS LEAK_KIB_PER_S | zombie SECS [CHILD_SECS] | "
		"stacks N SECS [DELAY] | steady BUSY_THREADS [read]\n");
	return 2;
}
