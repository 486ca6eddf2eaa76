/* plot.c: memwatch plot: draw a run.log by piping a gnuplot program (the script
 * kept in plot/memwatch.gp, preceded by the variables and the data memwatch
 * works out) to the external gnuplot, PNG or SVG to stdout or a file. */
#include "config.h"
#include "commands.h"
#include "plot.h"
#include "plot-internal.h"
#include "runlog.h"
#include "subproc.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

const char plot_usage[] =
	"  memwatch plot [options] RUN.LOG\n"
	"    Draw the memory of a run (RSS, anon, file, swap, PSS; one line per process\n"
	"    for several) with its events, through gnuplot. PNG unless SVG is asked.\n"
	"  -o, --output FILE      write the image to FILE (default: standard output,\n"
	"                         refused when it is a terminal); SVG if FILE ends in .svg\n"
	"  -f, --force            overwrite FILE if it exists\n"
	"  -F, --format FMT       png or svg (default: png, or svg for an -o NAME.svg)\n"
	"  -s, --size WxH         image size in pixels (default: 1200x700)\n"
	"  -t, --title TEXT       title of the plot (default: the log and its process)\n"
	"  -g, --gnuplot PROG     gnuplot program to run (default: $MEMWATCH_GNUPLOT,\n"
	"                         else " DEFAULT_GNUPLOT ")\n"
	"  -S, --script           print the gnuplot program (script and data) instead\n"
	"                         of running it\n"
	"  -n, --stacks N         below the memory, the N stacks with the most live heap\n"
	"                         at any snapshot the log names, over time, each labelled\n"
	"                         by its head frame (default: 8; 0: none; the image gets\n"
	"                         " "400 pixels taller unless --size is given)\n"
	"  -D, --debug-dir DIR    look for debug files by build-id in DIR too (repeatable)\n"
	"  -h, --help             this help\n"
	"    The script is memwatch.gp in the data directory ($MEMWATCH_DATADIR, else\n"
	"    " PKGDATADIR "); copy and change it as you like.\n"
	"    Examples:\n"
	"      memwatch plot run.log > mem.png\n"
	"      memwatch plot -o mem.svg --size 1600x900 --title 'server, night' run.log\n"
	"      memwatch plot --script run.log > mem.gp   (then: gnuplot mem.gp > mem.png)\n";

#define DEFAULT_WIDTH 1200
#define DEFAULT_HEIGHT 700
#define DEFAULT_STACKS 8

/* Parse "1200x700" (or 1200,700) into pixels within sane limits. */
static int parse_wh(const char *arg, unsigned *w, unsigned *h, char **cause)
{
	const char *s = arg;
	unsigned long a, b;
	char *end;

	if (!(*s >= '0' && *s <= '9'))
		goto bad;
	errno = 0;
	a = strtoul(s, &end, 10);
	if (errno || (*end != 'x' && *end != 'X' && *end != ','))
		goto bad;
	s = end + 1;
	if (!(*s >= '0' && *s <= '9'))
		goto bad;
	b = strtoul(s, &end, 10);
	if (errno || *end)
		goto bad;
	if (a < 100 || b < 100 || a > 10000 || b > 10000) {
		*cause = xasprintf("size '%s' out of range (100 to 10000 pixels each way)", arg);
		return -1;
	}
	*w = (unsigned)a;
	*h = (unsigned)b;
	return 0;
bad:
	*cause = xasprintf("invalid size '%s' (use WIDTHxHEIGHT in pixels, e.g. 1200x700)", arg);
	return -1;
}

/* --stacks N into *n. 0, or -1 (said). */
static int parse_stacks(const char *arg, unsigned *n)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (!*arg || *arg == '-' || *end || errno || v > 50) {
		mw_error("plot: invalid --stacks '%s' (0 to 50; 0: no stacks panel)", arg);
		return -1;
	}
	*n = (unsigned)v;
	return 0;
}

