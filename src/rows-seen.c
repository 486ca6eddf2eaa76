/* rows-seen.c: the row each distinct stack went to, by its whole frames, so
 * that the same stack in a later snapshot (most stacks of one process are in
 * every snapshot of it) goes to its row without being keyed again: a trend of
 * ten snapshots keys each stack once, not ten times. */
#include "config.h"
#include "report-internal.h"

#include <string.h>

/* One stack seen: its frames (in a snapshot the report holds), what else its
 * row depends on, and the row. */
struct seen {
	const struct snap_frame *sf;
	const uint32_t *map;
	uint32_t nmodules, n, flags, row;
};

struct seen_key {
	const struct snap_stack *st;
	const uint32_t *map;
	size_t nmodules;
};

/* Frame i in global terms (module index mapped, SYM_NO_MODULE if none). */
static inline uint32_t gmod_of(const struct snap_frame *sf, const uint32_t *map, size_t nm, uint32_t i)
{
	return sf[i].module < nm ? map[sf[i].module] : SYM_NO_MODULE;
}

/* What of a stack's flags its row depends on: its kind, truncated or not. */
static uint32_t row_flags(const struct snap_stack *st)
{
	return (uint32_t)snap_stack_kind(st->flags) | (st->flags & SNAP_STACK_TRUNCATED ? 0x100u : 0);
}

static bool seen_eq(const void *entry, const void *key)
{
	const struct seen *e = entry;
	const struct seen_key *q = key;

	if (e->n != q->st->nframes || e->flags != row_flags(q->st))
		return false;
	for (uint32_t i = 0; i < e->n; i++)
		if (e->sf[i].offset != q->st->frames[i].offset ||
		    gmod_of(e->sf, e->map, e->nmodules, i) != gmod_of(q->st->frames, q->map, q->nmodules, i))
			return false;
	return true;
}

static uint64_t seen_hash(const struct seen_key *q)
{
	uint64_t h = HASH_FNV_START ^ row_flags(q->st);

	for (uint32_t i = 0; i < q->st->nframes; i++) {
		h = (h ^ q->st->frames[i].offset) * HASH_FNV_PRIME;
		h = (h ^ gmod_of(q->st->frames, q->map, q->nmodules, i)) * HASH_FNV_PRIME;
	}
	return hash_mix64(h);
}

struct row *rows_seen_get(struct report *r, const struct snap_stack *st, const uint32_t *map, size_t nm,
			  uint64_t *hash)
{
	struct seen_key q = { st, map, nm };
	const struct seen *e;

	*hash = seen_hash(&q);
	if (!r->seen.esize)
		return NULL;
	e = hashmap_find(&r->seen, *hash, seen_eq, &q);
	return e ? &r->rows[e->row] : NULL;
}

void rows_seen_put(struct report *r, uint64_t hash, const struct snap_stack *st, const uint32_t *map,
		   size_t nm, const struct row *w)
{
	struct seen_key q = { st, map, nm };
	struct seen *e;
	bool added;

	if (!r->seen.esize)
		hashmap_init(&r->seen, sizeof(struct seen));
	e = hashmap_put(&r->seen, hash, seen_eq, &q, &added);
	if (!added)
		return;
	e->sf = st->frames;
	e->map = map;
	e->nmodules = (uint32_t)nm;
	e->n = st->nframes;
	e->flags = row_flags(st);
	e->row = (uint32_t)(w - r->rows);
}
