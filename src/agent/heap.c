/* heap.c: the sampler (Poisson sampling by bytes), the interned call stacks and
 * the table of live sampled blocks, with their per-stack figures. Everything
 * here is reached from inside the target's malloc and free: storage comes from
 * mmap, never from the allocator being watched. */
#include "config.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "snapshot.h"

__thread struct mw_tls mw_tls __attribute__((tls_model("initial-exec")));
uint64_t mw_filter_bits[((size_t)1 << MW_FILTER_BITS) / 64] __attribute__((aligned(4096)));
/* one saturating counter per filter bucket */
static uint8_t filter_counts[(size_t)1 << MW_FILTER_BITS] __attribute__((aligned(4096)));
struct mw_hot mw_hot;
uint64_t mw_rate = MW_DEFAULT_RATE;
unsigned mw_depth = MW_DEFAULT_DEPTH;
uint64_t mw_max_stacks = MW_DEFAULT_MAX_STACKS;
uint64_t mw_capture_start_ns;

/* Block-count weights are fractional (1 / p); they are kept in fixed point so
 * that adding and later subtracting the same sample is exact. */
#define FX 65536.0
#define STACK_DROPPED UINT32_MAX

/* One interned call stack and what its sampled blocks stand for. */
struct stack {
	uint64_t hash;
	uint32_t nframes, flags;
	uintptr_t *frames;
	uint64_t live_bytes, live_blocks_fx, live_samples, alloc_bytes, alloc_blocks_fx;
};

/* One live sampled block. */
struct live {
	uintptr_t key;       /* 0: empty */
	uint64_t size;
	uint32_t stack;
	uint32_t pad;
};

/* A chunk of frame storage; chunks are chained for unmapping at reset. */
struct chunk {
	struct chunk *next;
	size_t len, used;
};

static pthread_mutex_t heap_lock __attribute__((aligned(64))) = PTHREAD_MUTEX_INITIALIZER;
static struct live *live;
static size_t live_cap, live_n;
static struct stack *stacks;
static size_t nstacks, stacks_cap;
static uint32_t *sindex;              /* open-addressed: stack id + 1, 0 empty */
static size_t sindex_cap;
static struct chunk *chunks;
static uint64_t *dropped_set;         /* hashes of stacks refused by the stack limit */
static size_t dropped_cap, dropped_n;
static uint64_t dropped_live_bytes, nsamples;

/* Frees that a signal handler made while its thread held (or was taking) the
 * heap lock: they cannot wait for the lock, so they are parked here and applied
 * by the lock holder before it lets go. */
#define PENDING_SLOTS 64
static uintptr_t pending[PENDING_SLOTS];
static unsigned pending_count;

/* Held (shared) by the agent whenever it is inside libunwind or the dynamic
 * loader on its own initiative, and taken exclusively around fork: a child then
 * never inherits a lock that libunwind or the loader held for the agent, which
 * would hang the child's first unwinding. Writers are preferred, so that a fork
 * does not wait behind a stream of samples; the wait is bounded (a fork from a
 * constructor, with the loader's lock held, while the control thread waits
 * for that lock) and a child forked without it never captures. */
static pthread_rwlock_t loader_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static bool fork_has_loader_lock;
bool mw_fork_tainted;

void mw_loader_enter(void)
{
	pthread_rwlock_rdlock(&loader_lock);
}

void mw_loader_leave(void)
{
	pthread_rwlock_unlock(&loader_lock);
}

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

uint64_t mw_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------------- */
/* Random gaps. */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* Seed this thread's generator from its tid, its TLS address and the time, so
 * that threads (and a forked child) draw different gaps. */
static void seed(struct mw_tls *t)
{
	struct timespec ts;
	uint64_t s;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s = (uint64_t)syscall(SYS_gettid) ^ ((uint64_t)(uintptr_t)t << 16) ^
	    ((uint64_t)ts.tv_nsec << 1) ^ (uint64_t)ts.tv_sec;
	s = splitmix64(s);
	t->rng = s ? s : 0x2545F4914F6CDD1Dull;
}

void mw_reseed(void)
{
	mw_tls.rng = 0;
	mw_tls.epoch = 0;
	mw_tls.left = 0;
}

