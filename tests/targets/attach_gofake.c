/* attach_gofake.c: a C program carrying the ELF section by which Go binaries
 * are recognised (.go.buildinfo); attach must refuse it as a Go program and
 * leave it running. Sleeps for argv[1] seconds. */
#include <stdlib.h>
#include <time.h>

__attribute__((section(".go.buildinfo"), used)) static const char buildinfo[32] = "\xff Go buildinf:";

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0)
		;
	return buildinfo[0] == '\xff' ? 0 : 1;
}
