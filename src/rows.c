/* rows.c: the stacks of the snapshots of memwatch diff and show as rows: keyed
 * by stack, function or line (--by), headed by the user's own frame, kept or
 * not (--kind, --focus, --hide), a row by stack merging the stacks that differ
 * only in the frames it hides. Stacks are matched by (module build-id, offset)
 * frames, never by raw addresses, so snapshots of two runs of the same
 * binaries diff cleanly whatever their address layouts. The objects' types
 * and chains are rows-types.c's; the trust figures, sorting and selection,
 * rows-rank.c's. */
#include "config.h"
#include "bigmem.h"
#include "hashmap.h"
#include "report-internal.h"
#include "stdframes.h"
#include "util.h"

#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------------------- */
/* Rows, keyed by stack, function or line. */

static void key_reset(struct report *r)
{
	r->klen = 0;
}

static void key_add(struct report *r, const void *p, size_t n)
{
	if (r->klen + n > r->kcap) {
		r->kcap = (r->klen + n) * 2 + 64;
		r->kbuf = xrealloc(r->kbuf, r->kcap);
	}
	memcpy(r->kbuf + r->klen, p, n);
	r->klen += n;
}

static void key_str(struct report *r, const char *s)
{
	key_add(r, s ? s : "", (s ? strlen(s) : 0) + 1);
}

/* A frame into the key, field by field (the struct has padding). */
static void key_frame(struct report *r, const struct gframe *g)
{
	key_add(r, &g->gmod, sizeof g->gmod);
	key_add(r, &g->offset, sizeof g->offset);
}

/* Frame i of a stack in global terms. */
static struct gframe global_frame(const struct snap_frame *sf, const uint32_t *map,
				  size_t nmodules, uint32_t i)
{
	struct gframe g;
	g.gmod = sf[i].module < nmodules ? map[sf[i].module] : SYM_NO_MODULE;
	g.offset = sf[i].offset;
	return g;
}

static struct gframe row_frame(const struct row *w, uint32_t i)
{
	return global_frame(w->sf, w->map, w->nmodules, i);
}

/* A candidate row: a trimmed stack of one input, and the key built for it
 * (by function or line; by stack the frames are the key). */
struct cand {
	const struct snap_frame *sf;
	const uint32_t *map;
	size_t nmodules;
	uint32_t n;
	uint64_t hash;
	uint8_t kind;
};

static bool same_frames(const struct row *w, const struct cand *c);

/* Is c the row w: the same key, or by stack the same frames? A row by stack
 * keeps no key (4 bytes a frame, 16 MB for 100 000 stacks): the same frames
 * as its first stack are its key, and other frames are keyed again to be
 * compared. */
static bool row_matches(struct report *r, const struct row *w, const struct cand *c)
{
	struct gap via;
	size_t m;

	if (w->hash != c->hash || w->kind != c->kind)
		return false;
	if (r->o->by != REPORT_BY_STACK || w->key)
		return w->key && w->keylen == r->klen && memcmp(w->key, r->kbuf, r->klen) == 0;
	r->same_frames = same_frames(w, c);
	if (r->same_frames)
		return true;
	if (r->o->all_frames || c->n == 0)
		return false;
	m = stack_key_ids(r, w->sf, w->map, w->nmodules, w->nframes, &r->mbuf, &r->mcap, &via);
	/* the key: those numbers, then the kind (compared above) */
	return r->klen == m * sizeof *r->mbuf + sizeof c->kind &&
	       memcmp(r->mbuf, r->kbuf, m * sizeof *r->mbuf) == 0;
}

/* What the index of rows is asked: is this candidate that row? */
struct row_query {
	struct report *r;
	const struct cand *c;
};

static bool row_eq(const void *entry, const void *key)
{
	const struct row_query *q = key;
	return row_matches(q->r, &q->r->rows[*(const uint32_t *)entry], q->c);
}

/* Room for n rows (300 bytes each: 30 MB for 100 000 stacks, in huge pages). */
static void rows_room(struct report *r, size_t n)
{
	r->arows = n;
	r->rows = xrealloc(r->rows, n * sizeof *r->rows);
	bigmem_advise(r->rows, n * sizeof *r->rows);
}

