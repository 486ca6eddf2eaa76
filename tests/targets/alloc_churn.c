/* alloc_churn.c: three ways to allocate, for the allocation volume: churn_temp
 * allocates 256 MiB in blocks of 64 KiB, each freed at once (all of it
 * temporary); churn_slow allocates 16 MiB in blocks of 256 KiB held 150 ms
 * before they are freed (allocated, never temporary); hold_some keeps 8 MiB
 * in blocks of 1 MiB to the end (the only live heap). Prints "ok" and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *kept[8];

/* Blocks freed as soon as they are written. */
static __attribute__((noinline)) void churn_temp(void)
{
	for (int i = 0; i < 4096; i++) {
		char *volatile p = malloc(64 << 10);
		if (!p)
			abort();
		p[0] = (char)i;
		free(p);
	}
}

/* Blocks held a while, then freed. */
static __attribute__((noinline)) void churn_slow(void)
{
	void *v[64];
	struct timespec ts = { 0, 150 * 1000 * 1000 };

	for (int i = 0; i < 64; i++) {
		v[i] = malloc(256 << 10);
		if (!v[i])
			abort();
		memset(v[i], 3, 256 << 10);
	}
	nanosleep(&ts, NULL);
	for (int i = 0; i < 64; i++)
		free(v[i]);
}

/* Blocks kept to the end. */
static __attribute__((noinline)) void hold_some(void)
{
	for (int i = 0; i < 8; i++) {
		kept[i] = malloc(1 << 20);
		if (!kept[i])
			abort();
		memset(kept[i], 5, 1 << 20);
	}
}

int main(void)
{
	hold_some();
	churn_slow();
	churn_temp();
	printf("ok\n");
	return 0;
}