/* Does name end with suffix, ignoring case? */
static bool ends_with(const char *name, const char *suffix)
{
	size_t n = strlen(name), m = strlen(suffix);
	return n >= m && strcasecmp(name + n - m, suffix) == 0;
}

/* Parse the command line into *o; -1 when it is fine, else the exit status. */
static int parse_args(int argc, char **argv, struct plot_opts *o)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "format", required_argument, NULL, 'F' },
		{ "size", required_argument, NULL, 's' },
		{ "title", required_argument, NULL, 't' },
		{ "gnuplot", required_argument, NULL, 'g' },
		{ "script", no_argument, NULL, 'S' },
		{ "stacks", required_argument, NULL, 'n' },
		{ "debug-dir", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *cause = NULL;
	const char *env;
	int c;

	memset(o, 0, sizeof *o);
	o->width = DEFAULT_WIDTH;
	o->height = DEFAULT_HEIGHT;
	o->stacks = DEFAULT_STACKS;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:fF:s:t:g:Sn:D:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			o->force = true;
			break;
		case 'F':
			if (strcasecmp(optarg, "png") == 0)
				o->format = FMT_PNG;
			else if (strcasecmp(optarg, "svg") == 0)
				o->format = FMT_SVG;
			else {
				mw_error("plot: unknown format '%s' (png or svg)", optarg);
				return MW_EXIT_USAGE;
			}
			o->format_given = true;
			break;
		case 's':
			if (parse_wh(optarg, &o->width, &o->height, &cause) < 0)
				return mw_usage_error("plot", cause);
			o->size_given = true;
			break;
		case 't':
			o->title = optarg;
			break;
		case 'g':
			o->gnuplot = optarg;
			break;
		case 'S':
			o->script = true;
			break;
		case 'n':
			if (parse_stacks(optarg, &o->stacks) < 0)
				return MW_EXIT_USAGE;
			o->stacks_given = true;
			break;
		case 'D':
			o->dirs = xrealloc(o->dirs, (o->ndirs + 1) * sizeof *o->dirs);
			o->dirs[o->ndirs++] = optarg;
			break;
		case 'h':
			return mw_usage_print(plot_usage);
		default:
			return mw_option_error("plot", c, argv, optind, optopt);
		}
	}
	if (optind >= argc) {
		mw_error("plot: no run.log named");
		mw_hint("memwatch plot RUN.LOG > mem.png (memwatch plot --help)");
		return MW_EXIT_USAGE;
	}
	if (optind + 1 < argc) {
		mw_error("plot: one run.log at a time ('%s' is one too many)", argv[optind + 1]);
		return MW_EXIT_USAGE;
	}
	o->log = argv[optind];
	if (o->output && strcmp(o->output, "-") == 0)
		o->output = NULL;
	if (!o->format_given && o->output && ends_with(o->output, ".svg"))
		o->format = FMT_SVG;
	if (!o->gnuplot) {
		env = getenv("MEMWATCH_GNUPLOT");
		o->gnuplot = env && *env ? env : DEFAULT_GNUPLOT;
	}
	if (!*o->gnuplot) {
		mw_error("plot: --gnuplot needs a program name");
		return MW_EXIT_USAGE;
	}
	return -1;
}

/* Read a whole file into a string; NULL with *cause. */
static char *slurp(const char *path, char **cause)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		*cause = xasprintf("cannot read the plot script '%s': %s", path, strerror(errno));
		return NULL;
	}
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			buf = xrealloc(buf, cap + 1);
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	if (ferror(f)) {
		*cause = xasprintf("cannot read the plot script '%s': %s", path, strerror(errno ? errno : EIO));
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	buf[len] = '\0';
	if (strlen(buf) != len) {
		*cause = xasprintf("the plot script '%s' holds a NUL byte", path);
		free(buf);
		return NULL;
	}
	return buf;
}

/* In gnuplot's child, before exec: a named file makes gnuplot report errors
 * with their line number, where /dev/stdin can be named. */
