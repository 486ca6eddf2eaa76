/* stacks.c: the interned call stacks of the samples. Identical stacks share one
 * id; a stack is stored once, its frames in mmap'd chunks, and found again by
 * its hash through an index read without a lock, so that the lookup of a known
 * stack, nearly every sample, takes no lock. The stacks' figures are kept by
 * heap.c, which calls in here with a shard lock held (stacks.h). */
#include "config.h"

#include <string.h>
#include <sys/mman.h>

#include "agent.h"
#include "stacks.h"

/* A chunk of frame storage; chunks are chained for unmapping at reset. */
struct chunk {
	struct chunk *next;
	size_t len, used;
};

/* Interned stacks live in chunks that never move while capture runs (chunk k
 * holds 4096 << k of them), and their index is read without a lock: a lookup
 * of a known stack, nearly every sample, takes no lock. New stacks are added
 * under mw_intern_lock (taken, if at all, inside a shard lock). An outgrown
 * index is retired, not unmapped, since a reader may still be probing it; a
 * reader that misses there finds the stack again under the lock. Every reader
 * holds a shard lock (or mw_intern_lock), and a reset takes them all. */
struct sindex {
	size_t cap;
	uint32_t slot[];     /* stack id + 1, 0 empty */
};
mw_spin_t mw_intern_lock __attribute__((aligned(64)));
struct stack *mw_stack_chunks[SCHUNKS];
uint32_t mw_nstacks;
static struct sindex *sindex;          /* published with release */
static struct sindex *sindex_retired[40];
static unsigned nretired;
static struct chunk *chunks;
static uint64_t *dropped_set;         /* hashes of stacks refused by the stack limit */
static size_t dropped_cap;
size_t mw_dropped_stacks;

static size_t sindex_bytes(size_t cap)
{
	return sizeof(struct sindex) + cap * sizeof(uint32_t);
}

/* Four lanes, each a chain of multiplies over every fourth frame, joined at
 * the end: one chain over all frames waited for each multiply before the
 * next (a sixteenth of the agent's time at a rate of 1 on CPython, whose
 * stacks are 20 to 40 frames deep); the lanes run side by side. */
uint64_t mw_hash_frames(const uintptr_t *f, unsigned n, uint32_t flags)
{
	const uint64_t k = 0x9E3779B97F4A7C15ull;
	uint64_t a = 0xCBF29CE484222325ull ^ ((uint64_t)n << 32) ^ flags;
	uint64_t b = a ^ 0x243F6A8885A308D3ull, c = a ^ 0x13198A2E03707344ull,
		 d = a ^ 0xA4093822299F31D0ull;
	unsigned i = 0;
	for (; i + 4 <= n; i += 4) {
		a = (a ^ f[i]) * k;
		b = (b ^ f[i + 1]) * k;
		c = (c ^ f[i + 2]) * k;
		d = (d ^ f[i + 3]) * k;
		a ^= a >> 29;
		b ^= b >> 29;
		c ^= c >> 29;
		d ^= d >> 29;
	}
	switch (n - i) {
	case 3: c = (c ^ f[i + 2]) * k; /* fall through */
	case 2: b = (b ^ f[i + 1]) * k; /* fall through */
	case 1: a = (a ^ f[i]) * k;
	}
	return mw_splitmix64(a ^ ((b << 16) | (b >> 48)) ^ ((c << 32) | (c >> 32)) ^ ((d << 48) | (d >> 16)));
}

/* Under mw_intern_lock. */
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

/* A bigger index, published; the old one is retired until the next reset.
 * Under mw_intern_lock. */
static bool sindex_grow(void)
{
	size_t ncap = sindex ? sindex->cap * 2 : 4096, i, n = mw_nstacks;
	struct sindex *x;
	if (sindex && nretired == sizeof sindex_retired / sizeof *sindex_retired)
		return false;
	x = mw_map(sindex_bytes(ncap));
	if (!x)
		return false;
	x->cap = ncap;
	for (i = 0; i < n; i++) {
		size_t j = stack_at((uint32_t)i)->hash & (ncap - 1);
		while (x->slot[j])
			j = (j + 1) & (ncap - 1);
		x->slot[j] = (uint32_t)i + 1;
	}
	if (sindex)
		sindex_retired[nretired++] = sindex;
	__atomic_store_n(&sindex, x, __ATOMIC_RELEASE);
	return true;
}

