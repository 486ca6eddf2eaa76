/* watch.c: memwatch [watch] -p PID: sample processes' memory every interval into
 * a run log, feed each process's capture, and end cleanly on the duration, a
 * signal, or the processes' exit. Also the loop behind memwatch run. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "control.h"
#include "proc.h"
#include "runlog.h"
#include "util.h"
#include "watch.h"
#include "agent/protocol.h"
#include "metrics.h"

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
	"      --no-report         no growth report at the end\n"
	"  -h, --help              this help\n"
	"    The run log has one line per sample: time_s pid rss_kib anon_kib file_kib\n"
	"    shmem_kib swap_kib vsz_kib pss_kib uss_kib, and '# event' lines.\n"
	"    A stopped process (SIGSTOP, a debugger, a frozen cgroup) is still sampled,\n"
	"    with 'stopped' and 'continued' events; snapshots due meanwhile are taken\n"
	"    once it runs again. memwatch never continues it.\n";

enum {
	OPT_PSS = 256, OPT_CAPTURE, OPT_SNAP_EVERY, OPT_MAX_SNAPS, OPT_MAX_DEPTH,
	OPT_MAX_STACKS, OPT_NO_REPORT, OPT_METRICS,
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

/* Print a parser's cause as the one error line and give the usage status. */
static int usage_error(char *cause, const char *opt)
{
	if (opt)
		mw_error("%s: %s", opt, cause);
	else
		mw_error("%s", cause);
	free(cause);
	return MW_EXIT_USAGE;
}

/* The options of watch and run into o (see watch.h); errors are printed here. */
int watch_parse(int argc, char **argv, struct watch_opts *o, bool run_mode, int *argi)
{
	/* "+": in run mode the first non-option is the command, whose own options
	 * must not be taken for ours */
	const char *shortopts = run_mode ? "+:ci:d:o:fqt:r:h" : ":p:ci:d:o:fqt:r:h";
	char *cause = NULL;
	uint64_t v;
	int c;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, shortopts, long_options, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (run_mode) {
				mw_error("memwatch run starts its own process: -p is not accepted");
				return MW_EXIT_USAGE;
			}
			if ((c = add_pids(o, optarg)) != 0)
				return c;
			break;
		case 'c':
			o->children = true;
			break;
		case 'i':
			if (parse_duration_ms(optarg, &o->interval_ms, &cause) < 0)
				return usage_error(cause, "--interval");
			break;
		case 'd':
			if (parse_duration_ms(optarg, &o->duration_ms, &cause) < 0)
				return usage_error(cause, "--duration");
			break;
		case 'o':
			if (!*optarg) {
				mw_error("empty output file name");
				return MW_EXIT_USAGE;
			}
			o->output = optarg;
			break;
		case 'f':
			o->force = true;
			break;
		case OPT_PSS:
			o->pss = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case OPT_CAPTURE:
			if (strcmp(optarg, "growth") == 0)
				o->capture.mode = CAPTURE_GROWTH;
			else if (strcmp(optarg, "now") == 0)
				o->capture.mode = CAPTURE_NOW;
			else if (strcmp(optarg, "never") == 0)
				o->capture.mode = CAPTURE_NEVER;
			else {
				mw_error("invalid --capture '%s' (growth, now or never)", optarg);
				return MW_EXIT_USAGE;
			}
			break;
		case 't':
			if (trigger_parse(optarg, &o->capture.trigger, &cause) < 0)
				return usage_error(cause, NULL);
			break;
		case OPT_SNAP_EVERY:
			if (snap_step_parse(optarg, &o->capture.snap_every, &cause) < 0)
				return usage_error(cause, NULL);
			break;
		case OPT_MAX_SNAPS:
			if (parse_count("--max-snaps", optarg, 0, 100000, &v) < 0)
				return MW_EXIT_USAGE;
			o->capture.max_snaps = (unsigned)v;
			break;
		case 'r':
			if (parse_size(optarg, &o->capture.sample_rate, &cause) < 0)
				return usage_error(cause, NULL);
			if (o->capture.sample_rate == 0) {
				mw_error("invalid sample rate '%s' (1 or more bytes)", optarg);
				return MW_EXIT_USAGE;
			}
			break;
		case OPT_MAX_DEPTH:
			if (parse_count("--max-depth", optarg, 1, MEMWATCH_MAX_DEPTH, &v) < 0)
				return MW_EXIT_USAGE;
			o->capture.max_depth = (unsigned)v;
			break;
		case OPT_MAX_STACKS:
			if (parse_count("--max-stacks", optarg, 1, UINT32_MAX, &v) < 0)
				return MW_EXIT_USAGE;
			o->capture.max_stacks = v;
			break;
		case OPT_NO_REPORT:
			o->capture.report = false;
			break;
		case OPT_METRICS:
			o->metrics = optarg;
			break;
		case 'h':
			return WATCH_PARSE_HELP;
		case ':':
			mw_error("option '%s' needs an argument", argv[optind - 1]);
			mw_hint("memwatch --help");
			return MW_EXIT_USAGE;
		default:
			if (optopt && optopt < 256)
				mw_error("unknown option '-%c'", optopt);
			else
				mw_error("unknown option '%s'", argv[optind - 1]);
			mw_hint("memwatch --help");
			return MW_EXIT_USAGE;
		}
	}
	o->capture.force = o->force;
	if (run_mode) {
		*argi = optind;
		return 0;
	}
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
	*argi = optind;
	return 0;
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

