/* htmlreport.c: memwatch report: one self-contained HTML page for a whole run:
 * the memory plot with its events (gnuplot's SVG, through plot.h), the
 * snapshots on the time line, and per process the growth table between its
 * first and last snapshot with the diff's flame graph (through report.h),
 * with three snapshots or more each row's verdict and chart (htmltrend.c). No
 * part of the page is fetched from anywhere: it opens offline. */
#include "config.h"
#include "commands.h"
#include "flame.h"
#include "htmltrend.h"
#include "plot.h"
#include "report.h"
#include "runlog.h"
#include "snapshot.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char report_usage[] =
	"  memwatch report [options] RUN.LOG\n"
	"    one HTML page for a whole run, to open in a browser (no network needed):\n"
	"    the memory plot with its events, the snapshots on the time line, and per\n"
	"    process the growth table between its first and last snapshot and the\n"
	"    flame graph of that diff; with three snapshots or more, each row of the\n"
	"    table with its verdict (leak?, plateau, burst, steady) and a chart of its\n"
	"    live heap at every snapshot\n"
	"    -o, --output FILE      write the page to FILE (default: standard output,\n"
	"                           refused when it is a terminal)\n"
	"    -f, --force            overwrite FILE if it exists\n"
	"    -D, --debug-dir DIR    look for debug files by build-id in DIR too (repeatable)\n"
	"    -h, --help             this help\n"
	"    Without gnuplot the page is written without the plot (a warning says so).\n"
	"    Example: memwatch report -o run.html run.log\n";

struct report_opts {
	const char *log;
	const char *output;
	bool force;
	const char **dirs;
	size_t ndirs;
};

static int parse_args(int argc, char **argv, struct report_opts *o)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "debug-dir", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	optind = 0;   /* options may follow the run log, as in "report RUN.LOG -o F" */
	while ((c = getopt_long(argc, argv, ":o:fD:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			o->force = true;
			break;
		case 'D':
			o->dirs = xrealloc(o->dirs, (o->ndirs + 1) * sizeof *o->dirs);
			o->dirs[o->ndirs++] = optarg;
			break;
		case 'h':
			return mw_usage_print(report_usage);
		default:
			return mw_option_error("report", c, argv, optind, optopt);
		}
	}
	if (argc - optind != 1) {
		mw_error("report: expected one run log (got %d)", argc - optind);
		mw_hint("memwatch report [-o report.html] run.log");
		return MW_EXIT_USAGE;
	}
	o->log = argv[optind];
	return -1;
}

/* data in base64, as a data: URL needs it. */
static void base64(FILE *f, const unsigned char *p, size_t n)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		fputc(al[v >> 18], f);
		fputc(al[(v >> 12) & 63], f);
		fputc(al[(v >> 6) & 63], f);
		fputc(al[v & 63], f);
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		fputc(al[v >> 18], f);
		fputc(al[(v >> 12) & 63], f);
		fputc(i + 1 < n ? al[(v >> 6) & 63] : '=', f);
		fputc('=', f);
	}
}

/* The time line: the run from 0 to its end, with a mark for each snapshot (and
 * for the trigger and the end), as a small inline SVG. */
static void timeline(FILE *f, const struct runlog_data *d, const struct cmdfile_snap *s, size_t ns)
{
	const double w = 1200, left = 40, right = 60;
	double tmax = 0, x;
	char b[32];

	for (size_t i = 0; i < d->nsamples; i++)
		if (d->samples[i].t > tmax)
			tmax = d->samples[i].t;
	for (size_t i = 0; i < d->nevents; i++)
		if (d->events[i].t > tmax)
			tmax = d->events[i].t;
	if (tmax <= 0)
		tmax = 1;
	fprintf(f, "<svg class=\"timeline\" width=\"%.0f\" height=\"86\" viewBox=\"0 0 %.0f 86\" "
		   "xmlns=\"http://www.w3.org/2000/svg\">\n", w, w);
	fprintf(f, "<line x1=\"%.0f\" y1=\"50\" x2=\"%.0f\" y2=\"50\" stroke=\"#555\" stroke-width=\"2\"/>\n",
		left, w - right);
	fprintf(f, "<text x=\"%.0f\" y=\"70\" text-anchor=\"middle\">0 s</text>\n", left);
	fprintf(f, "<text x=\"%.0f\" y=\"70\" text-anchor=\"middle\">%s</text>\n", w - right,
		fmt_seconds(b, sizeof b, tmax));
	for (size_t i = 0; i < d->nevents; i++) {
		const struct runlog_event_rec *ev = &d->events[i];
		if (strcmp(ev->kind, "trigger") != 0 && strcmp(ev->kind, "exit") != 0 &&
		    strcmp(ev->kind, "attach") != 0)
			continue;
		x = left + (w - left - right) * ev->t / tmax;
		fprintf(f, "<line x1=\"%.1f\" y1=\"42\" x2=\"%.1f\" y2=\"58\" stroke=\"#c60\" "
			   "stroke-width=\"2\"><title>%s at %.3f s</title></line>\n",
			x, x, ev->kind, ev->t);
	}
	for (size_t i = 0; i < ns; i++) {
		x = left + (w - left - right) * s[i].t / tmax;
		fprintf(f, "<g><title>snapshot %zu at %.3f s, pid %d: ", i + 1, s[i].t, s[i].pid);
		flame_escape(f, s[i].shown);
		fprintf(f, "</title><circle cx=\"%.1f\" cy=\"50\" r=\"6\" fill=\"%s\"/>"
			   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">#%zu</text></g>\n",
			x, s[i].final ? "#2a6" : "#26c", x, i % 2 ? 24 : 34, i + 1);
	}
	fputs("</svg>\n", f);
}

