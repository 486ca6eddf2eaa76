/* preload.h: why the agent memwatch run preloads is not listening in a
 * process of the command's tree (preload.c). */
#ifndef MEMWATCH_PRELOAD_H
#define MEMWATCH_PRELOAD_H

enum preload_miss {
	PRELOAD_STARTING,        /* named in its LD_PRELOAD, not loaded yet: it may still come */
	PRELOAD_IDLE,            /* loaded, but not started in this process */
	PRELOAD_SECURE,          /* AT_SECURE: the loader ignored LD_PRELOAD */
	PRELOAD_CLEARED,         /* its environment has no LD_PRELOAD naming the agent */
};

/* What /proc says of pid's agent (which does not listen). */
enum preload_miss preload_missing(int pid);
/* For people: why the agent is not there, after "pid N: ". */
const char *preload_miss_text(enum preload_miss m);
/* For the run log's event: one word. */
const char *preload_miss_name(enum preload_miss m);

#endif
