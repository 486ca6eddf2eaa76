/* python.c: CPython inside the target. When the process is a CPython 3.8 to
 * 3.13 interpreter (found through the dynamic linker, never linked against, and
 * its version read from what it publishes itself), its
 * object allocator (the PYMEM_DOMAIN_MEM and OBJ domains) is wrapped so that
 * pymalloc's small objects are sampled one by one; a helper thread swaps the
 * wrappers in and out with the GIL held. Every sample then carries the Python
 * frames of the allocating thread, read by pyframes.c, which also says which
 * versions are read and checks their layout against the running interpreter;
 * other versions, and one whose check fails, are captured native-only. */
#include "config.h"

#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "python.h"
#include "snapshot.h"

#define PY_SMALL_REQUEST 512         /* pymalloc serves 1..512 bytes itself */
/* Below this rate pymalloc's free is wrapped too (see "The wrappers"). */
#define OWN_MIN_RATE (64 * 1024)
#define PY_ALIGNMENT 16              /* in blocks of a multiple of 16 bytes (64-bit) */

enum { PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ };

struct mw_py mw_py;

static bool supported;
static pthread_mutex_t py_lock = PTHREAD_MUTEX_INITIALIZER;   /* the helper's state */
static pthread_cond_t py_cond = PTHREAD_COND_INITIALIZER;
static bool helper_running;
static bool want_installed;     /* capture is on: the wrappers should be in */
static int installed;           /* our wrappers are the domains' allocators */
static int py_state;            /* enum mw_python_state, read by status */

bool mw_python_frames;

/* Samples read Python frames (on) or not: mw_python_frames, and the core's
 * hook that the sampler calls, the one word it reads at each sample. */
static void frames_on(bool on)
{
	mw_python_frames = on;
	mw_runtime_frames(&mw_python_runtime, on);
}

/* ------------------------------------------------------------------------- */
/* The wrappers. Each domain's ctx points at its entry here, holding the
 * allocator it replaced. Only what pymalloc serves itself (1..512 bytes) is
 * counted: anything else it hands to malloc, which the hooks count. A block is
 * counted at its size class, the memory it takes (a 2-tuple asks for 72 bytes
 * and takes 80: counting the request would leave a tenth of a heap of small
 * objects unexplained).
 *
 * Where the domains are the interpreter's own pymalloc (own), only the
 * allocating side is wrapped: free stays pymalloc's, which Debian's python3.11
 * (LTO and PGO) inlines into its callers as long as the domain's free is that
 * function, and a block chosen as a sample comes from malloc instead of
 * pymalloc (see own_block). pymalloc's free hands any block outside its
 * arenas to the raw domain, that is free, where the hooks drop its record. Elsewhere (debug
 * hooks, tracemalloc's or another allocator underneath) every call is wrapped
 * and passed through.
 *
 * A sampled block taken from malloc costs 513 bytes (and malloc's header)
 * where the object needed tens: nothing at the default rate, where one object
 * in thousands is sampled, but at a rate of a few KiB it is a tenth more
 * memory, and with every allocation sampled the heap grew 7-fold. Below
 * OWN_MIN_RATE the domains are wrapped whole, free included, and sampled
 * objects stay in pymalloc's arenas: a probe of the sampled-address filter at
 * every free costs less than that (bench/python-overhead.sh, Debian's 3.11:
 * at 4 KiB 1.32x CPU against 1.57x; at 64 KiB and above the allocating side
 * alone stays cheaper). The choice is made when the wrappers go in, at a
 * capture's start. A capture restarted at another rate while the helper was
 * taking the previous wrappers out can leave the few blocks sampled meanwhile
 * recorded after their free: figures a little high, never a fault. */

struct wrap {
	py_allocator prev;
	size_t limit;   /* requests of 1..limit bytes are counted: 512, or 0 when
			 * the domain is malloc itself (PYTHONMALLOC=malloc), or
			 * all under mimalloc */
	bool own;       /* sampled blocks are malloc's, and free is pymalloc's own */
	size_t extra;   /* bytes the debug hooks add to each request (Py_DEBUG) */
};
static struct wrap wraps[3];

static inline bool counted(const struct wrap *w, size_t n)
{
	return n - 1 < w->limit;
}

static inline size_t size_class(size_t n)
{
	return (n + PY_ALIGNMENT - 1) & ~(size_t)(PY_ALIGNMENT - 1);
}

