/* agent_late.c: a library loaded by agent_dlopen after the agent started; its
 * allocations must be seen (its GOT is patched when it arrives). */
#include <stdlib.h>
#include <string.h>

#define N 10
static unsigned char *blocks[N];

__attribute__((noinline)) void late_keep(void)
{
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(30000);
		if (blocks[i])
			memset(blocks[i], 'l', 30000);
	}
}

/* 0 when every block still holds its pattern. */
int late_release(void)
{
	int bad = 0;
	for (int i = 0; i < N; i++) {
		if (!blocks[i])
			return 1;
		for (int k = 0; k < 30000; k += 100)
			bad += blocks[i][k] != 'l';
		free(blocks[i]);
	}
	return bad;
}
