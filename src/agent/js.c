/* js.c: node's JavaScript heap, by JavaScript function. When the process is
 * node (its binary or a libnode exports V8's API), capture also drives V8's
 * sampling heap profiler from inside the process: started on the JavaScript
 * thread through v8::Isolate::RequestInterrupt when capture starts, read there
 * at each snapshot (GetAllocationProfile: the live sampled objects and their
 * JavaScript stacks), stopped when capture stops. No port, no inspector
 * session, nothing in the process's JavaScript.
 *
 * V8's C++ API is called through its exported (Itanium-mangled) functions,
 * found by dlsym, never linked against (v8api.c). What is read of V8's structures
 * (v8::AllocationProfile's nodes and samples, their std::vectors,
 * v8::HandleScope's size, or where its data is when its constructor is
 * inline) and which functions copy a string out are per V8 version, in
 * v8layout.c's table, from each version's headers; any other V8, which says
 * its version through v8::V8::GetVersion, is captured native-only.
 *
 * The isolates: V8 keeps the current isolate in a thread-local of the
 * thread that runs it; node runs one on its main thread and one on each
 * worker_threads Worker's thread. Each thread is asked for its own by a
 * queued real-time signal whose handler only reads that thread-local
 * (v8::Isolate::TryGetCurrent: in V8 11.3 one %fs-relative load, in V8 10.2
 * pthread_getspecific of V8's key, a lock-free read of the thread's own
 * descriptor) and then holds the thread (at most 2 ms) while
 * RequestInterrupt is called, so that the isolate cannot be torn down
 * meanwhile. The main thread is asked first; then, once a second, any thread
 * not known yet that does not block the signal (a thread that runs no
 * isolate is asked at most three times: a worker's may be asked before it
 * enters its isolate, and one that lives less than a few seconds may be
 * missed, its heap ending with it). V8 forgets the interrupts asked of an
 * isolate that node is still making: a start not run within a second is
 * asked again, a few times. The first interrupt registers an
 * environment cleanup hook with node; the hook, run on the isolate's thread
 * before node disposes of it, stops the profiler and forgets the isolate,
 * under the lock every later request is made with. Once the profiler runs,
 * reading and stopping it go through node::RequestInterrupt, which also
 * wakes an idle event loop; the start cannot (node's Environment is known
 * only on its thread), and waits for the thread to run JavaScript. No
 * signal is sent before node has initialized V8 (node::per_process::
 * v8_initialized): node sets every signal's disposition back to the default
 * early in main, before that, which would make ours kill it.
 *
 * What a thread the signal reaches sees: a system call that SA_RESTART does
 * not restart (epoll_wait, poll, nanosleep) returns EINTR once; libuv's
 * loops, V8's and libuv's worker threads (condition variables) carry on as
 * for any signal.
 *
 * js-find.c finds the threads and their isolates, js-profile.c reads a
 * profile into a result of ours and a result into a snapshot; js.h holds what
 * the three share. */
#include "config.h"

#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "js.h"
#include "snapshot.h"
#include "v8api.h"

pthread_mutex_t js_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t js_cond = PTHREAD_COND_INITIALIZER;
int js_state = MW_JS_NONE;      /* enum mw_js_state: the main thread's isolate */
static bool probed;
static bool outside_env;        /* the main thread's start ran outside a node environment */
static char js_version[48];
static char js_why[160];                /* the last reason the main thread's JS was not read */
bool js_want;                      /* capture is on */
static uint64_t req_gen;               /* the generation of the last read asked for */
static uint64_t interval;
static int depth;

struct js_slot js_slots[JS_MAX_ISOLATES];

void js_set_why(const char *s)
{
	snprintf(js_why, sizeof js_why, "%s", s);
}

/* Find V8's API and its version, once. */
static void probe(void)
{
	if (probed)
		return;
	probed = true;
	js_state = mw_v8_probe(js_version, sizeof js_version, js_why, sizeof js_why);
}



/* ------------------------------------------------------------------------- */
/* On the JavaScript threads. */

/* The slot a callback names (data), if it is still the isolate iso of the
 * calling thread and may be asked things; with js_lock held. */
static struct js_slot *slot_of(void *iso, void *data)
{
	uintptr_t i = (uintptr_t)data;
	struct js_slot *s;
	if (i >= JS_MAX_ISOLATES)
		return NULL;
	s = &js_slots[i];
	if ((s->state != SLOT_PENDING && s->state != SLOT_HOOKED) || !iso || s->iso != iso ||
	    s->tid != my_tid())
		return NULL;
	return s;
}

