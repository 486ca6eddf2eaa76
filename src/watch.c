/* watch.c: memwatch [watch] -p PID: sample processes' memory every interval into
 * a run log, feed each process's capture, and end cleanly on the duration, a
 * signal, or the processes' exit. Also the loop behind memwatch run. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "commands.h"
#include "control.h"
#include "proc.h"
#include "runlog.h"
#include "util.h"
#include "watch.h"
#include "agent/protocol.h"
#include "metrics.h"

/* ---- the loop ---- */

/* One watched process. */
struct member {
	int pid;
	bool root;               /* given with -p, or memwatch run's child */
	bool gone;
	bool pss_warned;
	bool stopped;            /* seen stopped: the "stopped" event is written */
	unsigned traced;         /* samples in a row it was seen in a tracing stop */
	double stopped_t;
	struct capture *cap;
	char *cmd;               /* its command line, for --metrics */
	struct growth_window win; /* its recent RSS, for --metrics' growth rate */
	struct cgmem *cg;        /* its memory cgroup */
	struct cgmem_trend cgtrend; /*   the cgroup's recent usage, for the time to its limit */
	bool have_oom;           /*   the kernel counts its OOM kills: */
	uint64_t oom_kills;      /*   so many at the last sample, */
	uint64_t oom_kills_before; /*   and at the one before it */
	uint64_t cg_limit;       /*   its limit (bytes, 0 none) at the last sample */
	double to_limit;         /*   seconds until the limit at the current rate, -1 none */
};

/* The signals the loop has acted on, of all that came (stop_signal_count):
 * one more means a wait for an agent must end now (control_set_interrupt,
 * whose callback has no argument: hence file scope). */
static unsigned sigs_handled;

/* The signal that asks the watch to stop, or 0: a hang-up (the terminal
 * closed) ends it as cleanly as SIGTERM, the capture stopped and the log
 * completed, instead of leaving the agent sampling in the target. */
static int stop_requested(void)
{
	int sig = stop_signal_pending();
	return sig ? sig : hangup_seen() ? SIGHUP : 0;
}

/* A signal came that the loop has not acted on yet. */
static bool sig_unhandled(void)
{
	return stop_signal_count() != sigs_handled;
}

/* The live status line on the terminal. */
struct status_line {
	bool on;
	bool shown;
	bool plain;              /* TERM=dumb: no escape sequences, blanks instead */
	int width;               /* of the line shown, for blanking it */
	uint64_t first_kib;
	double rt[64];           /* RSS history for the rate, >= 1 s apart */
	uint64_t rv[64];
	unsigned rn, rhead;
};

/* Erase the status line, before a message or at the end. */
static void status_clear(struct status_line *sl)
{
	if (sl->shown) {
		if (sl->plain)
			fprintf(stderr, "\r%*s\r", sl->width, "");
		else
			fputs("\r\033[K", stderr);
		fflush(stderr);
		sl->shown = false;
	}
}

/* Show RSS now, since the start, its rate over the last minute, elapsed time,
 * and the time left until a memory cgroup's limit (to_limit, -1 none). */
static void status_show(struct status_line *sl, double t, uint64_t rss_kib, size_t nproc,
			double to_limit)
{
	char now[32], diff[32], rate[32], el[32];
	double d, r = 0;
	unsigned oldest;

	if (!sl->on)
		return;
	if (sl->rn == 0)
		sl->first_kib = rss_kib;
	if (sl->rn == 0 || t - sl->rt[(sl->rhead + 63) % 64] >= 1.0) {
		sl->rt[sl->rhead] = t;
		sl->rv[sl->rhead] = rss_kib;
		sl->rhead = (sl->rhead + 1) % 64;
		if (sl->rn < 64)
			sl->rn++;
	}
	/* the oldest point no more than a minute back */
	for (oldest = (sl->rhead + 64 - sl->rn) % 64;
	     oldest != (sl->rhead + 63) % 64 && t - sl->rt[oldest] > 60;
	     oldest = (oldest + 1) % 64)
		;
	if (t - sl->rt[oldest] > 0.5)
		r = ((double)rss_kib - (double)sl->rv[oldest]) * 1024 / (t - sl->rt[oldest]) * 60;
	d = ((double)rss_kib - (double)sl->first_kib) * 1024;
	fmt_bytes(now, sizeof now, (double)rss_kib * 1024);
	fmt_bytes(diff, sizeof diff, d);
	fmt_bytes(rate, sizeof rate, r);
	fmt_seconds(el, sizeof el, t);
	{
		char line[240], left[32];
		int w = snprintf(line, sizeof line, "RSS %s%s  %s%s since start  %s%s/min  %s elapsed",
				 now, nproc > 1 ? " (total)" : "", d >= 0 ? "+" : "", diff,
				 r >= 0 ? "+" : "", rate, el);
		if (to_limit >= 0 && w > 0 && (size_t)w < sizeof line)
			w += snprintf(line + w, sizeof line - (size_t)w, "  limit in %s",
				      fmt_seconds(left, sizeof left, to_limit));
		if (sl->plain)
			fprintf(stderr, "\r%s%*s", line, sl->width > w ? sl->width - w : 0, "");
		else
			fprintf(stderr, "\r%s\033[K", line);
		if (w > sl->width)
			sl->width = w;
	}
	fflush(stderr);
	sl->shown = true;
}

