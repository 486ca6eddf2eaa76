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
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "maps.h"
#include "commands.h"
#include "control.h"
#include "inject.h"
#include "snapshot.h"
#include "util.h"

enum capture_state {
	ST_IDLE,                 /* watching; the trigger has not fired */
	ST_CAPTURING,            /* the agent samples; snapshots on the schedule */
	ST_FAILED,               /* the agent could not be loaded or reached: watch only */
	ST_DONE,                 /* capture stopped */
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
};

/* How long a control request may take before the agent is considered stuck. */
#define CONTROL_TIMEOUT_MS 10000
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
	if (len >= (size_t)olen && memcmp(lp + len - olen, own, (size_t)olen) == 0)
		return xasprintf("%.*s.%u%s.snap", (int)len, lp, n, suffix);
	return xasprintf("%.*s.%d.%u%s.snap", (int)len, lp, c->pid, n, suffix);
}

/* Give up on capture for this process, saying why once; watching goes on. */
static void capture_fail(struct capture *c, double t, const char *kind, const char *cause)
{
	char *esc = xstrdup(cause);
	for (char *p = esc; *p; p++)
		if (*p == ' ')
			*p = '_';
	runlog_event(c->log, t, c->pid, kind, "cause=%s", esc);
	free(esc);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = ST_FAILED;
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

	if (!s) {
		mw_warn("pid %d: the agent sent a bad snapshot: %s", c->pid, cause);
		runlog_event(c->log, t, c->pid, "snapshot-failed", "cause=bad_snapshot");
		free(cause);
		return NULL;
	}
	path = snap_name(c, c->nsnaps + 1, suffix);
	/* where the RSS is, by mapping, and the names of JIT frames */
	maps_enrich_snapshot(s, c->pid);
	if (snapshot_write(s, path, c->o.force, &cause) < 0) {
		/* said once; the log has every one (a full disk fails them all) */
		if (!c->lost++)
			mw_warn("pid %d: %s", c->pid, cause);
		runlog_event(c->log, t, c->pid, "snapshot-failed", "path=%s", path);
		free(cause);
		free(path);
		snapshot_free(s);
		return NULL;
	}
	for (size_t i = 0; i < s->nstacks; i++)
		live += s->stacks[i].live_bytes;
	c->nsnaps++;
	runlog_event(c->log, t, c->pid, "snapshot", "path=%s live=%llu stacks=%zu%s", path,
		     (unsigned long long)live, s->nstacks, tag);
	snapshot_free(s);
	return path;
}

/* Ask the agent for a snapshot and store it. Returns 0, or -1 when the agent can
 * no longer be reached (the capture is failed then). */
static int take_snapshot(struct capture *c, double t, bool final)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	char *cause = NULL, *path;

	if (control_snapshot(c->fd, &buf, &len, &cause) < 0) {
		mw_warn("pid %d: snapshot failed: %s", c->pid, cause);
		capture_fail(c, t, "snapshot-failed", cause);
		free(cause);
		return -1;
	}
	path = store_snapshot(c, t, buf, len, final ? "-final" : "", final ? " final=1" : "");
	if (path) {
		if (!c->first_snap)
			c->first_snap = xstrdup(path);
		free(c->last_snap);
		c->last_snap = path;
	}
	c->last_t = t;
	c->last_rss = c->rss;
	free(buf);
	return 0;
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
		}
	}
	free(buf);
}

/* Get the agent running in the process and capturing. A preloaded agent that
 * is not listening yet leaves the state IDLE, to be retried at the next sample. */
