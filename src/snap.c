/* snap.c: memwatch snap: ask the agent inside a running process for a heap
 * snapshot now, check it, and store it as a .snap file. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "container.h"
#include "control.h"
#include "hotspot.h"
#include "inject.h"
#include "maps.h"
#include "proc.h"
#include "report.h"
#include "snapshot.h"
#include "symbolize.h"
#include "util.h"

#define SNAP_TIMEOUT_MS 30000
#define STARTING_GRACE_MS 10000   /* how long a process may stay in ld.so */
#define DEFAULT_WAIT_MS 10000
/* How long a stopped process (SIGSTOP, a debugger, a frozen cgroup) is waited
 * for: its agent cannot answer, and it is not ours to continue. */
#define STOPPED_WAIT_MS 10000

const char snap_usage[] =
	"  memwatch snap -p PID [-o FILE] [-f] [-w TIME] [-r SIZE] [-E] [--referrers]\n"
	"               [--referrers-limit TIME] [--referrers-objects N]\n"
	"    take a heap snapshot of PID now, from the memwatch agent running in it;\n"
	"    with no agent there, attach one and sample for --wait first\n"
	"    -p, --pid PID        the process (PID or /proc/PID)\n"
	"    -o, --output FILE    where to write it (default: memwatch-PID-TIME.snap)\n"
	"    -f, --force          overwrite FILE if it exists\n"
	"    -w, --wait TIME      when capture was not running: sample this long before\n"
	"                         the snapshot, then stop (default 10s; 0: do not\n"
	"                         attach or start capture, snapshot what is there);\n"
	"                         a capture running already (another memwatch's) is\n"
	"                         joined at its rate and left running\n"
	"    -r, --sample-rate SIZE  mean bytes between samples then (default 512KiB)\n"
	"    -E, --embed-symbols  resolve and embed the symbols of its frames, so that\n"
	"                         it can be reported where its binaries are not\n"
	"        --referrers      CPython: for a few sampled live objects of the top types\n"
	"                         and stacks, find what keeps them alive (a chain of\n"
	"                         references from a module global, a class attribute\n"
	"                         or a frame) and what one object of each top type\n"
	"                         holds; Python threads wait meanwhile (the GIL held)\n"
	"        --referrers-limit TIME  the most the search may take, the wait for\n"
	"                         the GIL included (default 1s, at most 10m)\n"
	"        --referrers-objects N   the most objects it traverses, every pass\n"
	"                         counted (default 50000000)\n"
	"    -h, --help           this help\n"
	"    A stopped process (SIGSTOP, a debugger) is waited for up to 10s to run\n"
	"    again, then snap gives up (status 5); it never continues the process.\n"
	"    A HotSpot JVM is asked to write its perf map first (as by jcmd PID\n"
	"    Compiler.perfmap), so that its compiled Java methods are named.\n";

struct snap_opts {
	int pid;
	const char *output;
	bool force;
	uint64_t wait_ms;
	uint64_t rate;
	bool embed;
	uint64_t refs_ms;        /* --referrers: its time limit; 0: no search */
	uint64_t refs_limit_ms, refs_objects;
};