/* The default run log name: memwatch-PID.log, memwatch-P1-P2.log, memwatch-run-PID.log. */
static char *default_output(const struct watch_opts *o)
{
	char *s, *p;
	size_t i, n;

	if (o->run_child > 0)
		return xasprintf("memwatch-run-%d.log", o->run_child);
	n = o->npids > 4 ? 4 : o->npids;
	s = p = xmalloc(16 + n * 12 + 8);
	p = stpcpy(p, "memwatch");
	for (i = 0; i < n; i++)
		p += sprintf(p, "-%d", o->pids[i]);
	if (o->npids > n)
		p = stpcpy(p, "-more");
	strcpy(p, ".log");
	return s;
}

/* The snapshot prefix from the log name: "run.log" gives "run". Caller frees. */
static char *snap_prefix(const char *log)
{
	size_t n = strlen(log);
	if (strcmp(log, "-") == 0)
		return xstrdup("memwatch");
	if (n > 4 && strcmp(log + n - 4, ".log") == 0)
		n -= 4;
	return strndup(log, n) ?: xstrdup("memwatch");
}

/* Check that each pid can be watched; warn about another user's processes. */
static int check_pids(int *pids, size_t n, struct proc_ident *ids, bool pss, int run_child)
{
	size_t i, j;
	int e;

	for (i = 0; i < n; i++) {
		e = proc_identify(pids[i], &ids[i]);
		/* a thread id stands for its process: memory belongs to the process */
		if (e == 0 && ids[i].tgid != pids[i]) {
			int tid = pids[i];
			for (j = 0; j < n; j++)
				if (pids[j] == ids[i].tgid)
					break;
			if (j < n) {
				mw_error("pid %d is a thread of process %d, which is watched already",
					 tid, ids[i].tgid);
				return MW_EXIT_USAGE;
			}
			mw_warn("pid %d is a thread of process %d: watching the process", tid, ids[i].tgid);
			pids[i] = ids[i].tgid;
			free(ids[i].cmdline);
			e = proc_identify(pids[i], &ids[i]);
		}
		/* memwatch run's own child is reaped by the loop, whose status it gives */
		if (e == 0 && ids[i].zombie && pids[i] != run_child) {
			mw_error("pid %d: the process has exited (its parent has not reaped it)", pids[i]);
			return MW_EXIT_NOPROC;
		}
		if (e == -ESRCH) {
			if (kill(pids[i], 0) == 0 || errno == EPERM) {
				mw_error("pid %d: cannot read /proc/%d: the process is hidden from us", pids[i], pids[i]);
				mw_hint("/proc is mounted with hidepid; run memwatch as the process's user or root");
			} else {
				mw_error("pid %d: no such process", pids[i]);
			}
			return MW_EXIT_NOPROC;
		}
		if (e == 0 && pid_is_kernel_thread(pids[i])) {
			mw_error("pid %d is a kernel thread: it has no user memory to watch", pids[i]);
			return MW_EXIT_NOPROC;
		}
		if (e < 0) {
			mw_error("pid %d: cannot read /proc/%d: %s", pids[i], pids[i], strerror(-e));
			mw_hint("run memwatch as the process's user or root");
			return MW_EXIT_NOPROC;
		}
		if (ids[i].other_user)
			mw_warn("pid %d belongs to another user (uid %u): only what /proc shows "
				"every user is read: RSS, anon, file, shmem, swap, VSZ%s; no capture",
				pids[i], (unsigned)ids[i].uid, pss ? "; not PSS/USS" : "");
	}
	return 0;
}

/* Whether pid has started programs of its own: some are running, or it has
 * reaped some (the minor faults of its reaped children, field 11 of its stat,
 * which a zombie still shows: any program that ran made page faults). */
