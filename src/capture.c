/* capture.c: the capture of one watched process. Decides when growth is real
 * (trigger.c), gets the agent into the process (preloaded, found, or injected),
 * drives it over the control socket, takes snapshots on the schedule and at the
 * end, and prints what grew. Every decision is an event in run.log. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "maps.h"
#include "peakhold.h"
#include "perfmap.h"
#include "container.h"
#include "control.h"
#include "hotspot.h"
#include "inject.h"
#include "preload.h"
#include "progkind.h"
#include "proc.h"
#include "report.h"
#include "snapshot.h"
#include "story.h"
#include "symbolize.h"
#include "util.h"

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

/* The cause word of a "snapshot-failed" event. */
static const char *owed_name(enum owed o)
{
	static const char *const names[] = {
		[OWED_NO_ANSWER] = "no_answer", [OWED_INTERRUPTED] = "interrupted",
		[OWED_GONE] = "gone", [OWED_STOPPED] = "stopped", [OWED_TRACED] = "traced",
		[OWED_FROZEN] = "frozen",
	};
	return names[o];
}

/* Why, for people, after "no final snapshot: ". */
static const char *owed_text(enum owed o)
{
	switch (o) {
	case OWED_NO_ANSWER: return "the agent did not answer in time";
	case OWED_INTERRUPTED: return "interrupted";
	case OWED_GONE: return "the process is gone";
	case OWED_TRACED:
		return "the process is stopped by a debugger; capture stops when it runs again";
	case OWED_FROZEN: return "the process is frozen; capture stops when it runs again";
	default: return "the process is stopped; capture stops when it runs again";
	}
}

/* Why a process that does not run cannot answer (run is not PROC_RUNNING). */
static enum owed owed_of_run(enum proc_run run)
{
	return run == PROC_TRACED ? OWED_TRACED : run == PROC_FROZEN ? OWED_FROZEN
	       : run == PROC_GONE ? OWED_GONE : OWED_STOPPED;
}

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
		.exit_fd = -1,
		.referrers_limit_ms = MW_REFERRERS_LIMIT_MS,
		.referrers_objects = MW_REFERRERS_OBJECTS,
	};
}

struct capture *capture_new(const struct capture_opts *o, int pid, struct runlog *log)
{
	struct capture *c = xcalloc(1, sizeof *c);
	c->o = *o;
	c->pid = pid;
	c->log = log;
	c->fd = -1;
	c->state = o->mode == CAPTURE_NEVER ? ST_DONE : ST_IDLE;
	trigger_init(&c->trig, &o->trigger);
	/* a program memwatch run just started (its command, or a program of
	 * its tree started by exec): its baseline is its RSS once started, not
	 * at its exec. A worker just forked starts from its parent's RSS, and
	 * a process memwatch -p finds young is taken as it is: either may leak
	 * from its start. */
	if (o->mode == CAPTURE_GROWTH && o->preloaded &&
	    (pid == o->exit_pid || proc_runs_own_program(pid))) {
		double age = proc_age_s(pid);
		if (age >= 0 && age < TRIGGER_STARTUP_S)
			trigger_starting(&c->trig);
	}
	return c;
}

/* The name of snapshot n: beside the run log, "<log without .log>.<n>.snap", with
 * the pid added when the log's name does not end in it already (several
 * processes in one log). */
static char *snap_name(const struct capture *c, unsigned n, const char *suffix)
{
	const char *lp = c->o.snap_prefix ? c->o.snap_prefix : runlog_path(c->log);
	size_t len = strlen(lp);
	char own[24];
	int olen;

	if (!c->o.snap_prefix && len > 4 && strcmp(lp + len - 4, ".log") == 0)
		len -= 4;
	olen = snprintf(own, sizeof own, "-%d", c->pid);
	/* n 0: the peak snapshot, "<log>.peak.snap" (suffix "-peak") */
	if (n == 0 && len >= (size_t)olen && memcmp(lp + len - olen, own, (size_t)olen) == 0)
		return xasprintf("%.*s.peak.snap", (int)len, lp);
	if (n == 0)
		return xasprintf("%.*s.%d.peak.snap", (int)len, lp, c->pid);
	if (len >= (size_t)olen && memcmp(lp + len - olen, own, (size_t)olen) == 0)
		return xasprintf("%.*s.%u%s.snap", (int)len, lp, n, suffix);
	return xasprintf("%.*s.%d.%u%s.snap", (int)len, lp, c->pid, n, suffix);
}

/* Give up on capture for this process, saying why once; watching goes on. */
static void capture_fail(struct capture *c, double t, const char *kind, const char *cause)
{
	char *esc = runlog_encode(cause);
	runlog_event(c->log, t, c->pid, kind, "cause=%s", esc);
	free(esc);
	free(c->failed);
	c->failed = xstrdup(cause);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = ST_FAILED;
}

/* Ask a HotSpot JVM to write its perf map, just before the map is read for a
 * snapshot (bounded: HOTSPOT_TIMEOUT_MS); one that cannot be asked is said
 * once, with the command that would do it, and capture goes on with native
 * names. Nothing is done for any other process. */
