/* rows-rank.c: how far the rows of a report can be trusted, and which are
 * shown: the variance of their sampled estimates, the figure --sample ranks
 * by, their orders and selection, their status in a diff, and the trust
 * figures of a diff (the share of the RSS growth the rows explain). */
#include "config.h"
#include "report-internal.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------------------- */
/* The sampling error of the figures of a stack. */

/* The variance of a stack's live-bytes estimate under Poisson sampling at mean
 * rate R. With n samples of blocks of size s, each kept with p = 1 - e^(-s/R)
 * and weighted s/p, the estimate is E = n s/p and its variance n s^2 (1-p)/p^2
 * = E^2 e^(-s/R) / n: one sample of a small block is as likely noise as not,
 * while a block far larger than R is always sampled and carries no error. The
 * stack's mean block size stands for s (exact when its blocks are alike). */
/* The variance of an estimate of bytes in blocks (allocated in all, or
 * temporary) at sample rate rate, for which no count of samples is kept: as
 * if every block had the mean size s, it is bytes * s * (1 - p) / p, with p
 * the chance of sampling a block of s bytes (about bytes * rate for small
 * blocks); blocks of other sizes make it smaller. */
double volume_variance(uint64_t bytes, uint64_t blocks, uint64_t rate)
{
	double e = (double)bytes, s, p;
	if (rate <= 1 || !bytes || !blocks)
		return 0;
	s = e / (double)blocks;
	p = -expm1(-(s + 1) / (double)rate);
	return e * s * (1 - p) / p;
}

double stack_variance(const struct snap_stack *st, uint64_t rate)
{
	double e = (double)st->live_bytes, s;
	if (rate <= 1 || st->live_samples == 0 || st->live_blocks == 0)
		return 0;
	s = e / (double)st->live_blocks;
	return e * e * exp(-s / (double)rate) / (double)st->live_samples;
}

/* --------------------------------------------------------------------------- */
/* Sorting and selecting rows. */

/* A row's change and its uncertainty, once every snapshot is collected. In a
 * diff the two estimates are taken as independent (they are, across runs;
 * within one run they share samples, and the error is smaller than said). */
uint64_t sample_bytes(const struct figures *f, enum report_sample sample)
{
	return sample == REPORT_SAMPLE_ALLOC ? f->alloc_bytes
	       : sample == REPORT_SAMPLE_TEMP ? f->temp_bytes : f->live_bytes;
}

uint64_t sample_blocks(const struct figures *f, enum report_sample sample)
{
	return sample == REPORT_SAMPLE_ALLOC ? f->alloc_blocks
	       : sample == REPORT_SAMPLE_TEMP ? f->temp_blocks : f->live_blocks;
}

double sample_var(const struct figures *f, enum report_sample sample)
{
	return sample == REPORT_SAMPLE_ALLOC ? f->alloc_var
	       : sample == REPORT_SAMPLE_TEMP ? f->temp_var : f->live_var;
}

const char *sample_words(enum report_sample sample)
{
	return sample == REPORT_SAMPLE_ALLOC ? "allocated"
	       : sample == REPORT_SAMPLE_TEMP ? "temporary" : "live heap";
}

void row_finish(struct row *w, bool diff, enum report_sample sample)
{
	double v;
	w->val[0] = sample_bytes(&w->f[0], sample);
	w->val[1] = sample_bytes(&w->f[1], sample);
	w->growth = (int64_t)w->val[1] - (int64_t)w->val[0];
	v = sample_var(&w->f[0], sample) + (diff ? sample_var(&w->f[1], sample) : 0);
	w->sd = sqrt(v);
	w->weak = fabs(diff ? (double)w->growth : (double)w->val[0]) <= 2 * w->sd;
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
	if (a->val[0] != b->val[0])
		return a->val[0] > b->val[0] ? -1 : 1;
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

/* Move v[i] down the heap v[0..n) whose root is the row that sorts last by cmp. */
static void sift_down(struct row **v, size_t n, size_t i, int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t c = 2 * i + 1;
		struct row *t;
		if (c >= n)
			return;
		if (c + 1 < n && cmp(&v[c + 1], &v[c]) > 0)
			c++;
		if (cmp(&v[c], &v[i]) <= 0)
			return;
		t = v[c];
		v[c] = v[i];
		v[i] = t;
		i = c;
	}
}

