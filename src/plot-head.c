/* plot-head.c: the head of the gnuplot program of memwatch plot: the
 * variables and the data the script draws (one series per process and the
 * total, the event marks and their labels, the scales and the title). */
#include "config.h"
#include "plot-internal.h"
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One line of the plot: a title, a colour, a width, and where its values come from. */
struct series {
	char *title;
	const char *color;
	double width;
	int pid;                  /* the samples of this pid (0: the total) */
	size_t field;             /* offset of the figure in struct mem_sample */
	double peak;              /* largest value, KiB, to rank processes */
};

/* One label over the event lines: the events that fall too close together for
 * a label each (each keeps its own line). */
struct mark {
	double t;
	char *label;
	const char *color;
	int rank;                 /* of the most important event in it */
	bool right;               /* written right of its line (no room left) */
};

/* A unit for an axis: divide by div to get a figure in unit. */
struct scale {
	double div;
	const char *unit;
};

/* More lines than this in one plot cannot be told apart: the largest are kept. */
#define MAX_PROCESS_SERIES 20

static const char *const process_colors[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};

/* The stacks' lines: apart from the processes' colours, which sit just above. */
static const char *const stack_colors[] = {
	"#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00",
	"#a65628", "#f781bf", "#999999", "#66c2a5", "#b3b300",
};

/* Write s as a gnuplot single-quoted string: no escapes are interpreted there
 * but '' for a quote; control characters become spaces so a line stays a line. */
static void gp_string(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '\'')
			fputs("''", f);
		else if (ch < 0x20 || ch == 0x7f)
			fputc(' ', f);
		else
			fputc(ch, f);
	}
	fputc('\'', f);
}

/* How much an event matters when it shares a mark with others (its colour wins). */
static int event_rank(const char *kind)
{
	if (strcmp(kind, "trigger") == 0)
		return 5;
	if (strstr(kind, "failed"))
		return 4;
	if (strcmp(kind, "snapshot") == 0)
		return 3;
	if (strcmp(kind, "exit") == 0 || strcmp(kind, "signal") == 0 ||
	    strcmp(kind, "stopped") == 0 || strcmp(kind, "continued") == 0)
		return 2;
	if (strcmp(kind, "end") == 0)
		return 1;
	return 0;
}

/* The colour of a mark by its most important event. */
static const char *rank_color(int rank)
{
	switch (rank) {
	case 5: return "#d62728";   /* trigger: red */
	case 4: return "#ff7f0e";   /* a failure: orange */
	case 3: return "#1f77b4";   /* snapshot: blue */
	case 2: return "#000000";   /* exit, signal, stopped, continued: black */
	case 1: return "#555555";   /* end */
	default: return "#8c8c8c";  /* start, attach, process, capture-*: grey */
	}
}

/* The label of one event: its kind, the pid when there are several processes,
 * and the one figure that tells most for some kinds. Caller frees. */
static char *event_label(const struct runlog_event_rec *ev, bool several)
{
	static const struct { const char *kind, *key, *before, *after; } shown[] = {
		{ "trigger", "rule", " ", "" }, { "exit", "status", " status ", "" },
		{ "signal", "signal", " ", "" }, { "end", "reason", " (", ")" },
		{ "snapshot", "path", " ", "" }, { "snapshot-failed", "cause", " (", ")" },
		{ "attach-failed", "cause", " (", ")" }, { "stopped", "state", " (", ")" },
		{ "continued", "after_s", " after ", " s" },
	};
	char *val = NULL, *label, *head;
	const char *before = "", *after = "", *shownval;
	size_t i;

	for (i = 0; i < sizeof shown / sizeof shown[0] && !val; i++) {
		if (strcmp(ev->kind, shown[i].kind) == 0) {
			val = runlog_field(ev->detail, shown[i].key);
			before = shown[i].before;
			after = shown[i].after;
		}
	}
	head = several && ev->pid ? xasprintf("%s %d", ev->kind, ev->pid) : xstrdup(ev->kind);
	if (!val)
		return head;
	/* a snapshot is named by its file, without the directory */
	shownval = strrchr(val, '/') && strcmp(ev->kind, "snapshot") == 0 ? strrchr(val, '/') + 1 : val;
	label = xasprintf("%s%s%s%s", head, before, shownval, after);
	free(val);
	free(head);
	return label;
}

