/* agent_fork.c: a process that forks (and optionally execs itself) with known
 * allocation sites on each side, for the agent's fork behaviour.
 * Usage: agent_fork fork|exec. The parent holds 10 blocks of 100000 bytes from
 * parent_site(), the child 10 blocks of 50000 from child_site(). The parent
 * prints "ready 1 child=PID" once the child holds its blocks; on a line on
 * stdin it releases the child, which checks its memory and exits 0; the parent
 * checks its own, waits for the child and prints "ok". Internally: agent_fork
 * child RFD WFD is the exec'd child.
 * agent_fork forkstorm: two threads allocate without pause while the main
 * thread forks 40 children that allocate and free, and exit 0; a child that
 * hangs (an inherited lock) is killed after 10 s and counted. Prints "ok". */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 10
static unsigned char *blocks[N];

__attribute__((noinline)) static void parent_site(void)
{
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(100000);
		memset(blocks[i], 'p', 100000);
	}
}

__attribute__((noinline)) static void child_site(void)
{
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(50000);
		memset(blocks[i], 'c', 50000);
	}
}

static int check_free(size_t n, int c)
{
	int bad = 0;
	for (int i = 0; i < N; i++) {
		for (size_t k = 0; k < n; k += 100)
			bad += blocks[i][k] != c;
		free(blocks[i]);
	}
	return bad;
}

/* The child's life: allocate, say so, wait to be released, check, exit. */
static int run_child(int rfd, int wfd)
{
	char c;
	child_site();
	if (write(wfd, "r", 1) != 1)
		return 2;
	if (read(rfd, &c, 1) != 1)
		return 2;
	return check_free(50000, 'c') ? 1 : 0;
}

static volatile int stop_workers;

static void *churner(void *arg)
{
	while (!stop_workers) {
		void *p[16];
		for (int i = 0; i < 16; i++) {
			p[i] = malloc(64 + (size_t)i * 100);
			if (p[i])
				memset(p[i], 1, 64);
		}
		for (int i = 0; i < 16; i++)
			free(p[i]);
	}
	return arg;
}

__attribute__((noinline)) static int child_work(void)
{
	int bad = 0;
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(100 + (size_t)i);
		if (!p)
			return 1;
		memset(p, 'x', 100);
		bad += p[99] != 'x';
		free(p);
	}
	return bad != 0;
}

static int fork_storm(void)
{
	pthread_t th[2];
	int failed = 0;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, churner, NULL) != 0)
			return 2;
	for (int k = 0; k < 40; k++) {
		pid_t pid = fork();
		int st = 0;
		if (pid < 0)
			return 2;
		if (pid == 0)
			_exit(child_work());
		for (int w = 0; w < 1000; w++) {
			pid_t r = waitpid(pid, &st, WNOHANG);
			if (r == pid)
				break;
			if (w == 999) {
				kill(pid, SIGKILL);
				waitpid(pid, &st, 0);
				printf("child %d hung\n", (int)pid);
				st = 1;
				break;
			}
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	stop_workers = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	if (failed) {
		printf("children failed: %d\n", failed);
		return 1;
	}
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	int go[2], ready[2], st;
	char c, line[64], rfd[16], wfd[16];
	pid_t pid;

	if (argc == 4 && strcmp(argv[1], "child") == 0) {
		for (int i = 0; i < N; i++)
			blocks[i] = NULL;
		return run_child(atoi(argv[2]), atoi(argv[3]));
	}
	if (argc == 2 && strcmp(argv[1], "forkstorm") == 0)
		return fork_storm();
	if (argc != 2 || (strcmp(argv[1], "fork") && strcmp(argv[1], "exec")))
		return 2;
	parent_site();
	if (pipe(go) || pipe(ready))
		return 2;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		close(go[1]);
		close(ready[0]);
		if (strcmp(argv[1], "fork") == 0)
			_exit(run_child(go[0], ready[1]));
		snprintf(rfd, sizeof rfd, "%d", go[0]);
		snprintf(wfd, sizeof wfd, "%d", ready[1]);
		execl("/proc/self/exe", argv[0], "child", rfd, wfd, (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		return 2;
	printf("ready 1 child=%d\n", (int)pid);
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 3;
	if (write(go[1], "g", 1) != 1)
		return 2;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("child failed: status %d\n", st);
		return 1;
	}
	if (check_free(100000, 'p'))
		return 1;
	printf("ok\n");
	return 0;
}
