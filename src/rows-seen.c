/* rows-seen.c: the row each distinct stack went to, by its whole frames, so
 * that the same stack in a later snapshot (most stacks of one process are in
 * every snapshot of it) goes to its row without being keyed again: a trend of
 * ten snapshots keys each stack once, not ten times. A stack is known by two
 * independent 64-bit hashes of its frames (global module and offset), its
 * kind and whether it was truncated: two stacks that differ share both with
 * a chance of about 2^-128 per pair, and the frames of the earlier one are
 * not read again (they are in another snapshot, far in memory). */
#include "config.h"
#include "report-internal.h"

#include <string.h>

/* One stack seen: its second hash, its depth and flags, and its row. */
struct seen {
	uint64_t h2;
	uint32_t n, flags, row, pad;
};

struct seen_key {
	uint64_t h2;
	uint32_t n, flags;
};

/* What of a stack's flags its row depends on: its kind, truncated or not. */
static uint32_t row_flags(const struct snap_stack *st)
{
	return (uint32_t)snap_stack_kind(st->flags) | (st->flags & SNAP_STACK_TRUNCATED ? 0x100u : 0);
}

static bool seen_eq(const void *entry, const void *key)
{
	const struct seen *e = entry;
	const struct seen_key *q = key;

	return e->h2 == q->h2 && e->n == q->n && e->flags == q->flags;
}

/* The two hashes of st's frames (module indexes mapped by map, nm of them):
 * FNV-1a's steps, and a multiply-xorshift chain with another constant, run
 * side by side. */
static uint64_t seen_hash(const struct snap_stack *st, const uint32_t *map, size_t nm, struct seen_key *q)
{
	uint64_t h1 = HASH_FNV_START, h2 = UINT64_C(0x9e3779b97f4a7c15);

	q->n = st->nframes;
	q->flags = row_flags(st);
	h1 ^= q->flags;
	h2 ^= (uint64_t)q->flags << 32 | q->n;
	for (uint32_t i = 0; i < st->nframes; i++) {
		const struct snap_frame *f = &st->frames[i];
		uint64_t g = f->module < nm ? map[f->module] : SYM_NO_MODULE;
		uint64_t v = f->offset ^ (g << 48) ^ (g >> 16);

		h1 = (h1 ^ v) * HASH_FNV_PRIME;
		h2 = (h2 ^ v) * UINT64_C(0xff51afd7ed558ccd);
		h2 ^= h2 >> 29;
	}
	q->h2 = hash_mix64(h2);
	return hash_mix64(h1);
}

struct row *rows_seen_get(struct report *r, const struct snap_stack *st, const uint32_t *map, size_t nm,
			  const struct seen_pre *pre, uint64_t *hash)
{
	struct seen_key q;
	const struct seen *e;

	if (pre) {
		*hash = pre->h1;
		q.h2 = pre->h2;
		q.n = pre->n;
		q.flags = pre->flags;
	} else {
		*hash = seen_hash(st, map, nm, &q);
	}
	if (!r->seen.esize)
		return NULL;
	e = hashmap_find(&r->seen, *hash, seen_eq, &q);
	return e ? &r->rows[e->row] : NULL;
}

void rows_seen_put(struct report *r, uint64_t hash, const struct snap_stack *st, const uint32_t *map,
		   size_t nm, const struct seen_pre *pre, const struct row *w)
{
	struct seen_key q;
	struct seen *e;
	bool added;

	if (!r->seen.esize)
		hashmap_init(&r->seen, sizeof(struct seen));
	if (pre) {
		q.h2 = pre->h2;
		q.n = pre->n;
		q.flags = pre->flags;
	} else {
		seen_hash(st, map, nm, &q);
	}
	e = hashmap_put(&r->seen, hash, seen_eq, &q, &added);
	if (!added)
		return;
	e->h2 = q.h2;
	e->n = q.n;
	e->flags = q.flags;
	e->row = (uint32_t)(w - r->rows);
}

void rows_seen_hash(const struct snap_stack *st, const uint32_t *map, size_t nm, struct seen_pre *out)
{
	struct seen_key q;

	out->h1 = seen_hash(st, map, nm, &q);
	out->h2 = q.h2;
	out->n = q.n;
	out->flags = q.flags;
}

void rows_seen_prefetch(const struct report *r, const struct seen_pre *pre)
{
	const struct hashmap *m = &r->seen;

	if (m->slots)
		__builtin_prefetch(m->slots + (hashmap_stored_(pre->h1) & m->mask) * m->stride);
}
