/* top.c: memwatch top -p PID: the watch with a full-screen face (ncurses).
 * The watch loop (watch.c) samples, logs and captures as ever; this file
 * draws what it sees after every sample, asks each capture for snapshots of
 * its own at a cadence set by what one costs the target (and, when r asks,
 * one with a referrer search), shows the rows of report.h's view, and reads
 * the keys while it waits. */
#include "config.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <term.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "report.h"
#include "trend.h"
#include "snapshot.h"
#include "util.h"
#include "watch.h"

const char top_usage[] =
	"  memwatch top -p PID [options]\n"
	"    The watch as a live full-screen view: per process, RSS, its growth and\n"
	"    the call stacks growing now, refreshed as snapshots come, each with its\n"
	"    verdict over the watch (leak?, plateau, burst, steady) from its third\n"
	"    snapshot on. The options of the watch (-c, -i, -d, -o, --capture, -r,\n"
	"    ...) apply, and these:\n"
	"  -b, --by WHAT           rows by stack (default), function, line or type\n"
	"                          (of CPython's objects: estimated objects and bytes)\n"
	"  -s, --sort KEY          growth (default), live or alloc\n"
	"    Keys: Up/Down move, Enter opens the row (the types its objects mostly\n"
	"    are and its whole stack; by type, the lines that allocated them), s sort,\n"
	"    b by, / focus pattern, x hide pattern, m mark now as the base, p pause,\n"
	"    Tab/n next and Shift-Tab/N previous process, w write the view's\n"
	"    snapshot, r one referrer search (CPython) with the next snapshot: from\n"
	"    then on an opened row by stack or type shows what keeps its objects\n"
	"    alive (Python threads wait while it runs, up to --referrers-limit;\n"
	"    --referrers searches only with the last snapshot, at the end), q quit.\n"
	"    Needs a terminal (not a pipe, not TERM=dumb). Snapshots for the view are\n"
	"    taken no more often than keeps their cost in the target under 1% of a\n"
	"    CPU; the header says the cadence.\n";

/* The view's budget in the target: a snapshot's CPU time (the agent's
 * thread) at most 1% of the time between two, its wall time at most 5%. */
#define CPU_BUDGET 0.01
#define WALL_BUDGET 0.05
/* How long a sample waits for a view's snapshot (a longer one comes in at a
 * later sample). */
#define PEEK_WAIT_MS 2000
#define HIST 64          /* RSS points kept for a sparkline */
#define ROW_HIST 12      /* snapshots kept per row for its sparkline */
#define RUN_HIST 64      /* ... for its verdict: the whole watch, thinned */
#define MIN_COLS 60
#define MIN_LINES 12

/* A row's live bytes over the whole watch, with their standard errors and
 * the watch's times, for its verdict (trend.h): one snapshot in stride,
 * every other point dropped and the stride doubled when it is full, so that
 * a steady leak's last third is a third of the watch, not of the sparkline. */
struct run_hist {
	double v[RUN_HIST], se[RUN_HIST], t[RUN_HIST];
	unsigned n, stride, seen;
};

/* One row's bytes over the last snapshots, found by its key. */
struct row_hist {
	char *key;
	uint64_t v[ROW_HIST];
	unsigned n;
	unsigned gen;            /* the update that last saw it */
	struct run_hist run;
	double se, t;            /* the standard error and time of v[n - 1] */
};

/* One watched process: a page. */
struct page {
	int pid;
	char *cmd;
	bool live;               /* in the last sample */
	double t[HIST];          /* its RSS (bytes) over the run */
	double rss[HIST];
	unsigned nh, hh;
	double rate;             /* bytes per minute over the last minute */
	bool have_rate;
	const char *state;
	uint64_t rate_bytes;     /* sample rate in force */
	bool shared;
	struct snapshot *base, *now;   /* base == now right after a mark */
	bool marked;
	struct report_view *view;
	struct capture_peek_cost cost;
	bool have_cost;
	double cadence;          /* seconds between view snapshots */
	double next_peek;
	unsigned gen;
	struct row_hist *rh;
	size_t nrh;
	unsigned written;        /* snapshots written with w */
	/* the referrer search (CPython), asked with r: one with the next view
	 * snapshot, never with every one (Python threads wait while it runs) */
	bool refs_asked;
	struct snapshot *refs;   /* the latest that came (may be base or now) */
	double refs_t;           /* the watch's time when it came */
};

