/* heap.h: the table of live sampled blocks as heap.c (the sampler, which
 * writes it) and heap-copy.c (the figures and copies read out of it) see it.
 * Private to those two files. */
#ifndef MEMWATCH_AGENT_HEAP_H
#define MEMWATCH_AGENT_HEAP_H

#include <stdint.h>

#include "agent.h"

/* One live sampled block, with the weights it was recorded with (worked out
 * once, not again at its free). 16 bytes: with every allocation sampled the
 * table holds a record for each live block of the program, and its size is
 * most of what capture adds to the program's memory (with records of 24
 * bytes, 1.56 times bench/py_workload.py's peak RSS at a rate of 1). The
 * address takes 48 bits (a user address on x86_64 and arm64; a block above is
 * not recorded), which leaves 16 for the tick of its allocation (see
 * now_tick). A block that weighs one block and less than 2 GiB, every block
 * at a rate of 1, keeps its byte weight in w; any other (the samples of
 * coarser rates) keeps LIVE_HEAVY | i, i its weights' place in its shard's
 * heavy[] (live_weights). */
struct live {
	uint64_t key : 48;   /* 0: empty */
	uint64_t tick : 16;
	uint32_t stack;
	uint32_t w;
};
#define LIVE_KEY_MAX ((UINT64_C(1) << 48) - 1)
#define LIVE_HEAVY UINT32_C(0x80000000)
_Static_assert(sizeof(struct live) == 16, "the live record is 16 bytes");

/* The weights of a record that are not one block of less than 2 GiB; a free
 * one holds the next free one's index + 1 in blocks. */
struct heavy {
	uint64_t bytes;
	uint32_t blocks;     /* blocks_fx in units of BLOCKS_Q (see blocks_q) */
	uint32_t pad;
};

#define BLOCKS_Q_SHIFT 8             /* a block weight's units in the table (see blocks_q) */

/* The live-sample table is split into shards by address, each with its own
 * lock, table and counters, so that threads sampling at once seldom meet. The
 * shard of an address is the top of its filter bucket index (its 64 MiB
 * region, see mw_filter_index): a filter bucket (and its counter) belongs to
 * exactly one shard, and the blocks of a thread's own malloc arena (a 64 MiB
 * heap of glibc's) all fall in one shard, which stays in that thread's cache
 * instead of passing between processors at every sample. */
#define SHARD_BITS MW_REGION_BITS
#define NSHARDS (1u << SHARD_BITS)
/* What a shard's samples added to a stack's figures and did not yet pass on:
 * when every allocation is sampled, all threads hit the figures of the same
 * few stacks, and adding to them at once made their cache line the hot spot.
 * A shard keeps the changes for a few stacks (direct-mapped by id) and adds
 * them to the stack only when the entry is wanted for another one; readers
 * of the figures take every shard lock and add the entries in. */
#define DELTAS 16
enum {
	D_LIVE_BYTES, D_LIVE_BLOCKS_FX, D_LIVE_SAMPLES, D_ALLOC_BYTES, D_ALLOC_BLOCKS_FX,
	D_TEMP_BYTES, D_TEMP_BLOCKS_FX, D_COUNT
};
struct delta {
	uint32_t id1;        /* stack id + 1, 0 empty */
	uint32_t pad;
	uint64_t d[D_COUNT]; /* added, modulo 2^64 */
};
/* Frees whose record is still to be taken out (see free_later), at rates of
 * FREE_LATER_RATE and finer, in a shard whose table has FAR_SLOTS slots or
 * more (1 MiB, past what a processor's nearer caches hold): a smaller table
 * stays in cache, and there the wait only cost (a tenth of the agent's time
 * on bench/overhead.sh's churn at a rate of 1). The same bound decides the
 * prefetch of a sample's slot. */
#define FREED 8
#define FREE_LATER_RATE 4096
#define FAR_SLOTS ((size_t)1 << 16)
struct shard {
	mw_spin_t lock;
	size_t cap, n;
	struct live *live;
	uint64_t samples;               /* samples recorded in this shard */
	uint64_t dropped_live_bytes;    /* live bytes of blocks whose stack was refused */
	int64_t peak_held;              /* live bytes not yet added to mw_peak.live */
	unsigned freed_at, nfreed;      /* the oldest in freed[], and how many */
	uintptr_t freed[FREED];
	struct heavy *heavy;            /* heavy_cap of them, in mmap'd storage */
	uint32_t heavy_cap, heavy_used; /* the high-water mark of those in use */
	uint32_t heavy_free;            /* the first free one's index + 1, 0: none */
	struct delta delta[DELTAS];
} __attribute__((aligned(64)));
extern struct shard shards[NSHARDS] MW_HIDDEN;

/* The code of a record's weights (struct live's w), taking a place in heavy[]
 * for those that need one; false when there is none to be had. Under the
 * shard's lock. */
static inline bool weights_code(struct shard *sh, uint64_t wb, uint64_t wn, uint32_t *w)
{
	uint32_t i;
	if (wn == (uint64_t)FX && wb < LIVE_HEAVY) {
		*w = (uint32_t)wb;
		return true;
	}
	if (sh->heavy_free) {
		i = sh->heavy_free - 1;
		sh->heavy_free = sh->heavy[i].blocks;
	} else {
		if (sh->heavy_used == sh->heavy_cap) {
			size_t cap = sh->heavy_cap;
			if (cap >= LIVE_HEAVY / 2 ||
			    !mw_grow((void **)&sh->heavy, sh->heavy_used, &cap, sizeof *sh->heavy))
				return false;
			sh->heavy_cap = (uint32_t)cap;
		}
		i = sh->heavy_used++;
	}
	sh->heavy[i].bytes = wb;
	sh->heavy[i].blocks = (uint32_t)(wn >> BLOCKS_Q_SHIFT);
	*w = LIVE_HEAVY | i;
	return true;
}

/* The place in heavy[] of a record's weights is free again. */
static inline void weights_release(struct shard *sh, uint32_t w)
{
	if (!(w & LIVE_HEAVY))
		return;
	w &= ~LIVE_HEAVY;
	sh->heavy[w].blocks = sh->heavy_free;
	sh->heavy_free = w + 1;
}

/* A record's weights: bytes, and blocks in units of 1/FX. Under its shard's
 * lock. */
static inline void live_weights(const struct shard *sh, const struct live *e, uint64_t *wb,
				uint64_t *wn)
{
	if (!(e->w & LIVE_HEAVY)) {
		*wb = e->w;
		*wn = (uint64_t)1 << 16;     /* FX: one block */
		return;
	}
	*wb = sh->heavy[e->w & ~LIVE_HEAVY].bytes;
	*wn = (uint64_t)sh->heavy[e->w & ~LIVE_HEAVY].blocks << BLOCKS_Q_SHIFT;
}

/* heap.c: every lock, for a reset, a fork, a change of settings or a copy;
 * and let go. */
void heap_lock_all(void) MW_HIDDEN;
void heap_unlock_all(void) MW_HIDDEN;

#endif
