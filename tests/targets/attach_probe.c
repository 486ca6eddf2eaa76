/* attach_probe.c: a stand-in for the agent in the attach tests. It exports
 * memwatch_agent_start(); each call appends one line to the file named by the
 * "marker=" option. Other options misbehave on purpose: "fail" returns -1,
 * "exit" ends the process, "crash" dereferences NULL, "signal" raises SIGUSR2
 * (which must reach the program's handler). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int loads;       /* set by the constructor: proves the loader ran it */
static int calls;

__attribute__((constructor)) static void probe_init(void)
{
	loads++;
}

static int start(const char *options);

/* Record the call; short and lock-free like the real start function. The
 * outcome also goes to *result, as the real one does it. */
int memwatch_agent_start(const char *options, int *result);
int memwatch_agent_start(const char *options, int *result)
{
	int r = start(options);
	if (result)
		*result = r;
	return r;
}

static int start(const char *options)
{
	const char *m = strstr(options, "marker=");
	char path[512], line[640];
	int fd, n;

	calls++;
	if (strstr(options, "fail"))
		return -1;
	if (strstr(options, "exit"))
		_exit(0);
	if (strstr(options, "crash"))
		*(volatile int *)(long)calls = 0;
	if (strstr(options, "signal"))
		raise(SIGUSR2);
	if (!m)
		return 0;
	m += 7;
	size_t len = strcspn(m, ",");
	if (len >= sizeof path)
		return -1;
	memcpy(path, m, len);
	path[len] = '\0';
	if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
		return -1;
	n = snprintf(line, sizeof line, "start pid=%d tid=%d loads=%d calls=%d options=%s\n", getpid(),
		     gettid(), loads, calls, options);
	ssize_t w = write(fd, line, (size_t)n);
	close(fd);
	return w == n ? 0 : -1;
}
