/* report-pprof.c: --format pprof, the rows as a pprof profile (encoded by
 * pprof.c). */
#include "config.h"
#include "pprof.h"
#include "report-internal.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------------------- */
/* pprof output (the encoder is pprof.c): every row with something to show, by
 * stack; in a diff the values are changes, negative where memory was freed. */

static bool pred_pprof(const struct report *r, const struct row *w)
{
	if (r->nin == 2)
		return (w->growth || w->f[0].live_blocks != w->f[1].live_blocks ||
			w->f[0].alloc_bytes != w->f[1].alloc_bytes) &&
		       (uint64_t)llabs(w->growth) >= r->o->min_bytes;
	return (w->f[0].live_bytes || w->f[0].alloc_bytes) && w->val[0] >= r->o->min_bytes;
}

/* Largest change first, growth or not. */
static int cmp_change(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa, *b = *(const struct row *const *)pb;
	if (llabs(a->growth) != llabs(b->growth))
		return llabs(a->growth) > llabs(b->growth) ? -1 : 1;
	return cmp_seq(a, b);
}

/* The locations of a row: the frames its stacks share (row_frames), as
 * parts of addresses, at most max addresses (0: all). *n of them, caller
 * frees. */
static struct pprof_part *row_parts(struct report *r, const struct row *w, size_t max, uint32_t *n)
{
	struct dframe *d;
	size_t nd = row_frames(r, w, 0, true, &d, NULL, NULL, NULL, 0), k = 0;
	struct pprof_part *p = xcalloc(nd ? nd : 1, sizeof *p);

	for (size_t i = 0; i < nd; i++) {
		struct pprof_part *last = k ? &p[k - 1] : NULL;
		if (last && last->gmod == d[i].gmod && last->offset == d[i].offset &&
		    last->first + last->n == d[i].sub) {
			last->n++;
			continue;
		}
		if (max && k == max)
			break;
		p[k].gmod = d[i].gmod;
		p[k].offset = d[i].offset;
		p[k].first = d[i].sub;
		p[k++].n = 1;
	}
	free(d);
	*n = (uint32_t)k;
	return p;
}

/* The samples of the rows v, made one at a time as pprof.c writes them. */
struct samples {
	struct report *r;
	struct row **v;
	size_t n, i;                  /* rows, and the next one */
	uint32_t t;                   /* the row's next part by type, once its first
				       * sample is out */
	struct pprof_sample q;        /* the row's first sample */
	bool have;                    /* q is row i - 1's, its parts not all out */
};

/* A value of a sample: after's, less before's in a diff. */
static int64_t change(uint64_t before, uint64_t after, bool diff)
{
	return (int64_t)after - (diff ? (int64_t)before : 0);
}

static bool next_sample(void *arg, struct pprof_sample *out)
{
	struct samples *m = arg;
	struct report *r = m->r;
	bool diff = r->nin == 2;
	struct pprof_sample *q = &m->q;

	if (m->have && m->t < m->v[m->i - 1]->nparts) {
		/* CPython: the in-use figures split by the type of the objects,
		 * one sample labelled "type" each; what no type covers (and the
		 * allocations, not known by type) stays on the first, which went
		 * out with these taken from it */
		const struct row_part *pt = &m->v[m->i - 1]->parts[m->t++];
		*out = *q;
		out->type = pt->name;
		memset(out->value, 0, sizeof out->value);
		out->value[PPROF_INUSE_OBJECTS] = change(pt->blocks[0], pt->blocks[diff ? 1 : 0], diff);
		out->value[PPROF_INUSE_SPACE] = change(pt->bytes[0], pt->bytes[diff ? 1 : 0], diff);
		return true;
	}
	if (m->have)
		free((void *)q->parts);
	m->have = false;
	if (m->i == m->n)
		return false;

	const struct row *w = m->v[m->i++];
	const struct figures *a = &w->f[0], *b = &w->f[diff ? 1 : 0];
	rows_prefetch(m->v, m->i - 1, m->n);
	memset(q, 0, sizeof *q);
	if (r->o->by == REPORT_BY_STACK && !w->segs && !r->o->depth_set) {
		/* all the frames of the row's first stack, every source frame of
		 * each: the frames themselves, nothing made (the parts of 100 000
		 * stacks of 40 frames are 94 MB) */
		q->frames = w->sf;
		q->nframes = w->nframes;
		q->map = w->map;
		q->nmodules = w->nmodules;
	} else {
		q->parts = row_parts(r, w, r->o->depth_set ? r->o->depth : 0, &q->nparts);
	}
	q->kind = snap_kind_name(w->kind);
	q->value[PPROF_ALLOC_OBJECTS] = change(a->alloc_blocks, b->alloc_blocks, diff);
	q->value[PPROF_ALLOC_SPACE] = change(a->alloc_bytes, b->alloc_bytes, diff);
	q->value[PPROF_INUSE_OBJECTS] = change(a->live_blocks, b->live_blocks, diff);
	q->value[PPROF_INUSE_SPACE] = change(a->live_bytes, b->live_bytes, diff);
	for (uint32_t t = 0; t < w->nparts; t++) {
		const struct row_part *pt = &w->parts[t];
		q->value[PPROF_INUSE_OBJECTS] -= change(pt->blocks[0], pt->blocks[diff ? 1 : 0], diff);
		q->value[PPROF_INUSE_SPACE] -= change(pt->bytes[0], pt->bytes[diff ? 1 : 0], diff);
	}
	m->t = 0;
	m->have = true;
	*out = *q;
	return true;
}

/* Write the report as a pprof profile. 0, or -1 (said). */
static int pprof_out(FILE *f, struct report *r)
{
	/* --sample alloc: what go tool pprof shows without -sample_index (pprof
	 * has no type for temporary bytes: temp leaves the default alone) */
	struct pprof_source src = { .nin = r->nin, .alloc_default = r->o->sample == REPORT_SAMPLE_ALLOC };
	struct samples m = { .r = r };
	char *cause = NULL;
	int rc, k;

	m.v = select_rows_in_place(r, pred_pprof, r->nin == 2 ? cmp_change : cmp_live, r->o->top, &m.n);
	for (k = 0; k < r->nin; k++) {
		src.path[k] = r->in[k].path;
		src.s[k] = r->in[k].s;
		src.map[k] = r->in[k].map;
	}
	rc = pprof_write_each(f, r->z, &src, next_sample, &m, &cause);
	if (rc < 0) {
		mw_error("%s", cause);
		free(cause);
	}
	if (m.have)
		free((void *)m.q.parts);
	free(m.v);
	return rc;
}


const struct report_writer report_pprof_writer = { "pprof", pprof_out, pprof_out, true };