/* The row of candidate c, created if new. */
static struct row *row_get(struct report *r, const struct cand *c, bool keyed, bool truncated,
			   bool *added)
{
	struct row_query q = { r, c };
	struct row *w;
	uint32_t *idx;

	if (!r->index.esize)
		hashmap_init(&r->index, sizeof(uint32_t));
	idx = hashmap_put(&r->index, c->hash, row_eq, &q, added);
	if (!*added)
		return &r->rows[*idx];
	if (r->nrows == r->arows)
		rows_room(r, r->arows ? r->arows * 2 : 256);
	*idx = (uint32_t)r->nrows;
	w = &r->rows[r->nrows];
	memset(w, 0, sizeof *w);
	w->seq = (uint32_t)r->nrows++;
	w->hash = c->hash;
	if (keyed) {
		w->key = xmalloc(r->klen);
		memcpy(w->key, r->kbuf, r->klen);
		w->keylen = r->klen;
	}
	w->sf = c->sf;
	w->map = c->map;
	w->nmodules = c->nmodules;
	w->nframes = c->n;
	w->truncated = truncated;
	w->kind = c->kind;
	return w;
}

/* Should the frame at the top of a stack be trimmed: the agent's own, or the
 * allocator's? */
static bool trimmed_frame(struct report *r, const struct gframe *g)
{
	const struct sym_loc *loc;
	uint32_t index;

	if (mod_flags(r, g->gmod) & MOD_AGENT)
		return true;
	loc = frame_loc(r, *g, &index);
	return frame_flags(r, loc, index, g->gmod, loc->nframes - 1) & FN_ALLOC;
}

/* Is d a frame of the user's own code? Not: a frame --hide names, a frame of
 * the C++ standard library by name, one of the allocator, one in a system
 * library, or one of a CPython interpreter. A frame with no name outside the
 * system's libraries is the user's. */
static bool user_frame(struct report *r, const struct dframe *d)
{
	if (d->fl & FX_SET)
		return d->fl & FX_USER;
	return !(fn_flags(r, d) & (FN_HIDE | FN_STD | FN_ALLOC)) &&
	       !(mod_flags(r, d->gmod) & (MOD_SYSTEM | MOD_INTERP));
}

/* Is d left out of a row's stack below its head (in tables; and what rows are
 * keyed by): a frame --hide names, and unless --all-frames a frame of a CPython
 * interpreter (its Python frames stand where the eval loop's were) or of the
 * C++ standard library (std::function's invokers, std::thread's launchers). */
static bool hidden_below(struct report *r, const struct dframe *d)
{
	uint8_t f;

	if (d->fl & FX_SET)
		return d->fl & FX_HIDDEN;
	f = fn_flags(r, d);
	if (f & FN_HIDE)
		return true;
	return !r->o->all_frames && ((f & FN_STD) || (mod_flags(r, d->gmod) & MOD_INTERP));
}

/* The index of the frame that heads a stack of n expanded frames: the first
 * of the user's own; the innermost when there is none, or with --all-frames. */
static size_t head_of(struct report *r, const struct dframe *d, size_t n)
{
	size_t h;

	if (r->o->all_frames)
		return 0;
	for (h = 0; h < n; h++)
		if (user_frame(r, &d[h]))
			return h;
	return 0;
}

/* The frames of a stack the tables show, as indexes into d (into *vis, *cap
 * entries, grown as needed): its head and every frame below it that is not
 * hidden. Returns how many (0 only for a stack with no frames). */
static size_t visible_frames(struct report *r, const struct dframe *d, size_t n, size_t head,
			     uint32_t **vis, size_t *cap)
{
	size_t k = 0;

	for (size_t i = head; i < n; i++) {
		if (i > head && hidden_below(r, &d[i]))
			continue;
		if (k == *cap) {
			*cap = *cap ? *cap * 2 : 16;
			*vis = xrealloc(*vis, *cap * sizeof **vis);
		}
		(*vis)[k++] = (uint32_t)i;
	}
	return k;
}

/* The n frames d as a gap: how many, and whose. */
static void gap_of(struct report *r, const struct dframe *d, size_t n, struct gap *g)
{
	bool all_std = true, one_module = true;

	memset(g, 0, sizeof *g);
	if (n == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		all_std = all_std && (fn_flags(r, &d[i]) & FN_STD);
		one_module = one_module && d[i].gmod == d[0].gmod && d[0].gmod != SYM_NO_MODULE;
	}
	g->lo = g->hi = (uint32_t)n;
	g->what = all_std ? GAP_STD : one_module ? GAP_MODULE : GAP_LIBRARY;
	g->gmod = one_module ? d[0].gmod : SYM_NO_MODULE;
}