static void ask_jvm(struct capture *c, double t)
{
	char *why = NULL, *esc;
	bool first = !c->jvm.answered;
	int r = hotspot_perfmap(&c->jvm, c->pid, HOTSPOT_TIMEOUT_MS, &why);

	if (r > 0 && first)
		runlog_event(c->log, t, c->pid, "jvm-perfmap", "ms=%.1f signalled=%d", c->jvm.ms,
			     c->jvm.signalled);
	if (r >= 0)
		return;
	if (!c->jvm.said) {
		c->jvm.said = true;
		fprintf(stderr, "memwatch: pid %d: %s\n", c->pid, why);
		esc = runlog_encode(why);
		runlog_event(c->log, t, c->pid, "jvm-perfmap-failed", "cause=%s", esc);
		free(esc);
	}
	free(why);
}

/* Check the snapshot bytes the agent sent and store them as the next snapshot,
 * named with suffix ("", "-final", "-exit"), with an event whose detail ends in
 * tag. Returns the path written (caller frees), or NULL when it was unusable or
 * could not be written (said, and logged). */
static char *store_snapshot(struct capture *c, double t, const unsigned char *buf, size_t len,
			    const char *suffix, const char *tag)
{
	char *cause = NULL, *path;
	struct snapshot *s = snapshot_decode(buf, len, &cause);
	uint64_t live = 0;
	/* the peak snapshot is held (peak_settle writes it), to one file outside
	 * the numbered ones */
	bool peak = strcmp(suffix, "-peak") == 0;

	if (!s) {
		mw_warn("pid %d: the agent sent a bad snapshot: %s", c->pid, cause);
		runlog_event(c->log, t, c->pid, "snapshot-failed", "cause=bad_snapshot");
		free(cause);
		return NULL;
	}
	path = snap_name(c, peak ? 0 : c->nsnaps + 1, suffix);
	/* a JVM's names of its compiled methods, fresh (not at exit: it is
	 * ending, and its map of a moment ago is as good) */
	if (strcmp(suffix, "-exit"))
		ask_jvm(c, t);
	/* where the RSS is, by mapping, and the names of JIT frames */
	maps_enrich_snapshot(s, c->pid);
	if (strcmp(suffix, "-exit")) {
		char *here = perfmap_path_here(c->pid);
		if (here) {
			free(c->perfmap_here);
			c->perfmap_here = here;
		}
	} else if (!s->nsymbols && c->perfmap_here) {
		/* the process is gone, its map is not: the names as written for
		 * the last snapshot (a method compiled since is not named) */
		perfmap_embed_file(s, c->perfmap_here);
	}
	/* modules whose files are not ours at their paths (a container, its own
	 * mount namespace, a file replaced since): name their frames while it
	 * lives */
	struct their_files tf;
	container_files_point(s, c->pid, &tf);
	if (tf.nembed && symbolize_embed(s, tf.embed, (const char *const *)&tf.debug_dir,
					     tf.debug_dir != NULL, &cause) < 0) {
		mw_warn("pid %d: symbols from its own files: %s", c->pid, cause);
		free(cause);
		cause = NULL;
	}
	if (tf.unreadable && !c->unread_said) {
		/* said once: every snapshot of the capture would say it again */
		mw_warn("pid %d: no symbols for %s", c->pid, tf.unreadable);
		c->unread_said = true;
	}
	container_files_restore(s, &tf);
	for (size_t i = 0; i < s->nstacks; i++)
		live += s->stacks[i].live_bytes;
	if (peak) {
		/* held, not written: a rising heap's final snapshot is its peak */
		if (peak_hold_set(&c->peak.hold, s, t, live, tag, &cause) < 0) {
			mw_warn("pid %d: %s", c->pid, cause);
			free(cause);
			free(path);
			path = NULL;
		}
		c->stored_live = live;
		snapshot_free(s);
		return path;
	}
	if (snapshot_write(s, path, c->o.force, &cause) < 0) {
		/* said once; the log has every one (a full disk fails them all) */
		if (!c->lost++)
			mw_warn("pid %d: %s", c->pid, cause);
		{
			char *epath = runlog_encode(path);
			runlog_event(c->log, t, c->pid, "snapshot-failed", "path=%s", epath);
			free(epath);
		}
		free(cause);
		free(path);
		snapshot_free(s);
		return NULL;
	}
	c->stored_live = live;
	if (s->has_refs) {
		/* the referrer search: how long Python threads waited */
		static const char *const status[] = { "done", "time-limit", "object-limit", "no-gil",
						      "not-searched" };
		const struct snap_refsearch *q = &s->refsearch;
		runlog_event(c->log, t, c->pid, "referrers",
			     "status=%s pause-ms=%.1f visited=%llu tracked=%llu passes=%u chains=%zu",
			     status[q->status <= SNAP_REFS_UNAVAILABLE ? q->status : SNAP_REFS_UNAVAILABLE],
			     (double)q->pause_ns / 1e6, (unsigned long long)q->visited,
			     (unsigned long long)q->tracked, q->passes, s->nchains);
	}
	c->nsnaps++;
	{
		char *epath = runlog_encode(path);
		runlog_event(c->log, t, c->pid, "snapshot",
			     "path=%s live=%llu stacks=%zu%s", epath,
			     (unsigned long long)live, s->nstacks, tag);
		free(epath);
	}
	snapshot_free(s);
	return path;
}

/* The watch's time now, for events written after a wait. */
static double capture_now(const struct capture *c)
{
	return c->call_t + (double)(mono_ns() - c->call_ns) / 1e9;
}

/* A snapshot stored at t with live bytes of heap: the peak when it holds more
 * than any before (path copied). */