static bool had_children(int pid)
{
	char path[80], buf[16];
	unsigned long long cminflt;
	ssize_t n = 0;
	int fd;

	if (pid_stat_field(pid, 11, &cminflt) == 0 && cminflt > 0)
		return true;
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof buf);
		close(fd);
	}
	return n > 0;
}

/* Reap memwatch run's child if it has exited; true then, with its status, and
 * *kids telling whether it had started programs (read before the reaping, while
 * its /proc entry is still there). */
static bool reap_child(int pid, bool block, int *wstatus, bool *kids)
{
	siginfo_t si;
	pid_t r;
	int e;

	memset(&si, 0, sizeof si);
	do
		e = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
	while (e < 0 && errno == EINTR);
	if (e < 0 || si.si_pid != pid)
		return false;
	*kids = had_children(pid);
	do
		r = waitpid(pid, wstatus, 0);
	while (r < 0 && errno == EINTR);
	return r == pid;
}

/* Write "stopped" when a process is seen stopped (SIGSTOP, job control), in
 * a frozen cgroup, or, in two samples in a row, in a tracing stop (a debugger;
 * a tracer such as strace stops it briefly at every system call), and
 * "continued" when it runs again. Its capture asks nothing of its agent
 * meanwhile. We never continue a process: whoever stopped it does. */
static void note_stopped(struct runlog *log, double t, struct member *m, const struct proc_stat *ps)
{
	enum proc_run run = ps->frozen ? PROC_FROZEN : proc_run_of_state(ps->state);
	bool stopped;

	m->traced = run == PROC_TRACED ? m->traced + 1 : 0;
	stopped = run == PROC_STOPPED || run == PROC_FROZEN || m->traced >= 2;
	if (stopped && !m->stopped) {
		m->stopped_t = t;
		runlog_event(log, t, m->pid, "stopped", "state=%s", proc_run_name(run));
	} else if (!stopped && m->stopped) {
		runlog_event(log, t, m->pid, "continued", "after_s=%.1f", t - m->stopped_t);
	}
	m->stopped = stopped;
	capture_set_stopped(m->cap, run != PROC_RUNNING);
}

/* One watch, from watch_begin to watch_release. */
struct watch {
	struct watch_opts *o;
	bool run_mode;                /* memwatch run: o->run_child is ours */
	bool multi;                   /* several processes: a total line too */
	int *roots;                   /* o->pids (run mode: the child first) */
	size_t nroots;
	struct proc_ident *ids;       /* of the roots, read once */
	struct proc_reader *reader;
	struct proc_tree *tree;       /* -c */
	struct runlog *log;
	char *outname, *prefix;       /* the log's name, the snapshots' prefix */
	struct member *m;             /* the processes watched now */
	size_t nm, capm;
	/* per sample, cap_arr long: the members' pids, figures, metrics */
	int *pids;
	struct proc_stat *stats;
	struct metrics_proc *mprocs;
	size_t cap_arr;
	unsigned metrics_warned;
	struct status_line sl;
	struct signals_saved sigs;    /* given back at the end */
	unsigned sig_base;            /* stop_signal_count() at the start */
	enum end_reason reason;
	int status;                   /* the exit status so far */
	bool lost_output;             /* a capture could not write its snapshots */
	bool child_done;              /* run mode: the child is reaped ... */
	int child_wstatus;            /* ... with this status */
	bool child_kids;              /* ... and had started programs */
	uint64_t start_ns, interval_ns;
};

/* Seconds since the watch started. */
static double watch_now(const struct watch *w)
{
	return (double)(mono_ns() - w->start_ns) / 1e9;
}

/* Room for n members in the per-sample arrays. */
static void watch_reserve(struct watch *w, size_t n)
{
	if (n <= w->cap_arr)
		return;
	w->cap_arr = n * 2;
	w->pids = xrealloc(w->pids, w->cap_arr * sizeof *w->pids);
	w->stats = xrealloc(w->stats, w->cap_arr * sizeof *w->stats);
	w->mprocs = xrealloc(w->mprocs, w->cap_arr * sizeof *w->mprocs);
}

/* A new member, its capture started; cmd is taken. */
static void member_add(struct watch *w, int pid, bool root, bool pss_warned, char *cmd)
{
	if (w->nm == w->capm) {
		w->capm = w->capm ? w->capm * 2 : 8;
		w->m = xrealloc(w->m, w->capm * sizeof *w->m);
	}
	w->m[w->nm++] = (struct member){ .pid = pid, .root = root, .pss_warned = pss_warned,
					 .cap = capture_new(&w->o->capture, pid, w->log),
					 .cmd = cmd, .cg = cgmem_new(pid), .to_limit = -1 };
}

