/* report.c: memwatch show (what one snapshot holds, by call stack) and memwatch
 * diff (what grew between two snapshots, by call stack): their options, and the
 * report API (report.h) that reads the snapshots, has rows.c build the rows and
 * the chosen format write them. */
#include "config.h"
#include "commands.h"
#include "report-internal.h"
#include "runlog.h"
#include "trend.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The options diff and show share, in their --help. */
#define USAGE_FORMAT_OPTIONS \
	"    -b, --by KIND          rows per stack (default), function, line or type (the\n" \
	"                           Python type of the sampled objects)\n" \
	"        --depth N          source frames shown per stack (default 5 in tables)\n" \
	"    -F, --format FMT       table (default), folded (flame graphs), json, svg (a flame\n" \
	"                           graph that opens in a browser), or pprof (a gzipped\n" \
	"                           profile.proto for go tool pprof; needs -o or a\n" \
	"                           redirection: it is not written to a terminal)\n" \
	"    -D, --debug-dir DIR    look for debug files by build-id in DIR too (repeatable)\n" \
	"    -o, --output FILE      write the report to FILE (a regular file is replaced\n" \
	"                           atomically, a device or FIFO written as it is)\n"
#define USAGE_FRAME_OPTIONS \
	"        --hide REGEX       frames whose function matches are not the user's code\n" \
	"        --focus REGEX      only stacks with a frame whose function or file matches\n" \
	"        --kind KIND        malloc (heap blocks), mmap (the program's own anonymous\n" \
	"                           mappings), brk (its own brk/sbrk growth), file (its\n" \
	"                           mappings of files, memfd, shm), js (node's JavaScript\n" \
	"                           objects) or all (default); rows of the last four say\n" \
	"                           [mmap], [brk], [file] or [js]\n" \
	"        --all-frames       every frame: rows headed by the innermost one, not the\n" \
	"                           user's own, and one per path (without it, stacks that\n" \
	"                           differ only in the frames hidden are one row)\n" \
	"        --full-names       C++ names with their template arguments in tables\n" \
	"        --sample WHAT      rank by live (the live heap, default), alloc (every byte\n" \
	"                           allocated since capture start, freed or not) or temp\n" \
	"                           (blocks freed within about 10 ms of their allocation)\n"

const char diff_usage[] =
	"  memwatch diff [options] BEFORE.snap AFTER.snap\n"
	"  memwatch diff [options] A.snap B.snap C.snap... | RUN.log\n"
	"    what grew between two snapshots (of one run, or of two runs of the same\n"
	"    binaries), by call stack, largest growth first; of three or more of one\n"
	"    process in time order (or those a run log names), each row's live bytes at\n"
	"    every snapshot and its verdict: leak?, plateau, burst, steady, shrinking\n"
	"    or unsure (too close to its sampling error to tell)\n"
	"    -n, --top N            rows of growth and of shrinkage shown (default 10; 0: all)\n"
	"    -m, --min-bytes SIZE   leave out rows whose change is smaller than SIZE\n"
	USAGE_FORMAT_OPTIONS
	USAGE_FRAME_OPTIONS
	"        --details          every figure of both snapshots above the rows\n"
	"        --verdict WORD     of three snapshots or more: only the rows of one verdict\n"
	"                           (leak, plateau, burst, steady, shrinking, unsure)\n"
	"    -h, --help             this help\n";

const char show_usage[] =
	"  memwatch show [options] SNAPSHOT.snap\n"
	"    the live heap of one snapshot by call stack, largest first, and the\n"
	"    allocator's view of the process memory\n"
	"    -n, --top N            rows shown (default 10; 0: all)\n"
	"    -m, --min-bytes SIZE   leave out rows smaller than SIZE\n"
	USAGE_FORMAT_OPTIONS
	"    -E, --embed-symbols FILE  also write a copy of the snapshot with the symbols of\n"
	"                           its frames embedded, to report where its binaries are not\n"
	USAGE_FRAME_OPTIONS
	"        --details          every figure of the snapshot above the rows\n"
	"    -h, --help             this help\n";