/* What a block of a counted request of n bytes takes in pymalloc. */
static inline size_t taken(const struct wrap *w, size_t n)
{
	return size_class(n + w->extra);
}

static inline int capturing(void)
{
	return __atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED);
}

#define ON __attribute__((noinline))

/* ------------------------------------------------------------------------- */
/* A point owed to the next creation of a type (pyfree.c: the type's free list
 * is held empty, so that creation allocates) falls on the thread's next
 * allocation of that size, which may be another type's object: a list of
 * two items where a dropped tuple of two was owed, which inflated the kept
 * lists by the dropped tuples' bytes. So the block that took it is checked
 * at the thread's next allocation through these wrappers (the object is
 * made by then; meanwhile the thread's countdown is held at 0, and owed to
 * no size, so that its allocations pass unsampled to the check), and one of
 * another type gives its record back and the point is owed again, at most
 * OWED_AGAIN times. All of it with the GIL held. Not below OWN_MIN_RATE:
 * there the block that took the point was likely a sample point itself (at
 * a rate of 1, surely), and one sample more or less weighs little. */
#define OWED_CHECK UINT32_MAX        /* mw_tls.owed while the check is due */
#define OWED_AGAIN 16
#define GC_HEAD 16                   /* the object follows its GC header */
#define OB_TYPE 8

static struct {
	const struct mw_tls *owner;  /* NULL: no check due */
	void *block;
	const void *type;            /* what the point was owed to */
	uint32_t size;
	unsigned gen;                /* the owed point's (mw_pyfree_owed_gen) */
	unsigned again;              /* times it was owed again */
	uint64_t gap;                /* the countdown drawn when it was taken */
} owed_check;

/* A sampled block q of size: if it took the point owed (owed, the thread's
 * mw_tls.owed before), its check is made due. */
static inline void owed_taken(uint32_t owed, void *q, size_t size)
{
	if (likely(!owed) || owed == OWED_CHECK || mw_tls.owed || !q || !mw_pyfree_owed_type ||
	    __atomic_load_n(&mw_rate, __ATOMIC_RELAXED) < OWN_MIN_RATE)
		return;
	if (owed_check.gen != mw_pyfree_owed_gen) {
		owed_check.gen = mw_pyfree_owed_gen;
		owed_check.again = 0;
	}
	owed_check.owner = &mw_tls;
	owed_check.block = q;
	owed_check.type = mw_pyfree_owed_type;
	owed_check.size = (uint32_t)size;
	owed_check.gap = mw_tls.left;
	mw_tls.owed = OWED_CHECK;
	mw_tls.owed_tries = UINT32_MAX;
	mw_tls.left = 0;
}

/* The check, on the thread that took the point: true when the countdown is
 * back as it was drawn (the caller's allocation is then decided by it). */
static ON bool owed_check_now(void)
{
	struct mw_taken tk;
	uintptr_t type;
	void *b = owed_check.block;

	if (owed_check.owner != &mw_tls)
		return false;
	owed_check.owner = NULL;
	if (mw_tls.owed != OWED_CHECK)
		return false;      /* forgotten meanwhile (a new capture) */
	mw_tls.owed = 0;
	mw_tls.left = owed_check.gap;
	if (mw_py_safe_word((char *)b + GC_HEAD + OB_TYPE, &type) && (const void *)type == owed_check.type)
		return true;
	/* (a block freed already, its record with it, was an object that died
	 * at once: a temporary of the type, mostly, which counts for nothing
	 * either way) */
	if (!mw_take_record(b, &tk))
		return true;
	if (++owed_check.again > OWED_AGAIN)
		return true;       /* the point is lost: no creation of the type came */
	mw_tls.owed = owed_check.size;
	mw_tls.owed_tries = MW_OWED_TRIES;
	mw_tls.left = 0;
	return false;
}

/* At the start of each slow path (reached with the countdown held at 0 while
 * a check is due): true when the caller's allocation must be decided again
 * by the countdown, now restored. */
static inline bool owed_check_due(void)
{
	return unlikely(owed_check.owner != NULL) && owed_check_now();
}

/* Allocations made while the agent runs on the thread (the guard up: pyfree.c
 * emptying a free list), counted so that it sees which came from the allocator. */
unsigned mw_py_guarded_allocs;

