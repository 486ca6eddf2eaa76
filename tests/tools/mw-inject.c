/* mw-inject.c: test driver for src/inject.c. Loads an agent (or a stand-in)
 * into a process the way the CLI does and prints what happened, with the
 * CLI's messages and exit statuses (0 ok, 4 no such process, 5 cannot attach). */
#include "config.h"
#include "inject.h"
#include "util.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
	fputs("usage: mw-inject [--deadline MS] PID AGENT [OPTIONS]\n"
	      "       mw-inject --loaded PID\n", stderr);
	exit(MW_EXIT_USAGE);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "deadline", required_argument, NULL, 'd' },
		{ "loaded", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned deadline_ms = 5000;
	bool loaded = false;
	char *cause = NULL, *hint = NULL;
	struct inject_result res;
	int c, pid;

	while ((c = getopt_long(argc, argv, "d:l", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			deadline_ms = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'l':
			loaded = true;
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
	return MW_EXIT_OK;
}