/* Compare events by time, for a stable order of marks. */
static int cmp_event_time(const void *a, const void *b)
{
	const struct runlog_event_rec *const *x = a, *const *y = b;
	if ((*x)->t != (*y)->t)
		return (*x)->t < (*y)->t ? -1 : 1;
	return *x < *y ? -1 : *x > *y;
}

/* The label shared by the n events of ev: each distinct label once, with a
 * count when repeated ("process ×12"). Brief labels are the kinds alone, for
 * groups with too many distinct labels to read. Sets *distinct; caller frees. */
static char *group_label(const struct runlog_event_rec *const *ev, size_t n, bool several,
			 bool brief, size_t *distinct)
{
	char **labels = xcalloc(n, sizeof *labels), *text = NULL;
	size_t *counts = xcalloc(n, sizeof *counts);
	size_t nl = 0, i, k;

	for (i = 0; i < n; i++) {
		char *l = brief ? xstrdup(ev[i]->kind) : event_label(ev[i], several);
		for (k = 0; k < nl && strcmp(labels[k], l) != 0; k++)
			;
		if (k < nl) {
			counts[k]++;
			free(l);
		} else {
			labels[nl] = l;
			counts[nl++] = 1;
		}
	}
	for (k = 0; k < nl; k++) {
		char *piece = counts[k] > 1 ? xasprintf("%s ×%zu", labels[k], counts[k])
					    : xstrdup(labels[k]);
		char *t2 = text ? xasprintf("%s, %s", text, piece) : xstrdup(piece);
		free(text);
		free(piece);
		free(labels[k]);
		text = t2;
	}
	free(labels);
	free(counts);
	*distinct = nl;
	return text;
}

/* Group events closer than gap seconds (about a label's height) under one
 * label of at most max_chars characters. Returns the count of labels. */
static size_t make_marks(const struct runlog_data *d, bool several, double gap,
			 size_t max_chars, struct mark **out)
{
	const struct runlog_event_rec **ev;
	struct mark *marks;
	size_t n = 0, i, j, k, distinct;

	*out = NULL;
	if (d->nevents == 0)
		return 0;
	ev = xcalloc(d->nevents, sizeof *ev);
	for (i = 0; i < d->nevents; i++)
		ev[i] = &d->events[i];
	qsort(ev, d->nevents, sizeof *ev, cmp_event_time);
	marks = xcalloc(d->nevents, sizeof *marks);
	for (i = 0; i < d->nevents; i = j) {
		int rank = -1;

		/* the first label, against the axis, goes right of its line: the next
		 * one (left of its own) must then be two labels away */
		bool right = n == 0 && (ev[i]->t < gap || ev[i]->t <= 0);
		for (j = i; j < d->nevents && ev[j]->t - ev[i]->t <= (right ? 2 * gap : gap); j++)
			;
		for (k = i; k < j; k++)
			if (event_rank(ev[k]->kind) > rank)
				rank = event_rank(ev[k]->kind);
		marks[n].label = group_label(ev + i, j - i, several, false, &distinct);
		/* a label longer than the plot is high: the kinds and their counts
		 * say it shorter, and what still does not fit is cut */
		if (strlen(marks[n].label) > max_chars) {
			free(marks[n].label);
			marks[n].label = group_label(ev + i, j - i, several, true, &distinct);
		}
		if (strlen(marks[n].label) > max_chars) {
			size_t cut = max_chars > 3 ? max_chars - 3 : 0;
			while (cut > 0 && ((unsigned char)marks[n].label[cut] & 0xc0) == 0x80)
				cut--;
			strcpy(marks[n].label + cut, "...");
		}
		marks[n].t = ev[i]->t;
		marks[n].right = right;
		marks[n].rank = rank;
		marks[n].color = rank_color(rank);
		n++;
	}
	free(ev);
	*out = marks;
	return n;
}

/* The figure of a sample at a field offset. */
static uint64_t field_of(const struct mem_sample *s, size_t field)
{
	uint64_t v;
	memcpy(&v, (const char *)s + field, sizeof v);
	return v;
}

/* Largest measured value of a series, or -1 when it has none. */
static double series_peak(const struct runlog_data *d, int pid, size_t field)
{
	double peak = -1;
	size_t i;

	for (i = 0; i < d->nsamples; i++) {
		uint64_t v;
		if (d->samples[i].s.pid != pid)
			continue;
		v = field_of(&d->samples[i].s, field);
		if (v != RUNLOG_NONE && (double)v > peak)
			peak = (double)v;
	}
	return peak;
}

