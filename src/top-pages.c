/* top-pages.c: the pages of memwatch top, one per watched process: its RSS
 * over the run, the view's snapshots (the base growth is counted from, the
 * latest, the latest referrer search) asked of its capture no more often than
 * keeps their cost in the target within budget, and its rows with their
 * recent history. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "top-internal.h"
#include "trend.h"
#include "util.h"

struct page *page_of(struct top *tp, int pid, const char *cmd)
{
	for (size_t i = 0; i < tp->npages; i++)
		if (tp->pages[i].pid == pid)
			return &tp->pages[i];
	tp->pages = xrealloc(tp->pages, (tp->npages + 1) * sizeof *tp->pages);
	struct page *p = &tp->pages[tp->npages++];
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->cmd = xstrdup(cmd ? cmd : "");
	p->view = report_view_new(&tp->ro);
	p->cadence = (double)tp->wo.interval_ms / 1000;
	return p;
}

/* The page's view made anew (other options), with the chains of its search. */
void page_new_view(struct top *tp, struct page *p)
{
	report_view_free(p->view);
	p->view = report_view_new(&tp->ro);
	report_view_set_refs(p->view, p->refs);
}

/* Free s, a snapshot the page held, unless it still holds it otherwise. */
void page_let_go(struct page *p, struct snapshot *s)
{
	if (s != p->base && s != p->now && s != p->refs)
		snapshot_free(s);
}

static void page_drop_snaps(struct page *p)
{
	struct snapshot *b = p->base, *n = p->now, *r = p->refs;

	p->now = p->base = p->refs = NULL;
	snapshot_free(b);
	if (n != b)
		snapshot_free(n);
	if (r != b && r != n)
		snapshot_free(r);
}

void page_free(struct page *p)
{
	report_view_free(p->view);
	p->view = NULL;
	page_drop_snaps(p);
	for (size_t i = 0; i < p->nrh; i++)
		free(p->rh[i].key);
	free(p->rh);
	free(p->cmd);
}

/* The history of the row with key (made when new). */
static struct row_hist *hist_of(struct page *p, const char *key)
{
	for (size_t i = 0; i < p->nrh; i++)
		if (strcmp(p->rh[i].key, key) == 0)
			return &p->rh[i];
	p->rh = xrealloc(p->rh, (p->nrh + 1) * sizeof *p->rh);
	p->rh[p->nrh] = (struct row_hist){ .key = xstrdup(key), .run.stride = 1 };
	return &p->rh[p->nrh++];
}

/* A snapshot's point of a row into its run history (see struct run_hist). */
static void run_add(struct run_hist *r, double v, double se, double t)
{
	if (r->seen++ % r->stride)
		return;
	if (r->n == RUN_HIST) {
		for (unsigned j = 0; j < RUN_HIST / 2; j++) {
			r->v[j] = r->v[2 * j];
			r->se[j] = r->se[2 * j];
			r->t[j] = r->t[2 * j];
		}
		r->n = RUN_HIST / 2;
		r->stride *= 2;
	}
	r->v[r->n] = v;
	r->se[r->n] = se;
	r->t[r->n++] = t;
}

const char *row_verdict(const struct row_hist *h)
{
	double v[RUN_HIST + 1], se[RUN_HIST + 1], t[RUN_HIST + 1];
	unsigned n = h->run.n;
	struct trend tr;

	memcpy(v, h->run.v, n * sizeof v[0]);
	memcpy(se, h->run.se, n * sizeof se[0]);
	memcpy(t, h->run.t, n * sizeof t[0]);
	if (h->n && (n == 0 || h->t > t[n - 1])) {
		v[n] = (double)h->v[h->n - 1];
		se[n] = h->se;
		t[n++] = h->t;
	}
	if (n < 3)
		return NULL;
	trend_of(v, se, t, n, &tr);
	return trend_name(tr.verdict);
}

