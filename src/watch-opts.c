/* watch-opts.c: the options of memwatch [watch] and memwatch run: their help,
 * their parsing into struct watch_opts, and the command line for the log. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "util.h"
#include "watch.h"
#include "agent/protocol.h"

const char watch_usage[] =
	"  memwatch [watch] -p PID [options]\n"
	"    Watch processes' memory every interval into a run log; when it grows, load\n"
	"    the sampling agent and take heap snapshots.\n"
	"  -p, --pid PID           123, /proc/123 or a list 1,2; repeatable\n"
	"  -c, --children          each PID's whole tree, re-scanned every sample\n"
	"  -i, --interval TIME     time between samples: 500ms, 1s, 2m (default 1s)\n"
	"  -d, --duration TIME     stop after this long (default: when all exit)\n"
	"  -o, --output FILE       run log (default memwatch-PID.log; -: stdout, no report)\n"
	"  -f, --force             overwrite an existing run log and snapshots\n"
	"      --pss               also PSS and USS (smaps_rollup: a walk of the page tables,\n"
	"                          about 6-12 ms of CPU per GiB resident per sample)\n"
	"  -q, --quiet             no live status line on the terminal\n"
	"      --metrics FILE      the current figures in Prometheus text format, replaced\n"
	"                          after every sample (node_exporter's textfile collector)\n"
	"      --capture WHEN      load the agent: growth (default), now, never\n"
	"  -t, --trigger RULE      growth that starts capture: +64MiB (default), +20%,\n"
	"                          10MiB/min (slope over the last 30-60 s)\n"
	"      --snap-every STEP   next snapshot after growth +32MiB (default) or time 5m\n"
	"      --max-snaps N       at most N snapshots before the last one (default 10)\n"
	"  -r, --sample-rate SIZE  mean bytes between sampled allocations (default 512KiB;\n"
	"                          1 records every allocation; a capture another memwatch\n"
	"                          runs already is shared at its rate)\n"
	"      --max-depth N       frames kept per stack, 1 to 256 (default 64)\n"
	"      --max-stacks N      distinct stacks kept (default: the agent's)\n"
	"      --referrers         CPython: with the last snapshot, find what keeps the top\n"
	"                          sampled objects alive and what one of each top type\n"
	"                          holds (Python threads wait meanwhile: the GIL is held)\n"
	"      --referrers-limit TIME  the most that search may take, the wait for the\n"
	"                          GIL included (default 1s, at most 10m)\n"
	"      --referrers-objects N   the most objects it traverses (default 50000000)\n"
	"      --no-report         no growth report at the end\n"
	"  -h, --help              this help\n"
	"    The run log has one line per sample: time_s pid rss_kib anon_kib file_kib\n"
	"    shmem_kib swap_kib vsz_kib pss_kib uss_kib hwm_kib (VmHWM) cgroup_kib\n"
	"    cgroup_limit_kib (the memory cgroup's usage and limit), and '# event' lines.\n"
	"    The report at the end adds a section 'at the peak' when the live heap was\n"
	"    well above the end (the peak snapshot, LOG.peak.snap, written once the heap\n"
	"    came down from its peak),\n"
	"    and says when the OOM killer killed a process, with its cgroup's limit; the\n"
	"    status line and --metrics give the time left until that limit.\n"
	"    A stopped process (SIGSTOP, a debugger, a frozen cgroup) is still sampled,\n"
	"    with 'stopped' and 'continued' events; snapshots due meanwhile are taken\n"
	"    once it runs again. memwatch never continues it.\n"
	"    A HotSpot JVM is asked to write its perf map before each snapshot (as by\n"
	"    jcmd PID Compiler.perfmap), so that its compiled Java methods are named.\n";

enum {
	OPT_PSS = 256, OPT_CAPTURE, OPT_SNAP_EVERY, OPT_MAX_SNAPS, OPT_MAX_DEPTH,
	OPT_MAX_STACKS, OPT_NO_REPORT, OPT_METRICS, OPT_REFERRERS, OPT_REFERRERS_LIMIT,
	OPT_REFERRERS_OBJECTS,
};

static const struct option long_options[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "children", no_argument, NULL, 'c' },
	{ "interval", required_argument, NULL, 'i' },
	{ "duration", required_argument, NULL, 'd' },
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, 'f' },
	{ "pss", no_argument, NULL, OPT_PSS },
	{ "quiet", no_argument, NULL, 'q' },
	{ "capture", required_argument, NULL, OPT_CAPTURE },
	{ "trigger", required_argument, NULL, 't' },
	{ "snap-every", required_argument, NULL, OPT_SNAP_EVERY },
	{ "max-snaps", required_argument, NULL, OPT_MAX_SNAPS },
	{ "sample-rate", required_argument, NULL, 'r' },
	{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
	{ "max-stacks", required_argument, NULL, OPT_MAX_STACKS },
	{ "no-report", no_argument, NULL, OPT_NO_REPORT },
	{ "referrers", no_argument, NULL, OPT_REFERRERS },
	{ "referrers-limit", required_argument, NULL, OPT_REFERRERS_LIMIT },
	{ "referrers-objects", required_argument, NULL, OPT_REFERRERS_OBJECTS },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

void watch_opts_init(struct watch_opts *o)
{
	memset(o, 0, sizeof *o);
	o->interval_ms = 1000;
	capture_opts_init(&o->capture);
}

void watch_opts_release(struct watch_opts *o)
{
	free(o->pids);
	o->pids = NULL;
	o->npids = 0;
}

/* Add the pids of one -p argument ("1,2", "/proc/3"). */
static int add_pids(struct watch_opts *o, const char *arg)
{
	char *copy = xstrdup(arg), *save = NULL, *tok, *cause = NULL;
	int pid;
	size_t i;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (parse_pid(tok, &pid, &cause) < 0) {
			mw_error("%s", cause);
			free(cause);
			free(copy);
			return MW_EXIT_USAGE;
		}
		for (i = 0; i < o->npids; i++)
			if (o->pids[i] == pid)
				break;
		if (i < o->npids)
			continue;
		o->pids = xrealloc(o->pids, (o->npids + 1) * sizeof *o->pids);
		o->pids[o->npids++] = pid;
	}
	free(copy);
	if (o->npids == 0) {
		mw_error("invalid pid '%s'", arg);
		return MW_EXIT_USAGE;
	}
	return 0;
}

