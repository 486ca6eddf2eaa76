/* watch.c: memwatch watch (placeholder until implemented). */
#include "config.h"
#include "commands.h"
#include "util.h"

const char watch_usage[] = "  memwatch watch ...\n";

int cmd_watch(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	mw_error("watch: not implemented yet");
	return MW_EXIT_FAILURE;
}