/* Create the run log (never replacing one unless -f) and write its metadata. */
static int watch_open_log(struct watch *w, const char *command_line)
{
	struct watch_opts *o = w->o;
	char *cause = NULL;
	size_t i;

	w->outname = o->output ? xstrdup(o->output) : default_output(o);
	w->log = runlog_create(w->outname, o->force, command_line, o->interval_ms, o->pss,
			       &cause);
	if (!w->log) {
		bool exists = errno == EEXIST;
		mw_error("%s", cause);
		if (!o->output && !exists)
			mw_hint("the run log goes to the current directory by default; -o FILE puts it elsewhere");
		free(cause);
		return MW_EXIT_FAILURE;
	}
	w->prefix = snap_prefix(w->outname);
	o->capture.snap_prefix = w->prefix;
	/* the report is printed on standard output: it must not break into a log
	 * written there */
	if (strcmp(w->outname, "-") == 0)
		o->capture.report = false;
	o->capture.force = o->force;
	for (i = 0; i < w->nroots; i++)
		runlog_meta(w->log, "process", "%d %s", w->roots[i], w->ids[i].cmdline);
	if (o->children)
		runlog_meta(w->log, "children", "yes");
	return 0;
}

/* Check the processes, open the reader and the log, take the signals, start
 * every root's capture. 0, or the exit status after printing why; then
 * watch_release is all that is left to do. */
static int watch_begin(struct watch *w, struct watch_opts *o, const char *command_line)
{
	char *cause = NULL;
	size_t i;
	int r;

	memset(w, 0, sizeof *w);
	w->o = o;
	w->run_mode = o->run_child > 0;
	w->multi = o->children || o->npids > 1;
	w->interval_ns = o->interval_ms * 1000000u;
	/* run mode watches the child; it is a root like a -p pid */
	if (w->run_mode) {
		o->pids = xrealloc(o->pids, (o->npids + 1) * sizeof *o->pids);
		memmove(o->pids + 1, o->pids, o->npids * sizeof *o->pids);
		o->pids[0] = o->run_child;
		o->npids++;
	}
	w->roots = o->pids;
	w->nroots = o->npids;
	w->ids = xcalloc(w->nroots, sizeof *w->ids);
	if ((r = check_pids(w->roots, w->nroots, w->ids, o->pss, o->run_child)) != 0)
		return r;
	w->reader = proc_reader_new(o->pss, &cause);
	if (!w->reader) {
		mw_error("%s", cause);
		free(cause);
		return MW_EXIT_FAILURE;
	}
	if (o->children)
		w->tree = proc_tree_new();
	if ((r = watch_open_log(w, command_line)) != 0)
		return r;

	/* run mode: SIGINT, SIGTERM and a hang-up are passed on to the command
	 * (the terminal sent them to it too), and the child's exit wakes the
	 * sleep; else they end the watch as cleanly as SIGTERM does, the capture
	 * stopped and the log completed. A closed pipe on "-o -" is a write error
	 * that ends the watch, not a death by SIGPIPE that would leave the capture
	 * running. */
	/* (the count before the handlers: a signal that comes as they are
	 * installed counts as one to act on, not as one acted on already) */
	w->sig_base = sigs_handled = stop_signal_count();
	signals_install(SIGS_HUP | SIGS_NOPIPE | (w->run_mode ? SIGS_FORWARD | SIGS_CHLD : 0),
			&w->sigs);
	w->sl.on = !o->quiet && !o->face && isatty(STDERR_FILENO);
	w->sl.plain = !getenv("TERM") || strcmp(getenv("TERM"), "dumb") == 0;

	control_set_interrupt(sig_unhandled);
	w->start_ns = mono_ns();
	runlog_event(w->log, 0, 0, "start", NULL);
	/* another user's process was warned about already, PSS included */
	for (i = 0; i < w->nroots; i++)
		member_add(w, w->roots[i], true, w->ids[i].other_user, xstrdup(w->ids[i].cmdline));
	return 0;
}

