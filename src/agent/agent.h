/* agent.h: what the parts of libmemwatch-agent.so share: the hot per-thread state,
 * the capture settings, the original allocator entry points, and the functions
 * each file offers the others, grouped by the file that defines them. Nothing
 * here is exported from the library.
 *
 * The core's files use each other one way only, top to bottom:
 *   agent.c    entry points (constructor, memwatch_agent_start), fork, exit
 *   server.c   the control thread: requests, status
 *   collect.c  a snapshot of the process, built and encoded
 *   capture.c  the capture state: start, stop, epochs
 *   runtimes.c the list of language runtimes and the core's calls to them
 *   hooks.c    GOT patching (patch.c), the hooks, the mmap family's table
 *   heap.c     the sampler, the live-sample table (heap.h), the shared state;
 *              heap-copy.c its figures and copies read out
 *   stacks.c   the interned stacks (stacks.h: the heap files' alone);
 *              stack-cache.c a thread's stacks found again (stack-cache.h)
 * The language runtimes (runtime.h) are reached only through runtimes.c's
 * table, and name no file of the core but this header:
 *   python.c   CPython: its allocator domains wrapped; pyframes.c its frames
 *              read at each sample, pytypes.c the types of sampled objects,
 *              pyrefs*.c the referrer search, pyfree.c its free lists,
 *              pyversions.c the layouts of each version (python.h)
 *   js.c       node: V8's sampling heap profiler, read at each snapshot;
 *              js-find.c its threads found, js-profile.c its profile read
 *              (js.h), v8api.c V8's API by name, v8layout.c per V8 version
 * A file lower down never calls one higher up: heap.c learns what it needs
 * from them through data they set (mw_self_lo/hi, mw_frames_hook). */
#ifndef MEMWATCH_AGENT_H
#define MEMWATCH_AGENT_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"

#define MW_HIDDEN __attribute__((visibility("hidden")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define MW_DEFAULT_RATE (512 * 1024)
#define MW_DEFAULT_DEPTH 64
#define MW_MAX_DEPTH MEMWATCH_MAX_DEPTH
#define MW_DEFAULT_MAX_STACKS 100000
#define MW_DEFAULT_UNWIND_THREADS 128   /* threads that may keep libunwind's frame cache */

/* The language runtimes and the moments the core calls them at. */
#include "runtime.h"

/* ================================================================ heap.c
 * The sampler, the live-sample table, and the state every other file reads;
 * its stacks are interned by stacks.c (stacks.h). It uses no file of the
 * agent above it. */

/* The hot thread-local state, initial-exec so that touching it is one
 * %fs-relative access and never a call into the loader (which could allocate).
 * Kept at 24 bytes: a dlopen'ed agent shares a small static TLS surplus. */
struct mw_tls {
	uint64_t left;     /* bytes (+1 per allocation) until the next sample point */
	uint64_t rng;      /* xorshift64* state; 0 = not seeded yet */
	uint32_t epoch;    /* the capture that left was drawn for */
	uint16_t guard;    /* > 0 while the agent itself runs on this thread */
	uint8_t locked;    /* this thread holds (or is taking) the heap lock */
	uint8_t unw;       /* enum mw_unw_slot: may it use libunwind's frame cache */
	void *sc;          /* stack-cache.c's table of this thread (its key's value) */
	uint32_t owed;     /* the sample point is owed to the next allocation of this
			    * size class (pyfree.c), the countdown held at 0 meanwhile */
	uint32_t owed_tries;   /* allocations of other sizes left before it is not */
};
extern __thread struct mw_tls mw_tls __attribute__((tls_model("initial-exec"))) MW_HIDDEN;

/* Count size bytes against this thread's countdown before the call: true when
 * this is not a sample point, so that the hooks' (and the CPython wrappers')
 * common path ends in a tail jump to the allocator with no frame of ours. */
static inline __attribute__((always_inline)) bool mw_unsampled(size_t size, int epoch)
{
	uint64_t left = mw_tls.left;
	if (likely(size < left && mw_tls.epoch == (uint32_t)epoch)) {
		mw_tls.left = left - size - 1;
		return true;
	}
	return false;
}