/* True when pid does not exist or has exited (a zombie, not reaped yet). */
static bool process_gone(int pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

/* The exit status for a request that failed with cause (said): 128+N when
 * signal N cut it short, else MW_EXIT_ATTACH. */
static int request_failed(char *cause)
{
	int sig = stop_signal_pending();
	mw_error("%s", cause);
	return sig ? MW_EXIT_SIGNAL + sig : MW_EXIT_ATTACH;
}

/* Wait, up to STOPPED_WAIT_MS, for a stopped process to run again. 0 when it
 * runs (or is gone: that is said later), or the exit status, said. */
static int wait_running(int pid)
{
	uint64_t end = mono_ns() + (uint64_t)STOPPED_WAIT_MS * 1000000u;
	struct timespec ts = { .tv_nsec = 50 * 1000000 };
	enum proc_run run;
	char b[32];

	while ((run = proc_run_state(pid)) != PROC_RUNNING && run != PROC_GONE) {
		if (stop_signal_pending()) {
			mw_error("pid %d: interrupted while the process is %s: no snapshot written", pid,
				 proc_run_name(run));
			return MW_EXIT_SIGNAL + stop_signal_pending();
		}
		if (mono_ns() >= end) {
			mw_error("pid %d: the process is %s: its agent cannot answer; no snapshot "
				 "written after waiting %s", pid, proc_run_name(run),
				 fmt_seconds(b, sizeof b, STOPPED_WAIT_MS / 1000.0));
			if (run == PROC_FROZEN)
				mw_hint("its cgroup is frozen (cgroup.freeze); thaw it and try again");
			else
				mw_hint("it was stopped by a signal or a debugger; once it runs again "
					"(kill -CONT %d, or continue in the debugger), try again", pid);
			return MW_EXIT_ATTACH;
		}
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* Ask for a snapshot and receive it, following the process: a stop in the
 * middle is waited out as wait_running does. 0, or the exit status, said. */
static int fetch_snapshot(int pid, int fd, unsigned char **buf, size_t *len, uint64_t refs_ms,
			  uint64_t refs_objects)
{
	struct control_snap_rx rx = { 0 };
	uint64_t end = mono_ns() + (uint64_t)SNAP_TIMEOUT_MS * 1000000u;
	char *cause = NULL;
	int ret;

	if (control_snapshot_send_refs(fd, &rx, refs_ms, refs_objects, &cause) < 0) {
		ret = request_failed(cause);
		free(cause);
		return ret;
	}
	for (;;) {
		int r = control_snapshot_recv(fd, &rx, 200, buf, len, &cause);
		if (r == CONTROL_RX_DONE) {
			ret = 0;
			break;
		}
		if (r == CONTROL_RX_FAILED) {
			ret = request_failed(cause);
			break;
		}
		if (r == CONTROL_RX_INTERRUPTED) {
			mw_error("pid %d: interrupted: no snapshot written", pid);
			ret = MW_EXIT_SIGNAL + stop_signal_pending();
			break;
		}
		if ((ret = wait_running(pid)) != 0)
			break;
		if (mono_ns() >= end) {
			mw_error("pid %d: the memwatch agent did not answer in time", pid);
			ret = MW_EXIT_ATTACH;
			break;
		}
	}
	control_snap_rx_release(&rx);
	free(cause);
	return ret;
}

/* Connect to the agent of pid, loading one into the process first when none is
 * there (*attached says so). Returns 0, or an exit status negated, with the
 * error said. */
static int ensure_agent(int pid, bool may_attach, int *fd, bool *attached)
{
	struct inject_result res;
	char *cause = NULL, *hint = NULL, *agent;
	int r = control_connect(pid, SNAP_TIMEOUT_MS, &cause);

	*attached = false;
	if (r >= 0) {
		*fd = r;
		return 0;
	}
	if (r != -ECONNREFUSED && r != -ENOENT) {
		mw_error("%s", cause);
		if (r == -EPERM)
			mw_hint("%s", CONTAINER_HINT_NETNS);
		free(cause);
		return r == -ESRCH ? -MW_EXIT_NOPROC : -MW_EXIT_ATTACH;
	}
	if (!may_attach) {
		if (process_gone(pid)) {
			mw_error("pid %d: no such process (it has exited)", pid);
			free(cause);
			return -MW_EXIT_NOPROC;
		}
		mw_error("%s", cause);
		mw_hint("without --wait 0, memwatch snap attaches an agent and samples for a while");
		free(cause);
		return -MW_EXIT_ATTACH;
	}
	free(cause);
	cause = NULL;
	agent = find_agent_library();
	/* a process just started may still be in the dynamic loader, where no
	 * agent can be loaded: tried again for a while, as a watch does */
	uint64_t until = mono_ns() + (uint64_t)STARTING_GRACE_MS * 1000000u;
	for (;;) {
		r = inject_agent(pid, agent, "capture=idle", INJECT_DEADLINE_MS, &res, &cause, &hint);
		if (r != -INJECT_ESTARTING || mono_ns() >= until || stop_signal_pending())
			break;
		free(cause);
		free(hint);
		cause = hint = NULL;
		nanosleep(&(struct timespec){ 0, 50 * 1000000 }, NULL);
	}
	free(agent);
	if (r < 0) {
		mw_error("pid %d: cannot attach: %s", pid, cause);
		if (hint)
			mw_hint("%s", hint);
		free(cause);
		free(hint);
		return r == -INJECT_ENOPROC ? -MW_EXIT_NOPROC : -MW_EXIT_ATTACH;
	}
	if (!res.already_loaded)
		fprintf(stderr, "memwatch: pid %d: agent attached (thread %d paused %.1f ms)\n",
			pid, res.tid, res.pause_ms);
	r = control_connect(pid, SNAP_TIMEOUT_MS, &cause);
	if (r < 0) {
		mw_error("%s", cause);
		free(cause);
		return r == -ESRCH ? -MW_EXIT_NOPROC : -MW_EXIT_ATTACH;
	}
	*fd = r;
	*attached = true;
	return 0;
}

/* Sleep ms, or less when SIGINT or SIGTERM arrives. Returns the signal or 0. */
static int wait_interruptible(uint64_t ms)
{
	uint64_t end = mono_ns() + ms * 1000000u;
	struct timespec ts;
	while (!stop_signal_pending()) {
		uint64_t now = mono_ns();
		if (now >= end)
			break;
		ts.tv_sec = (time_t)((end - now) / 1000000000u);
		ts.tv_nsec = (long)((end - now) % 1000000000u);
		nanosleep(&ts, NULL);
	}
	return stop_signal_pending();
}

/* Default name: memwatch-PID-YYYYmmddTHHMMSS.snap in the current directory. */
static char *default_name(int pid)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
	return xasprintf("memwatch-%d-%s.snap", pid, stamp);
}

enum { OPT_REFERRERS = 256, OPT_REFERRERS_LIMIT, OPT_REFERRERS_OBJECTS };

static int parse_args(int argc, char **argv, struct snap_opts *o)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "wait", required_argument, NULL, 'w' },
		{ "sample-rate", required_argument, NULL, 'r' },
		{ "embed-symbols", no_argument, NULL, 'E' },
		{ "referrers", no_argument, NULL, OPT_REFERRERS },
		{ "referrers-limit", required_argument, NULL, OPT_REFERRERS_LIMIT },
		{ "referrers-objects", required_argument, NULL, OPT_REFERRERS_OBJECTS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *cause = NULL;
	int c;

	opterr = 0;
	optind = 1;
	o->wait_ms = DEFAULT_WAIT_MS;
	o->rate = 512 * 1024;
	o->refs_limit_ms = MW_REFERRERS_LIMIT_MS;
	o->refs_objects = MW_REFERRERS_OBJECTS;
	while ((c = getopt_long(argc, argv, ":p:o:fw:r:Eh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pid(optarg, &o->pid, &cause) < 0)
				return mw_usage_error("snap", cause);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			o->force = true;
			break;
		case 'w':
			if (strcmp(optarg, "0") == 0)
				o->wait_ms = 0;     /* never start capture: snapshot what is there */
			else if (parse_duration_ms(optarg, &o->wait_ms, &cause) < 0)
				return mw_usage_error("snap", cause);
			break;
		case 'r':
			if (parse_size(optarg, &o->rate, &cause) < 0 || o->rate == 0)
				return mw_usage_error("snap", cause ? cause :
						      xstrdup("the sample rate must be at least 1"));
			break;
		case 'E':
			o->embed = true;
			break;
		case OPT_REFERRERS:
			o->refs_ms = 1;
			break;
		case OPT_REFERRERS_LIMIT:
			if (parse_referrers_limit(optarg, &o->refs_limit_ms, &cause) < 0)
				return mw_usage_error("snap", cause);
			break;
		case OPT_REFERRERS_OBJECTS:
			if (parse_referrers_objects(optarg, &o->refs_objects, &cause) < 0)
				return mw_usage_error("snap", cause);
			break;
		case 'h':
			mw_usage_print(snap_usage);
			fputs("\nExamples:\n"
			      "  memwatch snap -p 1234                 snapshot of pid 1234 in the current directory\n"
			      "  memwatch snap -p 1234 -o before.snap  and later: memwatch diff before.snap after.snap\n"
			      "  memwatch snap -p 1234 -w 1m -E        attach, sample a minute, embed symbols\n",
			      stdout);
			return MW_EXIT_OK;
		default:
			return mw_option_error("snap", c, argv, optind, optopt);
		}
	}
	if (optind < argc) {
		mw_error("snap: unexpected argument '%s'", argv[optind]);
		return MW_EXIT_USAGE;
	}
	if (o->refs_ms)
		o->refs_ms = o->refs_limit_ms;
	if (!o->pid) {
		mw_error("snap: which process? (-p PID)");
		mw_hint("memwatch snap -p PID [-o FILE]");
		return MW_EXIT_USAGE;
	}
	return -1;
}

/* Hold the capture while the snapshot is taken, sampling for --wait first
 * when it was off. One running already (another memwatch's) is joined at its
 * rate and left running, since stop only drops this connection's hold. *st is
 * the agent's status after it; *started: this connection holds a capture. 0
 * or the exit status after printing why. */
static int hold_capture(const struct snap_opts *o, int fd, struct control_status *st,
			bool *started)
{
	struct control_started got = { 0 };
	char *cause = NULL, b1[32], b2[32];
	uint64_t wait_ms;
	int r, sig;

	*started = false;
	if (control_status(fd, st, &cause) < 0 ||
	    (o->wait_ms && control_start(fd, o->rate, 0, 0, &got, &cause) < 0))
		goto failed;
	*started = o->wait_ms != 0;
	if (*started && got.joined && got.rate != o->rate)
		control_warn_rate(o->pid, &got, o->rate);
	/* a capture joined has sampled for a while already: only the rest of
	 * --wait is waited when another memwatch runs it (another snap may have
	 * started it a moment ago); one the agent runs on its own (preloaded with
	 * capture=now) has sampled from the start: the snapshot is taken at once */
	wait_ms = !*started ? 0 : !got.joined ? o->wait_ms :
		  got.holder_pid <= 0 || got.age_ms >= o->wait_ms ? 0 : o->wait_ms - got.age_ms;
	if (*started)
		st->capturing = true;
	if (!wait_ms)
		return 0;
	/* sample now, for a while, on this connection (closing it drops the
	 * hold: the last one stops capture and removes the hooks) */
	if (got.joined)
		fprintf(stderr, "memwatch: pid %d: joined the capture running for %s; sampling "
			"%s more\n", o->pid, fmt_seconds(b1, sizeof b1, (double)got.age_ms / 1000),
			fmt_seconds(b2, sizeof b2, (double)wait_ms / 1000));
	else
		fprintf(stderr, "memwatch: pid %d: capture started now; sampling for %s: the "
			"snapshot holds only what is allocated from now on\n", o->pid,
			fmt_seconds(b2, sizeof b2, (double)o->wait_ms / 1000));
	sig = wait_interruptible(wait_ms);
	if (sig) {
		mw_error("pid %d: interrupted: capture stopped, no snapshot written", o->pid);
		return MW_EXIT_SIGNAL + sig;
	}
	if ((r = wait_running(o->pid)) != 0)
		return r;
	if (control_status(fd, st, &cause) < 0)
		goto failed;
	return 0;
failed:
	r = request_failed(cause);
	free(cause);
	return r;
}

/* The referrer search (--referrers): how long Python waited, and each chain
 * found, on standard output. */
static void print_referrers(int pid, const struct snapshot *s)
{
	const struct snap_refsearch *q = &s->refsearch;
	char b[32];

	if (!s->has_refs)
		return;
	if (q->status == SNAP_REFS_UNAVAILABLE || q->status == SNAP_REFS_NO_GIL) {
		printf("pid %d: referrers not searched: %s\n", pid, q->note ? q->note : "unknown");
		return;
	}
	printf("pid %d: referrers: Python held %s, %llu objects traversed in %u pass%s (%llu tracked)%s%s\n",
	       pid, fmt_seconds(b, sizeof b, (double)q->pause_ns / 1e9), (unsigned long long)q->visited,
	       q->passes, q->passes == 1 ? "" : "es", (unsigned long long)q->tracked, q->note ? "; " : "",
	       q->note ? q->note : "");
	for (size_t i = 0; i < s->nchains; i++) {
		char *t = report_chain_text(&s->chains[i]);
		printf("  %s kept alive by: %s\n", s->types[s->chains[i].type], t);
		free(t);
	}
	for (size_t i = 0; i < s->nforward; i++) {
		const struct snap_forward *f = &s->forward[i];
		printf("  one %s (%s) holds:", s->types[f->type], fmt_bytes(b, sizeof b, (double)f->bytes));
		for (uint32_t k = 0; k < f->nreferents; k++)
			printf("%s %llu %s %s", k ? "," : "", (unsigned long long)f->referents[k].count,
			       f->referents[k].type ? f->referents[k].type : "?",
			       fmt_bytes(b, sizeof b, (double)f->referents[k].bytes));
		if (!f->nreferents)
			printf(" no other object");
		putchar('\n');
	}
}

/* What the snapshot written to path holds, on standard output. */
static void print_summary(const struct snap_opts *o, const struct snapshot *s,
			  const struct control_status *st, const char *path)
{
	uint64_t live = 0, samples = 0;
	char b1[32], b2[32];
	size_t i;

	for (i = 0; i < s->nstacks; i++) {
		live += s->stacks[i].live_bytes;
		samples += s->stacks[i].live_samples;
	}
	live += s->dropped_bytes;
	printf("%s\n", path);
	if (!st->capturing) {
		printf("pid %d: capture is off, so the snapshot holds no call stacks (RSS %s)\n", o->pid,
		       fmt_bytes(b1, sizeof b1, (double)s->rss_bytes));
		mw_warn("pid %d: the agent is loaded but not capturing: the snapshot is empty", o->pid);
		mw_hint("without --wait 0, memwatch snap starts capture and samples for a while first");
	} else {
		printf("pid %d: %s live (estimated) in %zu stacks, %llu live samples, "
		       "sample rate %s%s\n",
		       o->pid, fmt_bytes(b1, sizeof b1, (double)live), s->nstacks,
		       (unsigned long long)samples, fmt_bytes(b2, sizeof b2, (double)s->sample_rate),
		       s->dropped_stacks ? " (some stacks dropped: over the stack limit)" : "");
	}
	print_referrers(o->pid, s);
}

/* memwatch snap: load or find the agent, hold a capture, fetch, enrich and
 * write the snapshot. */
int cmd_snap(int argc, char **argv)
{
	struct snap_opts o = { 0 };
	struct control_status st;
	struct snapshot *s = NULL;
	unsigned char *buf = NULL;
	size_t len = 0;
	char *cause = NULL, *path = NULL;
	int fd = -1, r, ret = MW_EXIT_FAILURE;
	bool attached, started = false;

	r = parse_args(argc, argv, &o);
	if (r >= 0)
		return r;
	if (pid_is_kernel_thread(o.pid)) {
		mw_error("pid %d is a kernel thread: it has no heap to snapshot", o.pid);
		return MW_EXIT_NOPROC;
	}
	/* refuse an existing file before sampling for a while, not after */
	path = o.output ? xstrdup(o.output) : default_name(o.pid);
	if (outfile_check(path, o.force, &cause) < 0) {
		mw_error("%s", cause);
		free(cause);
		free(path);
		return MW_EXIT_FAILURE;
	}
	stop_signals_install();
	/* neither loading an agent nor asking one can be done in a stopped process */
	if ((r = wait_running(o.pid)) != 0) {
		free(path);
		return r;
	}
	r = ensure_agent(o.pid, o.wait_ms > 0, &fd, &attached);
	if (r < 0) {
		free(path);
		return -r;
	}
	if ((r = hold_capture(&o, fd, &st, &started)) != 0) {
		ret = r;
		goto out;
	}
	{
		char note[320];
		if (control_python_note(&st, note, sizeof note))
			fprintf(stderr, "memwatch: pid %d: %s\n", o.pid, note);
	}
	if ((r = fetch_snapshot(o.pid, fd, &buf, &len, o.refs_ms, o.refs_objects)) != 0) {
		ret = r;
		goto out;
	}
	{
		/* node: why its JavaScript objects are not in this snapshot */
		struct control_status js;
		char note[300];
		if (control_status(fd, &js, &cause) < 0) {
			free(cause);
			cause = NULL;
		} else if (js.capturing && control_js_note(&js, note, sizeof note)) {
			fprintf(stderr, "memwatch: pid %d: %s\n", o.pid, note);
		}
	}
	if (started && control_stop(fd, &cause) < 0) {
		mw_warn("pid %d: stopping capture: %s", o.pid, cause);
		free(cause);
		cause = NULL;
	}
	s = snapshot_decode(buf, len, &cause);
	if (!s) {
		mw_error("pid %d: the agent sent an invalid snapshot: %s", o.pid, cause);
		goto out;
	}
	{
		/* a JVM's names of its compiled methods, written now */
		struct hotspot jvm = { 0 };
		char *why = NULL;
		if (hotspot_perfmap(&jvm, o.pid, HOTSPOT_TIMEOUT_MS, &why) < 0)
			fprintf(stderr, "memwatch: pid %d: %s\n", o.pid, why);
		free(why);
	}
	/* where the RSS is, by mapping, and the names of JIT frames */
	maps_enrich_snapshot(s, o.pid);
	/* modules whose files are not ours at their paths (a container, its own
	 * mount namespace, a file replaced since) are named from its own files
	 * now, while it lives; with --embed-symbols, every module */
	struct their_files tf;
	bool embed_failed = false;
	container_files_point(s, o.pid, &tf);
	if (tf.unreadable)
		mw_warn("pid %d: no symbols for %s", o.pid, tf.unreadable);
	if (o.embed) {
		embed_failed = symbolize_embed(s, NULL, NULL, 0, &cause) < 0;
	} else if (tf.nembed && symbolize_embed(s, tf.embed, (const char *const *)&tf.debug_dir,
					     tf.debug_dir != NULL, &cause) < 0) {
		mw_warn("pid %d: symbols from its own files: %s", o.pid, cause);
		free(cause);
		cause = NULL;
	}
	container_files_restore(s, &tf);
	if (embed_failed || snapshot_write(s, path, o.force, &cause) < 0) {
		mw_error("%s", cause);
		goto out;
	}
	print_summary(&o, s, &st, path);
	ret = MW_EXIT_OK;
out:
	free(cause);
	free(path);
	free(buf);
	snapshot_free(s);
	if (fd >= 0)
		close(fd);
	return ret;
}