/* ---- the loop ---- */

/* One watched process. */
struct member {
	int pid;
	bool root;               /* given with -p, or memwatch run's child */
	bool gone;
	bool pss_warned;
	bool stopped;            /* seen stopped: the "stopped" event is written */
	unsigned traced;         /* samples in a row it was seen in a tracing stop */
	double stopped_t;
	struct capture *cap;
	char *cmd;               /* its command line, for --metrics */
	struct growth_window win; /* its recent RSS, for --metrics' growth rate */
};

/* Run mode: memwatch's own signals are recorded with their origin, and the
 * child's exit wakes the sleep. */
static volatile sig_atomic_t run_sig_count, run_sig_last, run_sig_code, chld_seen;
/* A hang-up (the terminal closed) ends a watch as cleanly as SIGTERM: the
 * capture is stopped and the log completed, instead of leaving the agent
 * sampling in the target. */
static volatile sig_atomic_t hup_seen;
/* The signals the loop has acted on, of all that came: one more means a wait
 * for an agent must end now (control_set_interrupt). */
static unsigned sigs_handled;

static void on_hup(int sig)
{
	(void)sig;
	hup_seen++;
}

/* The signal that asks the watch to stop, or 0. */
static int stop_requested(void)
{
	int sig = stop_signal_pending();
	return sig ? sig : hup_seen ? SIGHUP : 0;
}

/* Every signal that came that asks the watch to stop or, in run mode, to act. */
static unsigned sigs_seen(void)
{
	return stop_signal_count() + (unsigned)hup_seen + (unsigned)run_sig_count;
}

/* A signal came that the loop has not acted on yet. */
static bool sig_unhandled(void)
{
	return sigs_seen() != sigs_handled;
}

static void on_run_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	run_sig_last = sig;
	run_sig_code = si ? si->si_code : 0;
	run_sig_count++;
}

static void on_chld(int sig)
{
	(void)sig;
	chld_seen = 1;
}

/* The live status line on the terminal. */
struct status_line {
	bool on;
	bool shown;
	bool plain;              /* TERM=dumb: no escape sequences, blanks instead */
	int width;               /* of the line shown, for blanking it */
	uint64_t first_kib;
	double rt[64];           /* RSS history for the rate, >= 1 s apart */
	uint64_t rv[64];
	unsigned rn, rhead;
};

/* Erase the status line, before a message or at the end. */
static void status_clear(struct status_line *sl)
{
	if (sl->shown) {
		if (sl->plain)
			fprintf(stderr, "\r%*s\r", sl->width, "");
		else
			fputs("\r\033[K", stderr);
		fflush(stderr);
		sl->shown = false;
	}
}