static ON void *malloc_slow(struct wrap *w, size_t n)
{
	uint32_t owed;
	void *q;

	if (mw_tls.guard) {
		mw_py_guarded_allocs++;
		return w->prev.malloc(w->prev.ctx, n);
	}
	if (owed_check_due() && mw_unsampled(taken(w, n), capturing()))
		return w->prev.malloc(w->prev.ctx, n);
	owed = mw_tls.owed;
	q = mw_sampled_alloc(w->prev.malloc(w->prev.ctx, n), taken(w, n));
	owed_taken(owed, q, taken(w, n));
	return q;
}

static void *w_malloc(void *ctx, size_t n)
{
	struct wrap *w = ctx;
	int e = capturing();
	if (likely(!e) || !counted(w, n) || likely(mw_unsampled(taken(w, n), e)))
		return w->prev.malloc(w->prev.ctx, n);
	return malloc_slow(w, n);
}

/* pymalloc itself, when the domains are the interpreter's own (the wrappers
 * of both domains then call it directly, ctx and all). */
static py_allocator pymalloc;

/* A sampled block, own: asked of pymalloc with a size it does not serve, so
 * that it takes it from the raw domain (malloc) as it does any request over
 * 512 bytes. Its free then goes back there, where the hooks see it, and the
 * interpreter's count of blocks (sys.getallocatedblocks()) stays right. The
 * hooks do not count it themselves (the guard is up). */
static void *own_block(bool zero)
{
	void *q;
	mw_tls.guard++;
	q = zero ? pymalloc.calloc(pymalloc.ctx, 1, PY_SMALL_REQUEST + 1)
		 : pymalloc.malloc(pymalloc.ctx, PY_SMALL_REQUEST + 1);
	mw_tls.guard--;
	return q;
}

static ON void *malloc_own_slow(size_t n)
{
	uint32_t owed;
	void *q;

	if (mw_tls.guard) {
		mw_py_guarded_allocs++;
		return pymalloc.malloc(pymalloc.ctx, n);
	}
	if (owed_check_due() && mw_unsampled(size_class(n), capturing()))
		return pymalloc.malloc(pymalloc.ctx, n);
	if (!capturing() || mw_owed_other(size_class(n)))
		return pymalloc.malloc(pymalloc.ctx, n);
	owed = mw_tls.owed;
	q = mw_sampled_alloc(own_block(false), size_class(n));
	owed_taken(owed, q, size_class(n));
	mw_pycache_point();
	return q;
}

/* The same as w_malloc where free is pymalloc's own (see swap_locked_gil): the
 * sample decision first, then a tail jump to pymalloc, with nothing read
 * through ctx (every object allocation passes here: each instruction counts). */
static void *w_malloc_own(void *ctx, size_t n)
{
	int e = capturing();
	(void)ctx;
	if (likely(n - 1 < PY_SMALL_REQUEST) && likely(mw_unsampled(size_class(n), e)))
		return pymalloc.malloc(pymalloc.ctx, n);
	if (n - 1 >= PY_SMALL_REQUEST)
		return pymalloc.malloc(pymalloc.ctx, n);
	return malloc_own_slow(n);
}

static ON void *calloc_slow(struct wrap *w, size_t a, size_t b, size_t n)
{
	uint32_t owed;
	void *q;

	if (mw_tls.guard) {
		mw_py_guarded_allocs++;
		return w->prev.calloc(w->prev.ctx, a, b);
	}
	if (owed_check_due() && mw_unsampled(taken(w, n), capturing()))
		return w->prev.calloc(w->prev.ctx, a, b);
	if (w->own) {
		if (mw_owed_other(size_class(n)))
			return w->prev.calloc(w->prev.ctx, a, b);
		owed = mw_tls.owed;
		q = mw_sampled_alloc(own_block(true), size_class(n));
		owed_taken(owed, q, size_class(n));
		mw_pycache_point();
		return q;
	}
	owed = mw_tls.owed;
	q = mw_sampled_alloc(w->prev.calloc(w->prev.ctx, a, b), taken(w, n));
	owed_taken(owed, q, taken(w, n));
	return q;
}

