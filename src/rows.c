/* rows.c: the stacks of the snapshots of memwatch diff and show as rows: keyed
 * by stack, function or line (--by), headed by the user's own frame, kept or
 * not (--kind, --focus, --hide), sorted and selected, with the figures that
 * say how far they can be trusted (sampling error, the share of the RSS growth
 * they explain). Stacks are matched by (module build-id, offset) frames, never
 * by raw addresses, so snapshots of two runs of the same binaries diff cleanly
 * whatever their address layouts. */
#include "config.h"
#include "hashmap.h"
#include "report-internal.h"
#include "util.h"

#include <math.h>
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

/* Is c the row w: the same key, or by stack the same frames? */
static bool row_matches(const struct report *r, const struct row *w, const struct cand *c)
{
	uint32_t i;

	if (w->hash != c->hash || w->kind != c->kind)
		return false;
	if (r->o->by != REPORT_BY_STACK || w->key)
		return w->key && w->keylen == r->klen && memcmp(w->key, r->kbuf, r->klen) == 0;
	if (w->nframes != c->n)
		return false;
	for (i = 0; i < c->n; i++) {
		struct gframe a = row_frame(w, i), b = global_frame(c->sf, c->map, c->nmodules, i);
		if (a.gmod != b.gmod || a.offset != b.offset)
			return false;
	}
	return true;
}

/* What the index of rows is asked: is this candidate that row? */
struct row_query {
	const struct report *r;
	const struct cand *c;
};

static bool row_eq(const void *entry, const void *key)
{
	const struct row_query *q = key;
	return row_matches(q->r, &q->r->rows[*(const uint32_t *)entry], q->c);
}

/* The row of candidate c, created if new. */
static struct row *row_get(struct report *r, const struct cand *c, bool keyed, bool truncated)
{
	struct row_query q = { r, c };
	struct row *w;
	uint32_t *idx;
	bool added;

	if (!r->index.esize)
		hashmap_init(&r->index, sizeof(uint32_t));
	idx = hashmap_put(&r->index, c->hash, row_eq, &q, &added);
	if (!added)
		return &r->rows[*idx];
	if (r->nrows == r->arows) {
		r->arows = r->arows ? r->arows * 2 : 256;
		r->rows = xrealloc(r->rows, r->arows * sizeof *r->rows);
	}
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

/* Allocator entry points (as glibc names them in its symbol table and its
 * DWARF) and C++ operator new: frames of these at the top of a stack are the
 * allocation machinery, not the code that asked. */
static bool allocator_function(const char *fn)
{
	static const char *const names[] = {
		"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
		"aligned_alloc", "memalign", "valloc", "pvalloc", "_int_malloc", "_int_realloc",
		"_int_memalign", "_mid_memalign", "tcache_init", "malloc_hook_ini",
		"realloc_hook_ini", "memalign_hook_ini", "__libc_malloc", "__libc_calloc",
		"__libc_realloc", "__libc_memalign", "__libc_valloc", "__libc_pvalloc",
		"__posix_memalign", "__libc_reallocarray", "__GI___libc_malloc",
		"__GI___libc_realloc", "__GI___libc_free", "sysmalloc",
	};
	size_t i;

	if (!fn)
		return false;
	if (strncmp(fn, "operator new", 12) == 0)
		return true;
	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(fn, names[i]) == 0)
			return true;
	return false;
}

/* Should the frame at the top of a stack be trimmed: the agent's own, or the
 * allocator's? */
static bool trimmed_frame(struct report *r, const struct gframe *g)
{
	const struct sym_loc *loc;

	if (g->gmod != SYM_NO_MODULE &&
	    strstr(symbolizer_module_path(r->z, g->gmod), "libmemwatch-agent"))
		return true;
	loc = symbolizer_lookup(r->z, g->gmod, g->offset);
	return allocator_function(loc->frames[loc->nframes - 1].function);
}

/* A symbolized frame as a dframe. */
static struct dframe make_dframe(const struct sym_frame *sf, struct gframe g)
{
	struct dframe d = { sf->function, sf->file, sf->line, sf->inlined, g.gmod, g.offset };
	return d;
}

/* Is the module a system library (under /lib or /usr/lib)? Code there is not
 * the user's: libc, libstdc++, the loader, the system's other libraries. */
