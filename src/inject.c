/* inject.c: load the agent into a running process with ptrace. One thread is
 * stopped at a safe point, made to call dlopen() and memwatch_agent_start() on
 * its own stack, then put back exactly as it was; the others never stop. What
 * can be learnt before stopping a thread, and the refusals explained, are in
 * inject-prepare.c. */
#include "config.h"
#include "container.h"
#include "inject-internal.h"
#include "util.h"
#include "agent/protocol.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libunwind.h>
#include <libunwind-ptrace.h>

/* What the start function's result slot holds until it stores its result. */
#define START_PENDING "mwsp"

/* With the chosen thread stopped and its registers saved: write the signal
 * frame our calls return through, dlopen the agent (unless loaded), then call
 * its start function. Neither return value survives rt_sigreturn: the agent
 * is looked for in the memory map, dlopen's error in the thread's dlerror
 * state. Returns 0 or -kind; *no_restore when the thread was left in a call
 * (it puts itself back when the call returns). */
static int do_calls(struct injector *ij, struct seized *s, struct inject_result *res, bool *no_restore,
		    char **cause, char **hint)
{
	char msg[256] = "", room[MEMFD_PATH_MAX];
	uint64_t start_addr, addrs[5];
	/* the third: where the start function stores its result (a sentinel
	 * until then, and for an agent that does not store it); the fourth and
	 * fifth, for a load through a memfd: its name, and room for the path */
	const char *strs[5] = { ij->placed.path ? ij->placed.path : ij->agent_abs, ij->options,
				START_PENDING, AGENT_SONAME, room };
	enum call_result cr;
	int pid = ij->pid, lr;

	*no_restore = false;
	memset(room, '/', sizeof room - 1);
	room[sizeof room - 1] = '\0';
	if (frame_build(pid, s, ij->rt_sigreturn_addr, strs, ij->via_memfd ? 5 : 3, addrs, msg, sizeof msg) < 0)
		return inject_fail(INJECT_EINTERNAL, cause, hint, NULL, "%s", msg);
	if (ij->loaded.path) {
		start_addr = ij->loaded.bias + ij->start_off;
		res->already_loaded = true;
	} else if (ij->via_memfd) {
		if ((lr = memfd_load_agent(ij, s, addrs, &start_addr, &cr, msg, sizeof msg, cause, hint)) > 0)
			goto call_failed;
		if (lr < 0)
			return lr;
	} else {
		uint64_t flags = RTLD_NOW | (ij->dlopen_is_private ? RTLD_DLOPEN_FLAG : 0);
		cr = remote_call(pid, s, ij->dlopen_addr, addrs[0], flags, CALL_TIMEOUT_MS, msg, sizeof msg);
		/* mapped (or refused): a copy in a container is not needed any more */
		container_agent_remove(&ij->placed);
		if (cr != CALL_OK)
			goto call_failed;
		/* find where it went */
		struct maps m;
		struct module mod;
		char *c2 = NULL;
		if (procmaps_read(pid, &m) < 0)
			return inject_fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited during injection");
		int r = module_from_maps(pid, &m, NULL, ij->agent_st.st_dev, ij->agent_st.st_ino, false, NULL,
					 &mod, &c2);
		if (r == 0 && ij->placed.copied)   /* a copy in its container, by name */
			r = module_from_maps(pid, &m, match_agent, 0, 0, false, NULL, &mod, &c2);
		procmaps_free(&m);
		free(c2);
		if (r <= 0) {
			char err[512] = "";
			dlerror_read(pid, &ij->cl.maps, &ij->cl.libc, s->regs.fs_base, err, sizeof err);
			return inject_fail(INJECT_EDLOPEN, cause, hint,
				    ij->st.seccomp == 2 ? "the process runs under a seccomp filter, which may forbid loading code" : NULL,
				    "dlopen of the agent failed in the process: %s",
				    err[0] ? err : (msg[0] ? msg : "no reason given"));
		}
		start_addr = mod.bias + ij->start_off;
		module_free(&mod);
	}
	uint64_t t_start = mono_ns();
	cr = remote_call(pid, s, start_addr, addrs[1], addrs[2], CALL_TIMEOUT_MS, msg, sizeof msg);
	if (cr != CALL_OK)
		goto call_failed;
	if (getenv("MEMWATCH_INJECT_DEBUG"))
		fprintf(stderr, "inject: %s took %.2f ms\n", MEMWATCH_AGENT_START_SYMBOL, ms_since(t_start));
	int32_t started;
	struct iovec l = { &started, 4 }, r = { (void *)addrs[2], 4 };
	if (process_vm_readv(pid, &l, 1, &r, 1, 0) == 4 && memcmp(&started, START_PENDING, 4) &&
	    started != 0)
		return inject_fail(INJECT_ESTART, cause, hint, NULL, "%s(\"%s\") returned %d in the process",
			    MEMWATCH_AGENT_START_SYMBOL, ij->options, started);
	return 0;

call_failed:
	switch (cr) {
	case CALL_GONE:
		*no_restore = true;
		return inject_fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited during injection%s%s",
			    msg[0] ? ": " : "", msg);
	case CALL_CRASH:
		*no_restore = true;
		return inject_fail(INJECT_EINTERNAL, cause, hint,
			    ij->st.seccomp == 2 ? "the process runs under a seccomp filter, which may kill "
						  "it for the loader's system calls" : NULL,
			    "the process crashed during injection: %s",
			    msg[0] ? msg : "fatal signal");
	case CALL_TIMEOUT:
		*no_restore = true;
		if (msg[0])     /* the time was lost by memwatch, not by the call */
			return inject_fail(INJECT_EINTERNAL, cause, hint,
				    "memwatch let go of it: the thread resumes where it was when the call returns",
				    "%s in thread %d, over its %u ms limit", msg, s->tid, CALL_TIMEOUT_MS);
		return inject_fail(INJECT_EINTERNAL, cause, hint,
			    "memwatch let go of it: the thread resumes where it was when the call returns",
			    "a call in thread %d did not return within %u ms",
			    s->tid, CALL_TIMEOUT_MS);
	default:
		/* nothing ran, or the previous call ended: release restores it */
		return inject_fail(INJECT_EINTERNAL, cause, hint, NULL, "%s", msg);
	}
}
/* Keep the latest reason each thread was passed over, across rounds. */
static void remember_reasons(struct cand **seen, size_t *nseen, const struct cand *c, int n)
{
	for (int i = 0; i < n; i++) {
		size_t k;
		if (!c[i].why[0])
			continue;
		for (k = 0; k < *nseen; k++)
			if ((*seen)[k].tid == c[i].tid)
				break;
		if (k == *nseen) {
			*seen = xrealloc(*seen, (*nseen + 1) * sizeof **seen);
			(*nseen)++;
		}
		(*seen)[k] = c[i];
	}
}

