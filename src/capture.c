/* capture.c: the capture of one watched process (placeholder: watch only). */
#include "config.h"

#include <stdlib.h>

#include "capture.h"
#include "util.h"

struct capture {
	int pid;
};

void capture_opts_init(struct capture_opts *o)
{
	*o = (struct capture_opts){
		.mode = CAPTURE_GROWTH,
		.trigger = { .kind = TRIGGER_ABSOLUTE, .bytes = 64u << 20 },
		.snap_every = { .kind = STEP_BYTES, .bytes = 32u << 20 },
		.max_snaps = 10,
		.sample_rate = 512u << 10,
		.max_depth = 64,
		.report = true,
	};
}

struct capture *capture_new(const struct capture_opts *o, int pid, struct runlog *log)
{
	struct capture *c = xcalloc(1, sizeof *c);
	(void)o;
	(void)log;
	c->pid = pid;
	return c;
}

void capture_sample(struct capture *c, double t, const struct mem_sample *s)
{
	(void)c;
	(void)t;
	(void)s;
}

void capture_end(struct capture *c, double t, const char *reason, bool process_gone)
{
	(void)c;
	(void)t;
	(void)reason;
	(void)process_gone;
}

void capture_free(struct capture *c)
{
	free(c);
}
