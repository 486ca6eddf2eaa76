/* top-draw.c: the screen of memwatch top (ncurses): the header of the
 * current page (RSS and its sparkline, the rate, the capture, the cadence
 * and cost of the view's snapshots, the referrer search), its rows with
 * their sparklines and sampling error, an opened row (its types, its stack,
 * what keeps its objects alive), the message line and the keys. */
#include "config.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "top-internal.h"
#include "trend.h"
#include "util.h"

/* A sparkline of v (n values) in at most width cells (trend.c draws it). */
static void sparkline(const struct top *tp, const double *v, size_t n, int width)
{
	char buf[3 * 64 + 1];
	size_t cells = trend_sparkline(v, n, (size_t)width, tp->utf8, buf, sizeof(buf));

	addstr(buf);
	for (; cells < (size_t)width; cells++)
		addch(' ');
}

void clip_line(int y, const char *s)
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

void draw(struct top *tp)
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
