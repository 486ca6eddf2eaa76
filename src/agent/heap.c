/* heap.c: the sampler (Poisson sampling by bytes, its gaps drawn by gaps.c,
 * its stacks walked by unwind.c and interned by stacks.c), the table of live
 * sampled blocks with their per-stack figures (heap.h; read out by
 * heap-copy.c), and the locks around them (stacks.c's own is taken inside a
 * shard's). Everything here is reached from
 * inside the target's malloc and free: storage comes from mmap, never from
 * the allocator being watched. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "snapshot.h"
#include "heap.h"
#include "stack-cache.h"
#include "stacks.h"

__thread struct mw_tls mw_tls __attribute__((tls_model("initial-exec")));
uint64_t mw_filter_bits[((size_t)1 << MW_FILTER_BITS) / 64] __attribute__((aligned(4096)));
/* one saturating counter per filter bucket */
static uint8_t filter_counts[(size_t)1 << MW_FILTER_BITS] __attribute__((aligned(4096)));
struct mw_hot mw_hot;
uint64_t mw_rate = MW_DEFAULT_RATE;
unsigned mw_depth = MW_DEFAULT_DEPTH;
uint64_t mw_max_stacks = MW_DEFAULT_MAX_STACKS;
uint64_t mw_capture_start_ns;
uintptr_t mw_self_lo, mw_self_hi;
mw_merge_fn *mw_frames_hook;

/* A runtime's frames on or off (see runtime.h). */
void mw_runtime_frames(const struct mw_runtime *rt, bool on)
{
	mw_merge_fn *mine = rt->frames;
	if (on)
		__atomic_store_n(&mw_frames_hook, mine, __ATOMIC_RELAXED);
	else if (mine)
		__atomic_compare_exchange_n(&mw_frames_hook, &mine, NULL, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
}

/* A block freed within TEMP_TICKS ticks of its allocation is temporary
 * (heaptrack's word: memory that was hardly used). A tick is 2^20 ns (about
 * 1.05 ms) of the coarse monotonic clock, kept in 16 bits. The coarse clock
 * (the time of the last timer interrupt: 1 to 10 ms old, by the kernel's HZ)
 * costs a fifth of the precise one, which at a sample rate of 1, where it is
 * read at every allocation and free, added a quarter to the agent's cost;
 * ages are known to that resolution. They are also known only modulo 2^36 ns
 * (68.7 s): a block freed within the window of a multiple of 68.7 s after its
 * allocation is counted too (one free in about 6500 of long-lived blocks). */
#define TICK_SHIFT 20
#define TEMP_TICKS 10
static uint16_t now_tick(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint16_t)(((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) >> TICK_SHIFT);
}

uint64_t mw_temp_window_ns(void)
{
	return (uint64_t)TEMP_TICKS << TICK_SHIFT;
}

/* A block weight as the live table keeps it: in units of 1/256 of a block,
 * saturated (at a rate of GiBs); every weight added to or taken from the
 * figures goes through it, so that a block's free takes away exactly what its
 * sample added. */
static uint64_t blocks_q(uint64_t wn)
{
	uint64_t q = (wn + (1u << (BLOCKS_Q_SHIFT - 1))) >> BLOCKS_Q_SHIFT;
	return (q > UINT32_MAX ? UINT32_MAX : q) << BLOCKS_Q_SHIFT;
}

void mw_spin_lock(mw_spin_t *l)
{
	unsigned n = 0;
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
			mw_spin_turn(&n);
		}
	}
}

struct shard shards[NSHARDS];

static struct shard *shard_of(uintptr_t p)
{
	return &shards[mw_filter_index((void *)p) >> (MW_FILTER_BITS - SHARD_BITS)];
}

/* Frees that a signal handler made while its thread held (or was taking) an
 * agent lock: they cannot wait for a lock their own thread may hold, so they
 * are parked here and applied by whoever next lets go of a lock. */
#define PENDING_SLOTS 64
static uintptr_t pending[PENDING_SLOTS];
static unsigned pending_count;

void *mw_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void mw_unmap(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

bool mw_grow(void **v, size_t n, size_t *cap, size_t elsize)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 256;
	if (!(nv = mw_map(ncap * elsize)))
		return false;
	if (*v) {
		memcpy(nv, *v, n * elsize);
		mw_unmap(*v, *cap * elsize);
	}
	*v = nv;
	*cap = ncap;
	return true;
}

uint64_t mw_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------------- */
/* Locking. mw_tls.locked is set before taking any agent lock, so that a signal
 * handler that frees a sampled block on this thread meanwhile parks the free
 * instead of waiting for a lock its own thread may hold. Lock order: a shard,
 * then mw_intern_lock; several shards only in index order. */