static void stdin_by_name(void *arg)
{
	char **argv = arg;
	if (access("/dev/stdin", R_OK) != 0)
		argv[1] = NULL;
}

/* Run gnuplot prog with input on its standard input (see subproc_run). */
static int run_gnuplot(const char *prog, const char *input, size_t inlen, struct subproc_run *run)
{
	char *argv[3] = { (char *)prog, (char *)"/dev/stdin", NULL };
	struct subproc sp = { .argv = argv, .before_exec = stdin_by_name, .arg = argv };

	return subproc_run(&sp, input, inlen, run);
}

/* The line of gnuplot's complaints that says what went wrong: the first with
 * "line N:" (its position) that is not a warning, else the first warning, else
 * the first line that is not blank. A line number inside the script is given
 * back as the script's own line. Caller frees; NULL when gnuplot said nothing. */
static char *first_error(const struct subproc_buf *err, size_t script_line, const char *script_path)
{
	const char *p = err->p, *end = err->p ? err->p + err->len : NULL;
	char *warning = NULL, *plain = NULL;

	for (; p && p < end; ) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *line = xasprintf("%.*s", (int)len, p), *s = line, *at, *msg, *r;
		unsigned long no;

		p = nl ? nl + 1 : end;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s && !plain)
			plain = xstrdup(s);
		at = strstr(s, "line ");
		if (!at || sscanf(at, "line %lu:", &no) != 1 || !strchr(at, ':')) {
			free(line);
			continue;
		}
		msg = strchr(at, ':') + 1;
		while (*msg == ' ')
			msg++;
		if (script_line && no >= script_line)
			r = xasprintf("'%s' line %lu: %s", script_path, no - script_line + 1, msg);
		else
			r = xasprintf("line %lu of the program: %s", no, msg);
		if (strncasecmp(msg, "warning:", 8) != 0) {
			free(line);
			free(warning);
			free(plain);
			return r;
		}
		free(line);
		if (!warning)
			warning = r;
		else
			free(r);
	}
	if (warning) {
		free(plain);
		return warning;
	}
	return plain;
}

/* Count the lines of a string up to (not including) the byte at off. */
static size_t lines_before(const char *s, size_t off)
{
	size_t n = 0, i;
	for (i = 0; i < off; i++)
		if (s[i] == '\n')
			n++;
	return n;
}

/* Is any RSS figure measured? Without one there is nothing to draw. */
static bool any_figure(const struct runlog_data *d)
{
	size_t i;
	for (i = 0; i < d->nsamples; i++)
		if (d->samples[i].s.rss != RUNLOG_NONE)
			return true;
	return false;
}

/* The stacks over time of the run log d into *st: the top o->stacks stacks of
 * the snapshots it names (those found; the others are warned about unless
 * o->quiet), none
 * without snapshots or when o->stacks is 0. */
static void stacks_read(const struct plot_opts *o, const struct runlog_data *d,
			struct plot_stacks *st)
{
	struct cmdfile_snap *snaps = NULL;
	char **paths, *missing = NULL;
	int *pids;
	size_t n = 0, nmissing = 0, i;

	memset(st, 0, sizeof *st);
	if (!o->stacks)
		return;
	n = cmdfile_snapshots(o->log, d, &snaps, &nmissing, &missing);
	/* a log whose snapshots all stayed behind (copied alone) is drawn as one
	 * without them, unless the stacks were asked for */
	if (nmissing && !o->quiet && (n || o->stacks_given))
		mw_warn("plot: %zu snapshot%s named in '%s' not found ('%s'%s): left out of the "
			"stacks over time", nmissing, nmissing == 1 ? "" : "s", o->log, missing,
			nmissing > 1 ? " and more" : "");
	free(missing);
	st->nsnaps = n;
	if (n) {
		paths = xcalloc(n, sizeof *paths);
		pids = xcalloc(n, sizeof *pids);
		st->t = xcalloc(n, sizeof *st->t);
		for (i = 0; i < n; i++) {
			paths[i] = snaps[i].path;
			pids[i] = snaps[i].pid;
			st->t[i] = snaps[i].t;
		}
		report_stack_series(paths, pids, n, o->dirs, o->ndirs, o->stacks, o->quiet, &st->v,
				    &st->n);
		free(paths);
		free(pids);
	}
	cmdfile_snaps_free(snaps, n);
}