static void peak_consider(struct capture *c, double t, const char *path, uint64_t live)
{
	if (c->peak.path && live <= c->peak.live)
		return;
	free(c->peak.path);
	c->peak.path = xstrdup(path);
	c->peak.t = t;
	c->peak.rss = c->rss;
	c->peak.live = live;
}

/* Hold the peak snapshot that came whole, in place of any held before; one
 * that holds no more than the peak already known is dropped. */
static void peak_in(struct capture *c, double t, const unsigned char *buf, size_t len,
		    const char *tag)
{
	char *path = store_snapshot(c, t, buf, len, "-peak", tag);

	if (!path)
		return;
	if (c->peak.path && c->stored_live <= c->peak.live)
		peak_hold_release(&c->peak.hold);
	else
		peak_consider(c, t, path, c->stored_live);
	free(path);
}

/* Write the held peak to its file, now that it is worth one; a write that
 * fails is said and counted as a lost snapshot, and the peak forgotten. */
static void peak_write(struct capture *c, double t)
{
	char *cause = NULL, *path = snap_name(c, 0, "-peak");

	if (peak_hold_write(&c->peak.hold, path, c->o.force || c->peak.file, c->log, t, c->pid,
			    &cause) < 0) {
		char *epath = runlog_encode(path);
		if (!c->lost++)
			mw_warn("pid %d: %s", c->pid, cause);
		runlog_event(c->log, t, c->pid, "snapshot-failed", "path=%s", epath);
		free(epath);
		free(cause);
		free(path);
		free(c->peak.path);
		c->peak.path = NULL;
		return;
	}
	free(c->peak.file);
	c->peak.file = path;
}

/* The held peak, with the live heap now (the agent's estimate, or a snapshot
 * just stored) at t: written once the heap came down from it by its margin;
 * at the end (final) also when no snapshot came after it, and otherwise
 * dropped, the final snapshot being as good as the peak. */
static void peak_settle(struct capture *c, double t, uint64_t live, bool after, bool final)
{
	if (!c->peak.hold.buf)
		return;
	if (peak_fell(live, c->peak.hold.live) || (final && !after)) {
		peak_write(c, t);
	} else if (final) {
		peak_hold_release(&c->peak.hold);
		free(c->peak.path);
		c->peak.path = NULL;
	}
}

/* Store a snapshot that came whole, as the next one (or the final one). */
static void snapshot_in(struct capture *c, double t, unsigned char *buf, size_t len, bool final,
			double delayed)
{
	char *tag, *path;

	tag = delayed > 0 ? xasprintf("%s delayed_s=%.1f", final ? " final=1" : "", delayed) :
			    xstrdup(final ? " final=1" : "");
	if (c->peak.rx) {
		c->peak.rx = false;
		peak_in(c, t, buf, len, tag);
		free(tag);
		free(buf);
		return;
	}
	path = store_snapshot(c, t, buf, len, final ? "-final" : "", tag);
	if (path) {
		if (!c->first_snap)
			c->first_snap = xstrdup(path);
		free(c->last_snap);
		c->last_snap = path;
		c->last_live = c->stored_live;
		c->last_snap_t = t;
		peak_consider(c, t, path, c->stored_live);
		/* a held peak passed by a snapshot on disk is not worth a file */
		if (c->peak.hold.buf && !strcmp(c->peak.path, path))
			peak_hold_release(&c->peak.hold);
		peak_settle(c, t, c->stored_live, true, false);
	}
	free(tag);
	free(buf);
}

/* node: say once, on stderr and in the log, why its JavaScript objects are
 * not in the snapshot just stored (a V8 the agent does not read, the
 * JavaScript thread not at a safe point in time, its isolate torn down). */
static void js_said(struct capture *c, double t)
{
	struct control_status st;
	char note[300], *cause = NULL, *esc;
	if (control_status(c->fd, &st, &cause) < 0) {
		free(cause);
		return;
	}
	/* the first snapshot, at the start, holds nothing allocated since: its
	 * JavaScript objects are not missed while V8's profiler is starting */
	if (c->nsnaps <= 1 && !strcmp(st.js, "waiting"))
		return;
	if (!control_js_note(&st, note, sizeof note) || (c->js_note && !strcmp(c->js_note, note)))
		return;
	free(c->js_note);
	c->js_note = xstrdup(note);
	fprintf(stderr, "memwatch: pid %d: %s\n", c->pid, note);
	esc = runlog_encode(st.js_why[0] ? st.js_why : st.js);
	runlog_event(c->log, t, c->pid, "js-not-sampled", "state=%s v8=%s cause=%s", st.js,
		     st.js_version[0] ? st.js_version : "-", esc);
	free(esc);
}

/* The CPU time (ns) the agent's thread in pid has used, from its schedstat;
 * 0 when it is not found. What a snapshot costs the target is its growth. */
static uint64_t agent_thread_cpu_ns(int pid)
{
	char path[64], buf[64];
	uint64_t ns = 0;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof path, "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char p2[384];
		FILE *f;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(p2, sizeof p2, "/proc/%d/task/%s/comm", pid, e->d_name);
		f = fopen(p2, "re");
		if (!f)
			continue;
		if (!fgets(buf, sizeof buf, f) || strcmp(buf, "memwatch-agent\n") != 0) {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(p2, sizeof p2, "/proc/%d/task/%s/schedstat", pid, e->d_name);
		f = fopen(p2, "re");
		if (f) {
			unsigned long long v;
			if (fscanf(f, "%llu", &v) == 1)
				ns = v;
			fclose(f);
		}
		break;
	}
	closedir(d);
	return ns;
}

