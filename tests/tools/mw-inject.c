/* mw-inject.c: test driver for src/inject.c. Loads an agent (or a stand-in)
 * into a process the way the CLI does and prints what happened, with the
 * CLI's messages and exit statuses (0 ok, 4 no such process, 5 cannot attach).
 * With --control it then drives one capture through the control protocol:
 * start, snapshot, stop. */
#include "config.h"
#include "control.h"
#include "inject.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One capture through the agent's socket: start at rate, take a snapshot,
 * stop. The agent's control thread may still be starting: connecting is
 * retried for a while. Returns 0 or an exit status. */
static int control_cycle(int pid, uint64_t rate, uint64_t t0)
{
	char *cause = NULL;
	unsigned char *buf = NULL;
	size_t len = 0;
	int fd = -1;

	for (int i = 0; i < 200; i++) {
		fd = control_connect(pid, 20000, &cause);
		if (fd >= 0 || (fd != -ECONNREFUSED && fd != -ENOENT))
			break;
		free(cause);
		cause = NULL;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (fd < 0)
		goto failed;
	if (control_start(fd, rate, 32, 0, NULL, &cause) < 0)
		goto failed;
	/* from the decision to attach until samples are being taken */
	printf("capture_ms=%.3f\n", (double)(mono_ns() - t0) / 1e6);
	if (control_snapshot(fd, &buf, &len, &cause) < 0 || control_stop(fd, &cause) < 0)
		goto failed;
	close(fd);
	printf("snapshot_bytes=%zu\n", len);
	free(buf);
	return MW_EXIT_OK;
failed:
	mw_error("%s", cause ? cause : "control failed");
	free(cause);
	free(buf);
	if (fd >= 0)
		close(fd);
	return MW_EXIT_ATTACH;
}

static void usage(void)
{
	fputs("usage: mw-inject [--deadline MS] [--control RATE] PID AGENT [OPTIONS]\n"
	      "       mw-inject --loaded PID\n", stderr);
	exit(MW_EXIT_USAGE);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "deadline", required_argument, NULL, 'd' },
		{ "loaded", no_argument, NULL, 'l' },
		{ "control", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned deadline_ms = 5000;
	uint64_t control_rate = 0;
	bool loaded = false;
	char *cause = NULL, *hint = NULL;
	struct inject_result res;
	int c, pid;

	while ((c = getopt_long(argc, argv, "d:lc:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			deadline_ms = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'l':
			loaded = true;
			break;
		case 'c':
			control_rate = strtoull(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (optind >= argc || parse_pid(argv[optind], &pid, &cause) < 0) {
		if (cause)
			mw_error("%s", cause);
		usage();
	}
	if (loaded) {
		bool l = inject_agent_loaded(pid);
		printf("loaded=%d\n", l);
		return l ? 0 : 1;
	}
	if (optind + 1 >= argc)
		usage();
	stop_signals_install();
	uint64_t t0 = mono_ns();
	int r = inject_agent(pid, argv[optind + 1], optind + 2 < argc ? argv[optind + 2] : "",
			     deadline_ms, &res, &cause, &hint);
	if (r < 0) {
		mw_error("pid %d: cannot attach: %s", pid, cause);
		if (hint)
			mw_hint("%s", hint);
		free(cause);
		free(hint);
		return r == -INJECT_ENOPROC ? MW_EXIT_NOPROC : MW_EXIT_ATTACH;
	}
	printf("ok tid=%d attempts=%u pause_ms=%.3f total_ms=%.3f already_loaded=%d\n", res.tid,
	       res.attempts, res.pause_ms, res.total_ms, res.already_loaded);
	fflush(stdout);
	if (control_rate)
		return control_cycle(pid, control_rate, t0);
	return MW_EXIT_OK;
}