/* The short name of a pid for legends: "1234 server", or "pid 1234". */
static char *process_title(const struct runlog_data *d, int pid)
{
	size_t i;

	for (i = 0; i < d->nprocs; i++) {
		if (d->procs[i].pid == pid && d->procs[i].cmd[0]) {
			const char *cmd = d->procs[i].cmd;
			size_t len = strcspn(cmd, " \t");
			const char *base = cmd;
			const char *slash;
			/* the program's base name, without its arguments */
			while ((slash = memchr(base, '/', len - (size_t)(base - cmd))))
				base = slash + 1;
			if (base == cmd + len)
				break;
			return xasprintf("%d %.*s", pid, (int)(len - (size_t)(base - cmd)), base);
		}
	}
	/* a member found later (--children): its "process" event has cmd=PROG%20ARGS */
	for (i = 0; i < d->nevents; i++) {
		const struct runlog_event_rec *e = &d->events[i];
		const char *cmd, *base, *slash;
		size_t len;
		if (e->pid != pid || strcmp(e->kind, "process") != 0 ||
		    !(cmd = strstr(e->detail, "cmd=")))
			continue;
		cmd += 4;
		len = strcspn(cmd, " \t");
		if (strstr(cmd, "%20") && (size_t)(strstr(cmd, "%20") - cmd) < len)
			len = (size_t)(strstr(cmd, "%20") - cmd);
		base = cmd;
		while ((slash = memchr(base, '/', len - (size_t)(base - cmd))))
			base = slash + 1;
		if (base < cmd + len)
			return xasprintf("%d %.*s", pid, (int)(len - (size_t)(base - cmd)), base);
	}
	return xasprintf("pid %d", pid);
}

/* Compare process series by peak, largest first. */
static int cmp_peak(const void *a, const void *b)
{
	const struct series *x = a, *y = b;
	if (x->peak != y->peak)
		return x->peak > y->peak ? -1 : 1;
	return 0;
}

/* Choose the lines to draw: the breakdown of one process, or one RSS line per
 * process (plus the total) for several. Returns the count; *dropped tells how
 * many processes were left out for being too many. */
static size_t make_series(const struct runlog_data *d, struct series **out, size_t *dropped)
{
	static const struct { const char *title, *color; double width; size_t field; bool always; } parts[] = {
		{ "RSS", "#000000", 2.5, offsetof(struct mem_sample, rss), true },
		{ "anon", "#d62728", 1.5, offsetof(struct mem_sample, anon), true },
		{ "file", "#1f77b4", 1.5, offsetof(struct mem_sample, file), true },
		{ "shmem", "#9467bd", 1.5, offsetof(struct mem_sample, shmem), false },
		{ "swap", "#ff7f0e", 1.5, offsetof(struct mem_sample, swap), true },
		{ "PSS", "#2ca02c", 1.5, offsetof(struct mem_sample, pss), true },
		{ "USS", "#17becf", 1.5, offsetof(struct mem_sample, uss), true },
	};
	struct series *s;
	size_t n = 0, i, nproc = 0;
	int only = -1;

	*dropped = 0;
	for (i = 0; i < d->npids; i++) {
		if (d->pids[i] != 0) {
			nproc++;
			only = d->pids[i];
		}
	}
	if (nproc <= 1) {
		/* one process (or only a total): its breakdown */
		int pid = nproc == 1 ? only : 0;
		s = xcalloc(sizeof parts / sizeof parts[0], sizeof *s);
		for (i = 0; i < sizeof parts / sizeof parts[0]; i++) {
			double peak = series_peak(d, pid, parts[i].field);
			/* a figure never measured has no line; shmem only when it is there */
			if (peak < 0 || (!parts[i].always && peak == 0))
				continue;
			s[n].title = xstrdup(parts[i].title);
			s[n].color = parts[i].color;
			s[n].width = parts[i].width;
			s[n].pid = pid;
			s[n].field = parts[i].field;
			s[n].peak = peak;
			n++;
		}
		*out = s;
		return n;
	}
	s = xcalloc(d->npids, sizeof *s);
	for (i = 0; i < d->npids; i++) {
		double peak;
		if (d->pids[i] == 0)
			continue;
		peak = series_peak(d, d->pids[i], offsetof(struct mem_sample, rss));
		if (peak < 0)
			continue;
		s[n].title = process_title(d, d->pids[i]);
		s[n].width = 1.5;
		s[n].pid = d->pids[i];
		s[n].field = offsetof(struct mem_sample, rss);
		s[n].peak = peak;
		n++;
	}
	if (n > MAX_PROCESS_SERIES) {
		qsort(s, n, sizeof *s, cmp_peak);
		for (i = MAX_PROCESS_SERIES; i < n; i++)
			free(s[i].title);
		*dropped = n - MAX_PROCESS_SERIES;
		n = MAX_PROCESS_SERIES;
	}
	for (i = 0; i < n; i++)
		s[i].color = process_colors[i % (sizeof process_colors / sizeof process_colors[0])];
	for (i = 0; i < d->npids; i++) {
		double peak;
		if (d->pids[i] != 0)
			continue;
		peak = series_peak(d, 0, offsetof(struct mem_sample, rss));
		if (peak < 0)
			break;
		s[n].title = xstrdup("total");
		s[n].color = "#000000";
		s[n].width = 2.5;
		s[n].pid = 0;
		s[n].field = offsetof(struct mem_sample, rss);
		s[n].peak = peak;
		n++;
	}
	*out = s;
	return n;
}