static void *w_calloc(void *ctx, size_t a, size_t b)
{
	struct wrap *w = ctx;
	int e = capturing();
	size_t n;
	if (likely(!e) || __builtin_mul_overflow(a, b, &n) || !counted(w, n) ||
	    likely(mw_unsampled(taken(w, n), e)))
		return w->prev.calloc(w->prev.ctx, a, b);
	return calloc_slow(w, a, b, n);
}

/* The free of the old block and the allocation of the new one. A block that
 * pymalloc hands over to malloc (growing past 512 bytes) is the hooks' to count. */
static ON void *realloc_on(struct wrap *w, void *p, size_t n, int e)
{
	struct mw_taken t;
	bool had = false;
	void *q;

	if (!mw_tls.guard)
		(void)owed_check_due();     /* (decided below in any case) */
	if (p && mw_maybe_sampled(p))
		had = mw_take_record(p, &t);
	q = w->prev.realloc(w->prev.ctx, p, n);
	if (!q) {
		if (had && n != 0)
			mw_put_record(p, &t);
		return q;
	}
	if (!counted(w, n) || mw_unsampled(taken(w, n), e))
		return q;
	return mw_sampled_alloc(q, taken(w, n));
}

static void *w_realloc(void *ctx, void *p, size_t n)
{
	struct wrap *w = ctx;
	int e = capturing();
	if (likely(!e))
		return w->prev.realloc(w->prev.ctx, p, n);
	return realloc_on(w, p, n, e);
}

/* With free left to pymalloc (own): a block that is not a sample point is
 * pymalloc's business, a sampled one (malloc's) is handed by pymalloc's
 * realloc to the raw domain, where the hooks see it. At a sample point the new
 * block is moved to malloc, so that its free reaches the hooks too. */
static ON void *realloc_own_slow(struct wrap *w, void *p, size_t n)
{
	void *r, *q;

	if (!mw_tls.guard && owed_check_due() && mw_unsampled(size_class(n), capturing()))
		return w->prev.realloc(w->prev.ctx, p, n);
	if (mw_owed_other(size_class(n)))
		return w->prev.realloc(w->prev.ctx, p, n);
	r = w->prev.realloc(w->prev.ctx, p, n);
	if (!r)
		return r;
	q = own_block(false);
	if (!q)
		return r;     /* not counted, and still the program's block */
	memcpy(q, r, n);
	w->prev.free(w->prev.ctx, r);
	q = mw_sampled_alloc(q, size_class(n));
	mw_pycache_point();
	return q;
}

static void *w_realloc_own(void *ctx, void *p, size_t n)
{
	struct wrap *w = ctx;
	int e = capturing();
	if (likely(!e) || !counted(w, n) || likely(mw_unsampled(size_class(n), e)))
		return w->prev.realloc(w->prev.ctx, p, n);
	return realloc_own_slow(w, p, n);
}

/* What an object of n bytes (its GC header included) counts for when
 * allocated through the object domain as it is wrapped now; 0 when that
 * domain is not pymalloc underneath (malloc itself, or mimalloc). */
size_t mw_py_obj_taken(size_t n)
{
	const struct wrap *w = &wraps[PYMEM_DOMAIN_OBJ];
	if (!w->limit || w->limit == SIZE_MAX || !counted(w, n))
		return 0;
	return taken(w, n);
}

/* The record goes before the block (see hk_free). In a domain that is malloc
 * itself, a block the hooks sampled loses its record here, before free. */
static ON void free_on(struct wrap *w, void *p)
{
	mw_sampled_free(p);
	w->prev.free(w->prev.ctx, p);
}

static void w_free(void *ctx, void *p)
{
	struct wrap *w = ctx;
	if (likely(!capturing()) || !p || likely(!mw_maybe_sampled(p)))
		return w->prev.free(w->prev.ctx, p);
	free_on(w, p);
}

/* ------------------------------------------------------------------------- */
/* Finding the interpreter. */

static void *sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

/* The version of a CPython without Py_Version (before 3.11), from the string
 * Py_GetVersion() makes of PY_VERSION ("3.9.18 (main, ...)"), as Py_Version
 * would hold it (release level and serial left 0). 0 if it does not read. */
