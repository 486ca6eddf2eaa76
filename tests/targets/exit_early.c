/* exit_early.c: a target that exits by itself: exit_early MS [STATUS] sleeps MS
 * milliseconds and exits with STATUS (default 3). */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 500;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
	return argc > 2 ? atoi(argv[2]) : 3;
}
