/* htmltrend.c: memwatch report's growth table with each row's trend over
 * the process's snapshots: its verdict (trend.h) and a small chart of its
 * live heap at every snapshot, as inline SVG, in front of the row. The rows
 * are found again, by their key, in each snapshot through a report view (the
 * rows of memwatch top), whose symbolizer looks each frame up once. */
#include "config.h"
#include "htmltrend.h"
#include "flame.h"
#include "report.h"
#include "snapshot.h"
#include "trend.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The chart's size in pixels, and the verdict column's width in characters. */
#define CHART_W 72
#define CHART_H 14
#define VERDICT_W 10

/* One row of the growth table, followed over the snapshots. */
struct trow {
	char *key, *head;
	double *bytes, *se;
	struct trend tr;
};

/* The chart of n points at times t: a line from 0 (the bottom) to the
 * largest, each point's figure in its title. */
static void chart(FILE *f, const double *v, const double *t, size_t n)
{
	double hi = 0;
	char b[32];

	for (size_t i = 0; i < n; i++)
		hi = v[i] > hi ? v[i] : hi;
	fprintf(f, "<svg class=\"trend\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		   "xmlns=\"http://www.w3.org/2000/svg\"><title>live heap at each snapshot:",
		CHART_W, CHART_H, CHART_W, CHART_H);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %.1f s %s", i ? "," : "", t[i], fmt_bytes(b, sizeof b, v[i]));
	fputs("</title><polyline fill=\"none\" stroke=\"#26c\" stroke-width=\"1.5\" points=\"", f);
	for (size_t i = 0; i < n; i++) {
		double x = n > 1 ? 1 + (CHART_W - 2) * (t[i] - t[0]) / (t[n - 1] - t[0] > 0 ? t[n - 1] - t[0] : 1)
				 : CHART_W / 2.0;
		double y = CHART_H - 1 - (hi > 0 ? (CHART_H - 2) * v[i] / hi : 0);
		fprintf(f, "%s%.1f,%.1f", i ? " " : "", x, y);
	}
	fputs("\"/></svg>", f);
}

/* The verdict's cell: the word, padded to the column, and what it rests on
 * in its title. */
static void verdict_cell(FILE *f, const struct trend *tr)
{
	const char *w = trend_name(tr->verdict);

	fprintf(f, "<span class=\"verdict v-%s\" title=\"grew in %.0f %% of the intervals; slope ",
		tr->verdict == TREND_LEAK ? "leak" : w, isnan(tr->grown_share) ? 0 : tr->grown_share * 100);
	if (isnan(tr->slope)) {
		fputs("unknown", f);
	} else {
		char b[32];
		fprintf(f, "%s%s/min", tr->slope < 0 ? "-" : "+", fmt_bytes(b, sizeof b, fabs(tr->slope)));
	}
	fprintf(f, "\">%s</span>%*s", w, VERDICT_W - (int)strlen(w), "");
}

/* The space of the verdict and the chart, on a line that is no row's. */
static void blank_cells(FILE *f, const char *word)
{
	fprintf(f, "%-*s<svg class=\"trend\" width=\"%d\" height=\"%d\"></svg>  ", VERDICT_W, word, CHART_W,
		CHART_H);
}

/* Whether line (len bytes) is a row of the table: its rank, then its growth
 * ("   3    +1.2 MiB"). */
static bool row_line(const char *line, size_t len)
{
	size_t i = 0;

	while (i < len && line[i] == ' ')
		i++;
	if (i == len || line[i] < '0' || line[i] > '9')
		return false;
	while (i < len && line[i] >= '0' && line[i] <= '9')
		i++;
	while (i < len && line[i] == ' ')
		i++;
	return i < len && (line[i] == '+' || line[i] == '-');
}

/* The row a table line shows: the next one in rank order when its head is on
 * the line, else the first one not yet taken whose head is. */
static struct trow *row_of(struct trow *rows, size_t n, size_t *next, bool *taken, const char *line,
			   size_t len)
{
	char *l = xasprintf("%.*s", (int)len, line);
	struct trow *w = NULL;

	if (*next < n && !taken[*next] && strstr(l, rows[*next].head))
		w = &rows[*next];
	for (size_t i = 0; !w && i < n; i++)
		if (!taken[i] && strstr(l, rows[i].head))
			w = &rows[i];
	free(l);
	if (w) {
		taken[w - rows] = true;
		*next = (size_t)(w - rows) + 1;
	}
	return w;
}