/* In the slow path, with a sample point owed to a size class (mw_tls.owed): true
 * for an allocation of another size, which is then passed on unsampled. After
 * owed_tries of them the point falls where the countdown says. */
static inline bool mw_owed_other(size_t size)
{
	struct mw_tls *t = &mw_tls;
	if (likely(!t->owed) || size == t->owed)
		return false;
	if (--t->owed_tries == 0) {
		t->owed = 0;
		return false;
	}
	return true;
}

/* One turn of a wait for a lock or flag another thread holds for a moment:
 * spin (with a pause) for the first 128 turns, then yield the processor. */
static inline void mw_spin_turn(unsigned *n)
{
	if (++*n < 128)
		__builtin_ia32_pause();
	else
		sched_yield();
}

/* The agent's locks (heap.c, stacks.c) are spin locks that yield the
 * processor when they are held for long: a thread in the allocation path never
 * sleeps in the kernel on one of them (a futex storm, when every allocation is
 * sampled, cost more than the sampling itself), and none is ever held across a
 * call out of the agent. */
typedef int mw_spin_t;
void mw_spin_lock(mw_spin_t *l) MW_HIDDEN;
static inline void mw_spin_unlock(mw_spin_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* What every hook reads, in a cache line of its own, apart from anything that
 * is written while capturing (the heap lock, counters), so that sampling on one
 * thread does not make the hooks of the others miss.
 * capturing: 0 when off, else the capture's epoch (a new one at every start, so
 * that countdowns drawn for an earlier capture and another rate are redrawn). */
struct mw_hot {
	int capturing;
} __attribute__((aligned(64)));
extern struct mw_hot mw_hot MW_HIDDEN;
extern uint64_t mw_rate MW_HIDDEN;         /* R, mean bytes between samples; 1 = every allocation */
extern unsigned mw_depth MW_HIDDEN;        /* frame limit */
extern uint64_t mw_max_stacks MW_HIDDEN;
extern uint64_t mw_capture_start_ns MW_HIDDEN;  /* set by capture.c */

/* Storage that never goes through the hooked allocator. */
void *mw_map(size_t len) MW_HIDDEN;                 /* zeroed, page-rounded; NULL on failure */
void mw_unmap(void *p, size_t len) MW_HIDDEN;
/* Room for element n of the array *v (of *cap elements of elsize bytes, from
 * mw_map): doubled, copied and the old one unmapped when full. False when no
 * memory could be mapped (*v unchanged). */
bool mw_grow(void **v, size_t n, size_t *cap, size_t elsize) MW_HIDDEN;

/* The wall clock (CLOCK_REALTIME), as snapshots and the peak are stamped and
 * the CLI reads them; the short waits that use it end early, never late, if
 * the clock is set meanwhile. */
uint64_t mw_now_ns(void) MW_HIDDEN;

void *mw_sampled_alloc(void *p, size_t size) MW_HIDDEN;   /* slow path after a sample point */
void mw_sampled_free(const void *p) MW_HIDDEN;            /* remove the record of p, if any */
/* A mapping (or brk growth) of len bytes at p that crossed the countdown:
 * record it with kind (SNAP_STACK_MMAP, alone or with SNAP_STACK_BRK or
 * SNAP_STACK_FILE). Called with mw_tls.guard 1 (the hook's own); true when
 * recorded. */
bool mw_sampled_mmap(void *p, size_t len, uint32_t kind) MW_HIDDEN;
/* realloc: take p's record out (returns true and its fields when there was one),
 * and put it back if the realloc failed. */
