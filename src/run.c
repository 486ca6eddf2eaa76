/* run.c: memwatch run (placeholder until the watch loop lands). */
#include "config.h"
#include "commands.h"
#include "util.h"

const char run_usage[] = "  memwatch run ...\n";

int cmd_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	mw_error("run: not implemented yet");
	return MW_EXIT_FAILURE;
}