/* Memory unit for a largest figure in KiB: the largest unit it reaches. */
static struct scale memory_scale(double kib)
{
	if (kib >= 1024.0 * 1024 * 1024)
		return (struct scale){ 1024.0 * 1024 * 1024, "TiB" };
	if (kib >= 1024.0 * 1024)
		return (struct scale){ 1024.0 * 1024, "GiB" };
	if (kib >= 1024.0)
		return (struct scale){ 1024.0, "MiB" };
	return (struct scale){ 1, "KiB" };
}

/* Time unit for a span in seconds: ticks stay small round numbers. */
static struct scale time_scale(double span)
{
	if (span <= 180)
		return (struct scale){ 1, "s" };
	if (span <= 3 * 3600)
		return (struct scale){ 60, "min" };
	if (span <= 72 * 3600)
		return (struct scale){ 3600, "h" };
	return (struct scale){ 86400, "d" };
}

/* The default title: the log's name and, for one process, its command, cut to
 * what fits the width. Caller frees. */
static char *default_title(const struct runlog_data *d, const char *log, unsigned width)
{
	const char *base = strrchr(log, '/') ? strrchr(log, '/') + 1 : log;
	const struct runlog_process_rec *p = NULL;
	size_t nproc = 0, i;
	int only = 0, room;

	for (i = 0; i < d->npids; i++) {
		if (d->pids[i] != 0) {
			nproc++;
			only = d->pids[i];
		}
	}
	for (i = 0; i < d->nprocs && nproc == 1; i++)
		if (d->procs[i].pid == only)
			p = &d->procs[i];
	if (p && p->cmd[0]) {
		/* the program without its directory, then its arguments */
		const char *cmd = p->cmd, *end = cmd + strcspn(cmd, " \t"), *q;
		for (q = cmd; q < end; q++)
			if (*q == '/' && q + 1 < end)
				cmd = q + 1;
		/* the title font takes about 10 pixels a character */
		room = (int)(width / 10) - (int)strlen("memory of 1234567 ... ()") - (int)strlen(base);
		if (room < 10)
			room = 10;
		if ((int)strlen(cmd) > room) {
			int cut = room - 3;
			/* not inside a UTF-8 character */
			while (cut > 0 && ((unsigned char)cmd[cut] & 0xc0) == 0x80)
				cut--;
			return xasprintf("memory of %d %.*s... (%s)", p->pid, cut, cmd, base);
		}
		return xasprintf("memory of %d %s (%s)", p->pid, cmd, base);
	}
	if (nproc > 1)
		return xasprintf("memory of %zu processes (%s)", nproc, base);
	if (nproc == 1)
		return xasprintf("memory of %d (%s)", only, base);
	return xasprintf("memory (%s)", base);
}