struct mw_taken { uint64_t bytes, blocks_fx; uint32_t stack; uint16_t tick; };
bool mw_take_record(const void *p, struct mw_taken *t) MW_HIDDEN;
void mw_put_record(const void *p, const struct mw_taken *t) MW_HIDDEN;
void mw_heap_reset(void) MW_HIDDEN;                      /* drop every record and stack */
/* Around the use of mw_heap_copy_stacks's frames: no reset meanwhile. */
void mw_snapshot_begin(void) MW_HIDDEN;
void mw_snapshot_end(void) MW_HIDDEN;
void mw_heap_configure(uint64_t rate, unsigned depth, uint64_t max_stacks) MW_HIDDEN;
/* unwind.c: the calling thread's stack for a sample (see there). */
int mw_unwind(uintptr_t *ips, int cap) MW_HIDDEN;
int mw_unwind_walk_sp(uintptr_t *ips, uintptr_t *sps, int cap, bool *clean) MW_HIDDEN;
bool mw_unwind_has_slot(void) MW_HIDDEN;
void mw_unwind_init(void) MW_HIDDEN;
void mw_unwind_threads(unsigned n) MW_HIDDEN;               /* the unwind-threads option */
void mw_unwind_atfork_child(void) MW_HIDDEN;
void mw_heap_atfork_prepare(void) MW_HIDDEN;
void mw_heap_atfork_parent(void) MW_HIDDEN;
void mw_heap_atfork_child(void) MW_HIDDEN;
/* A 64-bit mixer (splitmix64's finalizer): seeds, stack hashes. */
static inline uint64_t mw_splitmix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* gaps.c: the random gaps and the sample weights (see there). Block counts
 * are kept in fixed point, FX per block. */
#define FX 65536.0
extern double mw_inv_rate MW_HIDDEN;        /* 1 / mw_rate, set with it */
void mw_reseed(void) MW_HIDDEN;             /* this thread draws its gap anew */
void mw_seed(struct mw_tls *t) MW_HIDDEN;
void mw_gaps_init(void) MW_HIDDEN;         /* before the first draw; idempotent */
double mw_log(double x) MW_HIDDEN;
double mw_expm1(double x) MW_HIDDEN;        /* x <= 0 */
uint64_t mw_draw_gap(struct mw_tls *t) MW_HIDDEN;
void mw_weights(uint64_t size, uint64_t *bytes, uint64_t *blocks_fx) MW_HIDDEN;
/* Around the agent's own use of libunwind and the loader (loader.c), and
 * around fork (heap.c's atfork handlers call these first, last and first). */
void mw_loader_enter(void) MW_HIDDEN;
void mw_loader_leave(void) MW_HIDDEN;
void mw_loader_atfork_prepare(void) MW_HIDDEN;
void mw_loader_atfork_parent(void) MW_HIDDEN;
void mw_loader_atfork_child(void) MW_HIDDEN;
/* This process was forked while the agent was inside libunwind or the loader:
 * their locks may be held for good, so capture is refused here. */
extern bool mw_fork_tainted MW_HIDDEN;

/* The filter in front of the live-sample table: one bit per hash bucket of
 * sampled addresses, read without a lock, so that the free of a block that was
 * not sampled (nearly all of them) costs one load from a bitmap whose few
 * lines in use stay in cache. A saturating counter per bucket, touched only on
 * the sampled paths under the heap lock, says when a bit may be cleared. Both
 * are static (untouched pages cost nothing) and page-aligned, so that a reset
 * can give their pages back. The index's top bits are the address's 64 MiB
 * region (glibc gives each thread's arena a heap of its own, 64 MiB aligned),
 * the rest a hash of the address: the threads' samples fall in different
 * shards of the table (heap.c), and a region's 16384 buckets keep the false
 * hits low while it holds at most 64 MiB / R samples. */
