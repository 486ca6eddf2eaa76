/* report-view.c: the rows of memwatch diff and show for a live view (memwatch
 * top): snapshots held in memory, refreshed again and again, one symbolizer
 * kept from one refresh to the next so that each frame is looked up once.
 * The rows are rows.c's; this file only lays them out as plain figures. */
#include "config.h"
#include "report-internal.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What a referrer search found for one row of its snapshot, by the row's
 * key: kept from one update to the next. */
struct view_refs {
	char *key;
	char **kept;
	size_t nkept;
	char *holds;                  /* NULL: none */
};

struct report_view {
	struct report_options o;      /* a copy: its patterns are the caller's */
	struct symbolizer *z;
	struct report r;
	bool loaded;
	struct report_line *lines;
	struct row **order;           /* lines[i] is the row order[i] */
	size_t nlines;
	struct view_refs *refs;       /* the rows of the last search set */
	size_t nrefs;
};

struct report_view *report_view_new(const struct report_options *o)
{
	struct report_view *v = xcalloc(1, sizeof *v);
	v->o = *o;
	v->z = symbolizer_new(o->dirs, o->ndirs);
	return v;
}

/* Forget the rows of the last update (not the symbolizer, nor the snapshots:
 * they are the caller's). */
static void view_clear(struct report_view *v)
{
	size_t i;

	for (i = 0; i < v->nlines; i++) {
		free(v->lines[i].key);
		free(v->lines[i].head);
	}
	free(v->lines);
	free(v->order);
	v->lines = NULL;
	v->order = NULL;
	v->nlines = 0;
	if (!v->loaded)
		return;
	rows_free(&v->r);
	for (int k = 0; k < v->r.nin; k++)
		free(v->r.in[k].map);
	v->loaded = false;
}

static void refs_clear(struct report_view *v)
{
	for (size_t i = 0; i < v->nrefs; i++) {
		free(v->refs[i].key);
		for (size_t k = 0; k < v->refs[i].nkept; k++)
			free(v->refs[i].kept[k]);
		free(v->refs[i].kept);
		free(v->refs[i].holds);
	}
	free(v->refs);
	v->refs = NULL;
	v->nrefs = 0;
}

void report_view_free(struct report_view *v)
{
	if (!v)
		return;
	view_clear(v);
	refs_clear(v);
	symbolizer_free(v->z);
	free(v);
}

/* A frame as one line: "function  file:line" (the file's last component). */
static char *frame_text(const struct dframe *d)
{
	const char *fn = d->function ? d->function : "??";
	const char *file = d->file ? strrchr(d->file, '/') : NULL;

	file = file ? file + 1 : d->file;
	if (file && d->line)
		return xasprintf("%s  %s:%u%s", fn, file, d->line, d->inlined ? " [inlined]" : "");
	if (file)
		return xasprintf("%s  %s", fn, file);
	return xasprintf("%s", fn);
}

/* What identifies a row from one update to the next: the frames it shows
 * (by type: its type, not the line under it, which may change). */
static char *row_key(struct report *r, const struct row *w)
{
	struct dframe *d = NULL;
	size_t n, i, len = 16;
	char *s, *p;

	if (r->o->by == REPORT_BY_TYPE)
		return xasprintf("%u|type|%s", (unsigned)w->kind, w->type ? w->type : "?");
	n = row_frames(r, w, 0, false, &d, NULL, NULL, NULL, 0);
	for (i = 0; i < n; i++)
		len += strlen(d[i].function ? d[i].function : "?") + strlen(d[i].file ? d[i].file : "") + 24;
	s = p = xmalloc(len);
	p += sprintf(p, "%u|", (unsigned)w->kind);
	for (i = 0; i < n; i++)
		p += sprintf(p, "%s@%s:%u|", d[i].function ? d[i].function : "?",
			     d[i].file ? d[i].file : "", d[i].line);
	free(d);
	return s;
}

/* The figures of row w in the latest snapshot. */
static const struct figures *now_of(const struct report *r, const struct row *w)
{
	return &w->f[r->nin - 1];
}

static const struct report *sort_r;   /* for the comparators of qsort */

static int cmp_view_live(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa, *b = *(const struct row *const *)pb;
	uint64_t x = now_of(sort_r, a)->live_bytes, y = now_of(sort_r, b)->live_bytes;
	return x != y ? (x > y ? -1 : 1) : cmp_seq(a, b);
}

/* Allocated since the base (or in all, without one). */
static uint64_t allocated(const struct report *r, const struct row *w)
{
	if (r->nin == 2)
		return w->f[1].alloc_bytes > w->f[0].alloc_bytes ? w->f[1].alloc_bytes - w->f[0].alloc_bytes : 0;
	return w->f[0].alloc_bytes;
}

