/* report-trend.c: memwatch diff of three snapshots or more, or of a run log:
 * every snapshot of one process in one report, each row with its live bytes
 * at every snapshot (rows.c keys them across all of them), its sparkline, and
 * the verdict of its shape (trend.c); from a run log, the time until the
 * memory cgroup's limit. Table and JSON. */
#include "config.h"
#include "plot.h"
#include "report-internal.h"
#include "runlog.h"
#include "trend.h"
#include "trend-raw.h"
#include "trend-read.h"
#include "util.h"

#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What a run log adds: the cgroup and the RSS's slope. */
struct trend_limit {
	bool known;                   /* a limit, and the usage under it */
	double usage, limit;          /* bytes, at the last sample up to the last snapshot */
	double rss_slope;             /* bytes per minute, NaN when not known */
	double rss_to_limit;          /* seconds, -1 when not growing */
};

/* The run being reported: n snapshots, the rows' series. */
struct trendrep {
	struct report r;
	size_t n;
	struct snapshot **s;          /* each snapshot's head (snapshot_read_head) */
	struct snapshot **full;       /* decoded whole: the first, the last, and those
				       * between whose rows point into them (else NULL) */
	struct snap_frame **copies;   /* the frames of rows first seen in a snapshot
				       * between that was freed */
	uint32_t **map;
	const char **paths;
	double *t;                    /* seconds since the first snapshot */
	double *live, *rss;           /* each snapshot's sampled live heap and RSS */
	double *val, *se;             /* row k at snapshot i: [k * n + i] */
	size_t cap;                   /* rows the series have room for */
	struct trend *tr;             /* by row */
	struct trend_limit lim;
	double rss_slope;             /* bytes per minute: from the run log's samples, else
				       * from the snapshots' own RSS */
	struct trend_raw raw;         /* the rows of stacks by their encoded frames */
};

/* Room in the series for the rows r has now; new rows held nothing before. */
static void series_grow(struct trendrep *t)
{
	size_t need = t->r.nrows, cap = t->cap;

	if (need <= cap)
		return;
	while (cap < need)
		cap = cap ? cap * 2 : 1024;
	t->val = xrealloc(t->val, cap * t->n * sizeof *t->val);
	t->se = xrealloc(t->se, cap * t->n * sizeof *t->se);
	memset(t->val + t->cap * t->n, 0, (cap - t->cap) * t->n * sizeof *t->val);
	memset(t->se + t->cap * t->n, 0, (cap - t->cap) * t->n * sizeof *t->se);
	t->cap = cap;
}

/* Row figures of input k into the series at snapshot i; with clear, input
 * 1's figures cleared after, for the next snapshot (one pass over the rows,
 * not two). A trend is of the live heap alone (trend_write). */
static void record(struct trendrep *t, int k, size_t i, bool clear)
{
	series_grow(t);
	for (size_t w = 0; w < t->r.nrows; w++) {
		struct row *row = &t->r.rows[w];
		const struct figures *f = &row->f[k];
		t->val[w * t->n + i] = (double)f->live_bytes;
		t->se[w * t->n + i] = sqrt(f->live_var);
		if (!clear)
			continue;
		memset(&row->f[1], 0, sizeof row->f[1]);
		for (uint32_t p = 0; p < row->nparts; p++)
			row->parts[p].bytes[1] = row->parts[p].blocks[1] = 0;
	}
}

/* Clear what input 1 gave the totals, for the next snapshot (record clears
 * the rows'). */
static void clear_after(struct trendrep *t)
{
	memset(&t->r.in[1].total, 0, sizeof t->r.in[1].total);
	t->r.in[1].js_bytes = t->r.in[1].v8_page_bytes = 0;
}

static void trendrep_free(struct trendrep *t)
{
	/* the inputs are the snapshots below: rows_free only */
	rows_free(&t->r);
	for (size_t i = 0; i < t->n; i++) {
		snapshot_free(t->s[i]);
		if (t->full)
			snapshot_free(t->full[i]);
		if (t->copies)
			free(t->copies[i]);
		free(t->map[i]);
	}
	if (t->r.z)
		symbolizer_free(t->r.z);
	free(t->s);
	free(t->full);
	free(t->copies);
	free(t->map);
	free(t->t);
	free(t->live);
	free(t->rss);
	free(t->val);
	free(t->se);
	free(t->tr);
	trend_raw_release(&t->raw);
}