#define MW_FILTER_BITS 20
#define MW_REGION_BITS 6
extern uint64_t mw_filter_bits[((size_t)1 << MW_FILTER_BITS) / 64] MW_HIDDEN;
static inline size_t mw_filter_index(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	return (((a >> 26) & ((1u << MW_REGION_BITS) - 1)) << (MW_FILTER_BITS - MW_REGION_BITS)) |
	       (size_t)(((a >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - MW_FILTER_BITS + MW_REGION_BITS));
}
/* False: p is surely not a sampled block. True: it may be; look it up. */
static inline bool mw_maybe_sampled(const void *p)
{
	size_t i = mw_filter_index(p);
	return (__atomic_load_n(&mw_filter_bits[i >> 6], __ATOMIC_RELAXED) >> (i & 63)) & 1;
}

/* Figures for status and snapshots, copied under the heap lock (heap-copy.c). */
struct mw_stack_copy {
	uint32_t flags, nframes;
	const uintptr_t *frames;     /* interned, stable until mw_heap_reset */
	uint64_t live_bytes, live_blocks, live_samples, alloc_bytes, alloc_blocks;
	uint64_t temp_bytes, temp_blocks;   /* of blocks freed soon after their allocation */
};
/* How soon after its allocation a freed block counts as temporary. */
uint64_t mw_temp_window_ns(void) MW_HIDDEN;
struct mw_heap_figures {
	uint64_t samples;            /* samples taken since capture start */
	uint64_t live_samples;
	uint64_t live_bytes;         /* estimated */
	uint64_t stacks;
	uint64_t dropped_stacks;
	uint64_t dropped_bytes;
};
void mw_heap_figures(struct mw_heap_figures *f) MW_HIDDEN;
/* The high-water mark of the estimated live heap (heap.c), read without a
 * lock by the control thread: live is the running total, count the peaks
 * marked since the agent started (it never goes back, so a client sees a new
 * one by the count), bytes and ns (CLOCK_MONOTONIC) the last one's. */
struct mw_peak {
	uint64_t live, next, bytes, ns, count;
};
extern struct mw_peak mw_peak MW_HIDDEN;
/* Copy every stack into a malloc'd array (*out, caller frees). -1 on ENOMEM. */
int mw_heap_copy_stacks(struct mw_stack_copy **out, size_t *n, struct mw_heap_figures *f) MW_HIDDEN;
/* One live sampled block: its address, stack id (the index of
 * mw_heap_copy_stacks) and the weights it stands for. */
struct mw_live_copy {
	uintptr_t addr;
	uint32_t stack;
	uint64_t bytes, blocks_fx;   /* blocks in units of 1/FX */
};
/* Copy the live sampled blocks, at most max of them, into a malloc'd array
 * (*out, caller frees). -1 on ENOMEM. */
int mw_heap_copy_live(struct mw_live_copy **out, size_t *n, size_t max) MW_HIDDEN;

/* The agent's own executable segment(s), set by hooks.c at init: its frames
 * are left out of recorded stacks (heap.c, pyframes.c). */
extern uintptr_t mw_self_lo MW_HIDDEN, mw_self_hi MW_HIDDEN;
static inline bool mw_in_agent(uintptr_t ip)
{
	return ip >= mw_self_lo && ip < mw_self_hi;
}
/* A runtime's frames merged into a native stack at sample time: see
 * mw_frames_hook (runtime.h). */

/* ================================================================ hooks.c, patch.c
 * The hooks (hooks.c) and the GOT patching that puts them in place (patch.c,
 * the mw_hooks_* functions); both use heap.c. */

/* The functions the hooks stand in for, in slot order. */
enum mw_func {
	F_MALLOC, F_CALLOC, F_REALLOC, F_REALLOCARRAY, F_FREE, F_POSIX_MEMALIGN,
	F_ALIGNED_ALLOC, F_MEMALIGN, F_VALLOC, F_PVALLOC, F_DLOPEN,
	F_MMAP, F_MMAP64, F_MUNMAP, F_MREMAP, F_BRK, F_SBRK,
	/* mimalloc's own API (mimalloc.c) */
	F_MI_MALLOC, F_MI_CALLOC, F_MI_REALLOC, F_MI_FREE, F_MI_ZALLOC, F_MI_MALLOCN,
	F_MI_REALLOCN, F_MI_REALLOCF, F_MI_STRDUP, F_MI_STRNDUP, F_MI_MALLOC_ALIGNED,
	F_MI_ZALLOC_ALIGNED, F_MI_CALLOC_ALIGNED, F_MI_REALLOC_ALIGNED, F_MI_MALLOC_SMALL,
	F_MI_ZALLOC_SMALL, F_MI_FREE_SIZE, F_MI_FREE_ALIGNED, F_MI_FREE_SIZE_ALIGNED,
	F_COUNT
};

/* The allocator's own entry points (what a patched slot pointed to), resolved
 * through the global scope so that a preloaded jemalloc or tcmalloc is respected. */
struct __attribute__((aligned(64))) mw_orig {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*dlopen)(const char *, int);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	void *(*mmap64)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	void *(*mremap)(void *, size_t, size_t, int, ...);
	int (*brk)(void *);
	void *(*sbrk)(intptr_t);
	/* mimalloc's, where a module defines them (else NULL: never hooked) */
	void *(*mi_malloc)(size_t);
	void *(*mi_calloc)(size_t, size_t);
	void *(*mi_realloc)(void *, size_t);
	void (*mi_free)(void *);
	void *(*mi_zalloc)(size_t);
	void *(*mi_mallocn)(size_t, size_t);
	void *(*mi_reallocn)(void *, size_t, size_t);
	void *(*mi_reallocf)(void *, size_t);
	char *(*mi_strdup)(const char *);
	char *(*mi_strndup)(const char *, size_t);
	void *(*mi_malloc_aligned)(size_t, size_t);
	void *(*mi_zalloc_aligned)(size_t, size_t);
	void *(*mi_calloc_aligned)(size_t, size_t, size_t);
	void *(*mi_realloc_aligned)(void *, size_t, size_t);
	void *(*mi_malloc_small)(size_t);
	void *(*mi_zalloc_small)(size_t);
	void (*mi_free_size)(void *, size_t);
	void (*mi_free_aligned)(void *, size_t);
	void (*mi_free_size_aligned)(void *, size_t, size_t);
};
extern struct mw_orig mw_orig MW_HIDDEN;
/* The hooks, in the same order (hooks.c): what patch.c writes into slots. */
extern void *const mw_hook_fn[F_COUNT] MW_HIDDEN;

