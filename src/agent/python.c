/* python.c: CPython inside the target. When the process is a CPython 3.11 or
 * 3.13 interpreter (found through the dynamic linker, never linked against), its
 * object allocator (the PYMEM_DOMAIN_MEM and OBJ domains) is wrapped so that
 * pymalloc's small objects are sampled one by one, and every sample carries the
 * Python frames of the allocating thread, merged into its native stack where
 * the eval loop's frames stand. The structures read are mirrored here from
 * CPython 3.11's internal headers (pycore_frame.h, cpython/code.h,
 * cpython/unicodeobject.h), or read from the table 3.13 publishes for
 * debuggers (_Py_DebugOffsets, at the start of _PyRuntime); other versions are
 * captured native-only. */
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
#include "snapshot.h"

/* ------------------------------------------------------------------------- */
/* CPython 3.11, as far as the agent reads it (offsets checked against the
 * internal headers of Debian's libpython3.11-dev, x86_64). */

#define PY_TSTATE_CFRAME 56          /* PyThreadState.cframe */
#define PY_CFRAME_CURRENT 8          /* _PyCFrame.current_frame */
#define PY_FRAME_CODE 32             /* _PyInterpreterFrame.f_code */
#define PY_FRAME_PREVIOUS 48         /* .previous */
#define PY_FRAME_PREV_INSTR 56       /* .prev_instr */
#define PY_FRAME_IS_ENTRY 68         /* .is_entry (bool) */
#define PY_CODE_FILENAME 112         /* PyCodeObject.co_filename */
#define PY_CODE_QUALNAME 128         /* .co_qualname */
#define PY_CODE_FIRSTTRACEABLE 168   /* ._co_firsttraceable (int) */
#define PY_CODE_ADAPTIVE 184         /* .co_code_adaptive */
#define PY_STR_LENGTH 16             /* PyASCIIObject.length */
#define PY_STR_STATE 32              /* .state: interned:2 kind:3 compact:1 ascii:1 ready:1 */
#define PY_STR_ASCII_DATA 48         /* sizeof (PyASCIIObject) */
#define PY_STR_COMPACT_DATA 72       /* sizeof (PyCompactUnicodeObject) */
#define PY_SMALL_REQUEST 512         /* pymalloc serves 1..512 bytes itself */
#define PY_OB_TYPE 8                 /* PyObject.ob_type (every version, without Py_TRACE_REFS) */

/* CPython 3.13: where _Py_DebugOffsets (the first member of _PyRuntime) holds
 * the offsets read (checked against 3.13's pycore_runtime.h, x86_64, where
 * one is installed: tests/run-python-offsets.sh). */
#define DO_COOKIE "xdebugpy"
#define DO_VERSION 8                 /* Py_Version of the build it describes */
#define DO_FREE_THREADED 16
#define DO_TS_CURRENT_FRAME 184      /* thread_state.current_frame */
#define DO_FRAME_PREVIOUS 232        /* interpreter_frame.previous */
#define DO_FRAME_EXECUTABLE 240      /* .executable (the code object) */
#define DO_FRAME_INSTR_PTR 248       /* .instr_ptr */
#define DO_FRAME_OWNER 264           /* .owner (char) */
#define DO_CODE_FILENAME 280         /* code_object.filename */
#define DO_CODE_QUALNAME 296         /* .qualname */
#define DO_CODE_ADAPTIVE 344         /* .co_code_adaptive */
#define DO_STR_STATE 544             /* unicode_object.state */
#define DO_STR_LENGTH 552            /* .length */
#define DO_STR_ASCII_SIZE 560        /* .asciiobject_size */
#define DO_END 568                   /* what is read of the table */
#define PY313_OWNED_BY_CSTACK 3      /* the entry frame of a C call of the eval loop */