static void remove_live_locked(struct shard *sh, uintptr_t p, struct mw_taken *t);
static void freed_flush(struct shard *sh);
static void peak_pass(struct shard *sh);
static void freed_settle(struct shard *sh, uintptr_t p);

static void lock_shard(struct shard *sh)
{
	mw_tls.locked = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	mw_spin_lock(&sh->lock);
}

/* Apply the parked frees, one shard at a time; called with no lock held and
 * mw_tls.locked still set. */
static void drain_pending(void)
{
	unsigned i;
	if (!__atomic_load_n(&pending_count, __ATOMIC_ACQUIRE))
		return;
	for (i = 0; i < PENDING_SLOTS; i++) {
		uintptr_t p = __atomic_exchange_n(&pending[i], 0, __ATOMIC_ACQ_REL);
		if (p) {
			struct shard *sh = shard_of(p);
			__atomic_fetch_sub(&pending_count, 1, __ATOMIC_ACQ_REL);
			mw_spin_lock(&sh->lock);
			remove_live_locked(sh, p, NULL);
			mw_spin_unlock(&sh->lock);
		}
	}
}

static void unlock_shard(struct shard *sh)
{
	mw_spin_unlock(&sh->lock);
	drain_pending();
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	mw_tls.locked = 0;
}

/* Every lock, for a reset, a fork, or a change of settings. */
void heap_lock_all(void)
{
	unsigned i;
	mw_tls.locked = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	for (i = 0; i < NSHARDS; i++)
		mw_spin_lock(&shards[i].lock);
	mw_spin_lock(&mw_intern_lock);
	for (i = 0; i < NSHARDS; i++) {
		freed_flush(&shards[i]);
		if (shards[i].peak_held)
			peak_pass(&shards[i]);
	}
}

void heap_unlock_all(void)
{
	unsigned i;
	mw_spin_unlock(&mw_intern_lock);
	for (i = NSHARDS; i-- > 0;)
		mw_spin_unlock(&shards[i].lock);
	drain_pending();
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	mw_tls.locked = 0;
}

/* Park a free for the lock holder. A full parking lot drops it: the record
 * then lingers until its address is sampled again or the capture ends. */
