/* flat.c: a target whose memory does not change: flat MIB [SECONDS [THREADS]]
 * touches MIB MiB of anonymous memory once, starts THREADS sleeping threads,
 * then sleeps SECONDS (default, or -1: until killed). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Kept so the compiler cannot drop the allocation as unused. */
char *volatile flat_keep;

/* A thread that only sleeps. */
static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 16;
	long secs = argc > 2 ? atol(argv[2]) : -1;
	long threads = argc > 3 ? atol(argv[3]) : 0;
	char *p = malloc((size_t)mib << 20);
	pthread_t t;

	if (!p)
		return 1;
	memset(p, 1, (size_t)mib << 20);
	flat_keep = p;
	while (threads-- > 0)
		if (pthread_create(&t, NULL, sleeper, NULL) != 0)
			return 1;
	if (secs < 0)
		for (;;)
			pause();
	while (secs > 0)
		secs = (long)sleep((unsigned)secs);
	return flat_keep[0] == 1 ? 0 : 1;
}