/* Rows passing pred, sorted by cmp, at most limit (0: all). Caller frees.
 * With a limit, the first limit rows are selected on the way (a heap of them
 * whose root is the last) and only they are sorted: a table of the top 10 of
 * 100 000 rows compares each row once or twice, not 17 times. cmp is a total
 * order (the rows' creation order breaks ties), so the rows are those a full
 * sort would give. */
struct row **select_rows(struct report *r, bool (*pred)(const struct report *,
							       const struct row *),
				int (*cmp)(const void *, const void *), size_t limit, size_t *n)
{
	size_t cap = limit && limit < r->nrows ? limit : r->nrows;
	struct row **v = xmalloc((cap ? cap : 1) * sizeof *v);
	size_t i, k = 0;

	for (i = 0; i < r->nrows; i++) {
		struct row *w = &r->rows[i];
		if (!pred(r, w))
			continue;
		if (k < cap) {
			v[k++] = w;
			if (k == cap && cap < r->nrows)
				for (size_t j = k / 2; j-- > 0;)
					sift_down(v, k, j, cmp);
		} else if (cmp(&w, &v[0]) < 0) {
			v[0] = w;
			sift_down(v, k, 0, cmp);
		}
	}
	qsort(v, k, sizeof *v, cmp);
	*n = k;
	return v;
}

static int cmp_address(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa, *b = *(const struct row *const *)pb;
	return a < b ? -1 : a > b;
}

struct row **select_rows_in_place(struct report *r, bool (*pred)(const struct report *,
								  const struct row *),
				  int (*cmp)(const void *, const void *), size_t limit, size_t *n)
{
	struct row **v;
	size_t k = 0;

	if (limit && limit < r->nrows) {
		v = select_rows(r, pred, cmp, limit, n);
		qsort(v, *n, sizeof *v, cmp_address);
		return v;
	}
	v = xmalloc((r->nrows ? r->nrows : 1) * sizeof *v);
	for (size_t i = 0; i < r->nrows; i++)
		if (pred(r, &r->rows[i]))
			v[k++] = &r->rows[i];
	*n = k;
	return v;
}

bool pred_live(const struct report *r, const struct row *w)
{
	return w->val[0] > 0 && w->val[0] >= r->o->min_bytes;
}

bool pred_grown(const struct report *r, const struct row *w)
{
	return w->growth > 0 && (uint64_t)w->growth >= r->o->min_bytes;
}

bool pred_shrunk(const struct report *r, const struct row *w)
{
	return w->growth < 0 && (uint64_t)-w->growth >= r->o->min_bytes;
}

/* Rows that hold bytes of the --sample figure in some snapshot (stacks whose
 * blocks were all freed are in a snapshot too, with no live bytes). */
size_t held_rows(const struct report *r)
{
	size_t i, n = 0;
	for (i = 0; i < r->nrows; i++)
		n += r->rows[i].val[0] > 0 || r->rows[i].val[1] > 0;
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

/* The bytes of an input both its js stacks and V8's heap pages count. */
uint64_t js_counted_twice(const struct input *in)
{
	return in->js_bytes < in->v8_page_bytes ? in->js_bytes : in->v8_page_bytes;
}

/* How much of the RSS growth the sampled stacks explain, or a negative value
 * when RSS did not grow enough to ask (less than 1 MiB: a page here and there). */
double explained_share(const struct report *r)
{
	int64_t rss = rss_growth(r);
	int64_t heap = (int64_t)r->in[1].total.live_bytes - (int64_t)r->in[0].total.live_bytes;
	/* V8's heap pages and the JavaScript objects in them, once */
	heap -= (int64_t)js_counted_twice(&r->in[1]) - (int64_t)js_counted_twice(&r->in[0]);
	if (rss < (int64_t)1 << 20)
		return -1;
	if (heap <= 0)
		return 0;
	return heap >= rss ? 1 : (double)heap / (double)rss;
}