static void stacks_free(struct plot_stacks *st)
{
	report_series_free(st->v, st->n);
	free(st->t);
}

/* The gnuplot program for o and d (the head, then the script) into *prog, and
 * the line of the program where the script starts. 0, or an exit status with
 * *cause set (caller frees) and maybe *hint. */
static int make_program(struct plot_opts *o, const struct runlog_data *d, char **prog,
			size_t *proglen, size_t *script_line, char **script_path, char **cause,
			const char **hint)
{
	struct plot_stacks st;
	char *script;
	FILE *mf;

	*script_path = find_data_file("memwatch.gp");
	script = slurp(*script_path, cause);
	if (!script) {
		*hint = "set MEMWATCH_DATADIR to the directory that holds memwatch.gp";
		return MW_EXIT_FAILURE;
	}
	/* the whole program in memory: printed with --script, else fed to gnuplot */
	mf = open_memstream(prog, proglen);
	if (!mf) {
		*cause = xstrdup(strerror(errno));
		free(script);
		return MW_EXIT_FAILURE;
	}
	stacks_read(o, d, &st);
	/* the stacks get a panel of their own below the memory */
	if (st.n && !o->size_given)
		o->height += STACKS_PANEL_HEIGHT;
	write_head(mf, o, d, &st, *script_path);
	stacks_free(&st);
	/* gnuplot counts lines in the whole program; the script starts here */
	fflush(mf);
	*script_line = lines_before(*prog, *proglen) + 1;
	fputs(script, mf);
	if (*script && script[strlen(script) - 1] != '\n')
		fputc('\n', mf);
	free(script);
	if (fclose(mf) != 0) {
		*cause = xstrdup(strerror(errno));
		return MW_EXIT_FAILURE;
	}
	return MW_EXIT_OK;
}

/* Run the program through gnuplot; the image is in run->out then. 0, or an
 * exit status with *cause set (caller frees). */
static int render(const struct plot_opts *o, const char *prog, size_t proglen, size_t script_line,
		  const char *script_path, struct subproc_run *run, char **cause)
{
	char *msg;
	int ret;

	ret = run_gnuplot(o->gnuplot, prog, proglen, run);
	if (ret < 0) {
		*cause = xasprintf("cannot run gnuplot '%s': %s", o->gnuplot, strerror(-ret));
		return MW_EXIT_EXTERNAL;
	}
	if (run->stop_signal)
		return MW_EXIT_SIGNAL + run->stop_signal;
	if (run->exec_errno) {
		if (run->exec_errno == ENOENT)
			*cause = xasprintf("gnuplot not found ('%s'): install it (apt-get install gnuplot-nox), "
					   "or name it with --gnuplot PROG or MEMWATCH_GNUPLOT", o->gnuplot);
		else
			*cause = xasprintf("cannot run gnuplot '%s': %s (name another with --gnuplot PROG "
					   "or MEMWATCH_GNUPLOT)", o->gnuplot, strerror(run->exec_errno));
		return MW_EXIT_EXTERNAL;
	}
	msg = first_error(&run->err, script_line, script_path);
	if (WIFSIGNALED(run->status)) {
		*cause = xasprintf("gnuplot '%s' was killed by signal %d (%s)%s%s", o->gnuplot,
				   WTERMSIG(run->status), strsignal(WTERMSIG(run->status)),
				   msg ? ": " : "", msg ? msg : "");
		free(msg);
		return MW_EXIT_EXTERNAL;
	}
	if (WEXITSTATUS(run->status) != 0) {
		*cause = xasprintf("gnuplot failed (exit status %d): %s", WEXITSTATUS(run->status),
				   msg ? msg : "no message");
		free(msg);
		return MW_EXIT_EXTERNAL;
	}
	/* a gnuplot that says nothing went wrong may still have drawn nothing */
	if (o->format == FMT_PNG ? run->out.len < 8 || memcmp(run->out.p, "\x89PNG\r\n\x1a\n", 8) != 0
				 : !run->out.p || !strstr(run->out.p, "<svg")) {
		*cause = xasprintf("gnuplot wrote no %s image%s%s", o->format == FMT_SVG ? "SVG" : "PNG",
				   msg ? ": " : "", msg ? msg : "");
		free(msg);
		return MW_EXIT_EXTERNAL;
	}
	free(msg);
	return MW_EXIT_OK;
}

