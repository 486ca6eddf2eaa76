/* fd_churn.c: a program that, round after round, closes every descriptor above
 * stderr (as a daemon or a process pool does between jobs) and opens pipes of
 * its own on the lowest numbers, checking that every byte it writes comes back
 * and nothing else does. A library thread that opens, reads, writes or closes
 * descriptors in the same table while this goes on (an agent's socket, its
 * reads of /proc) takes the program's numbers: a stolen or foreign byte, or a
 * pipe closed behind the program's back (SIGPIPE, left at its default, kills
 * it). Allocates a little every round, so a capture has something to sample.
 * Prints "ready" at once and "ok rounds=N" after SECONDS (default 5). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NPIPES 32

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, end;
	long rounds = 0, bad = 0, max = sysconf(_SC_OPEN_MAX);
	static int fds[NPIPES][2];
	void *keep[64] = { 0 };

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	end = now() + secs;
	while (now() < end) {
		for (long fd = 3; fd < max && fd < 4096; fd++)
			close((int)fd);
		for (int i = 0; i < NPIPES; i++)
			if (pipe2(fds[i], O_NONBLOCK | O_CLOEXEC) != 0) {
				printf("pipe: %s\n", strerror(errno));
				return 2;
			}
		for (int i = 0; i < NPIPES; i++) {
			unsigned char w[8], r[16];
			for (int k = 0; k < 8; k++)
				w[k] = (unsigned char)(i * 31 + k + rounds);
			if (write(fds[i][1], w, sizeof w) != (ssize_t)sizeof w ||
			    read(fds[i][0], r, sizeof r) != (ssize_t)sizeof w || memcmp(w, r, sizeof w) != 0)
				bad++;
		}
		free(keep[rounds % 64]);
		keep[rounds % 64] = malloc(4096 + (size_t)(rounds % 64) * 64);
		rounds++;
	}
	if (bad) {
		printf("corrupt %ld of %ld rounds\n", bad, rounds);
		return 1;
	}
	printf("ok rounds=%ld\n", rounds);
	return 0;
}