/* Where the frame walk reads, for the version found. */
static struct {
	bool cframe;            /* 3.11: the thread state's frame is behind _PyCFrame */
	size_t ts_frame;        /* PyThreadState: cframe (3.11) or current_frame */
	size_t f_previous, f_code, f_instr;
	size_t f_entry;         /* 3.11: is_entry (bool); 0: none */
	size_t f_owner;         /* 3.13: owner (char); 0: none */
	size_t co_filename, co_qualname, co_adaptive;
	size_t co_firsttraceable;   /* 3.11 only; 0: none */
	size_t str_state, str_length, str_ascii_data, str_compact_data;
	bool str_ready_bit;     /* 3.11: state bit 7 says the str is ready */
} lay;
#define PY_ALIGNMENT 16              /* in blocks of a multiple of 16 bytes (64-bit) */

enum { PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ };

typedef struct {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr);
} py_allocator;

/* The interpreter's functions, looked up once. */
static struct {
	int (*is_initialized)(void);
	int (*is_finalizing)(void);
	void *(*this_tstate)(void);
	int (*gil_ensure)(void);
	void (*gil_release)(int);
	void (*get_allocator)(int, py_allocator *);
	void (*set_allocator)(int, py_allocator *);
	const char *(*allocator_name)(void);   /* _PyMem_GetCurrentAllocatorName */
	int (*addr2line)(void *code, int byte_offset);
	const void *code_type;        /* &PyCode_Type */
	uintptr_t eval_lo, eval_hi;   /* _PyEval_EvalFrameDefault's text */
	unsigned long version;        /* Py_Version */
} py;

static bool supported;
static pthread_mutex_t py_lock = PTHREAD_MUTEX_INITIALIZER;   /* the helper's state */
static pthread_cond_t py_cond = PTHREAD_COND_INITIALIZER;
static bool helper_running;
static bool want_installed;     /* capture is on: the wrappers should be in */
static int installed;           /* our wrappers are the domains' allocators */
static int py_state;            /* enum mw_python_state, read by status */

/* mw_python_frames (defined by heap.c, which reads it at every sample): whether
 * samples read Python frames: CPython found and supported, and not finalizing
 * (checked again at each sample). */

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
 * and passed through. */

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

static ON void *malloc_slow(struct wrap *w, size_t n)
{
	return mw_sampled_alloc(w->prev.malloc(w->prev.ctx, n), taken(w, n));
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
	if (!capturing())
		return pymalloc.malloc(pymalloc.ctx, n);
	return mw_sampled_alloc(own_block(false), size_class(n));
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
	if (w->own)
		return mw_sampled_alloc(own_block(true), size_class(n));
	return mw_sampled_alloc(w->prev.calloc(w->prev.ctx, a, b), taken(w, n));
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
	void *r = w->prev.realloc(w->prev.ctx, p, n), *q;

	if (!r)
		return r;
	q = own_block(false);
	if (!q)
		return r;     /* not counted, and still the program's block */
	memcpy(q, r, n);
	w->prev.free(w->prev.ctx, r);
	return mw_sampled_alloc(q, size_class(n));
}

