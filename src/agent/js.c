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
 * missed, its heap ending with it). The first interrupt registers an
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
 * for any signal. */
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

#define JS_SIGNAL_MAGIC 0x6d776a73        /* "mwjs" in si_value */
#define JS_HOLD_NS (2 * 1000000ull)        /* the signal handler holds the thread at most this */
#define JS_ANSWER_NS (200 * 1000000ull)    /* the signal is answered within this, or never */
#define JS_POLL_NS (100 * 1000000ull)      /* the helper looks for the isolate this often, */
#define JS_MAX_POLLS 600                   /*   this many times at most in a capture */
#define JS_RETRY_NS (250 * 1000000ull)     /* a main thread's start asked again after this */
#define JS_SCAN_NS (1000 * 1000000ull)     /* then for workers' isolates this often */

/* One read of the profile: its stacks (frames are the hashes of the functions
 * named in names), in memory of our own. */
struct js_name { uint64_t hash; char *function, *file; uint32_t line; };
struct js_stack { uint32_t nframes; uint64_t *frames; uint64_t bytes, blocks, samples; };
struct js_result {
	size_t nstacks, nnames;
	struct js_stack *stacks;
	struct js_name *names;
};

static pthread_mutex_t js_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t js_cond = PTHREAD_COND_INITIALIZER;
static int js_state = MW_JS_NONE;      /* enum mw_js_state: the main thread's isolate */
static bool probed;
static char js_version[48];
static char js_why[160];                /* the last reason the main thread's JS was not read */
static bool want;                      /* capture is on */
static uint64_t req_gen;               /* the generation of the last read asked for */
static uint64_t interval;
static int depth;

/* The isolates found: the main thread's and worker threads' (each runs its
 * own on its own thread). A slot's index is the data of the callbacks V8 and
 * node run for it, and the argument of node's cleanup hook, whose (function,
 * argument) pair node requires to be unique in an environment: a hooked slot
 * is never given to another isolate while its environment lives. */
#define JS_MAX_ISOLATES 32
enum slot_state {
	SLOT_FREE,
	SLOT_PENDING,   /* its start asked of V8, not run yet: never asked anything else,
			 * since nothing would say that the isolate is gone */
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
	uint64_t done_gen;           /* the last one answered */
	struct js_result *result;    /* its answer (NULL: out of memory) */
};
static struct js_slot slots[JS_MAX_ISOLATES];

/* The signal handshake with one thread. */
static int js_signal;
static void *volatile found_iso;
static volatile pid_t found_tid;
static volatile int handshake;  /* 1 sent, 4 being answered, 2 answered (found_iso,
				 * found_tid), 3 released */

static pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static bool is_main(const struct js_slot *s)
{
	return s->tid == getpid();
}

static void set_why(const char *s)
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


static void result_free(struct js_result *r);

/* ------------------------------------------------------------------------- */
/* On the JavaScript threads. */

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

/* The slot a callback names (data), if it is still the isolate iso of the
 * calling thread and may be asked things; with js_lock held. */
static struct js_slot *slot_of(void *iso, void *data)
{
	uintptr_t i = (uintptr_t)data;
	struct js_slot *s;
	if (i >= JS_MAX_ISOLATES)
		return NULL;
	s = &slots[i];
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
	s = i < JS_MAX_ISOLATES ? &slots[i] : NULL;
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
		result_free(s->result);
		s->result = NULL;
		if (is_main(s)) {
			js_state = MW_JS_GONE;
			set_why("the isolate was torn down");
		}
		pthread_cond_broadcast(&js_cond);
	}
	pthread_mutex_unlock(&js_lock);
	mw_tls.guard--;
}