struct top {
	struct watch_opts wo;
	struct report_options ro;
	enum report_sort sort;
	struct page *pages;
	size_t npages, cur;
	size_t sel, scroll;
	bool stack_open;
	size_t stack_scroll;
	bool paused;
	bool on;                 /* curses is up */
	SCREEN *scr;
	bool utf8;
	int real_err;            /* the terminal's stderr, while ours goes to err_fd */
	int err_fd;
	off_t err_seen;
	char msg[256];
	double t;                /* the watch's time at the last sample */
	char *focus_pat, *hide_pat;
};

/* ---- the pages ---- */

static struct page *page_of(struct top *tp, int pid, const char *cmd)
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
static void page_new_view(struct top *tp, struct page *p)
{
	report_view_free(p->view);
	p->view = report_view_new(&tp->ro);
	report_view_set_refs(p->view, p->refs);
}

/* Free s, a snapshot the page held, unless it still holds it otherwise. */
static void page_let_go(struct page *p, struct snapshot *s)
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

static void page_free(struct page *p)
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

/* The verdict of a row over the watch: its run history and its latest
 * point; NULL before three snapshots. */
static const char *row_verdict(const struct row_hist *h)
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
static void page_update_rows(struct top *tp, struct page *p, bool fresh)
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
static void page_sample(struct top *tp, struct page *p, double t, const struct watch_member *m)
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

/* ---- drawing ---- */

/* A sparkline of v (n values) in at most width cells (trend.c draws it). */
static void sparkline(const struct top *tp, const double *v, size_t n, int width)
{
	char buf[3 * 64 + 1];
	size_t cells = trend_sparkline(v, n, (size_t)width, tp->utf8, buf, sizeof(buf));

	addstr(buf);
	for (; cells < (size_t)width; cells++)
		addch(' ');
}

static void clip_line(int y, const char *s)
{
	move(y, 0);
	clrtoeol();
	addnstr(s, COLS - 1);
}

static const char *sort_name(enum report_sort s)
{
	return s == REPORT_SORT_LIVE ? "live" : s == REPORT_SORT_ALLOC ? "alloc" : "growth";
}

static const char *by_word(enum report_by b)
{
	return b == REPORT_BY_FUNCTION ? "function" : b == REPORT_BY_LINE ? "line" :
	       b == REPORT_BY_TYPE ? "type" : "stack";
}

/* The referrer search of page p in a line at y: asked, or the latest, when
 * it came, how long Python waited; nothing before the first r. */
static void draw_refs(const struct top *tp, const struct page *p, int y)
{
	char line[400], when[32], held[32], lim[32];
	const struct snap_refsearch *q = p->refs ? &p->refs->refsearch : NULL;

	fmt_seconds(lim, sizeof lim, (double)tp->wo.capture.referrers_limit_ms / 1000);
	if (p->refs_asked)
		snprintf(line, sizeof line, "referrers: a search asked, with the next snapshot%s "
			 "(Python threads wait up to %s)", tp->paused ? " once updates resume" : "", lim);
	else if (!q)
		line[0] = '\0';
	else if (q->status == SNAP_REFS_UNAVAILABLE || q->status == SNAP_REFS_NO_GIL)
		snprintf(line, sizeof line, "referrers at %s: not searched: %.200s",
			 fmt_seconds(when, sizeof when, p->refs_t), q->note ? q->note : "unknown");
	else
		snprintf(line, sizeof line, "referrers at %s: Python held %s, %zu chain%s, %llu objects "
			 "traversed%s%.200s  (r: again)",
			 fmt_seconds(when, sizeof when, p->refs_t),
			 fmt_seconds(held, sizeof held, (double)q->pause_ns / 1e9), p->refs->nchains,
			 p->refs->nchains == 1 ? "" : "s", (unsigned long long)q->visited,
			 q->note ? "; " : "", q->note ? q->note : "");
	clip_line(y, line);
}