static int rand_between(unsigned lo, unsigned hi)
{
	static unsigned seed;
	if (!seed)
		seed = (unsigned)mono_ns() ^ (unsigned)getpid();
	return (int)(lo + (unsigned)rand_r(&seed) % (hi - lo + 1));
}

/* Free what prepare and the search found, for another try or the end. */
static void injector_clear(struct injector *ij)
{
	if (ij->cl.as)
		unw_destroy_addr_space(ij->cl.as);
	procmaps_free(&ij->cl.maps);
	module_free(&ij->cl.libc);
	module_free(&ij->cl.ldso);
	module_free(&ij->cl.libpthread);
	module_free(&ij->loaded);
	free(ij->agent_abs);
	container_agent_release(&ij->placed);
	*ij = (struct injector){ .pid = ij->pid, .options = ij->options };
}

/* What became of one thread tried by inject_agent. */
enum try_result {
	TRY_NEXT,               /* not usable now (c->why says why): try another */
	TRY_DONE,               /* finished, *ret says how */
	TRY_BUSY,               /* another memwatch is attaching: wait for it */
	TRY_EXECED,             /* the process executed another program: start over */
};

/* A stopped thread that is not at a safe point but inside libc, on its way
 * back to the application at run_to: let it run a few hundred microseconds at
 * a time, within RUN_TO_RETURN_MS, until it is at one. True when it is; else
 * why says what it did, and *group is set when the process was stopped by job
 * control meanwhile. *fixed: its registers were rewritten by the EINTR fix-up
 * (release writes them back). */