static int cmp_view_alloc(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa, *b = *(const struct row *const *)pb;
	uint64_t x = allocated(sort_r, a), y = allocated(sort_r, b);
	return x != y ? (x > y ? -1 : 1) : cmp_seq(a, b);
}

/* A type row's head: the type's name, and the kind of its blocks when they
 * are not malloc's. */
static char *type_text(const struct row *w)
{
	if (w->kind > SNAP_KIND_MALLOC)
		return xasprintf("%s [%s]", w->type ? w->type : "?", snap_kind_name(w->kind));
	return xstrdup(w->type ? w->type : "?");
}

static bool pred_any(const struct report *r, const struct row *w)
{
	(void)r;
	return w->f[0].live_bytes || w->f[1].live_bytes || w->f[0].alloc_bytes || w->f[1].alloc_bytes;
}

/* The rows in the order asked, as lines. */
static void view_lay_out(struct report_view *v, enum report_sort sort)
{
	struct report *r = &v->r;
	int (*cmp)(const void *, const void *);
	size_t n, i;

	/* rows by type count live objects only: nothing to order by allocated */
	if (sort == REPORT_SORT_ALLOC && v->o.by == REPORT_BY_TYPE)
		sort = REPORT_SORT_LIVE;
	cmp = sort == REPORT_SORT_LIVE ? cmp_view_live : sort == REPORT_SORT_ALLOC ? cmp_view_alloc :
	      r->nin == 2 ? cmp_growth_desc : cmp_view_live;

	sort_r = r;
	v->order = select_rows(r, pred_any, cmp, 0, &n);
	v->lines = xcalloc(n ? n : 1, sizeof *v->lines);
	v->nlines = n;
	for (i = 0; i < n; i++) {
		const struct row *w = v->order[i];
		struct report_line *l = &v->lines[i];
		struct dframe *d = NULL;
		size_t nf;

		l->key = row_key(r, w);
		if (v->o.by == REPORT_BY_TYPE) {
			l->head = type_text(w);
		} else {
			nf = row_frames(r, w, 1, false, &d, NULL, NULL, NULL, 0);
			l->head = nf ? frame_text(&d[0]) : xstrdup("??");
			free(d);
		}
		l->live_bytes = now_of(r, w)->live_bytes;
		l->live_blocks = now_of(r, w)->live_blocks;
		l->live_sd = sqrt(now_of(r, w)->live_var);
		l->alloc_bytes = allocated(r, w);
		l->growth = r->nin == 2 ? w->growth : (int64_t)w->f[0].live_bytes;
		l->sd = w->sd;
		l->status = r->nin == 2 ? status_of(w) : "live";
		l->weak = w->weak;
	}
}

int report_view_update(struct report_view *v, struct snapshot *base, struct snapshot *now,
		       enum report_sort sort)
{
	struct report *r = &v->r;
	int k;

	view_clear(v);
	memset(r, 0, sizeof *r);
	r->o = &v->o;
	r->z = v->z;
	r->nin = base ? 2 : 1;
	r->in[0].s = base ? base : now;
	r->in[0].path = base ? "base" : "now";
	if (base) {
		r->in[1].s = now;
		r->in[1].path = "now";
	}
	for (k = 0; k < r->nin; k++)
		r->in[k].map = symbolizer_add(v->z, r->in[k].s);
	for (k = 0; k < r->nin; k++)
		collect(r, k);
	for (size_t i = 0; i < r->nrows; i++)
		row_finish(&r->rows[i], r->nin == 2, REPORT_SAMPLE_LIVE);
	v->loaded = true;
	view_lay_out(v, sort);
	return 0;
}

void report_view_set_refs(struct report_view *v, struct snapshot *refs)
{
	struct report r;
	uint32_t *map;

	refs_clear(v);
	if (!refs || (!refs->nchains && !refs->nforward))
		return;
	/* the search's own snapshot in rows made as the view's are, so that
	 * a row of a later snapshot finds its chains by its key */
	memset(&r, 0, sizeof r);
	r.o = &v->o;
	r.z = v->z;
	r.nin = 1;
	r.in[0].s = refs;
	r.in[0].path = "referrers";
	map = r.in[0].map = symbolizer_add(v->z, refs);
	collect(&r, 0);
	for (size_t i = 0; i < r.nrows; i++) {
		const struct row *w = &r.rows[i];
		struct view_refs *e;

		if (!w->nchains && !w->forward)
			continue;
		v->refs = xrealloc(v->refs, (v->nrefs + 1) * sizeof *v->refs);
		e = &v->refs[v->nrefs++];
		e->key = row_key(&r, w);
		e->nkept = row_chain_texts(w, w->nchains, &e->kept);
		e->holds = w->forward ? row_forward_text(w->forward) : NULL;
	}
	rows_free(&r);
	free(map);
}