/* -c: new members of the trees: everything below any live member. */
static void watch_scan_tree(struct watch *w, double t)
{
	const int *kids, *kppids;
	size_t nk, i, j;

	watch_reserve(w, w->nm);
	for (i = 0, j = 0; i < w->nm; i++)
		if (!w->m[i].gone)
			w->pids[j++] = w->m[i].pid;
	if (proc_tree_scan(w->tree, w->pids, j, &kids, &kppids, &nk) != 0)
		return;
	for (j = 0; j < nk; j++) {
		struct proc_ident id;
		char *v;
		/* an exited member stays in its parent's list until reaped: it
		 * must not join again */
		if (proc_identify(kids[j], &id) < 0)
			continue;
		if (id.zombie) {
			free(id.cmdline);
			continue;
		}
		v = runlog_encode(id.cmdline);
		runlog_event(w->log, t, kids[j], "process", "ppid=%d cmd=%s", kppids[j], v);
		free(v);
		member_add(w, kids[j], false, false, id.cmdline);
	}
}

/* A member is gone: its exit (run mode: the child's status) and the end of its
 * capture. */
static void member_gone(struct watch *w, struct member *m, double t)
{
	bool is_child = w->run_mode && m->pid == w->o->run_child;
	char oom[64] = "";
	uint64_t kills;

	status_clear(&w->sl);
	/* killed by the OOM killer: its cgroup counted a kill since the sample
	 * before the last (read through the cgroup's file: the process's own are
	 * gone). The last one counts too: it may have read the cgroup between
	 * the kill and the end of the process, which takes a while to give back
	 * its memory. */
	if (m->have_oom && cgmem_oom_kills_now(m->cg, &kills) == 0 &&
	    (kills > m->oom_kills || m->oom_kills > m->oom_kills_before)) {
		if (m->cg_limit)
			snprintf(oom, sizeof oom, "oom=1 limit=%llu", (unsigned long long)m->cg_limit);
		else
			snprintf(oom, sizeof oom, "oom=1");
		capture_oom_killed(m->cap, t, m->cg_limit);
	}
	if (is_child && w->child_done && WIFSIGNALED(w->child_wstatus))
		runlog_event(w->log, t, m->pid, "exit", "signal=%d%s%s", WTERMSIG(w->child_wstatus),
			     *oom ? " " : "", oom);
	else if (is_child && w->child_done)
		runlog_event(w->log, t, m->pid, "exit", "status=%d%s%s", WEXITSTATUS(w->child_wstatus),
			     *oom ? " " : "", oom);
	else
		runlog_event(w->log, t, m->pid, "exit", *oom ? "%s" : NULL, oom);
	if (capture_end(m->cap, t, END_EXITED, true) < 0)
		w->lost_output = true;
	capture_free(m->cap);
	m->cap = NULL;
	m->gone = true;
}

/* Its memory cgroup at this sample, into s: usage and limit (KiB), the time
 * left until the limit at the usage's growth over the last seconds, and the
 * count of OOM kills that tells a kill when it dies. */
static void member_cgroup(struct member *m, double t, struct mem_sample *s)
{
	struct cgmem_sample cs;
	double rate;

	m->to_limit = -1;
	/* none (a process that is exiting may show none any more): the limit
	 * of the last reading stays, for the OOM kill said at its end */
	if (cgmem_read(m->cg, &cs) < 0)
		return;
	s->cg_usage = cs.usage / 1024;
	s->cg_limit = cs.limit ? cs.limit / 1024 : RUNLOG_NONE;
	m->cg_limit = cs.limit;
	m->oom_kills_before = m->have_oom ? m->oom_kills : cs.oom_kills;
	m->oom_kills = cs.oom_kills;
	m->have_oom = cs.have_oom_kills;
	cgmem_trend_push(&m->cgtrend, t, (double)cs.usage);
	if (cs.limit && cgmem_trend_rate(&m->cgtrend, &rate))
		m->to_limit = cgmem_seconds_to_limit(cs.usage, cs.limit, rate);
}

/* One member's sample: the log line, its capture, its metrics into *mp. False
 * when it is gone. */
static bool member_sample(struct watch *w, struct member *m, struct proc_stat *ps,
			  double t, struct metrics_proc *mp)
{
	bool is_child = w->run_mode && m->pid == w->o->run_child;

	if (is_child && ps->found && ps->zombie && !w->child_done)
		w->child_done = reap_child(w->o->run_child, true, &w->child_wstatus, &w->child_kids);
	if (!ps->found || ps->zombie || (is_child && w->child_done)) {
		member_gone(w, m, t);
		return false;
	}
	if (ps->pss_denied && !m->pss_warned) {
		status_clear(&w->sl);
		mw_warn("pid %d: cannot read /proc/%d/smaps_rollup: PSS and USS are written as '-'",
			m->pid, m->pid);
		m->pss_warned = true;
	}
	note_stopped(w->log, t, m, ps);
	member_cgroup(m, t, &ps->s);
	runlog_sample(w->log, t, &ps->s);
	capture_sample(m->cap, t, &ps->s);
	if (w->o->metrics) {
		growth_window_push(&m->win, t, (double)ps->s.rss * 1024);
		mp->pid = m->pid;
		mp->command = m->cmd;
		mp->s = &ps->s;
		mp->have_growth = growth_window_slope(&m->win, &mp->growth_bps);
		mp->capture = capture_state_name(m->cap);
		mp->snapshots = capture_snapshots(m->cap);
		mp->to_limit = m->to_limit;
	}
	return true;
}