/* The heads of the n snapshots at paths (process, modules, embedded
 * symbols), of one process in time order, and their modules made known to
 * the symbolizer before any stack is read. 0, or an exit status (said). */
static int trend_read_heads(struct trendrep *t, const char *const *paths, size_t n)
{
	struct report *r = &t->r;
	size_t i;

	t->n = n;
	t->paths = (const char **)paths;
	t->s = xcalloc(n, sizeof *t->s);
	t->map = xcalloc(n, sizeof *t->map);
	t->t = xcalloc(n, sizeof *t->t);
	t->live = xcalloc(n, sizeof *t->live);
	t->rss = xcalloc(n, sizeof *t->rss);
	r->z = symbolizer_new(r->o->dirs, r->o->ndirs);
	for (i = 0; i < n; i++) {
		char *cause = NULL;

		t->s[i] = snapshot_read_head(paths[i], &cause);
		if (!t->s[i]) {
			/* the whole file's reading says what is wrong in its
			 * own words (a checksum mismatch before the rest) */
			struct snapshot *whole;
			free(cause);
			cause = NULL;
			whole = snapshot_read(paths[i], &cause);
			if (!whole) {
				mw_error("%s", cause);
				free(cause);
				return MW_EXIT_BADFILE;
			}
			t->s[i] = whole;
		}
		if (t->s[i]->pid != t->s[0]->pid) {
			mw_error("diff: '%s' is of pid %" PRId32 " and '%s' of pid %" PRId32
				 ": the snapshots of a trend are of one process",
				 paths[0], t->s[0]->pid, paths[i], t->s[i]->pid);
			return MW_EXIT_BADFILE;
		}
		if (i && t->s[i]->time_ns < t->s[i - 1]->time_ns) {
			mw_error("diff: '%s' was taken %.1f s before '%s': give the snapshots in time order",
				 paths[i], (double)(t->s[i - 1]->time_ns - t->s[i]->time_ns) / 1e9,
				 paths[i - 1]);
			return MW_EXIT_USAGE;
		}
		t->t[i] = (double)(t->s[i]->time_ns - t->s[0]->time_ns) / 1e9;
		t->rss[i] = t->s[i]->rss_bytes ? (double)t->s[i]->rss_bytes : NAN;
		t->map[i] = symbolizer_add(r->z, t->s[i]);
	}
	return 0;
}

/* What the reading threads make of a snapshot besides it: the first and the
 * last, its stacks' hashes for rows-seen.c (whose table only the keying
 * thread touches); one between, its stacks' records as scanned (raw): it was
 * decoded no further than its head. */
struct trend_extra {
	bool raw, more;
	size_t n, cap;
	struct seen_pre *pre;
	struct raw_rec *rec;
};

static void raw_each(void *arg, size_t i, const struct snap_raw_stack *st)
{
	struct trend_extra *x = arg;

	if (i >= x->cap) {
		x->cap = x->cap ? x->cap * 2 : 4096;
		x->rec = xrealloc(x->rec, x->cap * sizeof *x->rec);
	}
	trend_raw_hash(st, &x->rec[i]);
	x->n = i + 1;
}

static void extra_free(struct trend_extra *x)
{
	if (x) {
		free(x->pre);
		free(x->rec);
	}
	free(x);
}

static void extra_drop(void *x)
{
	extra_free(x);
}

/* The hashes of s's stacks (of snapshot i) for rows-seen.c, into x->pre. */
static void hash_all(const struct trendrep *t, size_t i, const struct snapshot *s, struct trend_extra *x)
{
	x->pre = xrealloc(x->pre, (s->nstacks ? s->nstacks : 1) * sizeof *x->pre);
	for (size_t k = 0; k < s->nstacks; k++)
		rows_seen_hash(&s->stacks[k], t->map[i], t->s[i]->nmodules, &x->pre[k]);
}