/* Show RSS now, since the start, its rate over the last minute, elapsed time. */
static void status_show(struct status_line *sl, double t, uint64_t rss_kib, size_t nproc)
{
	char now[32], diff[32], rate[32], el[32];
	double d, r = 0;
	unsigned oldest;

	if (!sl->on)
		return;
	if (sl->rn == 0)
		sl->first_kib = rss_kib;
	if (sl->rn == 0 || t - sl->rt[(sl->rhead + 63) % 64] >= 1.0) {
		sl->rt[sl->rhead] = t;
		sl->rv[sl->rhead] = rss_kib;
		sl->rhead = (sl->rhead + 1) % 64;
		if (sl->rn < 64)
			sl->rn++;
	}
	/* the oldest point no more than a minute back */
	for (oldest = (sl->rhead + 64 - sl->rn) % 64;
	     oldest != (sl->rhead + 63) % 64 && t - sl->rt[oldest] > 60;
	     oldest = (oldest + 1) % 64)
		;
	if (t - sl->rt[oldest] > 0.5)
		r = ((double)rss_kib - (double)sl->rv[oldest]) * 1024 / (t - sl->rt[oldest]) * 60;
	d = ((double)rss_kib - (double)sl->first_kib) * 1024;
	fmt_bytes(now, sizeof now, (double)rss_kib * 1024);
	fmt_bytes(diff, sizeof diff, d);
	fmt_bytes(rate, sizeof rate, r);
	fmt_seconds(el, sizeof el, t);
	{
		char line[200];
		int w = snprintf(line, sizeof line, "RSS %s%s  %s%s since start  %s%s/min  %s elapsed",
				 now, nproc > 1 ? " (total)" : "", d >= 0 ? "+" : "", diff,
				 r >= 0 ? "+" : "", rate, el);
		if (sl->plain)
			fprintf(stderr, "\r%s%*s", line, sl->width > w ? sl->width - w : 0, "");
		else
			fprintf(stderr, "\r%s\033[K", line);
		if (w > sl->width)
			sl->width = w;
	}
	fflush(stderr);
	sl->shown = true;
}

/* The default run log name: memwatch-PID.log, memwatch-P1-P2.log, memwatch-run-PID.log. */
static char *default_output(const struct watch_opts *o)
{
	char *s, *p;
	size_t i, n;

	if (o->run_child > 0)
		return xasprintf("memwatch-run-%d.log", o->run_child);
	n = o->npids > 4 ? 4 : o->npids;
	s = p = xmalloc(16 + n * 12 + 8);
	p = stpcpy(p, "memwatch");
	for (i = 0; i < n; i++)
		p += sprintf(p, "-%d", o->pids[i]);
	if (o->npids > n)
		p = stpcpy(p, "-more");
	strcpy(p, ".log");
	return s;
}

/* The snapshot prefix from the log name: "run.log" gives "run". Caller frees. */
static char *snap_prefix(const char *log)
{
	size_t n = strlen(log);
	if (strcmp(log, "-") == 0)
		return xstrdup("memwatch");
	if (n > 4 && strcmp(log + n - 4, ".log") == 0)
		n -= 4;
	return strndup(log, n) ?: xstrdup("memwatch");
}

/* Check that each pid can be watched; warn about another user's processes. */
static int check_pids(int *pids, size_t n, struct proc_ident *ids, bool pss, int run_child)
{
	size_t i, j;
	int e;

	for (i = 0; i < n; i++) {
		e = proc_identify(pids[i], &ids[i]);
		/* a thread id stands for its process: memory belongs to the process */
		if (e == 0 && ids[i].tgid != pids[i]) {
			int tid = pids[i];
			for (j = 0; j < n; j++)
				if (pids[j] == ids[i].tgid)
					break;
			if (j < n) {
				mw_error("pid %d is a thread of process %d, which is watched already",
					 tid, ids[i].tgid);
				return MW_EXIT_USAGE;
			}
			mw_warn("pid %d is a thread of process %d: watching the process", tid, ids[i].tgid);
			pids[i] = ids[i].tgid;
			free(ids[i].cmdline);
			e = proc_identify(pids[i], &ids[i]);
		}
		/* memwatch run's own child is reaped by the loop, whose status it gives */
		if (e == 0 && ids[i].zombie && pids[i] != run_child) {
			mw_error("pid %d: the process has exited (its parent has not reaped it)", pids[i]);
			return MW_EXIT_NOPROC;
		}
		if (e == -ESRCH) {
			if (kill(pids[i], 0) == 0 || errno == EPERM) {
				mw_error("pid %d: cannot read /proc/%d: the process is hidden from us", pids[i], pids[i]);
				mw_hint("/proc is mounted with hidepid; run memwatch as the process's user or root");
			} else {
				mw_error("pid %d: no such process", pids[i]);
			}
			return MW_EXIT_NOPROC;
		}
		if (e == 0 && pid_is_kernel_thread(pids[i])) {
			mw_error("pid %d is a kernel thread: it has no user memory to watch", pids[i]);
			return MW_EXIT_NOPROC;
		}
		if (e < 0) {
			mw_error("pid %d: cannot read /proc/%d: %s", pids[i], pids[i], strerror(-e));
			mw_hint("run memwatch as the process's user or root");
			return MW_EXIT_NOPROC;
		}
		if (ids[i].other_user)
			mw_warn("pid %d belongs to another user (uid %u): only what /proc shows "
				"every user is read: RSS, anon, file, shmem, swap, VSZ%s; no capture",
				pids[i], (unsigned)ids[i].uid, pss ? "; not PSS/USS" : "");
	}
	return 0;
}

