/* agent_mmap.c: a target with known mmap sites, driven step by step through
 * stdin (see agent_sites.c).
 *   phase 1: keep_map() maps 8 MiB anonymous private and keeps it;
 *            part_map() maps 8 MiB and unmaps the middle 2 MiB (6 MiB left, in
 *            two pieces); grow_map() maps 4 MiB and mremaps it to 12 MiB;
 *            fixed_map() maps 4 MiB and maps 1 MiB shared over its start with
 *            MAP_FIXED (the 1 MiB shared anonymous and 3 MiB private: 4 MiB);
 *            file_map() maps 1 MiB of a file and memfd_map() 1 MiB of a memfd
 *            shared (both the file kind); raw_map() maps
 *            4 MiB by a raw system call and unmaps half of it through munmap
 *            (never seen, nothing taken out); shrink_map() maps 8 MiB and
 *            mremaps it to 3 MiB; move_map() maps 4 MiB and mremaps it onto a
 *            place reserved by a raw system call (MREMAP_FIXED); unseen_grow()
 *            mremaps a 2 MiB mapping made by a raw system call to 6 MiB (4 MiB
 *            of new memory); sbrk_grow() moves the break up 3 MiB and down
 *            1 MiB (2 MiB, the brk kind), brk_grow() up 2 MiB and down 1 MiB
 *            by brk (1 MiB); big_malloc() mallocs 1 MiB and big_realloc()
 *            reallocs another 1 MiB block to 4 MiB (glibc mmaps and mremaps
 *            them itself: counted once, as malloc); prints "ready 1" and
 *            waits for a line
 *   phase 2: unmaps every mapping (the break stays); prints "ready 2", waits
 *            for a line
 *   end:     prints "ok" */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static char *kept, *part, *grown, *fixed, *filem, *memfdm, *raw, *big, *bigr, *shrunk, *moved, *unseen;

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

__attribute__((noinline)) static void memfd_map(void)
{
	int fd = memfd_create("agent_mmap", 0);
	if (fd < 0 || ftruncate(fd, (off_t)MIB) != 0)
		exit(15);
	memfdm = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (memfdm == MAP_FAILED)
		exit(15);
	memset(memfdm, 9, MIB);
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

/* A mapping the hooks never see. */
static char *raw_anon(size_t len, int prot)
{
	char *p = (char *)syscall(SYS_mmap, NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(9);
	return p;
}

__attribute__((noinline)) static void shrink_map(void)
{
	char *p = map_anon(8 * MIB);
	shrunk = mremap(p, 8 * MIB, 3 * MIB, 0);
	if (shrunk != p)
		exit(10);
}

__attribute__((noinline)) static void move_map(void)
{
	char *p = map_anon(4 * MIB), *to = raw_anon(4 * MIB, PROT_NONE);
	moved = mremap(p, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (moved != to)
		exit(11);
	memset(moved, 5, 4 * MIB);
}

__attribute__((noinline)) static void unseen_grow(void)
{
	char *p = raw_anon(2 * MIB, PROT_READ | PROT_WRITE);
	unseen = mremap(p, 2 * MIB, 6 * MIB, MREMAP_MAYMOVE);
	if (unseen == MAP_FAILED)
		exit(12);
	memset(unseen, 6, 6 * MIB);
}

/* Both done before anything else can move the break (malloc extends its heap
 * with it too), so that lowering it gives back only what was added here. */
__attribute__((noinline)) static void sbrk_grow(void)
{
	char *p = sbrk(3 * MIB);
	if (p == (void *)-1)
		exit(13);
	memset(p, 7, 3 * MIB);
	if (sbrk(-(intptr_t)MIB) == (void *)-1)
		exit(13);
}

__attribute__((noinline)) static void brk_grow(void)
{
	char *p = sbrk(0);
	if (brk(p + 2 * MIB) != 0)
		exit(14);
	memset(p, 8, 2 * MIB);
	if (brk(p + MIB) != 0)
		exit(14);
}

__attribute__((noinline)) static void big_realloc(void)
{
	bigr = malloc(MIB);
	if (!bigr)
		exit(8);
	bigr = realloc(bigr, 4 * MIB);
	if (!bigr)
		exit(8);
	memset(bigr, 4, 4 * MIB);
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
	/* stdout's buffer first, so that no malloc moves the break between
	 * sbrk_grow's and brk_grow's moves */
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("start\n");
	fflush(stdout);
	sbrk_grow();
	brk_grow();
	keep_map();
	part_map();
	grow_map();
	fixed_map();
	file_map(argv[0]);
	memfd_map();
	raw_map();
	shrink_map();
	move_map();
	unseen_grow();
	big_malloc();
	big_realloc();
	if (!wait_line(1))
		return 1;
	munmap(kept, 8 * MIB);
	/* not the hole: another mapping (malloc's) may sit there now */
	munmap(part, 3 * MIB);
	munmap(part + 5 * MIB, 3 * MIB);
	munmap(grown, 12 * MIB);
	munmap(fixed, 4 * MIB);
	munmap(filem, MIB);
	munmap(memfdm, MIB);
	munmap(raw + 2 * MIB, 2 * MIB);
	munmap(shrunk, 3 * MIB);
	munmap(moved, 4 * MIB);
	munmap(unseen, 6 * MIB);
	free(big);
	free(bigr);
	if (!wait_line(2))
		return 1;
	puts("ok");
	return 0;
}