static bool run_to_return(struct injector *ij, struct seized *s, uint64_t run_to, bool *fixed,
			  bool *group, char *why, size_t whylen, bool debug)
{
	uint64_t t_run = mono_ns();
	int rr = STOP_OK, tries = 0;
	bool ok = false;

	*fixed = false;
	while (!ok && run_to && rr == STOP_OK && ms_since(t_run) < RUN_TO_RETURN_MS) {
		if (*fixed && ptrace_req(PTRACE_SETREGS, s->tid, NULL, &s->regs) < 0)
			break;
		rr = run_briefly(s, (unsigned)rand_between(50, 400));
		tries++;
		*fixed = false;
		if (rr != STOP_OK)
			break;
		*fixed = undo_eintr(s);
		run_to = 0;
		ok = regs_ok(&ij->cl, s, why, whylen) &&
		     safe_point(&ij->cl, s->tid, s->regs.rip, &run_to, why, whylen);
	}
	s->ran_ms = ms_since(t_run);
	if (!ok && run_to && rr == STOP_OK) {
		snprintf(why, whylen, "did not return to the application within %d ms",
			 RUN_TO_RETURN_MS);
	} else if (rr == STOP_TIMEOUT) {
		snprintf(why, whylen, "did not stop again within %d ms", STOP_TIMEOUT_MS);
	} else if (rr == STOP_GROUP) {
		*group = true;
		return false;
	}
	if (debug)
		fprintf(stderr, "inject: tid %d ran %d times in %.2f ms: %s\n", s->tid, tries,
			s->ran_ms, ok ? "accepted" : why);
	return ok;
}

/* Seize thread c, vet it (from round 1 on, running it to its return out of
 * libc if need be) and, when at a safe point, make the calls on it. */