/* Add s to the total of the members; *pss false once one has no PSS. */
static void total_add(struct mem_sample *total, bool *pss, const struct mem_sample *s)
{
	total->rss += s->rss;
	total->anon += s->anon;
	total->file += s->file;
	total->shmem += s->shmem;
	total->swap += s->swap;
	total->vsz += s->vsz;
	if (s->pss == RUNLOG_NONE) {
		*pss = false;
	} else {
		total->pss += s->pss;
		total->uss += s->uss;
	}
}

/* --metrics after a sample of live processes; a failure is said once, the
 * watch and its log go on. */
static void watch_write_metrics(struct watch *w, size_t live, double t)
{
	char *cause = NULL;

	if (metrics_write(w->o->metrics, w->mprocs, live, t, &cause) == 0)
		return;
	if (!w->metrics_warned++) {
		status_clear(&w->sl);
		mw_warn("--metrics: %s", cause);
	}
	free(cause);
}

/* Forget the members that are gone, keeping the order of the rest. */
static void watch_drop_gone(struct watch *w)
{
	size_t i, j = 0;

	for (i = 0; i < w->nm; i++) {
		if (!w->m[i].gone)
			w->m[j++] = w->m[i];
		else {
			free(w->m[i].cmd);
			cgmem_free(w->m[i].cg);
		}
	}
	w->nm = j;
}

/* Whether the watch ends after this sample: the log failed, the processes are
 * gone, the duration is over. Sets the reason and status then. */
static bool watch_over(struct watch *w)
{
	if (runlog_error(w->log)) {
		status_clear(&w->sl);
		mw_error("cannot write '%s': %s", runlog_path(w->log), strerror(runlog_error(w->log)));
		w->status = MW_EXIT_FAILURE;
		w->reason = END_ERROR;
		return true;
	}
	if (w->run_mode && w->child_done) {
		w->reason = END_EXITED;
		return true;
	}
	if (!w->run_mode && w->nm == 0) {
		w->reason = END_EXITED;
		w->status = MW_EXIT_GONE;
		return true;
	}
	if (w->o->duration_ms && mono_ns() - w->start_ns >= w->o->duration_ms * 1000000u) {
		w->reason = END_DURATION;
		return true;
	}
	return false;
}

/* Show the face this sample's members (the live ones, in order). */
static void watch_face_sampled(struct watch *w, double t)
{
	struct watch_member *v = xcalloc(w->nm ? w->nm : 1, sizeof *v);
	size_t i, j;

	/* w->stats is in the order of the members before the gone were dropped */
	for (i = 0; i < w->nm; i++) {
		for (j = 0; w->pids[j] != w->m[i].pid; j++)
			;
		v[i] = (struct watch_member){ .pid = w->m[i].pid, .cmd = w->m[i].cmd,
					      .s = &w->stats[j].s, .cap = w->m[i].cap };
	}
	w->o->face->sampled(w->o->face->arg, t, v, w->nm);
	free(v);
}

/* A signal came that ends the watch (for a face's wait). */
static bool face_stop(void)
{
	return stop_requested() != 0;
}

/* One sample of every member (the tree re-scanned first with -c), their
 * total, the metrics and the status line. False when the watch ends. */