/* The page's head: the style, the title, what was run. */
static void head(FILE *f, const struct report_opts *o, const struct runlog_data *d)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>memwatch report: ", f);
	flame_escape(f, o->log);
	fputs("</title>\n<style>\n"
	      "body { font-family: 'DejaVu Sans', Verdana, sans-serif; margin: 16px 24px; color: #222; }\n"
	      "h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; }\n"
	      "pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }\n"
	      "table.events { border-collapse: collapse; font-size: 13px; }\n"
	      "table.events td, table.events th { border-bottom: 1px solid #ddd; padding: 2px 10px; text-align: left; }\n"
	      "svg.timeline text { font-size: 12px; font-family: inherit; }\n"
	      ".note { color: #733; }\n"
	      "svg.trend { vertical-align: middle; }\n"
	      ".v-leak { color: #c00; font-weight: bold; } .v-burst { color: #a60; }\n"
	      ".v-plateau { color: #36a; } .v-steady { color: #383; }\n"
	      "img.plot, div.flame svg, svg.timeline { max-width: 100%; height: auto; }\n"
	      "</style>\n</head>\n<body>\n<h1>memwatch report: ", f);
	flame_escape(f, o->log);
	fputs("</h1>\n<p>", f);
	if (d->command) {
		fputs("command: <code>", f);
		flame_escape(f, d->command);
		fputs("</code><br>\n", f);
	}
	for (size_t i = 0; i < d->nprocs; i++) {
		fprintf(f, "process %d: <code>", d->procs[i].pid);
		flame_escape(f, d->procs[i].cmd);
		fputs("</code><br>\n", f);
	}
	fprintf(f, "%zu samples, %zu events</p>\n", d->nsamples, d->nevents);
}

/* An event's detail as a person reads it: its "k=v" fields with their values
 * decoded (run.log writes a space in a value as %20), one after another. */
static void detail_cell(FILE *f, const char *detail)
{
	const char *p = detail;
	bool first = true;

	while (*p) {
		size_t n;
		char *tok;

		while (*p == ' ')
			p++;
		if (!(n = strcspn(p, " ")))
			break;
		if (!first)
			fputs(" &middot; ", f);
		first = false;
		tok = runlog_decode(p, n);
		flame_escape(f, tok);
		free(tok);
		p += n;
	}
}