static uint64_t next_random(struct mw_tls *t)
{
	uint64_t x = t->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* The two functions of libm the sampler needs, here so that the agent does not
 * bring libm (some 400 KiB of resident pages) into programs that lack it.
 * Accurate to about 1e-13, far below the sampling noise. */

/* 2^k as a double, for |k| < 1000. */
static double pow2i(int k)
{
	union { double d; uint64_t u; } v;
	v.u = (uint64_t)(k + 1023) << 52;
	return v.d;
}

/* Natural logarithm of x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), and
 * log m = 2 atanh((m - 1) / (m + 1)) by its series. */
static double mw_log(double x)
{
	union { double d; uint64_t u; } v = { .d = x };
	int e = (int)((v.u >> 52) & 0x7ff) - 1023;
	double m, s, s2, t, sum;
	int k;
	v.u = (v.u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;   /* m in [1, 2) */
	m = v.d;
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	s = (m - 1.0) / (m + 1.0);
	s2 = s * s;
	t = s;
	sum = 0;
	for (k = 1; k < 40; k += 2) {
		sum += t / k;
		t *= s2;
	}
	return 2.0 * sum + e * 0.6931471805599453;
}

/* exp(x) - 1 for x <= 0, precise for small |x|. */
static double mw_expm1(double x)
{
	double r, t, sum;
	int k, i;
	if (x > -1e-5)
		return x + x * x / 2 + x * x * x / 6;
	if (x < -700)
		return -1.0;
	k = (int)(x / 0.6931471805599453 - 0.5);    /* round to nearest, x < 0 */
	r = x - k * 0.6931471805599453;              /* |r| <= ln2 / 2 */
	t = 1.0;
	sum = 1.0;
	for (i = 1; i < 18; i++) {
		t *= r / i;
		sum += t;
	}
	return sum * pow2i(k) - 1.0;
}

/* Bytes to the next sample point: exponential with mean R (0 when every
 * allocation is to be recorded). */
static uint64_t draw_gap(struct mw_tls *t)
{
	double u, g;
	if (mw_rate <= 1)
		return 0;
	u = (double)((next_random(t) >> 11) + 1) * 0x1.0p-53;   /* (0, 1] */
	g = -mw_log(u) * (double)mw_rate;
	return g >= 1.8e19 ? UINT64_MAX : (uint64_t)g;
}

/* The Horvitz-Thompson weights of a sampled block of size bytes: it was picked
 * with probability p = 1 - exp(-(size+1)/R) (each allocation counts size+1, so
 * that zero-byte ones can be picked too), so it stands for size/p bytes and 1/p
 * blocks. At R = 1 every allocation is recorded: exact weights. */
static void weights(uint64_t size, uint64_t *bytes, uint64_t *blocks_fx)
{
	double p;
	if (mw_rate <= 1) {
		*bytes = size;
		*blocks_fx = (uint64_t)FX;
		return;
	}
	p = -mw_expm1(-((double)size + 1.0) / (double)mw_rate);
	*bytes = (uint64_t)((double)size / p + 0.5);
	*blocks_fx = (uint64_t)(FX / p + 0.5);
}

/* ------------------------------------------------------------------------- */
/* The lock. mw_tls.locked is set before waiting, so that a signal handler that
 * frees a sampled block on this thread meanwhile parks the free instead of
 * waiting for a lock its own thread holds. */

static void remove_live_locked(uintptr_t p, struct mw_taken *t);

static void drain_pending(void)
{
	unsigned i;
	if (!__atomic_load_n(&pending_count, __ATOMIC_ACQUIRE))
		return;
	for (i = 0; i < PENDING_SLOTS; i++) {
		uintptr_t p = __atomic_exchange_n(&pending[i], 0, __ATOMIC_ACQ_REL);
		if (p) {
			__atomic_fetch_sub(&pending_count, 1, __ATOMIC_ACQ_REL);
			remove_live_locked(p, NULL);
		}
	}
}

static void lock_heap(void)
{
	mw_tls.locked = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&heap_lock);
	drain_pending();
}

static void unlock_heap(void)
{
	drain_pending();
	pthread_mutex_unlock(&heap_lock);
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
/* The filter. */

#define FILTER_BUCKETS ((size_t)1 << MW_FILTER_BITS)

static void filter_inc(uintptr_t p)
{
	size_t i = mw_filter_index((void *)p);
	uint8_t v = filter_counts[i];
	if (v == 255)
		return;
	filter_counts[i] = (uint8_t)(v + 1);
	if (v == 0)
		__atomic_fetch_or(&mw_filter_bits[i >> 6], (uint64_t)1 << (i & 63), __ATOMIC_RELEASE);
}

/* A saturated counter stays saturated (and its bit set): it no longer knows
 * how many it counts. */
static void filter_dec(uintptr_t p)
{
	size_t i = mw_filter_index((void *)p);
	uint8_t v = filter_counts[i];
	if (v == 255 || v == 0)
		return;
	filter_counts[i] = (uint8_t)(v - 1);
	if (v == 1)
		__atomic_fetch_and(&mw_filter_bits[i >> 6], ~((uint64_t)1 << (i & 63)), __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------------- */
/* Interned stacks. */

static uint64_t hash_frames(const uintptr_t *f, unsigned n, uint32_t flags)
{
	uint64_t h = 0xCBF29CE484222325ull ^ ((uint64_t)n << 32) ^ flags;
	unsigned i;
	for (i = 0; i < n; i++) {
		h ^= f[i];
		h *= 0x100000001B3ull;
		h ^= h >> 29;
	}
	return splitmix64(h);
}

static uintptr_t *arena_alloc(size_t bytes)
{
	struct chunk *c = chunks;
	uintptr_t *r;
	bytes = (bytes + 15) & ~(size_t)15;
	if (!c || c->len - c->used < bytes) {
		size_t len = 256 * 1024;
		if (bytes + sizeof *c > len)
			len = (bytes + sizeof *c + 4095) & ~(size_t)4095;
		c = mw_map(len);
		if (!c)
			return NULL;
		c->len = len;
		c->used = (sizeof *c + 15) & ~(size_t)15;
		c->next = chunks;
		chunks = c;
	}
	r = (uintptr_t *)((char *)c + c->used);
	c->used += bytes;
	return r;
}

static bool sindex_grow(void)
{
	size_t ncap = sindex_cap ? sindex_cap * 2 : 4096, i;
	uint32_t *n = mw_map(ncap * sizeof *n);
	if (!n)
		return false;
	for (i = 0; i < nstacks; i++) {
		size_t j = stacks[i].hash & (ncap - 1);
		while (n[j])
			j = (j + 1) & (ncap - 1);
		n[j] = (uint32_t)i + 1;
	}
	mw_unmap(sindex, sindex_cap * sizeof *sindex);
	sindex = n;
	sindex_cap = ncap;
	return true;
}

/* Remember that a stack with this hash was refused (for dropped_stacks). */
static void note_dropped(uint64_t h)
{
	size_t j;
	if (!dropped_set) {
		dropped_cap = 1u << 16;
		dropped_set = mw_map(dropped_cap * sizeof *dropped_set);
		if (!dropped_set)
			return;
	}
	if (!h)
		h = 1;
	if (dropped_n * 2 >= dropped_cap) {
		size_t ncap = dropped_cap * 2, i;
		uint64_t *n = mw_map(ncap * sizeof *n);
		if (!n)
			return;   /* stop counting new distinct ones: the figure is a lower bound */
		for (i = 0; i < dropped_cap; i++) {
			if (!dropped_set[i])
				continue;
			j = dropped_set[i] & (ncap - 1);
			while (n[j])
				j = (j + 1) & (ncap - 1);
			n[j] = dropped_set[i];
		}
		mw_unmap(dropped_set, dropped_cap * sizeof *dropped_set);
		dropped_set = n;
		dropped_cap = ncap;
	}
	for (j = h & (dropped_cap - 1); dropped_set[j]; j = (j + 1) & (dropped_cap - 1))
		if (dropped_set[j] == h)
			return;
	dropped_set[j] = h;
	dropped_n++;
}

/* The id of this stack, interning it if new; STACK_DROPPED beyond the limit. */
static uint32_t intern(const uintptr_t *f, unsigned n, uint32_t flags, uint64_t h)
{
	size_t j;
	struct stack *s;

	if (sindex_cap) {
		for (j = h & (sindex_cap - 1); sindex[j]; j = (j + 1) & (sindex_cap - 1)) {
			s = &stacks[sindex[j] - 1];
			if (s->hash == h && s->nframes == n && s->flags == flags &&
			    memcmp(s->frames, f, n * sizeof *f) == 0)
				return sindex[j] - 1;
		}
	}
	if (nstacks >= mw_max_stacks || nstacks >= STACK_DROPPED - 1) {
		note_dropped(h);
		return STACK_DROPPED;
	}
	if ((nstacks + 1) * 2 > sindex_cap && !sindex_grow())
		goto dropped;
	if (nstacks == stacks_cap) {
		size_t ncap = stacks_cap ? stacks_cap * 2 : 1024;
		struct stack *ns = mw_map(ncap * sizeof *ns);
		if (!ns)
			goto dropped;
		if (stacks)
			memcpy(ns, stacks, nstacks * sizeof *ns);
		mw_unmap(stacks, stacks_cap * sizeof *stacks);
		stacks = ns;
		stacks_cap = ncap;
	}
	s = &stacks[nstacks];
	memset(s, 0, sizeof *s);
	s->frames = arena_alloc((n ? n : 1) * sizeof *f);
	if (!s->frames)
		goto dropped;
	memcpy(s->frames, f, n * sizeof *f);
	s->hash = h;
	s->nframes = n;
	s->flags = flags;
	for (j = h & (sindex_cap - 1); sindex[j]; j = (j + 1) & (sindex_cap - 1))
		;
	sindex[j] = (uint32_t)nstacks + 1;
	return (uint32_t)nstacks++;
dropped:
	note_dropped(h);
	return STACK_DROPPED;
}

/* Add (sign 1) or take away (sign -1) a block's live weight on its stack. */
static void account_live(uint32_t id, uint64_t size, int sign)
{
	uint64_t wb, wn;
	weights(size, &wb, &wn);
	if (id == STACK_DROPPED) {
		dropped_live_bytes += sign > 0 ? wb : -wb;
		return;
	}
	if (id >= nstacks)
		return;
	if (sign > 0) {
		stacks[id].live_bytes += wb;
		stacks[id].live_blocks_fx += wn;
		stacks[id].live_samples++;
	} else {
		stacks[id].live_bytes -= wb;
		stacks[id].live_blocks_fx -= wn;
		stacks[id].live_samples--;
	}
}

/* ------------------------------------------------------------------------- */
/* Live table: open addressing, linear probing, deletion by backward shift. */

static size_t live_slot(uintptr_t p, size_t cap)
{
	return (size_t)(((p >> 4) * 0xD6E8FEB86659FD93ull) >> 20) & (cap - 1);
}

static bool live_grow(void)
{
	size_t ncap = live_cap ? live_cap * 2 : 1024, i;
	struct live *n = mw_map(ncap * sizeof *n);
	if (!n)
		return false;
	for (i = 0; i < live_cap; i++) {
		size_t j;
		if (!live[i].key)
			continue;
		for (j = live_slot(live[i].key, ncap); n[j].key; j = (j + 1) & (ncap - 1))
			;
		n[j] = live[i];
	}
	mw_unmap(live, live_cap * sizeof *live);
	live = n;
	live_cap = ncap;
	return true;
}

static struct live *live_find(uintptr_t p)
{
	size_t j;
	if (!live_cap)
		return NULL;
	for (j = live_slot(p, live_cap); live[j].key; j = (j + 1) & (live_cap - 1))
		if (live[j].key == p)
			return &live[j];
	return NULL;
}

static void live_delete(struct live *e)
{
	size_t i = (size_t)(e - live), j = i, mask = live_cap - 1;
	live[i].key = 0;
	for (;;) {
		size_t k;
		j = (j + 1) & mask;
		if (!live[j].key)
			break;
		k = live_slot(live[j].key, live_cap);
		/* Move j back into the hole at i unless its home lies cyclically in (i, j]. */
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		live[i] = live[j];
		live[j].key = 0;
		i = j;
	}
	live_n--;
}

/* Record p. An address already in the table is a block whose free we never
 * saw (freed through a path that is not hooked): its record is replaced. */
static void live_insert(uintptr_t p, uint64_t size, uint32_t id)
{
	struct live *e;
	size_t j;
	e = live_find(p);
	if (e) {
		account_live(e->stack, e->size, -1);
		e->size = size;
		e->stack = id;
		account_live(id, size, 1);
		return;
	}
	if ((live_n + 1) * 2 > live_cap && !live_grow())
		return;
	for (j = live_slot(p, live_cap); live[j].key; j = (j + 1) & (live_cap - 1))
		;
	live[j].key = p;
	live[j].size = size;
	live[j].stack = id;
	live_n++;
	filter_inc(p);
	account_live(id, size, 1);
}

static void remove_live_locked(uintptr_t p, struct mw_taken *t)
{
	struct live *e = live_find(p);
	if (!e)
		return;
	if (t) {
		t->size = e->size;
		t->stack = e->stack;
	}
	account_live(e->stack, e->size, -1);
	filter_dec(p);
	live_delete(e);
}

/* ------------------------------------------------------------------------- */
/* The slow paths. */

/* Unwind the allocating thread and record the block. */
static void record(void *p, size_t size)
{
	unsigned depth = mw_depth > MW_MAX_DEPTH ? MW_MAX_DEPTH : mw_depth, skip = 0, nf;
	unsigned cap = depth + 16;
	/* Sized by the depth in force (640 bytes at the default): this runs on
	 * whatever stack called malloc, which may be small. */
	uintptr_t ips[cap];
	const uintptr_t *frames;
	uint32_t flags = 0, id;
	uint64_t h, wb, wn;
	int n;

	mw_loader_enter();
	n = unw_backtrace((void **)ips, (int)cap);
	mw_loader_leave();
	if (n < 0)
		n = 0;
	while (skip < (unsigned)n && mw_in_agent(ips[skip]))
		skip++;
	nf = (unsigned)n - skip;
	frames = ips + skip;
	/* CPython (python.c): its Python frames stand where its eval loop's were */
	bool python = __atomic_load_n(&mw_python_frames, __ATOMIC_RELAXED);
	uintptr_t merged[python ? cap : 1];
	bool full = (unsigned)n == cap;
	if (python) {
		nf = mw_python_merge(frames, nf, merged, cap);
		frames = merged;
		full = full || nf == cap;
	}
	if (nf > depth || full) {
		flags |= SNAP_STACK_TRUNCATED;
		if (nf > depth)
			nf = depth;
	}
	h = hash_frames(frames, nf, flags);
	weights(size, &wb, &wn);

	lock_heap();
	if (__atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED)) {
		id = intern(frames, nf, flags, h);
		live_insert((uintptr_t)p, size, id);
		if (id != STACK_DROPPED) {
			stacks[id].alloc_bytes += wb;
			stacks[id].alloc_blocks_fx += wn;
		}
		nsamples++;
	}
	unlock_heap();
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
	if (!t->rng)
		seed(t);
	if (t->epoch != (uint32_t)e) {
		/* First allocation of this thread in this capture: draw a fresh gap
		 * and only then decide, so that no thread's first block is favoured. */
		t->epoch = (uint32_t)e;
		t->left = draw_gap(t);
		if (size < t->left) {
			t->left -= size + 1;
			goto out;
		}
	}
	t->left = draw_gap(t);
	if (p)
		record(p, size);
out:
	t->guard--;
	return p;
}

void mw_sampled_free(const void *p)
{
	struct mw_tls *t = &mw_tls;
	if (t->guard && t->locked) {
		park_free((uintptr_t)p);
		return;
	}
	t->guard++;
	lock_heap();
	remove_live_locked((uintptr_t)p, NULL);
	unlock_heap();
	t->guard--;
}

bool mw_take_record(const void *p, struct mw_taken *tk)
{
	struct mw_tls *t = &mw_tls;
	if (t->guard && t->locked) {
		park_free((uintptr_t)p);
		return false;
	}
	tk->size = 0;
	tk->stack = STACK_DROPPED - 1;
	t->guard++;
	lock_heap();
	remove_live_locked((uintptr_t)p, tk);
	unlock_heap();
	t->guard--;
	return tk->stack != STACK_DROPPED - 1;
}

void mw_put_record(const void *p, const struct mw_taken *tk)
{
	struct mw_tls *t = &mw_tls;
	if (t->guard && t->locked)
		return;
	t->guard++;
	lock_heap();
	if (__atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED))
		live_insert((uintptr_t)p, tk->size, tk->stack);
	unlock_heap();
	t->guard--;
}

/* ------------------------------------------------------------------------- */
/* Reset, fork, figures. */

static void reset_locked(void)
{
	struct chunk *c = chunks, *next;
	mw_unmap(live, live_cap * sizeof *live);
	live = NULL;
	live_cap = live_n = 0;
	mw_unmap(stacks, stacks_cap * sizeof *stacks);
	stacks = NULL;
	nstacks = stacks_cap = 0;
	mw_unmap(sindex, sindex_cap * sizeof *sindex);
	sindex = NULL;
	sindex_cap = 0;
	for (; c; c = next) {
		next = c->next;
		munmap(c, c->len);
	}
	chunks = NULL;
	mw_unmap(dropped_set, dropped_cap * sizeof *dropped_set);
	dropped_set = NULL;
	dropped_cap = dropped_n = 0;
	dropped_live_bytes = nsamples = 0;
	memset(pending, 0, sizeof pending);
	pending_count = 0;
	if (madvise(mw_filter_bits, sizeof mw_filter_bits, MADV_DONTNEED) != 0)
		memset(mw_filter_bits, 0, sizeof mw_filter_bits);
	if (madvise(filter_counts, sizeof filter_counts, MADV_DONTNEED) != 0)
		memset(filter_counts, 0, sizeof filter_counts);
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
	lock_heap();
	reset_locked();
	unlock_heap();
	pthread_mutex_unlock(&snap_lock);
	mw_tls.guard--;
}

/* Set the capture parameters under the lock, so that no sample is weighed
 * with a rate it was not drawn with. */
void mw_heap_configure(uint64_t rate, unsigned depth, uint64_t max_stacks)
{
	mw_tls.guard++;
	lock_heap();
	mw_rate = rate ? rate : 1;
	mw_depth = depth ? (depth > MW_MAX_DEPTH ? MW_MAX_DEPTH : depth) : MW_DEFAULT_DEPTH;
	mw_max_stacks = max_stacks ? max_stacks : MW_DEFAULT_MAX_STACKS;
	unlock_heap();
	mw_tls.guard--;
}

static bool prepared_lock;

void mw_heap_atfork_prepare(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += 2;
	fork_has_loader_lock = pthread_rwlock_clockwrlock(&loader_lock, CLOCK_MONOTONIC, &ts) == 0;
	/* A fork from a handler that interrupted our own critical section must
	 * not wait for the lock this very thread holds. */
	prepared_lock = !mw_tls.locked;
	if (prepared_lock) {
		mw_tls.guard++;
		lock_heap();
	}
}

void mw_heap_atfork_parent(void)
{
	if (prepared_lock) {
		unlock_heap();
		mw_tls.guard--;
	}
	if (fork_has_loader_lock)
		pthread_rwlock_unlock(&loader_lock);
}

/* The child never reports its parent's samples as its own. */
void mw_heap_atfork_child(void)
{
	pthread_rwlock_t fresh = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	memcpy(&loader_lock, &fresh, sizeof fresh);
	pthread_mutex_init(&snap_lock, NULL);
	if (!fork_has_loader_lock)
		mw_fork_tainted = true;
	pthread_mutex_init(&heap_lock, NULL);
	reset_locked();
	mw_tls.locked = 0;
	if (prepared_lock)
		mw_tls.guard--;
	mw_reseed();
}

static void figures_locked(struct mw_heap_figures *f)
{
	size_t i;
	memset(f, 0, sizeof *f);
	f->samples = nsamples;
	f->stacks = nstacks;
	f->dropped_stacks = dropped_n;
	f->dropped_bytes = dropped_live_bytes;
	for (i = 0; i < nstacks; i++) {
		f->live_samples += stacks[i].live_samples;
		f->live_bytes += stacks[i].live_bytes;
	}
	f->live_bytes += dropped_live_bytes;
}

void mw_heap_figures(struct mw_heap_figures *f)
{
	mw_tls.guard++;
	lock_heap();
	figures_locked(f);
	unlock_heap();
	mw_tls.guard--;
}

int mw_heap_copy_stacks(struct mw_stack_copy **out, size_t *n, struct mw_heap_figures *f)
{
	struct mw_stack_copy *c = NULL;
	size_t i;
	int r = 0;

	mw_tls.guard++;
	lock_heap();
	figures_locked(f);
	*n = 0;
	if (nstacks) {
		c = malloc(nstacks * sizeof *c);
		if (!c) {
			r = -1;
		} else {
			for (i = 0; i < nstacks; i++) {
				const struct stack *s = &stacks[i];
				c[i].flags = s->flags;
				c[i].nframes = s->nframes;
				c[i].frames = s->frames;
				c[i].live_bytes = s->live_bytes;
				c[i].live_blocks = (uint64_t)((double)s->live_blocks_fx / FX + 0.5);
				c[i].live_samples = s->live_samples;
				c[i].alloc_bytes = s->alloc_bytes;
				c[i].alloc_blocks = (uint64_t)((double)s->alloc_blocks_fx / FX + 0.5);
			}
			*n = nstacks;
		}
	}
	unlock_heap();
	mw_tls.guard--;
	*out = c;
	return r;
}