static bool watch_sample(struct watch *w)
{
	struct mem_sample total = { .pid = 0, .hwm = RUNLOG_NONE, .cg_usage = RUNLOG_NONE,
				    .cg_limit = RUNLOG_NONE };
	double to_limit = -1;
	bool total_pss = true;
	size_t live = 0, i;
	double t;
	int e;

	if (w->run_mode && !w->child_done &&
	    reap_child(w->o->run_child, false, &w->child_wstatus, &w->child_kids))
		w->child_done = true;
	child_exit_clear();
	t = watch_now(w);
	if (w->o->children)
		watch_scan_tree(w, t);
	watch_reserve(w, w->nm);
	for (i = 0; i < w->nm; i++)
		w->pids[i] = w->m[i].pid;
	e = proc_read(w->reader, w->pids, w->nm, w->stats);
	if (e < 0) {
		mw_error("cannot read /proc: %s", strerror(-e));
		w->status = MW_EXIT_FAILURE;
		w->reason = END_ERROR;
		return false;
	}
	for (i = 0; i < w->nm; i++) {
		if (!member_sample(w, &w->m[i], &w->stats[i], t, &w->mprocs[live]))
			continue;
		live++;
		if (w->m[i].to_limit >= 0 && (to_limit < 0 || w->m[i].to_limit < to_limit))
			to_limit = w->m[i].to_limit;
		total_add(&total, &total_pss, &w->stats[i].s);
	}
	if (!total_pss || !w->o->pss)
		total.pss = total.uss = RUNLOG_NONE;
	if (w->multi && live > 0)
		runlog_sample(w->log, t, &total);
	if (w->o->metrics)
		watch_write_metrics(w, live, t);
	watch_drop_gone(w);
	if (live > 0)
		status_show(&w->sl, t, total.rss, live, to_limit);
	if (w->o->face && live > 0)
		watch_face_sampled(w, t);
	return !watch_over(w);
}

/* Sleep until the absolute monotonic deadline; false when woken early by a
 * signal that the loop must look at (run mode: also the child's exit). */
static bool sleep_until(const struct watch *w, uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000u),
		.tv_nsec = (long)(deadline_ns % 1000000000u),
	};
	for (;;) {
		if (w->run_mode ? child_exit_seen() || stop_signal_count() != sigs_handled
				: stop_requested() != 0)
			return false;
		int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (r == 0)
			return true;
		if (r != EINTR)
			return true;
	}
}

/* Run mode: a signal came. One typed at the terminal went to the child's
 * process group already; one sent to memwatch alone is passed on to the
 * child. False after the third: the child does not end, the watch does and
 * leaves it running. */
static bool watch_forward_signal(struct watch *w)
{
	bool from_tty;
	int sig = signal_last(&from_tty);

	sigs_handled = stop_signal_count();
	if (!from_tty && !w->child_done)
		kill(w->o->run_child, sig);
	runlog_event(w->log, watch_now(w), 0, "signal", "signal=%d forwarded=%s", sig,
		     from_tty ? "no" : "yes");
	if (sigs_handled - w->sig_base < 3)
		return true;
	status_clear(&w->sl);
	mw_warn("pid %d does not exit after 3 signals: the watch ends, it goes on running",
		w->o->run_child);
	w->status = MW_EXIT_SIGNAL + sig;
	w->reason = END_SIGNAL;
	return false;
}

/* Wait for the next deadline on the grid start + k * interval (missed ones
 * skipped, the last one at the duration's end). False when a signal ends the
 * watch. */
static bool watch_wait(struct watch *w)
{
	uint64_t now = mono_ns(), next, k;
	uint64_t end = w->start_ns + w->o->duration_ms * 1000000u;
	int sig;

	k = (now - w->start_ns) / w->interval_ns + 1;
	next = w->start_ns + k * w->interval_ns;
	if (w->o->duration_ms && next > end)
		next = end;
	if (w->o->face) {
		int r = w->o->face->wait(w->o->face->arg, next, face_stop);
		if (r == FACE_QUIT) {
			w->reason = END_QUIT;
			runlog_event(w->log, watch_now(w), 0, "quit", NULL);
			return false;
		}
		if (r == FACE_DUE)
			return true;
	}
	if ((w->o->face && stop_requested()) || (!w->o->face && !sleep_until(w, next) && !w->run_mode)) {
		sigs_handled = stop_signal_count();
		sig = stop_requested();
		w->status = MW_EXIT_SIGNAL + sig;
		w->reason = END_SIGNAL;
		runlog_event(w->log, watch_now(w), 0, "signal", "signal=%d", sig);
		return false;
	}
	if (w->run_mode && stop_signal_count() != sigs_handled)
		return watch_forward_signal(w);
	return true;
}

/* Run mode, at the end: the command's status, and what it left. */
static void watch_end_run(struct watch *w)
{
	const struct watch_opts *o = w->o;

	if (w->child_done)
		w->status = WIFSIGNALED(w->child_wstatus) ? MW_EXIT_SIGNAL + WTERMSIG(w->child_wstatus)
							  : WEXITSTATUS(w->child_wstatus);
	if (!w->child_done && w->reason == END_DURATION) {
		/* the watch was asked to last this long, not the command: it is
		 * left running as memwatch -p leaves its processes */
		fprintf(stderr, "memwatch: pid %d is still running: the watch ended at --duration, "
			"the command goes on without it\n", o->run_child);
		w->child_kids = had_children(o->run_child);
	}
	if (w->child_kids && !o->children && o->capture.mode != CAPTURE_NEVER) {
		/* e.g. sh -c 'a | b': the memory is in programs that were not sampled */
		fprintf(stderr, "memwatch: pid %d started other programs, which were not watched\n",
			o->run_child);
		mw_hint("memwatch run --children watches the programs the command starts");
	}
}

