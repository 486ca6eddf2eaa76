/* agent_sites.c: a target with known allocation sites and sizes, driven step by
 * step through stdin so that snapshots can be taken at known points.
 *   phase 1: keep_big() holds 64 MiB in 1024 blocks of 64 KiB, keep_small()
 *            holds 4000 blocks of 100 bytes, churn() allocates and frees 32 MiB,
 *            reuse() frees each of 1000 blocks of 200 bytes and at once
 *            allocates (and holds) another, which malloc puts at its address;
 *            prints "ready 1" and waits for a line on stdin
 *   phase 2: frees half of keep_big's blocks; prints "ready 2", waits for a line
 *   end:     frees everything, checks every block's pattern, prints "ok" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG_N 1024
#define BIG_SIZE (64 * 1024)
#define SMALL_N 4000
#define SMALL_SIZE 100

static unsigned char *big[BIG_N];
static unsigned char *small[SMALL_N];
#define REUSE_N 1000
#define REUSE_SIZE 200
static unsigned char *reused[REUSE_N];

/* Each site has its own non-inlined function, so its stack is its own. */
__attribute__((noinline)) static void keep_big(void)
{
	for (int i = 0; i < BIG_N; i++) {
		big[i] = malloc(BIG_SIZE);
		if (!big[i])
			exit(2);
		memset(big[i], i & 0xff, BIG_SIZE);
	}
}

__attribute__((noinline)) static void keep_small(void)
{
	for (int i = 0; i < SMALL_N; i++) {
		small[i] = malloc(SMALL_SIZE);
		if (!small[i])
			exit(2);
		memset(small[i], (i * 7) & 0xff, SMALL_SIZE);
	}
}

__attribute__((noinline)) static void churn(void)
{
	for (int i = 0; i < 8192; i++) {
		unsigned char *p = malloc(4096);
		if (!p)
			exit(2);
		p[0] = 1;
		p[4095] = 2;
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
}

/* The block at a freed block's address, taken at once: its record must
 * outlive the free of the one before. */
__attribute__((noinline)) static void reuse(void)
{
	for (int i = 0; i < REUSE_N; i++) {
		unsigned char *p = malloc(REUSE_SIZE);
		if (!p)
			exit(2);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
		reused[i] = malloc(REUSE_SIZE);
		if (!reused[i])
			exit(2);
		memset(reused[i], i & 0xff, REUSE_SIZE);
	}
}

static int wait_line(int phase)
{
	char line[64];
	printf("ready %d\n", phase);
	fflush(stdout);
	return fgets(line, sizeof line, stdin) != NULL;
}

int main(void)
{
	int bad = 0;
	keep_big();
	keep_small();
	churn();
	reuse();
	if (!wait_line(1))
		return 3;
	for (int i = 0; i < BIG_N; i += 2) {
		free(big[i]);
		big[i] = NULL;
	}
	if (!wait_line(2))
		return 3;
	for (int i = 0; i < BIG_N; i++) {
		if (!big[i])
			continue;
		for (int k = 0; k < BIG_SIZE; k += 512)
			bad += big[i][k] != (i & 0xff);
		free(big[i]);
	}
	for (int i = 0; i < SMALL_N; i++) {
		for (int k = 0; k < SMALL_SIZE; k++)
			bad += small[i][k] != ((i * 7) & 0xff);
		free(small[i]);
	}
	for (int i = 0; i < REUSE_N; i++) {
		for (int k = 0; k < REUSE_SIZE; k++)
			bad += reused[i][k] != (i & 0xff);
		free(reused[i]);
	}
	if (bad) {
		printf("corrupt %d\n", bad);
		return 1;
	}
	printf("ok\n");
	return 0;
}
