/* capture-internal.h: what the files of the capture of one watched process
 * share: its state (struct capture), why a snapshot is owed, and the calls
 * between capture.c (the states: attach, schedule, end), capture-snap.c
 * (asking for snapshots, waiting for them, storing them) and capture-report.c
 * (what is printed at the end). Not for other modules: they use capture.h. */
#ifndef MEMWATCH_CAPTURE_INTERNAL_H
#define MEMWATCH_CAPTURE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "capture.h"
#include "control.h"
#include "hotspot.h"
#include "peakhold.h"
#include "proc.h"
#include "runlog.h"
#include "snapshot.h"
#include "story.h"
#include "trigger.h"

enum capture_state {
	ST_IDLE,                 /* watching; the trigger has not fired */
	ST_CAPTURING,            /* the agent samples; snapshots on the schedule */
	ST_FAILED,               /* the agent could not be loaded or reached: watch only */
	ST_DONE,                 /* capture stopped */
};

/* Why a snapshot asked for is still owed. */
enum owed {
	OWED_NO_ANSWER,          /* the agent did not answer in time (also: not known) */
	OWED_INTERRUPTED,        /* a signal cut the wait short */
	OWED_GONE,               /* the process is gone */
	OWED_STOPPED,            /* the process is stopped (SIGSTOP, job control) */
	OWED_TRACED,             /* ... by a debugger */
	OWED_FROZEN,             /* its cgroup is frozen */
};

/* The high-water mark of the live heap: the agent marks a peak when its
 * estimate passes the last one by a margin; the watch then takes a peak
 * snapshot, held in memory (peakhold.h) and written to its one file only once
 * the heap came down from it, and the report shows it when it is well above
 * the end. */
struct peak_state {
	bool off;                /* the agent cannot say (older than "peak") */
	bool rx;                 /* the snapshot in flight is a peak snapshot */
	uint64_t seen;           /* the agent's count of peaks last seen */
	char *path;              /* the snapshot with the most live heap (the held one's
				  * name while held), */
	double t;                /*   taken then, */
	uint64_t rss, live;      /*   with this RSS and live heap */
	char *file;              /* the peak snapshot's own file, once written */
	struct peak_hold hold;   /* the peak taken, not written yet: when held, path
				  * names it */
};

/* Set by the watch when the process died while its cgroup's OOM kills rose. */
struct oom_note {
	bool killed;
	double t;
	uint64_t limit;          /* bytes; 0 when unknown */
};

/* The capture of one process: capture.h's struct capture. */
struct capture {
	struct capture_opts o;
	int pid;
	struct runlog *log;
	enum capture_state state;
	struct trigger_state trig;
	int fd;                  /* control connection; owns the capture */
	unsigned nsnaps;         /* snapshots written */
	double first_t;          /* when capture was first wanted (preloaded: retried until then + grace) */
	bool wanted;
	double last_t;           /* time and RSS (bytes) at the last snapshot */
	uint64_t last_rss;
	uint64_t rss;            /* RSS (bytes) at the latest sample */
	char *first_snap, *last_snap;
	char *exit_snap;         /* what was never freed, written by the agent at exit */
	unsigned lost;           /* snapshots that could not be written */
	bool unread_said;        /* modules that cannot be read were named */
	bool stopped;            /* the watch saw the process stopped at this sample */
	bool deferred;           /* a snapshot (or the attach) waits for it to run again */
	double due_t;            /*   since then */
	struct control_snap_rx rx;   /* a snapshot request not answered yet */
	double rx_t;             /*   sent then */
	bool rx_final;           /*   the one at the end */
	bool rx_late;            /*   its lateness was logged */
	enum owed rx_why;        /*   why it is owed */
	struct hotspot jvm;      /* a HotSpot JVM asked for its perf map */
	char *perfmap_here;      /* its perf map, readable once it is gone */
	char *js_note;           /* node: the last thing said about its JavaScript objects */
	double call_t;           /* the watch's time at this call, */
	uint64_t call_ns;        /*   and the monotonic clock then */
	uint64_t stored_live;    /* live heap of the snapshot store_snapshot wrote last */
	uint64_t last_live;      /* ... of the last snapshot (the report's end) */
	double last_snap_t;      /* when the last snapshot came */
	struct peak_state peak;  /* the high-water mark */
	struct rss_story story;  /* RSS from /proc, told when capture failed */
	char *failed;            /* why it failed */
	struct oom_note oom;     /* the process was killed by the OOM killer */
	uint64_t rate;           /* the sample rate in force (a shared capture's) */
	bool shared;             /* joined another memwatch's capture */
	bool rx_peek;            /* the request in flight is a view's (capture_peek) */
	uint64_t peek_ns;        /*   sent then */
	uint64_t peek_cpu_ns;    /*   the agent thread's CPU time then (0: unknown) */
	struct snapshot *peeked; /* a view's snapshot come in, not taken yet */
	double peek_wall_ms, peek_cpu_ms;   /* what it cost */
};

/* How long a control request may take before the agent is considered stuck. */
#define CONTROL_TIMEOUT_MS 10000
/* How long one sample waits for a snapshot (longer ones are received at the
 * next samples: the watch goes on meanwhile), and for one still owed. */
#define SNAP_WAIT_MS 5000
#define SNAP_RESUME_MS 250
/* How long the end waits for the last snapshot. */
#define FINAL_WAIT_MS 3000
/* The process is looked at this often while a snapshot is waited for. */
#define SNAP_SLICE_MS 200
/* How long a preloaded agent may take to come up in a starting program. */
#define PRELOAD_GRACE_S 10.0

/* capture.c: give up on capture for this process, saying why once (an event
 * of kind kind); watching goes on. */
void capture_fail(struct capture *c, double t, const char *kind, const char *cause);
/* capture.c: whether the agent may be asked (or loaded) now: not while the
 * process is stopped, traced or frozen; what is due then is put off (an event
 * what, once) and done when it runs again. */
bool may_ask(struct capture *c, double t, const char *what);

/* capture-snap.c: why a snapshot is owed, as the cause word of a
 * "snapshot-failed" event, and for people after "no final snapshot: ". */
const char *owed_name(enum owed o);
const char *owed_text(enum owed o);
/* Why a process that does not run cannot answer (run is not PROC_RUNNING). */
enum owed owed_of_run(enum proc_run run);
/* The watch's time now, for events written after a wait. */
double capture_now(const struct capture *c);
/* Wait up to wait_ms for the answer to the snapshot request in flight: 1
 * when it came (stored), 0 when it is still owed, -1 when the capture failed. */
int snapshot_wait(struct capture *c, int wait_ms);
/* Ask the agent for a snapshot and wait for it a while (snapshot_wait). */
int take_snapshot(struct capture *c, double t, bool final, int wait_ms);
/* Ask the agent for its high-water mark; take a peak snapshot when it is new
 * and well above every snapshot's live heap. */
void peak_check(struct capture *c, double t);
/* The held peak, with the live heap now at t: written once the heap came
 * down from it by its margin; at the end (final) also when no snapshot came
 * after it (after false), and otherwise dropped. */
void peak_settle(struct capture *c, double t, uint64_t live, bool after, bool final);
/* Store the snapshot the agent of a program memwatch run started wrote at its
 * exit (o.exit_fd). */
void take_exit_snapshot(struct capture *c, double t);

/* capture-report.c: the line that says the process was killed by the OOM
 * killer, and the report of what grew, at the end. */
void print_oom(struct capture *c);
void print_report(struct capture *c);

#endif