static unsigned long version_of(const char *s)
{
	unsigned long part[3] = { 0, 0, 0 };
	int i = 0;

	if (!s || *s < '0' || *s > '9')
		return 0;
	for (; i < 3 && *s >= '0' && *s <= '9'; i++) {
		while (*s >= '0' && *s <= '9' && part[i] < 256)
			part[i] = part[i] * 10 + (unsigned long)(*s++ - '0');
		if (part[i] > 255 || *s != '.')
			break;
		s++;
	}
	if (part[0] > 255 || part[1] > 255 || part[2] > 255 || part[0] == 0)
		return 0;
	return part[0] << 24 | part[1] << 16 | part[2] << 8;
}

static char why_unread[96];   /* why the layout check failed, or why a version
			       * with an entry in pyversions.h is not read */
static bool layout_checked;   /* the check passed: samples may read frames */
static bool unreadable;       /* the check failed: native-only for good */

/* The layout check (pyframes.c), tried again before a failure is believed (a
 * frame may be popped while it is read). 1 passed, 0 nothing to check yet,
 * -1 failed (why_unread says how). */
static int check_layout(void)
{
	int r = -1;
	for (int i = 0; i < 5; i++) {
		struct timespec ts = { 0, 10 * 1000000 };
		r = mw_py_check(why_unread, sizeof why_unread);
		if (r >= 0)
			break;
		nanosleep(&ts, NULL);
	}
	return r;
}

/* Look CPython up in the process: once found (or found unreadable), for
 * good; not found, again at the next capture (a program may load libpython
 * later). Called with py_lock held, from the control thread. */
static void probe(void)
{
	const unsigned long *ver;
	const char *(*get_version)(void);
	const char *runtime;
	void *eval;
	Dl_info info;
	const ElfW(Sym) *es = NULL;

	if (py_state != MW_PY_NONE)
		return;
	mw_loader_enter();
	ver = sym("Py_Version");
	get_version = (const char *(*)(void))sym("Py_GetVersion");
	mw_py.is_initialized = (int (*)(void))sym("Py_IsInitialized");
	mw_py.is_finalizing = (int (*)(void))sym("_Py_IsFinalizing");
	if (!mw_py.is_finalizing)     /* public from 3.13 on */
		mw_py.is_finalizing = (int (*)(void))sym("Py_IsFinalizing");
	runtime = sym("_PyRuntime");
	mw_py.this_tstate = (void *(*)(void))sym("PyGILState_GetThisThreadState");
	mw_py.gil_ensure = (int (*)(void))sym("PyGILState_Ensure");
	mw_py.gil_release = (void (*)(int))sym("PyGILState_Release");
	mw_py.get_allocator = (void (*)(int, py_allocator *))sym("PyMem_GetAllocator");
	mw_py.set_allocator = (void (*)(int, py_allocator *))sym("PyMem_SetAllocator");
	mw_py.addr2line = (int (*)(void *, int))sym("PyCode_Addr2Line");
	mw_py.allocator_name = (const char *(*)(void))sym("_PyMem_GetCurrentAllocatorName");
	mw_py.code_type = sym("PyCode_Type");
	mw_py.unicode_type = sym("PyUnicode_Type");
	mw_py.bytes_type = sym("PyBytes_Type");
	mw_py.type_type = sym("PyType_Type");
	mw_py.dict_type = sym("PyDict_Type");
	mw_py.interp_head = (void *(*)(void))sym("PyInterpreterState_Head");
	mw_py.thread_head = (void *(*)(const void *))sym("PyInterpreterState_ThreadHead");
	eval = sym("_PyEval_EvalFrameDefault");
	if (eval && dladdr1(eval, &info, (void **)&es, RTLD_DL_SYMENT) && es && es->st_size) {
		mw_py.eval_lo = (uintptr_t)eval;
		mw_py.eval_hi = (uintptr_t)eval + es->st_size;
	}
	mw_loader_leave();
	/* a CPython: its version published (Py_Version from 3.11 on, the
	 * string of Py_GetVersion() in every version) and its allocator API */
	if ((!ver && !get_version) || !mw_py.is_initialized || !mw_py.set_allocator ||
	    !mw_py.get_allocator) {
		py_state = MW_PY_NONE;
		return;
	}
	mw_py.version = ver ? *(const uint32_t *)ver : version_of(get_version());
	/* 3.8 to 3.12 (the structures pyframes.c mirrors) and 3.13 (its table) */
	if (!mw_py.version || !mw_py_layout(runtime)) {
		snprintf(why_unread, sizeof why_unread, "%s", mw_py_do_refused ? mw_py_do_refused : "");
		py_state = MW_PY_UNSUPPORTED;
		return;
	}
	if (!mw_py.is_finalizing || !mw_py.this_tstate || !mw_py.gil_ensure || !mw_py.gil_release ||
	    !mw_py.code_type || (mw_py.version >= 0x030b0000 && !mw_py.addr2line) || !mw_py.eval_lo) {
		snprintf(why_unread, sizeof why_unread, "functions or types it reads through are not exported");
		unreadable = true;
		py_state = MW_PY_UNREADABLE;
		return;
	}
	/* the structures as this interpreter has them: checked once it runs */
	if (mw_py.is_initialized()) {
		int r = check_layout();
		if (r < 0) {
			unreadable = true;
			py_state = MW_PY_UNREADABLE;
			return;
		}
		layout_checked = r > 0;
	}
	supported = true;
	py_state = MW_PY_OFF;
}