static void park_free(uintptr_t p)
{
	unsigned i;
	for (i = 0; i < PENDING_SLOTS; i++) {
		uintptr_t zero = 0;
		if (__atomic_compare_exchange_n(&pending[i], &zero, p, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			__atomic_fetch_add(&pending_count, 1, __ATOMIC_ACQ_REL);
			return;
		}
	}
}

/* ------------------------------------------------------------------------- */
/* The filter (its counters are guarded by the lock of the bucket's shard). */

/* Store the word of the filter that holds bucket i. The 64 buckets of a word
 * belong to one shard (its index's top bits, MW_REGION_BITS of them, are the
 * shard, and the word is the index less its low 6 bits), so every writer of
 * the word holds that shard's lock: a plain store does, where the locked
 * read-modify-write that it replaced cost a tenth of the agent's time with
 * every allocation sampled. The hooks read the word without a lock; a block
 * is published to another thread only after its sample set the bit. */
_Static_assert(MW_FILTER_BITS - SHARD_BITS >= 6, "a filter word lies in one shard");
static void filter_set(size_t i, uint64_t word)
{
	__atomic_store_n(&mw_filter_bits[i >> 6], word, __ATOMIC_RELEASE);
}

/* At a rate of 1 nearly every block is sampled, so the filter can tell no
 * free apart: it is kept full (every bit set, set_filter_full) and its
 * counters are left alone. Their upkeep read a counter that was a cache miss
 * at most samples and frees: a sixth of the agent's time on bench/workload's
 * churn, on two threads. A block not sampled (allocated before the capture,
 * or by the agent) takes the free's slow path and is not found. Changed under
 * every lock. */
static bool filter_full;

static void filter_inc(uintptr_t p)
{
	size_t i = mw_filter_index((void *)p);
	uint8_t v;
	if (filter_full)
		return;
	v = filter_counts[i];
	if (v == 255)
		return;
	filter_counts[i] = (uint8_t)(v + 1);
	if (v == 0)
		filter_set(i, __atomic_load_n(&mw_filter_bits[i >> 6], __ATOMIC_RELAXED) |
				      (uint64_t)1 << (i & 63));
}

/* A saturated counter stays saturated (and its bit set): it no longer knows
 * how many it counts. */
static void filter_dec(uintptr_t p)
{
	size_t i = mw_filter_index((void *)p);
	uint8_t v;
	if (filter_full)
		return;
	v = filter_counts[i];
	if (v == 255 || v == 0)
		return;
	filter_counts[i] = (uint8_t)(v - 1);
	if (v == 1)
		filter_set(i, __atomic_load_n(&mw_filter_bits[i >> 6], __ATOMIC_RELAXED) &
				      ~((uint64_t)1 << (i & 63)));
}

/* Pass a shard's pending changes on to their stack. Under the shard's lock. */
static void flush_delta(struct delta *d)
{
	struct stack *s = stack_at(d->id1 - 1);
	__atomic_fetch_add(&s->live_bytes, d->d[D_LIVE_BYTES], __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->live_blocks_fx, d->d[D_LIVE_BLOCKS_FX], __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->live_samples, d->d[D_LIVE_SAMPLES], __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->alloc_bytes, d->d[D_ALLOC_BYTES], __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->alloc_blocks_fx, d->d[D_ALLOC_BLOCKS_FX], __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->temp_bytes, d->d[D_TEMP_BYTES], __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->temp_blocks_fx, d->d[D_TEMP_BLOCKS_FX], __ATOMIC_RELAXED);
	memset(d, 0, sizeof *d);
}

/* The shard's pending changes for stack id (a valid, published one). */
static uint64_t *shard_delta(struct shard *sh, uint32_t id)
{
	struct delta *d = &sh->delta[id & (DELTAS - 1)];
	if (d->id1 != id + 1) {
		if (d->id1)
			flush_delta(d);
		d->id1 = id + 1;
	}
	return d->d;
}

/* The high-water mark of the live sampled heap: the running total of every
 * live sample's weight (kept beside the shards' figures, whose sum needs every
 * lock), and the total that marks the next peak. A sample that takes the total
 * past it costs one compare more; marking is rare (each mark raises the next
 * one by 10 % and at least 8 MiB), and a lost race between two threads only
 * marks twice. Each shard holds its changes back until they reach PEAK_HELD
 * either way (at the default rate a sample weighs more, and goes at once):
 * with every allocation sampled, the one total's cache line passed between
 * the threads at every malloc and free, a sixth of the agent's time on two
 * threads. The total is late by at most PEAK_HELD a shard (64 KiB x
 * NSHARDS in all, a small part of PEAK_STEP in practice); every reader of the
 * whole table (heap_lock_all) brings it up to date. */
#define PEAK_FIRST ((uint64_t)8 << 20)
#define PEAK_STEP ((uint64_t)8 << 20)
#define PEAK_HELD ((int64_t)64 << 10)
struct mw_peak mw_peak = { .next = PEAK_FIRST };

/* The total passed the next mark: record the peak, raise the mark. */
static __attribute__((noinline, cold)) void peak_mark(uint64_t total)
{
	uint64_t next = total + total / 10;
	if (next < total + PEAK_STEP)
		next = total + PEAK_STEP;
	__atomic_store_n(&mw_peak.bytes, total, __ATOMIC_RELAXED);
	__atomic_store_n(&mw_peak.ns, mw_now_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&mw_peak.next, next, __ATOMIC_RELAXED);
	__atomic_fetch_add(&mw_peak.count, 1, __ATOMIC_RELEASE);
}

/* Add what shard sh held back to the running total. Under its lock. */
static void peak_pass(struct shard *sh)
{
	int64_t h = sh->peak_held;
	uint64_t total;
	sh->peak_held = 0;
	total = __atomic_add_fetch(&mw_peak.live, (uint64_t)h, __ATOMIC_RELAXED);
	if (h > 0 && total > __atomic_load_n(&mw_peak.next, __ATOMIC_RELAXED))
		peak_mark(total);
}

/* Add (sign 1) or take away (sign -1) a block's live weight on its stack, under
 * its shard's lock. Returns the shard's pending changes of the stack (NULL: a
 * dropped stack), for the caller's other figures of the same sample or free. */
static uint64_t *account_live(struct shard *sh, uint32_t id, uint64_t wb, uint64_t wn, int sign)
{
	uint64_t *d;
	sh->peak_held += sign > 0 ? (int64_t)wb : -(int64_t)wb;
	if (sh->peak_held >= PEAK_HELD || sh->peak_held <= -PEAK_HELD)
		peak_pass(sh);
	if (id == STACK_DROPPED) {
		sh->dropped_live_bytes += sign > 0 ? wb : -wb;
		return NULL;
	}
	if (id >= __atomic_load_n(&mw_nstacks, __ATOMIC_ACQUIRE))
		return NULL;
	d = shard_delta(sh, id);
	if (sign > 0) {
		d[D_LIVE_BYTES] += wb;
		d[D_LIVE_BLOCKS_FX] += wn;
		d[D_LIVE_SAMPLES]++;
	} else {
		d[D_LIVE_BYTES] -= wb;
		d[D_LIVE_BLOCKS_FX] -= wn;
		d[D_LIVE_SAMPLES]--;
	}
	return d;
}

/* ------------------------------------------------------------------------- */
/* Live table of one shard: open addressing, linear probing, deletion by
 * backward shift. Under the shard's lock. */

/* The home slot of address p in a table of cap (a power of 2, at least
 * LIVE_MIN_CAP) slots. Each 4 KiB of address space has a group of 512 slots,
 * two for each 16-byte step, drawn by Fibonacci hashing (the top bits of a
 * product, which spreads allocators' regular strides over the table): the
 * records of blocks allocated or freed one after another in one region
 * (pymalloc's pools, malloc's bins) are read in order. A step's second slot
 * takes the record another region of the group wants there, and the page's
 * low bits choose where a region starts, since pools of one size class put
 * their blocks at the same offsets. Measured against other layouts in
 * HACKING.md ("The live table's layout"). */
#define GROUP_BITS 12
#define GROUP_SLOTS_BITS (GROUP_BITS - 3)                  /* 512 slots */
#define LIVE_MIN_CAP ((size_t)1 << (GROUP_SLOTS_BITS + 1)) /* two groups: 16 KiB */
static size_t live_slot(uintptr_t p, size_t cap)
{
	unsigned b = (unsigned)__builtin_ctzll(cap);
	size_t step = (size_t)(p >> 4) & (((size_t)1 << (GROUP_BITS - 4)) - 1);
	return (size_t)(((p >> GROUP_BITS) * 0x9E3779B97F4A7C15ull) >> (64 - b + GROUP_SLOTS_BITS))
		       << GROUP_SLOTS_BITS |
	       ((step << 1) ^ ((p >> GROUP_BITS) & 3));
}

/* The old table's pages are given back while its records are moved, by
 * GROW_RELEASE bytes at a time: with every allocation sampled the tables are
 * most of what capture adds to a program's memory, and the old one, still
 * whole beside the new one twice its size, made a peak of three times the old
 * table at each growth (CPython's peak RSS at a rate of 1). */
#define GROW_RELEASE ((size_t)256 << 10)

static bool live_grow(struct shard *sh)
{
	size_t ncap = sh->cap ? sh->cap * 2 : LIVE_MIN_CAP, i;
	struct live *n = mw_map(ncap * sizeof *n);
	char *old = (char *)sh->live, *done = old;
	if (!n)
		return false;
	for (i = 0; i < sh->cap; i++) {
		size_t j;
		char *end;
		if (sh->live[i].key) {
			for (j = live_slot(sh->live[i].key, ncap); n[j].key; j = (j + 1) & (ncap - 1))
				;
			n[j] = sh->live[i];
		}
		/* the pages wholly behind record i are read no more (what
		 * record() prefetches from them unlocked reads as zeros) */
		end = old + ((i + 1) * sizeof *sh->live & ~(GROW_RELEASE - 1));
		if (end > done) {
			madvise(done, (size_t)(end - done), MADV_DONTNEED);
			done = end;
		}
	}
	mw_unmap(sh->live, sh->cap * sizeof *sh->live);
	/* (stored atomically: record() reads them unlocked, to prefetch) */
	__atomic_store_n(&sh->live, n, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->cap, ncap, __ATOMIC_RELAXED);
	return true;
}

static struct live *live_find(struct shard *sh, uintptr_t p)
{
	size_t j;
	if (!sh->cap)
		return NULL;
	for (j = live_slot(p, sh->cap); sh->live[j].key; j = (j + 1) & (sh->cap - 1))
		if (sh->live[j].key == p)
			return &sh->live[j];
	return NULL;
}

static void live_delete(struct shard *sh, struct live *e)
{
	struct live *live = sh->live;
	size_t i = (size_t)(e - live), j = i, mask = sh->cap - 1;
	live[i].key = 0;
	for (;;) {
		size_t k;
		j = (j + 1) & mask;
		if (!live[j].key)
			break;
		k = live_slot(live[j].key, sh->cap);
		/* Move j back into the hole at i unless its home lies cyclically in (i, j]. */
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		live[i] = live[j];
		live[j].key = 0;
		i = j;
	}
	sh->n--;
}

/* Record p. An address already in the table is a block whose free we never
 * saw (freed through a path that is not hooked): its record is replaced.
 * Returns account_live's pending changes of stack id, or NULL. */
static uint64_t *live_insert(struct shard *sh, uintptr_t p, uint64_t wb, uint64_t wn, uint32_t id,
			uint16_t tick)
{
	struct live *e;
	size_t j;
	uint32_t w;
	freed_settle(sh, p);
	if (p > LIVE_KEY_MAX)
		return NULL;
	wn = blocks_q(wn);
	/* at most 3/4 full: linear probing still finds a block in a few probes */
	if ((sh->n + 1) * 4 > sh->cap * 3 && !live_grow(sh) && !sh->cap)
		return NULL;
	if (!weights_code(sh, wb, wn, &w))
		return NULL;
	/* one pass: the block's record, or the empty slot where it goes */
	for (j = live_slot(p, sh->cap); (e = &sh->live[j])->key; j = (j + 1) & (sh->cap - 1))
		if (e->key == p) {
			uint64_t ob, on;
			live_weights(sh, e, &ob, &on);
			account_live(sh, e->stack, ob, on, -1);
			weights_release(sh, e->w);
			e->w = w;
			e->tick = tick;
			e->stack = id;
			return account_live(sh, id, wb, wn, 1);
		}
	if ((sh->n + 1) * 4 > sh->cap * 3) {
		weights_release(sh, w);
		return NULL;      /* full, and it could not grow */
	}
	e->key = p;
	e->w = w;
	e->tick = tick;
	e->stack = id;
	sh->n++;
	filter_inc(p);
	return account_live(sh, id, wb, wn, 1);
}

/* Take the record of p out now. */
static void remove_now(struct shard *sh, uintptr_t p, struct mw_taken *t)
{
	struct live *e = live_find(sh, p);
	uint64_t *d, wb, wn;
	if (!e)
		return;
	live_weights(sh, e, &wb, &wn);
	weights_release(sh, e->w);
	d = account_live(sh, e->stack, wb, wn, -1);
	if (t) {
		t->bytes = wb;
		t->blocks_fx = wn;
		t->stack = e->stack;
		t->tick = (uint16_t)e->tick;
	} else if (d && (uint16_t)(now_tick() - (uint16_t)e->tick) < TEMP_TICKS) {
		/* freed for good, soon after its allocation: temporary */
		d[D_TEMP_BYTES] += wb;
		d[D_TEMP_BLOCKS_FX] += wn;
	}
	filter_dec(p);
	live_delete(sh, e);
}

/* A free's record is taken out FREED frees (in this shard) later: its slot,
 * in a table far larger than the caches when every allocation is sampled,
 * was a miss at nearly every free, waited for there and then; now it is
 * fetched at the free and read once the later frees have given it time to
 * arrive. Until then p's record stays in the table, and whatever else reads
 * p's record (a sample or a realloc at p, a parked free; every reader of the
 * whole table, through heap_lock_all) takes it out first: all under the shard's
 * lock, so that no one ever sees the record of a freed block, nor has a later
 * free take out the record of a new block at p. */
static void free_later(struct shard *sh, uintptr_t p)
{
	uintptr_t old = 0;
	struct live *live = sh->live;
	if (!live)
		return;
	__builtin_prefetch(&live[live_slot(p, sh->cap)], 1);
	if (sh->nfreed == FREED) {
		old = sh->freed[sh->freed_at];
		sh->freed[sh->freed_at] = p;
		sh->freed_at = (sh->freed_at + 1) % FREED;
	} else {
		sh->freed[(sh->freed_at + sh->nfreed++) % FREED] = p;
	}
	if (old)
		remove_now(sh, old, NULL);
}

/* p's free, if it waits in freed[], is done now. */
static void freed_settle(struct shard *sh, uintptr_t p)
{
	unsigned i;
	for (i = 0; i < sh->nfreed; i++) {
		uintptr_t *f = &sh->freed[(sh->freed_at + i) % FREED];
		if (*f == p) {
			*f = 0;
			remove_now(sh, p, NULL);
		}
	}
}

/* Every free that waits is done. */
static void freed_flush(struct shard *sh)
{
	unsigned i;
	for (i = 0; i < sh->nfreed; i++) {
		uintptr_t p = sh->freed[(sh->freed_at + i) % FREED];
		if (p)
			remove_now(sh, p, NULL);
	}
	sh->nfreed = sh->freed_at = 0;
}

static void remove_live_locked(struct shard *sh, uintptr_t p, struct mw_taken *t)
{
	freed_settle(sh, p);
	remove_now(sh, p, t);
}

/* ------------------------------------------------------------------------- */
/* The slow paths. */

/* Unwind the allocating thread and record the block. ra and cfa are the
 * return address and canonical frame address of the sampling function (the
 * key of stack-cache.c's entries): a stack met before on this thread is found
 * there, with its interned id, without unwinding. */
static inline __attribute__((always_inline)) void record(void *p, size_t size, uint32_t kind,
							   uintptr_t ra, uintptr_t cfa)
{
	unsigned depth = mw_depth > MW_MAX_DEPTH ? MW_MAX_DEPTH : mw_depth, skip = 0, nf;
	unsigned cap = depth + 16;
	/* Sized by the depth in force (640 bytes at the default): this runs on
	 * whatever stack called malloc, which may be small. */
	uintptr_t ips[cap];
	const uintptr_t *frames;
	uint32_t flags = kind, id;
	uint64_t h = 0, wb, wn;
	struct shard *sh;
	struct mw_sc_entry *sc, *msc = NULL;
	uint64_t sig = 0;
	bool full = false;
	int memo = -1;        /* the merge of msc reused: its slot */
	int n;

	/* the block's slot in the live table, fetched while the stack is
	 * unwound: in a table larger than the caches its first read was a
	 * miss at nearly every sample (what is read here unlocked may be
	 * stale; a prefetch of any address is harmless) */
	sh = shard_of((uintptr_t)p);
	{
		struct live *live = __atomic_load_n(&sh->live, __ATOMIC_RELAXED);
		size_t c = __atomic_load_n(&sh->cap, __ATOMIC_RELAXED);
		if (live && c >= FAR_SLOTS)
			__builtin_prefetch(&live[live_slot((uintptr_t)p, c)], 1);
	}
	if ((sc = mw_sc_find(ra, cfa))) {
		frames = sc->ip + sc->skip;
		nf = (unsigned)(sc->n - sc->skip);
	} else {
		mw_loader_enter();
		n = mw_sc_unwind(ips, (int)cap, ra, cfa, &sc);
		mw_loader_leave();
		if (n < 0)
			n = 0;
		while (skip < (unsigned)n && mw_in_agent(ips[skip]))
			skip++;
		nf = (unsigned)n - skip;
		frames = ips + skip;
		full = (unsigned)n == cap;
	}
	/* a runtime's frames (CPython's) stand where its interpreter's were.
	 * A native stack met again whose runtime frames have the signature of
	 * one of its last two merges merges to that merge's stack: its id is
	 * taken as it is (at a rate of 1 on CPython the merge, its hash and its
	 * lookup were half the agent's cost; one merge kept missed at a fifth
	 * of the samples). */
	mw_merge_fn *merge = __atomic_load_n(&mw_frames_hook, __ATOMIC_RELAXED);
	uintptr_t merged[merge ? cap : 1];
	if (merge) {
		msc = sc;
		if (sc && sc->mgen == __atomic_load_n(&mw_sc_gen, __ATOMIC_RELAXED)) {
			merge(frames, nf, NULL, 0, &sig);
			if (sig && sc->msig[0] == (sig ^ kind))
				memo = 0;
			else if (sig && sc->msig[1] == (sig ^ kind))
				memo = 1;
		}
		if (memo < 0) {
			nf = merge(frames, nf, merged, cap, &sig);
			frames = merged;
			full = full || nf == cap;
		}
		sc = NULL;     /* the stack is not the native one alone */
	}
	if (nf > depth || full) {
		flags |= SNAP_STACK_TRUNCATED;
		if (nf > depth)
			nf = depth;
	}
	mw_weights(size, &wb, &wn);
	wn = blocks_q(wn);
	/* (a reset or new settings change the ids: under a shard lock, which
	 * they take too, the generation read is current) */
	if (memo < 0 && (!sc || sc->gen != __atomic_load_n(&mw_sc_gen, __ATOMIC_RELAXED)))
		h = mw_hash_frames(frames, nf, flags);

	lock_shard(sh);
	/* (a memo renumbered meanwhile: a reset raced with this sample, which
	 * goes unrecorded, as one a moment earlier would have been wiped) */
	if (__atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED) &&
	    (memo < 0 || msc->mgen == mw_sc_gen)) {
		if (memo >= 0) {
			id = msc->mid[memo];
		} else if (sc && sc->gen == mw_sc_gen) {
			id = sc->id;
		} else {
			if (!h)
				h = mw_hash_frames(frames, nf, flags);
			id = mw_intern(frames, nf, flags, h);
			if (sc && id != STACK_DROPPED) {
				sc->id = id;
				sc->gen = mw_sc_gen;
			}
			if (msc && sig && (sig ^ kind) && id != STACK_DROPPED) {
				if (msc->mgen != mw_sc_gen) {
					msc->msig[0] = 0;
					msc->mgen = mw_sc_gen;
				}
				msc->mid[1] = msc->mid[0];
				msc->msig[1] = msc->msig[0];
				msc->mid[0] = id;
				msc->msig[0] = sig ^ kind;
			}
		}
		uint64_t *d = live_insert(sh, (uintptr_t)p, wb, wn, id, now_tick());
		if (id != STACK_DROPPED) {
			if (!d)
				d = shard_delta(sh, id);
			d[D_ALLOC_BYTES] += wb;
			d[D_ALLOC_BLOCKS_FX] += wn;
		}
		sh->samples++;
	}
	unlock_shard(sh);
}