/* The header of page p: lines 0 to 4. */
static void draw_header(struct top *tp, struct page *p)
{
	char a[32], b[32], c[32], line[512], el[32];
	double v[HIST];
	double share = report_view_explained(p->view);
	size_t i;

	fmt_seconds(el, sizeof el, tp->t);
	snprintf(line, sizeof line, "memwatch top  pid %d  %.60s", p->pid, p->cmd);
	attron(A_BOLD);
	clip_line(0, line);
	attroff(A_BOLD);
	snprintf(line, sizeof line, "process %zu/%zu%s  %s", tp->cur + 1, tp->npages,
		 tp->paused ? "  PAUSED" : p->live ? "" : "  EXITED", el);
	if ((int)strlen(line) < COLS - 1)
		mvaddstr(0, COLS - 1 - (int)strlen(line), line);

	for (i = 0; i < p->nh; i++)
		v[i] = p->rss[(p->hh + HIST - p->nh + i) % HIST];
	fmt_bytes(a, sizeof a, p->nh ? v[p->nh - 1] : 0);
	fmt_bytes(b, sizeof b, p->rate);
	snprintf(line, sizeof line, "RSS %s  %s%s/min  ", a, p->have_rate && p->rate >= 0 ? "+" : "",
		 p->have_rate ? b : "?");
	clip_line(1, line);
	sparkline(tp, v, p->nh, 20);
	fmt_bytes(a, sizeof a, (double)report_view_live(p->view));
	fmt_bytes(c, sizeof c, (double)p->rate_bytes);
	snprintf(line, sizeof line, "  capture %s%s", p->state ? p->state : "idle",
		 p->shared ? " (shared)" : "");
	addnstr(line, COLS - getcurx(stdscr) - 1 > 0 ? COLS - getcurx(stdscr) - 1 : 0);
	if (p->rate_bytes) {
		snprintf(line, sizeof line, "  rate %s  live heap %s", c, a);
		addnstr(line, COLS - getcurx(stdscr) - 1 > 0 ? COLS - getcurx(stdscr) - 1 : 0);
	}

	/* line 2: what the rows count from, and how often they come */
	if (share >= 0)
		snprintf(line, sizeof line, "since %s: explains %.0f%% of the RSS growth  ",
			 p->marked ? "mark" : "capture start", share * 100);
	else
		snprintf(line, sizeof line, "since %s  ", p->marked ? "mark" : "capture start");
	clip_line(2, line);
	if (p->have_cost) {
		char cpu[32] = "?";
		if (p->cost.cpu_ms >= 0)
			snprintf(cpu, sizeof cpu, "%.1f ms CPU", p->cost.cpu_ms);
		snprintf(line, sizeof line, "view every %gs (a snapshot costs the target %s, %.1f ms)",
			 p->cadence, cpu, p->cost.wall_ms);
	} else {
		snprintf(line, sizeof line, "view: %s",
			 p->state && !strcmp(p->state, "capturing") ? "waiting for a snapshot"
								   : "no capture yet (it starts on growth)");
	}
	addnstr(line, COLS - getcurx(stdscr) - 1 > 0 ? COLS - getcurx(stdscr) - 1 : 0);
	/* line 3: how the rows are made */
	snprintf(line, sizeof line, "sort %s%s  by %s%s%s%s%s", sort_name(tp->sort),
		 tp->sort == REPORT_SORT_ALLOC && tp->ro.by == REPORT_BY_TYPE
			 ? " (types count live objects: ordered by live)" : "",
		 by_word(tp->ro.by),
		 tp->focus_pat ? "  focus " : "", tp->focus_pat ? tp->focus_pat : "",
		 tp->hide_pat ? "  hide " : "", tp->hide_pat ? tp->hide_pat : "");
	clip_line(3, line);
	/* line 4: the referrer search whose chains opened rows show */
	draw_refs(tp, p, 4);
}

/* A standard error in a column of width cells, right-aligned ('±' is two
 * bytes and one cell). */
static const char *fmt_sd(const struct top *tp, char *buf, size_t n, double sd, int width)
{
	char b[32], c[40];

	fmt_bytes(b, sizeof b, sd);
	snprintf(c, sizeof c, "%s%s", tp->utf8 ? "\u00b1" : "+-", b);
	snprintf(buf, n, "%*s", width + (tp->utf8 ? 1 : 0), c);
	return buf;
}