/* The events of the run as a table. */
static void events_table(FILE *f, const struct runlog_data *d)
{
	fputs("<table class=\"events\">\n<tr><th>time</th><th>pid</th><th>event</th><th>detail</th></tr>\n", f);
	for (size_t i = 0; i < d->nevents; i++) {
		const struct runlog_event_rec *ev = &d->events[i];
		fprintf(f, "<tr><td>%.3f s</td><td>", ev->t);
		if (ev->pid)
			fprintf(f, "%d", ev->pid);
		else
			fputs("-", f);
		fputs("</td><td>", f);
		flame_escape(f, ev->kind);
		fputs("</td><td>", f);
		detail_cell(f, ev->detail);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* CPython: what keeps the objects alive, as the last snapshot's referrer
 * search (--referrers) found it: a list of its chains and of what one object
 * of each top type holds, with how long Python threads waited. */
static void referrers_list(FILE *f, const char *path, int pid)
{
	char *cause = NULL, b[32];
	struct snapshot *s = snapshot_read(path, &cause);
	const struct snap_refsearch *q;

	free(cause);
	if (!s || !s->has_refs) {
		snapshot_free(s);
		return;
	}
	q = &s->refsearch;
	fprintf(f, "<h3>pid %d: what keeps Python objects alive</h3>\n<p class=\"referrers\">", pid);
	if (q->status == SNAP_REFS_UNAVAILABLE || q->status == SNAP_REFS_NO_GIL) {
		fputs("Not searched: ", f);
		flame_escape(f, q->note ? q->note : "unknown");
		fputs(".</p>\n", f);
		snapshot_free(s);
		return;
	}
	fprintf(f, "Python threads waited %s while %" PRIu64 " objects were traversed (%" PRIu64
		" tracked, %u pass%s)", fmt_seconds(b, sizeof b, (double)q->pause_ns / 1e9), q->visited,
		q->tracked, q->passes, q->passes == 1 ? "" : "es");
	if (q->note) {
		fputs("; ", f);
		flame_escape(f, q->note);
	}
	fputs(".</p>\n<ul class=\"chains\">\n", f);
	for (size_t i = 0; i < s->nchains; i++) {
		char *t = report_chain_text(&s->chains[i]);
		fputs("<li><b>", f);
		flame_escape(f, s->types[s->chains[i].type]);
		fputs("</b> kept alive by: <code>", f);
		flame_escape(f, t);
		fputs("</code></li>\n", f);
		free(t);
	}
	for (size_t i = 0; i < s->nforward; i++) {
		const struct snap_forward *w = &s->forward[i];
		fputs("<li>one <b>", f);
		flame_escape(f, s->types[w->type]);
		fprintf(f, "</b> (%s) holds:", fmt_bytes(b, sizeof b, (double)w->bytes));
		for (uint32_t k = 0; k < w->nreferents; k++) {
			fprintf(f, "%s %" PRIu64 " ", k ? "," : "", w->referents[k].count);
			flame_escape(f, w->referents[k].type ? w->referents[k].type : "?");
			fprintf(f, " %s", fmt_bytes(b, sizeof b, (double)w->referents[k].bytes));
		}
		if (!w->nreferents)
			fputs(" no other object", f);
		fputs("</li>\n", f);
	}
	fputs("</ul>\n", f);
	snapshot_free(s);
}

/* The section of one process: the table and flame graph of its first and last
 * snapshots (or of its only one), the table's rows with their trend over all
 * of them when there are three or more. 0, or an exit status (said). */
static int process_section(FILE *f, const struct report_opts *o, const struct cmdfile_snap *s,
			   size_t ns, int pid)
{
	const struct cmdfile_snap *first = NULL, *last = NULL;
	char *paths[2], *table = NULL, *svg = NULL, *types = NULL, **all;
	size_t tlen = 0, slen = 0, ylen = 0, nall = 0;
	double *times;
	FILE *tf, *sf, *yf;
	int st, n;

	all = xcalloc(ns ? ns : 1, sizeof *all);
	times = xcalloc(ns ? ns : 1, sizeof *times);
	for (size_t i = 0; i < ns; i++) {
		if (s[i].pid != pid)
			continue;
		if (!first)
			first = &s[i];
		last = &s[i];
		all[nall] = s[i].path;
		times[nall++] = s[i].t;
	}
	if (!first) {
		free(all);
		free(times);
		return MW_EXIT_OK;
	}
	paths[0] = first->path;
	paths[1] = last->path;
	n = first == last ? 1 : 2;
	tf = open_memstream(&table, &tlen);
	sf = open_memstream(&svg, &slen);
	yf = open_memstream(&types, &ylen);
	if (!tf || !sf || !yf) {
		mw_error("report: open_memstream: %s", strerror(errno));
		if (tf)
			fclose(tf);
		if (sf)
			fclose(sf);
		if (yf)
			fclose(yf);
		free(table);
		free(svg);
		free(types);
		free(all);
		free(times);
		return MW_EXIT_FAILURE;
	}
	st = report_parts(paths, n, o->dirs, o->ndirs, tf, sf, yf);
	fclose(tf);
	fclose(sf);
	fclose(yf);
	if (st == MW_EXIT_OK) {
		fprintf(f, "<h2>pid %d: ", pid);
		if (n == 2) {
			fputs("growth from ", f);
			flame_escape(f, first->shown);
			fputs(" to ", f);
			flame_escape(f, last->shown);
		} else {
			fputs("live heap in ", f);
			flame_escape(f, first->shown);
			fputs(" (one snapshot, so no growth to show)", f);
		}
		fputs("</h2>\n<div class=\"flame\">\n", f);
		fwrite(svg, 1, slen, f);
		fputs("</div>\n", f);
		if (n == 1 || html_trend_table(f, table, all, times, nall, o->dirs, o->ndirs) < 0) {
			fputs("<pre>", f);
			flame_escape(f, table);
			fputs("</pre>\n", f);
		}
		if (ylen) {
			/* CPython: what the objects are */
			fprintf(f, "<h3>pid %d: Python objects by type</h3>\n<pre class=\"types\">", pid);
			flame_escape(f, types);
			fputs("</pre>\n", f);
		}
		referrers_list(f, last->path, pid);
	}
	free(table);
	free(svg);
	free(types);
	free(all);
	free(times);
	return st;
}

int cmd_report(int argc, char **argv)
{
	struct report_opts o = { 0 };
	struct runlog_data *d = NULL;
	struct outfile *of = NULL;
	struct cmdfile_snap *snaps = NULL;
	size_t nsnaps = 0, nmissing = 0, imglen = 0;
	unsigned plot_height = 500;
	char *cause = NULL, *img = NULL, *missing = NULL;
	const char *hint = NULL;
	int ret;
	FILE *f;

	ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		goto out;
	if (!o.output && isatty(STDOUT_FILENO)) {
		mw_error("report: will not write an HTML page to a terminal: use -o FILE, or redirect "
			 "(memwatch report RUN.LOG > report.html)");
		ret = MW_EXIT_USAGE;
		goto out;
	}
	d = cmdfile_read_log("report", o.log);
	if (!d) {
		ret = MW_EXIT_BADFILE;
		goto out;
	}
	/* SIGINT and SIGTERM are only noted from here: gnuplot is stopped and the
	 * temporary file removed before memwatch ends */
	of = cmdfile_open("report", o.output, o.force);
	if (!of) {
		ret = MW_EXIT_FAILURE;
		goto out;
	}
	f = outfile_stream(of);
	ret = plot_image(o.log, d, true, 1200, &plot_height, 8, o.dirs, o.ndirs, &img, &imglen,
			 &cause, &hint);
	if (ret >= MW_EXIT_SIGNAL)
		goto out;
	if (ret != MW_EXIT_OK) {
		/* the rest of the page is worth having without the plot */
		mw_warn("report: no memory plot in the page: %s", cause);
		if (hint)
			mw_hint("%s", hint);
	}
	nsnaps = cmdfile_snapshots(o.log, d, &snaps, &nmissing, &missing);
	if (nmissing)
		mw_warn("report: %zu snapshot%s named in '%s' not found ('%s'%s): left out", nmissing,
			nmissing == 1 ? "" : "s", o.log, missing, nmissing > 1 ? " and more" : "");
	free(missing);

	head(f, &o, d);
	fputs("<h2>memory</h2>\n", f);
	if (img) {
		fprintf(f, "<img class=\"plot\" alt=\"memory of the run%s\" width=\"1200\" "
			   "height=\"%u\" src=\"data:image/svg+xml;base64,",
			plot_height > 500 ? ", and its top stacks over time" : "", plot_height);
		base64(f, (const unsigned char *)img, imglen);
		fputs("\">\n", f);
	} else {
		fputs("<p class=\"note\">no memory plot: ", f);
		flame_escape(f, cause);
		fputs("</p>\n", f);
	}
	fprintf(f, "<h2>time line: %zu snapshot%s</h2>\n", nsnaps, nsnaps == 1 ? "" : "s");
	timeline(f, d, snaps, nsnaps);
	if (nsnaps == 0)
		fputs("<p class=\"note\">no snapshot in this run: nothing to break down by call stack</p>\n", f);
	for (size_t i = 0; i < d->npids; i++) {
		if (d->pids[i] == 0)
			continue;
		ret = process_section(f, &o, snaps, nsnaps, d->pids[i]);
		if (ret != MW_EXIT_OK)
			goto out;
		if (stop_signal_pending()) {
			ret = MW_EXIT_SIGNAL + stop_signal_pending();
			goto out;
		}
	}
	fputs("<h2>events</h2>\n", f);
	events_table(f, d);
	fputs("</body>\n</html>\n", f);
	ret = cmdfile_commit("report", of);
	of = NULL;
out:
	outfile_abort(of);
	cmdfile_snaps_free(snaps, nsnaps);
	free(img);
	free(cause);
	free(o.dirs);
	runlog_data_free(d);
	return ret;
}
