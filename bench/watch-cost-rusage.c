/* watch-cost-rusage.c: run a command and print the CPU time and peak RSS it used,
 * with microsecond precision (wait4's rusage), for bench/watch-cost.sh:
 *   watch-cost-rusage OUT CMD [ARGS...]   writes "user_us sys_us maxrss_kib status"
 * to OUT. The command's own output is left alone.
 *   watch-cost-rusage --ticks N INTERVAL_US OUT
 * is the baseline: a program that does nothing but sleep to N absolute deadlines
 * INTERVAL_US apart, as memwatch's loop does, and writes its own CPU time the
 * same way: what one timer wake-up costs on this machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

/* Write the rusage line to path. */
static int report(const char *path, const struct rusage *ru, long status)
{
	FILE *out = fopen(path, "w");
	if (!out) {
		perror(path);
		return 1;
	}
	fprintf(out, "%lld %lld %ld %ld\n",
		(long long)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec,
		(long long)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec,
		ru->ru_maxrss, status);
	return fclose(out) == 0 ? 0 : 1;
}

/* Sleep to n absolute deadlines interval_us apart and report our own cost. */
static int ticks(long n, long interval_us, const char *path)
{
	struct timespec t;
	struct rusage ru;
	long i;

	clock_gettime(CLOCK_MONOTONIC, &t);
	for (i = 0; i < n; i++) {
		t.tv_nsec += interval_us * 1000;
		while (t.tv_nsec >= 1000000000) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0)
			;
	}
	getrusage(RUSAGE_SELF, &ru);
	return report(path, &ru, 0);
}

int main(int argc, char **argv)
{
	struct rusage ru;
	int status;
	pid_t pid;

	if (argc == 5 && strcmp(argv[1], "--ticks") == 0)
		return ticks(atol(argv[2]), atol(argv[3]), argv[4]);
	if (argc < 3) {
		fprintf(stderr, "usage: watch-cost-rusage OUT CMD [ARGS...]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("watch-cost-rusage: fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror("watch-cost-rusage: exec");
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid) {
		perror("watch-cost-rusage: wait4");
		return 1;
	}
	return report(argv[1], &ru, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}