static enum try_result try_thread(struct injector *ij, struct cand *c, unsigned round, uint64_t t0,
				  unsigned *eperm_retries, bool debug, struct inject_result *res,
				  int *ret, char **cause, char **hint)
{
	struct seized s = { .tid = c->tid };
	char why[96] = "";
	int pid = ij->pid, err = 0;

	int sr = seize_and_stop(&s, &err);
	if (sr == STOP_ERROR && err == EPERM) {
		release(pid, &s, false);
		/* another memwatch seized this thread to attach: wait for
		 * it (it may have let go already: look again, a few times) */
		if ((ij->busy_by = memwatch_tracing(pid)) || (*eperm_retries)++ < 3)
			return TRY_BUSY;
		*ret = explain_eperm(ij, cause, hint);
		return TRY_DONE;
	}
	if (sr != STOP_OK) {
		if (sr == STOP_GROUP)
			snprintf(c->why, sizeof c->why, "stopped by job control");
		else if (sr == STOP_FAULT)
			snprintf(c->why, sizeof c->why, "taking signal %d", s.pending_sig);
		else if (sr == STOP_TIMEOUT)
			snprintf(c->why, sizeof c->why, "did not stop within %d ms", STOP_TIMEOUT_MS);
		else if (sr == STOP_GONE)
			snprintf(c->why, sizeof c->why, "exited");
		else
			snprintf(c->why, sizeof c->why, "ptrace: %s", strerror(err));
		release(pid, &s, false);
		if (sr == STOP_GROUP) {
			*ret = fail_stopped(pid, cause, hint);
			return TRY_DONE;
		}
		if (!process_exists(pid)) {
			*ret = inject_fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
			return TRY_DONE;
		}
		return TRY_NEXT;
	}
	int mine = still_ours(ij, s.tid);
	if (mine <= 0) {
		release(pid, &s, false);
		if (mine < 0) {
			*ret = inject_fail(INJECT_ENOPROC, cause, hint, NULL,
				    "the process exited (its pid was reused)");
			return TRY_DONE;
		}
		snprintf(c->why, sizeof c->why, "exited");
		return TRY_NEXT;
	}
	if (save_regs(&s, &err) < 0) {
		snprintf(c->why, sizeof c->why, "cannot read registers: %s", strerror(err));
		release(pid, &s, false);
		return TRY_NEXT;
	}
	bool fixed = undo_eintr(&s);
	uint64_t t_vet = mono_ns(), run_to = 0;
	bool ok = regs_ok(&ij->cl, &s, why, sizeof why) &&
		  safe_point(&ij->cl, s.tid, s.regs.rip, &run_to, why, sizeof why);
	if (debug)
		fprintf(stderr, "inject: tid %d rax=%lld orig_rax=%lld stopped after %.2f ms, "
			"vetted in %.2f ms: %s%s%s\n", s.tid, (long long)s.regs.rax,
			(long long)s.regs.orig_rax, (double)(t_vet - s.t_interrupt) / 1e6,
			ms_since(t_vet), ok ? "accepted" : "rejected: ", ok ? "" : why,
			run_to && round > 0 ? " (running it to its return)" : "");
	/* From the second round on (no thread was at a safe point when
	 * stopped), a thread inside libc is run to its return instead:
	 * busy processes, rarely caught outside malloc, then still attach.
	 * The first round prefers threads that need no run, whose pause
	 * is shorter. */
	if (!ok && run_to && round > 0 &&
	    (!fixed || ptrace_req(PTRACE_SETREGS, s.tid, NULL, &s.regs) == 0)) {
		bool group = false;
		ok = run_to_return(ij, &s, run_to, &fixed, &group, why, sizeof why, debug);
		if (group) {
			release(pid, &s, false);
			*ret = fail_stopped(pid, cause, hint);
			return TRY_DONE;
		}
	}
	if (!ok) {
		snprintf(c->why, sizeof c->why, "%s", why);
		/* registers are written back only for the EINTR fix-up:
		 * nothing else was changed */
		release(pid, &s, fixed);
		return TRY_NEXT;
	}
	/* the last look before the calls: a stopped thread cannot execute a
	 * program, and another thread that does ends this one */
	if (!same_program(ij)) {
		release(pid, &s, fixed);
		return TRY_EXECED;
	}
	if (save_xstate(&s, &err) < 0) {
		snprintf(c->why, sizeof c->why, "cannot read its extended registers: %s",
			 strerror(err));
		release(pid, &s, fixed);
		return TRY_NEXT;
	}
	bool no_restore;
	res->tid = s.tid;
	uint64_t t_calls = mono_ns();
	*ret = do_calls(ij, &s, res, &no_restore, cause, hint);
	uint64_t t_release = mono_ns();
	release(pid, &s, !no_restore);
	res->pause_ms = ms_since(s.t_interrupt) - s.ran_ms;
	if (debug)
		fprintf(stderr, "inject: calls %.2f ms, restore and detach %.2f ms\n",
			(double)(t_release - t_calls) / 1e6, ms_since(t_release));
	res->total_ms = ms_since(t0);
	return TRY_DONE;
}

/* No thread was at a safe point before the deadline: say what the threads
 * were doing (the last reason seen for each, also for those the deadline cut
 * off in the last round). */
