/* attach_target.c: a process to attach to. Threads sit in known places (a
 * sleeping main thread, a thread blocked in read(), one in epoll_wait(), one
 * in pthread_cond_wait(), workers busy in malloc/free) and each checks its own
 * results: a spurious EINTR exits 2, corrupted state or memory exits 3. The
 * sleeping main thread ends after --seconds, or early once --until-file exists. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <link.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop_flag;
static atomic_int eintr_seen, corrupt_seen, usr2_seen;
static atomic_int reader_tid, rt_seen, rt_sent, signaler_done;
static int read_pipe[2], epoll_pipe[2];
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int cond_done;
static atomic_llong ops;
static double max_gap_ms;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_usr2(int sig)
{
	(void)sig;
	usr2_seen++;
}

/* --place: one thread blocks in read() somewhere attach must refuse (inside a
 * callback from libc, in a signal handler) or in a call it accepts. */
static int place_pipe[2];
static const char *place;
static atomic_int at_place;     /* the placed thread is in its callback or handler */

static void block_on_place_pipe(void)
{
	char c;
	at_place = 1;
	while (read(place_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
}

static int dl_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info; (void)size; (void)data;
	block_on_place_pipe();
	return 1;
}

static int blocking_cmp(const void *a, const void *b)
{
	static int once;
	if (!once++)
		block_on_place_pipe();
	return *(const int *)a - *(const int *)b;
}

static void on_usr1(int sig)
{
	(void)sig;
	block_on_place_pipe();
}

static void *placed(void *arg)
{
	(void)arg;
	if (!strcmp(place, "dl_iterate_phdr")) {
		dl_iterate_phdr(dl_cb, NULL);
	} else if (!strcmp(place, "qsort")) {
		int v[64];
		for (int i = 0; i < 64; i++)
			v[i] = 64 - i;
		qsort(v, 64, sizeof v[0], blocking_cmp);
	} else if (!strcmp(place, "handler")) {
		struct sigaction sa = { .sa_handler = on_usr1 };
		sigaction(SIGUSR1, &sa, NULL);
		pthread_kill(pthread_self(), SIGUSR1);
	} else if (!strcmp(place, "usleep")) {
		while (!stop_flag)
			usleep(10000);
	} else if (!strcmp(place, "memset")) {
		/* mostly inside libc's memset, with a little application
		 * work (a checksum) in between */
		size_t n = 256 << 10;
		unsigned char *buf = malloc(n);
		for (unsigned i = 0; buf && !stop_flag; i++) {
			unsigned sum = 0;
			memset(buf, (int)(i & 0xff), n);
			for (size_t k = 0; k < n; k += 64)
				sum += ((volatile unsigned char *)buf)[k];
			if (sum != (unsigned)(i & 0xff) * (unsigned)(n / 64))
				corrupt_seen++;
		}
		free(buf);
	} else if (!strcmp(place, "system")) {
		/* waiting for a child under system(), which holds libc's lock for it */
		if (system("sleep 1.5") != 0)
			corrupt_seen++;
	} else if (!strcmp(place, "fread")) {
		/* blocked in read() under fgetc, which holds only the stream's lock */
		FILE *f = fdopen(place_pipe[0], "r");
		int c = f ? fgetc(f) : EOF;
		if (c != 'p')
			corrupt_seen++;
	}
	return NULL;
}

static void on_rt(int sig)
{
	(void)sig;
	rt_seen++;
}

/* Send n queued real-time signals to the read() thread, one per millisecond:
 * none may be lost, whatever attach does meanwhile. */
static void *signaler(void *arg)
{
	int n = (int)(intptr_t)arg;
	while (!reader_tid && !stop_flag)
		sched_yield();
	for (int i = 0; i < n; i++) {
		if (syscall(SYS_tgkill, getpid(), reader_tid, SIGRTMIN) == 0)
			rt_sent++;
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	signaler_done = 1;
	return NULL;
}

/* Blocked in read() until the end; must get exactly the one byte sent. */
static void *reader(void *arg)
{
	char c = 0;
	ssize_t r;
	(void)arg;
	reader_tid = (int)syscall(SYS_gettid);
	for (;;) {
		r = read(read_pipe[0], &c, 1);
		if (r < 0 && errno == EINTR) {
			fprintf(stderr, "attach_target: read: spurious EINTR\n");
			eintr_seen++;
			continue;
		}
		break;
	}
	if (r != 1 || c != 'q') {
		fprintf(stderr, "attach_target: read returned %zd '%c'\n", r, c);
		corrupt_seen++;
	}
	return NULL;
}

/* Blocked in epoll_wait() with no timeout until the end. */
static void *epoller(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int ep = epoll_create1(0), r;
	(void)arg;
	epoll_ctl(ep, EPOLL_CTL_ADD, epoll_pipe[0], &ev);
	for (;;) {
		r = epoll_wait(ep, &out, 1, -1);
		if (r < 0 && errno == EINTR) {
			fprintf(stderr, "attach_target: epoll_wait: spurious EINTR\n");
			eintr_seen++;
			continue;
		}
		break;
	}
	if (r != 1) {
		fprintf(stderr, "attach_target: epoll_wait returned %d\n", r);
		corrupt_seen++;
	}
	close(ep);
	return NULL;
}

static void *cond_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mtx);
	while (!cond_done)
		pthread_cond_wait(&cond, &mtx);
	pthread_mutex_unlock(&mtx);
	return NULL;
}