int plot_image(const char *log, const struct runlog_data *d, bool svg, unsigned width,
	       unsigned *height, unsigned nstacks, const char **dirs, size_t ndirs, char **img,
	       size_t *len, char **cause, const char **hint)
{
	struct plot_opts o = { .log = log, .format = svg ? FMT_SVG : FMT_PNG, .width = width,
			       .height = *height, .stacks = nstacks, .dirs = dirs, .ndirs = ndirs,
			       .quiet = true };
	const char *env = getenv("MEMWATCH_GNUPLOT");
	char *prog = NULL, *script_path = NULL;
	size_t proglen = 0, script_line = 0;
	struct subproc_run run;
	int ret;

	memset(&run, 0, sizeof run);
	*hint = NULL;
	o.gnuplot = env && *env ? env : DEFAULT_GNUPLOT;
	if (!any_figure(d)) {
		*cause = xasprintf("'%s' holds no memory figures (every one is '-')", log);
		return MW_EXIT_BADFILE;
	}
	ret = make_program(&o, d, &prog, &proglen, &script_line, &script_path, cause, hint);
	if (ret == MW_EXIT_OK)
		ret = render(&o, prog, proglen, script_line, script_path, &run, cause);
	*height = o.height;
	if (ret == MW_EXIT_OK) {
		*img = run.out.p;
		*len = run.out.len;
		run.out.p = NULL;
	}
	free(run.out.p);
	free(run.err.p);
	free(prog);
	free(script_path);
	return ret;
}

/* --------------------------------------------------------------------------- */
/* What the commands that make one file of a run log share (plot, report). */

struct runlog_data *cmdfile_read_log(const char *cmd, const char *log)
{
	char *cause = NULL;
	struct runlog_data *d = runlog_read(log, &cause);

	if (!d) {
		mw_error("%s: %s", cmd, cause);
		free(cause);
	}
	return d;
}

struct outfile *cmdfile_open(const char *cmd, const char *output, bool force)
{
	char *cause = NULL;
	struct outfile *of;

	stop_signals_install();
	of = outfile_open(output ? output : "-", force, &cause);
	if (!of) {
		mw_error("%s: %s", cmd, cause);
		free(cause);
	}
	return of;
}

int cmdfile_commit(const char *cmd, struct outfile *of)
{
	char *cause = NULL;

	if (outfile_commit(of, &cause) < 0) {
		mw_error("%s: %s", cmd, cause);
		free(cause);
		return MW_EXIT_FAILURE;
	}
	return MW_EXIT_OK;
}

/* The snapshot a log names, where it is: as named (relative to where the watch
 * ran), else beside the log. Caller frees; NULL when neither exists. */
static char *find_snapshot(const char *log, const char *path)
{
	const char *slash = strrchr(log, '/'), *base = strrchr(path, '/');
	char *p;

	if (access(path, R_OK) == 0)
		return xstrdup(path);
	if (path[0] == '/' || !slash)
		return NULL;
	p = xasprintf("%.*s/%s", (int)(slash - log), log, base ? base + 1 : path);
	if (access(p, R_OK) == 0)
		return p;
	free(p);
	return NULL;
}