/* End every capture (last snapshots), complete and close the log, give the
 * signals back; the exit status is final after it. */
static void watch_end(struct watch *w)
{
	char *cause = NULL;
	double t;
	size_t i;

	status_clear(&w->sl);
	/* the terminal is the shell's again before the last snapshots */
	if (w->o->face)
		w->o->face->end(w->o->face->arg);
	/* the signal that ended the watch is acted on; another one cuts the last
	 * snapshots short */
	sigs_handled = stop_signal_count();
	for (i = 0; i < w->nm; i++) {
		/* each at its own time: the last snapshots of those before it
		 * took a while, and the log's events stay in time order */
		if (capture_end(w->m[i].cap, watch_now(w), w->reason, false) < 0)
			w->lost_output = true;
		capture_free(w->m[i].cap);
		free(w->m[i].cmd);
		cgmem_free(w->m[i].cg);
	}
	w->nm = 0;
	/* after the last snapshots, which may have taken a while */
	t = watch_now(w);
	runlog_event(w->log, t, 0, "end", "reason=%s", end_reason_name(w->reason));
	/* the watch is over: no process is reported any more */
	if (w->o->metrics && metrics_write(w->o->metrics, NULL, 0, t, &cause) < 0) {
		free(cause);
		cause = NULL;
	}
	control_set_interrupt(NULL);
	if (w->run_mode)
		watch_end_run(w);
	signals_restore(&w->sigs);
	/* outside run mode, a watch whose snapshots were lost has failed */
	if (w->lost_output && !w->run_mode &&
	    (w->status == MW_EXIT_OK || w->status == MW_EXIT_GONE))
		w->status = MW_EXIT_FAILURE;
	if (runlog_close(w->log, &cause) < 0) {
		if (w->status != MW_EXIT_FAILURE || w->reason != END_ERROR)
			mw_error("%s", cause);
		free(cause);
		if (w->status == MW_EXIT_OK || w->status == MW_EXIT_GONE)
			w->status = MW_EXIT_FAILURE;
	}
	w->log = NULL;
}

/* Free what the watch holds and give the pid list back as the caller made it. */
static void watch_release(struct watch *w)
{
	struct watch_opts *o = w->o;
	size_t i;

	if (w->run_mode) {
		memmove(o->pids, o->pids + 1, (o->npids - 1) * sizeof *o->pids);
		o->npids--;
	}
	o->capture.snap_prefix = NULL;
	for (i = 0; w->ids && i < w->nroots; i++)
		free(w->ids[i].cmdline);
	free(w->ids);
	free(w->m);
	free(w->pids);
	free(w->stats);
	free(w->mprocs);
	free(w->outname);
	free(w->prefix);
	proc_tree_free(w->tree);
	proc_reader_free(w->reader);
}

/* The watch: check the processes, create the log, then sample on a fixed grid of
 * deadlines until the duration, a signal or the processes' exit (see watch.h). */
int watch_loop(struct watch_opts *o, const char *command_line)
{
	struct watch w;
	int status = watch_begin(&w, o, command_line);

	if (status == 0) {
		while (watch_sample(&w) && watch_wait(&w))
			;
		watch_end(&w);
		status = w.status;
	}
	watch_release(&w);
	return status;
}

/* memwatch [watch]: parse, watch, give the status. */
int cmd_watch(int argc, char **argv)
{
	struct watch_opts o;
	char *cmdline;
	int r, argi = 0;
	bool named = argc > 0 && strcmp(argv[0], "watch") == 0;

	watch_opts_init(&o);
	r = watch_parse(argc, argv, &o, false, &argi);
	if (r == WATCH_PARSE_HELP) {
		watch_opts_release(&o);
		return mw_usage_print(watch_usage);
	}
	if (r != 0) {
		watch_opts_release(&o);
		return r;
	}
	cmdline = watch_command_line(named ? "memwatch watch" : "memwatch", argc, argv);
	r = watch_loop(&o, cmdline);
	free(cmdline);
	watch_opts_release(&o);
	return r;
}