/* The rows of page p from line y to the line before last. */
static void draw_rows(struct top *tp, struct page *p, int y, int last)
{
	const struct report_line *l;
	size_t n = report_view_rows(p->view, &l), i;
	int h = last - y - 1;
	bool types = tp->ro.by == REPORT_BY_TYPE;
	char line[600], g[32], lv[32], sd[48];

	attron(A_REVERSE);
	snprintf(line, sizeof line, "%10s %9s %10s %9s  %-6s  %-12s %-9s %s", "GROWTH", "", "LIVE",
		 types ? "OBJECTS" : "BLOCKS", "STATUS", "TREND", "VERDICT",
		 types ? "TYPE" : "FUNCTION  FILE:LINE");
	clip_line(y, line);
	/* the column of the standard errors, headed by its sign */
	mvaddstr(y, 11 + 9 - (tp->utf8 ? 1 : 2), tp->utf8 ? "\u00b1" : "+-");
	for (int x = (int)strlen(line); x < COLS; x++)
		mvaddch(y, x, ' ');
	attroff(A_REVERSE);
	if (n == 0) {
		clip_line(y + 1, p->now ? "  (no sampled allocation yet)" : "");
		for (int k = y + 2; k < last; k++)
			clip_line(k, "");
		return;
	}
	if (tp->sel >= n)
		tp->sel = n - 1;
	if (tp->sel < tp->scroll)
		tp->scroll = tp->sel;
	if (h > 0 && tp->sel >= tp->scroll + (size_t)h)
		tp->scroll = tp->sel - (size_t)h + 1;
	for (int k = 0; k < h; k++) {
		i = tp->scroll + (size_t)k;
		move(y + 1 + k, 0);
		clrtoeol();
		if (i >= n)
			continue;
		if (i == tp->sel)
			attron(A_REVERSE);
		fmt_bytes(g, sizeof g, (double)(l[i].growth < 0 ? -l[i].growth : l[i].growth));
		fmt_bytes(lv, sizeof lv, (double)l[i].live_bytes);
		snprintf(line, sizeof line, "%c%9s %s %10s %9llu  %-6s  ", l[i].growth < 0 ? '-' : '+', g,
			 fmt_sd(tp, sd, sizeof sd, l[i].sd, 9), lv, (unsigned long long)l[i].live_blocks,
			 l[i].status);
		addnstr(line, COLS - 1);
		{
			struct row_hist *rh = NULL;
			double v[ROW_HIST];
			for (size_t j = 0; j < p->nrh; j++)
				if (!strcmp(p->rh[j].key, l[i].key))
					rh = &p->rh[j];
			for (unsigned j = 0; rh && j < rh->n; j++)
				v[j] = (double)rh->v[j];
			if (getcurx(stdscr) + 13 < COLS)
				sparkline(tp, v, rh ? rh->n : 0, 12);
			/* its verdict once it has three snapshots */
			if (getcurx(stdscr) + 10 < COLS) {
				const char *w = rh ? row_verdict(rh) : NULL;
				printw(" %-9s", w ? w : "");
			}
		}
		snprintf(line, sizeof line, " %s%s", l[i].head, l[i].weak ? "  (weak)" : "");
		if (COLS - 1 - getcurx(stdscr) > 0)
			addnstr(line, COLS - 1 - getcurx(stdscr));
		if (i == tp->sel) {
			for (int x = getcurx(stdscr); x < COLS - 1; x++)
				addch(' ');
			attroff(A_REVERSE);
		}
	}
}

/* The lines an opened row shows: by stack, function or line the types its
 * objects mostly are, then, after a referrer search (r), the reference chains
 * that keep them alive, then its whole stack; by type the lines of the
 * user's code that allocated them, then the chains and what one object of
 * the type holds. What the row holds comes first: a stack under Python's
 * frames is long. *out (caller frees each and the array). */
static size_t detail_lines(const struct top *tp, const struct page *p,
			   const struct report_detail *d, char ***out)
{
	size_t n = 0, k, cap = d->nframes + d->nparts + d->nkept + 8;
	char **v = xcalloc(cap, sizeof *v), g[40], b[32];

	if (tp->ro.by == REPORT_BY_TYPE) {
		v[n++] = xstrdup(d->nparts ? "allocated by (growth, objects live, the line):"
					   : "(no line of the user's code allocated them)");
		for (k = 0; k < d->nparts; k++) {
			const struct report_part_line *q = &d->parts[k];
			fmt_bytes(b, sizeof b, (double)(q->growth < 0 ? -q->growth : q->growth));
			snprintf(g, sizeof g, "%c%s", q->growth < 0 ? '-' : '+', b);
			v[n++] = xasprintf("  %11s %9llu  %s", g, (unsigned long long)q->blocks, q->text);
		}
	} else if (d->nparts) {
		/* as memwatch show prints under a row by stack: the leading three */
		size_t len = 8;
		char *t;
		for (k = 0; k < d->nparts && k < 3; k++)
			len += strlen(d->parts[k].text) + 2;
		t = xmalloc(len);
		strcpy(t, "mostly ");
		for (k = 0; k < d->nparts && k < 3; k++) {
			if (k)
				strcat(t, ", ");
			strcat(t, d->parts[k].text);
		}
		v[n++] = t;
	}
	/* as memwatch show prints them under a row */
	for (k = 0; k < d->nkept; k++)
		v[n++] = xasprintf("kept alive by: %s", d->kept[k]);
	if (d->holds)
		v[n++] = xstrdup(d->holds);
	if (!d->nkept && !d->holds && p->refs && p->refs->nchains && tp->ro.by != REPORT_BY_FUNCTION &&
	    tp->ro.by != REPORT_BY_LINE) {
		char when[32];
		v[n++] = xasprintf("(the referrer search at %s found no chain to its objects)",
				   fmt_seconds(when, sizeof when, p->refs_t));
	}
	if (n && d->nframes)
		v[n++] = xstrdup("");
	for (k = 0; k < d->nframes; k++)
		v[n++] = xstrdup(d->frames[k]);
	*out = v;
	return n;
}