/* node tears down the environment of a hooked slot: forget it. */
static void on_cleanup(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	struct js_slot *s;
	mw_tls.guard++;
	pthread_mutex_lock(&js_lock);
	s = i < JS_MAX_ISOLATES ? &js_slots[i] : NULL;
	/* registered only for a hooked slot, which nothing else takes (and
	 * run on its thread: any other would be a slot given to another
	 * isolate, which this must not touch) */
	if (s && s->state == SLOT_HOOKED && s->tid == my_tid()) {
		if (s->running)
			mw_v8.stop(mw_v8.heap_profiler(s->iso));
		s->running = false;
		s->env = NULL;
		s->state = SLOT_GONE;
		s->post_start = s->post_stop = s->post_read = false;
		js_result_free(s->result);
		s->result = NULL;
		if (is_main(s)) {
			js_state = MW_JS_GONE;
			js_set_why("the isolate was torn down");
		}
		pthread_cond_broadcast(&js_cond);
	}
	pthread_mutex_unlock(&js_lock);
	mw_tls.guard--;
}

void js_on_start(void *iso, void *data)
{
	unsigned char hs[V8_HS_ROOM] __attribute__((aligned(16)));
	struct js_slot *s;
	uintptr_t i = (uintptr_t)data;
	mw_tls.guard++;
	pthread_mutex_lock(&js_lock);
	/* The thread that answered for the isolate may have been one running
	 * a task for it (a V8 platform thread, whose current isolate is then
	 * that one); V8 runs the interrupt on the isolate's own thread. */
	if (i < JS_MAX_ISOLATES && iso && js_slots[i].state == SLOT_PENDING && js_slots[i].iso == iso)
		js_slots[i].tid = my_tid();
	s = slot_of(iso, data);
	if (!s || !js_want || s->running)
		goto out;
	if (s->state == SLOT_PENDING) {
		void *env = NULL;
		if (!mw_v8_scope_open(hs, iso)) {
			s->state = SLOT_GONE;
			if (is_main(s)) {
				js_state = MW_JS_OFF;
				snprintf(js_why, sizeof js_why, "V8 %s keeps its handle scopes elsewhere than its headers say",
					 js_version);
			}
			goto out;
		}
		if (mw_v8.in_context(iso))
			env = mw_v8.node_env(mw_v8.current_context(iso));
		if (env)
			mw_v8.add_cleanup(iso, on_cleanup, data);
		mw_v8_scope_close(hs);
		if (!env) {
			/* Without the hook, the isolate's end could not be seen:
			 * this slot is never asked anything again. The isolate is
			 * looked for again, as a new one (a worker's, or the main
			 * thread's, perhaps still starting: under memwatch run
			 * node 18 answers before its bootstrap made the
			 * environment), the main thread's for a bounded number of
			 * looks (JS_MAX_POLLS). */
			s->state = SLOT_FREE;
			if (is_main(s)) {
				/* (looked for again: still starting, as far as a
				 * snapshot meanwhile can tell) */
				js_state = MW_JS_WAITING;
				js_set_why("the JavaScript thread is not in a node environment yet");
				outside_env = true;
			}
			goto out;
		}
		s->env = env;
		s->state = SLOT_HOOKED;
	}
	s->running = mw_v8.start(mw_v8.heap_profiler(iso), interval, depth, 0);
	if (is_main(s)) {
		js_state = s->running ? MW_JS_ON : MW_JS_OFF;
		js_set_why(s->running ? "" : "V8 refused to start its sampling heap profiler");
	}
out:
	pthread_mutex_unlock(&js_lock);
	mw_tls.guard--;
}

static void on_stop(void *iso, void *data)
{
	struct js_slot *s;
	mw_tls.guard++;
	pthread_mutex_lock(&js_lock);
	s = slot_of(iso, data);
	if (s && s->running && !js_want) {
		mw_v8.stop(mw_v8.heap_profiler(iso));
		s->running = false;
		if (is_main(s))
			js_state = MW_JS_OFF;
	}
	pthread_mutex_unlock(&js_lock);
	mw_tls.guard--;
}

/* node::RequestInterrupt's callbacks: on the isolate's own thread. */
static void node_start(void *data)
{
	js_on_start(mw_v8.try_get_current(), data);
}

