/* top-internal.h: what the files of memwatch top share: its state (struct
 * top, a struct page per watched process), and the calls between top.c (the
 * command and the face: keys, the terminal), top-pages.c (what each page
 * holds: its RSS, the view's snapshots at their cadence, its rows) and
 * top-draw.c (the screen). Not for other modules. */
#ifndef MEMWATCH_TOP_INTERNAL_H
#define MEMWATCH_TOP_INTERNAL_H

#include <curses.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture.h"
#include "report.h"
#include "snapshot.h"
#include "watch.h"

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

/* top-pages.c: the page of pid (made when new, with its command cmd). */
struct page *page_of(struct top *tp, int pid, const char *cmd);
/* The page's view made anew (other options), with the chains of its search. */
void page_new_view(struct top *tp, struct page *p);
/* Free s, a snapshot the page held, unless it still holds it otherwise. */
void page_let_go(struct page *p, struct snapshot *s);
void page_free(struct page *p);
/* The rows again, from the snapshots held; with fresh, their histories grow. */
void page_update_rows(struct top *tp, struct page *p, bool fresh);
/* A sample of one process: its RSS history, and a view snapshot when due. */
void page_sample(struct top *tp, struct page *p, double t, const struct watch_member *m);

/* top-draw.c: the screen, from the current page (nothing while curses is
 * not up). */
void draw(struct top *tp);
/* Line y: s, cut at the screen's width, the rest of the line cleared. */
void clip_line(int y, const char *s);

/* top-pages.c: the verdict of a row over the watch (trend.h's word); NULL
 * before three snapshots. */
const char *row_verdict(const struct row_hist *h);

#endif
