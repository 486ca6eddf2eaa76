/* agent_mmap.c: a target with known mmap sites, driven step by step through
 * stdin (see agent_sites.c).
 *   phase 1: keep_map() maps 8 MiB anonymous private and keeps it;
 *            part_map() maps 8 MiB and unmaps the middle 2 MiB (6 MiB left, in
 *            two pieces); grow_map() maps 4 MiB and mremaps it to 12 MiB;
 *            fixed_map() maps 4 MiB and maps 1 MiB shared over its start with
 *            MAP_FIXED (3 MiB of it left private); file_map() maps 1 MiB of a
 *            file (not counted); raw_map() maps 4 MiB by a raw system call and
 *            unmaps half of it through munmap (never seen, nothing taken out);
 *            big_malloc() mallocs 1 MiB (glibc mmaps it: counted once, as
 *            malloc); prints "ready 1" and waits for a line
 *   phase 2: unmaps everything; prints "ready 2", waits for a line
 *   end:     prints "ok" */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static char *kept, *part, *grown, *fixed, *filem, *raw, *big;

static char *map_anon(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(2);
	memset(p, 1, len);
	return p;
}

__attribute__((noinline)) static void keep_map(void)
{
	kept = map_anon(8 * MIB);
}

__attribute__((noinline)) static void part_map(void)
{
	part = map_anon(8 * MIB);
	if (munmap(part + 3 * MIB, 2 * MIB) != 0)
		exit(3);
}

__attribute__((noinline)) static void grow_map(void)
{
	char *p = map_anon(4 * MIB);
	grown = mremap(p, 4 * MIB, 12 * MIB, MREMAP_MAYMOVE);
	if (grown == MAP_FAILED)
		exit(4);
	memset(grown, 2, 12 * MIB);
}

__attribute__((noinline)) static void fixed_map(void)
{
	fixed = map_anon(4 * MIB);
	if (mmap(fixed, MIB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
	    fixed)
		exit(5);
}

__attribute__((noinline)) static void file_map(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		exit(6);
	filem = mmap(NULL, MIB, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (filem == MAP_FAILED)
		exit(6);
}

__attribute__((noinline)) static void raw_map(void)
{
	raw = (char *)syscall(SYS_mmap, NULL, 4 * MIB, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		exit(7);
	memset(raw, 3, 4 * MIB);
	if (munmap(raw, 2 * MIB) != 0)
		exit(7);
}

__attribute__((noinline)) static void big_malloc(void)
{
	big = malloc(MIB);
	if (!big)
		exit(8);
	memset(big, 4, MIB);
}

static int wait_line(int phase)
{
	char line[64];
	printf("ready %d\n", phase);
	fflush(stdout);
	return fgets(line, sizeof line, stdin) != NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	keep_map();
	part_map();
	grow_map();
	fixed_map();
	file_map(argv[0]);
	raw_map();
	big_malloc();
	if (!wait_line(1))
		return 1;
	munmap(kept, 8 * MIB);
	/* not the hole: another mapping (malloc's) may sit there now */
	munmap(part, 3 * MIB);
	munmap(part + 5 * MIB, 3 * MIB);
	munmap(grown, 12 * MIB);
	munmap(fixed, 4 * MIB);
	munmap(filem, MIB);
	munmap(raw + 2 * MIB, 2 * MIB);
	free(big);
	if (!wait_line(2))
		return 1;
	puts("ok");
	return 0;
}