/* A view's snapshot came (capture_peek): decoded and kept for the view, with
 * what it cost; never stored as one of the capture's. */
static void peek_in(struct capture *c, unsigned char *buf, size_t len)
{
	char *cause = NULL;
	struct snapshot *s = snapshot_decode(buf, len, &cause);
	uint64_t cpu = c->peek_cpu_ns ? agent_thread_cpu_ns(c->pid) : 0;

	free(buf);
	c->rx_peek = false;
	if (!s) {
		free(cause);
		return;
	}
	ask_jvm(c, c->call_t);
	maps_enrich_snapshot(s, c->pid);
	snapshot_free(c->peeked);
	c->peeked = s;
	c->peek_wall_ms = (double)(mono_ns() - c->peek_ns) / 1e6;
	c->peek_cpu_ms = cpu > c->peek_cpu_ns ? (double)(cpu - c->peek_cpu_ns) / 1e6 : -1;
}

/* Wait up to wait_ms for the answer to the snapshot request in flight, looking
 * at the process between slices: a stopped one cannot answer, and the watch
 * must go on sampling it. Returns 1 when it came (stored), 0 when it is still
 * owed (logged once: it is received at a later sample, when the process runs),
 * -1 when the agent can no longer be reached (the capture is failed then). */
static int snapshot_wait(struct capture *c, int wait_ms)
{
	uint64_t end = mono_ns() + (uint64_t)wait_ms * 1000000u;
	enum owed why;

	for (;;) {
		unsigned char *buf = NULL;
		size_t len = 0;
		char *cause = NULL;
		uint64_t now = mono_ns();
		int left = now < end ? (int)((end - now) / 1000000u) : 0;
		enum proc_run run;
		int r = control_snapshot_recv(c->fd, &c->rx, left < SNAP_SLICE_MS ? left : SNAP_SLICE_MS,
					      &buf, &len, &cause);
		double t = capture_now(c);

		if (r == CONTROL_RX_DONE && c->rx_peek) {
			peek_in(c, buf, len);
			return 1;
		}
		if (r == CONTROL_RX_DONE) {
			snapshot_in(c, t, buf, len, c->rx_final, c->rx_late ? t - c->rx_t : 0);
			js_said(c, t);
			return 1;
		}
		if (r == CONTROL_RX_FAILED) {
			mw_warn("pid %d: snapshot failed: %s", c->pid, cause);
			capture_fail(c, t, "snapshot-failed", cause);
			free(cause);
			return -1;
		}
		if (r == CONTROL_RX_INTERRUPTED) {
			why = OWED_INTERRUPTED;
			break;
		}
		run = proc_run_state(c->pid);
		if (run == PROC_GONE) {
			c->rx_why = OWED_GONE;  /* the watch sees the exit at its next sample */
			return 0;
		}
		if (run != PROC_RUNNING) {
			why = owed_of_run(run);
			break;
		}
		if (mono_ns() >= end) {
			why = OWED_NO_ANSWER;
			break;
		}
	}
	c->rx_why = why;
	/* an interrupted wait is taken up again at the end, where it is said */
	if (!c->rx_late && (c->rx_final || why != OWED_INTERRUPTED)) {
		c->rx_late = true;
		runlog_event(c->log, capture_now(c), c->pid, "snapshot-failed",
			     "cause=%s%s retry=%s", owed_name(why), c->rx_final ? " final=1" : "",
			     c->rx_final ? "no" : "yes");
	}
	return 0;
}

/* Ask the agent for a snapshot and wait for it a while (snapshot_wait).
 * Returns 1 stored, 0 still owed, -1 the capture failed. */
static int take_snapshot(struct capture *c, double t, bool final, int wait_ms)
{
	char *cause = NULL;
	uint64_t refs = final && c->o.referrers ? c->o.referrers_limit_ms : 0;

	if (control_snapshot_send_refs(c->fd, &c->rx, refs, c->o.referrers_objects, &cause) < 0) {
		if (control_interrupted()) {
			/* a stop signal cut short the wait for an earlier reply, still
			 * owed: the end takes it up, with the final snapshot */
			free(cause);
			c->rx_why = OWED_INTERRUPTED;
			return 0;
		}
		mw_warn("pid %d: snapshot failed: %s", c->pid, cause);
		capture_fail(c, t, "snapshot-failed", cause);
		free(cause);
		return -1;
	}
	c->peak.rx = false;
	c->rx_peek = false;
	/* a snapshot put off while the process was stopped is as late as that */
	c->rx_t = c->deferred ? c->due_t : t;
	c->rx_late = c->deferred;
	c->rx_final = final;
	c->deferred = false;
	c->last_t = t;
	c->last_rss = c->rss;
	return snapshot_wait(c, wait_ms);
}

static bool may_ask(struct capture *c, double t, const char *what);

/* A peak snapshot is taken when the live heap is this far above the most any
 * snapshot held: 10 % and 8 MiB, as the agent marks its peaks. */
static bool peak_above(uint64_t live, uint64_t best)
{
	return live > best + peak_margin(best);
}

