/* run_leaker.c: a program for memwatch run: it echoes its standard input, leaks
 * exactly 3 MiB in leak_block (3 blocks of 1 MiB), frees everything else it
 * allocates, and exits with the status given as its argument. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *kept[3];

/* The leak: blocks that are never freed. */
static __attribute__((noinline)) void *leak_block(size_t n)
{
	void *p = malloc(n);
	if (!p)
		abort();
	memset(p, 7, n);
	return p;
}

/* Short-lived buffers, all freed. */
static __attribute__((noinline)) void churn(void)
{
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(4096 + i);
		if (!p)
			abort();
		p[0] = (char)i;
		free(p);
	}
}

int main(int argc, char **argv)
{
	char line[256];

	for (int i = 0; i < 3; i++)
		kept[i] = leak_block(1 << 20);
	churn();
	while (fgets(line, sizeof line, stdin))
		printf("echo: %s", line);
	fflush(stdout);
	/* kept[] is dropped here: the blocks are still live at exit, never freed */
	kept[0] = kept[1] = kept[2] = NULL;
	return argc > 1 ? atoi(argv[1]) : 0;
}
