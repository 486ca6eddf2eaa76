/* stack-cache.h: the stacks a thread sampled, found again without unwinding
 * (stack-cache.c); heap.c's alone. */
#ifndef MEMWATCH_AGENT_STACK_CACHE_H
#define MEMWATCH_AGENT_STACK_CACHE_H

#include <stdint.h>

#include "agent.h"

/* Return addresses an entry holds at most (the frames above the sampling
 * function's own, the hooks' among them). */
#define SC_SLOTS 48

/* One stack, keyed by the return address and the canonical frame address of
 * the sampling function (mw_sampled_alloc, mw_sampled_mmap). ip[k] was read
 * at cfa - 8 + off[k] (off[0] == 0: ip[0] is the key's return address). */
struct mw_sc_entry {
	uintptr_t ra, cfa;          /* ra 0: empty */
	uint32_t gen, id;           /* the interned stack id, while gen == mw_sc_gen */
	/* with a runtime's frames merged in: the interned ids of the last two
	 * merges (mid, while mgen == mw_sc_gen), the latest first, and the
	 * signatures of the runtime's frames they merged (see mw_merge_fn),
	 * with the sample's kind (0: none) */
	uint32_t mgen, mid[2];
	uint64_t msig[2];
	uint16_t n, skip;           /* return addresses; the agent's own first ones */
	uint32_t off[SC_SLOTS];
	uintptr_t ip[SC_SLOTS];
};

/* Bumped (under every heap lock) whenever stack ids change meaning: a reset,
 * new settings, a fork's child. 0 is never current. */
extern uint32_t mw_sc_gen MW_HIDDEN;

/* The calling thread's entry for (ra, cfa) if its stack is the one there now
 * (every return address it holds still in its place), else NULL. */
struct mw_sc_entry *mw_sc_find(uintptr_t ra, uintptr_t cfa) MW_HIDDEN;

/* A miss: the stack into ips (at most cap, innermost first, as mw_unwind gives
 * it), and an entry for it when one could be made (*e, else NULL). */
int mw_sc_unwind(uintptr_t *ips, int cap, uintptr_t ra, uintptr_t cfa,
		 struct mw_sc_entry **e) MW_HIDDEN;

/* Once, from the control thread before capture (idempotent). */
void mw_sc_init(void) MW_HIDDEN;

#endif