/* The gap b of another stack at the same place, into a. */
static void gap_merge(struct gap *a, const struct gap *b)
{
	uint32_t lo = a->lo < b->lo ? a->lo : b->lo, hi = a->hi > b->hi ? a->hi : b->hi;

	if (a->hi == 0) {
		*a = *b;
	} else if (b->hi != 0 && (a->what != b->what || (a->what == GAP_MODULE && a->gmod != b->gmod))) {
		a->what = GAP_LIBRARY;
		a->gmod = SYM_NO_MODULE;
	}
	a->lo = lo;
	a->hi = hi;
}

void describe_gap(const struct report *r, const struct gap *g, char *buf, size_t len)
{
	char n[32];
	const char *s = g->hi == 1 ? "" : "s";

	buf[0] = '\0';
	if (g->hi == 0)
		return;
	if (g->lo == g->hi)
		snprintf(n, sizeof n, "%" PRIu32, g->hi);
	else if (g->lo == 0)
		snprintf(n, sizeof n, "up to %" PRIu32, g->hi);
	else
		snprintf(n, sizeof n, "%" PRIu32 "-%" PRIu32, g->lo, g->hi);
	if (g->what == GAP_STD)
		snprintf(buf, len, "%s std:: frame%s", n, s);
	else if (g->what == GAP_MODULE)
		snprintf(buf, len, "%s frame%s in %s", n, s, symbolizer_module_name(r->z, g->gmod));
	else
		snprintf(buf, len, "%s library frame%s", n, s);
}

/* Are a and b the same frame as a report shows it? By function, file, line
 * and inlining when the frame has them all; a JIT frame (in no module) by its
 * name alone, so that the copies a runtime compiled of one function at
 * several places are one; any other by its address. Names are the
 * symbolizer's interned strings: equal strings are equal pointers. */
static bool dframe_same(const struct dframe *a, const struct dframe *b)
{
	if (a->function != b->function)
		return false;
	if (a->function && a->file)
		return a->file == b->file && a->line == b->line && a->inlined == b->inlined;
	if (a->function && a->gmod == SYM_NO_MODULE)
		return b->gmod == SYM_NO_MODULE && !b->file;
	return a->gmod == b->gmod && a->offset == b->offset && a->sub == b->sub && a->file == b->file;
}

/* The hash of a key, a word at a time (keys by stack are long). */
static uint64_t hash_key(const char *p, size_t n)
{
	uint64_t h = HASH_FNV_START ^ n, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = hash_mix64(h ^ w);
	}
	w = 0;
	memcpy(&w, p, n);
	return hash_mix64(h ^ w);
}

/* A row by stack is keyed by its visible frames (visible_frames): the stacks
 * merged into it differ only in the frames left out. Where they differ is
 * kept in segments of the first stack's expanded frames: segment 0 the frames
 * above the head, segment i (1 to nvis) those between visible frame i - 1 and
 * the next one (the last: below the last visible frame). */
struct seg {
	uint32_t start, len;          /* the first stack's frames there */
	uint32_t keep;                /* of those, how many every stack has alike: all
				       * or none, or above the head those next to it */
	bool differs;                 /* some stack has other frames there */
	struct gap gap;               /* the frames there, over all the stacks */
};

/* Segment i of a stack of n frames with the nvis visible ones vis. */
static void seg_bounds(const uint32_t *vis, size_t nvis, size_t n, size_t i, uint32_t *start,
		       uint32_t *len)
{
	if (i == 0) {
		*start = 0;
		*len = nvis ? vis[0] : (uint32_t)n;
	} else {
		*start = vis[i - 1] + 1;
		*len = (i < nvis ? vis[i] : (uint32_t)n) - *start;
	}
}

/* Merge a stack (expanded into d, n frames, nvis visible ones vis) that has
 * the visible frames of row w but not its frames into w's segments. */