/* The rows again, from the snapshots held; with new, their histories grow. */
void page_update_rows(struct top *tp, struct page *p, bool fresh)
{
	const struct report_line *l;
	size_t n, i, k;

	if (!p->now)
		return;
	report_view_update(p->view, p->base, p->now, tp->sort);
	if (!fresh)
		return;
	p->gen++;
	n = report_view_rows(p->view, &l);
	for (i = 0; i < n && i < 200; i++) {
		struct row_hist *h = hist_of(p, l[i].key);
		if (h->n == ROW_HIST)
			memmove(h->v, h->v + 1, (ROW_HIST - 1) * sizeof h->v[0]);
		else
			h->n++;
		h->v[h->n - 1] = l[i].live_bytes;
		h->se = l[i].live_sd;
		h->t = tp->t;
		run_add(&h->run, (double)l[i].live_bytes, l[i].live_sd, tp->t);
		h->gen = p->gen;
	}
	/* forget rows not seen for a while */
	for (i = 0, k = 0; i < p->nrh; i++) {
		if (p->gen - p->rh[i].gen > ROW_HIST)
			free(p->rh[i].key);
		else
			p->rh[k++] = p->rh[i];
	}
	p->nrh = k;
}

/* Seconds between view snapshots that keep their cost within the budget,
 * on the grid of the interval. */
static double cadence_of(const struct top *tp, const struct capture_peek_cost *c)
{
	double iv = (double)tp->wo.interval_ms / 1000, need = 0, k;

	if (c->cpu_ms >= 0)
		need = c->cpu_ms / 1000 / CPU_BUDGET;
	if (c->wall_ms / 1000 / WALL_BUDGET > need)
		need = c->wall_ms / 1000 / WALL_BUDGET;
	k = ceil(need / iv);
	return (k < 1 ? 1 : k) * iv;
}

/* The referrer search of page p came with its snapshot s at t: the latest
 * from now on. */
static void page_refs_in(struct top *tp, struct page *p, double t, struct snapshot *s)
{
	const struct snap_refsearch *q = &s->refsearch;
	struct snapshot *old = p->refs;
	char when[32];

	p->refs_asked = false;
	p->refs = s;
	p->refs_t = t;
	page_let_go(p, old);
	report_view_set_refs(p->view, s);
	fmt_seconds(when, sizeof when, t);
	if (q->status == SNAP_REFS_UNAVAILABLE || q->status == SNAP_REFS_NO_GIL)
		snprintf(tp->msg, sizeof tp->msg, "pid %d: referrers not searched: %.180s", p->pid,
			 q->note ? q->note : "unknown");
	else
		snprintf(tp->msg, sizeof tp->msg, "pid %d: referrers searched at %s: %zu chain%s (Enter "
			 "on a row by stack or type shows its own)", p->pid, when, s->nchains,
			 s->nchains == 1 ? "" : "s");
}

/* A sample of one process: its RSS history, and a view snapshot when due. */
void page_sample(struct top *tp, struct page *p, double t, const struct watch_member *m)
{
	struct snapshot *s;
	struct capture_peek_cost cost;
	unsigned oldest;

	p->live = true;
	p->t[p->hh] = t;
	p->rss[p->hh] = (double)m->s->rss * 1024;
	p->hh = (p->hh + 1) % HIST;
	if (p->nh < HIST)
		p->nh++;
	/* over the last minute */
	oldest = (p->hh + HIST - p->nh) % HIST;
	while (oldest != (p->hh + HIST - 1) % HIST && t - p->t[oldest] > 60)
		oldest = (oldest + 1) % HIST;
	p->have_rate = t - p->t[oldest] >= 0.9;
	if (p->have_rate)
		p->rate = (p->rss[(p->hh + HIST - 1) % HIST] - p->rss[oldest]) / (t - p->t[oldest]) * 60;
	p->state = capture_state_name(m->cap);
	p->rate_bytes = capture_rate(m->cap);
	p->shared = capture_shared(m->cap);
	if (tp->paused || t + (double)tp->wo.interval_ms / 2000 < p->next_peek)
		return;
	s = capture_peek(m->cap, t, PEEK_WAIT_MS, p->refs_asked, &cost);
	if (!s)
		return;
	/* a search's time is not what a view's snapshot costs */
	if (!s->has_refs) {
		p->cost = cost;
		p->have_cost = true;
		p->cadence = cadence_of(tp, &cost);
	}
	p->next_peek = t + p->cadence;
	if (!p->base) {
		/* the first: what growth is measured from */
		p->base = s;
		p->now = s;
	} else {
		struct snapshot *old = p->now;
		p->now = s;
		page_let_go(p, old);
	}
	if (s->has_refs)
		page_refs_in(tp, p, t, s);
	else if (p->refs_asked)
		p->next_peek = 0;   /* it answered an earlier request: ask again */
	page_update_rows(tp, p, true);
}