/* Allocate and free as fast as possible; every block carries a pattern derived
 * from its address and size, checked before it is freed. */
static void *worker(void *arg)
{
	enum { SLOTS = 256 };
	void *slot[SLOTS] = { 0 };
	size_t size[SLOTS] = { 0 };
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	long long n = 0;

	while (!stop_flag) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned i = (unsigned)(x % SLOTS);
		if (slot[i]) {
			unsigned char pat = (unsigned char)((uintptr_t)slot[i] >> 4 ^ size[i]);
			unsigned char *p = slot[i];
			if (p[0] != pat || p[size[i] - 1] != pat || p[size[i] / 2] != pat) {
				fprintf(stderr, "attach_target: heap block corrupted\n");
				corrupt_seen++;
			}
			free(slot[i]);
			slot[i] = NULL;
		} else {
			size[i] = 16 + (size_t)(x >> 40) % ((x & 0x100) ? 4096 : 256);
			if ((x & 0x3000) == 0x3000)
				slot[i] = calloc(1, size[i]);
			else
				slot[i] = malloc(size[i]);
			if (!slot[i])
				continue;
			memset(slot[i], (unsigned char)((uintptr_t)slot[i] >> 4 ^ size[i]), size[i]);
		}
		n++;
	}
	for (unsigned i = 0; i < SLOTS; i++)
		free(slot[i]);
	ops += n;
	return NULL;
}

/* Spin reading the clock and keep the longest gap: how long this thread (and,
 * under a debugger that stops everything, the process) was not running. */
static void *ticker(void *arg)
{
	double last = now_s(), gap = 0;
	(void)arg;
	while (!stop_flag) {
		double t = now_s();
		if (t - last > gap)
			gap = t - last;
		last = t;
	}
	max_gap_ms = gap * 1000;
	return NULL;
}

/* The main thread sleeps in 10 ms steps with live values in callee-saved
 * registers across each call; they must come back intact and on time. */
static void sleeper(double secs, const char *until)
{
	unsigned steps = (unsigned)(secs * 100);
	uint64_t a = 1, b = 0, ea = 1, eb = 0;
	double t0 = now_s();

	for (unsigned i = 0; i < steps; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		int r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		if (r == EINTR) {
			fprintf(stderr, "attach_target: clock_nanosleep: spurious EINTR\n");
			eintr_seen++;
		} else if (r != 0) {
			fprintf(stderr, "attach_target: clock_nanosleep: %s\n", strerror(r));
			corrupt_seen++;
		}
		a = a * 6364136223846793005ull + i;
		b ^= a >> 3;
		if (until && access(until, F_OK) == 0) {
			steps = i + 1;
			break;
		}
	}
	for (unsigned i = 0; i < steps; i++) {
		ea = ea * 6364136223846793005ull + i;
		eb ^= ea >> 3;
	}
	if (a != ea || b != eb) {
		fprintf(stderr, "attach_target: registers corrupted across sleeps\n");
		corrupt_seen++;
	}
	if (now_s() - t0 < steps * 0.01 - 0.001) {
		fprintf(stderr, "attach_target: sleeps ended early\n");
		corrupt_seen++;
	}
}

/* The main thread waits in epoll_wait() with a timeout and nothing to wake
 * it: a thread attach must leave alone. */
static void main_epoll(double secs)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int ep = epoll_create1(0), r;
	double end = now_s() + secs;

	epoll_ctl(ep, EPOLL_CTL_ADD, epoll_pipe[0], &ev);
	for (;;) {
		int ms = (int)((end - now_s()) * 1000);
		if (ms <= 0)
			break;
		r = epoll_wait(ep, &out, 1, ms);
		if (r < 0 && errno == EINTR) {
			fprintf(stderr, "attach_target: main epoll_wait: spurious EINTR\n");
			eintr_seen++;
		} else if (r != 0) {
			fprintf(stderr, "attach_target: main epoll_wait returned %d\n", r);
			corrupt_seen++;
			break;
		}
	}
	close(ep);
}

/* A seccomp filter that traps open/openat (SIGSYS), as a sandboxed service
 * might: loading a library then fails, and the process must survive it. */