int html_trend_table(FILE *f, const char *table, char *const *paths, const double *t, size_t n,
		     const char **dirs, size_t ndirs)
{
	struct report_options o;
	struct report_view *v;
	struct snapshot *first = NULL, *last = NULL, *s;
	const struct report_line *l;
	struct trow *rows = NULL;
	size_t nrows = 0, nl, next = 0;
	bool *taken = NULL, in_rows = false;
	char *cause = NULL;
	int ret = -1;

	if (n < 3)
		return -1;
	report_options_init(&o);
	o.dirs = dirs;
	o.ndirs = ndirs;
	v = report_view_new(&o);
	first = snapshot_read(paths[0], &cause);
	last = first ? snapshot_read(paths[n - 1], &cause) : NULL;
	if (!last)
		goto out;
	/* the rows as the table ranks them: by growth from the first to the last */
	report_view_update(v, first, last, REPORT_SORT_GROWTH);
	nl = report_view_rows(v, &l);
	nrows = nl < o.top ? nl : o.top;
	rows = xcalloc(nrows ? nrows : 1, sizeof *rows);
	for (size_t i = 0; i < nrows; i++) {
		rows[i].key = xstrdup(l[i].key);
		rows[i].head = xstrdup(l[i].head);
		rows[i].bytes = xcalloc(n, sizeof *rows[i].bytes);
		rows[i].se = xcalloc(n, sizeof *rows[i].se);
	}
	/* each snapshot's live bytes of those rows (0, known exactly, where it
	 * holds none of one) */
	for (size_t k = 0; k < n; k++) {
		s = k == 0 ? first : k == n - 1 ? last : snapshot_read(paths[k], &cause);
		if (!s)
			goto out;
		report_view_update(v, NULL, s, REPORT_SORT_LIVE);
		nl = report_view_rows(v, &l);
		for (size_t j = 0; j < nl; j++)
			for (size_t i = 0; i < nrows; i++)
				if (!strcmp(l[j].key, rows[i].key)) {
					rows[i].bytes[k] = (double)l[j].live_bytes;
					rows[i].se[k] = l[j].live_sd;
				}
		if (s != first && s != last) {
			/* the view holds s until its next update */
			report_view_update(v, NULL, first, REPORT_SORT_LIVE);
			snapshot_free(s);
		}
	}
	for (size_t i = 0; i < nrows; i++)
		trend_of(rows[i].bytes, rows[i].se, t, n, &rows[i].tr);

	/* the table, each line behind the verdict and chart of its row */
	taken = xcalloc(nrows ? nrows : 1, sizeof *taken);
	fputs("<pre class=\"growth\">", f);
	for (const char *p = table; *p;) {
		size_t len = strcspn(p, "\n");
		char *line = xasprintf("%.*s", (int)len, p);
		struct trow *w = row_line(p, len) ? row_of(rows, nrows, &next, taken, p, len) : NULL;

		/* the columns start at the table's head, below the header */
		if (!in_rows && strstr(line, "growth ") && strstr(line, " status ")) {
			in_rows = true;
			blank_cells(f, "trend");
		} else if (w) {
			verdict_cell(f, &w->tr);
			chart(f, w->bytes, t, n);
			fputs("  ", f);
		} else if (in_rows && len) {
			blank_cells(f, "");
		}
		flame_escape(f, line);
		fputc('\n', f);
		free(line);
		p += len + (p[len] == '\n');
	}
	fprintf(f, "</pre>\n<p class=\"trend-note\">trend: each row's live heap at the %zu snapshots, "
		   "and its verdict: leak? (grew in nearly every interval, never gave back more than its "
		   "sampling error), plateau (grew, then flat), burst (grew and was freed again), steady "
		   "(within its sampling error), shrinking, or unsure (too small for its sampling error, "
		   "or of no one shape); see memwatch-reports(7)</p>\n", n);
	ret = 0;
out:
	if (cause)
		mw_warn("report: no trend in the growth table: %s", cause);
	free(cause);
	for (size_t i = 0; i < nrows; i++) {
		free(rows[i].key);
		free(rows[i].head);
		free(rows[i].bytes);
		free(rows[i].se);
	}
	free(rows);
	free(taken);
	report_view_free(v);
	snapshot_free(first);
	snapshot_free(last);
	return ret;
}