size_t report_view_rows(const struct report_view *v, const struct report_line **lines)
{
	*lines = v->lines;
	return v->nlines;
}

/* The whole stack of row w, innermost first, one line per frame, the head
 * marked with '>'; into *out, how many. */
static size_t stack_lines(struct report *r, const struct row *w, char ***out)
{
	struct dframe *d = NULL;
	size_t n, k, head = 0, total = 0;
	char **lines;

	n = row_frames(r, w, 0, true, &d, &total, &head, NULL, 0);
	lines = xcalloc(n ? n : 1, sizeof *lines);
	for (k = 0; k < n; k++) {
		char *t = frame_text(&d[k]), gap[96] = "";
		describe_gap(r, &d[k].after, gap, sizeof gap);
		lines[k] = xasprintf("%s %s%s%s%s", k == head ? ">" : " ", t, *gap ? "  (then " : "", gap,
				     *gap ? ")" : "");
		free(t);
	}
	free(d);
	*out = lines;
	return n;
}

/* Parts by their growth, then by their bytes now (after a mark, or on a row
 * that shrank, what it holds still shows). */
static int cmp_part_line(const void *pa, const void *pb)
{
	const struct report_part_line *a = pa, *b = pb;
	if (a->growth != b->growth)
		return a->growth > b->growth ? -1 : 1;
	return a->bytes != b->bytes ? (a->bytes > b->bytes ? -1 : 1) : 0;
}

int report_view_detail(struct report_view *v, size_t i, size_t max_parts, struct report_detail *d)
{
	struct report *r = &v->r;
	const struct row *w;
	size_t n = 0, k;

	memset(d, 0, sizeof *d);
	if (!v->loaded || i >= v->nlines)
		return -1;
	w = v->order[i];
	if (v->o.by != REPORT_BY_TYPE)
		d->nframes = stack_lines(r, w, &d->frames);
	/* by stack, the types; by type, the lines (rows.c keeps no parts for
	 * rows by function or line) */
	d->parts = xcalloc(w->nparts ? w->nparts : 1, sizeof *d->parts);
	for (k = 0; k < w->nparts; k++) {
		struct report_part_line *pl = &d->parts[n];
		const struct row_part *q = &w->parts[k];
		int now = r->nin - 1;

		pl->bytes = q->bytes[now];
		pl->blocks = q->blocks[now];
		pl->growth = r->nin == 2 ? (int64_t)(q->bytes[1] - q->bytes[0]) : (int64_t)q->bytes[0];
		if (!pl->bytes && !pl->growth)
			continue;
		if (v->o.by == REPORT_BY_TYPE) {
			const struct dframe f = { .function = q->name, .file = q->file, .line = q->line };
			pl->text = q->name ? frame_text(&f) : xstrdup("<unknown>");
		} else {
			pl->text = xstrdup(q->name ? q->name : "?");
		}
		n++;
	}
	qsort(d->parts, n, sizeof *d->parts, cmp_part_line);
	if (max_parts && n > max_parts) {
		for (k = max_parts; k < n; k++)
			free(d->parts[k].text);
		n = max_parts;
	}
	d->nparts = n;
	/* what the last search set found for a row of this key */
	for (k = 0; k < v->nrefs; k++) {
		const struct view_refs *e = &v->refs[k];
		if (strcmp(e->key, v->lines[i].key))
			continue;
		d->kept = xcalloc(e->nkept ? e->nkept : 1, sizeof *d->kept);
		for (d->nkept = 0; d->nkept < e->nkept; d->nkept++)
			d->kept[d->nkept] = xstrdup(e->kept[d->nkept]);
		d->holds = e->holds ? xstrdup(e->holds) : NULL;
		break;
	}
	return 0;
}

void report_detail_release(struct report_detail *d)
{
	size_t k;

	for (k = 0; k < d->nframes; k++)
		free(d->frames[k]);
	free(d->frames);
	for (k = 0; k < d->nparts; k++)
		free(d->parts[k].text);
	free(d->parts);
	for (k = 0; k < d->nkept; k++)
		free(d->kept[k]);
	free(d->kept);
	free(d->holds);
	memset(d, 0, sizeof *d);
}

double report_view_explained(const struct report_view *v)
{
	return v->loaded && v->r.nin == 2 ? explained_share(&v->r) : -1;
}

uint64_t report_view_live(const struct report_view *v)
{
	return v->loaded ? v->r.in[v->r.nin - 1].total.live_bytes : 0;
}
