/* trend-raw.c: the stacks of a trend's snapshots between the first and the
 * last, to their rows by the bytes of their frames as the file has them. A
 * snapshot's frames are module indexes and offsets: two snapshots whose
 * module tables name the same modules at the same indexes encode the same
 * stack in the same bytes, so a stack whose bytes were seen in a snapshot
 * decoded and keyed whole goes to that row without its frames being decoded
 * or hashed one by one (most of the time of a trend of ten snapshots of 100
 * 000 stacks). A stack is known by two independent 64-bit hashes of its
 * bytes, their length, its frame count and flags (as rows-seen.c knows one
 * by its frames); a stack not known this way, or a snapshot whose modules
 * differ, is decoded and keyed whole (report-trend.c). */
#include "config.h"
#include "snapshot.h"
#include "trend-raw.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct raw_entry {
	uint64_t h2, len;
	uint32_t nframes, flags, row, pad;
};

static bool raw_eq(const void *entry, const void *key)
{
	const struct raw_entry *e = entry;
	const struct raw_rec *q = key;

	return e->h2 == q->h2 && e->len == q->len && e->nframes == q->nframes && e->flags == q->flags;
}

void trend_raw_hash(const struct snap_raw_stack *st, struct raw_rec *out)
{
	uint64_t h1 = HASH_FNV_START ^ st->frames_len, h2 = UINT64_C(0x9e3779b97f4a7c15) ^ st->flags;
	const unsigned char *p = st->frames;
	size_t n = st->frames_len;
	uint64_t w;

	/* a word at a time, two chains with other constants side by side */
	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h1 = (h1 ^ w) * HASH_FNV_PRIME;
		h1 ^= h1 >> 32;
		h2 = (h2 ^ w) * UINT64_C(0xff51afd7ed558ccd);
		h2 ^= h2 >> 29;
	}
	w = 0;
	memcpy(&w, p, n);
	h1 = hash_mix64(h1 ^ w);
	h2 = hash_mix64(h2 ^ w ^ ((uint64_t)st->nframes << 32));
	out->h1 = h1;
	out->h2 = h2;
	out->len = st->frames_len;
	out->nframes = st->nframes;
	out->flags = st->flags;
	out->live_bytes = st->live_bytes;
	out->live_blocks = st->live_blocks;
	out->live_samples = st->live_samples;
	out->alloc_bytes = st->alloc_bytes;
	out->alloc_blocks = st->alloc_blocks;
}

/* Is the table good for a snapshot of map (nm modules)? */
static bool same_map(const struct trend_raw *tr, const uint32_t *map, size_t nm)
{
	return tr->map && tr->nmodules == nm && (nm == 0 || memcmp(tr->map, map, nm * sizeof *map) == 0);
}

/* The stack of record q as the rows take it: its figures (temporary bytes,
 * which a trend does not show, are 0). */
static struct snap_stack as_stack(const struct raw_rec *q)
{
	struct snap_stack st;

	memset(&st, 0, sizeof st);
	st.flags = q->flags;
	st.nframes = q->nframes;
	st.live_bytes = q->live_bytes;
	st.live_blocks = q->live_blocks;
	st.live_samples = q->live_samples;
	st.alloc_bytes = q->alloc_bytes;
	st.alloc_blocks = q->alloc_blocks;
	return st;
}

bool trend_raw_add_all(struct trend_raw *tr, struct report *r, int k, const uint32_t *map, size_t nm,
		       const struct raw_rec *rec, size_t n, bool more)
{
	struct input *in = &r->in[k];
	struct row **to;
	size_t i;

	if (r->o->by == REPORT_BY_TYPE || more || !tr->index.esize || !same_map(tr, map, nm))
		return false;
	for (i = 0; i < n; i++)
		if (snap_stack_kind(rec[i].flags) == SNAP_KIND_JS)
			return false;   /* (V8's pages are told by their frames) */
	to = xmalloc((n ? n : 1) * sizeof *to);
	/* every row found first: all or nothing */
	for (i = 0; i < n; i++) {
		const struct raw_entry *e;

		to[i] = NULL;
		if (r->o->kind != REPORT_KIND_ALL && (int)snap_stack_kind(rec[i].flags) + 1 != (int)r->o->kind)
			continue;
		if (i + 8 < n && tr->index.slots)
			__builtin_prefetch(tr->index.slots + (hashmap_stored_(rec[i + 8].h1) & tr->index.mask) *
								    tr->index.stride);
		e = hashmap_find(&tr->index, rec[i].h1, raw_eq, &rec[i]);
		if (!e) {
			free(to);
			return false;
		}
		to[i] = &r->rows[e->row];
	}
	for (i = 0; i < n; i++) {
		struct snap_stack st;
		if (!to[i])
			continue;
		st = as_stack(&rec[i]);
		input_add_total(in, &st);
		row_add_stack(to[i], k, &st, in->s->sample_rate);
	}
	free(to);
	return true;
}

void trend_raw_learn(struct trend_raw *tr, struct report *r, int k, const struct raw_rec *rec, size_t n,
		     const struct seen_pre *pre)
{
	const struct input *in = &r->in[k];
	size_t nm = in->s->nmodules;

	if (n != in->s->nstacks || r->o->by == REPORT_BY_TYPE)
		return;
	if (!same_map(tr, in->map, nm)) {
		/* other modules: what was learnt is of no use now */
		hashmap_release(&tr->index);
		free(tr->map);
		tr->map = xmalloc((nm ? nm : 1) * sizeof *tr->map);
		if (nm)
			memcpy(tr->map, in->map, nm * sizeof *tr->map);
		tr->nmodules = nm;
	}
	if (!tr->index.esize)
		hashmap_init(&tr->index, sizeof(struct raw_entry));
	for (size_t i = 0; i < n; i++) {
		uint64_t h;
		const struct row *w = rows_seen_get(r, &in->s->stacks[i], in->map, nm, &pre[i], &h);
		struct raw_entry *e;
		bool added;

		if (!w || rec[i].nframes != in->s->stacks[i].nframes)
			continue;
		e = hashmap_put(&tr->index, rec[i].h1, raw_eq, &rec[i], &added);
		if (!added)
			continue;
		e->h2 = rec[i].h2;
		e->len = rec[i].len;
		e->nframes = rec[i].nframes;
		e->flags = rec[i].flags;
		e->row = (uint32_t)(w - r->rows);
	}
}

void trend_raw_release(struct trend_raw *tr)
{
	hashmap_release(&tr->index);
	free(tr->map);
	memset(tr, 0, sizeof *tr);
}