static void row_merge(struct report *r, struct row *w, const struct dframe *d, size_t n,
		      const uint32_t *vis, size_t nvis)
{
	struct expanded e;
	uint32_t *rvis = NULL, st, len, cst, clen;
	size_t rcap = 0, rn, i, k;

	row_expand(r, w, &e, true);
	rn = visible_frames(r, e.d, e.n, e.head, &rvis, &rcap);
	if (rn != nvis)
		goto out;   /* cannot be: the key holds the visible frames */
	if (!w->segs) {
		w->nsegs = (uint32_t)rn + 1;
		w->segs = xcalloc(w->nsegs, sizeof *w->segs);
		for (i = 0; i < w->nsegs; i++) {
			struct seg *g = &w->segs[i];
			seg_bounds(rvis, rn, e.n, i, &g->start, &g->len);
			g->keep = g->len;
			gap_of(r, e.d + g->start, g->len, &g->gap);
		}
	}
	for (i = 0; i < w->nsegs; i++) {
		struct seg *g = &w->segs[i];
		struct gap cg;
		seg_bounds(vis, nvis, n, i, &cst, &clen);
		st = g->start;
		len = g->len;
		gap_of(r, d + cst, clen, &cg);
		gap_merge(&g->gap, &cg);
		if (i == 0) {
			/* above the head: the frames next to it that all share */
			for (k = 0; k < g->keep && k < clen &&
				    dframe_same(&e.d[st + len - 1 - k], &d[cst + clen - 1 - k]);
			     k++)
				;
			g->keep = (uint32_t)k;
			continue;
		}
		if (clen != len)
			g->differs = true;
		for (k = 0; !g->differs && k < len; k++)
			if (!dframe_same(&e.d[st + k], &d[cst + k]))
				g->differs = true;
		if (g->differs)
			g->keep = 0;
	}
out:
	free(rvis);
	free(e.d);
}

void row_expand(struct report *r, const struct row *w, struct expanded *e, bool want_head)
{
	size_t cap = 0;

	e->d = NULL;
	e->n = expand_frames(r, w->sf, w->map, w->nmodules, w->nframes, &e->d, &cap);
	/* whole stacks (folded, flame graphs) need no head: the rule costs a few
	 * string compares per frame, a third of an SVG of 100 000 stacks */
	e->head = want_head ? head_of(r, e->d, e->n) : 0;
}

/* The first frame of a stack (from frame top) that a keyed row (by function or
 * line) is grouped by: the user's own, as row_expand would find it; the
 * frames above it into *skipped (r->vbuf), their number into *nskipped. */
static struct dframe key_frame_of(struct report *r, const struct snap_frame *sf,
				  const uint32_t *map, size_t nm, uint32_t n, size_t *nskipped)
{
	struct dframe first = { 0 };
	bool have = false;
	size_t k = 0;

	*nskipped = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct gframe g = global_frame(sf, map, nm, i);
		uint32_t index;
		const struct sym_loc *loc = frame_loc(r, g, &index);
		for (uint32_t j = 0; j < loc->nframes; j++) {
			struct dframe d = frame_dframe(r, loc, index, j, g);
			if (!have) {
				first = d;
				have = true;
			}
			if (r->o->all_frames || user_frame(r, &d)) {
				*nskipped = k;
				return d;
			}
			if (k == r->vcap) {
				r->vcap = r->vcap ? r->vcap * 2 : 16;
				r->vbuf = xrealloc(r->vbuf, r->vcap * sizeof *r->vbuf);
			}
			r->vbuf[k++] = d;
		}
	}
	return first;
}

/* The source frames a row shows, into *out (caller frees).
 * By stack: without whole, the frames the tables show, from its head: the
 * visible ones (visible_frames), each with the frames left out below it in
 * its after (over all the row's stacks); at most max (0: all). With whole,
 * every frame from the innermost (folded, JSON, flame graphs): of a row that
 * merges stacks with different hidden frames, the frames they all share, and
 * where they differ the frame above says what was left out; *head (may be
 * NULL) is then the index of the head among them.
 * By function or line: the one frame the row is grouped by.
 * *total: how many there are; via (vialen bytes, may be NULL): what the head
 * passed over, over all the row's stacks. */
size_t row_frames(struct report *r, const struct row *w, size_t max, bool whole,
		  struct dframe **out, size_t *total, size_t *head, char *via, size_t vialen)
{
	struct expanded e;
	uint32_t *vis = NULL;
	size_t vcap = 0, nvis, n = 0, i, k;

