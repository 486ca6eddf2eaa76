/* main.c: memwatch's entry point: pick the command and hand over. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "util.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
} commands[] = {
	{ "run", cmd_run, run_usage },
	{ "snap", cmd_snap, snap_usage },
	{ "diff", cmd_diff, diff_usage },
	{ "show", cmd_show, show_usage },
	{ "plot", cmd_plot, plot_usage },
	{ "report", cmd_report, report_usage },
	{ "top", cmd_top, top_usage },
	{ "watch", cmd_watch, watch_usage },
};

static const char intro[] =
	"memwatch: find out why a process's memory grows\n"
	"\n"
	"Watches a process's memory from the outside at almost no cost, and when it\n"
	"really grows loads a sampling agent into it that records the call stacks of\n"
	"allocations; snapshots are diffed by call stack and symbolized.\n"
	"\n";

static const char outro[] =
	"\n"
	"Common options:\n"
	"  -h, --help       this help (memwatch COMMAND --help: one command's)\n"
	"  -V, --version    print the version\n"
	"\n"
	"Examples:\n"
	"  memwatch -p 1234 -i 1s              watch pid 1234, capture when it grows\n"
	"  memwatch top -p 1234 --capture now  what grows in pid 1234, live\n"
	"  memwatch run -- ./server 8080       start a program under memwatch\n"
	"  memwatch snap -p 1234 -o now.snap   heap snapshot of pid 1234 now\n"
	"  memwatch diff a.snap b.snap         which call stacks grew\n"
	"  memwatch show a.snap                what one snapshot holds\n"
	"  memwatch plot run.log > mem.png     draw the memory of a run\n"
	"  memwatch diff -F svg -o g.svg a.snap b.snap   flame graph of the growth\n"
	"  memwatch report -o run.html run.log  one page for a run: plot, table, flame graph\n"
	"\n"
	"Options may follow operands (memwatch show a.snap --depth 1); in memwatch run,\n"
	"everything from the command on is the command's.\n"
	"\n"
	"Output files (-o, show -E, snapshots, the run log): a regular file is written\n"
	"aside and renamed into place (an existing one only with --force); a symbolic\n"
	"link is followed and stays; a device, terminal or FIFO is written as it is.\n"
	"\n"
	"Exit status:\n"
	"  0    success (the watch's duration elapsed, the report or file was written)\n"
	"  1    run-time failure (cannot write output, I/O error, agent error)\n"
	"  2    usage error (unknown option, bad interval, size or trigger)\n"
	"  3    an input file is malformed (snapshot, run.log)\n"
	"  4    no such process, or it cannot be read, or a kernel thread\n"
	"  5    the agent could not be loaded or reached (ptrace refused, no safe point)\n"
	"  6    an external program is missing or failed (gnuplot)\n"
	"  7    every watched process exited during the watch\n"
	"  128+N  ended by signal N (130: SIGINT, 143: SIGTERM); memwatch run exits\n"
	"       with the command's own status (0 when -d ended the watch first)\n";

void usage_all(void)
{
	size_t i;
	fputs(intro, stdout);
	fputs("Usage:\n", stdout);
	/* watch first: it is the default command */
	fputs(watch_usage, stdout);
	for (i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		if (commands[i].run == cmd_watch)
			continue;
		fputc('\n', stdout);
		fputs(commands[i].usage, stdout);
	}
	fputs(outro, stdout);
}

/* A failed write to stdout (a full disk, a closed pipe) is an error, not silence. */
static void close_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		if (errno == EPIPE)
			_exit(MW_EXIT_FAILURE);
		fprintf(stderr, "memwatch: write error on standard output: %s\n", strerror(errno));
		_exit(MW_EXIT_FAILURE);
	}
}

int main(int argc, char **argv)
{
	size_t i;

	atexit(close_stdout);
	/* A closed control socket or pipe, or a file size limit, must come back as
	 * an error from write() that is reported, not kill memwatch mid-write. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	if (argc >= 2) {
		if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			usage_all();
			return MW_EXIT_OK;
		}
		if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
			printf("memwatch %s\n", PACKAGE_VERSION);
			return MW_EXIT_OK;
		}
		for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
			if (strcmp(argv[1], commands[i].name) == 0)
				return commands[i].run(argc - 1, argv + 1);
		if (argv[1][0] != '-') {
			mw_error("unknown command '%s'", argv[1]);
			mw_hint("commands: run, top, snap, diff, show, plot, report; or -p PID to watch (memwatch --help)");
			return MW_EXIT_USAGE;
		}
	}
	return cmd_watch(argc, argv);
}