/* A point owed to a size class (pyfree.c, mw_tls.owed): 1 when this allocation
 * takes it, 0 when it is of another size (passed on, the countdown still 0),
 * -1 when the owed point is of an earlier capture (forgotten). */
static __attribute__((noinline, cold)) int owed_point(struct mw_tls *t, int e, size_t size)
{
	if (t->epoch != (uint32_t)e) {
		t->owed = 0;
		return -1;
	}
	if (mw_owed_other(size)) {
		t->left = 0;
		return 0;
	}
	t->owed = 0;
	t->left = mw_draw_gap(t);
	return 1;
}

/* The slow path's decision for an allocation of size bytes that crossed this
 * thread's countdown: draw the next gap, and say whether this one is sampled. */
static inline __attribute__((always_inline)) bool at_sample_point(struct mw_tls *t, int e, size_t size)
{
	int o;
	if (unlikely(t->owed) && (o = owed_point(t, e, size)) >= 0)
		return o;
	if (!t->rng)
		mw_seed(t);
	if (t->epoch != (uint32_t)e) {
		/* First allocation of this thread in this capture: draw a fresh gap
		 * and only then decide, so that no thread's first block is favoured. */
		t->epoch = (uint32_t)e;
		t->left = mw_draw_gap(t);
		if (size < t->left) {
			t->left -= size + 1;
			return false;
		}
	}
	t->left = mw_draw_gap(t);
	return true;
}

