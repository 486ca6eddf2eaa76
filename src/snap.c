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
#include "snapshot.h"
#include "util.h"

#define SNAP_TIMEOUT_MS 30000

const char snap_usage[] =
	"  memwatch snap -p PID [-o FILE] [-f]\n"
	"    take a heap snapshot of PID now, from the memwatch agent running in it\n"
	"    -p, --pid PID        the process (PID or /proc/PID)\n"
	"    -o, --output FILE    where to write it (default: memwatch-PID-TIME.snap)\n"
	"    -f, --force          overwrite FILE if it exists\n"
	"    -h, --help           this help\n";

struct snap_opts {
	int pid;
	const char *output;
	bool force;
};

/* Connect to the agent of pid. This is the one place that knows how an agent
 * comes to be there; today it must be running already (memwatch run, or a
 * watch that attached it). Returns the connection, or an exit status < 0
 * negated, with the error said. */
static int ensure_agent(int pid, int *fd)
{
	char *cause = NULL;
	int r = control_connect(pid, SNAP_TIMEOUT_MS, &cause);
	if (r >= 0) {
		*fd = r;
		return 0;
	}
	mw_error("%s", cause);
	free(cause);
	if (r == -ESRCH)
		return -MW_EXIT_NOPROC;
	if (r == -ECONNREFUSED || r == -ENOENT)
		mw_hint("start the program with 'memwatch run', or watch it with 'memwatch -p %d'",
			pid);
	return -MW_EXIT_ATTACH;
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *cause = NULL;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:o:fh", longopts, NULL)) != -1) {
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
		case 'h':
			fputs("Usage:\n", stdout);
			fputs(snap_usage, stdout);
			fputs("\nExamples:\n"
			      "  memwatch snap -p 1234                 snapshot of pid 1234 in the current directory\n"
			      "  memwatch snap -p 1234 -o before.snap  and later: memwatch diff before.snap after.snap\n",
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

int cmd_snap(int argc, char **argv)
{
	struct snap_opts o = { 0 };
	struct control_status st;
	struct snapshot *s = NULL;
	unsigned char *buf = NULL;
	size_t len = 0, i;
	char *cause = NULL, *path = NULL;
	char b1[32];
	uint64_t live = 0, samples = 0;
	int fd = -1, r, ret = MW_EXIT_FAILURE;

	r = parse_args(argc, argv, &o);
	if (r >= 0)
		return r;
	r = ensure_agent(o.pid, &fd);
	if (r < 0)
		return -r;
	if (control_status(fd, &st, &cause) < 0 || control_snapshot(fd, &buf, &len, &cause) < 0) {
		mw_error("%s", cause);
		ret = MW_EXIT_ATTACH;
		goto out;
	}
	s = snapshot_decode(buf, len, &cause);
	if (!s) {
		mw_error("pid %d: the agent sent an invalid snapshot: %s", o.pid, cause);
		goto out;
	}
	path = o.output ? xstrdup(o.output) : default_name(o.pid);
	if (snapshot_write_bytes(buf, len, path, o.force, &cause) < 0) {
		mw_error("%s", cause);
		goto out;
	}
	for (i = 0; i < s->nstacks; i++) {
		live += s->stacks[i].live_bytes;
		samples += s->stacks[i].live_samples;
	}
	live += s->dropped_bytes;
	printf("%s\n", path);
	if (!st.capturing) {
		printf("pid %d: capture is off, so the snapshot holds no call stacks (RSS %s)\n", o.pid,
		       fmt_bytes(b1, sizeof b1, (double)s->rss_bytes));
		mw_warn("pid %d: the agent is loaded but not capturing: the snapshot is empty", o.pid);
		mw_hint("capture starts with 'memwatch run' or when 'memwatch -p %d' sees growth", o.pid);
	} else {
		char b2[32];
		printf("pid %d: %s live (estimated) in %zu stacks, %llu live samples, "
		       "sample rate %s%s\n",
		       o.pid, fmt_bytes(b1, sizeof b1, (double)live), s->nstacks,
		       (unsigned long long)samples, fmt_bytes(b2, sizeof b2, (double)s->sample_rate),
		       s->dropped_stacks ? " (some stacks dropped: over the stack limit)" : "");
	}
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
