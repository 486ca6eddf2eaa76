/* agent_signal.c: signal handlers that allocate and free, interrupting threads
 * that allocate all the time (so, at rate 1, often inside the agent's own slow
 * path). The handler keeps one block between invocations, so frees of sampled
 * blocks happen inside handlers too. Handlers only use a size class that the
 * threads warmed up in their own tcache, as a program doing this must for
 * glibc's own sake. Usage: agent_signal SECONDS. Prints "ready 1" when the
 * timer runs and "ok signals=N" at the end. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t signals, handler_bad;
static __thread unsigned char *kept;
static double seconds;

static void handler(int sig)
{
	unsigned char *p = malloc(40);
	(void)sig;
	if (!p) {
		handler_bad = 1;
		return;
	}
	memset(p, 0x5a, 40);
	if (kept) {
		for (int i = 0; i < 40; i++)
			if (kept[i] != 0x5a)
				handler_bad = 1;
		free(kept);
	}
	kept = p;
	signals++;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	unsigned long bad = 0, n = 0;
	double end = now() + seconds;
	(void)arg;
	free(malloc(40));   /* warm this thread's tcache for the handler's size */
	while ((n & 255) || now() < end) {
		unsigned char *p = malloc(200);
		if (!p)
			return (void *)1;
		memset(p, (int)(n & 0xff), 200);
		for (int i = 0; i < 200; i += 7)
			bad += p[i] != (n & 0xff);
		free(p);
		n++;
	}
	return (void *)bad;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 300 }, { 0, 300 } };
	pthread_t th;
	void *r1, *r2;

	seconds = argc > 1 ? atof(argv[1]) : 3;
	free(malloc(40));
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	if (pthread_create(&th, NULL, worker, NULL) != 0)
		return 2;
	setitimer(ITIMER_PROF, &it, NULL);
	printf("ready 1\n");
	fflush(stdout);
	r1 = worker(NULL);
	pthread_join(th, &r2);
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_PROF, &it, NULL);
	if (r1 || r2 || handler_bad) {
		printf("corrupt\n");
		return 1;
	}
	printf("ok signals=%d\n", (int)signals);
	return 0;
}
