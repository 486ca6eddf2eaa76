/* capture.c: the capture of one watched process. Decides when growth is real
 * (trigger.c), gets the agent into the process (preloaded, found, or injected),
 * drives it over the control socket, takes snapshots on the schedule and at the
 * end (capture-snap.c asks for them and stores them), and prints what grew
 * (capture-report.c). Every decision is an event in run.log. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture-internal.h"
#include "inject.h"
#include "preload.h"
#include "progkind.h"
#include "util.h"

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

/* Give up on capture for this process, saying why once; watching goes on. */
void capture_fail(struct capture *c, double t, const char *kind, const char *cause)
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

/* Whether the agent may be asked (or loaded) now: not while the process is
 * stopped, traced or frozen, when it cannot answer. What is due then is put
 * off, said once, and done when it runs again. */
bool may_ask(struct capture *c, double t, const char *what)
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

/* Feed the sample to the trigger; true when it fires. While the program's
 * start-up may still be going on, whether it is at work is read too. */
static bool trigger_fires(struct capture *c, double t)
{
	if (trigger_awaits_start(&c->trig))
		trigger_busy(&c->trig, proc_busy(c->pid));
	return trigger_update(&c->trig, t, c->rss);
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
		} else if (trigger_fires(c, t)) {
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

void capture_oom_killed(struct capture *c, double t, uint64_t limit)
{
	c->oom.killed = true;
	c->oom.t = t;
	c->oom.limit = limit;
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

uint64_t capture_rate(const struct capture *c)
{
	return c->rate;
}

bool capture_shared(const struct capture *c)
{
	return c->shared;
}
