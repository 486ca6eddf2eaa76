/* report.c: memwatch diff and show (placeholder until implemented). */
#include "config.h"
#include "commands.h"
#include "util.h"

const char diff_usage[] = "  memwatch diff ...\n";
const char show_usage[] = "  memwatch show ...\n";

int cmd_diff(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	mw_error("diff: not implemented yet");
	return MW_EXIT_FAILURE;
}

int cmd_show(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	mw_error("show: not implemented yet");
	return MW_EXIT_FAILURE;
}