static int fail_no_safepoint(struct cand *cands, int ncand, struct cand **seen, size_t *nseen,
			     unsigned attempts, unsigned deadline_ms, double prepared_ms,
			     char **cause, char **hint)
{
	remember_reasons(seen, nseen, cands, ncand);
	for (int i = 0; i < ncand; i++)
		for (size_t k = 0; k < *nseen; k++)
			if ((*seen)[k].tid == cands[i].tid && !cands[i].why[0])
				memcpy(cands[i].why, (*seen)[k].why, sizeof cands[i].why);
	size_t cap = 512, len = 0;
	char *what = xmalloc(cap);
	int shown = 0;
	what[0] = '\0';
	for (int i = 0; i < ncand && shown < 4; i++) {
		if (!cands[i].why[0])
			continue;
		char *part = xasprintf("%sthread %d %s", shown ? "; " : "", cands[i].tid, cands[i].why);
		size_t pl = strlen(part);
		if (len + pl + 1 > cap) {
			cap = 2 * (len + pl + 1);
			what = xrealloc(what, cap);
		}
		memcpy(what + len, part, pl + 1);
		len += pl;
		free(part);
		shown++;
	}
	int more = 0, deep = 0;
	for (int i = 0; i < ncand; i++) {
		more += cands[i].why[0] != '\0';
		deep += strncmp(cands[i].why, DEEP_STACK_WHY, strlen(DEEP_STACK_WHY)) == 0;
	}
	more -= shown;
	/* a starved machine: the deadline passed before a thread was tried */
	char *late = attempts == 0 && prepared_ms >= deadline_ms
			     ? xasprintf("; the attach took %.0f ms to prepare, before any thread "
					 "was tried", prepared_ms)
			     : xstrdup("");
	int r = inject_fail(INJECT_ENOSAFEPOINT, cause, hint,
		     deep && deep == more + shown ?
		     "attach again when it has returned from the depth, raise its stack limit (ulimit -s) "
		     "before it starts, or start the program with memwatch run to preload the agent" :
		     "retry later, or start the program with memwatch run to preload the agent",
		     "no thread at a safe point within %u ms (%u attempts): %s%s%s", deadline_ms,
		     attempts, what[0] ? what : "no thread could be examined",
		     more > 0 ? "; ..." : "", late);
	free(late);
	free(what);
	return r;
}

/* Another memwatch is attaching (ij->busy_by traces a thread): wait until it
 * has finished, within the deadline. 0, or -kind with the cause. */
static int wait_other_memwatch(struct injector *ij, uint64_t deadline, unsigned deadline_ms,
			       char **cause, char **hint)
{
	int other = ij->busy_by;
	while (memwatch_tracing(ij->pid)) {
		if (stop_signal_pending())
			return inject_fail(INJECT_ENOSAFEPOINT, cause, hint, NULL,
				    "interrupted while memwatch pid %d was attaching", other);
		if (mono_ns() >= deadline)
			return inject_fail(INJECT_ENOSAFEPOINT, cause, hint, "retry when it has finished",
				    "memwatch pid %d is attaching to the process and did not finish "
				    "within %u ms", other, deadline_ms);
		nap_us(5000);
	}
	return process_exists(ij->pid) ? 0 : inject_fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
}

int inject_agent(int pid, const char *agent_path, const char *options, unsigned deadline_ms,
		 struct inject_result *res, char **cause, char **hint)
{
	uint64_t t0 = mono_ns();
	uint64_t deadline = t0 + (uint64_t)deadline_ms * 1000000u;
	struct injector ij = { .pid = pid, .options = options ? options : "" };
	struct cand *cands = NULL, *seen = NULL;
	size_t nseen = 0;
	int ret, ncand = 0;
	unsigned eperm_retries = 0, execs = 0;
	double prepared_ms = 0;
	bool debug = getenv("MEMWATCH_INJECT_DEBUG") != NULL;

