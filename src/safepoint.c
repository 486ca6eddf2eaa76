/* safepoint.c: the safe-point policy of the injector: which threads may be
 * interrupted at all (from the system call they are in), and whether a stopped
 * thread's registers and stack allow running dlopen on it now. */
#include "config.h"
#include "inject-internal.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libunwind.h>
#include <libunwind-ptrace.h>

/* ---------------------------------------------------------------- threads */

/* System calls after which a stop makes the call fail with EINTR (signal(7),
 * "Interruption of system calls ... by stop signals"): never interrupt them. */
static bool eintr_prone(long nr)
{
	switch (nr) {
	case SYS_epoll_wait: case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_semop: case SYS_semtimedop: case SYS_rt_sigtimedwait:
		return true;
	}
	return false;
}

/* The allocator's own system calls: a thread in one holds an arena lock. Also
 * process-creation calls, whose state must not be disturbed. */
static bool allocator_or_process_syscall(long nr)
{
	switch (nr) {
	case SYS_mmap: case SYS_munmap: case SYS_mremap: case SYS_brk: case SYS_madvise:
	case SYS_mprotect: case SYS_vfork: case SYS_clone: case SYS_execve: case SYS_execveat:
	case SYS_exit: case SYS_exit_group:
#ifdef SYS_clone3
	case SYS_clone3:
#endif
		return true;
	}
	return false;
}

static bool socket_syscall(long nr)
{
	switch (nr) {
	case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg: case SYS_sendto:
	case SYS_sendmsg: case SYS_sendmmsg: case SYS_accept: case SYS_accept4: case SYS_connect:
		return true;
	}
	return false;
}

static const char *syscall_name(long nr)
{
	switch (nr) {
	case SYS_read: return "read";
	case SYS_write: return "write";
	case SYS_poll: return "poll";
	case SYS_ppoll: return "ppoll";
	case SYS_select: return "select";
	case SYS_pselect6: return "pselect6";
	case SYS_nanosleep: return "nanosleep";
	case SYS_clock_nanosleep: return "clock_nanosleep";
	case SYS_futex: return "futex";
	case SYS_wait4: return "wait4";
	case SYS_waitid: return "waitid";
	case SYS_pause: return "pause";
	case SYS_rt_sigsuspend: return "rt_sigsuspend";
	case SYS_epoll_wait: return "epoll_wait";
	case SYS_epoll_pwait: return "epoll_pwait";
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2: return "epoll_pwait2";
#endif
	case SYS_semop: return "semop";
	case SYS_semtimedop: return "semtimedop";
	case SYS_rt_sigtimedwait: return "rt_sigtimedwait";
	case SYS_mmap: return "mmap";
	case SYS_munmap: return "munmap";
	case SYS_mremap: return "mremap";
	case SYS_brk: return "brk";
	case SYS_madvise: return "madvise";
	case SYS_mprotect: return "mprotect";
	case SYS_recvfrom: return "recvfrom";
	case SYS_recvmsg: return "recvmsg";
	case SYS_accept: return "accept";
	case SYS_accept4: return "accept4";
	case SYS_sendto: return "sendto";
	case SYS_sendmsg: return "sendmsg";
	case SYS_connect: return "connect";
	case SYS_vfork: return "vfork";
	case SYS_clone: return "clone";
	case SYS_execve: return "execve";
	}
	return NULL;
}

/* Classify a thread from outside, without stopping it: its state letter and
 * /proc/PID/task/TID/syscall ("running", "-1 sp pc", or "nr args... sp pc"). */
static void cand_classify(int pid, struct cand *c)
{
	char fn[96], buf[256];
	struct proc_status st;

	c->nr = -1;
	c->cls = CAND_RUNNING;
	c->why[0] = '\0';
	snprintf(fn, sizeof fn, "/proc/%d/task/%d/status", pid, c->tid);
	if (proc_status_read(fn, &st) < 0) {
		c->cls = CAND_SKIP;
		snprintf(c->why, sizeof c->why, "exited");
		return;
	}
	if (st.state == 'Z' || st.state == 'X' || st.state == 'T' || st.state == 't' ||
	    st.state == 'D') {
		c->cls = CAND_SKIP;
		snprintf(c->why, sizeof c->why, "in state %c", st.state);
		return;
	}
	snprintf(fn, sizeof fn, "/proc/%d/task/%d/syscall", pid, c->tid);
	if (read_small_file(fn, buf, sizeof buf) <= 0 || !strncmp(buf, "running", 7))
		return;
	c->nr = strtol(buf, NULL, 10);
	if (c->nr < 0)
		return;
	const char *name = syscall_name(c->nr);
	char nm[32];
	if (!name) {
		snprintf(nm, sizeof nm, "system call %ld", c->nr);
		name = nm;
	}
	if (eintr_prone(c->nr)) {
		c->cls = CAND_SKIP;
		snprintf(c->why, sizeof c->why, "in %s (would see EINTR)", name);
	} else if (allocator_or_process_syscall(c->nr)) {
		c->cls = CAND_SKIP;
		snprintf(c->why, sizeof c->why, "in %s", name);
	} else if (socket_syscall(c->nr)) {
		c->cls = CAND_SOCKET;
	} else {
		c->cls = CAND_RESTARTABLE;
	}
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->cls != y->cls)
		return (int)x->cls - (int)y->cls;
	return x->tid - y->tid;
}