static void node_stop(void *data)
{
	on_stop(mw_v8.try_get_current(), data);
}

static void on_read(void *iso, void *data);
static void node_read(void *data)
{
	on_read(mw_v8.try_get_current(), data);
}

/* Have cb run on the JavaScript thread of the hooked slot s, through
 * node::RequestInterrupt (which also wakes an idle event loop). With js_lock
 * held: the hook cannot have run. */
static void ask(struct js_slot *s, void (*cb)(void *))
{
	if (s->state == SLOT_HOOKED && s->env)
		mw_v8.node_interrupt(s->env, cb, (void *)(uintptr_t)(s - js_slots));
}

static void on_read(void *iso, void *data)
{
	struct js_result *r;
	struct js_slot *s;
	uint64_t gen;
	mw_tls.guard++;
	pthread_mutex_lock(&js_lock);
	s = slot_of(iso, data);
	if (!s || !s->running || !s->read_gen || s->read_gen != req_gen || s->done_gen == s->read_gen) {
		pthread_mutex_unlock(&js_lock);
		mw_tls.guard--;
		return;
	}
	gen = s->read_gen;
	pthread_mutex_unlock(&js_lock);
	r = js_read_profile(iso, depth);
	pthread_mutex_lock(&js_lock);
	/* (the hook cannot have run meanwhile: it runs on this thread) */
	if (s->state == SLOT_HOOKED && gen == req_gen && s->done_gen != gen) {
		js_result_free(s->result);
		s->result = r;
		s->done_gen = gen;
		if (!r && is_main(s))
			js_set_why("out of memory reading V8's profile");
		pthread_cond_broadcast(&js_cond);
		r = NULL;
	}
	pthread_mutex_unlock(&js_lock);
	js_result_free(r);
	mw_tls.guard--;
}

/* ------------------------------------------------------------------------- */
/* On the helper thread and the control thread. */

/* The helper thread, started with the agent from a thread that has the
 * program's descriptor table (the control thread has one of its own, where
 * node::RequestInterrupt's write to the event loop's eventfd would fail and
 * libuv abort): while capture is on it looks for isolates (every JS_POLL_NS
 * until the main thread's is found, then every JS_SCAN_NS for workers'); it
 * makes the requests that the control thread posts in the js_slots, all under
 * js_lock. */
static pthread_cond_t helper_cond = PTHREAD_COND_INITIALIZER;
static bool helper_running;
static bool find_failed;
static bool posted;             /* a request is posted in a slot */
static unsigned polls;          /* looks for the main isolate in this capture */

static bool main_known(void)
{
	size_t i;
	for (i = 0; i < JS_MAX_ISOLATES; i++)
		if (js_slots[i].state != SLOT_FREE && is_main(&js_slots[i]))
			return true;
	return false;
}