/* Snapshot i, read in a reading thread: the first and the last whole (their
 * rows' frames and the report's head are theirs), with their stacks'
 * hashes; those between scanned (trend-raw.c), only their head decoded (build
 * reads one again whole when a stack of it is not known by its bytes); by
 * type, each whole. */
static struct snapshot *read_snap(void *arg, size_t i, const char *path, void **extra, char **cause)
{
	const struct trendrep *t = arg;
	struct trend_extra *x;
	struct snapshot *s;
	unsigned char *buf;
	size_t len;

	if (t->r.o->by == REPORT_BY_TYPE)
		return snapshot_read(path, cause);
	x = xcalloc(1, sizeof *x);
	if (i == 0 && t->n > 2) {
		/* the first, whole and scanned: the rows of the stacks it
		 * has are known by their bytes from the start */
		char *why = NULL;
		if (snapshot_read_bytes(path, &buf, &len, cause) < 0) {
			extra_free(x);
			return NULL;
		}
		s = snapshot_decode(buf, len, &why);
		if (s && snapshot_scan_stacks(buf, len, raw_each, x, &x->more, &why) == 0 &&
		    x->n == s->nstacks) {
			hash_all(t, i, s, x);
			x->raw = true;
		} else {
			extra_free(x);
			x = NULL;
		}
		free(buf);
		free(why);
		if (!s)
			return snapshot_read(path, cause);
		*extra = x;
		return s;
	} else if (i == 0 || i == t->n - 1) {
		s = snapshot_read(path, cause);
		if (s) {
			hash_all(t, i, s, x);
			x->n = s->nstacks;
		}
	} else if (snapshot_read_bytes(path, &buf, &len, cause) < 0) {
		s = NULL;
	} else {
		char *why = NULL;
		x->raw = true;
		s = snapshot_scan_stacks(buf, len, raw_each, x, &x->more, &why) == 0
			    ? snapshot_decode_head(buf, len, &why) : NULL;
		free(buf);
		free(why);
		if (!s) {
			/* the whole reading says what is wrong */
			extra_free(x);
			return snapshot_read(path, cause);
		}
		return *extra = x, s;
	}
	if (!s || x->n != s->nstacks) {
		extra_free(x);
		return s;
	}
	*extra = x;
	return s;
}

/* Check snapshot s (NULL: not read, cause said) against the head of i: NULL
 * when it is not the file its head was (said). */
static struct snapshot *check_whole(struct trendrep *t, size_t i, struct snapshot *s, char *cause)
{
	if (!s) {
		mw_error("%s", cause);
		free(cause);
		return NULL;
	}
	if (s->pid != t->s[i]->pid || s->time_ns != t->s[i]->time_ns || s->nmodules != t->s[i]->nmodules) {
		mw_error("diff: '%s' changed while it was being read", t->paths[i]);
		snapshot_free(s);
		return NULL;
	}
	return s;
}

/* Done with snapshot i, between the first and the last: free it unless rows
 * point into more than its frames (by type, a type's name; CPython's types
 * and chains), after copying the frames of the rows first seen in it (rows
 * from first on). */
static void release_between(struct trendrep *t, size_t i, struct snapshot *s, size_t first)
{
	struct report *r = &t->r;
	size_t nf = 0, k;
	struct snap_frame *c;

	if (r->o->by == REPORT_BY_TYPE || s->ntypes || s->nchains || s->nforward) {
		t->full[i] = s;
		return;
	}
	for (k = first; k < r->nrows; k++)
		nf += r->rows[k].nframes;
	c = t->copies[i] = xmalloc((nf ? nf : 1) * sizeof *c);
	for (k = first; k < r->nrows; k++) {
		struct row *w = &r->rows[k];
		if (w->nframes)
			memcpy(c, w->sf, w->nframes * sizeof *c);
		w->sf = c;
		c += w->nframes;
	}
	snapshot_free(s);
}

/* The rows of every snapshot, keyed across them all, and their trends: the
 * first snapshot is input 0, each later one input 1 in turn; the first and
 * the last are kept whole (the report's head compares them), those between
 * are freed once their figures are in the series. 0, or an exit status
 * (said). */