/* The output formats, by enum report_format. */
static const struct report_writer *const writers[] = {
	[REPORT_FMT_TABLE] = &report_table_writer,
	[REPORT_FMT_FOLDED] = &report_folded_writer,
	[REPORT_FMT_JSON] = &report_json_writer,
	[REPORT_FMT_PPROF] = &report_pprof_writer,
	[REPORT_FMT_SVG] = &report_svg_writer,
};
#define NWRITERS (sizeof writers / sizeof writers[0])

/* --------------------------------------------------------------------------- */
/* Options. */

void report_options_init(struct report_options *o)
{
	memset(o, 0, sizeof *o);
	o->top = 10;
	o->depth = 5;
}

void report_options_release(struct report_options *o)
{
	free(o->dirs);
	o->dirs = NULL;
	o->ndirs = 0;
	if (o->has_hide)
		regfree(&o->hide);
	if (o->has_focus)
		regfree(&o->focus);
	o->has_hide = o->has_focus = false;
}

/* Options with no short form. */
enum {
	OPT_HIDE = 256, OPT_FOCUS, OPT_ALL_FRAMES, OPT_FULL_NAMES, OPT_DETAILS, OPT_KIND, OPT_DEPTH,
	OPT_SAMPLE, OPT_VERDICT
};

/* Compile a --hide or --focus pattern into re. 0, or an exit status (said). */
static int compile_pattern(const char *cmd, const char *opt, const char *pat, regex_t *re,
			   bool *has)
{
	char msg[128];
	int rc;

	if (*has) {
		mw_error("%s: %s given twice (one pattern: join them with |)", cmd, opt);
		return MW_EXIT_USAGE;
	}
	rc = regcomp(re, pat, REG_EXTENDED | REG_NOSUB);
	if (rc != 0) {
		regerror(rc, re, msg, sizeof msg);
		mw_error("%s: invalid %s '%s': %s", cmd, opt, pat, msg);
		return MW_EXIT_USAGE;
	}
	*has = true;
	return 0;
}

/* The index of arg among the n names, or -1 once "invalid OPT" is said with
 * the choices (list). */
static int pick(const char *cmd, const char *opt, const char *arg, const char *const *names,
		size_t n, const char *list)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && strcmp(arg, names[i]) == 0)
			return (int)i;
	mw_error("%s: invalid %s '%s' (%s)", cmd, opt, arg, list);
	return -1;
}

/* --top or --depth N into *v. 0, or an exit status (said). */
static int parse_count(const char *cmd, const char *opt, const char *arg, unsigned long *v,
		       bool *set)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (!*arg || *end || errno || arg[0] == '-' || n > 1000000) {
		mw_error("%s: invalid %s '%s' (a number, 0 for all)", cmd, opt, arg);
		return MW_EXIT_USAGE;
	}
	*v = n;
	*set = true;
	return 0;
}

/* --format NAME into o. 0, or an exit status (said). */
static int parse_format(const char *cmd, const char *arg, struct report_options *o)
{
	const char *names[NWRITERS];
	int i;

	for (size_t k = 0; k < NWRITERS; k++)
		names[k] = writers[k]->name;
	i = pick(cmd, "--format", arg, names, NWRITERS, "table, folded, json, svg or pprof");
	if (i < 0)
		return MW_EXIT_USAGE;
	o->format = (enum report_format)i;
	return 0;
}

/* One option c (with optarg) of diff or show into o. 0, an exit status (help
 * printed for 'h', or a usage error said), or -1 for an option not known. */
