/* grow.c: a target whose memory grows by a known amount at a known rate:
 * grow STEP_KIB PERIOD_MS STEPS [HOLD_S]: every PERIOD_MS allocate and touch
 * STEP_KIB of anonymous memory, STEPS times, then sleep HOLD_S seconds (default:
 * until killed) and exit 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Sleep ms milliseconds, whatever signals come. */
static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Kept so the compiler cannot drop the allocations as unused. */
char *volatile grow_keep;

int main(int argc, char **argv)
{
	long step_kib, period_ms, steps, hold_s = -1, i;

	if (argc < 4) {
		fprintf(stderr, "usage: grow STEP_KIB PERIOD_MS STEPS [HOLD_S]\n");
		return 2;
	}
	step_kib = atol(argv[1]);
	period_ms = atol(argv[2]);
	steps = atol(argv[3]);
	if (argc > 4)
		hold_s = atol(argv[4]);
	for (i = 0; i < steps; i++) {
		char *p = malloc((size_t)step_kib * 1024);
		if (!p)
			return 1;
		/* touch every page so it is resident */
		memset(p, (int)(i & 0x7f) + 1, (size_t)step_kib * 1024);
		grow_keep = p;
		sleep_ms(period_ms);
	}
	if (hold_s < 0)
		for (;;)
			pause();
	sleep_ms(hold_s * 1000);
	return 0;
}
