/* trigger.h: when memory growth is real, and when to take the next snapshot.
 * Pure policy over the RSS series: no I/O, unit-tested. */
#ifndef MEMWATCH_TRIGGER_H
#define MEMWATCH_TRIGGER_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

enum trigger_kind {
	TRIGGER_ABSOLUTE,        /* "+64MiB": RSS at least this much above the baseline */
	TRIGGER_RELATIVE,        /* "+20%": RSS at least this share above the baseline */
	TRIGGER_RATE,            /* "10MiB/min": sustained growth rate at least this */
};

struct trigger_rule {
	enum trigger_kind kind;
	uint64_t bytes;          /* ABSOLUTE */
	double percent;          /* RELATIVE */
	double bytes_per_s;      /* RATE */
};

/* Parse "+64MiB", "+20%", "10MiB/min" (also /s, /h). 0 or -1 with *cause. */
int trigger_parse(const char *s, struct trigger_rule *r, char **cause);
/* "+64 MiB over baseline" etc. for events and messages, into buf. */
const char *trigger_describe(const struct trigger_rule *r, char *buf, size_t n);

/* A window of recent (time, RSS) samples for a sustained growth rate: at
 * least 5 points and, beyond that, no more than 60 s, points closer than 0.9 s
 * to the previous one left out (a ring buffer). */
struct growth_window {
	double t[64];
	double v[64];
	unsigned n, head;
};
void growth_window_push(struct growth_window *w, double t, double v);
/* The least-squares slope of the window in bytes per second; false until it
 * spans 30 s. */
bool growth_window_slope(const struct growth_window *w, double *slope);

/* A process younger than this at its first sample is starting: its baseline
 * waits for its start-up growth to settle (trigger_starting). */
#define TRIGGER_STARTUP_S 3.0

/* The evaluation state of one process's trigger. */
struct trigger_state {
	struct trigger_rule rule;
	bool have_baseline;
	uint64_t baseline;       /* bytes: RSS at the first sample (see trigger_starting) */
	bool starting;           /* the baseline waits for the start-up to settle */
	bool busy;               /*   a thread of it runs, waits to run or waits
				  *   for the disk (trigger_busy) */
	bool seen;               /*   a sample seen: */
	double first_t;          /*   the first's time */
	uint64_t prev;           /*   the latest's RSS */
	bool fired;
	struct growth_window win; /* rate rules */
};

void trigger_init(struct trigger_state *st, const struct trigger_rule *r);
/* The process has just started (its loader, an interpreter importing its
 * modules): its baseline is the RSS at the first sample that grew by less than
 * a sixteenth over the one before while none of its threads was busy, or at
 * the first sample TRIGGER_STARTUP_S after the first, rather than the RSS at
 * its exec. (On a loaded machine a start-up that waits for a processor or
 * the disk stops growing for a while: that is not its end.) */
void trigger_starting(struct trigger_state *st);
/* Whether the start-up's end is still awaited: trigger_busy is wanted before
 * each trigger_update. */
static inline bool trigger_awaits_start(const struct trigger_state *st)
{
	return st->starting && !st->have_baseline;
}
/* At the next sample, a thread of the process is busy (proc_busy). */
void trigger_busy(struct trigger_state *st, bool busy);
/* Feed one sample (t seconds, RSS bytes). Returns true exactly once: when the
 * rule first holds. */
bool trigger_update(struct trigger_state *st, double t, uint64_t rss);

/* The snapshot schedule after the trigger: "+32MiB" (each further growth step
 * over the RSS at the previous snapshot) or "5m" (each interval of time). */
struct snap_step {
	enum { STEP_BYTES, STEP_TIME } kind;
	uint64_t bytes;
	uint64_t ms;
};
/* Parse "+32MiB" (growth) or "30s"/"5m" (time). 0 or -1 with *cause. */
int snap_step_parse(const char *s, struct snap_step *st, char **cause);
/* True when a snapshot is due: now t (s), rss (bytes), and the time and RSS at the
 * previous snapshot. */
bool snap_step_due(const struct snap_step *st, double t, uint64_t rss, double last_t,
		   uint64_t last_rss);

#endif