static int parse_opt(int c, const char *cmd, const char *usage, struct report_options *o)
{
	static const char *const bys[] = { "stack", "function", "line", "type" };
	static const char *const kinds[] = { "all", "malloc", "mmap", "brk", "file", "js" };
	static const char *const samples[] = { "live", "alloc", "temp" };
	char *cause = NULL;
	int i;

	switch (c) {
	case 'n':
		return parse_count(cmd, "--top", optarg, &o->top, &o->top_set);
	case OPT_DEPTH:
		return parse_count(cmd, "--depth", optarg, &o->depth, &o->depth_set);
	case 'm':
		if (parse_size(optarg, &o->min_bytes, &cause) < 0) {
			mw_error("%s: --min-bytes: %s", cmd, cause);
			free(cause);
			return MW_EXIT_USAGE;
		}
		return 0;
	case 'b':
		i = pick(cmd, "--by", optarg, bys, 4, "stack, function, line or type");
		if (i < 0)
			return MW_EXIT_USAGE;
		o->by = (enum report_by)i;
		return 0;
	case 'F':
		return parse_format(cmd, optarg, o);
	case 'D':
		o->dirs = xrealloc(o->dirs, (o->ndirs + 1) * sizeof *o->dirs);
		o->dirs[o->ndirs++] = optarg;
		return 0;
	case 'o':
		o->output = optarg;
		return 0;
	case 'E':
		if (usage != show_usage) {
			mw_error("%s: unknown option '--embed-symbols' (memwatch show has it)", cmd);
			return MW_EXIT_USAGE;
		}
		o->embed = optarg;
		return 0;
	case OPT_HIDE:
		return compile_pattern(cmd, "--hide", optarg, &o->hide, &o->has_hide);
	case OPT_FOCUS:
		return compile_pattern(cmd, "--focus", optarg, &o->focus, &o->has_focus);
	case OPT_ALL_FRAMES:
		o->all_frames = true;
		return 0;
	case OPT_KIND:
		i = pick(cmd, "--kind", optarg, kinds, 6, "malloc, mmap, brk, file, js or all");
		if (i < 0)
			return MW_EXIT_USAGE;
		o->kind = (enum report_kind)i;
		return 0;
	case OPT_FULL_NAMES:
		o->full_names = true;
		return 0;
	case OPT_SAMPLE:
		i = pick(cmd, "--sample", optarg, samples, 3, "live, alloc or temp");
		if (i < 0)
			return MW_EXIT_USAGE;
		o->sample = (enum report_sample)i;
		return 0;
	case OPT_DETAILS:
		o->details = true;
		return 0;
	case OPT_VERDICT: {
		enum trend_verdict v;
		if (usage != diff_usage) {
			mw_error("%s: unknown option '--verdict' (memwatch diff of three snapshots or more has it)",
				 cmd);
			return MW_EXIT_USAGE;
		}
		if (!trend_parse(optarg, &v)) {
			mw_error("%s: invalid --verdict '%s' (leak, plateau, burst, steady, shrinking or unsure)",
				 cmd, optarg);
			return MW_EXIT_USAGE;
		}
		o->verdict = (int)v;
		o->verdict_set = true;
		return 0;
	}
	case 'h':
		return mw_usage_print(usage);
	}
	return -1;
}

/* Options that do not go together, once all are read. 0, or an exit status
 * (said). */
static int check_opts(const char *cmd, struct report_options *o)
{
	/* folded stacks, flame graphs and profiles are for the whole picture */
	if (writers[o->format]->whole && !o->top_set)
		o->top = 0;
	if (o->format == REPORT_FMT_PPROF && o->by != REPORT_BY_STACK) {
		mw_error("%s: --by %s does not apply to --format pprof (pprof groups by itself: -functions, -lines)",
			 cmd, by_name(o->by));
		return MW_EXIT_USAGE;
	}
	if (o->format == REPORT_FMT_PPROF && (!o->output || strcmp(o->output, "-") == 0) &&
	    isatty(STDOUT_FILENO)) {
		mw_error("%s: --format pprof is binary and is not written to a terminal", cmd);
		mw_hint("add -o FILE (e.g. -o heap.pb.gz), or redirect standard output");
		return MW_EXIT_USAGE;
	}
	return 0;
}

/* Parse the options shared by diff and show into o (set up by the caller).
 * Returns -1 to go on, or an exit status (help printed, or a usage error
 * said). */
static int parse_opts(int argc, char **argv, const char *usage, struct report_options *o)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "min-bytes", required_argument, NULL, 'm' },
		{ "by", required_argument, NULL, 'b' },
		{ "depth", required_argument, NULL, OPT_DEPTH },
		{ "format", required_argument, NULL, 'F' },
		{ "debug-dir", required_argument, NULL, 'D' },
		{ "output", required_argument, NULL, 'o' },
		{ "embed-symbols", required_argument, NULL, 'E' },
		{ "hide", required_argument, NULL, OPT_HIDE },
		{ "focus", required_argument, NULL, OPT_FOCUS },
		{ "all-frames", no_argument, NULL, OPT_ALL_FRAMES },
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "full-names", no_argument, NULL, OPT_FULL_NAMES },
		{ "sample", required_argument, NULL, OPT_SAMPLE },
		{ "details", no_argument, NULL, OPT_DETAILS },
		{ "verdict", required_argument, NULL, OPT_VERDICT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, st;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:m:b:F:D:o:E:h", longopts, NULL)) != -1) {
		st = parse_opt(c, argv[0], usage, o);
		if (st > 0 || (st == 0 && c == 'h'))
			return st;
		if (st == 0)
			continue;
		/* -d is a watch's --duration everywhere: it is no short --depth */
		if (c == '?' && optopt == 'd') {
			mw_error("%s: unknown option '-d' (-d is a watch's --duration; the frames "
				 "shown per stack are --depth N)", argv[0]);
			return MW_EXIT_USAGE;
		}
		return mw_option_error(argv[0], c, argv, optind, optopt);
	}
	st = check_opts(argv[0], o);
	return st ? st : -1;
}