static void *helper(void *arg)
{
	uint64_t next_scan = 0;
	(void)arg;
	mw_tls.guard = 1;
	pthread_mutex_lock(&js_lock);
	for (;;) {
		size_t i;
		for (i = 0; posted && i < JS_MAX_ISOLATES; i++) {
			struct js_slot *s = &js_slots[i];
			/* a worker's thread ends only after node ran the hook;
			 * one gone without it is never asked anything */
			if (s->state == SLOT_HOOKED && !is_main(s) && !js_tid_alive(s->tid))
				s->state = SLOT_GONE;
			if (s->state == SLOT_HOOKED) {
				if (s->post_stop)
					ask(s, node_stop);
				if (s->post_start)
					ask(s, node_start);
				if (s->post_read)
					ask(s, node_read);
			}
			s->post_stop = s->post_start = s->post_read = false;
		}
		posted = false;
		if (js_want && js_state != MW_JS_GONE && !find_failed) {
			struct timespec dl;
			uint64_t now = mw_now_ns(), wait;
			/* V8 may drop an interrupt asked while its isolate is still
			 * starting (node 20 under memwatch run, now and then): the
			 * main thread's start unanswered for JS_RETRY_NS is
			 * forgotten, and its isolate looked for again, through the
			 * signal that shows it alive (a start that comes late
			 * meanwhile finds its slot pending again, or ignores it) */
			for (i = 0; i < JS_MAX_ISOLATES; i++) {
				struct js_slot *s = &js_slots[i];
				if (s->state != SLOT_PENDING)
					continue;
				if (is_main(s) && now - s->asked_ns > JS_RETRY_NS) {
					s->state = SLOT_FREE;
					next_scan = now;
				} else if (!is_main(s) && !s->reask && s->asks < JS_WORKER_ASKS &&
					   now - s->asked_ns > JS_SCAN_NS << (s->asks - 1)) {
					/* A worker's is dropped the same way when
					 * asked while node makes its isolate: V8
					 * clears the interrupts asked of an isolate
					 * when a thread takes its v8::Locker for the
					 * first time, and node's worker thread takes
					 * a second one after making it. It is asked
					 * again, a few times (an idle worker's start
					 * waits for its JavaScript, and each ask
					 * queues one more interrupt in V8). */
					s->reask = true;
				}
			}
			if (now >= next_scan) {
				pthread_mutex_unlock(&js_lock);
				if (!js_scan()) {
					pthread_mutex_lock(&js_lock);
					find_failed = true;
					if (js_state == MW_JS_WAITING)
						js_state = MW_JS_OFF;
					continue;
				}
				pthread_mutex_lock(&js_lock);
				if (!main_known() && ++polls >= JS_MAX_POLLS) {
					/* an embedder that runs JavaScript on another thread */
					find_failed = true;
					js_set_why(outside_env ? "the JavaScript thread ran outside a node environment"
							       : "no V8 isolate on the main thread");
					if (js_state == MW_JS_WAITING)
						js_state = MW_JS_OFF;
					continue;
				}
				now = mw_now_ns();
				next_scan = now + (main_known() ? JS_SCAN_NS : JS_POLL_NS);
			}
			wait = next_scan > now ? next_scan - now : 0;
			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_sec += (time_t)(wait / 1000000000ull);
			dl.tv_nsec += (long)(wait % 1000000000ull);
			if (dl.tv_nsec >= 1000000000L) {
				dl.tv_sec++;
				dl.tv_nsec -= 1000000000L;
			}
			if (!posted)
				pthread_cond_timedwait(&helper_cond, &js_lock, &dl);
			continue;
		}
		next_scan = 0;
		if (!posted)
			pthread_cond_wait(&helper_cond, &js_lock);
	}
	return NULL;
}

static void js_init(void)
{
	pthread_t t;
	pthread_attr_t a;
	mw_tls.guard++;
	pthread_mutex_lock(&js_lock);
	probe();
	if (js_state == MW_JS_OFF && !helper_running) {
		sigset_t all, old;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, 64 * 1024);
		/* no signal of the program's is ever delivered to it */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		if (pthread_create(&t, &a, helper, NULL) == 0)
			helper_running = true;
		else
			js_set_why("no thread to find the JavaScript thread");
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&a);
	}
	pthread_mutex_unlock(&js_lock);
	mw_tls.guard--;
}

static void js_capture_start(void)
{
	size_t i;
	mw_tls.guard++;
	pthread_mutex_lock(&js_lock);
	if (!helper_running || js_state == MW_JS_GONE) {
		pthread_mutex_unlock(&js_lock);
		mw_tls.guard--;
		return;
	}
	js_want = true;
	find_failed = false;
	outside_env = false;
	polls = 0;
	js_noiso_reset = true;
	interval = mw_rate > 1 ? mw_rate : 1;
	depth = (int)(mw_depth ? mw_depth : MW_DEFAULT_DEPTH);
	for (i = 0; i < JS_MAX_ISOLATES; i++) {
		struct js_slot *s = &js_slots[i];
		if (s->state == SLOT_HOOKED && !s->running) {
			s->post_start = true;
			posted = true;
		}
	}
	if (!main_known()) {
		js_state = MW_JS_WAITING;
		js_set_why("the JavaScript thread is not found yet");
	} else if (js_state == MW_JS_OFF) {
		for (i = 0; i < JS_MAX_ISOLATES; i++)
			if (js_slots[i].state == SLOT_HOOKED && is_main(&js_slots[i])) {
				js_state = MW_JS_WAITING;
				js_set_why("the JavaScript thread has not reached a safe point yet");
			}
	}
	pthread_cond_broadcast(&helper_cond);
	pthread_mutex_unlock(&js_lock);
	mw_tls.guard--;
}

