/* report_stacks.c: a workload with N distinct allocation stacks, for the report
 * benchmark: each allocation goes down a path of left()/right() calls spelled
 * by the bits of its index, so every index has its own call stack. It then
 * waits (so a snapshot can be taken) or exits (for heaptrack).
 *
 *   report_stacks N wait|exit */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void **keep;
static int levels;

static void walk(int d, unsigned long path, unsigned long index);

static __attribute__((noinline)) void left(int d, unsigned long path, unsigned long index)
{
	walk(d, path, index);
	__asm__ volatile("" ::: "memory");   /* no tail call: keep the frame */
}

static __attribute__((noinline)) void right(int d, unsigned long path, unsigned long index)
{
	walk(d, path, index);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void walk(int d, unsigned long path, unsigned long index)
{
	if (d == levels) {
		keep[index] = malloc(32 + index % 256);
		return;
	}
	if (path & 1)
		left(d + 1, path >> 1, index);
	else
		right(d + 1, path >> 1, index);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000, i;

	while ((1UL << levels) < n)
		levels++;
	keep = calloc(n, sizeof *keep);
	for (i = 0; i < n; i++)
		walk(0, i, i);
	if (argc > 2 && strcmp(argv[2], "wait") == 0) {
		printf("ready\n");
		fflush(stdout);
		for (int t = 0; t < 1200; t++)   /* at most two minutes */
			usleep(100000);
	}
	return 0;
}
