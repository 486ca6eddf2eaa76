/* forker.c: a target that is a process tree: forker CHILDREN MIB DELAY_MS
 * [EXIT_MS] starts CHILDREN children DELAY_MS apart, each touching MIB MiB and
 * sleeping; the first child also starts a grandchild of its own, so the tree is
 * two levels deep. With EXIT_MS, one more child exits after EXIT_MS and is never
 * reaped: a zombie in the tree. Every process sleeps until killed; the parent's
 * death (SIGTERM) takes the tree with it (the children watch their parent). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* Sleep ms milliseconds, whatever signals come. */
static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Kept so the compiler cannot drop the allocation as unused. */
char *volatile forker_keep;

/* A member of the tree: touch mib MiB and sleep until the parent goes. */
static void member(long mib, int grandchild)
{
	char *p;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (grandchild && fork() == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		member(mib, 0);
	}
	p = malloc((size_t)mib << 20);
	if (p)
		memset(p, 2, (size_t)mib << 20);
	forker_keep = p;
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2;
	long mib = argc > 2 ? atol(argv[2]) : 8;
	long delay = argc > 3 ? atol(argv[3]) : 200;
	long i;

	for (i = 0; i < n; i++) {
		sleep_ms(delay);
		if (fork() == 0)
			member(mib, i == 0);
	}
	if (argc > 4 && fork() == 0) {
		sleep_ms(atol(argv[4]));
		_exit(0);
	}
	for (;;)
		pause();
}