static void js_capture_stop(void)
{
	size_t i;
	mw_tls.guard++;
	pthread_mutex_lock(&js_lock);
	js_want = false;
	for (i = 0; i < JS_MAX_ISOLATES; i++) {
		struct js_slot *s = &js_slots[i];
		if (s->state == SLOT_HOOKED && s->running) {
			s->post_stop = true;
			posted = true;
		}
		s->post_start = s->post_read = false;
		s->read_gen = 0;
		js_result_free(s->result);
		s->result = NULL;
		/* Without node's cleanup hook (the start never ran), nothing
		 * would say that the isolate is gone: it is looked for again at
		 * the next capture, and the start still pending does nothing. */
		if (s->state == SLOT_PENDING)
			s->state = SLOT_FREE;
	}
	if (js_state == MW_JS_WAITING || js_state == MW_JS_ON)
		js_state = MW_JS_OFF;
	req_gen++;
	pthread_cond_broadcast(&helper_cond);
	pthread_cond_broadcast(&js_cond);
	pthread_mutex_unlock(&js_lock);
	mw_tls.guard--;
}

static int js_state_of(const char **version, const char **why)
{
	int s;
	pthread_mutex_lock(&js_lock);
	s = js_state;
	pthread_mutex_unlock(&js_lock);
	*version = js_version[0] ? js_version : "-";
	*why = js_why;
	return s;
}

static unsigned js_workers(void)
{
	unsigned n = 0;
	size_t i;
	pthread_mutex_lock(&js_lock);
	for (i = 0; i < JS_MAX_ISOLATES; i++)
		n += js_slots[i].state == SLOT_HOOKED && js_slots[i].running && !is_main(&js_slots[i]);
	pthread_mutex_unlock(&js_lock);
	return n;
}

static const char *js_state_name(int s)
{
	switch (s) {
	case MW_JS_UNSUPPORTED: return "unsupported";
	case MW_JS_OFF: return "off";
	case MW_JS_WAITING: return "waiting";
	case MW_JS_ON: return "on";
	case MW_JS_GONE: return "gone";
	default: return "none";
	}
}

/* Read the profiles on the JavaScript threads (the main thread's and the
 * workers'), waiting at most wait_ns; NULL when none was read. *snap_state
 * is what the snapshot says of the main thread's (enum snap_js), and why
 * holds the words (NUL-terminated) when it is not sampled, or when a
 * worker's was not. */
static struct js_result *take_result(uint64_t wait_ns, uint32_t *snap_state, char *why, size_t whylen)
{
	struct js_result *r = NULL;
	struct timespec dl;
	uint64_t gen;
	size_t i, nrun = 0, late = 0, wread = 0;
	bool main_read = false, main_asked = false;