/* Remember that a stack with this hash was refused (for dropped_stacks).
 * Under mw_intern_lock. */
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
	if (mw_dropped_stacks * 2 >= dropped_cap) {
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
	mw_dropped_stacks++;
}

/* The id of a published stack equal to this one, or STACK_DROPPED. */
static uint32_t lookup(const struct sindex *x, const uintptr_t *f, unsigned n, uint32_t flags,
		       uint64_t h)
{
	size_t j, mask = x->cap - 1;
	uint32_t v;
	for (j = h & mask; (v = __atomic_load_n(&x->slot[j], __ATOMIC_ACQUIRE)); j = (j + 1) & mask) {
		const struct stack *s = stack_at(v - 1);
		if (s->hash == h && s->nframes == n && s->flags == flags &&
		    memcmp(s->frames, f, n * sizeof *f) == 0)
			return v - 1;
	}
	return STACK_DROPPED;
}

/* Add a new stack. Under mw_intern_lock. */
static uint32_t intern_locked(const uintptr_t *f, unsigned n, uint32_t flags, uint64_t h)
{
	uint32_t id = mw_nstacks;
	uint64_t x;
	unsigned k;
	size_t j;
	struct stack *s;

	if (sindex) {
		id = lookup(sindex, f, n, flags, h);
		if (id != STACK_DROPPED)
			return id;
		id = mw_nstacks;
	}
	if (id >= mw_max_stacks || id >= STACK_DROPPED - 1)
		goto dropped;
	if ((!sindex || ((size_t)id + 1) * 2 > sindex->cap) && !sindex_grow())
		goto dropped;
	x = (uint64_t)id + ((uint64_t)1 << SCHUNK0_BITS);
	k = (unsigned)(63 - __builtin_clzll(x)) - SCHUNK0_BITS;
	if (!mw_stack_chunks[k]) {
		struct stack *c = mw_map(((size_t)1 << (SCHUNK0_BITS + k)) * sizeof *c);
		if (!c)
			goto dropped;
		__atomic_store_n(&mw_stack_chunks[k], c, __ATOMIC_RELEASE);
	}
	s = stack_at(id);
	memset(s, 0, sizeof *s);
	s->frames = arena_alloc((n ? n : 1) * sizeof *f);
	if (!s->frames)
		goto dropped;
	memcpy(s->frames, f, n * sizeof *f);
	s->hash = h;
	s->nframes = n;
	s->flags = flags;
	for (j = h & (sindex->cap - 1); sindex->slot[j]; j = (j + 1) & (sindex->cap - 1))
		;
	__atomic_store_n(&mw_nstacks, id + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&sindex->slot[j], id + 1, __ATOMIC_RELEASE);
	return id;
dropped:
	note_dropped(h);
	return STACK_DROPPED;
}

/* The id of this stack, interning it if new; STACK_DROPPED beyond the limit.
 * Called with a shard lock held. */
uint32_t mw_intern(const uintptr_t *f, unsigned n, uint32_t flags, uint64_t h)
{
	const struct sindex *x = __atomic_load_n(&sindex, __ATOMIC_ACQUIRE);
	uint32_t id;
	if (x) {
		id = lookup(x, f, n, flags, h);
		if (id != STACK_DROPPED)
			return id;
	}
	mw_spin_lock(&mw_intern_lock);
	id = intern_locked(f, n, flags, h);
	mw_spin_unlock(&mw_intern_lock);
	return id;
}

void mw_stacks_reset_locked(void)
{
	struct chunk *c = chunks, *next;
	unsigned i;
	for (i = 0; i < SCHUNKS; i++) {
		mw_unmap(mw_stack_chunks[i], ((size_t)1 << (SCHUNK0_BITS + i)) * sizeof(struct stack));
		mw_stack_chunks[i] = NULL;
	}
	mw_nstacks = 0;
	if (sindex)
		mw_unmap(sindex, sindex_bytes(sindex->cap));
	sindex = NULL;
	for (i = 0; i < nretired; i++)
		mw_unmap(sindex_retired[i], sindex_bytes(sindex_retired[i]->cap));
	nretired = 0;
	for (; c; c = next) {
		next = c->next;
		munmap(c, c->len);
	}
	chunks = NULL;
	mw_unmap(dropped_set, dropped_cap * sizeof *dropped_set);
	dropped_set = NULL;
	dropped_cap = mw_dropped_stacks = 0;
}