static int build(struct trendrep *t)
{
	struct report *r = &t->r;
	struct trend_reader *rd;
	size_t i;

	t->full = xcalloc(t->n, sizeof *t->full);
	t->copies = xcalloc(t->n, sizeof *t->copies);
	/* the snapshots between come and go in blocks of MBs (a file, its
	 * frames' chunks): kept in the heap and reused, not mapped and faulted
	 * in anew for each (a fifth of their decoding's time) */
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	rd = trend_reader_start((const char *const *)t->paths, t->n, 2, read_snap, t, extra_drop);
	for (i = 0; i < t->n; i++) {
		struct trend_extra *x = NULL;
		char *cause = NULL;
		struct snapshot *s = trend_reader_take(rd, i, (void **)&x, &cause);
		size_t first = r->nrows;
		int k = i ? 1 : 0;

		s = check_whole(t, i, s, cause);
		if (!s) {
			extra_free(x);
			trend_reader_stop(rd);
			return MW_EXIT_BADFILE;
		}
		if (k)
			clear_after(t);
		r->in[k] = (struct input){ .path = t->paths[i], .s = s, .map = t->map[i],
					   .pre = x ? x->pre : NULL };
		r->nin = k + 1;
		/* a snapshot between as scanned: its stacks to the rows they
		 * went to before, by their bytes; when one is not known so (new,
		 * or the modules differ), read again whole, keyed, and its
		 * stacks' bytes learnt */
		if (i == 0) {
			collect(r, k);
			if (x && x->raw)
				trend_raw_learn(&t->raw, r, k, x->rec, x->n, x->pre);
		} else if (x && x->raw && !trend_raw_add_all(&t->raw, r, k, t->map[i], t->s[i]->nmodules, x->rec,
						      x->n, x->more)) {
			snapshot_free(s);
			cause = NULL;
			s = check_whole(t, i, snapshot_read(t->paths[i], &cause), cause);
			if (!s) {
				extra_free(x);
				trend_reader_stop(rd);
				return MW_EXIT_BADFILE;
			}
			r->in[k].s = s;
			if (x->n == s->nstacks) {
				hash_all(t, i, s, x);
				r->in[k].pre = x->pre;
			}
			collect(r, k);
			if (r->in[k].pre)
				trend_raw_learn(&t->raw, r, k, x->rec, s->nstacks, x->pre);
		} else if (!x || !x->raw) {
			collect(r, k);
		}
		r->in[k].pre = NULL;
		extra_free(x);
		record(t, k, i, k == 1 && i + 1 < t->n);
		t->live[i] = (double)r->in[k].total.live_bytes;
		if (i == 0 || i == t->n - 1)
			t->full[i] = s;
		else
			release_between(t, i, s, first);
	}
	trend_reader_stop(rd);
	t->tr = xcalloc(r->nrows ? r->nrows : 1, sizeof *t->tr);
	for (i = 0; i < r->nrows; i++) {
		row_finish(&r->rows[i], true, r->o->sample);
		trend_of(t->val + i * t->n, t->se + i * t->n, t->t, t->n, &t->tr[i]);
	}
	{
		/* the RSS's own slope, from the snapshots */
		double *zero = xcalloc(t->n, sizeof *zero);
		struct trend rt;
		bool all = true;
		for (i = 0; i < t->n; i++)
			all = all && !isnan(t->rss[i]);
		t->rss_slope = NAN;
		if (all) {
			trend_of(t->rss, zero, t->t, t->n, &rt);
			t->rss_slope = rt.slope;
		}
		free(zero);
	}
	return 0;
}

/* Row w's place in the series. */
static size_t row_index(const struct trendrep *t, const struct row *w)
{
	return (size_t)(w - t->r.rows);
}

static const struct trendrep *sort_ctx;

/* Growth first to last, largest first; then the rise to the peak; then the
 * order rows were made in. */
static int cmp_trend_rows(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa, *b = *(const struct row *const *)pb;
	const struct trendrep *t = sort_ctx;
	size_t ia = row_index(t, a), ib = row_index(t, b);
	double ra = t->val[ia * t->n + t->tr[ia].peak] - t->val[ia * t->n];
	double rb = t->val[ib * t->n + t->tr[ib].peak] - t->val[ib * t->n];

	if (a->growth != b->growth)
		return a->growth > b->growth ? -1 : 1;
	if (ra != rb)
		return ra > rb ? -1 : 1;
	return cmp_seq(a, b);
}