/* List the threads of pid, best candidates first. Returns the count, or -errno. */
int list_threads(int pid, struct cand **out)
{
	char fn[64];
	struct dirent *de;
	struct cand *v = NULL;
	size_t n = 0, alloc = 0;
	DIR *d;

	snprintf(fn, sizeof fn, "/proc/%d/task", pid);
	if (!(d = opendir(fn)))
		return -errno;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 16;
			v = xrealloc(v, alloc * sizeof *v);
		}
		memset(&v[n], 0, sizeof v[n]);
		v[n].tid = atoi(de->d_name);
		cand_classify(pid, &v[n]);
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof *v, cand_cmp);
	*out = v;
	return (int)n;
}

/* ---------------------------------------------------------------- the safe-point rule */

/* What an address is: application (including other libraries), the loader,
 * the vDSO, or libc; for libc, the exported function covering it (or NULL
 * when the address is in libc-internal code). */
static enum frame_kind classify_ip(const struct classifier *cl, uint64_t ip, const struct fsym **sym)
{
	*sym = NULL;
	if (cl->ldso.hi && ip >= cl->ldso.lo && ip < cl->ldso.hi)
		return FK_LDSO;
	if (ip >= cl->vdso_lo && ip < cl->vdso_hi)
		return FK_VDSO;
	if (ip >= cl->agent_lo && ip < cl->agent_hi)
		return FK_AGENT;
	if (ip >= cl->libc.lo && ip < cl->libc.hi) {
		*sym = module_lookup(&cl->libc, ip - cl->libc.bias);
		return FK_LIBC;
	}
	if (cl->libpthread.hi && ip >= cl->libpthread.lo && ip < cl->libpthread.hi) {
		*sym = module_lookup(&cl->libpthread, ip - cl->libpthread.bias);
		return FK_LIBC;
	}
	return FK_APP;
}

/* Unwind the stopped thread tid remotely into ips, syms and kinds (at most
 * MAX_FRAMES, innermost first); *n frames. False, with why, when its stack
 * cannot be walked to the bottom or holds a signal frame. */
static bool unwind_thread(struct classifier *cl, int tid, uint64_t *ips, const struct fsym **syms,
			  enum frame_kind *kinds, int *nframes, char *why, size_t whylen)
{
	unw_cursor_t cur;
	void *upt;
	int n = 0, r;

	if (!(upt = _UPT_create(tid))) {
		snprintf(why, whylen, "cannot unwind");
		*nframes = 0;
		return false;
	}
	if ((r = unw_init_remote(&cur, cl->as, upt)) < 0) {
		snprintf(why, whylen, "cannot unwind: %s", unw_strerror(r));
		_UPT_destroy(upt);
		*nframes = 0;
		return false;
	}
	bool ok = true;
	for (;;) {
		unw_word_t ip;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		if (n > 0 && unw_is_signal_frame(&cur) > 0) {
			snprintf(why, whylen, "running a signal handler");
			ok = false;
			break;
		}
		if (n == MAX_FRAMES) {
			snprintf(why, whylen, "stack deeper than %d frames", MAX_FRAMES);
			ok = false;
			break;
		}
		ips[n] = ip;
		/* a return address points after the call, maybe past the caller's end */
		kinds[n] = classify_ip(cl, n ? ip - 1 : ip, &syms[n]);
		n++;
		r = unw_step(&cur);
		if (r == 0)
			break;
		if (r < 0) {
			/* The walk may end in garbage below the outermost frame; that is
			 * fine only once a bottom frame (or main's _start) was seen. */
			bool bottom = kinds[n - 1] == FK_LIBC &&
				      (!syms[n - 1] || (syms[n - 1]->flags & SYM_BOTTOM));
			if (!bottom) {
				snprintf(why, whylen, "cannot unwind past %#" PRIx64 ": %s", (uint64_t)ip,
					 unw_strerror(r));
				ok = false;
			}
			break;
		}
	}
	_UPT_destroy(upt);
	if (getenv("MEMWATCH_INJECT_DEBUG")) {
		static const char *const kn[] = { "app", "ld.so", "vdso", "libc", "agent" };
		for (int k = 0; k < n; k++)
			fprintf(stderr, "inject:   #%d %#" PRIx64 " %s %s\n", k, ips[k], kn[kinds[k]],
				syms[k] ? syms[k]->shown : "");
	}
	*nframes = n;
	return ok;
}