/* The selected row opened, from line y to the line before last. */
static void draw_stack(struct top *tp, struct page *p, int y, int last)
{
	const struct report_line *l;
	size_t n = report_view_rows(p->view, &l), nv, i;
	struct report_detail d;
	char **v = NULL, line[600], g[32];
	bool types = tp->ro.by == REPORT_BY_TYPE;

	if (tp->sel >= n || report_view_detail(p->view, tp->sel, 0, &d) < 0) {
		tp->stack_open = false;
		draw_rows(tp, p, y, last);
		return;
	}
	nv = detail_lines(tp, p, &d, &v);
	report_detail_release(&d);
	fmt_bytes(g, sizeof g, (double)(l[tp->sel].growth < 0 ? -l[tp->sel].growth : l[tp->sel].growth));
	attron(A_REVERSE);
	if (types)
		snprintf(line, sizeof line, "TYPE %s: %c%s %s, %llu objects live (Esc or Enter: back)",
			 l[tp->sel].head, l[tp->sel].growth < 0 ? '-' : '+', g, l[tp->sel].status,
			 (unsigned long long)l[tp->sel].live_blocks);
	else
		snprintf(line, sizeof line, "STACK of row %zu: %c%s %s, %llu blocks live (Esc or Enter: back)",
			 tp->sel + 1, l[tp->sel].growth < 0 ? '-' : '+', g, l[tp->sel].status,
			 (unsigned long long)l[tp->sel].live_blocks);
	clip_line(y, line);
	for (int x = getcurx(stdscr); x < COLS; x++)
		addch(' ');
	attroff(A_REVERSE);
	if (tp->stack_scroll >= nv)
		tp->stack_scroll = nv ? nv - 1 : 0;
	for (int k = y + 1; k < last; k++) {
		i = tp->stack_scroll + (size_t)(k - y - 1);
		clip_line(k, i < nv ? v[i] : "");
	}
	for (i = 0; i < nv; i++)
		free(v[i]);
	free(v);
}

/* What came on our stderr since last looked at: its last line into the
 * message line. */
static void read_messages(struct top *tp)
{
	char buf[4096];
	off_t end = lseek(tp->err_fd, 0, SEEK_END);
	ssize_t k;
	size_t from = 0;

	if (end <= tp->err_seen)
		return;
	if (end - tp->err_seen > (off_t)sizeof buf - 1)
		tp->err_seen = end - (off_t)sizeof buf + 1;
	k = pread(tp->err_fd, buf, (size_t)(end - tp->err_seen), tp->err_seen);
	tp->err_seen = end;
	if (k <= 0)
		return;
	buf[k] = '\0';
	while (k > 0 && buf[k - 1] == '\n')
		buf[--k] = '\0';
	for (ssize_t i = 0; i < k; i++)
		if (buf[i] == '\n')
			from = (size_t)i + 1;
	snprintf(tp->msg, sizeof tp->msg, "%.255s", buf + from);
}

static void draw(struct top *tp)
{
	struct page *p;

	if (!tp->on)
		return;
	erase();
	if (COLS < MIN_COLS || LINES < MIN_LINES) {
		char line[128];
		/* in pieces that fit the narrowest terminal */
		mvaddnstr(0, 0, "terminal too small", COLS - 1);
		snprintf(line, sizeof line, "(%dx%d):", COLS, LINES);
		mvaddnstr(1, 0, line, COLS - 1);
		snprintf(line, sizeof line, "memwatch top needs %dx%d", MIN_COLS, MIN_LINES);
		mvaddnstr(2, 0, line, COLS - 1);
		refresh();
		return;
	}
	if (tp->npages == 0) {
		clip_line(0, "memwatch top: waiting for the first sample");
		refresh();
		return;
	}
	p = &tp->pages[tp->cur];
	draw_header(tp, p);
	if (tp->stack_open)
		draw_stack(tp, p, 5, LINES - 2);
	else
		draw_rows(tp, p, 5, LINES - 2);
	read_messages(tp);
	clip_line(LINES - 2, tp->msg);
	attron(A_REVERSE);
	clip_line(LINES - 1, "q quit  Up/Down move  Enter open  s sort  b by  / focus  x hide  "
			     "m mark  p pause  Tab next  w write  r referrers");
	attroff(A_REVERSE);
	refresh();
}