void *mw_sampled_alloc(void *p, size_t size)
{
	struct mw_tls *t = &mw_tls;
	int e = __atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED);

	/* The agent's own allocations, and those of a signal handler that
	 * interrupted it, are never sampled. */
	if (t->guard || !e)
		return p;
	t->guard++;
	if (at_sample_point(t, e, size) && p)
		record(p, size, 0, (uintptr_t)__builtin_return_address(0),
		       (uintptr_t)__builtin_dwarf_cfa());
	t->guard--;
	return p;
}

/* The same for a mapping of len bytes at p (the mmap hooks, which hold their
 * own guard): true when it was recorded, with the kind flag in its stack. */
bool mw_sampled_mmap(void *p, size_t len, uint32_t kind)
{
	struct mw_tls *t = &mw_tls;
	int e = __atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED);

	if (t->guard != 1 || !e || !at_sample_point(t, e, len))
		return false;
	record(p, len, kind, (uintptr_t)__builtin_return_address(0),
	       (uintptr_t)__builtin_dwarf_cfa());
	return true;
}

void mw_sampled_free(const void *p)
{
	struct mw_tls *t = &mw_tls;
	struct shard *sh = shard_of((uintptr_t)p);
	if (t->guard && t->locked) {
		park_free((uintptr_t)p);
		return;
	}
	t->guard++;
	lock_shard(sh);
	/* at coarse rates samples are few and heavy: a free waiting there would
	 * keep up to FREED samples' weight in the live total that marks the
	 * peak, for as long as the next frees take */
	if (mw_rate <= FREE_LATER_RATE && sh->cap >= FAR_SLOTS)
		free_later(sh, (uintptr_t)p);
	else
		remove_live_locked(sh, (uintptr_t)p, NULL);
	unlock_shard(sh);
	t->guard--;
}