	row_expand(r, w, &e, !whole || head || w->segs || r->o->by != REPORT_BY_STACK);
	if (via && w->via.hi) {
		char gap[96];
		describe_gap(r, &w->via, gap, sizeof gap);
		snprintf(via, vialen, "via %s", gap);
	} else if (via) {
		via[0] = '\0';
	}
	if (head)
		*head = 0;
	if (r->o->by == REPORT_BY_TYPE) {
		/* the line that allocated most of the type's objects (most of
		 * their growth), under the type as the outermost frame */
		struct row_part *p;
		size_t np = row_top_parts(r, w, 1, &p);
		e.d = xrealloc(e.d, 2 * sizeof *e.d);
		memset(e.d, 0, 2 * sizeof *e.d);
		n = 0;
		if (np && p[0].name) {
			e.d[n].function = p[0].name;
			e.d[n].file = p[0].file;
			e.d[n].line = p[0].line;
			e.d[n].gmod = SYM_NO_MODULE;
			n++;
		}
		free(p);
		e.d[n].function = w->type ? w->type : "?";
		e.d[n].gmod = SYM_NO_MODULE;
		n++;
		if (total)
			*total = n;
		*out = e.d;
		return n;
	}
	if (r->o->by != REPORT_BY_STACK) {
		n = e.n ? 1 : 0;
		if (n) {
			e.d[0] = e.d[e.head];
			if (r->o->by == REPORT_BY_FUNCTION && e.d[0].function) {
				e.d[0].file = NULL;
				e.d[0].line = 0;
				e.d[0].inlined = false;
			}
		}
		if (total)
			*total = n;
		*out = e.d;
		return n;
	}
	if (whole && !w->segs) {
		n = e.n;
		if (head)
			*head = e.head;
	} else if (whole) {
		nvis = visible_frames(r, e.d, e.n, e.head, &vis, &vcap);
		/* in place: what is kept never comes after where it is moved from */
		for (i = 0; i < w->nsegs; i++) {
			const struct seg *g = &w->segs[i];
			size_t from = i == 0 ? g->start + g->len - g->keep : g->start;
			if (g->differs && i > 0 && n > 0)
				e.d[n - 1].after = g->gap;
			for (k = 0; k < g->keep; k++)
				e.d[n++] = e.d[from + k];
			if (i == 0 && head)
				*head = n;
			if (i < nvis)
				e.d[n++] = e.d[vis[i]];
		}
	} else {
		nvis = visible_frames(r, e.d, e.n, e.head, &vis, &vcap);
		for (i = 0; i < nvis; i++) {
			struct dframe d = e.d[vis[i]];
			if (i + 1 < nvis && w->segs && i + 1 < w->nsegs)
				d.after = w->segs[i + 1].gap;
			else if (i + 1 < nvis)
				gap_of(r, e.d + vis[i] + 1, vis[i + 1] - vis[i] - 1, &d.after);
			e.d[n++] = d;
		}
	}
	free(vis);
	if (total)
		*total = n;
	if (max && n > max)
		n = max;
	*out = e.d;
	return n;
}

bool row_places(struct report *r, const struct row *w, size_t max, uint32_t **pl, size_t *cap,
		size_t *n)
{
	if (r->o->by != REPORT_BY_STACK || w->segs)
		return false;
	*n = expand_places(r, w->sf, w->map, w->nmodules, w->nframes, max, pl, cap);
	return true;
}

/* --focus: does some frame of the stack (its function or file) match? Rows
 * are made of the stacks that do, so that a row merging several stacks holds
 * only those through the frame. */
static bool stack_focused(struct report *r, const struct snap_frame *sf, const uint32_t *map,
			  size_t nm, uint32_t n)
{
	size_t nd;

	if (!r->o->has_focus)
		return true;
	nd = expand_frames(r, sf, map, nm, n, &r->vbuf, &r->vcap);
	for (size_t i = 0; i < nd; i++) {
		const struct dframe *d = &r->vbuf[i];
		if ((d->function && !regexec(&r->o->focus, d->function, 0, NULL, 0)) ||
		    (d->file && !regexec(&r->o->focus, d->file, 0, NULL, 0)))
			return true;
	}
	return false;
}