static int trap_open(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "workers", required_argument, NULL, 'w' },
		{ "reader", no_argument, NULL, 'r' },
		{ "epoll", no_argument, NULL, 'e' },
		{ "cond", no_argument, NULL, 'c' },
		{ "busy", no_argument, NULL, 'b' },
		{ "main-epoll", no_argument, NULL, 'E' },
		{ "ticker", no_argument, NULL, 't' },
		{ "ready", required_argument, NULL, 'R' },
		{ "until-file", required_argument, NULL, 'U' },
		{ "seccomp", no_argument, NULL, 'S' },
		{ "signals", required_argument, NULL, 'G' },
		{ "place", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	double secs = 3;
	int nworkers = 0, c;
	int want_reader = 0, want_epoll = 0, want_cond = 0, busy = 0, want_ticker = 0, mepoll = 0;
	int seccomp = 0, nsignals = 0;
	const char *ready = NULL, *until = NULL;
	pthread_t th[64];
	int nth = 0;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': secs = atof(optarg); break;
		case 'w': nworkers = atoi(optarg); break;
		case 'r': want_reader = 1; break;
		case 'e': want_epoll = 1; break;
		case 'c': want_cond = 1; break;
		case 'b': busy = 1; break;
		case 'E': mepoll = 1; break;
		case 't': want_ticker = 1; break;
		case 'R': ready = optarg; break;
		case 'U': until = optarg; break;
		case 'S': seccomp = 1; break;
		case 'G': nsignals = atoi(optarg); break;
		case 'P': place = optarg; break;
		default: return 64;
		}
	}
	if (nworkers > 32)
		nworkers = 32;
	if (pipe(read_pipe) < 0 || pipe(epoll_pipe) < 0 || pipe(place_pipe) < 0)
		return 1;
	struct sigaction sa = { .sa_handler = on_usr2, .sa_flags = SA_RESTART };
	sigaction(SIGUSR2, &sa, NULL);
	struct sigaction rt = { .sa_handler = on_rt, .sa_flags = SA_RESTART };
	sigaction(SIGRTMIN, &rt, NULL);
	if (want_reader)
		pthread_create(&th[nth++], NULL, reader, NULL);
	if (want_epoll)
		pthread_create(&th[nth++], NULL, epoller, NULL);
	if (want_cond)
		pthread_create(&th[nth++], NULL, cond_waiter, NULL);
	if (want_ticker)
		pthread_create(&th[nth++], NULL, ticker, NULL);
	if (place && !strcmp(place, "system")) {
		/* the child's SIGCHLD would interrupt the main thread's epoll_wait */
		sigset_t chld;
		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		pthread_sigmask(SIG_BLOCK, &chld, NULL);
	}
	if (place)
		pthread_create(&th[nth++], NULL, placed, NULL);
	if (nsignals && want_reader)
		pthread_create(&th[nth++], NULL, signaler, (void *)(intptr_t)nsignals);
	for (int i = 0; i < nworkers; i++)
		pthread_create(&th[nth++], NULL, worker, (void *)(uintptr_t)(i + 1));
	if (ready) {
		/* give the blocking threads time to block; the placed one that
		 * blocks in a callback or handler is waited for there (at most
		 * 20 s: a loaded machine may not run it within the 50 ms) */
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		for (int i = 0; place && (!strcmp(place, "dl_iterate_phdr") || !strcmp(place, "qsort") ||
					  !strcmp(place, "handler")) && !at_place && i < 2000; i++) {
			ts.tv_nsec = 10 * 1000 * 1000;
			nanosleep(&ts, NULL);
		}
		FILE *f = fopen(ready, "w");
		if (f) {
			fprintf(f, "%d\n", getpid());
			fclose(f);
		}
	}
	if (seccomp && trap_open() != 0) {
		perror("attach_target: seccomp");
		return 1;
	}
	if (busy) {
		double end = now_s() + secs;
		stop_flag = 0;
		/* the main thread allocates too, checking the clock between rounds */
		while (now_s() < end && !(until && access(until, F_OK) == 0)) {
			for (int i = 0; i < 1000; i++) {
				void *p = malloc(64 + (size_t)i);
				if (!p)
					break;
				memset(p, 0x5a, 64);
				free(p);
			}
		}
	} else if (mepoll) {
		main_epoll(secs);
	} else {
		sleeper(secs, until);
	}
	/* the signals must all have been sent and handled before the reader is
	 * released (bounded, for a very slow machine) */
	for (int i = 0; nsignals && i < 6000 && (!signaler_done || rt_seen < rt_sent); i++) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	stop_flag = 1;
	if (nsignals && (rt_sent != nsignals || rt_seen != rt_sent)) {
		fprintf(stderr, "attach_target: %d signals sent of %d, %d handled\n", (int)rt_sent,
			nsignals, (int)rt_seen);
		corrupt_seen++;
	}
	if (place && write(place_pipe[1], "p", 1) != 1)
		corrupt_seen++;
	if (write(read_pipe[1], "q", 1) != 1 || write(epoll_pipe[1], "e", 1) != 1)
		corrupt_seen++;
	pthread_mutex_lock(&mtx);
	cond_done = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&mtx);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	printf("ops=%lld max_gap_ms=%.3f eintr=%d corrupt=%d usr2=%d rt=%d\n", (long long)ops,
	       max_gap_ms, (int)eintr_seen, (int)corrupt_seen, (int)usr2_seen, (int)rt_seen);
	if (corrupt_seen)
		return 3;
	if (eintr_seen)
		return 2;
	return 0;
}
