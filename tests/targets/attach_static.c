/* attach_static.c: a statically linked program (no loader, no dlopen) that
 * attach must refuse and leave running: it sleeps for argv[1] seconds. */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0)
		;
	return 0;
}