static void capture_begin(struct capture *c, double t)
{
	char *cause = NULL, *hint = NULL;
	int fd;

	if (!c->wanted) {
		c->wanted = true;
		c->first_t = t;
	}

	if (!c->o.preloaded) {
		struct inject_result r;
		char *agent = find_agent_library();
		char *opts = xasprintf("capture=idle,rate=%llu,depth=%u",
				       (unsigned long long)c->o.sample_rate, c->o.max_depth);
		int rc = inject_agent(c->pid, agent, opts, INJECT_DEADLINE_MS, &r, &cause, &hint);
		free(agent);
		free(opts);
		if (rc < 0) {
			mw_error("pid %d: cannot attach: %s", c->pid, cause);
			if (hint)
				mw_hint("%s", hint);
			mw_warn("pid %d: watching goes on without capture", c->pid);
			capture_fail(c, t, "attach-failed", cause);
			free(cause);
			free(hint);
			return;
		}
		runlog_event(c->log, t, c->pid, "attach",
			     "pause_ms=%.2f total_ms=%.1f tid=%d attempts=%u reused=%d", r.pause_ms,
			     r.total_ms, r.tid, r.attempts, r.already_loaded);
	}
	fd = control_connect(c->pid, CONTROL_TIMEOUT_MS, &cause);
	if (fd < 0 && c->o.preloaded && (fd == -ECONNREFUSED || fd == -ENOENT) &&
	    t - c->first_t < PRELOAD_GRACE_S) {
		/* the program is still starting: its agent is not listening yet */
		free(cause);
		return;
	}
	if (fd < 0 && c->o.preloaded) {
		mw_error("pid %d: the preloaded agent did not start: %s", c->pid, cause);
		mw_hint("LD_PRELOAD is ignored for static and set-uid programs; attach with memwatch -p PID once it runs, or check MEMWATCH_AGENT");
		capture_fail(c, t, "attach-failed", cause);
		free(cause);
		return;
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
	if (c->o.preloaded && c->o.mode == CAPTURE_NOW ?
		    control_hold(fd, &cause) < 0 :
		    control_start(fd, c->o.sample_rate, c->o.max_depth, c->o.max_stacks, &cause) < 0) {
		mw_error("pid %d: cannot start capture: %s", c->pid, cause);
		capture_fail(c, t, "attach-failed", cause);
		free(cause);
		return;
	}
	runlog_event(c->log, t, c->pid, "capture-start", "rate=%llu depth=%u",
		     (unsigned long long)c->o.sample_rate, c->o.max_depth);
	{
		/* a CPython the agent cannot read is said once, at the start */
		struct control_status st;
		char note[160];
		if (control_status(fd, &st, &cause) < 0) {
			free(cause);
			cause = NULL;
		} else if (!strcmp(st.python, "unsupported") &&
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

void capture_sample(struct capture *c, double t, const struct mem_sample *s)
{
	c->rss = s->rss * 1024;
	switch (c->state) {
	case ST_IDLE:
		if (c->o.mode == CAPTURE_NOW || c->wanted) {
			capture_begin(c, t);
			if (c->wanted && c->state == ST_CAPTURING && c->o.mode != CAPTURE_NOW)
				take_snapshot(c, t, false);
		} else if (trigger_update(&c->trig, t, c->rss)) {
			char rule[64];
			trigger_describe(&c->o.trigger, rule, sizeof rule);
			for (char *p = rule; *p; p++)
				if (*p == ' ')
					*p = '_';
			runlog_event(c->log, t, c->pid, "trigger", "rss=%llu baseline=%llu rule=%s",
				     (unsigned long long)c->rss,
				     (unsigned long long)c->trig.baseline, rule);
			capture_begin(c, t);
			/* the first snapshot: the reference the growth is measured from */
			if (c->state == ST_CAPTURING)
				take_snapshot(c, t, false);
		}
		break;
	case ST_CAPTURING:
		if (c->nsnaps < c->o.max_snaps &&
		    snap_step_due(&c->o.snap_every, t, c->rss, c->last_t, c->last_rss))
			take_snapshot(c, t, false);
		break;
	default:
		break;
	}
}

/* Print what grew between the first and the last snapshot, with the report of
 * memwatch diff (or show, when there is only one). */
static void print_report(struct capture *c)
{
	char *argv[8];
	int argc = 0;

	if (c->o.report && c->exit_snap) {
		fflush(stdout);
		printf("\nmemwatch: pid %d: never freed at exit (%s):\n", c->pid, c->exit_snap);
		argv[argc++] = "show";
		argv[argc++] = "--top";
		argv[argc++] = "10";
		argv[argc++] = c->exit_snap;
		argv[argc] = NULL;
		fflush(stdout);
		cmd_show(argc, argv);
		fflush(stdout);
		return;
	}
	if (!c->o.report || !c->last_snap)
		return;
	fflush(stdout);
	printf("\nmemwatch: pid %d: %u snapshot%s; ", c->pid, c->nsnaps, c->nsnaps == 1 ? "" : "s");
	if (c->first_snap && strcmp(c->first_snap, c->last_snap) != 0) {
		printf("growth between %s and %s:\n", c->first_snap, c->last_snap);
		argv[argc++] = "diff";
		argv[argc++] = "--top";
		argv[argc++] = "5";
		argv[argc++] = c->first_snap;
		argv[argc++] = c->last_snap;
		argv[argc] = NULL;
		fflush(stdout);
		cmd_diff(argc, argv);
	} else {
		/* one snapshot: nothing to measure growth from (--capture now takes
		 * no reference snapshot; growth capture ended before a second) */
		printf("live heap in %s\n(one snapshot, so no growth to show: this is all the sampled "
		       "memory still live,\n grown or not; take a second snapshot, or capture on growth, "
		       "for a diff):\n",
		       c->last_snap);
		argv[argc++] = "show";
		argv[argc++] = "--top";
		argv[argc++] = "5";
		argv[argc++] = c->last_snap;
		argv[argc] = NULL;
		fflush(stdout);
		cmd_show(argc, argv);
	}
	fflush(stdout);
}

int capture_end(struct capture *c, double t, const char *reason, bool process_gone)
{
	char *cause = NULL;

	if (c->state == ST_CAPTURING && !process_gone) {
		take_snapshot(c, t, true);
		if (c->state == ST_CAPTURING) {
			if (control_stop(c->fd, &cause) < 0) {
				mw_warn("pid %d: stopping capture: %s", c->pid, cause);
				free(cause);
			}
			runlog_event(c->log, t, c->pid, "capture-stop", "reason=%s", reason);
		}
	}
	if (process_gone && c->o.exit_fd >= 0 && c->pid == c->o.exit_pid)
		take_exit_snapshot(c, t);
	if (c->fd >= 0)
		close(c->fd);     /* closing the owning connection stops capture in any case */
	c->fd = -1;
	if (c->state == ST_CAPTURING || c->nsnaps)
		print_report(c);
	c->state = ST_DONE;
	if (c->lost) {
		/* a watch that ends on a failed log write has said its error */
		if (strcmp(reason, "error") != 0)
			mw_error("pid %d: %u snapshot%s could not be written", c->pid, c->lost,
				 c->lost == 1 ? "" : "s");
		return -1;
	}
	return 0;
}

void capture_free(struct capture *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->first_snap);
	free(c->last_snap);
	free(c->exit_snap);
	free(c);
}