size_t cmdfile_snapshots(const char *log, const struct runlog_data *d, struct cmdfile_snap **out,
			 size_t *nmissing, char **missing)
{
	struct cmdfile_snap *v = NULL;
	size_t n = 0;

	*nmissing = 0;
	*missing = NULL;
	for (size_t i = 0; i < d->nevents; i++) {
		const struct runlog_event_rec *ev = &d->events[i];
		char *path, *found, *fin;
		if (strcmp(ev->kind, "snapshot") != 0)
			continue;
		path = runlog_field(ev->detail, "path");
		if (!path)
			continue;
		found = find_snapshot(log, path);
		if (!found) {
			if (!*missing)
				*missing = path;
			else
				free(path);
			(*nmissing)++;
			continue;
		}
		fin = runlog_field(ev->detail, "final");
		v = xrealloc(v, (n + 1) * sizeof *v);
		v[n].t = ev->t;
		v[n].pid = ev->pid;
		v[n].path = found;
		v[n].shown = path;
		v[n].final = fin && strcmp(fin, "1") == 0;
		free(fin);
		n++;
	}
	*out = v;
	return n;
}

void cmdfile_snaps_free(struct cmdfile_snap *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].shown);
	}
	free(v);
}

int cmd_plot(int argc, char **argv)
{
	struct plot_opts o;
	struct runlog_data *d = NULL;
	struct outfile *of = NULL;
	char *cause = NULL, *script_path = NULL, *prog = NULL;
	const char *hint = NULL;
	size_t proglen = 0, script_line = 0;
	struct subproc_run run;
	int ret;

	memset(&run, 0, sizeof run);
	ret = parse_args(argc, argv, &o);
	if (ret >= 0) {
		free(o.dirs);
		return ret;
	}
	if (!o.output && !o.script && isatty(STDOUT_FILENO)) {
		mw_error("plot: will not write a%s image to a terminal: use -o FILE, or redirect "
			 "(memwatch plot RUN.LOG > mem.%s)",
			 o.format == FMT_SVG ? "n SVG" : " PNG", o.format == FMT_SVG ? "svg" : "png");
		ret = MW_EXIT_USAGE;
		goto out;
	}
	d = cmdfile_read_log("plot", o.log);
	if (!d) {
		ret = MW_EXIT_BADFILE;
		goto out;
	}
	if (!any_figure(d)) {
		mw_error("plot: '%s' holds no memory figures (every one is '-')", o.log);
		ret = MW_EXIT_BADFILE;
		goto out;
	}
	ret = make_program(&o, d, &prog, &proglen, &script_line, &script_path, &cause, &hint);
	if (ret != MW_EXIT_OK) {
		mw_error("plot: %s", cause);
		if (hint)
			mw_hint("%s", hint);
		goto out;
	}

	/* open the output before running gnuplot: an unwritable place is told at
	 * once; nothing is written into it before gnuplot has succeeded. From
	 * here on SIGINT and SIGTERM are only noted, so that the temporary file is
	 * removed and gnuplot stopped before memwatch ends. */
	of = cmdfile_open("plot", o.output, o.force);
	if (!of) {
		ret = MW_EXIT_FAILURE;
		goto out;
	}
	if (o.script) {
		fwrite(prog, 1, proglen, outfile_stream(of));
		goto commit;
	}
	if (stop_signal_pending()) {
		ret = MW_EXIT_SIGNAL + stop_signal_pending();
		goto out;
	}
	ret = render(&o, prog, proglen, script_line, script_path, &run, &cause);
	if (ret != MW_EXIT_OK) {
		if (cause)
			mw_error("plot: %s", cause);
		goto out;
	}
	fwrite(run.out.p, 1, run.out.len, outfile_stream(of));
commit:
	ret = cmdfile_commit("plot", of);
	of = NULL;
out:
	outfile_abort(of);
	free(cause);
	free(run.out.p);
	free(run.err.p);
	free(prog);
	free(script_path);
	free(o.dirs);
	runlog_data_free(d);
	return ret;
}
