/* flat.c: a target whose memory does not change: flat MIB [SECONDS] touches MIB
 * MiB of anonymous memory once, then sleeps SECONDS (default: until killed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Kept so the compiler cannot drop the allocation as unused. */
char *volatile flat_keep;

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 16;
	long secs = argc > 2 ? atol(argv[2]) : -1;
	char *p = malloc((size_t)mib << 20);

	if (!p)
		return 1;
	memset(p, 1, (size_t)mib << 20);
	flat_keep = p;
	if (secs < 0)
		for (;;)
			pause();
	while (secs > 0)
		secs = (long)sleep((unsigned)secs);
	return flat_keep[0] == 1 ? 0 : 1;
}