/* The rows shown: held at some snapshot, moved at least --min-bytes, of the
 * verdict asked; ranked, at most --top. Caller frees. */
static struct row **pick_rows(struct trendrep *t, size_t *nout, size_t counts[TREND_NVERDICTS])
{
	struct report *r = &t->r;
	struct row **v = xcalloc(r->nrows ? r->nrows : 1, sizeof *v);
	size_t n = 0;

	for (size_t i = 0; i < r->nrows; i++) {
		const double *s = t->val + i * t->n;
		double lo = INFINITY, hi = 0;
		for (size_t j = 0; j < t->n; j++) {
			lo = s[j] < lo ? s[j] : lo;
			hi = s[j] > hi ? s[j] : hi;
		}
		if (hi == 0)
			continue;
		counts[t->tr[i].verdict]++;
		if (hi - lo < (double)r->o->min_bytes)
			continue;
		if (r->o->verdict_set && (int)t->tr[i].verdict != r->o->verdict)
			continue;
		v[n++] = &r->rows[i];
	}
	sort_ctx = t;
	qsort(v, n, sizeof *v, cmp_trend_rows);
	if (r->o->top && n > r->o->top)
		n = r->o->top;
	*nout = n;
	return v;
}

/* A duration in words, "4 min 10 s", "2 h 5 min", "3 d 4 h". */
static const char *fmt_eta(char *buf, size_t len, double s)
{
	if (s < 0)
		snprintf(buf, len, "-");
	else if (s < 120)
		snprintf(buf, len, "%.0f s", s);
	else if (s < 7200)
		snprintf(buf, len, "%.0f min", s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%.1f h", s / 3600);
	else
		snprintf(buf, len, "%.1f d", s / 86400);
	return buf;
}

/* A row's seconds until the limit at its slope: leak? rows only. */
static double row_to_limit(const struct trendrep *t, size_t i)
{
	if (!t->lim.known || t->tr[i].verdict != TREND_LEAK)
		return -1;
	return trend_seconds_to_limit(t->lim.usage, t->lim.limit, t->tr[i].slope);
}

/* The cells of the sparkline: at most this many, the last ones. */
#define SPARK_CELLS 16

static int table_trend(FILE *f, struct trendrep *t)
{
	struct report *r = &t->r;
	size_t counts[TREND_NVERDICTS] = { 0 }, nv, i;
	struct row **v = pick_rows(t, &nv, counts);
	char b1[32], b2[32], b3[32], b4[32], spark[3 * SPARK_CELLS + 1], line[96];
	int width = 4 + 1 + 11 + 1 + 11 + 1 + 10 + 2 + SPARK_CELLS + 2 + 9 + 1 + 5 + 1 + 11 + 2 + 6 + 2;

	fprintf(f, "trend of %zu snapshots over %s\n", t->n, fmt_seconds(b1, sizeof b1, t->t[t->n - 1]));
	print_brief(f, r);
	fprintf(f, "live heap ");
	for (i = 0; i < t->n; i++)
		fprintf(f, "%s%s", i ? " " : "", fmt_bytes(b1, sizeof b1, t->live[i]));
	fputc('\n', f);
	if (!isnan(t->rss_slope)) {
		trend_sparkline(t->rss, t->n, SPARK_CELLS, true, spark, sizeof spark);
		fprintf(f, "RSS %s -> %s %s, %s/min", fmt_bytes(b1, sizeof b1, t->rss[0]),
			fmt_bytes(b2, sizeof b2, t->rss[t->n - 1]), spark,
			fmt_signed(b3, sizeof b3, (int64_t)llround(t->rss_slope)));
		if (t->lim.known)
			fprintf(f, "; cgroup %s of %s: the limit in %s at the RSS's slope",
				fmt_bytes(b1, sizeof b1, t->lim.usage), fmt_bytes(b2, sizeof b2, t->lim.limit),
				t->lim.rss_to_limit < 0 ? "- (not growing)"
							 : fmt_eta(b4, sizeof b4, t->lim.rss_to_limit));
		fputc('\n', f);
	}
	fprintf(f, "%zu leak?, %zu plateau, %zu burst, %zu steady, %zu shrinking, %zu unsure %s\n",
		counts[TREND_LEAK], counts[TREND_PLATEAU], counts[TREND_BURST], counts[TREND_STEADY],
		counts[TREND_SHRINKING], counts[TREND_UNSURE], by_plural(r->o->by));
	/* (titled as diff's table is: what reads one reads the other) */
	fprintf(f, "\ngrowth by %s over the run, largest first (the %s at every snapshot)\n",
		by_title(r->o->by), sample_words(r->o->sample));
	if (!nv) {
		fprintf(f, "  (no %s)\n", r->o->verdict_set ? "row of that verdict" : "row");
		free(v);
		return 0;
	}
	fprintf(f, "%4s %11s %11s %11s  %-*s  %-9s %5s %11s  %s%-6s  %s\n", "#", "growth", "last", "\u00b1",
		SPARK_CELLS, "trend", "verdict", "grew", "slope/min", t->lim.known ? "to limit  " : "",
		"status", "where");
	for (i = 0; i < nv; i++) {
		size_t k = row_index(t, v[i]);
		const struct trend *tr = &t->tr[k];
		const double *sv = t->val + k * t->n;
		double hi = 0;
		size_t cells;

		for (size_t j = 0; j < t->n; j++)
			hi = sv[j] > hi ? sv[j] : hi;
		/* from 0: the noise of a row that stays is not drawn as a shape */
		cells = trend_sparkline_scaled(sv, t->n, SPARK_CELLS, 0, hi, true, spark, sizeof spark);

		snprintf(line, sizeof line, "\u00b1%s", fmt_bytes(b3, sizeof b3, t->se[k * t->n + t->n - 1]));
		fprintf(f, "%4zu %11s %11s %11s  %s%*s  %-9s %4.0f%% %11s  ", i + 1,
			fmt_signed(b1, sizeof b1, v[i]->growth),
			fmt_bytes(b2, sizeof b2, t->val[k * t->n + t->n - 1]), line, spark,
			(int)(SPARK_CELLS - cells), "", trend_name(tr->verdict),
			isnan(tr->grown_share) ? 0.0 : 100 * tr->grown_share,
			fmt_signed(b4, sizeof b4, isnan(tr->slope) ? 0 : (int64_t)llround(tr->slope)));
		if (t->lim.known)
			fprintf(f, "%-8s  ", fmt_eta(b1, sizeof b1, row_to_limit(t, k)));
		/* from the first snapshot to the last, as diff says it */
		fprintf(f, "%-6s  ", status_of(v[i]));
		print_row_frames(f, r, v[i], width + (t->lim.known ? 10 : 0));
	}
	free(v);
	return 0;
}

/* A number for JSON: null for NaN. */
static void json_num(FILE *f, double x)
{
	if (isnan(x) || isinf(x))
		fputs("null", f);
	else
		fprintf(f, "%.0f", x);
}

static int json_trend(FILE *f, struct trendrep *t)
{
	struct report *r = &t->r;
	size_t counts[TREND_NVERDICTS] = { 0 }, nv, i, j;
	struct row **v = pick_rows(t, &nv, counts);

	fprintf(f, "{\"version\": 1, \"kind\": \"trend\", \"by\": \"%s\", \"sample\": \"%s\", \"pid\": %" PRId32
		   ",\n \"snapshots\": [",
		by_name(r->o->by), r->o->sample == REPORT_SAMPLE_ALLOC ? "alloc"
				   : r->o->sample == REPORT_SAMPLE_TEMP ? "temp" : "live",
		t->s[0]->pid);
	for (i = 0; i < t->n; i++) {
		fputs(i ? ",\n  {\"path\": " : "\n  {\"path\": ", f);
		json_str(f, t->paths[i]);
		fprintf(f, ", \"time_ns\": %" PRIu64 ", \"seconds\": %.3f, \"live_bytes\": ", t->s[i]->time_ns,
			t->t[i]);
		json_num(f, t->live[i]);
		fputs(", \"rss_bytes\": ", f);
		json_num(f, t->rss[i]);
		fputc('}', f);
	}
	fputs("],\n \"rss_slope_bytes_per_min\": ", f);
	json_num(f, t->rss_slope);
	fputs(",\n \"cgroup\": ", f);
	if (t->lim.known) {
		fprintf(f, "{\"usage_bytes\": %.0f, \"limit_bytes\": %.0f, \"seconds_to_limit\": ", t->lim.usage,
			t->lim.limit);
		if (t->lim.rss_to_limit < 0)
			fputs("null}", f);
		else
			fprintf(f, "%.1f}", t->lim.rss_to_limit);
	} else {
		fputs("null", f);
	}
	fputs(",\n \"verdicts\": {", f);
	for (i = 0; i < TREND_NVERDICTS; i++)
		fprintf(f, "%s\"%s\": %zu", i ? ", " : "", trend_name((enum trend_verdict)i), counts[i]);
	fputs("},\n \"rows\": [", f);
	for (i = 0; i < nv; i++) {
		size_t k = row_index(t, v[i]);
		const struct trend *tr = &t->tr[k];
		double tl = row_to_limit(t, k);

		fprintf(f, "%s\n  {\"verdict\": \"%s\", \"grown_share\": ", i ? "," : "", trend_name(tr->verdict));
		if (isnan(tr->grown_share))
			fputs("null", f);
		else
			fprintf(f, "%.4f", tr->grown_share);
		fputs(", \"slope_bytes_per_min\": ", f);
		json_num(f, tr->slope);
		fputs(", \"seconds_to_limit\": ", f);
		if (tl < 0)
			fputs("null", f);
		else
			fprintf(f, "%.1f", tl);
		fprintf(f, ", \"growth_bytes\": %" PRId64 ",\n   \"bytes\": [", v[i]->growth);
		for (j = 0; j < t->n; j++)
			fprintf(f, "%s%.0f", j ? ", " : "", t->val[k * t->n + j]);
		fputs("], \"sd\": [", f);
		for (j = 0; j < t->n; j++)
			fprintf(f, "%s%.0f", j ? ", " : "", t->se[k * t->n + j]);
		fputs("],\n   ", f);
		json_frames(f, r, v[i]);
		fputc('}', f);
	}
	fputs("\n ]\n}\n", f);
	free(v);
	return 0;
}

/* Write the trend of the n snapshots at paths as o asks, lim from a run log
 * (NULL: none). */
static int trend_write(const struct report_options *o, char *const *paths, size_t n,
		       const struct trend_limit *lim)
{
	struct trendrep t;
	struct outfile *out;
	char *cause = NULL;
	int st;

	if (o->format != REPORT_FMT_TABLE && o->format != REPORT_FMT_JSON) {
		mw_error("diff: a trend of %zu snapshots is a table or json (two snapshots give the other formats)",
			 n);
		return MW_EXIT_USAGE;
	}
	if (o->sample != REPORT_SAMPLE_LIVE) {
		/* allocated and temporary bytes are counted since capture start:
		 * every row of them only ever grows */
		mw_error("diff: a trend of %zu snapshots is of the live heap (--sample %s takes two snapshots)",
			 n, o->sample == REPORT_SAMPLE_ALLOC ? "alloc" : "temp");
		return MW_EXIT_USAGE;
	}
	memset(&t, 0, sizeof t);
	t.r.o = o;
	t.lim.rss_slope = NAN;
	t.lim.rss_to_limit = -1;
	if (lim)
		t.lim = *lim;
	st = trend_read_heads(&t, (const char *const *)paths, n);
	if (!st)
		st = build(&t);
	if (st) {
		trendrep_free(&t);
		return st;
	}
	/* a run log samples the RSS more often than the snapshots: its slope */
	if (lim && !isnan(t.lim.rss_slope))
		t.rss_slope = t.lim.rss_slope;
	if (lim && t.lim.known)
		t.lim.rss_to_limit = trend_seconds_to_limit(t.lim.usage, t.lim.limit, t.rss_slope);
	out = outfile_open(o->output ? o->output : "-", true, &cause);
	if (!out) {
		mw_error("%s", cause);
		free(cause);
		trendrep_free(&t);
		return MW_EXIT_FAILURE;
	}
	if (o->format == REPORT_FMT_JSON)
		json_trend(outfile_stream(out), &t);
	else
		table_trend(outfile_stream(out), &t);
	if (outfile_commit(out, &cause) < 0) {
		mw_error("%s", cause);
		free(cause);
		st = MW_EXIT_FAILURE;
	} else {
		symbolizer_warn_missing(t.r.z);
	}
	trendrep_free(&t);
	return st;
}

int report_trend_write(const struct report_options *o, char *const *paths, int npaths)
{
	return trend_write(o, paths, (size_t)npaths, NULL);
}

/* The cgroup and RSS of pid from the log's samples up to time end. */
static void log_limit(const struct runlog_data *d, int pid, double start, double end,
		      struct trend_limit *lim)
{
	double *x = xcalloc(d->nsamples + 1, sizeof *x), *y = xcalloc(d->nsamples + 1, sizeof *y);
	double *z = xcalloc(d->nsamples + 1, sizeof *z);
	size_t n = 0;
	struct trend tr;

	lim->known = false;
	for (size_t i = 0; i < d->nsamples; i++) {
		const struct runlog_sample_rec *s = &d->samples[i];
		if (s->s.pid != pid || s->t < start - 1e-6 || s->t > end + 1e-6)
			continue;
		x[n] = s->t;
		y[n] = (double)s->s.rss * 1024;
		n++;
		if (s->s.cg_limit != RUNLOG_NONE && s->s.cg_usage != RUNLOG_NONE && s->s.cg_limit) {
			lim->known = true;
			lim->usage = (double)s->s.cg_usage * 1024;
			lim->limit = (double)s->s.cg_limit * 1024;
		}
	}
	if (n >= 2) {
		trend_of(y, z, x, n, &tr);
		lim->rss_slope = tr.slope;
	}
	free(x);
	free(y);
	free(z);
}

int report_trend_log(const struct report_options *o, const char *log, int pid, bool quiet)
{
	struct runlog_data *d = cmdfile_read_log("diff", log);
	struct cmdfile_snap *snaps;
	struct trend_limit lim = { .rss_slope = NAN, .rss_to_limit = -1 };
	size_t n, nmissing, i, k = 0;
	double start = 0, end = 0;
	char *missing, **paths;
	int st;

	if (!d)
		return MW_EXIT_BADFILE;
	n = cmdfile_snapshots(log, d, &snaps, &nmissing, &missing);
	if (nmissing && !quiet)
		mw_warn("diff: %zu snapshot%s named in '%s' not found ('%s'%s): left out", nmissing,
			nmissing == 1 ? "" : "s", log, missing, nmissing > 1 ? " the first" : "");
	free(missing);
	for (i = 0; i < n && !pid; i++) {
		pid = snaps[i].pid;
		for (size_t j = i + 1; j < n; j++)
			if (snaps[j].pid != pid) {
				mw_error("diff: '%s' names the snapshots of more than one process (%d, %d): "
					 "give the snapshots of one", log, pid, snaps[j].pid);
				cmdfile_snaps_free(snaps, n);
				runlog_data_free(d);
				return MW_EXIT_USAGE;
			}
	}
	paths = xcalloc(n ? n : 1, sizeof *paths);
	for (i = 0; i < n; i++)
		if (snaps[i].pid == pid) {
			if (!k)
				start = snaps[i].t;
			end = snaps[i].t;
			paths[k++] = snaps[i].path;
		}
	if (k < 2) {
		mw_error("diff: '%s' names %zu snapshot%s that %s found: a diff takes two or more", log, k,
			 k == 1 ? "" : "s", k == 1 ? "is" : "are");
		st = MW_EXIT_BADFILE;
		goto out;
	}
	log_limit(d, pid, start, end, &lim);
	if (k == 2) {
		st = report_write(o, paths, 2);
		goto out;
	}
	st = trend_write(o, paths, k, &lim);
out:
	free(paths);
	cmdfile_snaps_free(snaps, n);
	runlog_data_free(d);
	return st;
}
