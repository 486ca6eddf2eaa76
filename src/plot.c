/* plot.c: memwatch plot (placeholder until implemented). */
#include "config.h"
#include "commands.h"
#include "util.h"

const char plot_usage[] = "  memwatch plot ...\n";

int cmd_plot(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	mw_error("plot: not implemented yet");
	return MW_EXIT_FAILURE;
}