	memset(res, 0, sizeof *res);
	*cause = NULL;
	*hint = NULL;
	if (pid <= 0)
		return inject_fail(INJECT_ENOPROC, cause, hint, NULL, "no such process");
restart:
	/* a start over (another memwatch was attaching, the process executed
	 * another program) forgets the threads seen before */
	free(cands);
	free(seen);
	cands = seen = NULL;
	ncand = 0;
	nseen = 0;
	if ((ret = inject_prepare(&ij, agent_path, cause, hint)) == -INJECT_EBUSY)
		goto busy;
	if (ret == -INJECT_ESTARTING && execs && mono_ns() < deadline && !stop_signal_pending()) {
		/* the program it executed is still in the loader: wait for its libc */
		free(*cause);
		free(*hint);
		*cause = *hint = NULL;
		injector_clear(&ij);
		nap_us(5000);
		goto restart;
	}
	if (ret < 0)
		goto out;

	if (debug)
		fprintf(stderr, "inject: prepared in %.2f ms\n", ms_since(t0));
	/* in another root, or once upgraded, its paths name other files or none */
	ij.cl.as = unw_create_addr_space(ij.unwind_map_files ? container_unwind_accessors(pid)
							     : &_UPT_accessors, 0);
	if (!ij.cl.as) {
		ret = inject_fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot create a libunwind address space");
		goto out;
	}
	unw_set_caching_policy(ij.cl.as, UNW_CACHE_GLOBAL);
	prepared_ms = ms_since(t0);

	for (unsigned round = 0;; round++) {
		remember_reasons(&seen, &nseen, cands, ncand);
		free(cands);
		cands = NULL;
		if ((ncand = list_threads(pid, &cands)) <= 0) {
			ret = inject_fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
			goto out;
		}
		for (int i = 0; i < ncand; i++) {
			struct cand *c = &cands[i];

			if (c->cls == CAND_SKIP)
				continue;
			if (mono_ns() >= deadline || stop_signal_pending())
				break;
			res->attempts++;
			enum try_result tr = try_thread(&ij, c, round, t0, &eperm_retries, debug, res, &ret,
							cause, hint);
			if (tr == TRY_BUSY)
				goto busy;
			if (tr == TRY_EXECED)
				goto execed;
			if (tr == TRY_DONE)
				goto out;
		}
		if (stop_signal_pending()) {
			ret = inject_fail(INJECT_ENOSAFEPOINT, cause, hint, NULL, "interrupted while looking for a safe point");
			goto out;
		}
		if (mono_ns() >= deadline)
			break;
		nap_us((unsigned)rand_between(1000, 5000));
	}

	ret = fail_no_safepoint(cands, ncand, &seen, &nseen, res->attempts, deadline_ms, prepared_ms,
				cause, hint);
	goto out;
execed:
	/* bounded: a process that executes programs faster than we can look at
	 * them is given up on */
	if (++execs > 20 || mono_ns() >= deadline) {
		ret = inject_fail(INJECT_ENOSAFEPOINT, cause, hint, "retry once it runs one program",
			   "the process executed another program during the attach, %u times", execs);
		goto out;
	}
	if (debug)
		fprintf(stderr, "inject: the process executed another program: starting over\n");
	injector_clear(&ij);
	goto restart;
busy:
	if (debug)
		fprintf(stderr, "inject: memwatch pid %d is attaching: waiting for it\n", ij.busy_by);
	nap_us((unsigned)rand_between(1000, 5000));
	if ((ret = wait_other_memwatch(&ij, deadline, deadline_ms, cause, hint)) < 0)
		goto out;
	injector_clear(&ij);
	goto restart;
out:
	if (ret == 0 || res->total_ms == 0)
		res->total_ms = ms_since(t0);
	if (debug)
		fprintf(stderr, "inject: %ld ptrace requests\n", ptrace_requests());
	free(cands);
	free(seen);
	injector_clear(&ij);
	return ret;
}

bool inject_agent_loaded(int pid)
{
	struct maps m;
	bool found = false;

	if (procmaps_read(pid, &m) < 0)
		return false;
	for (size_t i = 0; i < m.n && !found; i++)
		found = match_agent(base_name(m.v[i].path));
	procmaps_free(&m);
	return found;
}
