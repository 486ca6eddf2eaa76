/* capture.h: the capture of one watched process: the trigger, loading and
 * driving the agent, the snapshot schedule, the report at the end. The watch loop
 * (watch.c) calls these for every process it watches. */
#ifndef MEMWATCH_CAPTURE_H
#define MEMWATCH_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "runlog.h"
#include "trigger.h"

enum capture_mode {
	CAPTURE_GROWTH,          /* when the trigger fires (default) */
	CAPTURE_NOW,             /* at once */
	CAPTURE_NEVER,           /* watch only */
};

struct capture_opts {
	enum capture_mode mode;
	struct trigger_rule trigger;     /* --trigger (default +64MiB) */
	struct snap_step snap_every;     /* --snap-every (default +32MiB) */
	unsigned max_snaps;              /* --max-snaps (default 10; the last one at the end is extra) */
	uint64_t sample_rate;            /* --sample-rate (default 512KiB) */
	unsigned max_depth;              /* --max-depth (default 64) */
	uint64_t max_stacks;             /* --max-stacks (0: the agent's default) */
	bool preloaded;                  /* memwatch run: the agent is in already */
	const char *refused;             /* memwatch run: why the agent cannot be in exit_pid
					  * (its program cannot take it), or NULL */
	bool report;                     /* print the growth report at the end (default yes) */
	bool force;                      /* overwrite existing snapshot files */
	const char *snap_prefix;         /* snapshot names: <prefix>.<pid>.<n>.snap */
	int exit_fd;                     /* memwatch run: the file the agent of exit_pid */
	int exit_pid;                    /*   writes its snapshot into at exit (-1/0: none) */
	bool referrers;                  /* --referrers: a search with the final snapshot */
	uint64_t referrers_limit_ms;     /* --referrers-limit (default 1 s) */
	uint64_t referrers_objects;      /* --referrers-objects */
};

/* Defaults for every field. */
void capture_opts_init(struct capture_opts *o);

struct capture;
/* A capture for pid, logging its events into log. Never NULL (with mode NEVER it
 * does nothing). */
struct capture *capture_new(const struct capture_opts *o, int pid, struct runlog *log);
/* Whether the watch saw the process stopped (SIGSTOP, a debugger) at this
 * sample: the agent is not asked then; what is due waits for it to run. */
void capture_set_stopped(struct capture *c, bool stopped);
/* Feed one sample of this process (t: seconds since start). */
void capture_sample(struct capture *c, double t, const struct mem_sample *s);
/* Why the watch of a process ends. */
enum end_reason {
	END_DURATION,            /* --duration elapsed */
	END_SIGNAL,              /* SIGINT, SIGTERM, SIGHUP */
	END_EXITED,              /* the process (memwatch run: the command) exited */
	END_ERROR,               /* the watch failed (/proc, the log); said already */
	END_QUIT,                /* memwatch top: the user quit */
};
/* The word for it in run.log's "end" and "capture-stop" events. */
const char *end_reason_name(enum end_reason r);
/* The watch ends: a last snapshot when the process is still there, stop
 * capture, remove hooks, print the report. Returns 0, or -1 when snapshots
 * could not be written (said, unless reason is END_ERROR). */
int capture_end(struct capture *c, double t, enum end_reason reason, bool process_gone);
void capture_free(struct capture *c);
/* The process died at t while its memory cgroup's count of OOM kills rose:
 * the end says it was killed by the OOM killer, at limit (bytes, 0 unknown),
 * and how close the last snapshot came. Before capture_end. */
void capture_oom_killed(struct capture *c, double t, uint64_t limit);
/* The state of c in a word ("off", "idle", "capturing", "failed", "stopped")
 * and the snapshots it wrote, for the metrics. */
const char *capture_state_name(const struct capture *c);
unsigned capture_snapshots(const struct capture *c);
/* The sample rate in force once capturing (a shared capture's), 0 before;
 * whether the capture is another memwatch's, joined. */
uint64_t capture_rate(const struct capture *c);
bool capture_shared(const struct capture *c);

/* What a view's snapshot cost: wall time from the request to the last byte,
 * and the CPU time of the agent's thread in the target meanwhile (-1: not
 * known). */
struct capture_peek_cost {
	double wall_ms, cpu_ms;
};
struct snapshot;
/* memwatch top: a snapshot for the view, asked of the agent while capturing
 * when no request is in flight, waited for up to wait_ms (t: the watch's time
 * now). It is not one of the capture's: not written, no event. With
 * referrers, the request asks for a referrer search too (CPython), bounded
 * by the options' referrers_limit_ms and referrers_objects. A reply that
 * comes later is received by capture_sample and given at the next call, so
 * the snapshot returned may answer an earlier request: its has_refs says
 * whether it carries a search.
 * Returns the snapshot (caller frees with snapshot_free; enriched with the
 * process's mappings) and what it cost, or NULL when none is ready. */
struct snapshot *capture_peek(struct capture *c, double t, int wait_ms, bool referrers,
			      struct capture_peek_cost *cost);

#endif