/* Ask the agent for its high-water mark (no lock in it: cheap at every
 * sample); a new peak well above every snapshot's live heap is taken as the
 * peak snapshot. An agent that cannot say is not asked again. */
static void peak_check(struct capture *c, double t)
{
	struct control_peak pk;
	char *cause = NULL;

	if (c->peak.off || c->rx.active || c->fd < 0)
		return;
	if (control_peak(c->fd, &pk, &cause) < 0) {
		free(cause);
		c->peak.off = true;
		return;
	}
	/* the heap came down from the peak held: now it is one */
	peak_settle(c, t, pk.live, false, false);
	if (pk.count == c->peak.seen)
		return;
	c->peak.seen = pk.count;
	if (!peak_above(pk.live, c->peak.path ? c->peak.live : 0) || !may_ask(c, t, "snapshot-deferred"))
		return;
	if (control_snapshot_send(c->fd, &c->rx, &cause) < 0) {
		if (control_interrupted()) {
			free(cause);
			c->rx_why = OWED_INTERRUPTED;
			return;
		}
		mw_warn("pid %d: snapshot failed: %s", c->pid, cause);
		capture_fail(c, t, "snapshot-failed", cause);
		free(cause);
		return;
	}
	c->rx_t = t;
	c->rx_late = false;
	c->rx_final = false;
	c->peak.rx = true;
	snapshot_wait(c, SNAP_WAIT_MS);
}

/* Whether the agent may be asked (or loaded) now: not while the process is
 * stopped, traced or frozen, when it cannot answer. What is due then is put
 * off, said once, and done when it runs again. */
static bool may_ask(struct capture *c, double t, const char *what)
{
	enum proc_run run = proc_run_state(c->pid);

	if (run == PROC_RUNNING)
		return true;
	if (run != PROC_GONE && !c->deferred) {
		c->deferred = true;
		c->due_t = t;
		runlog_event(c->log, t, c->pid, what, "state=%s", proc_run_name(run));
	}
	return false;
}

/* Store the snapshot the agent of a program started by memwatch run wrote at
 * its exit: what was never freed. The agent writes it into a file memwatch
 * created and passed down (it opens no path itself). */
static void take_exit_snapshot(struct capture *c, double t)
{
	struct stat st;
	unsigned char *buf;
	char *path;

	if (fstat(c->o.exit_fd, &st) < 0 || st.st_size <= 0)
		return;
	buf = xmalloc((size_t)st.st_size);
	if (pread(c->o.exit_fd, buf, (size_t)st.st_size, 0) == st.st_size) {
		path = store_snapshot(c, t, buf, (size_t)st.st_size, "-exit", " exit=1");
		if (path) {
			free(c->exit_snap);
			c->exit_snap = path;
			c->last_live = c->stored_live;
		}
	}
	free(buf);
}

/* Inject the agent as memwatch -p does. 1 when it is in, 0 when the process
 * is still starting (the next sample tries again), -1 when it failed (said). */
static int capture_inject(struct capture *c, double t)
{
	struct inject_result r;
	char *agent = find_agent_library(), *cause = NULL, *hint = NULL;
	char *opts = xasprintf("capture=idle,rate=%llu,depth=%u",
			       (unsigned long long)c->o.sample_rate, c->o.max_depth);
	int rc = inject_agent(c->pid, agent, opts, INJECT_DEADLINE_MS, &r, &cause, &hint);

	free(agent);
	free(opts);
	if (rc == -INJECT_ESTARTING && t - c->first_t < PRELOAD_GRACE_S) {
		/* caught between its exec and its C library: the next sample tries again */
		free(cause);
		free(hint);
		return 0;
	}
	if (rc < 0) {
		mw_error("pid %d: cannot attach: %s", c->pid, cause);
		if (hint)
			mw_hint("%s", hint);
		mw_warn("pid %d: watching goes on without capture", c->pid);
		capture_fail(c, t, "attach-failed", cause);
		free(cause);
		free(hint);
		return -1;
	}
	runlog_event(c->log, t, c->pid, "attach",
		     "pause_ms=%.2f total_ms=%.1f tid=%d attempts=%u reused=%d", r.pause_ms,
		     r.total_ms, r.tid, r.attempts, r.already_loaded);
	return 1;
}

/* Get the agent running in the process and capturing. A preloaded agent that
 * is not listening yet leaves the state IDLE, to be retried at the next sample;
 * one that will not come (preload.c says why) is injected as -p does. */