bool mw_take_record(const void *p, struct mw_taken *tk)
{
	struct mw_tls *t = &mw_tls;
	struct shard *sh = shard_of((uintptr_t)p);
	if (t->guard && t->locked) {
		park_free((uintptr_t)p);
		return false;
	}
	tk->bytes = tk->blocks_fx = 0;
	tk->stack = STACK_DROPPED - 1;
	t->guard++;
	lock_shard(sh);
	remove_live_locked(sh, (uintptr_t)p, tk);
	unlock_shard(sh);
	t->guard--;
	return tk->stack != STACK_DROPPED - 1;
}

void mw_put_record(const void *p, const struct mw_taken *tk)
{
	struct mw_tls *t = &mw_tls;
	struct shard *sh = shard_of((uintptr_t)p);
	if (t->guard && t->locked)
		return;
	t->guard++;
	lock_shard(sh);
	if (__atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED))
		live_insert(sh, (uintptr_t)p, tk->bytes, tk->blocks_fx, tk->stack, tk->tick);
	unlock_shard(sh);
	t->guard--;
}

/* ------------------------------------------------------------------------- */
/* Reset, fork, figures. */

/* Stack ids change meaning (a reset, new settings): the ids that
 * stack-cache.c's entries keep are stale. Under every lock. */
