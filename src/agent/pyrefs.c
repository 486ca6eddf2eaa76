/* pyrefs.c: what keeps sampled Python objects alive (memwatch snap
 * --referrers). For a few sampled live objects of the snapshot's top types
 * and stacks, a chain of references from a root (a module global, a class
 * attribute, a frame, a module) to the object, and what one object of each
 * top type holds (its referents by type and size).
 *
 * The search runs on a thread of its own, which takes the GIL
 * (PyGILState_Ensure) and walks the objects the collector tracks (the
 * generations' lists of PyGC_Head, mirrored per version below), calling each
 * one's tp_traverse with a visit function of ours: backwards, level by level
 * from the targets (the objects that refer to the last level's, one pass over
 * every tracked object per level), until each target has a root, nothing
 * refers to the last level, or a bound is reached (the time limit, counted
 * from the request and so including the wait for the GIL, or the number of
 * objects traversed). Nothing is asked of the interpreter that allocates: the
 * walk reads the objects directly (the GIL is held: none can change or go),
 * dict keys are read with PyDict_Next, and the search's own tables are mmap'd.
 * The thread that asked (the snapshot's) waits at most until the time limit
 * for the GIL: not had by then, the search is given up (the thread that waits
 * for it lets it go as soon as it gets it) and the snapshot says so. Never
 * while the interpreter finalizes, nor while a collection runs. */
#include "config.h"

#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "agent.h"
#include "python.h"
#include "pyrefs.h"
#include "pyversions.h"
#include "snapshot.h"

/* ------------------------------------------------------------------------- */
/* Objects noted while the types are read (mw_python_types): a few per typed
 * entry, whose addresses the search starts from. */

static pthread_mutex_t ex_lock = PTHREAD_MUTEX_INITIALIZER;
static struct example {
	uint32_t typed;
	uintptr_t obj;
} *ex;
static size_t nex;
static const struct snapshot *ex_owner;

void mw_pyrefs_note(const struct snapshot *s, size_t typed, uintptr_t obj)
{
	pthread_mutex_lock(&ex_lock);
	if (typed == SIZE_MAX) {
		ex_owner = s;
		nex = 0;
	} else if (ex_owner == s && nex < EX_MAX) {
		if (!ex) {
			void *m = mmap(NULL, EX_MAX * sizeof *ex, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			ex = m == MAP_FAILED ? NULL : m;
		}
		if (ex) {
			ex[nex].typed = (uint32_t)typed;
			ex[nex].obj = obj;
			nex++;
		}
	}
	pthread_mutex_unlock(&ex_lock);
}


/* ------------------------------------------------------------------------- */
/* The request the snapshot's thread hands to the search thread, and what comes
 * back (pyrefs.h). */

static pthread_mutex_t rq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rq_cond;
static pthread_once_t rq_once = PTHREAD_ONCE_INIT;
struct request rq;
struct refs_py py;

static void rq_init(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&rq_cond, &a);
	pthread_condattr_destroy(&a);
}

uint32_t arena_str(const char *s, size_t n)
{
	uint32_t at;
	if (!rq.arena || rq.arena_used + n + 1 > ARENA_SIZE)
		return 0;
	at = (uint32_t)rq.arena_used;
	memcpy(rq.arena + at, s, n);
	rq.arena[at + n] = 0;
	rq.arena_used += n + 1;
	return at;
}

/* ------------------------------------------------------------------------- */
/* The search thread. */

static void search_exit(void *arg)
{
	(void)arg;
	/* the interpreter ended this thread: it asked for the GIL while the
	 * interpreter finalized */
	pthread_mutex_lock(&rq_lock);
	rq.status = SNAP_REFS_UNAVAILABLE;
	snprintf(rq.note, sizeof rq.note, "the interpreter is finalizing");
	rq.state = rq.abandoned ? RQ_IDLE : RQ_DONE;
	pthread_cond_broadcast(&rq_cond);
	pthread_mutex_unlock(&rq_lock);
}