static bool system_module(struct report *r, uint32_t gmod)
{
	const char *p;
	if (gmod == SYM_NO_MODULE)
		return false;
	p = symbolizer_module_path(r->z, gmod);
	return !strncmp(p, "/lib/", 5) || !strncmp(p, "/lib64/", 7) || !strncmp(p, "/usr/lib/", 9) ||
	       !strncmp(p, "/usr/lib64/", 11);
}

/* Is the module a CPython interpreter (python3.11, libpython3.11.so.1.0)? Its
 * frames are the interpreter's internals: where the agent read the Python
 * frames, those stand in the stack where the eval loop's frames were. */
static bool interpreter_module(struct report *r, uint32_t gmod)
{
	const char *n;
	if (gmod == SYM_NO_MODULE)
		return false;
	n = symbolizer_module_name(r->z, gmod);
	if (!strncmp(n, "lib", 3))
		n += 3;
	return !strncmp(n, "python", 6) && n[6] >= '2' && n[6] <= '9';
}

/* The qualified name in a demangled one, past the return type that names of
 * template functions carry ("void std::vector<…>::_M_realloc_insert<…>(…)"). */
static const char *qualified_name(const char *fn)
{
	const char *p, *start = fn;
	int depth = 0;

	for (p = fn; *p && !(*p == '(' && depth == 0); p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth > 0)
			depth--;
		else if (*p == ' ' && depth == 0 && strncmp(start, "operator", 8) != 0)
			start = p + 1;
	}
	return start;
}

/* A C++ standard library name: its templates are inlined into the caller. */
static bool std_name(const char *fn)
{
	const char *q;
	if (!fn)
		return false;
	q = qualified_name(fn);
	return !strncmp(q, "std::", 5) || !strncmp(q, "__gnu_cxx::", 11) ||
	       !strncmp(q, "__cxxabiv1::", 12) || !strncmp(q, "__cxa_", 6) ||
	       !strncmp(fn, "operator new", 12) || !strncmp(fn, "operator delete", 15);
}

static bool hidden_frame(const struct report *r, const struct dframe *d)
{
	return r->o->has_hide && d->function && regexec(&r->o->hide, d->function, 0, NULL, 0) == 0;
}

/* Is d a frame of the user's own code? Not: a frame --hide names, a frame of
 * the C++ standard library by name, one of the allocator, one in a system
 * library, or one of a CPython interpreter. A frame with no name outside the
 * system's libraries is the user's. */
static bool user_frame(struct report *r, const struct dframe *d)
{
	return !hidden_frame(r, d) && !std_name(d->function) && !allocator_function(d->function) &&
	       !system_module(r, d->gmod) && !interpreter_module(r, d->gmod);
}

void row_expand(struct report *r, const struct row *w, struct expanded *e, bool want_head)
{
	size_t cap = 0;
	uint32_t i, j;

	e->d = NULL;
	e->n = 0;
	for (i = 0; i < w->nframes; i++) {
		struct gframe g = row_frame(w, i);
		const struct sym_loc *loc = symbolizer_lookup(r->z, g.gmod, g.offset);
		for (j = 0; j < loc->nframes; j++) {
			if (e->n == cap) {
				cap = cap ? cap * 2 : 16;
				e->d = xrealloc(e->d, cap * sizeof *e->d);
			}
			e->d[e->n++] = make_dframe(&loc->frames[j], g);
		}
	}
	/* whole stacks (folded, flame graphs) need no head: the rule costs a few
	 * string compares per frame, a third of an SVG of 100 000 stacks */
	for (e->head = 0; want_head && !r->o->all_frames && e->head < e->n; e->head++)
		if (user_frame(r, &e->d[e->head]))
			break;
	if (e->head == e->n)
		e->head = 0;
}

/* The first frame of a stack (from frame top) that a keyed row (by function or
 * line) is grouped by: the user's own, as row_expand would find it. */
static struct dframe key_frame_of(struct report *r, const struct snap_frame *sf,
				  const uint32_t *map, size_t nm, uint32_t n)
{
	struct dframe first = { 0 };
	bool have = false;

	for (uint32_t i = 0; i < n; i++) {
		struct gframe g = global_frame(sf, map, nm, i);
		const struct sym_loc *loc = symbolizer_lookup(r->z, g.gmod, g.offset);
		for (uint32_t j = 0; j < loc->nframes; j++) {
			struct dframe d = make_dframe(&loc->frames[j], g);
			if (!have) {
				first = d;
				have = true;
			}
			if (r->o->all_frames || user_frame(r, &d))
				return d;
		}
	}
	return first;
}