/* Whether pid has started programs of its own: some are running, or it has
 * reaped some (the minor faults of its reaped children, field 11 of its stat,
 * which a zombie still shows: any program that ran made page faults). */
static bool had_children(int pid)
{
	char path[80], buf[16];
	unsigned long long cminflt;
	ssize_t n = 0;
	int fd;

	if (pid_stat_field(pid, 11, &cminflt) == 0 && cminflt > 0)
		return true;
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof buf);
		close(fd);
	}
	return n > 0;
}

/* Reap memwatch run's child if it has exited; true then, with its status, and
 * *kids telling whether it had started programs (read before the reaping, while
 * its /proc entry is still there). */
static bool reap_child(int pid, bool block, int *wstatus, bool *kids)
{
	siginfo_t si;
	pid_t r;
	int e;

	memset(&si, 0, sizeof si);
	do
		e = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
	while (e < 0 && errno == EINTR);
	if (e < 0 || si.si_pid != pid)
		return false;
	*kids = had_children(pid);
	do
		r = waitpid(pid, wstatus, 0);
	while (r < 0 && errno == EINTR);
	return r == pid;
}

/* Sleep until the absolute monotonic deadline; false when woken early by a
 * signal that the loop must look at. */
static bool sleep_until(uint64_t deadline_ns, bool run_mode, unsigned handled_sigs)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000u),
		.tv_nsec = (long)(deadline_ns % 1000000000u),
	};
	for (;;) {
		if (stop_requested() ||
		    (run_mode && (chld_seen || (unsigned)run_sig_count != handled_sigs)))
			return false;
		int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (r == 0)
			return true;
		if (r != EINTR)
			return true;
	}
}

/* Write "stopped" when a process is seen stopped (SIGSTOP, job control), in
 * a frozen cgroup, or, in two samples in a row, in a tracing stop (a debugger;
 * a tracer such as strace stops it briefly at every system call), and
 * "continued" when it runs again. Its capture asks nothing of its agent
 * meanwhile. We never continue a process: whoever stopped it does. */
static void note_stopped(struct runlog *log, double t, struct member *m, const struct proc_stat *ps)
{
	enum proc_run run = ps->frozen ? PROC_FROZEN : proc_run_of_state(ps->state);
	bool stopped;

	m->traced = run == PROC_TRACED ? m->traced + 1 : 0;
	stopped = run == PROC_STOPPED || run == PROC_FROZEN || m->traced >= 2;
	if (stopped && !m->stopped) {
		m->stopped_t = t;
		runlog_event(log, t, m->pid, "stopped", "state=%s", proc_run_name(run));
	} else if (!stopped && m->stopped) {
		runlog_event(log, t, m->pid, "continued", "after_s=%.1f", t - m->stopped_t);
	}
	m->stopped = stopped;
	capture_set_stopped(m->cap, run != PROC_RUNNING);
}

/* The watch: check the processes, create the log, then sample on a fixed grid of
 * deadlines until the duration, a signal or the processes' exit (see watch.h). */