/* ---- the face ---- */

static void face_begin(struct top *tp)
{
	if (tp->on)
		return;
	tp->scr = newterm(NULL, stdout, stdin);
	if (!tp->scr)
		return;
	tp->on = true;
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
}

static void face_sampled(void *arg, double t, const struct watch_member *m, size_t n)
{
	struct top *tp = arg;
	size_t i;

	face_begin(tp);
	tp->t = t;
	for (i = 0; i < tp->npages; i++)
		tp->pages[i].live = false;
	for (i = 0; i < n; i++)
		page_sample(tp, page_of(tp, m[i].pid, m[i].cmd), t, &m[i]);
	if (!tp->paused)
		draw(tp);
}

/* Read a line at the bottom of the screen (a pattern); NULL when cancelled. */
static char *prompt(struct top *tp, const char *what)
{
	char buf[200];
	int r;

	clip_line(LINES - 1, what);
	echo();
	nodelay(stdscr, FALSE);
	curs_set(1);
	r = getnstr(buf, sizeof buf - 1);
	noecho();
	curs_set(0);
	nodelay(stdscr, TRUE);
	(void)tp;
	if (r == ERR)
		return NULL;
	return xstrdup(buf);
}

/* A new focus or hide pattern (empty: none). Every page's view is made again. */
static void set_pattern(struct top *tp, bool focus)
{
	char *pat = prompt(tp, focus ? "focus (rows whose stack matches; empty: all): "
				     : "hide (frames that are not yours; empty: none): ");
	regex_t re;
	bool *has = focus ? &tp->ro.has_focus : &tp->ro.has_hide;
	regex_t *slot = focus ? &tp->ro.focus : &tp->ro.hide;
	char **saved = focus ? &tp->focus_pat : &tp->hide_pat;

	if (!pat)
		return;
	if (*pat && regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0) {
		snprintf(tp->msg, sizeof tp->msg, "invalid pattern '%.100s'", pat);
		free(pat);
		return;
	}
	/* the views hold a copy of the options: made again before the old
	 * pattern goes */
	for (size_t i = 0; i < tp->npages; i++) {
		report_view_free(tp->pages[i].view);
		tp->pages[i].view = NULL;
	}
	if (*has)
		regfree(slot);
	*has = *pat != '\0';
	if (*has)
		*slot = re;
	free(*saved);
	*saved = *pat ? pat : NULL;
	if (!*pat)
		free(pat);
	for (size_t i = 0; i < tp->npages; i++) {
		page_new_view(tp, &tp->pages[i]);
		page_update_rows(tp, &tp->pages[i], false);
	}
	tp->sel = tp->scroll = 0;
}

/* Write the view's latest snapshot of the page to a file. */
static void write_snapshot(struct top *tp, struct page *p)
{
	char *path, *cause = NULL;

	if (!p->now) {
		snprintf(tp->msg, sizeof tp->msg, "no snapshot to write yet");
		return;
	}
	path = xasprintf("memwatch-top-%d.%u.snap", p->pid, ++p->written);
	if (snapshot_write(p->now, path, tp->wo.force, &cause) < 0) {
		snprintf(tp->msg, sizeof tp->msg, "%s", cause);
		free(cause);
	} else {
		snprintf(tp->msg, sizeof tp->msg, "wrote %s", path);
	}
	free(path);
}

/* r: a referrer search with the page's next view snapshot; said at once when
 * the process is known not to be CPython. */
static void ask_refs(struct top *tp, struct page *p)
{
	if (p->now && p->now->python == SNAP_PYTHON_NONE) {
		snprintf(tp->msg, sizeof tp->msg, "pid %d is not CPython: no Python objects to search "
			 "referrers of", p->pid);
		return;
	}
	p->refs_asked = true;
	p->next_peek = 0;
	snprintf(tp->msg, sizeof tp->msg, "pid %d: referrer search asked%s", p->pid,
		 tp->paused ? " (paused: it comes once updates resume)" :
		 p->state && strcmp(p->state, "capturing") ? " (it comes once capturing)" : "");
}