/* Are the frames of candidate c those of row w's first stack? */
static bool same_frames(const struct row *w, const struct cand *c)
{
	if (w->nframes != c->n)
		return false;
	for (uint32_t i = 0; i < c->n; i++) {
		struct gframe a = row_frame(w, i), b = global_frame(c->sf, c->map, c->nmodules, i);
		if (a.gmod != b.gmod || a.offset != b.offset)
			return false;
	}
	return true;
}

/* A mapping V8 made for its heap's pages: a frame of V8's MemoryAllocator
 * in its stack (whose JavaScript objects the js stacks stand for). */
static bool v8_heap_page(struct report *r, const struct snap_stack *st, const uint32_t *map, size_t nm)
{
	size_t nd = expand_frames(r, st->frames, map, nm, st->nframes, &r->vbuf, &r->vcap);
	for (size_t j = 0; j < nd; j++)
		if (r->vbuf[j].function && !strncmp(r->vbuf[j].function, "v8::internal::MemoryAllocator::", 31))
			return true;
	return false;
}

/* The typed samples of input k's stack i: [*lo, *hi) of its sorted index. */
static int cmp_typed(const void *a, const void *b)
{
	const struct snap_typed *x = a, *y = b;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* By type: the rows of stack st (index si) of input k, one per type of its
 * objects, each with the user's line that allocated them as a part. */
static void collect_types(struct report *r, int k, size_t si, const struct snap_stack *st,
			  struct cand *c, uint32_t top, size_t *tpos)
{
	struct input *in = &r->in[k];
	const struct snapshot *s = in->s;
	size_t nskipped;
	struct dframe head = { 0 };
	uint64_t typed_bytes = 0, typed_blocks = 0, typed_samples = 0;
	bool added, have_head = false;
	struct row *w;

	for (;;) {
		const struct snap_typed *t = NULL;
		const char *name;
		uint64_t bytes, blocks, samples;
		struct snap_stack part;

		while (*tpos < s->ntyped && s->typed[*tpos].stack < si)
			(*tpos)++;
		if (*tpos < s->ntyped && s->typed[*tpos].stack == si) {
			t = &s->typed[(*tpos)++];
			name = s->types[t->type];
			bytes = t->live_bytes;
			blocks = t->live_blocks;
			samples = t->live_samples;
			typed_bytes += bytes;
			typed_blocks += blocks;
			typed_samples += samples;
		} else {
			/* what the types did not cover: the stack's other blocks */
			if (typed_bytes >= st->live_bytes)
				return;
			name = "<no type read>";
			bytes = st->live_bytes - typed_bytes;
			blocks = st->live_blocks > typed_blocks ? st->live_blocks - typed_blocks : 0;
			samples = st->live_samples > typed_samples ? st->live_samples - typed_samples : 0;
		}
		if (!have_head) {
			head = key_frame_of(r, st->frames + top, in->map, in->s->nmodules, st->nframes - top,
					    &nskipped);
			have_head = true;
		}
		key_reset(r);
		key_str(r, name);
		key_add(r, &c->kind, sizeof c->kind);
		c->hash = hash_key(r->kbuf, r->klen);
		w = row_get(r, c, true, st->flags & SNAP_STACK_TRUNCATED, &added);
		if (added)
			w->type = name;
		memset(&part, 0, sizeof part);
		part.live_bytes = bytes;
		part.live_blocks = blocks;
		part.live_samples = samples ? samples : st->live_samples;
		w->f[k].live_bytes += bytes;
		w->f[k].live_blocks += blocks;
		w->f[k].live_samples += samples;
		w->f[k].live_var += stack_variance(&part, in->s->sample_rate);
		row_part_add(w, head.function, head.file, head.line, k, bytes, blocks);
		if (!t)
			return;
		row_chains(r, w, k, si, t->type);
	}
}

void input_add_total(struct input *in, const struct snap_stack *st)
{
	in->total.live_bytes += st->live_bytes;
	in->total.live_blocks += st->live_blocks;
	in->total.live_samples += st->live_samples;
	in->total.live_var += stack_variance(st, in->s->sample_rate);
	in->total.alloc_bytes += st->alloc_bytes;
	in->total.alloc_blocks += st->alloc_blocks;
	in->total.temp_bytes += st->temp_bytes;
	in->total.temp_blocks += st->temp_blocks;
	in->live_stacks += st->live_bytes > 0;
}

void row_add_stack(struct row *w, int k, const struct snap_stack *st, uint64_t rate)
{
	w->f[k].live_bytes += st->live_bytes;
	w->f[k].live_blocks += st->live_blocks;
	w->f[k].live_samples += st->live_samples;
	/* the variance of the row's estimate is the sum over its samples,
	 * taken stack by stack (each with its own block size): the merged
	 * estimate is a sum of independent ones */
	w->f[k].live_var += stack_variance(st, rate);
	w->f[k].alloc_bytes += st->alloc_bytes;
	w->f[k].alloc_blocks += st->alloc_blocks;
	w->f[k].temp_bytes += st->temp_bytes;
	w->f[k].temp_blocks += st->temp_blocks;
	w->f[k].alloc_var += volume_variance(st->alloc_bytes, st->alloc_blocks, rate);
	w->f[k].temp_var += volume_variance(st->temp_bytes, st->temp_blocks, rate);
}

/* Add every stack of input k to the rows. By stack, a row is keyed by the
 * frames it shows (its head and the visible frames below it), so stacks that
 * differ only in the frames it leaves out (the interpreter's, the
 * allocator's, the C++ standard library's: the path from a line of the
 * user's code to malloc) are one row; with --all-frames, by every frame. */
void collect(struct report *r, int k)
{
	struct input *in = &r->in[k];
	size_t i, nm = in->s->nmodules, tpos = 0;
	bool has_js = false;

	/* by stack, rows are at most the stacks: room for them at once, not
	 * doubled up to them, which leaves each smaller copy behind in the heap
	 * (23 MB of them for 100 000 rows) */
	if (r->o->by == REPORT_BY_STACK && r->arows < in->s->nstacks)
		rows_room(r, in->s->nstacks);
	/* the stacks of the last input are looked up among those seen before
	 * (if any were), and not recorded: no later input will look; with
	 * same_index, an input's stacks are first matched with those of the
	 * previous one at their index, and only recorded by their index */
	bool by_rows = r->o->by != REPORT_BY_TYPE;
	bool record = by_rows && r->same_index && !r->seen_last;
	bool put_seen = by_rows && !r->seen_last && !r->same_index;
	bool have_prev = by_rows && r->same_index && r->same.row;

	for (i = 0; i < in->s->nstacks && !has_js; i++)
		has_js = snap_stack_kind(in->s->stacks[i].flags) == SNAP_KIND_JS;

	if (by_rows && r->same_index)
		rows_same_begin(r, k, record);
	/* the typed samples by stack (the decoder keeps the agent's order) */
	if (in->s->ntyped)
		qsort(in->s->typed, in->s->ntyped, sizeof *in->s->typed, cmp_typed);
	for (i = 0; i < in->s->nstacks; i++) {
		const struct snap_stack *st = &in->s->stacks[i];
		uint32_t n = st->nframes, j, top = 0;
		size_t nd = 0, nvis = 0, nskipped = 0;
		struct cand c;
		struct gframe g;
		struct gap via = { 0 };
		bool keyed = true, added, visible = false;
		struct row *w;
		uint64_t seen;

		c.kind = (uint8_t)snap_stack_kind(st->flags);
		if (r->o->kind != REPORT_KIND_ALL && c.kind + 1 != (int)r->o->kind)
			continue;

		if (c.kind == SNAP_KIND_JS)
			in->js_bytes += st->live_bytes;
		else if (c.kind == SNAP_KIND_MMAP && has_js && v8_heap_page(r, st, in->map, nm))
			in->v8_page_bytes += st->live_bytes;
		input_add_total(in, st);
		/* the previous input's stack at this index, if it is this one */
		if (have_prev && (w = rows_same_get(r, i, st))) {
			rows_same_put(r, i, w);
			goto add;
		}
		if (have_prev)
			rows_same_fill_seen(r);
		/* a stack of the same frames as one seen before: its row (the
		 * place of one a few stacks on asked for meanwhile) */
		if (in->pre && i + 8 < in->s->nstacks)
			rows_seen_prefetch(r, &in->pre[i + 8]);
		if ((put_seen || (by_rows && r->seen.n)) &&
		    (w = rows_seen_get(r, st, in->map, nm, in->pre ? &in->pre[i] : NULL, &seen))) {
			if (record)
				rows_same_put(r, i, w);
			goto add;
		}
		/* only the frames that are trimmed, grouped by or printed are ever
		 * symbolized: a table of the top rows of 100 000 stacks looks up the
		 * tops of the stacks and the frames it shows, not every frame */
		while (top < n) {
			g = global_frame(st->frames, in->map, nm, top);
			if (!trimmed_frame(r, &g))
				break;
			top++;
		}
		if (top == n)
			top = 0;   /* nothing but allocator frames: keep them all */
		if (!stack_focused(r, st->frames + top, in->map, nm, n - top))
			continue;

		if (r->o->by == REPORT_BY_TYPE) {
			c.sf = st->frames + top;
			c.map = in->map;
			c.nmodules = nm;
			c.n = n - top;
			collect_types(r, k, i, st, &c, top, &tpos);
			continue;
		}
		key_reset(r);
		if (n == 0) {
			key_str(r, "<no frames>");
		} else if (r->o->by == REPORT_BY_STACK && r->o->all_frames) {
			uint64_t h = UINT64_C(1469598103934665603);
			for (j = top; j < n; j++) {
				g = global_frame(st->frames, in->map, nm, j);
				h = (h ^ g.offset ^ ((uint64_t)g.gmod << 44)) * UINT64_C(0x100000001b3);
				h ^= h >> 31;
			}
			c.hash = h ^ c.kind;
			keyed = false;
		} else if (r->o->by == REPORT_BY_STACK) {
			/* the key without expanding the stack; expanded only to
			 * merge it into a row of other frames */
			nvis = stack_key_ids(r, st->frames + top, in->map, nm, n - top, &r->visbuf,
					     &r->viscap, &via);
			key_add(r, r->visbuf, nvis * sizeof *r->visbuf);
			visible = true;
			keyed = false;   /* see row_matches */
		} else {
			struct dframe f = key_frame_of(r, st->frames + top, in->map, nm, n - top, &nskipped);
			gap_of(r, r->vbuf, nskipped, &via);
			if (!f.function || (r->o->by == REPORT_BY_LINE && !f.file)) {
				/* nothing to group by but the address itself */
				g.gmod = f.gmod;
				g.offset = f.offset;
				key_frame(r, &g);
			} else {
				key_str(r, f.function);
				if (r->o->by == REPORT_BY_LINE) {
					key_str(r, f.file);
					key_add(r, &f.line, sizeof f.line);
				}
			}
		}
		if (keyed || visible) {
			key_add(r, &c.kind, sizeof c.kind);
			c.hash = hash_key(r->kbuf, r->klen);
		}
		c.sf = st->frames + top;
		c.map = in->map;
		c.nmodules = nm;
		c.n = n - top;
		w = row_get(r, &c, keyed, st->flags & SNAP_STACK_TRUNCATED, &added);
		if (put_seen)
			rows_seen_put(r, seen, st, in->map, nm, in->pre ? &in->pre[i] : NULL, w);
		if (record)
			rows_same_put(r, i, w);
		if (added) {
			w->via = via;
		} else {
			gap_merge(&w->via, &via);
			w->truncated = w->truncated || (st->flags & SNAP_STACK_TRUNCATED);
			if (visible && !r->same_frames) {
				nd = expand_frames(r, c.sf, c.map, nm, c.n, &r->vbuf, &r->vcap);
				nvis = visible_frames(r, r->vbuf, nd, head_of(r, r->vbuf, nd), &r->visbuf,
						      &r->viscap);
				row_merge(r, w, r->vbuf, nd, r->visbuf, nvis);
			}
		}
add:
		row_add_stack(w, k, st, in->s->sample_rate);
		if (r->o->by == REPORT_BY_STACK) {
			row_types(r, w, k, i, &tpos);
			row_chains(r, w, k, i, UINT32_MAX);
		}
	}
	if (by_rows && r->same_index)
		rows_same_end(r, k);
}

void rows_free(struct report *r)
{
	for (size_t i = 0; i < r->nrows; i++) {
		free(r->rows[i].key);
		free(r->rows[i].segs);
		free(r->rows[i].parts);
		free(r->rows[i].chains);
	}
	free(r->rows);
	free(r->vbuf);
	free(r->visbuf);
	free(r->mbuf);
	frames_release(r);
	free(r->modclass);
	hashmap_release(&r->index);
	hashmap_release(&r->seen);
	rows_same_release(r);
	free(r->kbuf);
}