int watch_loop(struct watch_opts *o, const char *command_line)
{
	const bool run_mode = o->run_child > 0;
	const bool multi = o->children || o->npids > 1;
	struct proc_ident *ids = NULL;
	struct proc_reader *reader = NULL;
	struct proc_tree *tree = NULL;
	struct runlog *log = NULL;
	struct member *m = NULL;
	size_t nm = 0, capm = 0, i;
	int *pids = NULL;
	struct proc_stat *stats = NULL;
	struct metrics_proc *mprocs = NULL;    /* --metrics: the live members' figures */
	unsigned metrics_warned = 0;
	size_t cap_arr = 0;
	int *roots;
	size_t nroots;
	char *outname = NULL, *prefix = NULL, *cause = NULL;
	struct status_line sl = { 0 };
	struct sigaction sa_run, old_int, old_term, old_chld, old_hup, old_pipe;
	const char *reason = NULL;
	int status = MW_EXIT_OK, child_wstatus = 0;
	bool lost_output = false;     /* a capture could not write its snapshots */
	bool child_done = false;
	bool child_kids = false;      /* memwatch run's command started programs */
	unsigned handled_sigs = 0;
	uint64_t start_ns, interval_ns = o->interval_ms * 1000000u, k = 0;
	int e;

	/* run mode watches the child; it is a root like a -p pid */
	if (run_mode) {
		o->pids = xrealloc(o->pids, (o->npids + 1) * sizeof *o->pids);
		memmove(o->pids + 1, o->pids, o->npids * sizeof *o->pids);
		o->pids[0] = o->run_child;
		o->npids++;
	}
	roots = o->pids;
	nroots = o->npids;
	ids = xcalloc(nroots, sizeof *ids);
	if ((status = check_pids(roots, nroots, ids, o->pss, o->run_child)) != 0)
		goto out;
	reader = proc_reader_new(o->pss, &cause);
	if (!reader) {
		mw_error("%s", cause);
		status = MW_EXIT_FAILURE;
		goto out;
	}
	if (o->children)
		tree = proc_tree_new();

	outname = o->output ? xstrdup(o->output) : default_output(o);
	log = runlog_create(outname, o->force, command_line, o->interval_ms, o->pss, &cause);
	if (!log) {
		mw_error("%s", cause);
		if (!o->output && !strstr(cause, "exists"))
			mw_hint("the run log goes to the current directory by default; -o FILE puts it elsewhere");
		status = MW_EXIT_FAILURE;
		goto out;
	}
	prefix = snap_prefix(outname);
	o->capture.snap_prefix = prefix;
	/* the report is printed on standard output: it must not break into a log
	 * written there */
	if (strcmp(outname, "-") == 0)
		o->capture.report = false;
	o->capture.force = o->force;
	for (i = 0; i < nroots; i++)
		runlog_meta(log, "process", "%d %s", roots[i], ids[i].cmdline);
	if (o->children)
		runlog_meta(log, "children", "yes");

	if (run_mode) {
		memset(&sa_run, 0, sizeof sa_run);
		sa_run.sa_sigaction = on_run_signal;
		sa_run.sa_flags = SA_SIGINFO;
		sigemptyset(&sa_run.sa_mask);
		sigaction(SIGINT, &sa_run, &old_int);
		sigaction(SIGTERM, &sa_run, &old_term);
		sa_run.sa_handler = on_chld;
		sa_run.sa_flags = SA_NOCLDSTOP;
		sigaction(SIGCHLD, &sa_run, &old_chld);
	} else {
		stop_signals_install();
	}
	/* nohup's ignored SIGHUP stays ignored; in run mode a hang-up is handled
	 * like SIGINT and SIGTERM (the terminal sent it to the command too) */
	hup_seen = 0;
	sigaction(SIGHUP, NULL, &old_hup);
	if (old_hup.sa_handler != SIG_IGN) {
		memset(&sa_run, 0, sizeof sa_run);
		if (run_mode) {
			sa_run.sa_sigaction = on_run_signal;
			sa_run.sa_flags = SA_SIGINFO;
		} else {
			sa_run.sa_handler = on_hup;
		}
		sigemptyset(&sa_run.sa_mask);
		sigaction(SIGHUP, &sa_run, NULL);
	}
	/* a closed pipe on "-o -" is a write error that ends the watch cleanly,
	 * not a death by SIGPIPE that would leave the capture running */
	memset(&sa_run, 0, sizeof sa_run);
	sa_run.sa_handler = SIG_IGN;
	sigemptyset(&sa_run.sa_mask);
	sigaction(SIGPIPE, &sa_run, &old_pipe);
	sl.on = !o->quiet && isatty(STDERR_FILENO);
	sl.plain = !getenv("TERM") || strcmp(getenv("TERM"), "dumb") == 0;

	sigs_handled = sigs_seen();
	control_set_interrupt(sig_unhandled);
	start_ns = mono_ns();
	runlog_event(log, 0, 0, "start", NULL);
	for (i = 0; i < nroots; i++) {
		if (nm == capm) {
			capm = capm ? capm * 2 : 8;
			m = xrealloc(m, capm * sizeof *m);
		}
		/* another user's process was warned about already, PSS included */
		m[nm++] = (struct member){ .pid = roots[i], .root = true,
					   .pss_warned = ids[i].other_user,
					   .cap = capture_new(&o->capture, roots[i], log),
					   .cmd = xstrdup(ids[i].cmdline) };
	}

	for (;;) {
		double t;
		struct mem_sample total = { .pid = 0 };
		bool total_pss = true;
		size_t live = 0;

		if (run_mode && !child_done && reap_child(o->run_child, false, &child_wstatus, &child_kids))
			child_done = true;
		chld_seen = 0;
		t = (double)(mono_ns() - start_ns) / 1e9;

		/* new members of the trees: everything below any live member */
		if (o->children) {
			const int *kids, *kppids;
			size_t nk, j;
			for (i = 0, j = 0; i < nm; i++)
				if (!m[i].gone) {
					if (j == cap_arr) {
						cap_arr = cap_arr ? cap_arr * 2 : 16;
						pids = xrealloc(pids, cap_arr * sizeof *pids);
						stats = xrealloc(stats, cap_arr * sizeof *stats);
						mprocs = xrealloc(mprocs, cap_arr * sizeof *mprocs);
					}
					pids[j++] = m[i].pid;
				}
			if (proc_tree_scan(tree, pids, j, &kids, &kppids, &nk) == 0) {
				for (j = 0; j < nk; j++) {
					struct proc_ident id;
					char *v;
					/* an exited member stays in its parent's list until
					 * reaped: it must not join again */
					if (proc_identify(kids[j], &id) < 0)
						continue;
					if (id.zombie) {
						free(id.cmdline);
						continue;
					}
					v = runlog_encode(id.cmdline);
					runlog_event(log, t, kids[j], "process", "ppid=%d cmd=%s", kppids[j], v);
					free(v);
					if (nm == capm) {
						capm *= 2;
						m = xrealloc(m, capm * sizeof *m);
					}
					m[nm++] = (struct member){ .pid = kids[j],
						.cap = capture_new(&o->capture, kids[j], log),
						.cmd = id.cmdline };
				}
			}
		}

		if (nm > cap_arr) {
			cap_arr = nm * 2;
			pids = xrealloc(pids, cap_arr * sizeof *pids);
			stats = xrealloc(stats, cap_arr * sizeof *stats);
			mprocs = xrealloc(mprocs, cap_arr * sizeof *mprocs);
		}
		for (i = 0; i < nm; i++)
			pids[i] = m[i].pid;
		e = proc_read(reader, pids, nm, stats);
		if (e < 0) {
			mw_error("cannot read /proc: %s", strerror(-e));
			status = MW_EXIT_FAILURE;
			reason = "error";
			break;
		}

		for (i = 0; i < nm; i++) {
			struct proc_stat *ps = &stats[i];
			bool is_child = run_mode && m[i].pid == o->run_child;

			if (is_child && ps->found && ps->zombie && !child_done)
				child_done = reap_child(o->run_child, true, &child_wstatus, &child_kids);
			if (!ps->found || ps->zombie || (is_child && child_done)) {
				status_clear(&sl);
				if (is_child && child_done && WIFSIGNALED(child_wstatus))
					runlog_event(log, t, m[i].pid, "exit", "signal=%d",
						     WTERMSIG(child_wstatus));
				else if (is_child && child_done)
					runlog_event(log, t, m[i].pid, "exit", "status=%d",
						     WEXITSTATUS(child_wstatus));
				else
					runlog_event(log, t, m[i].pid, "exit", NULL);
				if (capture_end(m[i].cap, t, "exited", true) < 0)
					lost_output = true;
				capture_free(m[i].cap);
				m[i].cap = NULL;
				m[i].gone = true;
				continue;
			}
			if (ps->pss_denied && !m[i].pss_warned) {
				status_clear(&sl);
				mw_warn("pid %d: cannot read /proc/%d/smaps_rollup: PSS and USS are written as '-'",
					m[i].pid, m[i].pid);
				m[i].pss_warned = true;
			}
			note_stopped(log, t, &m[i], ps);
			runlog_sample(log, t, &ps->s);
			capture_sample(m[i].cap, t, &ps->s);
			if (o->metrics) {
				struct metrics_proc *mp = &mprocs[live];
				growth_window_push(&m[i].win, t, (double)ps->s.rss * 1024);
				mp->pid = m[i].pid;
				mp->command = m[i].cmd;
				mp->s = &ps->s;
				mp->have_growth = growth_window_slope(&m[i].win, &mp->growth_bps);
				mp->capture = capture_state_name(m[i].cap);
				mp->snapshots = capture_snapshots(m[i].cap);
			}
			live++;
			total.rss += ps->s.rss;
			total.anon += ps->s.anon;
			total.file += ps->s.file;
			total.shmem += ps->s.shmem;
			total.swap += ps->s.swap;
			total.vsz += ps->s.vsz;
			if (ps->s.pss == RUNLOG_NONE)
				total_pss = false;
			else {
				total.pss += ps->s.pss;
				total.uss += ps->s.uss;
			}
		}
		if (!total_pss || !o->pss)
			total.pss = total.uss = RUNLOG_NONE;
		if (multi && live > 0)
			runlog_sample(log, t, &total);

		if (o->metrics && metrics_write(o->metrics, mprocs, live, t, &cause) < 0) {
			/* said once; the watch and its log go on */
			if (!metrics_warned++) {
				status_clear(&sl);
				mw_warn("--metrics: %s", cause);
			}
			free(cause);
			cause = NULL;
		}
		/* forget the members that are gone, keep the order of the rest */
		{
			size_t j = 0;
			for (i = 0; i < nm; i++) {
				if (!m[i].gone)
					m[j++] = m[i];
				else
					free(m[i].cmd);
			}
			nm = j;
		}
		if (live > 0)
			status_show(&sl, t, total.rss, live);

		if (runlog_error(log)) {
			status_clear(&sl);
			mw_error("cannot write '%s': %s", runlog_path(log), strerror(runlog_error(log)));
			status = MW_EXIT_FAILURE;
			reason = "error";
			break;
		}
		if (run_mode && child_done) {
			reason = "exited";
			break;
		}
		if (!run_mode && nm == 0) {
			reason = "exited";
			status = MW_EXIT_GONE;
			break;
		}
		if (o->duration_ms && mono_ns() - start_ns >= o->duration_ms * 1000000u) {
			reason = "duration";
			break;
		}

		/* the next deadline on the grid start + k * interval; missed ones skipped */
		{
			uint64_t now = mono_ns(), next;
			k = (now - start_ns) / interval_ns + 1;
			next = start_ns + k * interval_ns;
			if (o->duration_ms && next > start_ns + o->duration_ms * 1000000u)
				next = start_ns + o->duration_ms * 1000000u;
			if (!sleep_until(next, run_mode, handled_sigs)) {
				if (!run_mode) {
					sigs_handled = sigs_seen();
					int sig = stop_requested();
					status = MW_EXIT_SIGNAL + sig;
					reason = "signal";
					t = (double)(mono_ns() - start_ns) / 1e9;
					runlog_event(log, t, 0, "signal", "signal=%d", sig);
					break;
				}
			}
		}
		if (run_mode && (unsigned)run_sig_count != handled_sigs) {
			/* a signal typed at the terminal went to the child's process group
			 * already; one sent to memwatch alone is passed on to the child */
			int sig = run_sig_last;
			bool from_tty = run_sig_code == SI_KERNEL;
			handled_sigs = run_sig_count;
			sigs_handled = sigs_seen();
			if (!from_tty && !child_done)
				kill(o->run_child, sig);
			t = (double)(mono_ns() - start_ns) / 1e9;
			runlog_event(log, t, 0, "signal", "signal=%d forwarded=%s", sig,
				     from_tty ? "no" : "yes");
			if (handled_sigs >= 3) {
				/* the child does not end: stop waiting, leave it running */
				status_clear(&sl);
				mw_warn("pid %d does not exit after 3 signals: the watch ends, it goes on running",
					o->run_child);
				status = MW_EXIT_SIGNAL + sig;
				reason = "signal";
				break;
			}
		}
	}

	{
		double t = (double)(mono_ns() - start_ns) / 1e9;
		status_clear(&sl);
		/* the signal that ended the watch is acted on; another one cuts the
		 * last snapshots short */
		sigs_handled = sigs_seen();
		for (i = 0; i < nm; i++) {
			if (capture_end(m[i].cap, t, reason, false) < 0)
				lost_output = true;
			capture_free(m[i].cap);
			free(m[i].cmd);
		}
		/* after the last snapshots, which may have taken a while */
		t = (double)(mono_ns() - start_ns) / 1e9;
		runlog_event(log, t, 0, "end", "reason=%s", reason);
		/* the watch is over: no process is reported any more */
		if (o->metrics && metrics_write(o->metrics, NULL, 0, t, &cause) < 0) {
			free(cause);
			cause = NULL;
		}
		control_set_interrupt(NULL);
	}
	if (run_mode && child_done) {
		status = WIFSIGNALED(child_wstatus) ? MW_EXIT_SIGNAL + WTERMSIG(child_wstatus)
						    : WEXITSTATUS(child_wstatus);
	}
	if (run_mode && !child_done && strcmp(reason, "duration") == 0) {
		/* the watch was asked to last this long, not the command: it is
		 * left running as memwatch -p leaves its processes */
		fprintf(stderr, "memwatch: pid %d is still running: the watch ended at --duration, "
			"the command goes on without it\n", o->run_child);
		child_kids = had_children(o->run_child);
	}
	if (run_mode && child_kids && !o->children && o->capture.mode != CAPTURE_NEVER) {
		/* e.g. sh -c 'a | b': the memory is in programs that were not sampled */
		fprintf(stderr, "memwatch: pid %d started other programs, which were not watched\n",
			o->run_child);
		mw_hint("memwatch run --children watches the programs the command starts");
	}
	if (run_mode) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGCHLD, &old_chld, NULL);
	}
	sigaction(SIGHUP, &old_hup, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	/* outside run mode, a watch whose snapshots were lost has failed */
	if (lost_output && !run_mode && (status == MW_EXIT_OK || status == MW_EXIT_GONE))
		status = MW_EXIT_FAILURE;
	if (runlog_close(log, &cause) < 0) {
		if (status != MW_EXIT_FAILURE || strcmp(reason, "error") != 0)
			mw_error("%s", cause);
		free(cause);
		cause = NULL;
		if (status == MW_EXIT_OK || status == MW_EXIT_GONE)
			status = MW_EXIT_FAILURE;
	}
	log = NULL;
out:
	if (run_mode) {
		/* give the pid list back as the caller made it */
		memmove(o->pids, o->pids + 1, (o->npids - 1) * sizeof *o->pids);
		o->npids--;
	}
	o->capture.snap_prefix = NULL;
	free(cause);
	for (i = 0; ids && i < nroots; i++)
		free(ids[i].cmdline);
	free(ids);
	free(m);
	free(pids);
	free(stats);
	free(mprocs);
	free(outname);
	free(prefix);
	proc_tree_free(tree);
	proc_reader_free(reader);
	return status;
}

/* memwatch [watch]: parse, watch, give the status. */
int cmd_watch(int argc, char **argv)
{
	struct watch_opts o;
	char *cmdline;
	int r, argi = 0;
	bool named = argc > 0 && strcmp(argv[0], "watch") == 0;

	watch_opts_init(&o);
	r = watch_parse(argc, argv, &o, false, &argi);
	if (r == WATCH_PARSE_HELP) {
		fputs("Usage:\n", stdout);
		fputs(watch_usage, stdout);
		watch_opts_release(&o);
		return MW_EXIT_OK;
	}
	if (r != 0) {
		watch_opts_release(&o);
		return r;
	}
	cmdline = watch_command_line(named ? "memwatch watch" : "memwatch", argc, argv);
	r = watch_loop(&o, cmdline);
	free(cmdline);
	watch_opts_release(&o);
	return r;
}