static void capture_begin(struct capture *c, double t)
{
	char *cause = NULL;
	bool injected = false;
	int fd;

	if (!c->wanted) {
		c->wanted = true;
		c->first_t = t;
	}

	if (c->o.refused && c->pid == c->o.exit_pid) {
		/* memwatch run said why when it started the program without it */
		capture_fail(c, t, "attach-failed", c->o.refused);
		return;
	}
	if (!c->o.preloaded) {
		if (capture_inject(c, t) <= 0)
			return;
		injected = true;
	}
	if (c->o.preloaded) {
		/* a program the command started that cannot take the agent (static,
		 * musl, Go: its loader skipped the preload) is told at once, and
		 * truly, rather than after the grace */
		struct prog_info pi;
		prog_judge_pid(c->pid, &pi);
		if (prog_unpreloadable(pi.kind)) {
			char what[400], *why = xasprintf("the process %s: %s",
							 prog_what(&pi, what, sizeof what),
							 prog_why(pi.kind));
			mw_error("pid %d: its allocations cannot be sampled: %s", c->pid, why);
			mw_hint("%s", prog_hint(pi.kind));
			capture_fail(c, t, "attach-failed", why);
			free(why);
			return;
		}
	}
	fd = control_connect(c->pid, CONTROL_TIMEOUT_MS, &cause);
	if (fd < 0 && c->o.preloaded && (fd == -ECONNREFUSED || fd == -ENOENT)) {
		enum preload_miss m = preload_missing(c->pid);
		if (m == PRELOAD_STARTING && t - c->first_t < PRELOAD_GRACE_S) {
			/* the program is still starting: its agent is not listening yet */
			free(cause);
			return;
		}
		/* it will not come: attach as memwatch -p PARENT --children does */
		mw_warn("pid %d: %s; attaching to it as memwatch -p does", c->pid, preload_miss_text(m));
		runlog_event(c->log, t, c->pid, "preload-missing", "cause=%s", preload_miss_name(m));
		free(cause);
		cause = NULL;
		if (capture_inject(c, t) <= 0)
			return;
		injected = true;
		fd = control_connect(c->pid, CONTROL_TIMEOUT_MS, &cause);
	}
	if (fd < 0) {
		mw_error("pid %d: cannot reach the agent: %s", c->pid, cause);
		capture_fail(c, t, "attach-failed", cause);
		free(cause);
		return;
	}
	c->fd = fd;
	/* a program started under memwatch run --capture now samples from its first
	 * allocation: take the capture over instead of restarting it */
	struct control_started got = { .rate = c->o.sample_rate, .depth = c->o.max_depth };
	struct control_status cst;
	bool hold = c->o.preloaded && !injected && c->o.mode == CAPTURE_NOW;
	/* held, unless its agent does not capture (a child forked from a parent
	 * that did not): then started */
	int rc = 0;
	if (hold)
		rc = control_hold(fd, &cause) < 0 || control_status(fd, &cst, &cause) < 0 ? -1 : 0;
	if (rc == 0 && (!hold || !cst.capturing))
		rc = control_start(fd, c->o.sample_rate, c->o.max_depth, c->o.max_stacks, &got, &cause);
	if (rc < 0) {
		mw_error("pid %d: cannot start capture: %s", c->pid, cause);
		capture_fail(c, t, "attach-failed", cause);
		free(cause);
		return;
	}
	/* another memwatch captures this process already: share its capture, at
	 * its rate (the snapshots record the rate in force) */
	if (got.joined && got.rate != c->o.sample_rate)
		control_warn_rate(c->pid, &got, c->o.sample_rate);
	c->rate = got.rate;
	c->shared = got.joined;
	runlog_event(c->log, t, c->pid, "capture-start", "rate=%llu depth=%u%s",
		     (unsigned long long)got.rate, got.depth ? got.depth : c->o.max_depth,
		     got.joined ? " shared=1" : "");
	{
		/* a CPython the agent cannot read is said once, at the start */
		struct control_status st;
		char note[320];
		if (control_status(fd, &st, &cause) < 0) {
			free(cause);
			cause = NULL;
		} else if ((!strcmp(st.python, "unsupported") || !strcmp(st.python, "unreadable")) &&
			   control_python_note(&st, note, sizeof note)) {
			runlog_event(c->log, t, c->pid, "python-native-only", "version=%u.%u",
				     st.python_major, st.python_minor);
			fprintf(stderr, "memwatch: pid %d: %s\n", c->pid, note);
		}
	}
	c->state = ST_CAPTURING;
	c->last_t = t;
	c->last_rss = c->rss;
}

void capture_set_stopped(struct capture *c, bool stopped)
{
	c->stopped = stopped;
}

void capture_sample(struct capture *c, double t, const struct mem_sample *s)
{
	c->call_t = t;
	c->call_ns = mono_ns();
	c->rss = s->rss * 1024;
	rss_story_add(&c->story, t, s);
	/* the answer to an earlier request comes first: the connection is in step
	 * only once it is in */
	if (c->rx.active) {
		if (c->stopped || snapshot_wait(c, SNAP_RESUME_MS) <= 0)
			return;
	}
	switch (c->state) {
	case ST_IDLE:
		if (c->o.mode == CAPTURE_NOW || c->wanted) {
			if (!may_ask(c, t, "attach-deferred"))
				break;
			/* a start put off: the program's agent gets its grace from now */
			if (c->deferred)
				c->first_t = t;
			c->deferred = false;
			capture_begin(c, t);
			if (c->wanted && c->state == ST_CAPTURING && c->o.mode != CAPTURE_NOW)
				take_snapshot(c, t, false, SNAP_WAIT_MS);
		} else if (trigger_update(&c->trig, t, c->rss)) {
			char rule[64], *erule;
			trigger_describe(&c->o.trigger, rule, sizeof rule);
			erule = runlog_encode(rule);
			runlog_event(c->log, t, c->pid, "trigger", "rss=%llu baseline=%llu rule=%s",
				     (unsigned long long)c->rss,
				     (unsigned long long)c->trig.baseline, erule);
			free(erule);
			c->wanted = true;
			c->first_t = t;
			if (!may_ask(c, t, "attach-deferred"))
				break;
			capture_begin(c, t);
			/* the first snapshot: the reference the growth is measured from */
			if (c->state == ST_CAPTURING)
				take_snapshot(c, t, false, SNAP_WAIT_MS);
		}
		break;
	case ST_CAPTURING:
		if ((c->deferred || (c->nsnaps < c->o.max_snaps &&
				     snap_step_due(&c->o.snap_every, t, c->rss, c->last_t, c->last_rss))) &&
		    may_ask(c, t, "snapshot-deferred"))
			take_snapshot(c, t, false, SNAP_WAIT_MS);
		else if (!c->stopped && !c->deferred)
			peak_check(c, t);
		break;
	default:
		break;
	}
}