/* mimalloc.c: the hooks of mimalloc's own API, in mw_hook_fn */
void *mw_hk_mi_malloc(size_t n) MW_HIDDEN;
void *mw_hk_mi_calloc(size_t a, size_t b) MW_HIDDEN;
void *mw_hk_mi_realloc(void *p, size_t n) MW_HIDDEN;
void mw_hk_mi_free(void *p) MW_HIDDEN;
void *mw_hk_mi_zalloc(size_t n) MW_HIDDEN;
void *mw_hk_mi_mallocn(size_t a, size_t b) MW_HIDDEN;
void *mw_hk_mi_reallocn(void *p, size_t a, size_t b) MW_HIDDEN;
void *mw_hk_mi_reallocf(void *p, size_t n) MW_HIDDEN;
char *mw_hk_mi_strdup(const char *s) MW_HIDDEN;
char *mw_hk_mi_strndup(const char *s, size_t max) MW_HIDDEN;
void *mw_hk_mi_malloc_aligned(size_t n, size_t align) MW_HIDDEN;
void *mw_hk_mi_zalloc_aligned(size_t n, size_t align) MW_HIDDEN;
void *mw_hk_mi_calloc_aligned(size_t a, size_t b, size_t align) MW_HIDDEN;
void *mw_hk_mi_realloc_aligned(void *p, size_t n, size_t align) MW_HIDDEN;
void *mw_hk_mi_malloc_small(size_t n) MW_HIDDEN;
void *mw_hk_mi_zalloc_small(size_t n) MW_HIDDEN;
void mw_hk_mi_free_size(void *p, size_t n) MW_HIDDEN;
void mw_hk_mi_free_aligned(void *p, size_t align) MW_HIDDEN;
void mw_hk_mi_free_size_aligned(void *p, size_t n, size_t align) MW_HIDDEN;