/* Act on one key; true to quit. */
static bool on_key(struct top *tp, int ch)
{
	struct page *p = tp->npages ? &tp->pages[tp->cur] : NULL;

	switch (ch) {
	case 'q':
	case 'Q':
		return true;
	case KEY_UP:
	case 'k':
		if (tp->stack_open && tp->stack_scroll)
			tp->stack_scroll--;
		else if (!tp->stack_open && tp->sel)
			tp->sel--;
		break;
	case KEY_DOWN:
	case 'j':
		if (tp->stack_open)
			tp->stack_scroll++;
		else
			tp->sel++;
		break;
	case KEY_PPAGE:
		tp->sel = tp->sel > (size_t)(LINES - 7) ? tp->sel - (size_t)(LINES - 7) : 0;
		break;
	case KEY_NPAGE:
		tp->sel += (size_t)(LINES - 7);
		break;
	case '\r':
	case '\n':
	case KEY_ENTER:
		tp->stack_open = !tp->stack_open;
		tp->stack_scroll = 0;
		break;
	case 27:
	case KEY_LEFT:
		tp->stack_open = false;
		break;
	case 's':
		tp->sort = (tp->sort + 1) % 3;
		for (size_t i = 0; i < tp->npages; i++)
			page_update_rows(tp, &tp->pages[i], false);
		tp->sel = tp->scroll = 0;
		break;
	case 'b':
		tp->ro.by = (tp->ro.by + 1) % 4;
		for (size_t i = 0; i < tp->npages; i++) {
			page_new_view(tp, &tp->pages[i]);
			page_update_rows(tp, &tp->pages[i], false);
		}
		tp->sel = tp->scroll = 0;
		break;
	case '/':
	case 'x':
		set_pattern(tp, ch == '/');
		break;
	case 'm':
		if (p && p->now) {
			struct snapshot *old = p->base;
			p->base = p->now;
			page_let_go(p, old);
			p->marked = true;
			page_update_rows(tp, p, false);
			snprintf(tp->msg, sizeof tp->msg, "marked: growth is now counted from here");
		}
		break;
	case 'p':
	case ' ':
		tp->paused = !tp->paused;
		break;
	case '\t':
	case 'n':
		if (tp->npages)
			tp->cur = (tp->cur + 1) % tp->npages;
		tp->sel = tp->scroll = 0;
		tp->stack_open = false;
		break;
	case KEY_BTAB:
	case 'N':
		if (tp->npages)
			tp->cur = (tp->cur + tp->npages - 1) % tp->npages;
		tp->sel = tp->scroll = 0;
		tp->stack_open = false;
		break;
	case 'w':
		if (p)
			write_snapshot(tp, p);
		break;
	case 'r':
		if (p)
			ask_refs(tp, p);
		break;
	case KEY_RESIZE:
	default:
		break;
	}
	return false;
}

static int face_wait(void *arg, uint64_t deadline_ns, bool (*stop)(void))
{
	struct top *tp = arg;

	face_begin(tp);
	for (;;) {
		uint64_t now = mono_ns();
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		int ms, ch;
		bool any = false;

		if (stop())
			return FACE_SIGNAL;
		if (now >= deadline_ns)
			return FACE_DUE;
		ms = (int)((deadline_ns - now) / 1000000u) + 1;
		poll(&pfd, 1, ms > 100 ? 100 : ms);
		if (stop())
			return FACE_SIGNAL;
		while (tp->on && (ch = getch()) != ERR) {
			if (on_key(tp, ch))
				return FACE_QUIT;
			any = true;
		}
		if (any || is_term_resized(LINES, COLS))
			draw(tp);
	}
}

/* The terminal back as it was; what came on stderr meanwhile goes there. */
static void face_end(void *arg)
{
	struct top *tp = arg;
	char buf[4096];
	ssize_t k;
	off_t off = 0;

	if (tp->on) {
		endwin();
		delscreen(tp->scr);
		tp->on = false;
	}
	if (tp->real_err < 0)
		return;
	dup2(tp->real_err, STDERR_FILENO);
	close(tp->real_err);
	tp->real_err = -1;
	while ((k = pread(tp->err_fd, buf, sizeof buf, off)) > 0) {
		if (write(STDERR_FILENO, buf, (size_t)k) < 0)
			break;
		off += k;
	}
	close(tp->err_fd);
	tp->err_fd = -1;
}

/* ---- the command ---- */

static const struct option top_options[] = {
	{ "by", required_argument, NULL, 'b' },
	{ "sort", required_argument, NULL, 's' },
	{ NULL, 0, NULL, 0 },
};

