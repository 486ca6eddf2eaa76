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
#include "control.h"
#include "inject.h"
#include "maps.h"
#include "proc.h"
#include "snapshot.h"
#include "symbolize.h"
#include "util.h"

#define SNAP_TIMEOUT_MS 30000
#define DEFAULT_WAIT_MS 10000
/* How long a stopped process (SIGSTOP, a debugger, a frozen cgroup) is waited
 * for: its agent cannot answer, and it is not ours to continue. */
#define STOPPED_WAIT_MS 10000

const char snap_usage[] =
	"  memwatch snap -p PID [-o FILE] [-f] [-w TIME] [-r SIZE] [-E]\n"
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
	"    -h, --help           this help\n"
	"    A stopped process (SIGSTOP, a debugger) is waited for up to 10s to run\n"
	"    again, then snap gives up (status 5); it never continues the process.\n";

struct snap_opts {
	int pid;
	const char *output;
	bool force;
	uint64_t wait_ms;
	uint64_t rate;
	bool embed;
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
static int fetch_snapshot(int pid, int fd, unsigned char **buf, size_t *len)
{
	struct control_snap_rx rx = { 0 };
	uint64_t end = mono_ns() + (uint64_t)SNAP_TIMEOUT_MS * 1000000u;
	char *cause = NULL;
	int ret;

	if (control_snapshot_send(fd, &rx, &cause) < 0) {
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
	r = inject_agent(pid, agent, "capture=idle", INJECT_DEADLINE_MS, &res, &cause, &hint);
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

static int parse_args(int argc, char **argv, struct snap_opts *o)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "wait", required_argument, NULL, 'w' },
		{ "sample-rate", required_argument, NULL, 'r' },
		{ "embed-symbols", no_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *cause = NULL;
	int c;

	opterr = 0;
	optind = 1;
	o->wait_ms = DEFAULT_WAIT_MS;
	o->rate = 512 * 1024;
	while ((c = getopt_long(argc, argv, "+p:o:fw:r:Eh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pid(optarg, &o->pid, &cause) < 0) {
				mw_error("snap: %s", cause);
				free(cause);
				return MW_EXIT_USAGE;
			}
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
			else if (parse_duration_ms(optarg, &o->wait_ms, &cause) < 0) {
				mw_error("snap: %s", cause);
				free(cause);
				return MW_EXIT_USAGE;
			}
			break;
		case 'r':
			if (parse_size(optarg, &o->rate, &cause) < 0 || o->rate == 0) {
				mw_error("snap: %s", cause ? cause : "the sample rate must be at least 1");
				free(cause);
				return MW_EXIT_USAGE;
			}
			break;
		case 'E':
			o->embed = true;
			break;
		case 'h':
			fputs("Usage:\n", stdout);
			fputs(snap_usage, stdout);
			fputs("\nExamples:\n"
			      "  memwatch snap -p 1234                 snapshot of pid 1234 in the current directory\n"
			      "  memwatch snap -p 1234 -o before.snap  and later: memwatch diff before.snap after.snap\n"
			      "  memwatch snap -p 1234 -w 1m -E        attach, sample a minute, embed symbols\n",
			      stdout);
			return MW_EXIT_OK;
		case ':':
			mw_error("snap: option '%s' needs an argument", argv[optind - 1]);
			return MW_EXIT_USAGE;
		default:
			if (optopt)
				mw_error("snap: unknown option '-%c'", optopt);
			else
				mw_error("snap: unknown option '%s'", argv[optind - 1]);
			mw_hint("see 'memwatch snap --help'");
			return MW_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		mw_error("snap: unexpected argument '%s'", argv[optind]);
		return MW_EXIT_USAGE;
	}
	if (!o->pid) {
		mw_error("snap: which process? (-p PID)");
		mw_hint("memwatch snap -p PID [-o FILE]");
		return MW_EXIT_USAGE;
	}
	return -1;
}

/* One memwatch snap at work. */
struct snap_run {
	struct snap_opts o;
	char *path;                   /* where the snapshot goes */
	int fd;                       /* the control connection */
	struct control_status st;
	struct control_started got;
	bool started;                 /* this connection holds a capture */
};

/* Hold the capture while the snapshot is taken: one running already (another
 * memwatch's) is joined at its rate and left running, since stop only drops
 * this connection's hold. Returns how long to sample (ms), or -1 with *ret
 * set (said). */
static int64_t hold_capture(struct snap_run *sr, int *ret)
{
	char *cause = NULL;

	if (control_status(sr->fd, &sr->st, &cause) < 0 ||
	    (sr->o.wait_ms && control_start(sr->fd, sr->o.rate, 0, 0, &sr->got, &cause) < 0)) {
		*ret = request_failed(cause);
		free(cause);
		return -1;
	}
	sr->started = sr->o.wait_ms != 0;
	if (!sr->started)
		return 0;
	sr->st.capturing = true;
	if (sr->got.joined && sr->got.rate != sr->o.rate)
		control_warn_rate(sr->o.pid, &sr->got, sr->o.rate);
	/* a capture joined has sampled for a while already: only the rest of
	 * --wait is waited when another memwatch runs it (another snap may have
	 * started it a moment ago); one the agent runs on its own (preloaded with
	 * capture=now) has sampled from the start: the snapshot is taken at once */
	if (!sr->got.joined)
		return (int64_t)sr->o.wait_ms;
	return sr->got.holder_pid <= 0 || sr->got.age_ms >= sr->o.wait_ms
		       ? 0 : (int64_t)(sr->o.wait_ms - sr->got.age_ms);
}

/* Sample now, for wait_ms, on this connection (closing it drops the hold: the
 * last one stops capture and removes the hooks). 0, or an exit status (said). */
static int sample_for(struct snap_run *sr, uint64_t wait_ms)
{
	char b1[32], b2[32], *cause = NULL;
	int sig, r;

	if (sr->got.joined)
		fprintf(stderr, "memwatch: pid %d: joined the capture running for %s; sampling "
			"%s more\n", sr->o.pid, fmt_seconds(b1, sizeof b1, (double)sr->got.age_ms / 1000),
			fmt_seconds(b2, sizeof b2, (double)wait_ms / 1000));
	else
		fprintf(stderr, "memwatch: pid %d: capture started now; sampling for %s: the "
			"snapshot holds only what is allocated from now on\n", sr->o.pid,
			fmt_seconds(b2, sizeof b2, (double)sr->o.wait_ms / 1000));
	sig = wait_interruptible(wait_ms);
	if (sig) {
		mw_error("pid %d: interrupted: capture stopped, no snapshot written", sr->o.pid);
		return MW_EXIT_SIGNAL + sig;
	}
	if ((r = wait_running(sr->o.pid)) != 0)
		return r;
	if (control_status(sr->fd, &sr->st, &cause) < 0) {
		r = request_failed(cause);
		free(cause);
		return r;
	}
	return 0;
}

/* Fetch the snapshot, let the capture go, and write the file (where the RSS
 * is, by mapping, and the names of JIT frames added). 0, or an exit status
 * (said); *out: the snapshot (caller frees). */
static int fetch_and_write(struct snap_run *sr, struct snapshot **out)
{
	unsigned char *buf = NULL;
	char *cause = NULL, note[160];
	size_t len = 0;
	int r;

	if (control_python_note(&sr->st, note, sizeof note))
		fprintf(stderr, "memwatch: pid %d: %s\n", sr->o.pid, note);
	if ((r = fetch_snapshot(sr->o.pid, sr->fd, &buf, &len)) != 0)
		return r;
	if (sr->started && control_stop(sr->fd, &cause) < 0) {
		mw_warn("pid %d: stopping capture: %s", sr->o.pid, cause);
		free(cause);
		cause = NULL;
	}
	*out = snapshot_decode(buf, len, &cause);
	free(buf);
	if (!*out) {
		mw_error("pid %d: the agent sent an invalid snapshot: %s", sr->o.pid, cause);
		free(cause);
		return MW_EXIT_FAILURE;
	}
	maps_enrich_snapshot(*out, sr->o.pid);
	if ((sr->o.embed && symbolize_embed(*out, NULL, 0, &cause) < 0) ||
	    snapshot_write(*out, sr->path, sr->o.force, &cause) < 0) {
		mw_error("%s", cause);
		free(cause);
		return MW_EXIT_FAILURE;
	}
	return 0;
}

/* What the snapshot at path holds, in one line on stdout (under its path). */
static void print_summary(const struct snap_run *sr, const struct snapshot *s)
{
	uint64_t live = s->dropped_bytes, samples = 0;
	char b1[32], b2[32];

	for (size_t i = 0; i < s->nstacks; i++) {
		live += s->stacks[i].live_bytes;
		samples += s->stacks[i].live_samples;
	}
	printf("%s\n", sr->path);
	if (!sr->st.capturing) {
		printf("pid %d: capture is off, so the snapshot holds no call stacks (RSS %s)\n",
		       sr->o.pid, fmt_bytes(b1, sizeof b1, (double)s->rss_bytes));
		mw_warn("pid %d: the agent is loaded but not capturing: the snapshot is empty", sr->o.pid);
		mw_hint("without --wait 0, memwatch snap starts capture and samples for a while first");
	} else {
		printf("pid %d: %s live (estimated) in %zu stacks, %llu live samples, "
		       "sample rate %s%s\n",
		       sr->o.pid, fmt_bytes(b1, sizeof b1, (double)live), s->nstacks,
		       (unsigned long long)samples, fmt_bytes(b2, sizeof b2, (double)s->sample_rate),
		       s->dropped_stacks ? " (some stacks dropped: over the stack limit)" : "");
	}
}

int cmd_snap(int argc, char **argv)
{
	struct snap_run sr = { .fd = -1 };
	struct snapshot *s = NULL;
	char *cause = NULL;
	int64_t wait_ms;
	int r, ret = MW_EXIT_FAILURE;
	bool attached;

	r = parse_args(argc, argv, &sr.o);
	if (r >= 0)
		return r;
	if (pid_is_kernel_thread(sr.o.pid)) {
		mw_error("pid %d is a kernel thread: it has no heap to snapshot", sr.o.pid);
		return MW_EXIT_NOPROC;
	}
	/* refuse an existing file before sampling for a while, not after */
	sr.path = sr.o.output ? xstrdup(sr.o.output) : default_name(sr.o.pid);
	if (outfile_check(sr.path, sr.o.force, &cause) < 0) {
		mw_error("%s", cause);
		free(cause);
		free(sr.path);
		return MW_EXIT_FAILURE;
	}
	stop_signals_install();
	/* neither loading an agent nor asking one can be done in a stopped process */
	if ((r = wait_running(sr.o.pid)) != 0) {
		free(sr.path);
		return r;
	}
	r = ensure_agent(sr.o.pid, sr.o.wait_ms > 0, &sr.fd, &attached);
	if (r < 0) {
		free(sr.path);
		return -r;
	}
	wait_ms = hold_capture(&sr, &ret);
	if (wait_ms < 0)
		goto out;
	if (wait_ms > 0 && (ret = sample_for(&sr, (uint64_t)wait_ms)) != 0)
		goto out;
	ret = fetch_and_write(&sr, &s);
	if (ret == 0)
		print_summary(&sr, s);
out:
	free(sr.path);
	snapshot_free(s);
	if (sr.fd >= 0)
		close(sr.fd);
	return ret;
}
