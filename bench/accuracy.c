/* accuracy.c: known allocation sites for bench/accuracy.sh. Each site is its
 * own function and holds a known number of bytes in blocks of a known size:
 *   site_16m:  16 MiB in 4 KiB blocks        site_64m:   64 MiB in 64 KiB blocks
 *   site_256m: 256 MiB in 1 MiB blocks       site_small: 4 MiB in 64-byte blocks
 *   site_freed: 32 MiB in 16 KiB blocks, all freed again
 * Only the allocator's own headers are written, so the resident memory stays
 * far below the sizes. Prints "ready 1", waits for a line on stdin, frees
 * everything and prints "ok". */
#include <stdio.h>
#include <stdlib.h>

#define MIB (1024 * 1024)

/* The array that holds a site's blocks, allocated outside the site so that
 * the site's figures are its blocks only. */
__attribute__((noinline)) static void **array(size_t n)
{
	void **v = calloc(n + 1, sizeof *v);
	if (!v)
		exit(2);
	return v;
}

static inline __attribute__((always_inline)) void **keep(void **v, size_t total, size_t block)
{
	for (size_t i = 0; i < total / block; i++)
		if (!(v[i] = malloc(block)))
			exit(2);
	return v;
}

#define SITE(name, total, block) \
	__attribute__((noinline)) static void **name(void **v) { return keep(v, total, block); }
SITE(site_16m, 16 * MIB, 4096)
SITE(site_64m, 64 * MIB, 65536)
SITE(site_256m, 256 * MIB, MIB)
SITE(site_small, 4 * MIB, 64)
SITE(site_freed, 32 * MIB, 16384)

static void release(void **v)
{
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

int main(void)
{
	char line[16];
	void **a = site_16m(array(16 * MIB / 4096)), **b = site_64m(array(64 * MIB / 65536));
	void **c = site_256m(array(256)), **d = site_small(array(4 * MIB / 64));
	release(site_freed(array(32 * MIB / 16384)));
	printf("ready 1\n");
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 3;
	release(a);
	release(b);
	release(c);
	release(d);
	printf("ok\n");
	return 0;
}
