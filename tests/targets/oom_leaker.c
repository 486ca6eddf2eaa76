/* oom_leaker.c: a program that keeps orders it never lets go of: it grows by
 * about 1 MiB every 40 ms in fill_orders(), every page written, until the
 * memory runs out, which in a memory cgroup with a limit is the OOM killer's
 * kill. Prints "started" once running. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct order {
	struct order *next;
	char lines[(1u << 20) - 64];
};

static struct order *orders;

/* Take one more batch of orders: nothing ever frees them. */
static __attribute__((noinline)) void fill_orders(unsigned n)
{
	struct order *o = malloc(sizeof *o);
	if (!o)
		abort();
	memset(o->lines, (int)(n & 0x7f) + 1, sizeof o->lines);
	o->next = orders;
	orders = o;
}

int main(int argc, char **argv)
{
	long quiet_ms = argc > 1 ? atol(argv[1]) : 1000;
	struct timespec q = { quiet_ms / 1000, (quiet_ms % 1000) * 1000000L };
	struct timespec ts = { 0, 40 * 1000000L };

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("started\n");
	while (nanosleep(&q, &q) != 0)
		;
	for (unsigned n = 0;; n++) {
		fill_orders(n);
		nanosleep(&ts, NULL);
	}
}