/* What the head of a row skipped, in a few words: "via 5 std:: frames", "via 2
 * frames in libc.so.6", "via 3 library frames" ("" when nothing was). */
static void describe_skipped(struct report *r, const struct dframe *d, size_t n, char *buf,
			     size_t len)
{
	bool all_std = true, one_module = true;
	size_t i;

	buf[0] = '\0';
	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		all_std = all_std && std_name(d[i].function);
		one_module = one_module && d[i].gmod == d[0].gmod && d[0].gmod != SYM_NO_MODULE;
	}
	if (all_std)
		snprintf(buf, len, "via %zu std:: frame%s", n, n == 1 ? "" : "s");
	else if (one_module)
		snprintf(buf, len, "via %zu frame%s in %s", n, n == 1 ? "" : "s",
			 symbolizer_module_name(r->z, d[0].gmod));
	else
		snprintf(buf, len, "via %zu library frame%s", n, n == 1 ? "" : "s");
}

/* The source frames a row shows, into *out (caller frees): by stack, from its
 * head, at most max (0: all; with whole, every frame from the innermost); by
 * function or line, the one frame it is grouped by. *total: how many there are
 * from the head; via (vialen bytes, may be NULL): what the head skipped. */
size_t row_frames(struct report *r, const struct row *w, size_t max, bool whole,
			 struct dframe **out, size_t *total, char *via, size_t vialen)
{
	struct expanded e;
	size_t from, n = 0, k;

	row_expand(r, w, &e, !whole || via || r->o->by != REPORT_BY_STACK);
	from = whole ? 0 : e.head;
	if (via)
		describe_skipped(r, e.d, e.head, via, vialen);
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
	/* frames --hide names are left out below the head too, in tables, and
	 * so are the interpreter's own unless --all-frames */
	for (k = from; k < e.n; k++)
		if (whole || k == from ||
		    (!hidden_frame(r, &e.d[k]) && (r->o->all_frames || !interpreter_module(r, e.d[k].gmod))))
			e.d[n++] = e.d[k];
	if (total)
		*total = n;
	if (max && n > max)
		n = max;
	*out = e.d;
	return n;
}

/* The variance of a stack's live-bytes estimate under Poisson sampling at mean
 * rate R. With n samples of blocks of size s, each kept with p = 1 - e^(-s/R)
 * and weighted s/p, the estimate is E = n s/p and its variance n s^2 (1-p)/p^2
 * = E^2 e^(-s/R) / n: one sample of a small block is as likely noise as not,
 * while a block far larger than R is always sampled and carries no error. The
 * stack's mean block size stands for s (exact when its blocks are alike). */
static double stack_variance(const struct snap_stack *st, uint64_t rate)
{
	double e = (double)st->live_bytes, s;
	if (rate <= 1 || st->live_samples == 0 || st->live_blocks == 0)
		return 0;
	s = e / (double)st->live_blocks;
	return e * e * exp(-s / (double)rate) / (double)st->live_samples;
}