/* ------------------------------------------------------------------------- */
/* The helper thread: it alone swaps the allocators, with the GIL held. It may
 * wait for the GIL as long as the program keeps it; capture goes on native-only
 * meanwhile (status says python=waiting). */

static bool interpreter_alive(void)
{
	return mw_py.is_initialized() && !mw_py.is_finalizing();
}

/* With the GIL held: put our wrappers in (on) or the previous allocators back. */
static void swap_locked_gil(bool on)
{
	py_allocator raw, cur, mine;
	const char *name;
	bool own;
	int d;

	if (on) {
		/* The interpreter's own allocators, untouched by anyone, are
		 * named: "pymalloc" (the raw domain is malloc, MEM and OBJ are
		 * pymalloc, whose free hands any block outside its arenas to the
		 * raw domain), "pymalloc_debug" (the same under the debug hooks,
		 * which add 3 words to every request: the default of Py_DEBUG
		 * builds), "malloc" and "malloc_debug" (the hooks count every
		 * block), "mimalloc" and "mimalloc_debug" (3.13: every block is
		 * the wrappers' to count, malloc has none); NULL when another
		 * allocator is in. */
		name = mw_py.allocator_name ? mw_py.allocator_name() : NULL;
		own = name && strcmp(name, "pymalloc") == 0 &&
		      __atomic_load_n(&mw_rate, __ATOMIC_RELAXED) >= OWN_MIN_RATE;
		mw_py.get_allocator(PYMEM_DOMAIN_RAW, &raw);
		for (d = PYMEM_DOMAIN_MEM; d <= PYMEM_DOMAIN_OBJ; d++) {
			mw_py.get_allocator(d, &cur);
			if (cur.malloc == w_malloc || cur.malloc == w_malloc_own)
				continue;     /* ours already (a fork's child) */
			wraps[d].prev = cur;
			wraps[d].extra = name && strstr(name, "_debug") ? 3 * sizeof(size_t) : 0;
			if ((name && strncmp(name, "malloc", 6) == 0) ||
			    (cur.malloc == raw.malloc && cur.ctx == raw.ctx))
				wraps[d].limit = 0;
			else if (name && strncmp(name, "mimalloc", 8) == 0)
				wraps[d].limit = SIZE_MAX;     /* it serves every size itself */
			else
				wraps[d].limit = PY_SMALL_REQUEST - wraps[d].extra;
			wraps[d].own = own && wraps[d].limit;
			mine.ctx = &wraps[d];
			if (wraps[d].own)
				pymalloc = cur;
			mine.malloc = wraps[d].own ? w_malloc_own : w_malloc;
			mine.calloc = w_calloc;
			/* own: free stays pymalloc's (see "The wrappers") */
			mine.realloc = wraps[d].own ? w_realloc_own : w_realloc;
			mine.free = wraps[d].own ? cur.free : w_free;
			mw_py.set_allocator(d, &mine);
		}
		mw_pyfree_swap(true);     /* recycled objects go through them too */
		mw_pycache_swap(own);     /* sampled names at addresses of their own */
		return;
	}
	mw_pycache_swap(false);
	mw_pyfree_swap(false);
	for (d = PYMEM_DOMAIN_MEM; d <= PYMEM_DOMAIN_OBJ; d++) {
		mw_py.get_allocator(d, &cur);
		/* Someone stacked theirs on ours (tracemalloc started meanwhile):
		 * ours stays below it, passing through while capture is off. */
		if ((cur.malloc == w_malloc || cur.malloc == w_malloc_own) && cur.ctx == &wraps[d])
			mw_py.set_allocator(d, &wraps[d].prev);
	}
}

