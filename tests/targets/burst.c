/* burst.c: a program whose memory rises in a burst and falls again: after a
 * quiet start it builds a report of about 160 MiB in build_report() within
 * about 2 s, holds it 3 s, frees it all, and stays small until the given
 * number of seconds (default 30) is over. Prints "built" and "freed" as it
 * goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (32u << 10)
#define BLOCKS 5120            /* 160 MiB */

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Build the report: every block written, a few at a time. */
static __attribute__((noinline)) char **build_report(void)
{
	char **rows = calloc(BLOCKS, sizeof *rows);
	if (!rows)
		abort();
	for (unsigned i = 0; i < BLOCKS; i++) {
		rows[i] = malloc(BLOCK);
		if (!rows[i])
			abort();
		memset(rows[i], (int)(i & 0x7f) + 1, BLOCK);
		if (i % 64 == 63)
			nap_ms(25);      /* 80 pauses: about 2 s in all */
	}
	return rows;
}

static __attribute__((noinline)) void drop_report(char **rows)
{
	for (unsigned i = 0; i < BLOCKS; i++)
		free(rows[i]);
	free(rows);
}

int main(int argc, char **argv)
{
	long total = argc > 1 ? atol(argv[1]) : 30;
	long quiet_ms = argc > 2 ? atol(argv[2]) : 1500;
	char **rows;

	setvbuf(stdout, NULL, _IOLBF, 0);
	nap_ms(quiet_ms);
	rows = build_report();
	printf("built\n");
	nap_ms(3000);
	drop_report(rows);
	printf("freed\n");
	nap_ms(total * 1000 - quiet_ms - 5000 > 0 ? total * 1000 - quiet_ms - 5000 : 0);
	return 0;
}
