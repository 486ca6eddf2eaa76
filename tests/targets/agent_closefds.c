/* agent_closefds.c: a program that, like a daemon, closes every descriptor it
 * did not open and then uses nearly all descriptor numbers for pipes of its
 * own, checking that every byte it writes comes back. An agent that kept using
 * its old descriptor numbers would read, write or close the program's pipes.
 * Prints "ready 1" with the pipes open, waits for a line on stdin, checks the
 * pipes again (and once more after a second line) and prints "ok". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXP 4096
#define RESERVE 24

static int fds[MAXP][2];
static int npipes;

/* Write a pattern into every pipe and read it back. Returns the mismatches. */
static int check_pipes(int round)
{
	int bad = 0;
	for (int i = 0; i < npipes; i++) {
		unsigned char w[8], r[8];
		for (int k = 0; k < 8; k++)
			w[k] = (unsigned char)(i * 31 + k + round);
		if (write(fds[i][1], w, sizeof w) != (ssize_t)sizeof w ||
		    read(fds[i][0], r, sizeof r) != (ssize_t)sizeof r || memcmp(w, r, sizeof w) != 0)
			bad++;
	}
	return bad;
}

int main(void)
{
	char line[64];
	int bad;
	long max = sysconf(_SC_OPEN_MAX);

	/* close everything but stdin, stdout and stderr, as daemons do */
	for (long fd = 3; fd < max && fd < 65536; fd++)
		close((int)fd);
	while (npipes < MAXP && pipe(fds[npipes]) == 0)
		npipes++;
	if (errno != EMFILE && npipes < MAXP)
		return 2;
	/* leave a few numbers free, for the program's own stdio and the agent */
	for (int i = 0; i < RESERVE / 2 && npipes > 0; i++) {
		npipes--;
		close(fds[npipes][0]);
		close(fds[npipes][1]);
	}
	bad = check_pipes(0);
	printf("ready 1 pipes=%d\n", npipes);
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 3;
	bad += check_pipes(1);
	for (int i = 0; i < 1000; i++)
		free(malloc(1000 + i));
	printf("ready 2\n");
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 3;
	bad += check_pipes(2);
	if (bad) {
		printf("corrupt pipes=%d\n", bad);
		return 1;
	}
	printf("ok\n");
	return 0;
}
