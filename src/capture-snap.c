/* capture-snap.c: the snapshots of a capture: asked of the agent, waited for
 * while the process is watched (a stopped one cannot answer: the snapshot is
 * owed, and taken up later), checked, named and stored beside the run log
 * with the JIT names and the files of the process, the peak snapshot at the
 * high-water mark of the live heap, the one written at exit, and a view's
 * snapshots (capture_peek), kept in memory with what they cost. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture-internal.h"
#include "container.h"
#include "maps.h"
#include "perfmap.h"
#include "symbolize.h"
#include "util.h"

/* The cause word of a "snapshot-failed" event. */
const char *owed_name(enum owed o)
{
	static const char *const names[] = {
		[OWED_NO_ANSWER] = "no_answer", [OWED_INTERRUPTED] = "interrupted",
		[OWED_GONE] = "gone", [OWED_STOPPED] = "stopped", [OWED_TRACED] = "traced",
		[OWED_FROZEN] = "frozen",
	};
	return names[o];
}

/* Why, for people, after "no final snapshot: ". */
const char *owed_text(enum owed o)
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
enum owed owed_of_run(enum proc_run run)
{
	return run == PROC_TRACED ? OWED_TRACED : run == PROC_FROZEN ? OWED_FROZEN
	       : run == PROC_GONE ? OWED_GONE : OWED_STOPPED;
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
	} else if (c->perfmap_here) {
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
double capture_now(const struct capture *c)
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
void peak_settle(struct capture *c, double t, uint64_t live, bool after, bool final)
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
int snapshot_wait(struct capture *c, int wait_ms)
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
int take_snapshot(struct capture *c, double t, bool final, int wait_ms)
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

/* A peak snapshot is taken when the live heap is this far above the most any
 * snapshot held: 10 % and 8 MiB, as the agent marks its peaks. */
static bool peak_above(uint64_t live, uint64_t best)
{
	return live > best + peak_margin(best);
}

/* Ask the agent for its high-water mark (no lock in it: cheap at every
 * sample); a new peak well above every snapshot's live heap is taken as the
 * peak snapshot. An agent that cannot say is not asked again. */
void peak_check(struct capture *c, double t)
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

/* Store the snapshot the agent of a program started by memwatch run wrote at
 * its exit: what was never freed. The agent writes it into a file memwatch
 * created and passed down (it opens no path itself). */
void take_exit_snapshot(struct capture *c, double t)
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