/* Whether frames from..n-1 are fit to sit under the hijacked call: application
 * code, with libc only as the bottom frames of a thread or of main. */
static bool app_tail_ok(const enum frame_kind *kinds, const struct fsym *const *syms, int from,
			int n, char *why, size_t whylen)
{
	for (int i = from; i < n; i++) {
		if (kinds[i] == FK_APP)
			continue;
		if (kinds[i] == FK_LIBC && i >= n - 3 && (!syms[i] || (syms[i]->flags & SYM_BOTTOM)))
			continue;
		if (kinds[i] == FK_LDSO)
			snprintf(why, whylen, "called from the dynamic loader (a constructor?)");
		else if (kinds[i] == FK_LIBC && syms[i])
			snprintf(why, whylen, "in a callback from %s", syms[i]->shown);
		else {
			/* internal helpers (msort...): name the exported caller below */
			int k = i;
			while (k < n && kinds[k] == FK_LIBC && !syms[k])
				k++;
			if (k < n && kinds[k] == FK_LIBC && syms[k])
				snprintf(why, whylen, "in a callback from %s", syms[k]->shown);
			else
				snprintf(why, whylen, "in a callback from libc");
		}
		return false;
	}
	return true;
}

/* Unwind the stopped thread and decide whether it may call dlopen: it must not
 * hold any lock that the loader or malloc takes. Accepted: a thread blocked in
 * an allow-listed libc call made by the application, or running application
 * code; libc may appear under the application only as the bottom frames of a
 * thread or of main. Returns true, or false with *why. */
bool safe_point(struct classifier *cl, int tid, uint64_t rip, uint64_t *run_to, char *why,
		size_t whylen)
{
	uint64_t ips[MAX_FRAMES];
	const struct fsym *syms[MAX_FRAMES];
	enum frame_kind kinds[MAX_FRAMES];
	int n = 0;
	const struct fsym *top;

	*run_to = 0;
	/* Refusals that need no unwinding (which costs a millisecond over ptrace) */
	switch (classify_ip(cl, rip, &top)) {
	case FK_AGENT:
		snprintf(why, whylen, "inside the memwatch agent");
		return false;
	case FK_VDSO:
		/* libunwind-ptrace cannot read the vDSO's unwind tables (it has no
		 * file): the stack below could not be checked */
		snprintf(why, whylen, "in the vDSO (clock_gettime...)");
		return false;
	default:
		break;
	}
	if (!unwind_thread(cl, tid, ips, syms, kinds, &n, why, whylen))
		return false;
	if (n == 0) {
		snprintf(why, whylen, "no stack");
		return false;
	}

	/* A thread inside the agent (a hook, the sampler) may hold its locks,
	 * which its start function could need. */
	for (int k = 0; k < n; k++)
		if (kinds[k] == FK_AGENT) {
			snprintf(why, whylen, "inside the memwatch agent");
			return false;
		}

	int i = 0;
	bool top_ok = true;
	/* top: libc-internal code (lock waits, cancellation points)... */
	while (i < n && kinds[i] == FK_LIBC && !syms[i])
		i++;
	int internal_top = i;
	/* ...under allow-listed blocking calls made by the application */
	while (i < n && kinds[i] == FK_LIBC && syms[i] && (syms[i]->flags & SYM_BLOCKING))
		i++;
	if (internal_top && i == internal_top && i < n) {
		if (kinds[i] == FK_LIBC && syms[i])
			snprintf(why, whylen, "in %s", syms[i]->shown);
		else
			snprintf(why, whylen, "inside libc (internal code at %#" PRIx64 ")", ips[0]);
		top_ok = false;
	} else if (i < n && kinds[i] == FK_LDSO) {
		snprintf(why, whylen, "in the dynamic loader");
		top_ok = false;
	} else if (i < n && kinds[i] == FK_LIBC) {
		if (syms[i])
			snprintf(why, whylen, "in %s", syms[i]->shown);
		else
			snprintf(why, whylen, "inside libc (%#" PRIx64 ") under %s", ips[i],
				 i ? syms[i - 1]->shown : "?");
		top_ok = false;
	}
	if (!top_ok) {
		/* Stopped inside libc or the loader, called from the application:
		 * once that call returns, nothing above holds a lock. Worth running
		 * to that return address if the stack below it is fit. */
		int k = i;
		while (k < n && kinds[k] != FK_APP)
			k++;
		char tail_why[96];
		if (k > 0 && k < n && app_tail_ok(kinds, syms, k, n, tail_why, sizeof tail_why))
			*run_to = ips[k];
		return false;
	}
	if (i == n) {
		snprintf(why, whylen, "no application frame on the stack");
		return false;
	}
	/* application frames; libc again only at the very bottom */
	return app_tail_ok(kinds, syms, i, n, why, whylen);
}