/* --------------------------------------------------------------------------- */
/* Reports. */

/* The main program's module of s: the one whose path is the exe, else the first. */
static const struct snap_module *main_module(const struct snapshot *s)
{
	size_t i;
	for (i = 0; i < s->nmodules; i++)
		if (s->exe && s->modules[i].path && strcmp(s->modules[i].path, s->exe) == 0)
			return &s->modules[i];
	return s->nmodules ? &s->modules[0] : NULL;
}

/* Different programs (build-ids, or paths without build-ids) make a diff of
 * little meaning outside the shared libraries: say so once. */
static void check_same_program(const struct report *r)
{
	const struct snap_module *a = main_module(r->in[0].s), *b = main_module(r->in[1].s);
	bool differ;

	if (!a || !b)
		return;
	if (a->build_id_len && b->build_id_len)
		differ = a->build_id_len != b->build_id_len ||
			 memcmp(a->build_id, b->build_id, a->build_id_len) != 0;
	else
		differ = strcmp(a->path ? a->path : "", b->path ? b->path : "") != 0;
	if (differ)
		mw_warn("'%s' and '%s' are of different programs (%s, %s): only stacks in the code they share can match",
			r->in[0].path, r->in[1].path, a->path && *a->path ? a->path : "?",
			b->path && *b->path ? b->path : "?");
}

/* Free everything a report holds (the snapshots too; not its options). */
static void report_free(struct report *r)
{
	rows_free(r);
	for (int i = 0; i < r->nin; i++) {
		snapshot_free(r->in[i].s);
		free(r->in[i].map);
	}
	symbolizer_free(r->z);
}

/* show --embed-symbols: a copy of s with the symbols of its frames, written
 * (atomically) where asked; s itself is left as it was. A snapshot that has
 * its symbols already is copied as it is. 0 or -1 (said). */
static int embed_copy(const struct report_options *o, struct snapshot *s)
{
	size_t nsym = s->nsymbols;
	struct snap_symbol *sym = s->symbols;
	struct snapshot *tmp;
	char *cause = NULL;
	int rc = 0;

	if (nsym == 0 && symbolize_embed(s, NULL, o->dirs, o->ndirs, &cause) < 0)
		rc = -1;
	if (rc == 0 && snapshot_write(s, o->embed, true, &cause) < 0)
		rc = -1;
	if (rc < 0) {
		mw_error("%s", cause);
		free(cause);
	}
	if (nsym == 0) {
		/* the report goes on from the files, as without the option */
		tmp = xcalloc(1, sizeof *tmp);
		tmp->nsymbols = s->nsymbols;
		tmp->symbols = s->symbols;
		snapshot_free(tmp);
		s->nsymbols = nsym;
		s->symbols = sym;
	}
	return rc;
}

/* The report of r in format w to f. 0, or -1 once said. */
static int write_report(const struct report_writer *w, FILE *f, struct report *r)
{
	return r->nin == 2 ? w->diff(f, r) : w->show(f, r);
}

/* May debuginfod be asked for debug files? */
static bool debuginfod_on(void)
{
	const char *u = getenv("DEBUGINFOD_URLS");
	return u && *u;
}

/* Can debuginfod show a progress line (see symbolize.c)? */
static bool progress_possible(void)
{
	return debuginfod_on() && !getenv("DEBUGINFOD_PROGRESS") && isatty(STDERR_FILENO);
}