static void *search_main(void *arg)
{
	int g;
	uint64_t t0;

	(void)arg;
	mw_tls.guard = 1;
	pthread_cleanup_push(search_exit, NULL);
	g = mw_py.gil_ensure();
	t0 = mono_ns();
	pthread_mutex_lock(&rq_lock);
	if (rq.abandoned) {
		rq.state = RQ_IDLE;
		pthread_mutex_unlock(&rq_lock);
		mw_py.gil_release(g);
		goto out;
	}
	rq.state = RQ_SEARCHING;
	pthread_mutex_unlock(&rq_lock);
	if (mw_py.is_finalizing()) {
		rq.status = SNAP_REFS_UNAVAILABLE;
		snprintf(rq.note, sizeof rq.note, "the interpreter is finalizing");
	} else {
		search_run();
	}
	rq.pause_ns = mono_ns() - t0;
	mw_py.gil_release(g);
	pthread_mutex_lock(&rq_lock);
	rq.state = rq.abandoned ? RQ_IDLE : RQ_DONE;
	pthread_cond_broadcast(&rq_cond);
	pthread_mutex_unlock(&rq_lock);
out:
	pthread_cleanup_pop(0);
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* The snapshot's side. */

static void look_up(void)
{
	if (py.looked)
		return;
	mw_loader_enter();
	py.dict_next = (int (*)(void *, intptr_t *, void **, void **))dlsym(RTLD_DEFAULT, "PyDict_Next");
	py.dict_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyDict_Type");
	py.list_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyList_Type");
	py.tuple_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyTuple_Type");
	py.module_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyModule_Type");
	py.frame_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyFrame_Type");
	py.runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
	py.interp_main = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyInterpreterState_Main");
	mw_loader_leave();
	py.looked = true;
}

static bool placeholder(const struct snapshot *s, uint32_t t)
{
	return strcmp(s->types[t], SNAP_TYPE_NOT_OBJECT) == 0 || strcmp(s->types[t], SNAP_TYPE_UNREADABLE) == 0;
}

/* Choose the targets among the objects noted for s: up to PER_TYPE of each of
 * the TOP_TYPES types with the most sampled live bytes, and one of the
 * leading type of each of the TOP_STACKS stacks with the most that have no
 * target of that type yet. */
static size_t choose(const struct snapshot *s, struct target *t)
{
	uint64_t *tbytes = NULL, best;
	uint32_t top[TOP_TYPES], seen[64];
	size_t nt = 0, ntop = 0, nst = 0, nseen = 0, i, k;

	pthread_mutex_lock(&ex_lock);
	if (ex_owner != s || !nex || !s->ntypes)
		goto out;
	tbytes = calloc(s->ntypes, sizeof *tbytes);
	if (!tbytes)
		goto out;
	for (i = 0; i < s->ntyped; i++)
		if (!placeholder(s, s->typed[i].type))
			tbytes[s->typed[i].type] += s->typed[i].live_bytes;
	for (ntop = 0; ntop < TOP_TYPES; ntop++) {
		uint32_t bi = UINT32_MAX;
		for (best = 0, i = 0; i < s->ntypes; i++)
			if (tbytes[i] > best) {
				best = tbytes[i];
				bi = (uint32_t)i;
			}
		if (bi == UINT32_MAX)
			break;
		top[ntop] = bi;
		tbytes[bi] = 0;
	}
	for (k = 0; k < ntop; k++) {
		size_t got = 0;
		for (i = 0; i < nex && got < PER_TYPE && nt < MAX_TARGETS; i++) {
			const struct snap_typed *ty;
			if (ex[i].typed >= s->ntyped || s->typed[ex[i].typed].type != top[k])
				continue;
			ty = &s->typed[ex[i].typed];
			t[nt].obj = ex[i].obj;
			t[nt].tindex = ty->type;
			t[nt].stack = ty->stack;
			t[nt].forward = got == 0;
			nt++;
			got++;
		}
	}
	/* the stacks, in the order of their bytes: an object of each one's
	 * largest typed entry of a real type, unless a target above is of that
	 * stack and type already (then the next stack) */
	for (nst = 0; nst < TOP_STACKS && nt < MAX_TARGETS;) {
		size_t bi = SIZE_MAX;
		bool dup = false;
		for (best = 0, i = 0; i < s->ntyped; i++) {
			bool taken = false;
			for (k = 0; k < nseen; k++)
				taken = taken || seen[k] == s->typed[i].stack;
			if (!taken && !placeholder(s, s->typed[i].type) && s->typed[i].live_bytes > best) {
				best = s->typed[i].live_bytes;
				bi = i;
			}
		}
		if (bi == SIZE_MAX || nseen == sizeof seen / sizeof *seen)
			break;
		seen[nseen++] = s->typed[bi].stack;
		for (size_t j = 0; j < nt; j++)
			dup = dup || (t[j].stack == s->typed[bi].stack && t[j].tindex == s->typed[bi].type);
		if (dup)
			continue;
		for (i = 0; i < nex; i++) {
			if (ex[i].typed != bi)
				continue;
			t[nt].obj = ex[i].obj;
			t[nt].tindex = s->typed[bi].type;
			t[nt].stack = s->typed[bi].stack;
			t[nt].forward = false;
			nt++;
			nst++;
			break;
		}
	}
out:
	pthread_mutex_unlock(&ex_lock);
	free(tbytes);
	return nt;
}

static char *dup_arena(uint32_t at)
{
	return at ? strdup(rq.arena + at) : NULL;
}

/* The results into s (rq_lock held, the search thread done). -1: ENOMEM. */
static int results(struct snapshot *s)
{
	size_t k;

	s->chains = calloc(rq.ntargets ? rq.ntargets : 1, sizeof *s->chains);
	s->forward = calloc(rq.ntargets ? rq.ntargets : 1, sizeof *s->forward);
	if (!s->chains || !s->forward)
		return -1;
	for (k = 0; k < rq.ntargets; k++) {
		const struct out_chain *c = &rq.chains[k];
		struct snap_refchain *d = &s->chains[s->nchains];
		const struct out_forward *f = &rq.forward[k];

		if (c->nlinks) {
			d->links = calloc(c->nlinks, sizeof *d->links);
			if (!d->links)
				return -1;
			d->type = rq.targets[k].tindex;
			d->stack = rq.targets[k].stack;
			d->end = c->end;
			d->nlinks = c->nlinks;
			s->nchains++;
			for (uint32_t j = 0; j < c->nlinks; j++) {
				d->links[j].edge = dup_arena(c->links[j].edge);
				d->links[j].type = dup_arena(c->links[j].type);
			}
		}
		if (f->done) {
			struct snap_forward *g = &s->forward[s->nforward];
			uint32_t order[MAX_REFERENTS], n = 0;
			g->type = rq.targets[k].tindex;
			g->bytes = f->bytes;
			g->referents = calloc(f->n ? f->n : 1, sizeof *g->referents);
			if (!g->referents)
				return -1;
			s->nforward++;
			/* largest first */
			for (uint32_t j = 0; j < f->n; j++) {
				uint32_t at = n++;
				while (at && f->r[order[at - 1]].bytes < f->r[j].bytes) {
					order[at] = order[at - 1];
					at--;
				}
				order[at] = j;
			}
			for (uint32_t j = 0; j < n; j++) {
				g->referents[j].type = dup_arena(f->r[order[j]].name);
				g->referents[j].count = f->r[order[j]].count;
				g->referents[j].bytes = f->r[order[j]].bytes;
			}
			g->nreferents = n;
		}
	}
	return 0;
}

static void set_note(struct snapshot *s, uint32_t status, const char *note)
{
	s->refsearch.status = status;
	free(s->refsearch.note);
	s->refsearch.note = note && *note ? strdup(note) : NULL;
}

int mw_python_referrers(struct snapshot *s, uint64_t limit_ns, uint64_t max_objects)
{
	struct target t[MAX_TARGETS];
	uint64_t start = mono_ns(), deadline = start + limit_ns;
	struct timespec ts;
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	size_t n;
	int r = 0;

	mw_tls.guard++;
	s->has_refs = true;
	s->refsearch.limit_ns = limit_ns;
	s->refsearch.max_objects = max_objects;
	pthread_once(&rq_once, rq_init);
	if (mw_python_state(NULL) == MW_PY_NONE) {
		set_note(s, SNAP_REFS_UNAVAILABLE, "no CPython in this process");
		goto out;
	}
	if (mw_python_state(NULL) != MW_PY_ON || !mw_python_frames || !mw_py.gil_ensure) {
		set_note(s, SNAP_REFS_UNAVAILABLE, "Python objects are not sampled in this process now");
		goto out;
	}
	if (!mw_py.is_initialized() || mw_py.is_finalizing()) {
		set_note(s, SNAP_REFS_UNAVAILABLE, "the interpreter is finalizing");
		goto out;
	}
	look_up();
	if (!py.module_type || !py.dict_next) {
		set_note(s, SNAP_REFS_UNAVAILABLE, "the interpreter does not export what the search needs");
		goto out;
	}
	memset(t, 0, sizeof t);
	n = choose(s, t);
	if (!n) {
		set_note(s, SNAP_REFS_DONE, "no sampled live object to search from");
		goto out;
	}
	for (size_t k = 0; k < n; k++)
		if (!mw_py_safe_word((void *)(t[k].obj + OB_TYPE), &t[k].type))
			t[k].type = 0;
	pthread_mutex_lock(&rq_lock);
	if (rq.state != RQ_IDLE) {
		pthread_mutex_unlock(&rq_lock);
		set_note(s, SNAP_REFS_NO_GIL, "an earlier search still waits for the GIL");
		goto out;
	}
	if (!rq.arena) {
		rq.arena = map(ARENA_SIZE);
		if (!rq.arena) {
			pthread_mutex_unlock(&rq_lock);
			set_note(s, SNAP_REFS_UNAVAILABLE, "out of memory");
			goto out;
		}
	}
	{
		char *arena = rq.arena;
		memset(&rq, 0, sizeof rq);
		rq.arena = arena;
		rq.arena_used = 1;    /* offset 0 is "none" */
	}
	rq.state = RQ_WAITING;
	rq.deadline_ns = deadline;
	rq.max_objects = max_objects;
	rq.ntargets = n;
	memcpy(rq.targets, t, sizeof t);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(&th, &attr, search_main, NULL) != 0) {
		rq.state = RQ_IDLE;
		pthread_attr_destroy(&attr);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_mutex_unlock(&rq_lock);
		set_note(s, SNAP_REFS_UNAVAILABLE, "cannot start a thread");
		goto out;
	}
#ifdef __GLIBC__
	pthread_setname_np(th, "memwatch-refs");
#endif
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* the GIL, until the deadline */
	ts.tv_sec = (time_t)(deadline / 1000000000u);
	ts.tv_nsec = (long)(deadline % 1000000000u);
	while (rq.state == RQ_WAITING && mono_ns() < deadline)
		pthread_cond_timedwait(&rq_cond, &rq_lock, &ts);
	if (rq.state == RQ_WAITING) {
		rq.abandoned = true;
		pthread_mutex_unlock(&rq_lock);
		set_note(s, SNAP_REFS_NO_GIL, "the GIL was not had within the time limit");
		s->refsearch.pause_ns = 0;
		goto out;
	}
	/* the search ends by itself at the deadline; a last margin for the
	 * naming of what it found */
	ts.tv_sec += 2;
	while (rq.state == RQ_SEARCHING && mono_ns() < deadline + 2000000000ull)
		pthread_cond_timedwait(&rq_cond, &rq_lock, &ts);
	if (rq.state != RQ_DONE) {
		rq.abandoned = true;
		pthread_mutex_unlock(&rq_lock);
		set_note(s, SNAP_REFS_UNAVAILABLE, "the search did not end in time");
		goto out;
	}
	s->refsearch.pause_ns = rq.pause_ns;
	s->refsearch.visited = rq.visited;
	s->refsearch.tracked = rq.tracked;
	s->refsearch.passes = rq.passes;
	set_note(s, rq.status, rq.note);
	r = results(s);
	rq.state = RQ_IDLE;
	pthread_mutex_unlock(&rq_lock);
out:
	mw_tls.guard--;
	return r;
}

void mw_pyrefs_atfork_child(void)
{
	/* a search thread is not in the child */
	pthread_mutex_init(&rq_lock, NULL);
	pthread_mutex_init(&ex_lock, NULL);
	rq.state = RQ_IDLE;
}

