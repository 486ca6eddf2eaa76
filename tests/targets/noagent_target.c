/* noagent_target.c: a program the agent cannot be loaded into once built
 * statically or with musl (tests/noagent-lib.sh): it says "up PID" with its
 * environment's LD_PRELOAD, allocates and touches a little memory, waits (at
 * most 60 s) for the file argv[1] to exist, says "done" and exits with status
 * 3, its own, which memwatch run must pass on. Plain C and libc only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *pre = getenv("LD_PRELOAD");
	struct timespec ts = { 0, 20 * 1000000 };
	char *block = malloc(4 << 20);

	if (argc < 2 || !block)
		return 2;
	memset(block, 1, 4 << 20);
	printf("up %d preload=%s\n", (int)getpid(), pre ? pre : "");
	fflush(stdout);
	for (int i = 0; i < 3000 && access(argv[1], F_OK) != 0; i++)
		nanosleep(&ts, NULL);
	printf("done %d\n", block[12345]);
	free(block);
	return 3;
}