/* The second snapshot of a diff, read like the first (see report_load). */
struct second_read {
	const char *path;
	const struct snapshot *like;
	struct snapshot *s;
	char *cause;
};

static void *read_second(void *arg)
{
	struct second_read *j = arg;
	j->s = snapshot_read_like(j->path, j->like, &j->cause);
	return NULL;
}

/* An input could not be read (cause, freed here): said, r freed; the exit
 * status. */
static int unread(struct report *r, char *cause)
{
	mw_error("%s", cause);
	free(cause);
	report_free(r);
	return MW_EXIT_BADFILE;
}

/* Read the inputs into r (r->o set) and build the rows. 0, or an exit status
 * (said; r freed). The second of a diff shares the first's frames where its
 * stacks are the first's, at their index (both are kept to the end), found
 * by the first's bytes, kept until then; it is read on a thread of its own
 * while the first's frames are looked up (a tenth of a diff's time, on two
 * snapshots of 100 000 stacks). */
static int report_load(struct report *r, char *const *paths, int npaths)
{
	const struct report_options *o = r->o;
	struct second_read job = { .path = npaths == 2 ? paths[1] : NULL };
	pthread_t th;
	bool ahead = false;
	char *cause = NULL;
	int i;

	r->in[0].path = paths[0];
	r->in[0].s = npaths == 2 ? snapshot_read_keep(paths[0], NULL, &cause)
				 : snapshot_read_like(paths[0], NULL, &cause);
	if (!r->in[0].s) {
		r->nin = 0;
		return unread(r, cause);
	}
	r->nin = 1;
	if (o->embed && embed_copy(o, r->in[0].s) < 0) {
		report_free(r);
		return MW_EXIT_FAILURE;
	}
	job.like = r->in[0].s;
	/* (not where debuginfod may download for the first: a second that
	 * cannot be read is said at once there) */
	if (npaths == 2) {
		if (debuginfod_on() || pthread_create(&th, NULL, read_second, &job) != 0)
			read_second(&job);
		else
			ahead = true;
		if (!ahead && !job.s)
			return unread(r, job.cause);
	}
	r->z = symbolizer_new(o->dirs, o->ndirs);
	r->in[0].map = symbolizer_add(r->z, r->in[0].s);
	frames_resolve(r, 0);
	if (npaths == 2) {
		if (ahead)
			pthread_join(th, NULL);
		if (!job.s)
			return unread(r, job.cause);
		r->in[1].path = paths[1];
		r->in[1].s = job.s;
		r->nin = 2;
		snapshot_drop_raw(r->in[0].s);
		check_same_program(r);
		r->in[1].map = symbolizer_add(r->z, r->in[1].s);
		frames_resolve(r, 1);
	}
	frames_resolved(r);
	r->same_index = true;
	for (i = 0; i < npaths; i++) {
		r->seen_last = i == npaths - 1;
		collect(r, i);
	}
	for (size_t k = 0; k < r->nrows; k++)
		row_finish(&r->rows[k], npaths == 2, o->sample);
	return MW_EXIT_OK;
}

int report_parts(char *const *paths, int npaths, const char **dirs, size_t ndirs, FILE *table,
		 FILE *svg, FILE *types)
{
	struct report_options o;
	struct report r = { .o = &o };
	int st;

	report_options_init(&o);
	o.dirs = (const char **)dirs;
	o.ndirs = ndirs;
	st = report_load(&r, paths, npaths);
	if (st != MW_EXIT_OK)
		return st;
	if (table)
		write_report(&report_table_writer, table, &r);
	if (svg) {
		o.top = 0;
		report_svg(svg, &r, true);
	}
	symbolizer_warn_missing(r.z);
	report_free(&r);
	if (types) {
		/* the same snapshots by type, when they say what their objects are */
		struct snapshot *s[2];
		bool typed = false;
		char *cause = NULL;
		for (int i = 0; i < npaths && i < 2; i++) {
			s[i] = snapshot_read(paths[i], &cause);
			free(cause);
			cause = NULL;
			typed = typed || (s[i] && s[i]->ntypes);
			snapshot_free(s[i]);
		}
		if (typed) {
			struct report rt = { .o = &o };
			report_options_init(&o);
			o.dirs = (const char **)dirs;
			o.ndirs = ndirs;
			o.by = REPORT_BY_TYPE;
			if (report_load(&rt, paths, npaths) == MW_EXIT_OK) {
				write_report(&report_table_writer, types, &rt);
				report_free(&rt);
			}
		}
	}
	return MW_EXIT_OK;
}