static int top_option(int c, const char *arg, void *ctx)
{
	struct top *tp = ctx;

	if (c == 'b') {
		if (!strcmp(arg, "stack"))
			tp->ro.by = REPORT_BY_STACK;
		else if (!strcmp(arg, "function"))
			tp->ro.by = REPORT_BY_FUNCTION;
		else if (!strcmp(arg, "line"))
			tp->ro.by = REPORT_BY_LINE;
		else if (!strcmp(arg, "type"))
			tp->ro.by = REPORT_BY_TYPE;
		else {
			mw_error("top: invalid --by '%s' (stack, function, line or type)", arg);
			return MW_EXIT_USAGE;
		}
		return 0;
	}
	if (!strcmp(arg, "growth"))
		tp->sort = REPORT_SORT_GROWTH;
	else if (!strcmp(arg, "live"))
		tp->sort = REPORT_SORT_LIVE;
	else if (!strcmp(arg, "alloc"))
		tp->sort = REPORT_SORT_ALLOC;
	else {
		mw_error("top: invalid --sort '%s' (growth, live or alloc)", arg);
		return MW_EXIT_USAGE;
	}
	return 0;
}

/* Whether the terminal can take a full-screen view; said when not. */
static int check_terminal(void)
{
	const char *term = getenv("TERM");
	int err = 0;
	bool ok;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		mw_error("top: standard %s is not a terminal", isatty(STDIN_FILENO) ? "output" : "input");
		mw_hint("memwatch -p PID watches without one (a status line, the report at the end)");
		return MW_EXIT_USAGE;
	}
	ok = term && *term && strcmp(term, "dumb") && setupterm(NULL, STDOUT_FILENO, &err) == OK;
	ok = ok && tigetstr("cup") && tigetstr("cup") != (char *)-1;
	/* the view sets up its own terminal (newterm) */
	if (cur_term)
		del_curterm(cur_term);
	if (!ok) {
		mw_error("top: the terminal cannot be drawn on (TERM=%s)", term && *term ? term : "");
		mw_hint("set TERM to your terminal's type, or use memwatch -p PID (a status line)");
		return MW_EXIT_USAGE;
	}
	return 0;
}

/* memwatch top: parse, check the terminal, watch with the view as the face. */
int cmd_top(int argc, char **argv)
{
	struct top tp;
	struct watch_face face = { .arg = &tp, .sampled = face_sampled, .wait = face_wait,
				   .end = face_end };
	char *cmdline;
	int r, argi = 0;

	memset(&tp, 0, sizeof tp);
	tp.real_err = tp.err_fd = -1;
	watch_opts_init(&tp.wo);
	report_options_init(&tp.ro);
	r = watch_parse_more(argc, argv, &tp.wo, &argi, "b:s:", top_options, top_option, &tp);
	if (r == WATCH_PARSE_HELP) {
		r = mw_usage_print(top_usage);
		goto out;
	}
	if (r == 0 && tp.wo.output && strcmp(tp.wo.output, "-") == 0) {
		/* the terminal is the view's */
		mw_error("top: the run log cannot go to standard output (-o -)");
		mw_hint("give it a file: -o FILE");
		r = MW_EXIT_USAGE;
	}
	if (r != 0 || (r = check_terminal()) != 0)
		goto out;
	setlocale(LC_ALL, "");
	tp.utf8 = MB_CUR_MAX > 1;
	/* what memwatch says while the view is up would tear it: it is kept, shown
	 * on the message line, and written out when the terminal is back */
	tp.err_fd = memfd_create("memwatch-top-messages", MFD_CLOEXEC);
	if (tp.err_fd >= 0) {
		fflush(stderr);
		tp.real_err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
		if (tp.real_err < 0 || dup2(tp.err_fd, STDERR_FILENO) < 0) {
			close(tp.err_fd);
			tp.err_fd = -1;
			if (tp.real_err >= 0)
				close(tp.real_err);
			tp.real_err = -1;
		}
	}
	tp.wo.face = &face;
	tp.wo.quiet = true;
	cmdline = watch_command_line("memwatch top", argc, argv);
	r = watch_loop(&tp.wo, cmdline);
	free(cmdline);
	face_end(&tp);
out:
	for (size_t i = 0; i < tp.npages; i++)
		page_free(&tp.pages[i]);
	free(tp.pages);
	free(tp.focus_pat);
	free(tp.hide_pat);
	report_options_release(&tp.ro);
	watch_opts_release(&tp.wo);
	return r;
}
