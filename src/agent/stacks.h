/* stacks.h: the interned call stacks (stacks.c) as heap.c sees them: the
 * stack records, found by id without a lock, and the calls that intern, count
 * and drop them. Private to heap.c, heap-copy.c and stacks.c; the rest of
 * the agent reads stacks through mw_heap_copy_stacks (agent.h). */
#ifndef MEMWATCH_AGENT_STACKS_H
#define MEMWATCH_AGENT_STACKS_H

#include <stdint.h>

#include "agent.h"

/* The id of a stack refused by the stack limit (or for want of memory). */
#define STACK_DROPPED UINT32_MAX

/* One interned call stack and what its sampled blocks stand for. Its identity
 * (hash, nframes, flags, frames) is written once, before the stack is
 * published; its figures are added to atomically, by any thread. */
struct stack {
	uint64_t hash;
	uint32_t nframes, flags;
	uintptr_t *frames;
	uint64_t live_bytes, live_blocks_fx, live_samples, alloc_bytes, alloc_blocks_fx;
	uint64_t temp_bytes, temp_blocks_fx;  /* of blocks freed soon after (heap.c) */
};

/* Stacks live in chunks that never move while capture runs: chunk k holds
 * 4096 << k of them (see stacks.c). */
#define SCHUNK0_BITS 12
#define SCHUNKS 21
extern struct stack *mw_stack_chunks[SCHUNKS] MW_HIDDEN;
extern uint32_t mw_nstacks MW_HIDDEN;           /* published with release */
extern size_t mw_dropped_stacks MW_HIDDEN;      /* distinct stacks refused */
/* Taken to add a stack, inside a shard lock if at all; heap.c's lock_all
 * takes it last. */
extern mw_spin_t mw_intern_lock MW_HIDDEN;

/* Stack id (below mw_nstacks, as seen by a holder of a shard lock). */
static inline struct stack *stack_at(uint32_t id)
{
	uint64_t x = (uint64_t)id + ((uint64_t)1 << SCHUNK0_BITS);
	unsigned k = (unsigned)(63 - __builtin_clzll(x)) - SCHUNK0_BITS;
	return &__atomic_load_n(&mw_stack_chunks[k], __ATOMIC_RELAXED)[x - ((uint64_t)1 << (SCHUNK0_BITS + k))];
}

/* The hash a stack is interned under. */
uint64_t mw_hash_frames(const uintptr_t *f, unsigned n, uint32_t flags) MW_HIDDEN;
/* The id of this stack, interning it if new; STACK_DROPPED beyond the limit.
 * Called with a shard lock held. */
uint32_t mw_intern(const uintptr_t *f, unsigned n, uint32_t flags, uint64_t h) MW_HIDDEN;
/* Forget every stack and give its storage back. Under every lock. */
void mw_stacks_reset_locked(void) MW_HIDDEN;

#endif