/* The report of memwatch show (one path) or diff (two), top rows, on
 * standard output. */
static void print_snap_report(int top, char *a, char *b)
{
	char *paths[2] = { a, b };
	struct report_options o;

	report_options_init(&o);
	o.top = (unsigned long)top;
	o.top_set = true;
	fflush(stdout);
	report_write(&o, paths, b ? 2 : 1);
	report_options_release(&o);
	fflush(stdout);
}

/* The report's section "at the peak", when the snapshot that held the most
 * live heap holds well more than the end (a burst freed again, a peak before a
 * kill): what grew from the first snapshot to it. */
static void print_peak(struct capture *c)
{
	char rss[32], live[32], end[32];
	uint64_t margin = c->peak.live / 4 > (8u << 20) ? c->peak.live / 4 : (8u << 20);

	if (!c->peak.path || c->peak.live < c->last_live + margin ||
	    (c->last_snap && strcmp(c->peak.path, c->last_snap) == 0))
		return;
	fmt_bytes(rss, sizeof rss, (double)c->peak.rss);
	fmt_bytes(live, sizeof live, (double)c->peak.live);
	fmt_bytes(end, sizeof end, (double)c->last_live);
	printf("\nmemwatch: pid %d: at the peak, %.1f s: RSS %s, live heap %s (%s at the end); ",
	       c->pid, c->peak.t, rss, live, end);
	if (c->first_snap && strcmp(c->first_snap, c->peak.path) != 0) {
		printf("growth between %s and the peak %s:\n", c->first_snap, c->peak.path);
		print_snap_report(5, c->first_snap, c->peak.path);
	} else {
		printf("live heap in %s:\n", c->peak.path);
		print_snap_report(5, c->peak.path, NULL);
	}
}

/* The line that says the process was killed by the OOM killer, before its
 * report: the limit, and how close the last snapshot came to the kill. */
static void print_oom(struct capture *c)
{
	FILE *f = c->o.report ? stdout : stderr;
	char lim[32];

	if (!c->oom.killed)
		return;
	fflush(stdout);
	fprintf(f, "%smemwatch: pid %d was killed by the OOM killer at %.1f s", f == stdout ? "\n" : "",
		c->pid, c->oom.t);
	if (c->oom.limit) {
		fmt_bytes(lim, sizeof lim, (double)c->oom.limit);
		fprintf(f, ": its cgroup's limit is %s", lim);
	}
	if (c->last_snap && c->nsnaps)
		fprintf(f, "; the last snapshot, %.1f s before, is the report's end", c->oom.t - c->last_snap_t);
	fputs("\n", f);
	fflush(f);
}

void capture_oom_killed(struct capture *c, double t, uint64_t limit)
{
	c->oom.killed = true;
	c->oom.t = t;
	c->oom.limit = limit;
}

/* Print what grew between the first and the last snapshot, with the report of
 * memwatch diff (or show, when there is only one). */
static void print_report(struct capture *c)
{
	if (c->o.report && c->exit_snap) {
		fflush(stdout);
		printf("\nmemwatch: pid %d: never freed at exit (%s):\n", c->pid, c->exit_snap);
		print_snap_report(10, c->exit_snap, NULL);
		print_peak(c);
		return;
	}
	if (!c->o.report || !c->last_snap)
		return;
	fflush(stdout);
	printf("\nmemwatch: pid %d: %u snapshot%s; ", c->pid, c->nsnaps, c->nsnaps == 1 ? "" : "s");
	if (c->first_snap && strcmp(c->first_snap, c->last_snap) != 0) {
		printf("growth between %s and %s:\n", c->first_snap, c->last_snap);
		print_snap_report(5, c->first_snap, c->last_snap);
	} else {
		/* one snapshot: nothing to measure growth from (--capture now takes
		 * no reference snapshot; growth capture ended before a second) */
		printf("live heap in %s\n(one snapshot, so no growth to show: this is all the sampled "
		       "memory still live,\n grown or not; take a second snapshot, or capture on growth, "
		       "for a diff):\n",
		       c->last_snap);
		print_snap_report(5, c->last_snap, NULL);
	}
	print_peak(c);
}