/* The kernel's gap between a stack that grows down and the mapping below it
 * (stack_guard_gap, 256 pages by default). */
#define STACK_GUARD_GAP (256u * 4096u)

/* pid's soft RLIMIT_STACK in bytes from /proc/PID/limits; 0 when unlimited
 * or unknown. */
static uint64_t stack_rlimit(int pid)
{
	char fn[64], buf[4096], *p;
	unsigned long long v;

	snprintf(fn, sizeof fn, "/proc/%d/limits", pid);
	if (read_small_file(fn, buf, sizeof buf) <= 0 || !(p = strstr(buf, "Max stack size")))
		return 0;
	if (sscanf(p + strlen("Max stack size"), " %llu", &v) != 1)
		return 0;     /* "unlimited" */
	return v;
}

void stack_floor_init(struct classifier *cl, int pid)
{
	uint64_t lim = stack_rlimit(pid), below = 0;

	cl->stack_lo = cl->stack_hi = cl->stack_floor = 0;
	for (size_t i = 0; i < cl->maps.n; i++) {
		const struct mapping *mp = &cl->maps.v[i];
		if (strcmp(mp->path, "[stack]")) {
			if (!cl->stack_hi && mp->hi <= UINT64_MAX - STACK_GUARD_GAP)
				below = mp->hi;       /* the maps are in address order */
			continue;
		}
		cl->stack_lo = mp->lo;
		cl->stack_hi = mp->hi;
		break;
	}
	if (!cl->stack_hi)
		return;
	cl->stack_floor = below ? below + STACK_GUARD_GAP : 0;
	if (lim && lim < cl->stack_hi && cl->stack_hi - lim > cl->stack_floor)
		cl->stack_floor = cl->stack_hi - lim;
}

/* Whether the stopped thread may be hijacked at all, from its registers: not
 * inside an allocator system call, and with stack left for dlopen: below its
 * stack pointer, the call's frame and the calls themselves (STACK_NEEDED)
 * must fit in its mapping, or for the main thread's stack, which the kernel
 * grows down on the thread's own faults, above the floor its limit sets. A
 * thread deep in its stack is left alone: the calls would overflow it. */
bool regs_ok(const struct classifier *cl, const struct seized *s, char *why, size_t whylen)
{
	long nr = (long)s->regs.orig_rax;
	uint64_t rsp = s->regs.rsp;

	if (nr >= 0 && allocator_or_process_syscall(nr)) {
		const char *n = syscall_name(nr);
		snprintf(why, whylen, "in %s", n ? n : "an allocator system call");
		return false;
	}
	/* the main thread's stack, mapped down to rsp or still to be grown
	 * there (a frame whose pages it has not touched yet) */
	if (cl->stack_hi && rsp < cl->stack_hi && rsp >= cl->stack_floor &&
	    (rsp >= cl->stack_lo || rsp + (64u << 20) >= cl->stack_lo)) {
		if (cl->stack_floor && rsp - cl->stack_floor < STACK_NEEDED + RED_ZONE) {
			snprintf(why, whylen, DEEP_STACK_WHY ": %llu KiB left to its limit, the calls need %u KiB",
				 (unsigned long long)(rsp - cl->stack_floor) / 1024, (STACK_NEEDED + RED_ZONE) / 1024);
			return false;
		}
		return true;
	}
	for (size_t i = 0; i < cl->maps.n; i++) {
		const struct mapping *mp = &cl->maps.v[i];
		if (rsp < mp->lo || rsp >= mp->hi)
			continue;
		if (strcmp(mp->path, "[stack]") && rsp - mp->lo < STACK_NEEDED + RED_ZONE) {
			snprintf(why, whylen, DEEP_STACK_WHY ": %llu KiB left in its mapping, the calls need %u KiB",
				 (unsigned long long)(rsp - mp->lo) / 1024, (STACK_NEEDED + RED_ZONE) / 1024);
			return false;
		}
		if (mp->perms[1] != 'w') {
			snprintf(why, whylen, "stack not writable");
			return false;
		}
		return true;
	}
	/* a stack mapped after we read the maps: accept, the write would fail cleanly */
	return true;
}
