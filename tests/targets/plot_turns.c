/* plot_turns.c: two leaks that take turns, stepped through standard input:
 * after "ready 0", each line read has leak_alpha keep 4 MiB more (steps 1 to
 * 4), then leak_beta (steps 5 to 8); each step ends with "ready N". At the
 * end of input it prints "ok" and exits, the blocks still held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEP_BLOCKS 4
#define BLOCK (1u << 20)

static void *kept[64];
static size_t nkept;

/* One block kept, its pages touched: the first leak. */
static __attribute__((noinline)) void *leak_alpha(void)
{
	void *p = malloc(BLOCK);
	if (!p)
		abort();
	memset(p, 1, BLOCK);
	return p;
}

/* The second leak, the same way. */
static __attribute__((noinline)) void *leak_beta(void)
{
	void *p = malloc(BLOCK);
	if (!p)
		abort();
	memset(p, 2, BLOCK);
	return p;
}

int main(void)
{
	char line[64];
	int step = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready 0\n");
	while (fgets(line, sizeof line, stdin)) {
		step++;
		for (int i = 0; i < STEP_BLOCKS && nkept < sizeof kept / sizeof kept[0]; i++)
			kept[nkept++] = step <= 4 ? leak_alpha() : leak_beta();
		printf("ready %d\n", step);
	}
	printf("ok\n");
	return 0;
}