/* Write the report of r to out, through memory where debuginfod may show its
 * progress line on a terminal (so that the line is gone before the first line
 * of the report goes out). 0, or -1 once said. */
static int write_to(struct outfile *out, struct report *r)
{
	char *text = NULL;
	size_t textlen = 0;
	FILE *f = outfile_stream(out);

	if (!progress_possible())
		return write_report(writers[r->o->format], f, r);
	f = open_memstream(&text, &textlen);
	if (!f) {
		mw_error("open_memstream: %s", strerror(errno));
		return -1;
	}
	if (write_report(writers[r->o->format], f, r) < 0) {
		fclose(f);
		free(text);
		return -1;
	}
	if (fclose(f) != 0) {
		mw_error("cannot make the report: %s", strerror(errno));
		free(text);
		return -1;
	}
	symbolizer_progress_done(r->z);
	fwrite(text, 1, textlen, outfile_stream(out));
	free(text);
	return 0;
}

int report_write(const struct report_options *o, char *const *paths, int npaths)
{
	struct report r = { .o = o };
	struct outfile *out;
	char *cause = NULL;
	int status;

	status = report_load(&r, paths, npaths);
	if (status != MW_EXIT_OK)
		return status;
	out = outfile_open(o->output ? o->output : "-", true, &cause);
	if (!out) {
		mw_error("%s", cause);
		free(cause);
		report_free(&r);
		return MW_EXIT_FAILURE;
	}
	if (write_to(out, &r) < 0) {
		outfile_abort(out);
		report_free(&r);
		return MW_EXIT_FAILURE;
	}
	if (outfile_commit(out, &cause) < 0) {
		mw_error("%s", cause);
		free(cause);
		status = MW_EXIT_FAILURE;
	} else {
		/* the report is out: its unnamed frames say why, once per module */
		symbolizer_warn_missing(r.z);
	}
	report_free(&r);
	return status;
}

/* Does the file at path start as a run log does? */
static bool is_runlog(const char *path)
{
	char head[sizeof RUNLOG_MAGIC] = "";
	FILE *f = fopen(path, "r");
	bool yes;

	if (!f)
		return false;
	yes = fread(head, 1, sizeof head - 1, f) == sizeof head - 1 &&
	      memcmp(head, RUNLOG_MAGIC, sizeof head - 1) == 0;
	fclose(f);
	return yes;
}

/* The common body of diff (npaths 2) and show (1): options, then the report. */
static int run_command(int argc, char **argv, const char *usage, int npaths)
{
	struct report_options o;
	int st;

	report_options_init(&o);
	st = parse_opts(argc, argv, usage, &o);
	/* diff of three snapshots or more, or of a run log: the trend */
	if (st < 0 && npaths == 2 && (argc - optind >= 3 ||
				      (argc - optind == 1 && is_runlog(argv[optind])))) {
		st = argc - optind == 1 ? report_trend_log(&o, argv[optind], 0, false)
					: report_trend_write(&o, argv + optind, argc - optind);
		report_options_release(&o);
		return st;
	}
	if (st < 0 && o.verdict_set) {
		mw_error("diff: --verdict takes three snapshots or more, or a run log (two have no trend)");
		st = MW_EXIT_USAGE;
	}
	if (st < 0 && argc - optind != npaths) {
		if (npaths == 2) {
			mw_error("diff: expected two snapshots, BEFORE and AFTER, three or more, or a run log (got %d)",
				 argc - optind);
			mw_hint("memwatch diff [options] before.snap after.snap");
		} else {
			mw_error("show: expected one snapshot (got %d)", argc - optind);
			mw_hint("memwatch show [options] a.snap");
		}
		st = MW_EXIT_USAGE;
	}
	if (st < 0)
		st = report_write(&o, argv + optind, npaths);
	report_options_release(&o);
	return st;
}

/* memwatch diff [options] BEFORE AFTER */
int cmd_diff(int argc, char **argv)
{
	return run_command(argc, argv, diff_usage, 2);
}

/* memwatch show [options] SNAPSHOT */
int cmd_show(int argc, char **argv)
{
	return run_command(argc, argv, show_usage, 1);
}