/* The layout not checked yet at the start (no frame to check it on, or the
 * interpreter not started): checked again at each turn of the helper until it
 * passes or fails. Failed, the wrappers come out and stay out. py_lock held. */
static void recheck_layout(void)
{
	int r;

	if (!supported || layout_checked || !interpreter_alive())
		return;
	r = check_layout();
	if (r > 0) {
		layout_checked = true;
		frames_on(installed && want_installed);
	} else if (r < 0) {
		supported = false;
		unreadable = true;
		want_installed = false;
		frames_on(false);
		py_state = MW_PY_UNREADABLE;
	}
}

static void helper_exit(void *arg)
{
	(void)arg;
	/* the interpreter ended this thread (it asked for the GIL while the
	 * interpreter finalized): a later capture starts a new one */
	pthread_mutex_lock(&py_lock);
	helper_running = false;
	py_state = MW_PY_FINALIZED;
	frames_on(false);
	pthread_mutex_unlock(&py_lock);
}

static void *helper_main(void *arg)
{
	(void)arg;
	mw_tls.guard = 1;
	pthread_cleanup_push(helper_exit, NULL);
	pthread_mutex_lock(&py_lock);
	for (;;) {
		bool want;
		struct timespec ts;
		recheck_layout();
		want = want_installed;
		if (want == (installed != 0)) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&py_cond, &py_lock, &ts);
			continue;
		}
		if (!interpreter_alive()) {
			/* not yet started, or finalizing: never swap then. Once
			 * finalizing, no swap will ever be made: what is wanted is
			 * taken as done, and the wrappers that are in stay in,
			 * passing through once capture stops. */
			py_state = mw_py.is_initialized() ? MW_PY_FINALIZED :
				   unreadable ? MW_PY_UNREADABLE : MW_PY_WAITING;
			frames_on(false);
			if (py_state == MW_PY_FINALIZED)
				installed = want;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&py_cond, &py_lock, &ts);
			continue;
		}
		if (want && !unreadable)
			py_state = MW_PY_WAITING;
		pthread_mutex_unlock(&py_lock);
		{
			int g = mw_py.gil_ensure();
			pthread_mutex_lock(&py_lock);
			want = want_installed;
			if (interpreter_alive() && want != (installed != 0)) {
				swap_locked_gil(want);
				installed = want;
			}
			py_state = unreadable ? MW_PY_UNREADABLE : installed ? MW_PY_ON : MW_PY_OFF;
			frames_on(installed && layout_checked);
			pthread_mutex_unlock(&py_lock);
			mw_py.gil_release(g);
		}
		pthread_mutex_lock(&py_lock);
	}
	pthread_mutex_unlock(&py_lock);
	pthread_cleanup_pop(0);
	return NULL;
}