static void sc_new_gen(void)
{
	uint32_t g = mw_sc_gen + 1;
	__atomic_store_n(&mw_sc_gen, g ? g : 1, __ATOMIC_RELAXED);
}

/* Under every lock. */
static void reset_locked(void)
{
	unsigned i;
	for (i = 0; i < NSHARDS; i++) {
		struct shard *sh = &shards[i];
		mw_unmap(sh->live, sh->cap * sizeof *sh->live);
		__atomic_store_n(&sh->live, NULL, __ATOMIC_RELAXED);
		mw_unmap(sh->heavy, (size_t)sh->heavy_cap * sizeof *sh->heavy);
		sh->heavy = NULL;
		sh->heavy_cap = sh->heavy_used = sh->heavy_free = 0;
		__atomic_store_n(&sh->cap, 0, __ATOMIC_RELAXED);
		sh->n = 0;
		sh->samples = sh->dropped_live_bytes = 0;
		sh->peak_held = 0;
		sh->nfreed = sh->freed_at = 0;
		memset(sh->delta, 0, sizeof sh->delta);
	}
	mw_stacks_reset_locked();
	sc_new_gen();
	__atomic_store_n(&mw_peak.live, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&mw_peak.bytes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&mw_peak.next, PEAK_FIRST, __ATOMIC_RELAXED);
	memset(pending, 0, sizeof pending);
	pending_count = 0;
	if (madvise(mw_filter_bits, sizeof mw_filter_bits, MADV_DONTNEED) != 0)
		memset(mw_filter_bits, 0, sizeof mw_filter_bits);
	if (madvise(filter_counts, sizeof filter_counts, MADV_DONTNEED) != 0)
		memset(filter_counts, 0, sizeof filter_counts);
	if (filter_full)
		memset(mw_filter_bits, 0xff, sizeof mw_filter_bits);
}

