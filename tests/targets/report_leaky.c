/* report_leaky.c: a target for the report tests with the real agent: it
 * allocates at known sites (one in an always_inline helper, one through
 * calloc, one through C++-free strdup), prints "ready" and waits to be
 * snapshotted; on SIGUSR1 it allocates a second round at the growing site.
 *
 *   report_leaky N   N blocks of 4096 bytes at the helper (more per SIGUSR1)
 *
 * Lines tagged LINE:name are looked up by the tests. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t more;
static void **keep;
static size_t nkeep, akeep;

/* Keep p reachable, so the blocks stay live. */
static void hold(void *p)
{
	if (nkeep == akeep) {
		akeep = akeep ? akeep * 2 : 64;
		keep = realloc(keep, akeep * sizeof *keep);
		if (!keep)
			abort();
	}
	keep[nkeep++] = p;
}

static inline __attribute__((always_inline)) void leaky_helper(size_t n)
{
	hold(malloc(n)); /* LINE:helper */
}

static __attribute__((noinline)) void grow_site(int count)
{
	for (int i = 0; i < count; i++)
		leaky_helper(4096); /* LINE:grow_call */
}

static __attribute__((noinline)) void steady_site(int count)
{
	for (int i = 0; i < count; i++)
		hold(calloc(1, 1000)); /* LINE:steady */
}

static void on_usr1(int sig)
{
	(void)sig;
	more = 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	grow_site(n);
	steady_site(5);
	printf("ready\n");
	fflush(stdout);
	for (int t = 0; t < 600; t++) {   /* at most a minute */
		if (more) {
			more = 0;
			grow_site(n);
			printf("grown\n");
			fflush(stdout);
		}
		usleep(100000);
	}
	return 0;
}