/* Start the helper if it is not running. py_lock held. */
static void helper_start(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;

	if (helper_running)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	if (pthread_create(&th, &attr, helper_main, NULL) == 0) {
		helper_running = true;
#ifdef __GLIBC__
		pthread_setname_np(th, "memwatch-python");
#endif
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void python_capture_start(void)
{
	mw_tls.guard++;
	pthread_mutex_lock(&py_lock);
	probe();
	if (supported && py_state != MW_PY_FINALIZED) {
		want_installed = true;
		/* samples read Python frames at once; only pymalloc's small
		 * objects wait for the swap */
		frames_on(interpreter_alive() && layout_checked);
		if (!installed)
			py_state = MW_PY_WAITING;
		helper_start();
		pthread_cond_signal(&py_cond);
	}
	pthread_mutex_unlock(&py_lock);
	mw_tls.guard--;
}

static void python_capture_stop(void)
{
	mw_tls.guard++;
	pthread_mutex_lock(&py_lock);
	want_installed = false;
	frames_on(false);
	if (supported && py_state == MW_PY_WAITING && !installed)
		py_state = MW_PY_OFF;
	pthread_cond_signal(&py_cond);
	pthread_mutex_unlock(&py_lock);
	mw_tls.guard--;
}

static const char *python_why(void)
{
	int st = __atomic_load_n(&py_state, __ATOMIC_RELAXED);
	return st == MW_PY_UNREADABLE || st == MW_PY_UNSUPPORTED ? why_unread : "";
}

int mw_python_state(unsigned long *version)
{
	if (version)
		*version = mw_py.version;
	return __atomic_load_n(&py_state, __ATOMIC_RELAXED);
}

static const char *state_name(int s)
{
	switch (s) {
	case MW_PY_UNSUPPORTED: return "unsupported";
	case MW_PY_UNREADABLE: return "unreadable";
	case MW_PY_WAITING: return "waiting";
	case MW_PY_ON: return "on";
	case MW_PY_OFF: return "off";
	case MW_PY_FINALIZED: return "finalized";
	default: return "none";
	}
}

/* fork: the child must not inherit the frame table's lock half-held; it has
 * no helper thread (a later capture starts one). */
static void python_atfork_prepare(void)
{
	mw_pyframes_atfork_prepare();
}

static void python_atfork_parent(void)
{
	mw_pyframes_atfork_parent();
}

static bool fork_wanted;    /* the parent's want_installed at the fork */

static void python_atfork_child(void)
{
	fork_wanted = want_installed;
	mw_pyframes_atfork_child();
	mw_pyrefs_atfork_child();
	pthread_mutex_init(&py_lock, NULL);
	pthread_cond_init(&py_cond, NULL);
	helper_running = false;
	want_installed = false;
	frames_on(false);
	if (py_state == MW_PY_WAITING)
		py_state = MW_PY_OFF;
}

/* A child that goes on capturing (see runtime.h). The wrappers it inherited stay
 * in, and the layout its parent checked is its own. No helper is started here:
 * the interpreter reinitializes its GIL and deletes other threads' states
 * after the fork (PyOS_AfterFork_Child), which a helper waiting for the GIL
 * must not meet; a parent that had not swapped yet leaves its child
 * native-only for pymalloc's small objects until a capture start there. */
static void python_fork_resume(void)
{
	if (!fork_wanted || !supported || py_state == MW_PY_FINALIZED)
		return;
	want_installed = installed != 0;
	/* A parent that forked before its helper checked the layout (a Pool
	 * made as the program starts, the agent preloaded before the
	 * interpreter ran) leaves it unchecked, and the child has no helper to
	 * check it later: it is checked here, once, by the forking thread. */
	if (!layout_checked && !unreadable && interpreter_alive() &&
	    mw_py_check(why_unread, sizeof why_unread) > 0)
		layout_checked = true;
	frames_on(layout_checked && interpreter_alive());
	py_state = unreadable ? MW_PY_UNREADABLE : installed ? MW_PY_ON : MW_PY_OFF;
}

/* The snapshot moment: the interpreter's state and version in s's header,
 * then the Python frames named. */
static int python_snapshot(struct snapshot *s, uint64_t wait_ns)
{
	unsigned long v;
	int py = mw_python_state(&v);
	(void)wait_ns;
	s->python = py == MW_PY_NONE ? SNAP_PYTHON_NONE : py == MW_PY_ON ? SNAP_PYTHON_SAMPLED :
		    py == MW_PY_UNSUPPORTED || py == MW_PY_UNREADABLE ? SNAP_PYTHON_NATIVE :
		    SNAP_PYTHON_PAUSED;
	s->python_version = py == MW_PY_NONE ? 0 : (uint32_t)((v >> 16) & 0xffff);
	return mw_python_snapshot(s);
}

/* The status line's words: python=, python-version= and python-why=. */
static void python_status(char *fields, size_t flen, char *why, size_t wlen)
{
	unsigned long v;
	int py = mw_python_state(&v);
	snprintf(fields, flen, "python=%s python-version=%lu.%lu", state_name(py), (v >> 24) & 0xff,
		 (v >> 16) & 0xff);
	snprintf(why, wlen, "python-why=%s", python_why());
}

const struct mw_runtime mw_python_runtime = {
	.name = "python",
	.atfork_prepare = python_atfork_prepare,
	.atfork_parent = python_atfork_parent,
	.atfork_child = python_atfork_child,
	.capture_resume = python_fork_resume,
	.capture_start = python_capture_start,
	.capture_stop = python_capture_stop,
	.types = mw_python_types,
	.snapshot = python_snapshot,
	.referrers = mw_python_referrers,
	.status = python_status,
	.frames = mw_python_merge,
};