/* A count option: a whole number from min to max. */
static int parse_count(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(arg, &end, 10);
	if (!(arg[0] >= '0' && arg[0] <= '9') || *end || errno || n < min || n > max) {
		mw_error("invalid %s '%s' (a whole number from %llu to %llu)", opt, arg,
			 (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*v = n;
	return 0;
}

/* --capture WHEN. */
static int parse_capture_mode(const char *arg, enum capture_mode *mode)
{
	if (strcmp(arg, "growth") == 0)
		*mode = CAPTURE_GROWTH;
	else if (strcmp(arg, "now") == 0)
		*mode = CAPTURE_NOW;
	else if (strcmp(arg, "never") == 0)
		*mode = CAPTURE_NEVER;
	else {
		mw_error("invalid --capture '%s' (growth, now or never)", arg);
		return MW_EXIT_USAGE;
	}
	return 0;
}

/* The options that shape the capture (capture_opts) into co. 0, or an mw_exit
 * status after printing the error. */
static int parse_capture_option(int c, const char *arg, struct capture_opts *co)
{
	char *cause = NULL;
	uint64_t v;

	switch (c) {
	case OPT_CAPTURE:
		return parse_capture_mode(arg, &co->mode);
	case 't':
		if (trigger_parse(arg, &co->trigger, &cause) < 0)
			return mw_usage_error(NULL, cause);
		return 0;
	case OPT_SNAP_EVERY:
		if (snap_step_parse(arg, &co->snap_every, &cause) < 0)
			return mw_usage_error(NULL, cause);
		return 0;
	case OPT_MAX_SNAPS:
		if (parse_count("--max-snaps", arg, 0, 100000, &v) < 0)
			return MW_EXIT_USAGE;
		co->max_snaps = (unsigned)v;
		return 0;
	case 'r':
		if (parse_size(arg, &co->sample_rate, &cause) < 0)
			return mw_usage_error(NULL, cause);
		if (co->sample_rate == 0) {
			mw_error("invalid sample rate '%s' (1 or more bytes)", arg);
			return MW_EXIT_USAGE;
		}
		return 0;
	case OPT_MAX_DEPTH:
		if (parse_count("--max-depth", arg, 1, MEMWATCH_MAX_DEPTH, &v) < 0)
			return MW_EXIT_USAGE;
		co->max_depth = (unsigned)v;
		return 0;
	case OPT_MAX_STACKS:
		if (parse_count("--max-stacks", arg, 1, UINT32_MAX, &v) < 0)
			return MW_EXIT_USAGE;
		co->max_stacks = v;
		return 0;
	case OPT_NO_REPORT:
		co->report = false;
		return 0;
	case OPT_REFERRERS:
		co->referrers = true;
		return 0;
	case OPT_REFERRERS_LIMIT:
		if (parse_referrers_limit(arg, &v, &cause) < 0)
			return mw_usage_error(NULL, cause);
		co->referrers_limit_ms = v;
		return 0;
	case OPT_REFERRERS_OBJECTS:
		if (parse_referrers_objects(arg, &co->referrers_objects, &cause) < 0)
			return mw_usage_error(NULL, cause);
		return 0;
	}
	return MW_EXIT_USAGE;
}

/* One option of the watch itself (what is not the capture's) into o. 0, or
 * an mw_exit status after printing the error. */
static int parse_watch_option(int c, const char *arg, struct watch_opts *o, bool run_mode)
{
	char *cause = NULL;

	switch (c) {
	case 'p':
		if (run_mode) {
			mw_error("memwatch run starts its own process: -p is not accepted");
			return MW_EXIT_USAGE;
		}
		return add_pids(o, arg);
	case 'c':
		o->children = true;
		return 0;
	case 'i':
		if (parse_duration_ms(arg, &o->interval_ms, &cause) < 0)
			return mw_usage_error("--interval", cause);
		return 0;
	case 'd':
		if (parse_duration_ms(arg, &o->duration_ms, &cause) < 0)
			return mw_usage_error("--duration", cause);
		return 0;
	case 'o':
		if (!*arg) {
			mw_error("empty output file name");
			return MW_EXIT_USAGE;
		}
		o->output = arg;
		return 0;
	case 'f':
		o->force = true;
		return 0;
	case OPT_PSS:
		o->pss = true;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	case OPT_METRICS:
		o->metrics = arg;
		return 0;
	}
	return parse_capture_option(c, arg, &o->capture);
}

/* What must hold after the options of memwatch [watch]: no stray argument,
 * some pid. */
static int check_watch_args(int argc, char **argv, const struct watch_opts *o)
{
	if (optind < argc) {
		mw_error("unexpected argument '%s'", argv[optind]);
		mw_hint("the pid is given with -p: memwatch -p %s", argv[optind]);
		return MW_EXIT_USAGE;
	}
	if (o->npids == 0) {
		mw_error("no process to watch: -p PID is missing");
		mw_hint("memwatch -p PID, or memwatch run -- COMMAND (memwatch --help)");
		return MW_EXIT_USAGE;
	}
	return 0;
}

/* The options of watch, run and top into o (see watch.h); errors are printed
 * here. */
static int parse_all(int argc, char **argv, struct watch_opts *o, bool run_mode, int *argi,
		     const char *more_short, const struct option *more,
		     int (*more_fn)(int c, const char *arg, void *ctx), void *ctx)
{
	/* "+": in run mode the first non-option is the command, whose own options
	 * must not be taken for ours */
	const char *base = run_mode ? "+:ci:d:o:fqt:r:h" : ":p:ci:d:o:fqt:r:h";
	size_t nbase = sizeof long_options / sizeof long_options[0] - 1, nmore = 0;
	struct option *all;
	char *shortopts;
	int c, r = 0;

	while (more && more[nmore].name)
		nmore++;
	all = xcalloc(nbase + nmore + 1, sizeof *all);
	memcpy(all, long_options, nbase * sizeof *all);
	if (nmore)
		memcpy(all + nbase, more, nmore * sizeof *all);
	shortopts = xasprintf("%s%s", base, more_short ? more_short : "");
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, shortopts, all, NULL)) != -1) {
		if (c == 'h') {
			r = WATCH_PARSE_HELP;
			break;
		}
		if (c == ':' || c == '?') {
			r = mw_option_error(NULL, c, argv, optind, optopt);
			break;
		}
		if (more_fn && (c >= WATCH_OPT_MORE || (c < 256 && strchr(more_short ? more_short : "", c))))
			r = more_fn(c, optarg, ctx);
		else
			r = parse_watch_option(c, optarg, o, run_mode);
		if (r != 0)
			break;
	}
	free(all);
	free(shortopts);
	if (r != 0)
		return r;
	o->capture.force = o->force;
	if (!run_mode && (r = check_watch_args(argc, argv, o)) != 0)
		return r;
	*argi = optind;
	return 0;
}

int watch_parse(int argc, char **argv, struct watch_opts *o, bool run_mode, int *argi)
{
	return parse_all(argc, argv, o, run_mode, argi, NULL, NULL, NULL, NULL);
}

int watch_parse_more(int argc, char **argv, struct watch_opts *o, int *argi,
		     const char *more_short, const struct option *more,
		     int (*more_fn)(int c, const char *arg, void *ctx), void *ctx)
{
	return parse_all(argc, argv, o, false, argi, more_short, more, more_fn, ctx);
}

/* The command line as one string for the log's metadata. */
char *watch_command_line(const char *name, int argc, char **argv)
{
	size_t len = strlen(name) + 1;
	char *s, *p;
	int i;

	for (i = 1; i < argc; i++)
		len += strlen(argv[i]) + 3;
	s = p = xmalloc(len);
	p = stpcpy(p, name);
	for (i = 1; i < argc; i++) {
		bool quote = argv[i][0] == '\0' || strpbrk(argv[i], " \t\n'\"") != NULL;
		*p++ = ' ';
		if (quote)
			*p++ = '\'';
		p = stpcpy(p, argv[i]);
		if (quote)
			*p++ = '\'';
	}
	*p = '\0';
	return s;
}