int capture_end(struct capture *c, double t, enum end_reason reason, bool process_gone)
{
	char *cause = NULL;

	c->call_t = t;
	c->call_ns = mono_ns();
	if (c->state == ST_CAPTURING && !process_gone) {
		enum proc_run run = proc_run_state(c->pid);
		bool owed = false;
		enum owed why = OWED_NO_ANSWER;

		/* a snapshot still owed is received first, briefly */
		if (c->rx.active && run == PROC_RUNNING)
			snapshot_wait(c, FINAL_WAIT_MS);
		if (c->state == ST_CAPTURING && (c->rx.active || run != PROC_RUNNING)) {
			/* a stopped process is not waited for: it is someone else's to
			 * continue */
			owed = true;
			why = run != PROC_RUNNING ? owed_of_run(run) : c->rx_why;
			runlog_event(c->log, capture_now(c), c->pid, "snapshot-failed",
				     "cause=%s final=1 retry=no", owed_name(why));
		} else if (c->state == ST_CAPTURING &&
			   take_snapshot(c, t, true, FINAL_WAIT_MS + (c->o.referrers ? (int)c->o.referrers_limit_ms : 0)) == 0) {
			owed = true;
			why = c->rx_why;
		}
		if (owed)
			mw_warn("pid %d: no final snapshot: %s", c->pid, owed_text(why));
		if (c->state == ST_CAPTURING) {
			/* "stop" only on a connection in step, to a process that answers:
			 * otherwise closing the connection stops capture once the agent runs */
			if (!c->rx.active && run == PROC_RUNNING && control_stop(c->fd, &cause) < 0) {
				mw_warn("pid %d: stopping capture: %s", c->pid, cause);
				free(cause);
			}
			runlog_event(c->log, capture_now(c), c->pid, "capture-stop", "reason=%s",
				     end_reason_name(reason));
		}
	}
	control_snap_rx_release(&c->rx);
	if (process_gone && c->o.exit_fd >= 0 && c->pid == c->o.exit_pid)
		take_exit_snapshot(c, t);
	if (c->fd >= 0)
		close(c->fd);     /* closing the connection drops its hold in any case */
	c->fd = -1;
	/* the peak still held: written when the end is well below it, or when
	 * no snapshot came after it (what was never freed at exit is the end's
	 * live heap: last_live) */
	peak_settle(c, capture_now(c), c->last_live,
		    (c->last_snap && c->last_snap_t >= c->peak.hold.t) || c->exit_snap, true);
	/* killed: a peak snapshot taken after the last one, and holding more, is
	 * the closest the report can come to the kill */
	if (c->oom.killed && c->peak.file && c->peak.path && !strcmp(c->peak.path, c->peak.file) &&
	    c->peak.t > c->last_snap_t && c->peak.live > c->last_live && c->last_snap) {
		free(c->last_snap);
		c->last_snap = xstrdup(c->peak.file);
		c->last_snap_t = c->peak.t;
		c->last_live = c->peak.live;
	}
	print_oom(c);
	if (c->state == ST_CAPTURING || c->nsnaps)
		print_report(c);
	else if (c->state == ST_FAILED && c->o.report) {
		/* refused or failed: what /proc saw is still owed */
		fflush(stdout);
		rss_story_print(stdout, c->pid, c->failed ? c->failed : "capture failed", &c->story);
		fflush(stdout);
	}
	c->state = ST_DONE;
	if (c->lost) {
		/* a watch that ends on a failed log write has said its error */
		if (reason != END_ERROR)
			mw_error("pid %d: %u snapshot%s could not be written", c->pid, c->lost,
				 c->lost == 1 ? "" : "s");
		return -1;
	}
	return 0;
}

const char *end_reason_name(enum end_reason r)
{
	switch (r) {
	case END_DURATION: return "duration";
	case END_SIGNAL: return "signal";
	case END_EXITED: return "exited";
	case END_QUIT: return "quit";
	default: return "error";
	}
}

void capture_free(struct capture *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	control_snap_rx_release(&c->rx);
	free(c->first_snap);
	free(c->last_snap);
	free(c->exit_snap);
	free(c->failed);
	free(c->js_note);
	free(c->perfmap_here);
	free(c->peak.path);
	free(c->peak.file);
	peak_hold_release(&c->peak.hold);
	snapshot_free(c->peeked);
	free(c);
}

const char *capture_state_name(const struct capture *c)
{
	if (c->o.mode == CAPTURE_NEVER)
		return "off";
	switch (c->state) {
	case ST_IDLE: return "idle";
	case ST_CAPTURING: return "capturing";
	case ST_FAILED: return "failed";
	default: return "stopped";
	}
}

unsigned capture_snapshots(const struct capture *c)
{
	return c->nsnaps;
}

struct snapshot *capture_peek(struct capture *c, double t, int wait_ms, bool referrers,
			      struct capture_peek_cost *cost)
{
	struct snapshot *s;
	char *cause = NULL;

	if (!c->peeked && c->state == ST_CAPTURING && !c->rx.active && !c->stopped &&
	    proc_run_state(c->pid) == PROC_RUNNING) {
		c->call_t = t;
		c->call_ns = mono_ns();
		c->peek_cpu_ns = agent_thread_cpu_ns(c->pid);
		c->peek_ns = mono_ns();
		if (control_snapshot_send_refs(c->fd, &c->rx, referrers ? c->o.referrers_limit_ms : 0,
					       c->o.referrers_objects, &cause) < 0) {
			free(cause);
			return NULL;
		}
		c->rx_peek = true;
		c->rx_t = t;
		/* a view's request is not the capture's: its lateness is no event */
		c->rx_late = true;
		c->rx_final = false;
		snapshot_wait(c, wait_ms);
	}
	s = c->peeked;
	c->peeked = NULL;
	if (s && cost) {
		cost->wall_ms = c->peek_wall_ms;
		cost->cpu_ms = c->peek_cpu_ms;
	}
	return s;
}

uint64_t capture_rate(const struct capture *c)
{
	return c->rate;
}

bool capture_shared(const struct capture *c)
{
	return c->shared;
}
