/* snap.c: memwatch snap (placeholder until implemented). */
#include "config.h"
#include "commands.h"
#include "util.h"

const char snap_usage[] = "  memwatch snap ...\n";

int cmd_snap(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	mw_error("snap: not implemented yet");
	return MW_EXIT_FAILURE;
}