int mw_hooks_init(char **why) MW_HIDDEN;            /* resolve originals, find our own module */
int mw_hooks_install(bool blocking) MW_HIDDEN;      /* patch every module; slots patched, or -1 if busy */
int mw_hooks_refresh(bool blocking) MW_HIDDEN;      /* the same, only while installed (new modules) */
void mw_hooks_remove(void) MW_HIDDEN;               /* restore every slot we changed */
bool mw_hooks_installed(void) MW_HIDDEN;
unsigned mw_hooks_slots(void) MW_HIDDEN;
bool mw_modules_changed(void) MW_HIDDEN;            /* dlpi_adds moved since the last patch */
void mw_hooks_atfork_prepare(void) MW_HIDDEN;
void mw_hooks_atfork_parent(void) MW_HIDDEN;
void mw_hooks_atfork_child(void) MW_HIDDEN;
/* The mmap family's hooks keep a table of the sampled mappings. Around
 * mw_heap_reset (capture.c): the table is emptied and no hook touches it
 * meanwhile. */
void mw_maps_reset_begin(void) MW_HIDDEN;
void mw_maps_reset_end(void) MW_HIDDEN;
void mw_maps_atfork_child(void) MW_HIDDEN;
extern size_t mw_page_size MW_HIDDEN;  /* set by mw_hooks_init (patch.c) */

/* ================================================================ capture.c
 * The capture state; uses hooks.c, the runtimes and heap.c. */

/* Start capture at these settings, unless it runs already: a new epoch, the
 * tables emptied, the hooks installed. 0, or -1 in a child forked while
 * the agent was inside libunwind or the loader (mw_fork_tainted). */
int mw_capture_start(uint64_t rate, unsigned depth, uint64_t max_stacks) MW_HIDDEN;
/* Stop capture, empty the tables; remove_hooks: restore every slot too. */
void mw_capture_stop(bool remove_hooks) MW_HIDDEN;
/* In the child of a fork: capture off, or, with go_on, on again from scratch
 * under a new epoch (memwatch run --children). Returns go_on. */
bool mw_capture_atfork_child(bool go_on) MW_HIDDEN;

/* ================================================================ collect.c
 * A snapshot of this process; uses hooks.c, the runtimes and heap.c. */

/* Build and encode a snapshot of this process (*buf malloc'd, caller frees),
 * with what the runtimes add, waiting at most wait_ns for a runtime's thread
 * (MW_RUNTIME_WAIT_NS). refs_ns: a referrer search bounded by that time (0:
 * none), and by refs_objects objects traversed. 0, or -1 (out of memory). */
int mw_collect(unsigned char **buf, size_t *len, uint64_t wait_ns, uint64_t refs_ns,
	       uint64_t refs_objects) MW_HIDDEN;
/* Write a snapshot of this process into fd from offset 0 (the snapshot at exit). */
int mw_collect_write(int fd) MW_HIDDEN;

/* ================================================================ server.c
 * The control thread; uses collect.c, capture.c, hooks.c, the runtimes and heap.c. */

int mw_server_start(char **why) MW_HIDDEN;    /* socket bound and thread running, or -1 */
void mw_server_atfork_child(void) MW_HIDDEN;  /* the thread is gone in the child */
int mw_server_pid(void) MW_HIDDEN;            /* pid the running server belongs to, 0 if none */

/* ================================================================ agent.c
 * The entry points; uses every file above. */

/* Settings from the option string (memwatch_agent_start / MEMWATCH_AGENT_OPTIONS). */
struct mw_options {
	bool capture_now;
	uint64_t rate;
	unsigned depth;
	uint64_t max_stacks;
	unsigned unwind_threads; /* threads alive at once that unwind with a frame cache */
	bool children;         /* a forked child keeps sampling under its own socket */
	int pid;               /* preload: start only in this process (0: any) */
	int exit_fd;           /* memwatch run: write a last snapshot into this file at */
	uint64_t exit_ino;     /*   exit, if it is still the file of this inode and */
	int exit_pid;          /*   this is the process (-1/0: none) */
};

int mw_parse_options(const char *s, struct mw_options *o) MW_HIDDEN;

#endif
