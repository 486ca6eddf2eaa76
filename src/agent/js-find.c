/* js-find.c: node's JavaScript threads found (see js.c): each thread not
 * known yet is asked for its isolate by a queued real-time signal whose
 * handler reads V8's thread-local current isolate and holds the thread while
 * its start is requested; threads that run none are asked again a few
 * times. Run on the helper thread. */
#include "config.h"

#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "js.h"
#include "v8api.h"

/* The signal handshake with one thread. */
static int js_signal;
static void *volatile found_iso;
static volatile pid_t found_tid;
static volatile int handshake;  /* 1 sent, 4 being answered, 2 answered (found_iso,
				 * found_tid), 3 released */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	uint64_t t0;
	void *iso;
	int one = 1;
	(void)sig;
	(void)uc;
	if (si->si_code != SI_QUEUE || si->si_value.sival_int != JS_SIGNAL_MAGIC || si->si_pid != getpid())
		return;
	/* one answer at a time: a late signal's thread may race this one's */
	if (!__atomic_compare_exchange_n(&handshake, &one, 4, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	iso = mw_v8.try_get_current();
	found_iso = iso;
	found_tid = my_tid();
	__atomic_store_n(&handshake, 2, __ATOMIC_RELEASE);
	if (!iso)
		return;
	t0 = mw_now_ns();
	while (__atomic_load_n(&handshake, __ATOMIC_ACQUIRE) == 2 && mw_now_ns() - t0 < JS_HOLD_NS)
		__builtin_ia32_pause();
}

/* A signal whose handler stays ours: one was sent that was answered late or
 * never, and may still be delivered (our handler ignores it then). */
static int owned_signal;

/* Is sig blocked by thread tid (its SigBlk)? True when that cannot be read. */
static bool thread_blocks(pid_t tid, int sig)
{
	char path[64], line[256];
	unsigned long long blocked = ~0ull;
	FILE *f;
	snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
	if ((f = fopen(path, "re"))) {
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "SigBlk: %llx", &blocked) == 1)
				break;
		fclose(f);
	}
	return sig - 1 >= 64 || ((blocked >> (sig - 1)) & 1);
}

/* A real-time signal nobody handles and the main thread does not block, with
 * our handler installed; 0 if there is none, and *later when one that is
 * free is blocked by the main thread now (as while it starts threads).
 * *restore: the disposition may be put back (*old) once every signal sent is
 * answered. */
static int pick_signal(struct sigaction *old, bool *restore, bool *later)
{
	int sig;
	*restore = false;
	*later = false;
	if (owned_signal)
		return owned_signal;
	for (sig = SIGRTMAX; sig > SIGRTMIN + 4; sig--) {
		struct sigaction sa;
		if (sigaction(sig, NULL, old) < 0 || old->sa_handler != SIG_DFL || (old->sa_flags & SA_SIGINFO))
			continue;
		if (thread_blocks(getpid(), sig)) {
			*later = true;
			continue;
		}
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_signal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigfillset(&sa.sa_mask);
		if (sigaction(sig, &sa, NULL) == 0) {
			*restore = true;
			return sig;
		}
	}
	return 0;
}

/* Is tid one of our js_slots' threads, not to be asked again? With js_lock
 * held. */
static bool tid_known(pid_t tid)
{
	size_t i;
	for (i = 0; i < JS_MAX_ISOLATES; i++)
		if (js_slots[i].state != SLOT_FREE && js_slots[i].tid == tid && !js_slots[i].reask)
			return true;
	return false;
}

bool js_tid_alive(pid_t tid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d", (int)tid);
	return access(path, F_OK) == 0;
}

/* Ask thread tid for its isolate by js_signal and, while it is held, for the
 * interrupt that starts the profiler on it. 1: it runs one (or another
 * thread answered late with its own: what it said holds), 0: it runs none,
 * -1: no answer in time (the signal may come later: it stays ours). */