	pthread_mutex_lock(&js_lock);
	why[0] = 0;
	for (i = 0; i < JS_MAX_ISOLATES; i++)
		nrun += js_slots[i].state == SLOT_HOOKED && js_slots[i].running;
	if (!nrun || !wait_ns) {
		*snap_state = js_state == MW_JS_NONE ? SNAP_JS_NONE
			      : js_state == MW_JS_UNSUPPORTED ? SNAP_JS_NATIVE
			      : js_state == MW_JS_WAITING ? SNAP_JS_STARTING : SNAP_JS_NOT_SAMPLED;
		if (js_state == MW_JS_ON && !wait_ns)
			snprintf(why, whylen, "the snapshot at exit does not wait for the JavaScript thread");
		else if (*snap_state != SNAP_JS_NONE)
			snprintf(why, whylen, "%s", js_why[0] ? js_why : "V8's profiler is not running");
		pthread_mutex_unlock(&js_lock);
		return NULL;
	}
	gen = ++req_gen;
	for (i = 0; i < JS_MAX_ISOLATES; i++) {
		struct js_slot *s = &js_slots[i];
		js_result_free(s->result);
		s->result = NULL;
		s->read_gen = 0;
		if (s->state == SLOT_HOOKED && s->running) {
			s->read_gen = gen;
			s->post_read = true;
			posted = true;
			main_asked |= is_main(s);
		}
	}
	pthread_cond_broadcast(&helper_cond);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)(wait_ns / 1000000000ull);
	dl.tv_nsec += (long)(wait_ns % 1000000000ull);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	while (req_gen == gen) {
		size_t pending = 0;
		for (i = 0; i < JS_MAX_ISOLATES; i++)
			pending += js_slots[i].state == SLOT_HOOKED && js_slots[i].read_gen == gen &&
				   js_slots[i].done_gen != gen;
		if (!pending || pthread_cond_timedwait(&js_cond, &js_lock, &dl) == ETIMEDOUT)
			break;
	}
	/* the main thread's first, so that its stacks come first */
	for (i = 0; i < JS_MAX_ISOLATES; i++) {
		struct js_slot *s = &js_slots[i];
		if (s->read_gen != gen || !is_main(s))
			continue;
		if (s->done_gen == gen && s->result) {
			r = s->result;
			s->result = NULL;
			main_read = true;
			js_why[0] = 0;
		} else if (s->done_gen != gen && s->state == SLOT_HOOKED) {
			snprintf(js_why, sizeof js_why,
				 "the JavaScript thread did not reach a safe point within %llu ms",
				 (unsigned long long)(wait_ns / 1000000));
		}
	}
	for (i = 0; i < JS_MAX_ISOLATES; i++) {
		struct js_slot *s = &js_slots[i];
		if (s->read_gen != gen || is_main(s))
			continue;
		if (s->done_gen == gen && s->result) {
			if (!r && !(r = calloc(1, sizeof *r))) {
				late++;
				continue;
			}
			js_result_take(r, s->result, true);
			s->result = NULL;
			wread++;
		} else if (s->state == SLOT_HOOKED && s->done_gen != gen) {
			late++;
		}
	}
	for (i = 0; i < JS_MAX_ISOLATES; i++)
		js_slots[i].read_gen = 0;
	req_gen++;    /* a late interrupt does nothing */
	if (main_read)
		*snap_state = SNAP_JS_SAMPLED;
	else if (main_asked || js_state == MW_JS_ON)
		*snap_state = SNAP_JS_NOT_SAMPLED;
	else
		*snap_state = js_state == MW_JS_WAITING ? SNAP_JS_STARTING : SNAP_JS_NOT_SAMPLED;
	if (!main_read)
		snprintf(why, whylen, "%s%s", js_why[0] ? js_why : "V8's profile was not read",
			 wread ? " (the main thread's; its worker threads' are in it)" : "");
	if (late) {
		size_t n = strlen(why);
		snprintf(why + n, whylen - n, "%s%zu worker thread%s did not reach a safe point within %llu ms",
			 n ? "; " : "", late, late == 1 ? "" : "s", (unsigned long long)(wait_ns / 1000000));
	}
	pthread_mutex_unlock(&js_lock);
	if (r)
		js_names_uniq(r);
	return r;
}

static int js_snapshot(struct snapshot *s, uint64_t wait_ns)
{
	struct js_result *r;
	char why[sizeof js_why + 96];

	mw_tls.guard++;
	r = take_result(wait_ns, &s->js, why, sizeof why);
	mw_tls.guard--;
	/* the words say what they can: without memory, the state alone */
	if (s->js != SNAP_JS_NONE) {
		s->js_version = strdup(js_version[0] ? js_version : "?");
		if (why[0])
			s->js_why = strdup(why);
	}
	if (!r)
		return 0;
	return js_result_add(s, r, depth);
}

/* fork: the child has no JavaScript thread of ours (node does not fork a
 * running isolate); its capture is native-only. */
static void js_atfork_child(void)
{
	pthread_mutex_init(&js_lock, NULL);
	pthread_cond_init(&js_cond, NULL);
	js_want = false;
	helper_running = false;
	posted = false;
	pthread_cond_init(&helper_cond, NULL);
	/* (the parent's results are not freed: the child never reads them) */
	memset(js_slots, 0, sizeof js_slots);
	js_nnoiso = 0;
	if (js_state != MW_JS_NONE && js_state != MW_JS_UNSUPPORTED)
		js_state = MW_JS_GONE;
	js_set_why("a forked child of node");
}

/* The status line's words: js=, js-version=, js-workers= and js-why=. */
static void js_status(char *fields, size_t flen, char *why, size_t wlen)
{
	const char *v, *w;
	int st = js_state_of(&v, &w);
	snprintf(fields, flen, "js=%s js-version=%s js-workers=%u", js_state_name(st), v, js_workers());
	snprintf(why, wlen, "js-why=%s", w);
}

const struct mw_runtime mw_js_runtime = {
	.name = "js",
	.init = js_init,
	.atfork_child = js_atfork_child,
	.capture_start = js_capture_start,
	.capture_stop = js_capture_stop,
	.snapshot = js_snapshot,
	.status = js_status,
};