/* The stacks over time: their variables and data (none: mw_nstacks = 0). */
static void write_stacks(FILE *f, const struct plot_opts *o, const struct plot_stacks *st)
{
	double ymax = 0;
	struct scale ys;
	size_t i, k, n = st->n;

	for (i = 0; i < n; i++)
		if (st->v[i].peak > ymax)
			ymax = st->v[i].peak;
	ys = memory_scale(ymax / 1024);
	fputs("# the stacks over time: the live heap of the top stacks at each snapshot,\n"
	      "# one line each: block i-1 of $mw_stacks (time_s value_kib); their own\n"
	      "# memory axis (mw_stack_ydiv, mw_stack_yunit, mw_stack_ymax), and the height\n"
	      "# in pixels of their panel at the bottom of the image (no block: none)\n", f);
	fprintf(f, "mw_nstacks = %zu\n", n);
	fprintf(f, "mw_stack_ydiv = %.1f\nmw_stack_yunit = '%s'\nmw_stack_ymax = %.1f\n", ys.div,
		ys.unit, ymax / 1024);
	fprintf(f, "mw_stack_panel = %u\n",
		n ? (o->height > 2 * STACKS_PANEL_HEIGHT ? STACKS_PANEL_HEIGHT : o->height * 2 / 5) : 0);
	fprintf(f, "array mw_stack_title[%zu]\narray mw_stack_color[%zu]\n", n ? n : 1, n ? n : 1);
	for (i = 0; i < n; i++) {
		fprintf(f, "mw_stack_title[%zu] = ", i + 1);
		gp_string(f, st->v[i].label);
		fprintf(f, "; mw_stack_color[%zu] = '%s'\n", i + 1,
			stack_colors[i % (sizeof stack_colors / sizeof stack_colors[0])]);
	}
	/* no block without stacks: the script draws none then */
	if (!n)
		return;
	fputs("$mw_stacks << EOD\n", f);
	for (i = 0; i < n; i++) {
		if (i > 0)
			fputs("\n\n", f);
		fprintf(f, "# stack %zu: ", i + 1);
		for (const char *p = st->v[i].label; *p; p++)
			fputc((unsigned char)*p < 0x20 ? ' ' : *p, f);
		fputc('\n', f);
		for (k = 0; k < st->nsnaps; k++) {
			/* the snapshots of other processes are no point of this line */
			if (isnan(st->v[i].bytes[k]))
				continue;
			fprintf(f, "%.3f %.1f\n", st->t[k], st->v[i].bytes[k] / 1024);
		}
	}
	fputs("EOD\n", f);
}

/* Write the head of the gnuplot program: the variables and the data that the
 * script (written after it) draws. */