/* --------------------------------------------------------------------------- */
/* The stacks over time (memwatch plot, memwatch report). */

/* The label of row w of r (one snapshot): "PID: " when asked, then its head
 * frame as flame graphs name it. Caller frees. */
static char *series_label(struct report *r, const struct row *w, int pid)
{
	struct expanded e;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return xstrdup("?");
	if (pid)
		fprintf(f, "%d: ", pid);
	row_expand(r, w, &e, true);
	if (e.n)
		folded_name(f, r, &e.d[e.head]);
	else
		fputs("[no frames]", f);
	if (w->kind != SNAP_KIND_MALLOC)
		fprintf(f, " [%s]", snap_kind_name(w->kind));
	free(e.d);
	if (fclose(f) != 0) {
		free(text);
		return xstrdup("?");
	}
	return text;
}

/* Free what the n series at v hold (not v itself). */
static void series_release(struct report_series *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].label);
		free(v[i].bytes);
	}
}

/* Larger peak first, then the label: the same order at every run. */
static int cmp_series(const void *pa, const void *pb)
{
	const struct report_series *a = pa, *b = pb;
	if (a->peak != b->peak)
		return a->peak > b->peak ? -1 : 1;
	return strcmp(a->label, b->label);
}

void report_stack_series(char *const *paths, const int *pids, size_t npaths, const char **dirs,
			 size_t ndirs, size_t top, bool quiet, struct report_series **out,
			 size_t *nout)
{
	struct report_options o;
	struct strtab labels;
	struct report_series *v = NULL;
	size_t n = 0, i, k;
	bool several = false, *bad = xcalloc(npaths ? npaths : 1, sizeof *bad);
	char *cause = NULL;

	*out = NULL;
	*nout = 0;
	for (i = 1; i < npaths; i++)
		if (pids[i] != pids[0])
			several = true;
	report_options_init(&o);
	o.by = REPORT_BY_FUNCTION;
	o.dirs = dirs;
	o.ndirs = ndirs;
	strtab_init(&labels);
	for (i = 0; i < npaths; i++) {
		struct report r = { .o = &o };
		struct snapshot *s = snapshot_read(paths[i], &cause);

		if (!s) {
			if (!quiet)
				mw_warn("%s: left out of the stacks over time", cause);
			free(cause);
			cause = NULL;
			bad[i] = true;
			for (k = 0; k < n; k++)
				v[k].bytes[i] = NAN;
			continue;
		}
		r.in[0].path = paths[i];
		r.in[0].s = s;
		r.nin = 1;
		r.z = symbolizer_new(o.dirs, o.ndirs);
		r.in[0].map = symbolizer_add(r.z, s);
		r.seen_last = true;
		collect(&r, 0);
		for (k = 0; k < r.nrows; k++) {
			struct row *w = &r.rows[k];
			char *label;
			uint32_t id;
			if (!w->f[0].live_bytes)
				continue;
			label = series_label(&r, w, several ? pids[i] : 0);
			id = strtab_id(&labels, label);
			free(label);
			if (id == n) {
				v = xrealloc(v, (n + 1) * sizeof *v);
				v[n].label = xstrdup(labels.s[id]);
				v[n].pid = pids[i];
				v[n].peak = 0;
				v[n].bytes = xcalloc(npaths, sizeof *v[n].bytes);
				/* a process's snapshots before this one did not hold it;
				 * those of other processes say nothing of it */
				for (size_t j = 0; j < npaths; j++)
					v[n].bytes[j] = pids[j] == pids[i] && !bad[j] ? 0 : NAN;
				n++;
			}
			v[id].bytes[i] += (double)w->f[0].live_bytes;
		}
		report_free(&r);
	}
	for (k = 0; k < n; k++) {
		for (i = 0; i < npaths; i++)
			if (v[k].bytes[i] > v[k].peak)
				v[k].peak = v[k].bytes[i];
	}
	strtab_release(&labels);
	free(bad);
	qsort(v, n, sizeof *v, cmp_series);
	if (top && n > top) {
		series_release(v + top, n - top);
		n = top;
	}
	*out = v;
	*nout = n;
}

void report_series_free(struct report_series *v, size_t n)
{
	series_release(v, n);
	free(v);
}
