/* attach_tracer.c: plays a debugger for the attach tests: seizes the given
 * pid (without stopping it) and holds it for argv[2] seconds. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int pid = atoi(argv[1]);
	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0) {
		perror("PTRACE_SEIZE");
		return 1;
	}
	puts("tracing");
	fflush(stdout);
	sleep((unsigned)atoi(argv[2]));
	return 0;
}
