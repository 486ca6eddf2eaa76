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

/* What of a stack's flags its row depends on: its kind, truncated or not. */
static uint32_t row_flags(const struct snap_stack *st)
{
	return (uint32_t)snap_stack_kind(st->flags) | (st->flags & SNAP_STACK_TRUNCATED ? 0x100u : 0);
}

static bool seen_eq(const void *entry, const void *key)
{
	const struct seen *e = entry;
	const struct seen_probe *q = key;

	return e->h2 == q->h2 && e->n == q->n && e->flags == q->flags;
}

/* The two hashes of st's frames (module indexes mapped by map, nm of them):
 * FNV-1a's steps, and a multiply-xorshift chain with another constant, run
 * side by side. */
static void seen_hash(const struct snap_stack *st, const uint32_t *map, size_t nm, struct seen_probe *q)
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
	q->hash = hash_mix64(h1);
}

struct row *rows_seen_get(struct report *r, const struct snap_stack *st, const uint32_t *map, size_t nm,
			  struct seen_probe *p)
{
	const struct seen *e;

	seen_hash(st, map, nm, p);
	if (!r->seen.esize)
		return NULL;
	e = hashmap_find(&r->seen, p->hash, seen_eq, p);
	return e ? &r->rows[e->row] : NULL;
}

void rows_seen_put(struct report *r, const struct seen_probe *p, const struct row *w)
{
	struct seen *e;
	bool added;

	if (!r->seen.esize)
		hashmap_init(&r->seen, sizeof(struct seen));
	e = hashmap_put(&r->seen, p->hash, seen_eq, p, &added);
	if (!added)
		return;
	e->h2 = p->h2;
	e->n = p->n;
	e->flags = p->flags;
	e->row = (uint32_t)(w - r->rows);
}
