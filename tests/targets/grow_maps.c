/* grow_maps.c: a target whose memory grows outside malloc, in one of four
 * ways: grow_maps MODE MIB SECONDS
 *   arena    its own arena allocator: 1 MiB chunks of an anonymous mmap,
 *            reserved 1 GiB at a time, touched as handed out (arena_alloc)
 *   threads  threads that each touch 1 MiB of their own stack, then sleep
 *   file     a file of MIB MiB in $TMPDIR (or /tmp) mapped and read through
 *   brk      its own sbrk, 1 MiB at a time, touched (brk_alloc)
 * It grows by MIB MiB over the first half of SECONDS, prints "ready" first and
 * "grown" when done, then sleeps until killed (a watch of it on a loaded
 * machine may take longer than SECONDS). */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB (1ul << 20)

static char *arena_base;
static size_t arena_used, arena_size;

/* The program's own allocator: no malloc anywhere. */
static __attribute__((noinline)) void *arena_alloc(size_t n)
{
	if (!arena_base || arena_used + n > arena_size) {
		arena_size = 1024 * MIB;
		arena_base = mmap(NULL, arena_size, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (arena_base == MAP_FAILED)
			abort();
		arena_used = 0;
	}
	void *p = arena_base + arena_used;
	arena_used += n;
	return p;
}

/* Memory from the break, as an old-style allocator takes it. */
static __attribute__((noinline)) void *brk_alloc(size_t n)
{
	void *p = sbrk((intptr_t)n);
	if (p == (void *)-1)
		abort();
	return p;
}

static void *stack_toucher(void *arg)
{
	volatile char buf[MIB - 64 * 1024];
	(void)arg;
	for (size_t i = 0; i < sizeof buf; i += 512)
		buf[i] = 1;
	for (;;)
		pause();
	return NULL;
}

static void pace(unsigned i, unsigned n, double seconds)
{
	struct timespec ts = { 0, (long)(seconds / 2 / n * 1e9) };
	(void)i;
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "arena";
	unsigned mib = argc > 2 ? (unsigned)atoi(argv[2]) : 64;
	double seconds = argc > 3 ? atof(argv[3]) : 10;
	static volatile unsigned long_sink;
	(void)long_sink;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	if (!strcmp(mode, "arena")) {
		for (unsigned i = 0; i < mib; i++) {
			memset(arena_alloc(MIB), 1, MIB);
			pace(i, mib, seconds);
		}
	} else if (!strcmp(mode, "brk")) {
		for (unsigned i = 0; i < mib; i++) {
			memset(brk_alloc(MIB), 1, MIB);
			pace(i, mib, seconds);
		}
	} else if (!strcmp(mode, "threads")) {
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 2 * MIB);
		for (unsigned i = 0; i < mib; i++) {
			pthread_t t;
			if (pthread_create(&t, &a, stack_toucher, NULL) != 0)
				abort();
			pace(i, mib, seconds);
		}
	} else if (!strcmp(mode, "file")) {
		const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		char path[4096];
		int fd;
		unsigned long sum = 0;
		snprintf(path, sizeof path, "%s/grow_maps.%d.data", dir, (int)getpid());
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		static char chunk[MIB];
		if (fd < 0)
			abort();
		memset(chunk, 7, sizeof chunk);
		for (unsigned i = 0; i < mib; i++)
			if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
				abort();
		char *m = mmap(NULL, mib * MIB, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			abort();
		unlink(path);
		for (unsigned i = 0; i < mib; i++) {
			for (size_t o = 0; o < MIB; o += 4096)
				sum += (unsigned char)m[i * MIB + o];
			pace(i, mib, seconds);
		}
		long_sink = (unsigned)sum;
	} else {
		fprintf(stderr, "grow_maps: unknown mode %s\n", mode);
		return 2;
	}
	printf("grown\n");
	for (;;)
		pause();
}