void write_head(FILE *f, const struct plot_opts *o, const struct runlog_data *d,
		const struct plot_stacks *st, const char *script_path)
{
	struct series *series;
	struct mark *marks;
	size_t nseries, nmarks, dropped, i, k, nproc = 0;
	double xmax = 0, ymax = 0, gap;
	struct scale xs, ys;
	char *title;

	for (i = 0; i < d->nsamples; i++)
		if (d->samples[i].t > xmax)
			xmax = d->samples[i].t;
	for (i = 0; i < d->nevents; i++)
		if (d->events[i].t > xmax)
			xmax = d->events[i].t;
	for (i = 0; i < d->npids; i++)
		if (d->pids[i] != 0)
			nproc++;
	nseries = make_series(d, &series, &dropped);
	if (dropped)
		mw_warn("plot: drawing the %d largest processes; %zu more left out",
			MAX_PROCESS_SERIES, dropped);
	for (i = 0; i < nseries; i++)
		if (series[i].peak > ymax)
			ymax = series[i].peak;
	/* events closer than a label's height (16 pixels of about width - 150
	 * for the plot area) share one label */
	gap = xmax * 16.0 / (o->width > 300 ? o->width - 150 : 150);
	/* labels run down from the top: about 7 pixels a character of the plot's
	 * height (the image's less title, axis and key) */
	nmarks = make_marks(d, nproc > 1, gap, o->height > 290 ? (o->height - 150) / 7 : 20, &marks);
	xs = time_scale(xmax);
	ys = memory_scale(ymax);
	title = o->title ? xstrdup(o->title) : default_title(d, o->log, o->width);

	fputs("# memwatch plot: a gnuplot program; run it with: gnuplot THIS_FILE > mem.png\n", f);
	fputs("# Variables for the script below (plot/memwatch.gp), worked out from ", f);
	for (const char *p = o->log; *p; p++)
		fputc((unsigned char)*p < 0x20 ? ' ' : *p, f);
	fputs("\n", f);
	fprintf(f, "mw_format = '%s'\n", o->format == FMT_SVG ? "svg" : "png");
	fprintf(f, "mw_width = %u\nmw_height = %u\n", o->width, o->height);
	fputs("mw_title = ", f);
	gp_string(f, title);
	fputc('\n', f);
	fputs("# time axis: seconds in the data, shown in mw_xunit (divide by mw_xdiv)\n", f);
	fprintf(f, "mw_xdiv = %.1f\nmw_xunit = '%s'\nmw_xmax = %.3f\n", xs.div, xs.unit, xmax);
	fputs("# memory axis: KiB in the data, shown in mw_yunit (divide by mw_ydiv)\n", f);
	fprintf(f, "mw_ydiv = %.1f\nmw_yunit = '%s'\nmw_ymax = %.1f\n", ys.div, ys.unit, ymax);
	fputs("# one line per series: block i-1 of $mw_data (time_s value_kib)\n", f);
	fprintf(f, "mw_nseries = %zu\n", nseries);
	fprintf(f, "array mw_series_title[%zu]\narray mw_series_color[%zu]\n"
		"array mw_series_width[%zu]\narray mw_series_points[%zu]\n",
		nseries ? nseries : 1, nseries ? nseries : 1, nseries ? nseries : 1,
		nseries ? nseries : 1);
	for (i = 0; i < nseries; i++) {
		size_t cnt = 0;
		for (k = 0; k < d->nsamples; k++)
			if (d->samples[k].s.pid == series[i].pid)
				cnt++;
		fprintf(f, "mw_series_title[%zu] = ", i + 1);
		gp_string(f, series[i].title);
		fprintf(f, "; mw_series_color[%zu] = '%s'; mw_series_width[%zu] = %g; "
			"mw_series_points[%zu] = %d\n",
			i + 1, series[i].color, i + 1, series[i].width, i + 1, cnt < 2);
	}
	fputs("# events: a line each (time_s, colour); labels over them, those close\n"
	      "# together sharing one (time_s, text, colour)\n", f);
	fprintf(f, "mw_nevents = %zu\n", d->nevents);
	fprintf(f, "array mw_event_t[%zu]\narray mw_event_color[%zu]\n",
		d->nevents ? d->nevents : 1, d->nevents ? d->nevents : 1);
	for (i = 0; i < d->nevents; i++)
		fprintf(f, "mw_event_t[%zu] = %.3f; mw_event_color[%zu] = '%s'\n", i + 1,
			d->events[i].t, i + 1, rank_color(event_rank(d->events[i].kind)));
	fprintf(f, "mw_nlabels = %zu\n", nmarks);
	fprintf(f, "array mw_label_t[%zu]\narray mw_label_text[%zu]\narray mw_label_color[%zu]\n"
		"array mw_label_right[%zu]\n",
		nmarks ? nmarks : 1, nmarks ? nmarks : 1, nmarks ? nmarks : 1, nmarks ? nmarks : 1);
	for (i = 0; i < nmarks; i++) {
		fprintf(f, "mw_label_t[%zu] = %.3f; mw_label_text[%zu] = ", i + 1, marks[i].t, i + 1);
		gp_string(f, marks[i].label);
		fprintf(f, "; mw_label_color[%zu] = '%s'; mw_label_right[%zu] = %d\n", i + 1,
			marks[i].color, i + 1, marks[i].right);
	}
	fputs("$mw_data << EOD\n", f);
	for (i = 0; i < nseries; i++) {
		if (i > 0)
			fputs("\n\n", f);
		/* a comment line naming the block, for people reading --script */
		fprintf(f, "# series %zu: ", i + 1);
		for (const char *p = series[i].title; *p; p++)
			fputc((unsigned char)*p < 0x20 ? ' ' : *p, f);
		fputc('\n', f);
		for (k = 0; k < d->nsamples; k++) {
			const struct runlog_sample_rec *r = &d->samples[k];
			uint64_t v;
			if (r->s.pid != series[i].pid)
				continue;
			v = field_of(&r->s, series[i].field);
			if (v == RUNLOG_NONE)
				fprintf(f, "%.3f NaN\n", r->t);
			else
				fprintf(f, "%.3f %" PRIu64 "\n", r->t, v);
		}
	}
	fputs("EOD\n", f);
	write_stacks(f, o, st);
	fputs("# ---- the script: ", f);
	fputs(script_path, f);
	fputs(" ----\n", f);

	for (i = 0; i < nseries; i++)
		free(series[i].title);
	free(series);
	for (i = 0; i < nmarks; i++)
		free(marks[i].label);
	free(marks);
	free(title);
}
