/* heap-copy.c: the sampler's figures read out of its tables (heap.c): the
 * totals for status, and copies of every stack's figures and of the live
 * sampled blocks for a snapshot, each taken under every lock so that the
 * figures agree with each other. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "heap.h"
#include "stacks.h"

/* The figures of stack i, with what the shards hold back. Under every lock. */
static void stack_figures(uint32_t i, uint64_t d[D_COUNT])
{
	const struct stack *s = stack_at(i);
	unsigned k;
	d[D_LIVE_BYTES] = s->live_bytes;
	d[D_LIVE_BLOCKS_FX] = s->live_blocks_fx;
	d[D_LIVE_SAMPLES] = s->live_samples;
	d[D_ALLOC_BYTES] = s->alloc_bytes;
	d[D_ALLOC_BLOCKS_FX] = s->alloc_blocks_fx;
	d[D_TEMP_BYTES] = s->temp_bytes;
	d[D_TEMP_BLOCKS_FX] = s->temp_blocks_fx;
	for (k = 0; k < NSHARDS; k++) {
		const struct delta *e = &shards[k].delta[i & (DELTAS - 1)];
		unsigned j;
		if (e->id1 == i + 1)
			for (j = 0; j < D_COUNT; j++)
				d[j] += e->d[j];
	}
}

/* Under every lock. */
static void figures_locked(struct mw_heap_figures *f)
{
	uint32_t i, n = mw_nstacks;
	memset(f, 0, sizeof *f);
	for (i = 0; i < NSHARDS; i++) {
		f->samples += shards[i].samples;
		f->dropped_bytes += shards[i].dropped_live_bytes;
	}
	f->stacks = n;
	f->dropped_stacks = mw_dropped_stacks;
	for (i = 0; i < n; i++) {
		uint64_t d[D_COUNT];
		stack_figures(i, d);
		f->live_samples += d[D_LIVE_SAMPLES];
		f->live_bytes += d[D_LIVE_BYTES];
	}
	f->live_bytes += f->dropped_bytes;
}

void mw_heap_figures(struct mw_heap_figures *f)
{
	mw_tls.guard++;
	heap_lock_all();
	figures_locked(f);
	heap_unlock_all();
	mw_tls.guard--;
}

/* The copy holds every lock, so that the figures agree with each other;
 * threads that sample meanwhile wait (spinning, then yielding) for as long
 * as the copy takes. */
int mw_heap_copy_stacks(struct mw_stack_copy **out, size_t *n, struct mw_heap_figures *f)
{
	struct mw_stack_copy *c = NULL;
	size_t i, want;
	int r = 0;

	mw_tls.guard++;
	/* Allocate outside the locks (the stacks only grow until a reset, which
	 * the caller's mw_snapshot_begin holds off); again, bigger, if more
	 * stacks came meanwhile than there was room for. */
	want = __atomic_load_n(&mw_nstacks, __ATOMIC_ACQUIRE) + 1024;
	for (;;) {
		c = malloc(want * sizeof *c);
		heap_lock_all();
		figures_locked(f);
		if (!c || f->stacks <= want)
			break;
		heap_unlock_all();
		free(c);
		want = f->stacks * 2;
	}
	*n = 0;
	if (!c) {
		r = f->stacks ? -1 : 0;
	} else {
		size_t m = f->stacks;
		for (i = 0; i < m; i++) {
			const struct stack *s = stack_at((uint32_t)i);
			uint64_t d[D_COUNT];
			stack_figures((uint32_t)i, d);
			c[i].flags = s->flags;
			c[i].nframes = s->nframes;
			c[i].frames = s->frames;
			c[i].live_bytes = d[D_LIVE_BYTES];
			c[i].live_blocks = (uint64_t)((double)d[D_LIVE_BLOCKS_FX] / FX + 0.5);
			c[i].live_samples = d[D_LIVE_SAMPLES];
			c[i].alloc_bytes = d[D_ALLOC_BYTES];
			c[i].alloc_blocks = (uint64_t)((double)d[D_ALLOC_BLOCKS_FX] / FX + 0.5);
			c[i].temp_bytes = d[D_TEMP_BYTES];
			c[i].temp_blocks = (uint64_t)((double)d[D_TEMP_BLOCKS_FX] / FX + 0.5);
		}
		*n = m;
	}
	heap_unlock_all();
	mw_tls.guard--;
	*out = c;
	return r;
}

int mw_heap_copy_live(struct mw_live_copy **out, size_t *n, size_t max)
{
	struct mw_live_copy *c = NULL;
	size_t want = 1024, have, i, k, m = 0;
	unsigned s;

	mw_tls.guard++;
	for (s = 0; s < NSHARDS; s++)
		want += __atomic_load_n(&shards[s].n, __ATOMIC_RELAXED);
	if (want > max)
		want = max;
	for (;;) {
		c = malloc(want * sizeof *c);
		if (!c)
			break;
		heap_lock_all();
		for (have = 0, s = 0; s < NSHARDS; s++)
			have += shards[s].n;
		if (have <= want || want == max)
			break;
		heap_unlock_all();
		free(c);
		want = have * 2 > max ? max : have * 2;
	}
	if (c) {
		for (s = 0; s < NSHARDS; s++) {
			const struct shard *sh = &shards[s];
			for (i = 0; i < sh->cap && m < want; i++) {
				const struct live *l = &sh->live[i];
				if (!l->key)
					continue;
				c[m].addr = l->key;
				c[m].stack = l->stack;
				live_weights(sh, l, &c[m].bytes, &c[m].blocks_fx);
				m++;
			}
		}
		heap_unlock_all();
	}
	k = m;
	mw_tls.guard--;
	*out = c;
	*n = k;
	return c ? 0 : -1;
}