static int ask_thread(pid_t tid)
{
	siginfo_t si;
	uint64_t t0;
	int st;
	void *iso;
	pid_t who;
	size_t i;

	/* js_lock is held from before the signal to after the request, so that
	 * the request follows the answer at once, while the thread is held
	 * (the handler takes no lock; the callbacks that wait for it meanwhile
	 * wait at most JS_ANSWER_NS) */
	pthread_mutex_lock(&js_lock);
	if (!js_want) {
		pthread_mutex_unlock(&js_lock);
		return 0;
	}
	found_iso = NULL;
	found_tid = 0;
	__atomic_store_n(&handshake, 1, __ATOMIC_RELEASE);
	memset(&si, 0, sizeof si);
	si.si_signo = js_signal;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = JS_SIGNAL_MAGIC;
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, js_signal, &si) < 0) {
		__atomic_store_n(&handshake, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&js_lock);
		return 0;      /* it ended */
	}
	t0 = mw_now_ns();
	while ((st = __atomic_load_n(&handshake, __ATOMIC_ACQUIRE)) != 2 && mw_now_ns() - t0 < JS_ANSWER_NS) {
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
	if (st != 2) {
		/* Never answered: our handler stays, and ignores the late signal
		 * (a thread that claims the handshake meanwhile finds 0 and goes). */
		int one = 1;
		if (__atomic_compare_exchange_n(&handshake, &one, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			pthread_mutex_unlock(&js_lock);
			return -1;
		}
		/* claimed just now: wait for its answer, which comes without a wait */
		while (__atomic_load_n(&handshake, __ATOMIC_ACQUIRE) != 2)
			__builtin_ia32_pause();
	}
	iso = found_iso;
	who = found_tid;
	if (iso) {
		struct js_slot *s = NULL;
		for (i = 0; i < JS_MAX_ISOLATES; i++)
			if (js_slots[i].state != SLOT_FREE && (js_slots[i].iso == iso || js_slots[i].tid == who))
				break;
		if (i == JS_MAX_ISOLATES) {
			for (i = 0; i < JS_MAX_ISOLATES && !s; i++)
				if (js_slots[i].state == SLOT_FREE)
					s = &js_slots[i];
			if (s)
				memset(s, 0, sizeof *s);
		} else if (js_slots[i].state == SLOT_PENDING && js_slots[i].reask && js_slots[i].iso == iso) {
			/* its start asked again (the earlier one, if V8 runs it
			 * after all, starts it; this one then does nothing) */
			s = &js_slots[i];
			s->reask = false;
		}
		if (s) {
			s->state = SLOT_PENDING;
			s->iso = iso;
			s->tid = who;
			s->asked_ns = mw_now_ns();
			s->asks++;
			mw_v8.request_interrupt(iso, js_on_start, (void *)(uintptr_t)(s - js_slots));
			if (is_main(s)) {
				js_state = MW_JS_WAITING;
				js_set_why("the JavaScript thread has not reached a safe point yet");
			}
		}
	}
	pthread_mutex_unlock(&js_lock);
	__atomic_store_n(&handshake, 3, __ATOMIC_RELEASE);
	return iso ? 1 : 0;
}

/* Threads asked that ran no isolate: asked again a few times, a second or
 * more apart (a worker thread may be asked before it enters its isolate). */
#define JS_MAX_NOISO 256
#define JS_NOISO_TRIES 3
static struct { pid_t tid; unsigned tries; uint64_t next_ns; } noiso[JS_MAX_NOISO];
size_t js_nnoiso;           /* the helper's own */
bool js_noiso_reset;        /* a capture starts: every thread may be asked again */
/* The last thread that did not answer in time: asked last at the next look,
 * so that one that never answers (stopped, or in a long uninterruptible
 * wait) does not keep the threads after it from being asked. */
static pid_t late_tid;

/* Look for the isolates not known yet: the main thread's first, then any
 * other thread's that does not block the signal (our own threads block it).
 * False when they never can be (no signal). */
bool js_scan(void)
{
	struct sigaction old;
	bool restore, later, answered = true;
	char path[64];
	pid_t tids[512];
	size_t ntids = 0, i, k;
	DIR *d;
	struct dirent *e;
	uint64_t now = mw_now_ns();

	if (!*mw_v8.v8_initialized)
		return true;    /* node is still starting */
	/* the js_slots of threads gone are free again */
	pthread_mutex_lock(&js_lock);
	if (js_noiso_reset)
		js_nnoiso = 0;
	js_noiso_reset = false;
	for (i = 0; i < JS_MAX_ISOLATES; i++)
		if ((js_slots[i].state == SLOT_GONE || js_slots[i].state == SLOT_PENDING) &&
		    !is_main(&js_slots[i]) && !js_tid_alive(js_slots[i].tid))
			js_slots[i].state = SLOT_FREE;
	pthread_mutex_unlock(&js_lock);
	tids[ntids++] = getpid();
	snprintf(path, sizeof path, "/proc/self/task");
	if ((d = opendir(path))) {
		while ((e = readdir(d)) && ntids < sizeof tids / sizeof tids[0]) {
			pid_t t = (pid_t)atoi(e->d_name);
			if (t > 0 && t != getpid())
				tids[ntids++] = t;
		}
		closedir(d);
	}
	/* forget the threads gone from the list of those without an isolate */
	for (i = k = 0; i < js_nnoiso; i++) {
		size_t j;
		for (j = 0; j < ntids && tids[j] != noiso[i].tid; j++)
			;
		if (j < ntids)
			noiso[k++] = noiso[i];
	}
	js_nnoiso = k;
	/* the threads to ask now: those not known, and not given up on or
	 * asked too lately; none (as almost always once all are known): the
	 * signals are not touched */
	pthread_mutex_lock(&js_lock);
	for (i = k = 0; i < ntids; i++) {
		size_t j;
		if (tid_known(tids[i]))
			continue;
		for (j = 0; j < js_nnoiso && noiso[j].tid != tids[i]; j++)
			;
		if (j < js_nnoiso && (noiso[j].tries >= JS_NOISO_TRIES || now < noiso[j].next_ns))
			continue;
		tids[k++] = tids[i];
	}
	pthread_mutex_unlock(&js_lock);
	ntids = k;
	if (!ntids)
		return true;
	for (i = 0; i + 1 < ntids; i++)
		if (tids[i] == late_tid) {
			memmove(tids + i, tids + i + 1, (ntids - i - 1) * sizeof tids[0]);
			tids[ntids - 1] = late_tid;
			break;
		}
	if (!(js_signal = pick_signal(&old, &restore, &later))) {
		pthread_mutex_lock(&js_lock);
		js_set_why(later ? "the main thread blocks the signals that could find it"
			      : "no free real-time signal to find the JavaScript thread");
		pthread_mutex_unlock(&js_lock);
		return later;
	}
	for (i = 0; i < ntids; i++) {
		pid_t t = tids[i];
		bool known;
		int r;
		size_t j;
		pthread_mutex_lock(&js_lock);
		known = tid_known(t) || !js_want;
		pthread_mutex_unlock(&js_lock);
		if (known)
			continue;
		for (j = 0; j < js_nnoiso && noiso[j].tid != t; j++)
			;
		/* a thread that blocks the signal (ours, node's watchdog, one
		 * starting with its creator's mask) counts as one that runs no
		 * isolate: asked again a few times */
		r = thread_blocks(t, js_signal) ? 0 : ask_thread(t);
		if (r < 0 && !js_tid_alive(t))
			continue;       /* it ended, and its signal with it */
		if (r < 0) {
			late_tid = t;
			if (t == getpid()) {
				pthread_mutex_lock(&js_lock);
				js_set_why("the main thread did not answer");
				pthread_mutex_unlock(&js_lock);
			}
			answered = false;
			break;
		}
		if (r == 0 && t != getpid()) {
			if (j == js_nnoiso && js_nnoiso < JS_MAX_NOISO) {
				noiso[js_nnoiso].tid = t;
				noiso[js_nnoiso].tries = 0;
				js_nnoiso++;
			}
			if (j < js_nnoiso) {
				noiso[j].tries++;
				noiso[j].next_ns = now + (1000000000ull << noiso[j].tries);
			}
		}
	}
	if (!answered)
		owned_signal = js_signal;
	else if (restore)
		/* Every signal sent was delivered, so none is pending: the
		 * disposition goes back. */
		sigaction(js_signal, &old, NULL);
	return true;
}