/* The filter full (full) or counting the live records again. Under every
 * lock. */
static void set_filter_full(bool full)
{
	unsigned s;
	size_t i;
	if (full == filter_full)
		return;
	filter_full = full;
	if (full) {
		memset(mw_filter_bits, 0xff, sizeof mw_filter_bits);
		return;
	}
	memset(mw_filter_bits, 0, sizeof mw_filter_bits);
	memset(filter_counts, 0, sizeof filter_counts);
	for (s = 0; s < NSHARDS; s++)
		for (i = 0; i < shards[s].cap; i++)
			if (shards[s].live[i].key)
				filter_inc(shards[s].live[i].key);
}

/* Held while a snapshot reads the interned frames outside the heap lock (the
 * control thread's, or the one at exit on the exiting thread): a reset, which
 * unmaps them, waits for it. */
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;

void mw_snapshot_begin(void)
{
	pthread_mutex_lock(&snap_lock);
}

void mw_snapshot_end(void)
{
	pthread_mutex_unlock(&snap_lock);
}

void mw_heap_reset(void)
{
	mw_tls.guard++;
	pthread_mutex_lock(&snap_lock);
	heap_lock_all();
	reset_locked();
	heap_unlock_all();
	pthread_mutex_unlock(&snap_lock);
	mw_tls.guard--;
}

/* Set the capture parameters under the locks, so that no sample is weighed
 * with a rate it was not drawn with. */
void mw_heap_configure(uint64_t rate, unsigned depth, uint64_t max_stacks)
{
	mw_tls.guard++;
	mw_unwind_init();
	mw_sc_init();
	mw_gaps_init();
	heap_lock_all();
	mw_rate = rate ? rate : 1;
	mw_inv_rate = 1.0 / (double)mw_rate;
	set_filter_full(mw_rate == 1);
	mw_depth = depth ? (depth > MW_MAX_DEPTH ? MW_MAX_DEPTH : depth) : MW_DEFAULT_DEPTH;
	mw_max_stacks = max_stacks ? max_stacks : MW_DEFAULT_MAX_STACKS;
	sc_new_gen();
	heap_unlock_all();
	mw_tls.guard--;
}

static bool prepared_lock;

void mw_heap_atfork_prepare(void)
{
	mw_loader_atfork_prepare();
	/* A fork from a handler that interrupted our own critical section must
	 * not wait for a lock this very thread holds. */
	prepared_lock = !mw_tls.locked;
	if (prepared_lock) {
		mw_tls.guard++;
		heap_lock_all();
	}
}

void mw_heap_atfork_parent(void)
{
	if (prepared_lock) {
		heap_unlock_all();
		mw_tls.guard--;
	}
	mw_loader_atfork_parent();
}

/* The child never reports its parent's samples as its own. */
void mw_heap_atfork_child(void)
{
	unsigned i;
	mw_loader_atfork_child();
	pthread_mutex_init(&snap_lock, NULL);
	for (i = 0; i < NSHARDS; i++)
		shards[i].lock = 0;
	mw_intern_lock = 0;
	reset_locked();
	mw_tls.locked = 0;
	if (prepared_lock)
		mw_tls.guard--;
	mw_unwind_atfork_child();
	mw_reseed();
}