static void on_start(void *iso, void *data)
{
	unsigned char hs[V8_HS_ROOM] __attribute__((aligned(16)));
	struct js_slot *s;
	uintptr_t i = (uintptr_t)data;
	mw_tls.guard++;
	pthread_mutex_lock(&js_lock);
	/* The thread that answered for the isolate may have been one running
	 * a task for it (a V8 platform thread, whose current isolate is then
	 * that one); V8 runs the interrupt on the isolate's own thread. */
	if (i < JS_MAX_ISOLATES && iso && slots[i].state == SLOT_PENDING && slots[i].iso == iso)
		slots[i].tid = my_tid();
	s = slot_of(iso, data);
	if (!s || !want || s->running)
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
				js_state = MW_JS_OFF;
				set_why("the JavaScript thread ran outside a node environment");
			}
			goto out;
		}
		s->env = env;
		s->state = SLOT_HOOKED;
	}
	s->running = mw_v8.start(mw_v8.heap_profiler(iso), interval, depth, 0);
	if (is_main(s)) {
		js_state = s->running ? MW_JS_ON : MW_JS_OFF;
		set_why(s->running ? "" : "V8 refused to start its sampling heap profiler");
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
	if (s && s->running && !want) {
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
	on_start(mw_v8.try_get_current(), data);
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
		mw_v8.node_interrupt(s->env, cb, (void *)(uintptr_t)(s - slots));
}

static void result_free(struct js_result *r)
{
	size_t i;
	if (!r)
		return;
	for (i = 0; i < r->nstacks; i++)
		free(r->stacks[i].frames);
	for (i = 0; i < r->nnames; i++) {
		free(r->names[i].function);
		free(r->names[i].file);
	}
	free(r->stacks);
	free(r->names);
	free(r);
}

/* Room for element n of the malloc'd array *v. */
static bool grow(void **v, size_t n, size_t *cap, size_t elsize)
{
	void *x;
	if (n < *cap)
		return true;
	x = realloc(*v, (*cap ? *cap * 2 : 64) * elsize);
	if (!x)
		return false;
	*v = x;
	*cap = *cap ? *cap * 2 : 64;
	return true;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b)
{
	uint64_t x = ((const struct js_name *)a)->hash, y = ((const struct js_name *)b)->hash;
	return x < y ? -1 : x > y;
}

/* One name per hash. */
static void names_uniq(struct js_result *r)
{
	size_t u = 0, i;
	if (!r->nnames)
		return;
	qsort(r->names, r->nnames, sizeof *r->names, cmp_name);
	for (i = 0; i < r->nnames; i++) {
		if (u && r->names[u - 1].hash == r->names[i].hash) {
			free(r->names[i].function);
			free(r->names[i].file);
			continue;
		}
		r->names[u++] = r->names[i];
	}
	r->nnames = u;
}

/* Read the profile into a result of our own: one stack per node that holds
 * live samples, its frames the path from that node up to the root. */
static struct js_result *read_profile(void *iso)
{
	const struct v8_layout *lay = mw_v8_lay;
	unsigned char hs[V8_HS_ROOM] __attribute__((aligned(16)));
	struct js_result *r = calloc(1, sizeof *r);
	void *prof, **vt, *root;
	const struct std_vector *sv;
	uint32_t *ids = NULL;
	size_t nids = 0, ncap = 0, scap = 0, i;
	struct { const void *n; uint32_t depth; uint32_t child; } *walk = NULL;
	uint64_t *path = NULL;
	size_t wcap = 0, top = 0;
	bool failed = false;

	if (!r)
		return NULL;
	if (!mw_v8_scope_open(hs, iso)) {
		free(r);
		return NULL;
	}
	prof = mw_v8.profile(mw_v8.heap_profiler(iso));
	if (!prof) {
		mw_v8_scope_close(hs);
		return r;
	}
	vt = *(void ***)prof;
	root = ((v8_root_fn *)vt[V8_VT_ROOT])(prof);
	sv = ((v8_samples_fn *)vt[V8_VT_SAMPLES])(prof);
	/* the node ids of the samples, sorted: live_samples by node */
	nids = (size_t)(sv->end - sv->begin) / lay->sample_size;
	if (nids && !(ids = malloc(nids * sizeof *ids)))
		failed = true;
	for (i = 0; !failed && i < nids; i++)
		ids[i] = V8_AT(sv->begin + i * lay->sample_size, lay->sample_node_id, uint32_t);
	if (ids)
		qsort(ids, nids, sizeof *ids, cmp_u32);
	path = calloc((size_t)depth + 2, sizeof *path);
	wcap = (size_t)depth + 2;
	walk = calloc(wcap, sizeof *walk);
	if (!path || !walk)
		failed = true;
	if (!failed && root) {
		walk[0].n = root;
		walk[0].depth = 0;
		walk[0].child = 0;
		top = 1;
	}
	while (!failed && top) {
		const void *n = walk[top - 1].n;
		const struct std_vector *ch = &V8_AT(n, lay->node_children, struct std_vector);
		const struct std_vector *al = &V8_AT(n, lay->node_allocations, struct std_vector);
		int line = V8_AT(n, lay->node_line, int), column = V8_AT(n, lay->node_column, int);
		uint32_t d = walk[top - 1].depth;
		size_t nch = (size_t)(ch->end - ch->begin) / sizeof(void *);
		if (walk[top - 1].child == 0 && d > 0) {
			/* first visit: this node's frame, then its own samples */
			char *fn = mw_v8_string(iso, V8_AT(n, lay->node_name, void *), "(anonymous)");
			char *file = mw_v8_string(iso, V8_AT(n, lay->node_script_name, void *), "");
			uint64_t h = 0xcbf29ce484222325ull;
			size_t na = (size_t)(al->end - al->begin) / lay->alloc_size;
			if (!fn || !file) {
				free(fn);
				free(file);
				failed = true;
				break;
			}
			h = hash_str(hash_str(h, fn), file);
			h = mw_splitmix64(h ^ ((uint64_t)(uint32_t)line << 32 | (uint32_t)column));
			h &= 0x7fffffffffffffffull;
			path[d - 1] = h;
			if (!grow((void **)&r->names, r->nnames, &ncap, sizeof *r->names)) {
				free(fn);
				free(file);
				failed = true;
				break;
			}
			r->names[r->nnames].hash = h;
			r->names[r->nnames].function = fn;
			r->names[r->nnames].file = file;
			r->names[r->nnames].line = line > 0 ? (uint32_t)line : 0;
			r->nnames++;
			if (na) {
				struct js_stack *st;
				size_t k;
				if (!grow((void **)&r->stacks, r->nstacks, &scap, sizeof *r->stacks)) {
					failed = true;
					break;
				}
				st = &r->stacks[r->nstacks];
				memset(st, 0, sizeof *st);
				st->frames = malloc(d * sizeof *st->frames);
				if (!st->frames) {
					failed = true;
					break;
				}
				for (k = 0; k < d; k++)
					st->frames[k] = path[d - 1 - k];
				st->nframes = d;
				for (k = 0; k < na; k++) {
					const char *a = al->begin + k * lay->alloc_size;
					unsigned count = V8_AT(a, lay->alloc_count, unsigned);
					st->bytes += (uint64_t)V8_AT(a, lay->alloc_bytes, size_t) * count;
					st->blocks += count;
				}
				if (ids) {
					uint32_t key = V8_AT(n, lay->node_id, uint32_t);
					uint32_t *p = bsearch(&key, ids, nids, sizeof *ids, cmp_u32);
					if (p) {
						while (p > ids && p[-1] == key)
							p--;
						while (p < ids + nids && *p == key) {
							st->samples++;
							p++;
						}
					}
				}
				r->nstacks++;
			}
		}
		if (walk[top - 1].child < nch && d < (uint32_t)depth && top < wcap) {
			const void *c = ((void *const *)ch->begin)[walk[top - 1].child++];
			walk[top].n = c;
			walk[top].depth = d + 1;
			walk[top].child = 0;
			top++;
			continue;
		}
		top--;
	}
	((v8_delete_fn *)vt[V8_VT_DELETE])(prof);
	mw_v8_scope_close(hs);
	free(ids);
	free(walk);
	free(path);
	if (failed) {
		result_free(r);
		return NULL;
	}
	names_uniq(r);
	return r;
}

/* One frame's name in a result: its hash, taking the strings. */
static bool name_add(struct js_result *r, size_t *cap, uint64_t h, char *fn, char *file, uint32_t line)
{
	if (!grow((void **)&r->names, r->nnames, cap, sizeof *r->names))
		return false;
	r->names[r->nnames].hash = h;
	r->names[r->nnames].function = fn;
	r->names[r->nnames].file = file;
	r->names[r->nnames].line = line;
	r->nnames++;
	return true;
}


/* The outermost frame of a worker thread's stacks. */
#define WORKER_FRAME "(worker thread)"
static uint64_t worker_hash(void)
{
	return mw_splitmix64(hash_str(0xcbf29ce484222325ull, WORKER_FRAME)) & 0x7fffffffffffffffull;
}

/* Move the stacks and names of from (freed) into into; a worker's stacks get
 * an outermost frame that says so. False when out of memory (from is freed
 * all the same, into keeps what it had). */
static bool result_take(struct js_result *into, struct js_result *from, bool worker)
{
	size_t i, ncap = into->nnames, scap = into->nstacks;
	bool ok = true;
	if (!from)
		return true;
	if (worker) {
		char *fn = strdup(WORKER_FRAME), *file = strdup("");
		if (!fn || !file || !name_add(into, &ncap, worker_hash(), fn, file, 0)) {
			free(fn);
			free(file);
			ok = false;
		}
	}
	for (i = 0; ok && i < from->nnames; i++) {
		if (!name_add(into, &ncap, from->names[i].hash, from->names[i].function, from->names[i].file,
			      from->names[i].line)) {
			ok = false;
			break;
		}
		from->names[i].function = from->names[i].file = NULL;
	}
	for (i = 0; ok && i < from->nstacks; i++) {
		struct js_stack *st = &from->stacks[i];
		if (worker) {
			uint64_t *f = realloc(st->frames, (st->nframes + 1) * sizeof *f);
			if (!f) {
				ok = false;
				break;
			}
			f[st->nframes++] = worker_hash();
			st->frames = f;
		}
		if (!grow((void **)&into->stacks, into->nstacks, &scap, sizeof *into->stacks)) {
			ok = false;
			break;
		}
		into->stacks[into->nstacks++] = *st;
		st->frames = NULL;
	}
	names_uniq(into);
	result_free(from);
	return ok;
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
	r = read_profile(iso);
	pthread_mutex_lock(&js_lock);
	/* (the hook cannot have run meanwhile: it runs on this thread) */
	if (s->state == SLOT_HOOKED && gen == req_gen && s->done_gen != gen) {
		result_free(s->result);
		s->result = r;
		s->done_gen = gen;
		if (!r && is_main(s))
			set_why("out of memory reading V8's profile");
		pthread_cond_broadcast(&js_cond);
		r = NULL;
	}
	pthread_mutex_unlock(&js_lock);
	result_free(r);
	mw_tls.guard--;
}

/* ------------------------------------------------------------------------- */
/* On the helper thread and the control thread. */

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

/* Is tid one of our slots' threads? With js_lock held. */
static bool tid_known(pid_t tid)
{
	size_t i;
	for (i = 0; i < JS_MAX_ISOLATES; i++)
		if (slots[i].state != SLOT_FREE && slots[i].tid == tid)
			return true;
	return false;
}

static bool tid_alive(pid_t tid)
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
	if (!want) {
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
			if (slots[i].state != SLOT_FREE && (slots[i].iso == iso || slots[i].tid == who))
				break;
		if (i == JS_MAX_ISOLATES)
			for (i = 0; i < JS_MAX_ISOLATES && !s; i++)
				if (slots[i].state == SLOT_FREE)
					s = &slots[i];
		if (s) {
			memset(s, 0, sizeof *s);
			s->state = SLOT_PENDING;
			s->iso = iso;
			s->tid = who;
			s->asked_ns = mw_now_ns();
			mw_v8.request_interrupt(iso, on_start, (void *)(uintptr_t)(s - slots));
			if (is_main(s)) {
				js_state = MW_JS_WAITING;
				set_why("the JavaScript thread has not reached a safe point yet");
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
static size_t nnoiso;           /* the helper's own */
static bool noiso_reset;        /* a capture starts: every thread may be asked again */

/* Look for the isolates not known yet: the main thread's first, then any
 * other thread's that does not block the signal (our own threads block it).
 * False when they never can be (no signal). */
static bool scan(void)
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
	/* the slots of threads gone are free again */
	pthread_mutex_lock(&js_lock);
	if (noiso_reset)
		nnoiso = 0;
	noiso_reset = false;
	for (i = 0; i < JS_MAX_ISOLATES; i++)
		if ((slots[i].state == SLOT_GONE || slots[i].state == SLOT_PENDING) &&
		    !is_main(&slots[i]) && !tid_alive(slots[i].tid))
			slots[i].state = SLOT_FREE;
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
	for (i = k = 0; i < nnoiso; i++) {
		size_t j;
		for (j = 0; j < ntids && tids[j] != noiso[i].tid; j++)
			;
		if (j < ntids)
			noiso[k++] = noiso[i];
	}
	nnoiso = k;
	/* the threads to ask now: those not known, and not given up on or
	 * asked too lately; none (as almost always once all are known): the
	 * signals are not touched */
	pthread_mutex_lock(&js_lock);
	for (i = k = 0; i < ntids; i++) {
		size_t j;
		if (tid_known(tids[i]))
			continue;
		for (j = 0; j < nnoiso && noiso[j].tid != tids[i]; j++)
			;
		if (j < nnoiso && (noiso[j].tries >= JS_NOISO_TRIES || now < noiso[j].next_ns))
			continue;
		tids[k++] = tids[i];
	}
	pthread_mutex_unlock(&js_lock);
	ntids = k;
	if (!ntids)
		return true;
	if (!(js_signal = pick_signal(&old, &restore, &later))) {
		pthread_mutex_lock(&js_lock);
		set_why(later ? "the main thread blocks the signals that could find it"
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
		known = tid_known(t) || !want;
		pthread_mutex_unlock(&js_lock);
		if (known)
			continue;
		for (j = 0; j < nnoiso && noiso[j].tid != t; j++)
			;
		/* a thread that blocks the signal (ours, node's watchdog, one
		 * starting with its creator's mask) counts as one that runs no
		 * isolate: asked again a few times */
		r = thread_blocks(t, js_signal) ? 0 : ask_thread(t);
		if (r < 0 && !tid_alive(t))
			continue;       /* it ended, and its signal with it */
		if (r < 0) {
			if (t == getpid()) {
				pthread_mutex_lock(&js_lock);
				set_why("the main thread did not answer");
				pthread_mutex_unlock(&js_lock);
			}
			answered = false;
			break;
		}
		if (r == 0 && t != getpid()) {
			if (j == nnoiso && nnoiso < JS_MAX_NOISO) {
				noiso[nnoiso].tid = t;
				noiso[nnoiso].tries = 0;
				nnoiso++;
			}
			if (j < nnoiso) {
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

/* The helper thread, started with the agent from a thread that has the
 * program's descriptor table (the control thread has one of its own, where
 * node::RequestInterrupt's write to the event loop's eventfd would fail and
 * libuv abort): while capture is on it looks for isolates (every JS_POLL_NS
 * until the main thread's is found, then every JS_SCAN_NS for workers'); it
 * makes the requests that the control thread posts in the slots, all under
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
		if (slots[i].state != SLOT_FREE && is_main(&slots[i]))
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
			struct js_slot *s = &slots[i];
			/* a worker's thread ends only after node ran the hook;
			 * one gone without it is never asked anything */
			if (s->state == SLOT_HOOKED && !is_main(s) && !tid_alive(s->tid))
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
		if (want && js_state != MW_JS_GONE && !find_failed) {
			struct timespec dl;
			uint64_t now = mw_now_ns(), wait;
			/* V8 may drop an interrupt asked while its isolate is still
			 * starting (node 20 under memwatch run, now and then): the
			 * main thread's start unanswered for JS_RETRY_NS is
			 * forgotten, and its isolate looked for again, through the
			 * signal that shows it alive (a start that comes late
			 * meanwhile finds its slot pending again, or ignores it) */
			for (i = 0; i < JS_MAX_ISOLATES; i++)
				if (slots[i].state == SLOT_PENDING && is_main(&slots[i]) &&
				    now - slots[i].asked_ns > JS_RETRY_NS) {
					slots[i].state = SLOT_FREE;
					next_scan = now;
				}
			if (now >= next_scan) {
				pthread_mutex_unlock(&js_lock);
				if (!scan()) {
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
					set_why("no V8 isolate on the main thread");
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
			set_why("no thread to find the JavaScript thread");
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
	want = true;
	find_failed = false;
	polls = 0;
	noiso_reset = true;
	interval = mw_rate > 1 ? mw_rate : 1;
	depth = (int)(mw_depth ? mw_depth : MW_DEFAULT_DEPTH);
	for (i = 0; i < JS_MAX_ISOLATES; i++) {
		struct js_slot *s = &slots[i];
		if (s->state == SLOT_HOOKED && !s->running) {
			s->post_start = true;
			posted = true;
		}
	}
	if (!main_known()) {
		js_state = MW_JS_WAITING;
		set_why("the JavaScript thread is not found yet");
	} else if (js_state == MW_JS_OFF) {
		for (i = 0; i < JS_MAX_ISOLATES; i++)
			if (slots[i].state == SLOT_HOOKED && is_main(&slots[i])) {
				js_state = MW_JS_WAITING;
				set_why("the JavaScript thread has not reached a safe point yet");
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
	want = false;
	for (i = 0; i < JS_MAX_ISOLATES; i++) {
		struct js_slot *s = &slots[i];
		if (s->state == SLOT_HOOKED && s->running) {
			s->post_stop = true;
			posted = true;
		}
		s->post_start = s->post_read = false;
		s->read_gen = 0;
		result_free(s->result);
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
		n += slots[i].state == SLOT_HOOKED && slots[i].running && !is_main(&slots[i]);
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
		nrun += slots[i].state == SLOT_HOOKED && slots[i].running;
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
		struct js_slot *s = &slots[i];
		result_free(s->result);
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
			pending += slots[i].state == SLOT_HOOKED && slots[i].read_gen == gen &&
				   slots[i].done_gen != gen;
		if (!pending || pthread_cond_timedwait(&js_cond, &js_lock, &dl) == ETIMEDOUT)
			break;
	}
	/* the main thread's first, so that its stacks come first */
	for (i = 0; i < JS_MAX_ISOLATES; i++) {
		struct js_slot *s = &slots[i];
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
		struct js_slot *s = &slots[i];
		if (s->read_gen != gen || is_main(s))
			continue;
		if (s->done_gen == gen && s->result) {
			if (!r && !(r = calloc(1, sizeof *r))) {
				late++;
				continue;
			}
			result_take(r, s->result, true);
			s->result = NULL;
			wread++;
		} else if (s->state == SLOT_HOOKED && s->done_gen != gen) {
			late++;
		}
	}
	for (i = 0; i < JS_MAX_ISOLATES; i++)
		slots[i].read_gen = 0;
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
		names_uniq(r);
	return r;
}

static int js_snapshot(struct snapshot *s, uint64_t wait_ns)
{
	struct js_result *r;
	struct snap_module *m;
	struct snap_symbol *y;
	struct snap_stack *st;
	uint32_t mod;
	size_t i, k;
	int ret = -1;
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
	if (!r->nstacks) {
		result_free(r);
		return 0;
	}
	m = realloc(s->modules, (s->nmodules + 1) * sizeof *m);
	if (!m)
		goto out;
	s->modules = m;
	mod = (uint32_t)s->nmodules;
	memset(&m[mod], 0, sizeof m[mod]);
	if (!(m[mod].path = strdup("[js]")))
		goto out;
	s->nmodules++;
	y = realloc(s->symbols, (s->nsymbols + r->nnames) * sizeof *y);
	if (!y)
		goto out;
	s->symbols = y;
	for (i = 0; i < r->nnames; i++) {
		struct snap_symbol *d = &s->symbols[s->nsymbols];
		memset(d, 0, sizeof *d);
		if (!(d->frames = calloc(1, sizeof *d->frames)))
			goto out;
		d->module = mod;
		d->offset = r->names[i].hash;
		d->nframes = 1;
		d->frames->function = r->names[i].function;
		d->frames->file = r->names[i].file[0] ? r->names[i].file : NULL;
		if (!r->names[i].file[0])
			free(r->names[i].file);
		d->frames->line = r->names[i].line;
		r->names[i].function = r->names[i].file = NULL;
		s->nsymbols++;
	}
	st = realloc(s->stacks, (s->nstacks + r->nstacks) * sizeof *st);
	if (!st)
		goto out;
	s->stacks = st;
	for (i = 0; i < r->nstacks; i++) {
		struct snap_stack *d = &s->stacks[s->nstacks];
		memset(d, 0, sizeof *d);
		if (!(d->frames = calloc(r->stacks[i].nframes ? r->stacks[i].nframes : 1, sizeof *d->frames)))
			goto out;
		d->flags = SNAP_STACK_MMAP | SNAP_STACK_JS;
		if (r->stacks[i].nframes >= (uint32_t)depth)
			d->flags |= SNAP_STACK_TRUNCATED;
		d->nframes = r->stacks[i].nframes;
		for (k = 0; k < d->nframes; k++) {
			d->frames[k].module = mod;
			d->frames[k].offset = r->stacks[i].frames[k];
		}
		d->live_bytes = d->alloc_bytes = r->stacks[i].bytes;
		d->live_blocks = d->alloc_blocks = r->stacks[i].blocks;
		d->live_samples = r->stacks[i].samples;
		s->nstacks++;
	}
	ret = 0;
out:
	result_free(r);
	return ret;
}

/* fork: the child has no JavaScript thread of ours (node does not fork a
 * running isolate); its capture is native-only. */
static void js_atfork_child(void)
{
	pthread_mutex_init(&js_lock, NULL);
	pthread_cond_init(&js_cond, NULL);
	want = false;
	helper_running = false;
	posted = false;
	pthread_cond_init(&helper_cond, NULL);
	/* (the parent's results are not freed: the child never reads them) */
	memset(slots, 0, sizeof slots);
	nnoiso = 0;
	if (js_state != MW_JS_NONE && js_state != MW_JS_UNSUPPORTED)
		js_state = MW_JS_GONE;
	set_why("a forked child of node");
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