static void *w_realloc_own(void *ctx, void *p, size_t n)
{
	struct wrap *w = ctx;
	int e = capturing();
	if (likely(!e) || !counted(w, n) || likely(mw_unsampled(size_class(n), e)))
		return w->prev.realloc(w->prev.ctx, p, n);
	return realloc_own_slow(w, p, n);
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

/* The offsets the frame walk reads, for py.version: true when it is a version
 * the agent reads. runtime: _PyRuntime, or NULL. */
static bool layout(const char *runtime)
{
	uint64_t o[DO_END / 8];

	if ((py.version >> 16) == 0x030b) {
		lay.cframe = true;
		lay.ts_frame = PY_TSTATE_CFRAME;
		lay.f_previous = PY_FRAME_PREVIOUS;
		lay.f_code = PY_FRAME_CODE;
		lay.f_instr = PY_FRAME_PREV_INSTR;
		lay.f_entry = PY_FRAME_IS_ENTRY;
		lay.f_owner = 0;
		lay.co_filename = PY_CODE_FILENAME;
		lay.co_qualname = PY_CODE_QUALNAME;
		lay.co_adaptive = PY_CODE_ADAPTIVE;
		lay.co_firsttraceable = PY_CODE_FIRSTTRACEABLE;
		lay.str_state = PY_STR_STATE;
		lay.str_length = PY_STR_LENGTH;
		lay.str_ascii_data = PY_STR_ASCII_DATA;
		lay.str_compact_data = PY_STR_COMPACT_DATA;
		lay.str_ready_bit = true;
		return true;
	}
	/* 3.13: the table must say it describes this very build (the same
	 * version, with the GIL); each offset must lie inside a structure of
	 * sane size */
	if ((py.version >> 16) != 0x030d || !runtime)
		return false;
	memcpy(o, runtime, sizeof o);
	if (memcmp(runtime, DO_COOKIE, 8) != 0 || o[DO_VERSION / 8] != py.version ||
	    o[DO_FREE_THREADED / 8] != 0)
		return false;
	for (size_t i = DO_TS_CURRENT_FRAME / 8; i < DO_END / 8; i++)
		if (o[i] > 4096)
			return false;
	lay.cframe = false;
	lay.ts_frame = o[DO_TS_CURRENT_FRAME / 8];
	lay.f_previous = o[DO_FRAME_PREVIOUS / 8];
	lay.f_code = o[DO_FRAME_EXECUTABLE / 8];
	lay.f_instr = o[DO_FRAME_INSTR_PTR / 8];
	lay.f_entry = 0;
	lay.f_owner = o[DO_FRAME_OWNER / 8];
	lay.co_filename = o[DO_CODE_FILENAME / 8];
	lay.co_qualname = o[DO_CODE_QUALNAME / 8];
	lay.co_adaptive = o[DO_CODE_ADAPTIVE / 8];
	lay.co_firsttraceable = 0;
	lay.str_state = o[DO_STR_STATE / 8];
	lay.str_length = o[DO_STR_LENGTH / 8];
	lay.str_ascii_data = o[DO_STR_ASCII_SIZE / 8];
	/* PyCompactUnicodeObject: utf8_length and utf8 after PyASCIIObject */
	lay.str_compact_data = lay.str_ascii_data + 2 * sizeof(void *);
	lay.str_ready_bit = false;
	return true;
}

/* Look CPython up in the process: once found (or found unreadable), for
 * good; not found, again at the next capture (a program may load libpython
 * later). Called with py_lock held, from the control thread. */
static void probe(void)
{
	const unsigned long *ver;
	const char *runtime;
	void *eval;
	Dl_info info;
	const ElfW(Sym) *es = NULL;

	if (py_state != MW_PY_NONE)
		return;
	mw_loader_enter();
	ver = sym("Py_Version");
	py.is_initialized = (int (*)(void))sym("Py_IsInitialized");
	py.is_finalizing = (int (*)(void))sym("_Py_IsFinalizing");
	if (!py.is_finalizing)     /* public from 3.13 on */
		py.is_finalizing = (int (*)(void))sym("Py_IsFinalizing");
	runtime = sym("_PyRuntime");
	py.this_tstate = (void *(*)(void))sym("PyGILState_GetThisThreadState");
	py.gil_ensure = (int (*)(void))sym("PyGILState_Ensure");
	py.gil_release = (void (*)(int))sym("PyGILState_Release");
	py.get_allocator = (void (*)(int, py_allocator *))sym("PyMem_GetAllocator");
	py.set_allocator = (void (*)(int, py_allocator *))sym("PyMem_SetAllocator");
	py.addr2line = (int (*)(void *, int))sym("PyCode_Addr2Line");
	py.allocator_name = (const char *(*)(void))sym("_PyMem_GetCurrentAllocatorName");
	py.code_type = sym("PyCode_Type");
	eval = sym("_PyEval_EvalFrameDefault");
	if (eval && dladdr1(eval, &info, (void **)&es, RTLD_DL_SYMENT) && es && es->st_size) {
		py.eval_lo = (uintptr_t)eval;
		py.eval_hi = (uintptr_t)eval + es->st_size;
	}
	mw_loader_leave();
	if (!ver || !py.is_initialized || !py.set_allocator || !py.get_allocator) {
		py_state = MW_PY_NONE;
		return;
	}
	py.version = *(const uint32_t *)ver;
	/* 3.11 (the structures mirrored above) and 3.13 (its table) */
	if (!layout(runtime) || !py.is_finalizing || !py.this_tstate ||
	    !py.gil_ensure || !py.gil_release || !py.addr2line || !py.eval_lo) {
		py_state = MW_PY_UNSUPPORTED;
		return;
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
	return py.is_initialized() && !py.is_finalizing();
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
		name = py.allocator_name ? py.allocator_name() : NULL;
		own = name && strcmp(name, "pymalloc") == 0;
		py.get_allocator(PYMEM_DOMAIN_RAW, &raw);
		for (d = PYMEM_DOMAIN_MEM; d <= PYMEM_DOMAIN_OBJ; d++) {
			py.get_allocator(d, &cur);
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
			py.set_allocator(d, &mine);
		}
		return;
	}
	for (d = PYMEM_DOMAIN_MEM; d <= PYMEM_DOMAIN_OBJ; d++) {
		py.get_allocator(d, &cur);
		/* Someone stacked theirs on ours (tracemalloc started meanwhile):
		 * ours stays below it, passing through while capture is off. */
		if ((cur.malloc == w_malloc || cur.malloc == w_malloc_own) && cur.ctx == &wraps[d])
			py.set_allocator(d, &wraps[d].prev);
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
	mw_python_frames = false;
	pthread_mutex_unlock(&py_lock);
}

static void *helper_main(void *arg)
{
	(void)arg;
	mw_tls.guard = 1;
	pthread_cleanup_push(helper_exit, NULL);
	pthread_mutex_lock(&py_lock);
	for (;;) {
		bool want = want_installed;
		struct timespec ts;
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
			py_state = py.is_initialized() ? MW_PY_FINALIZED : MW_PY_WAITING;
			mw_python_frames = false;
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
		if (want)
			py_state = MW_PY_WAITING;
		pthread_mutex_unlock(&py_lock);
		{
			int g = py.gil_ensure();
			pthread_mutex_lock(&py_lock);
			want = want_installed;
			if (interpreter_alive() && want != (installed != 0)) {
				swap_locked_gil(want);
				installed = want;
			}
			py_state = installed ? MW_PY_ON : MW_PY_OFF;
			mw_python_frames = installed != 0;
			pthread_mutex_unlock(&py_lock);
			py.gil_release(g);
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

void mw_python_capture_start(void)
{
	mw_tls.guard++;
	pthread_mutex_lock(&py_lock);
	probe();
	if (supported && py_state != MW_PY_FINALIZED) {
		want_installed = true;
		/* samples read Python frames at once; only pymalloc's small
		 * objects wait for the swap */
		mw_frames_merge = mw_python_merge;
		mw_python_frames = interpreter_alive();
		if (!installed)
			py_state = MW_PY_WAITING;
		helper_start();
		pthread_cond_signal(&py_cond);
	}
	pthread_mutex_unlock(&py_lock);
	mw_tls.guard--;
}

void mw_python_capture_stop(void)
{
	mw_tls.guard++;
	pthread_mutex_lock(&py_lock);
	want_installed = false;
	mw_python_frames = false;
	if (supported && py_state == MW_PY_WAITING && !installed)
		py_state = MW_PY_OFF;
	pthread_cond_signal(&py_cond);
	pthread_mutex_unlock(&py_lock);
	mw_tls.guard--;
}

int mw_python_state(unsigned long *version)
{
	if (version)
		*version = py.version;
	return __atomic_load_n(&py_state, __ATOMIC_RELAXED);
}

const char *mw_python_state_name(int s)
{
	switch (s) {
	case MW_PY_UNSUPPORTED: return "unsupported";
	case MW_PY_WAITING: return "waiting";
	case MW_PY_ON: return "on";
	case MW_PY_OFF: return "off";
	case MW_PY_FINALIZED: return "finalized";
	default: return "none";
	}
}

/* ------------------------------------------------------------------------- */
/* Python frames: (qualified name, file, line) interned in a table of the
 * agent's own, in mmap'd storage, kept for the agent's life (a frame's id is
 * stable across captures; the snapshot names it by a hash of its content,
 * the same in every run). */

struct pyframe {
	uint64_t hash;
	const char *name, *file;
	uint32_t line;
};

#define PYF_MAX (1u << 20)
static pthread_mutex_t pyf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pyframe *pyf;            /* PYF_MAX entries, mapped on first use */
static uint32_t *pyf_index;            /* open-addressed: id + 1 */
static uint32_t pyf_n;
static char *str_chunk;
static size_t str_left;

static char *str_copy(const char *s, size_t n)
{
	char *r;
	if (n + 1 > str_left) {
		size_t len = n + 1 > 65536 ? (n + 1 + 4095) & ~(size_t)4095 : 65536;
		str_chunk = mw_map(len);
		if (!str_chunk) {
			str_left = 0;
			return NULL;
		}
		str_left = len;
	}
	r = str_chunk;
	memcpy(r, s, n);
	r[n] = 0;
	str_chunk += n + 1;
	str_left -= n + 1;
	return r;
}

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001B3ull;
	}
	return h;
}

/* The UTF-8 text of a str object, read directly (nothing is asked of the
 * interpreter, which could allocate): into buf, at most len bytes. */
static size_t read_str(const char *o, char *buf, size_t len)
{
	uint32_t state;
	size_t n, i, k = 0;
	unsigned kind;
	const char *data;

	if (!o)
		return 0;
	state = *(const uint32_t *)(o + lay.str_state);
	n = (size_t)*(const int64_t *)(o + lay.str_length);
	if (!(state & (1u << 5)) || (lay.str_ready_bit && !(state & (1u << 7))))
		return 0;                                     /* not compact, or not ready */
	kind = (state >> 2) & 7;
	if (state & (1u << 6)) {                              /* compact ASCII */
		if (n > len)
			n = len;
		memcpy(buf, o + lay.str_ascii_data, n);
		return n;
	}
	data = o + lay.str_compact_data;
	for (i = 0; i < n; i++) {
		uint32_t c = kind == 1 ? ((const uint8_t *)data)[i]
			   : kind == 2 ? ((const uint16_t *)data)[i] : ((const uint32_t *)data)[i];
		if (k + 4 > len)
			break;
		if (c < 0x80) {
			buf[k++] = (char)c;
		} else if (c < 0x800) {
			buf[k++] = (char)(0xC0 | (c >> 6));
			buf[k++] = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			buf[k++] = (char)(0xE0 | (c >> 12));
			buf[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
			buf[k++] = (char)(0x80 | (c & 0x3F));
		} else {
			buf[k++] = (char)(0xF0 | (c >> 18));
			buf[k++] = (char)(0x80 | ((c >> 12) & 0x3F));
			buf[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
			buf[k++] = (char)(0x80 | (c & 0x3F));
		}
	}
	return k;
}

/* The id of a Python frame, or 0 (a frame that could not be stored reads as
 * unknown). Called on the sampling path (the thread's guard is up). */
static uint32_t pyframe_id(const char *code, int line)
{
	char name[256], file[512];
	size_t nn = read_str(*(const char *const *)(code + lay.co_qualname), name, sizeof name);
	size_t fn = read_str(*(const char *const *)(code + lay.co_filename), file, sizeof file);
	uint64_t h = hash_bytes(0xCBF29CE484222325ull, name, nn);
	uint32_t id = 0, j;

	h = hash_bytes(h ^ 0xFF, file, fn);
	h = hash_bytes(h ^ 0xFE, (const char *)&line, sizeof line);
	h &= 0x7FFFFFFFFFFFFFFFull;
	h = h ? h : 1;
	pthread_mutex_lock(&pyf_lock);
	if (!pyf) {
		pyf = mw_map(PYF_MAX * sizeof *pyf);
		pyf_index = mw_map(2 * PYF_MAX * sizeof *pyf_index);
		if (!pyf || !pyf_index)
			goto out;
		pyf_n = 1;     /* id 0: unknown */
	}
	for (j = (uint32_t)h & (2 * PYF_MAX - 1); pyf_index[j]; j = (j + 1) & (2 * PYF_MAX - 1)) {
		const struct pyframe *f = &pyf[pyf_index[j] - 1];
		if (f->hash == h && f->line == (uint32_t)line && strlen(f->name) == nn &&
		    memcmp(f->name, name, nn) == 0 && strlen(f->file) == fn && memcmp(f->file, file, fn) == 0) {
			id = pyf_index[j] - 1;
			goto out;
		}
	}
	if (pyf_n < PYF_MAX) {
		struct pyframe *f = &pyf[pyf_n];
		f->name = str_copy(name, nn);
		f->file = str_copy(file, fn);
		if (f->name && f->file) {
			f->hash = h;
			f->line = line > 0 ? (uint32_t)line : 0;
			pyf_index[j] = pyf_n + 1;
			id = pyf_n++;
		}
	}
out:
	pthread_mutex_unlock(&pyf_lock);
	return id;
}

/* One Python frame of this thread: its id, and whether it is the first
 * (outermost) one a C call of the eval loop runs. */
struct pyf_ref {
	uint32_t id;
	bool entry;
};

#define PY_MAX_FRAMES 128   /* read per sample (1 KiB of the allocating thread's stack) */

/* Read this thread's Python frames, newest first. */
static unsigned read_frames(struct pyf_ref *out, unsigned max)
{
	const char *ts, *f;
	unsigned n = 0;

	if (!mw_python_frames || py.is_finalizing())
		return 0;
	ts = py.this_tstate();
	if (!ts)
		return 0;
	f = *(const char *const *)(ts + lay.ts_frame);
	if (lay.cframe && f)
		f = *(const char *const *)(f + PY_CFRAME_CURRENT);
	for (; f && n < max; f = *(const char *const *)(f + lay.f_previous)) {
		const char *code, *instr, *first;
		bool entry = lay.f_entry && *(const bool *)(f + lay.f_entry);
		/* 3.13: each C call of the eval loop starts its frames with one
		 * of its own (on the C stack), which runs no code */
		if (lay.f_owner && *(const char *)(f + lay.f_owner) == PY313_OWNED_BY_CSTACK) {
			if (n)
				out[n - 1].entry = true;
			continue;
		}
		code = *(const char *const *)(f + lay.f_code);
		if (!code || (py.code_type && *(const void *const *)(code + PY_OB_TYPE) != py.code_type))
			continue;
		instr = *(const char *const *)(f + lay.f_instr);
		first = code + lay.co_adaptive;
		/* a frame still being set up has run nothing yet: not shown, but
		 * its entry mark still ends its C call's frames */
		if (lay.co_firsttraceable &&
		    instr < first + (ptrdiff_t)*(const int *)(code + lay.co_firsttraceable) * 2) {
			if (entry && n)
				out[n - 1].entry = true;
			continue;
		}
		out[n].id = pyframe_id(code, py.addr2line((void *)code, (int)(instr - first)));
		out[n].entry = entry;
		n++;
	}
	return n;
}

unsigned mw_python_merge(const uintptr_t *ips, unsigned n, uintptr_t *out, unsigned max)
{
	struct pyf_ref pf[PY_MAX_FRAMES];
	unsigned np = read_frames(pf, PY_MAX_FRAMES), pi = 0, k = 0, i;

	for (i = 0; i < n && k < max; i++) {
		uintptr_t a = ips[i] - 1;
		/* the wrappers' own frames, under a sample the hooks took */
		if (mw_in_agent(ips[i]))
			continue;
		if (pi < np && a >= py.eval_lo && a < py.eval_hi) {
			/* this C call of the eval loop ran the frames up to the next
			 * entry frame */
			do
				out[k++] = MW_PYFRAME_TAG | pf[pi].id;
			while (!pf[pi++].entry && pi < np && k < max);
			continue;
		}
		out[k++] = ips[i];
	}
	/* frames whose eval call was not found (cut by the depth) go outermost */
	for (; pi < np && k < max && i == n; pi++)
		out[k++] = MW_PYFRAME_TAG | pf[pi].id;
	return k;
}

/* ------------------------------------------------------------------------- */
/* Snapshots: the Python frames a snapshot uses, as symbols of the pseudo-module
 * "[python]" whose offsets are the frames' content hashes. */

static int mw_python_symbol(uint32_t id, uint64_t *hash, struct snap_symframe *f)
{
	int r = -1;
	pthread_mutex_lock(&pyf_lock);
	if (pyf && id < pyf_n) {
		*hash = id ? pyf[id].hash : 0;
		f->function = strdup(id ? pyf[id].name : "<python>");
		f->file = id ? strdup(pyf[id].file) : NULL;
		f->line = id ? pyf[id].line : 0;
		r = f->function && (!id || f->file) ? 0 : -1;
	}
	pthread_mutex_unlock(&pyf_lock);
	return r;
}

/* fork: the child must not inherit the frame table's lock half-held; it has
 * no helper thread (a later capture starts one). */
void mw_python_atfork_prepare(void)
{
	pthread_mutex_lock(&pyf_lock);
}

void mw_python_atfork_parent(void)
{
	pthread_mutex_unlock(&pyf_lock);
}

void mw_python_atfork_child(void)
{
	pthread_mutex_init(&pyf_lock, NULL);
	pthread_mutex_init(&py_lock, NULL);
	pthread_cond_init(&py_cond, NULL);
	helper_running = false;
	want_installed = false;
	mw_python_frames = false;
	if (py_state == MW_PY_WAITING)
		py_state = MW_PY_OFF;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int mw_python_snapshot(struct snapshot *s)
{
	uint64_t *ids = NULL, *hashes = NULL;
	size_t n = 0, cap = 0, i, k, u = 0;
	struct snap_module *m;
	uint32_t mod;

	for (i = 0; i < s->nstacks; i++)
		for (k = 0; k < s->stacks[i].nframes; k++) {
			const struct snap_frame *f = &s->stacks[i].frames[k];
			if (f->module != SNAP_NO_MODULE || (f->offset & MW_PYFRAME_MASK) != MW_PYFRAME_TAG)
				continue;
			if (n == cap) {
				uint64_t *x = realloc(ids, (cap = cap ? cap * 2 : 256) * sizeof *ids);
				if (!x)
					goto fail;
				ids = x;
			}
			ids[n++] = f->offset & ~MW_PYFRAME_MASK;
		}
	if (!n)
		return 0;
	qsort(ids, n, sizeof *ids, cmp_u64);
	for (i = 0; i < n; i++)
		if (!u || ids[u - 1] != ids[i])
			ids[u++] = ids[i];
	hashes = calloc(u, sizeof *hashes);
	m = realloc(s->modules, (s->nmodules + 1) * sizeof *m);
	if (!hashes || !m)
		goto fail;
	s->modules = m;
	mod = (uint32_t)s->nmodules;
	memset(&m[mod], 0, sizeof m[mod]);
	m[mod].path = strdup("[python]");
	if (!m[mod].path)
		goto fail;
	s->nmodules++;
	s->symbols = calloc(u, sizeof *s->symbols);
	if (!s->symbols)
		goto fail;
	for (i = 0; i < u; i++) {
		struct snap_symbol *y = &s->symbols[s->nsymbols];
		y->frames = calloc(1, sizeof *y->frames);
		if (!y->frames || mw_python_symbol((uint32_t)ids[i], &hashes[i], y->frames) < 0) {
			if (y->frames) {
				free(y->frames->function);
				free(y->frames->file);
			}
			free(y->frames);
			y->frames = NULL;
			goto fail;
		}
		y->module = mod;
		y->offset = hashes[i];
		y->nframes = 1;
		s->nsymbols++;
	}
	for (i = 0; i < s->nstacks; i++)
		for (k = 0; k < s->stacks[i].nframes; k++) {
			struct snap_frame *f = &s->stacks[i].frames[k];
			uint64_t id, *at;
			if (f->module != SNAP_NO_MODULE || (f->offset & MW_PYFRAME_MASK) != MW_PYFRAME_TAG)
				continue;
			id = f->offset & ~MW_PYFRAME_MASK;
			at = bsearch(&id, ids, u, sizeof *ids, cmp_u64);
			f->module = mod;
			f->offset = at ? hashes[at - ids] : 0;
		}
	free(ids);
	free(hashes);
	return 0;
fail:
	free(ids);
	free(hashes);
	return -1;
}
