/* js.h: what the files of the agent's node runtime share (js.c,
 * js-find.c, js-profile.c, v8api.c): the runtime (runtime.h), its state and the results
 * of a profile read. Private to those files. */
#ifndef MEMWATCH_AGENT_JS_H
#define MEMWATCH_AGENT_JS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "agent.h"

/* js.c: node's JavaScript heap: V8's sampling heap profiler driven from
 * inside the process (see js.c); uses heap.c. */
extern const struct mw_runtime mw_js_runtime MW_HIDDEN;
enum mw_js_state {
	MW_JS_NONE,          /* not node: no V8 API exported */
	MW_JS_UNSUPPORTED,   /* a V8 the agent does not read: native-only */
	MW_JS_OFF,           /* supported, profiler not running */
	MW_JS_WAITING,       /* start asked, the JavaScript thread not at a safe point yet */
	MW_JS_ON,            /* V8's sampling heap profiler running */
	MW_JS_GONE,          /* the isolate was torn down: native-only */
};

/* One read of the profile: its stacks (frames are the hashes of the functions
 * named in names), in memory of our own. */
struct js_name { uint64_t hash; char *function, *file; uint32_t line; };
struct js_stack { uint32_t nframes; uint64_t *frames; uint64_t bytes, blocks, samples; };
struct js_result {
	size_t nstacks, nnames;
	struct js_stack *stacks;
	struct js_name *names;
};
/* js-profile.c: free r and what it holds (NULL: nothing). */
void js_result_free(struct js_result *r) MW_HIDDEN;
/* Keep one name per hash. */
void js_names_uniq(struct js_result *r) MW_HIDDEN;
/* Read iso's profile (on its thread, profiler running) into a result of our
 * own, stacks at most depth frames deep: one stack per node that holds live
 * samples, its frames the path from that node up to the root. NULL when out
 * of memory. */
struct js_result *js_read_profile(void *iso, int depth) MW_HIDDEN;
/* Move the stacks and names of from (freed) into into; a worker's stacks get
 * an outermost frame that says so. False when out of memory (from is freed
 * all the same, into keeps what it had). */
bool js_result_take(struct js_result *into, struct js_result *from, bool worker) MW_HIDDEN;
struct snapshot;
/* Add r (freed) to s: stacks of kind js whose frames are in a module "[js]"
 * named in s's symbol section. 0, or -1 (ENOMEM). */
int js_result_add(struct snapshot *s, struct js_result *r, int depth) MW_HIDDEN;

#define JS_SIGNAL_MAGIC 0x6d776a73        /* "mwjs" in si_value */
#define JS_HOLD_NS (2 * 1000000ull)        /* the signal handler holds the thread at most this */
#define JS_ANSWER_NS (200 * 1000000ull)    /* the signal is answered within this, or never */
#define JS_POLL_NS (100 * 1000000ull)      /* the helper looks for the isolate this often, */
#define JS_MAX_POLLS 600                   /*   this many times at most in a capture */
#define JS_RETRY_NS (250 * 1000000ull)     /* a main thread's start asked again after this */
#define JS_SCAN_NS (1000 * 1000000ull)     /* then for workers' isolates this often */
#define JS_WORKER_ASKS 7                   /* a worker's start asked at most this many times, */
					   /*   JS_SCAN_NS, then twice as long, ... apart */


/* The isolates found: the main thread's and worker threads' (each runs its
 * own on its own thread). A slot's index is the data of the callbacks V8 and
 * node run for it, and the argument of node's cleanup hook, whose (function,
 * argument) pair node requires to be unique in an environment: a hooked slot
 * is never given to another isolate while its environment lives. */
#define JS_MAX_ISOLATES 32
enum slot_state {
	SLOT_FREE,
	SLOT_PENDING,   /* its start asked of V8, not run yet: never asked anything else,
			 * since nothing would say that the isolate is gone (but its
			 * start again, through the signal, see reask) */
	SLOT_HOOKED,    /* the cleanup hook registered: alive until the hook runs */
	SLOT_GONE,      /* torn down (or not in a node environment): never touched
			 * again; freed once its thread is gone */
};
struct js_slot {
	int state;
	void *iso;
	void *env;                   /* its node::Environment (hooked) */
	pid_t tid;                   /* the thread that runs it */
	bool running;                /* V8's profiler started on it */
	bool post_start, post_stop;  /* requests for the helper to make */
	bool post_read;
	uint64_t read_gen;           /* the generation of the read asked (0: none) */
	uint64_t asked_ns;           /* pending: when its start was asked */
	unsigned asks;               /* pending: how many times it was */
	bool reask;                  /* pending (a worker's): its thread is to be asked again */
	uint64_t done_gen;           /* the last one answered */
	struct js_result *result;    /* its answer (NULL: out of memory) */
};
/* js.c: the state of the isolates, under js_lock. */
extern struct js_slot js_slots[JS_MAX_ISOLATES] MW_HIDDEN;
extern pthread_mutex_t js_lock MW_HIDDEN;
extern int js_state MW_HIDDEN;          /* enum mw_js_state: the main thread's isolate */
extern bool js_want MW_HIDDEN;          /* capture is on */
/* Why the main thread's JavaScript was not read, for status (js_lock held). */
void js_set_why(const char *s) MW_HIDDEN;
/* V8's interrupt that starts the profiler on iso (data: its slot's index). */
void js_on_start(void *iso, void *data) MW_HIDDEN;

static inline pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static inline bool is_main(const struct js_slot *s)
{
	return s->tid == getpid();
}

/* js-find.c: look for the isolates not known yet (see there); false when
 * they never can be (no signal). The helper thread's. */
bool js_scan(void) MW_HIDDEN;
bool js_tid_alive(pid_t tid) MW_HIDDEN;   /* is thread tid of this process alive */
extern size_t js_nnoiso MW_HIDDEN;      /* threads asked that ran no isolate */
extern bool js_noiso_reset MW_HIDDEN;   /* a capture starts: every thread may be asked again */

#endif