/* Add every stack of input k to the rows. */
void collect(struct report *r, int k)
{
	struct input *in = &r->in[k];
	size_t i, nm = in->s->nmodules;

	for (i = 0; i < in->s->nstacks; i++) {
		const struct snap_stack *st = &in->s->stacks[i];
		uint32_t n = st->nframes, j, top = 0;
		struct cand c;
		struct gframe g;
		bool keyed = true;
		struct row *w;

		c.kind = (uint8_t)snap_stack_kind(st->flags);
		if (r->o->kind != REPORT_KIND_ALL && c.kind + 1 != (int)r->o->kind)
			continue;

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

		key_reset(r);
		if (n == 0) {
			key_str(r, "<no frames>");
		} else if (r->o->by == REPORT_BY_STACK) {
			uint64_t h = UINT64_C(1469598103934665603);
			for (j = top; j < n; j++) {
				g = global_frame(st->frames, in->map, nm, j);
				h = (h ^ g.offset ^ ((uint64_t)g.gmod << 44)) * UINT64_C(0x100000001b3);
				h ^= h >> 31;
			}
			c.hash = h ^ c.kind;
			keyed = false;
		} else {
			struct dframe f = key_frame_of(r, st->frames + top, in->map, nm, n - top);
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
		if (keyed) {
			key_add(r, &c.kind, sizeof c.kind);
			c.hash = hash_bytes(r->kbuf, r->klen);
		}
		c.sf = st->frames + top;
		c.map = in->map;
		c.nmodules = nm;
		c.n = n - top;
		w = row_get(r, &c, keyed, st->flags & SNAP_STACK_TRUNCATED);
		w->f[k].live_bytes += st->live_bytes;
		w->f[k].live_blocks += st->live_blocks;
		w->f[k].live_samples += st->live_samples;
		w->f[k].live_var += stack_variance(st, in->s->sample_rate);
		w->f[k].alloc_bytes += st->alloc_bytes;
		w->f[k].alloc_blocks += st->alloc_blocks;
		in->total.live_bytes += st->live_bytes;
		in->total.live_blocks += st->live_blocks;
		in->total.live_samples += st->live_samples;
		in->total.live_var += stack_variance(st, in->s->sample_rate);
		in->total.alloc_bytes += st->alloc_bytes;
		in->total.alloc_blocks += st->alloc_blocks;
		in->total.live_stacks += st->live_bytes > 0;
	}
}

/* --------------------------------------------------------------------------- */
/* Sorting and selecting rows. */

/* A row's change and its uncertainty, once every snapshot is collected. In a
 * diff the two estimates are taken as independent (they are, across runs;
 * within one run they share samples, and the error is smaller than said). */
void row_finish(struct row *w, bool diff)
{
	double v;
	w->growth = (int64_t)w->f[1].live_bytes - (int64_t)w->f[0].live_bytes;
	v = w->f[0].live_var + (diff ? w->f[1].live_var : 0);
	w->sd = sqrt(v);
	w->weak = fabs(diff ? (double)w->growth : (double)w->f[0].live_bytes) <= 2 * w->sd;
}

/* Rows with the evidence of enough samples come before the weak ones. */
static int cmp_weak(const struct row *a, const struct row *b)
{
	return a->weak == b->weak ? 0 : a->weak ? 1 : -1;
}

int cmp_seq(const struct row *a, const struct row *b)
{
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int cmp_live(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa, *b = *(const struct row *const *)pb;
	if (cmp_weak(a, b))
		return cmp_weak(a, b);
	if (a->f[0].live_bytes != b->f[0].live_bytes)
		return a->f[0].live_bytes > b->f[0].live_bytes ? -1 : 1;
	return cmp_seq(a, b);
}

/* Weak rows last, then by growth (sign 1: largest first; -1: the most
 * negative first), then in creation order. */
static int cmp_growth(const struct row *a, const struct row *b, int sign)
{
	if (cmp_weak(a, b))
		return cmp_weak(a, b);
	if (a->growth != b->growth)
		return (a->growth > b->growth ? -1 : 1) * sign;
	return cmp_seq(a, b);
}

int cmp_growth_desc(const void *pa, const void *pb)
{
	return cmp_growth(*(const struct row *const *)pa, *(const struct row *const *)pb, 1);
}

int cmp_growth_asc(const void *pa, const void *pb)
{
	return cmp_growth(*(const struct row *const *)pa, *(const struct row *const *)pb, -1);
}

/* Rows passing pred, sorted by cmp, at most limit (0: all). Caller frees. */
struct row **select_rows(struct report *r, bool (*pred)(const struct report *,
							       const struct row *),
				int (*cmp)(const void *, const void *), size_t limit, size_t *n)
{
	struct row **v = xmalloc((r->nrows ? r->nrows : 1) * sizeof *v);
	size_t i, k = 0;

	for (i = 0; i < r->nrows; i++)
		if (pred(r, &r->rows[i]))
			v[k++] = &r->rows[i];
	qsort(v, k, sizeof *v, cmp);
	if (limit && k > limit)
		k = limit;
	*n = k;
	return v;
}

/* --focus: does some frame of the row's stack (its function or file) match? */
bool focused(const struct report *r, const struct row *w)
{
	struct expanded e;
	bool hit = false;

	if (!r->o->has_focus)
		return true;
	row_expand((struct report *)r, w, &e, false);
	for (size_t i = 0; i < e.n && !hit; i++)
		hit = (e.d[i].function && !regexec(&r->o->focus, e.d[i].function, 0, NULL, 0)) ||
		      (e.d[i].file && !regexec(&r->o->focus, e.d[i].file, 0, NULL, 0));
	free(e.d);
	return hit;
}

bool pred_live(const struct report *r, const struct row *w)
{
	return w->f[0].live_bytes > 0 && w->f[0].live_bytes >= r->o->min_bytes && focused(r, w);
}

bool pred_grown(const struct report *r, const struct row *w)
{
	return w->growth > 0 && (uint64_t)w->growth >= r->o->min_bytes && focused(r, w);
}

bool pred_shrunk(const struct report *r, const struct row *w)
{
	return w->growth < 0 && (uint64_t)-w->growth >= r->o->min_bytes && focused(r, w);
}

/* Rows that hold live bytes in some snapshot (stacks whose blocks were all
 * freed are in a snapshot too, with zeros). */
size_t held_rows(const struct report *r)
{
	size_t i, n = 0;
	for (i = 0; i < r->nrows; i++)
		n += r->rows[i].f[0].live_bytes > 0 || r->rows[i].f[1].live_bytes > 0;
	return n;
}

/* What happened to a row between the two snapshots. */
const char *status_of(const struct row *w)
{
	if (w->f[0].live_bytes == 0 && w->f[1].live_bytes > 0)
		return "new";
	if (w->f[1].live_bytes == 0 && w->f[0].live_bytes > 0)
		return "gone";
	if (w->growth > 0)
		return "grown";
	if (w->growth < 0)
		return "shrunk";
	return "same";
}

/* --------------------------------------------------------------------------- */
/* Trust figures: how far the rows account for what grew. */

void sum_kinds(const struct snapshot *s, struct kind_sums *k)
{
	memset(k, 0, sizeof *k);
	for (size_t i = 0; i < s->nregions; i++) {
		const struct snap_region *g = &s->regions[i];
		k->rss[g->kind] += g->rss;
		k->anon[g->kind] += g->anon;
		k->swap[g->kind] += g->swap;
		k->mappings[g->kind] += g->mappings;
	}
}

/* The kind of mapping whose resident memory grew most between the snapshots,
 * and by how much (0 when the breakdown is missing or nothing grew). */
int64_t largest_region_growth(const struct report *r, uint32_t *kind)
{
	struct kind_sums ka, kb;
	int64_t best = 0;

	if (!r->in[0].s->has_regions || !r->in[1].s->has_regions)
		return 0;
	sum_kinds(r->in[0].s, &ka);
	sum_kinds(r->in[1].s, &kb);
	for (uint32_t k = 0; k <= SNAP_REGION_KIND_MAX; k++) {
		int64_t g = (int64_t)kb.rss[k] - (int64_t)ka.rss[k];
		if (g > best) {
			best = g;
			*kind = k;
		}
	}
	return best;
}

/* The RSS growth between the two snapshots (0 when either RSS is unknown). */
int64_t rss_growth(const struct report *r)
{
	const struct snapshot *a = r->in[0].s, *b = r->in[1].s;
	if (!a->rss_bytes || !b->rss_bytes)
		return 0;
	return (int64_t)b->rss_bytes - (int64_t)a->rss_bytes;
}

/* How much of the RSS growth the sampled stacks explain, or a negative value
 * when RSS did not grow enough to ask (less than 1 MiB: a page here and there). */
double explained_share(const struct report *r)
{
	int64_t rss = rss_growth(r);
	int64_t heap = (int64_t)r->in[1].total.live_bytes - (int64_t)r->in[0].total.live_bytes;
	if (rss < (int64_t)1 << 20)
		return -1;
	if (heap <= 0)
		return 0;
	return heap >= rss ? 1 : (double)heap / (double)rss;
}


void rows_free(struct report *r)
{
	for (size_t i = 0; i < r->nrows; i++)
		free(r->rows[i].key);
	free(r->rows);
	hashmap_release(&r->index);
	free(r->kbuf);
}
