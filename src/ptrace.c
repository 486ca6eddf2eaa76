/* ptrace.c: ptrace primitives of the injector: seizing one thread and
 * bringing it to a stop, saving and restoring its registers, letting it go
 * exactly as it was, letting it run a moment, and making it call a function
 * (remote_call) that returns through a signal frame on its own stack, so that
 * the thread ends up exactly as it was even when memwatch dies meanwhile. */
#include "config.h"
#include "inject-internal.h"
#include "util.h"

#include <cpuid.h>
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

/* ---------------------------------------------------------------- ptrace */

double ms_since(uint64_t t0)
{
	return (double)(mono_ns() - t0) / 1e6;
}

void nap_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* MEMWATCH_TEST_KILL_AT=N (tests only, see HACKING.md): memwatch kills
 * itself with SIGKILL just before its Nth request that changes or resumes a
 * traced thread, to show that the target survives a tracer dying there;
 * N:stop stops itself with SIGSTOP there instead. N may be "call": just after
 * the borrowed thread is resumed into the first injected call (dlopen), however
 * many requests led there. */
static long kill_at = -1, nrequests;
static bool kill_at_call;
static int kill_sig = SIGKILL;

static void kill_point_init(void)
{
	const char *e;
	char *end = NULL;

	if (kill_at >= 0)
		return;
	e = getenv("MEMWATCH_TEST_KILL_AT");
	kill_at = 0;
	if (e && !strncmp(e, "call", 4)) {
		kill_at_call = true;
		end = (char *)e + 4;
	} else if (e) {
		kill_at = strtol(e, &end, 10);
	}
	if (end && !strcmp(end, ":stop"))
		kill_sig = SIGSTOP;
}

/* Count one request; die (or stop) here when the test asks for it. */
static void kill_point(void)
{
	kill_point_init();
	if (++nrequests == kill_at)
		kill(getpid(), kill_sig);
}

/* The borrowed thread was just resumed into an injected call. */
static void kill_point_call(void)
{
	kill_point_init();
	if (kill_at_call) {
		kill_at_call = false;
		kill(getpid(), kill_sig);
	}
}

long ptrace_requests(void)
{
	return nrequests;
}

/* Every ptrace request of the injector goes through here. */
long ptrace_req(enum __ptrace_request req, int tid, void *addr, void *data)
{
	kill_point();
	return ptrace(req, tid, addr, data);
}

/* The time memwatch itself lost while it waited for a traced thread: a nap
 * of at most 1 ms that took over half a second means memwatch was stopped
 * (SIGSTOP, a debugger, a frozen cgroup) or starved, not that the thread was
 * slow. */
static uint64_t lost_ns;

/* Wait for a state change of tid for up to timeout_ms. Returns 1 with *status,
 * 0 on timeout, -errno on error (-ECHILD: not our tracee any more). Polls so
 * that a timeout needs no signal and no thread. */
static int wait_tid(int tid, int *status, unsigned timeout_ms)
{
	uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000u;
	unsigned nap = 20;

	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		if (r == tid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
		uint64_t before = mono_ns();
		if (before >= end)
			return 0;
		nap_us(nap);
		uint64_t took = mono_ns() - before;
		if (took > 500000000u)
			lost_ns += took;
		if (nap < 1000)
			nap *= 2;
	}
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static bool is_fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP ||
	       sig == SIGSYS;
}

/* Seize tid and bring it to an interrupt stop. A signal dequeued meanwhile is
 * delivered at once (a fault signal instead makes us let go, delivering it).
 * The caller releases the thread in every case; one that never stops stays
 * seized until it does (the kernel detaches it at the latest when we exit). */
int seize_and_stop(struct seized *s, int *err)
{
	int status, r;

	*err = 0;
	if (ptrace_req(PTRACE_SEIZE, s->tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD) < 0) {
		*err = errno;
		return STOP_ERROR;
	}
	s->seized = true;
	s->t_interrupt = mono_ns();
	if (ptrace_req(PTRACE_INTERRUPT, s->tid, NULL, NULL) < 0) {
		*err = errno;
		return errno == ESRCH ? STOP_GONE : STOP_ERROR;
	}
	for (;;) {
		r = wait_tid(s->tid, &status, STOP_TIMEOUT_MS);
		if (r == 0)
			return STOP_TIMEOUT;
		if (r < 0) {
			*err = -r;
			s->seized = false;
			return STOP_GONE;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			s->seized = false;
			return STOP_GONE;
		}
		if (!WIFSTOPPED(status))
			continue;
		int sig = WSTOPSIG(status), event = status >> 16;
		if (event == PTRACE_EVENT_STOP) {
			s->stopped = true;
			if (sig == SIGTRAP)
				return STOP_OK;
			return STOP_GROUP;
		}
		if (event != 0) {
			ptrace_req(PTRACE_CONT, s->tid, NULL, NULL);
			continue;
		}
		/* A signal-delivery-stop before our interrupt was reported. Nothing
		 * has been changed yet, so it is delivered now, as it would have
		 * been (a signal given when resuming from the interrupt stop would
		 * be dropped by the kernel). A fault signal means the thread is not
		 * worth vetting: let go, delivering it. */
		s->stopped = true;
		if (is_fault_signal(sig)) {
			s->pending_sig = sig;
			return STOP_FAULT;
		}
		s->stopped = false;
		if (ptrace_req(PTRACE_CONT, s->tid, NULL, (void *)(long)sig) < 0) {
			*err = errno;
			return errno == ESRCH ? STOP_GONE : STOP_ERROR;
		}
	}
}

/* Save the general registers of the stopped thread (enough to vet it). */
int save_regs(struct seized *s, int *err)
{
	if (ptrace(PTRACE_GETREGS, s->tid, NULL, &s->regs) < 0) {
		*err = errno;
		return -1;
	}
	s->regs_saved = true;
	return 0;
}

/* Save the extended state (x87, SSE, AVX...) of the thread chosen: the thread
 * stopped at an arbitrary instruction, so all of it is live. */
int save_xstate(struct seized *s, int *err)
{
	s->xstate = xmalloc(XSTATE_MAX);
	struct iovec iov = { s->xstate, XSTATE_MAX };
	if (ptrace(PTRACE_GETREGSET, s->tid, (void *)NT_X86_XSTATE, &iov) == 0) {
		s->xstate_len = iov.iov_len;
	} else if (ptrace(PTRACE_GETFPREGS, s->tid, NULL, s->xstate) == 0) {
		s->xstate_is_fp = true;
		s->xstate_len = sizeof(struct user_fpregs_struct);
	} else {
		*err = errno;
		free(s->xstate);
		s->xstate = NULL;
		return -1;
	}
	return 0;
}

/* Let a thread that was stopped inside libc run on its own for about run_us
 * and stop it again wherever it is then (s->regs refreshed): a thread of a
 * busy process caught in malloc is soon back in the application. Nothing is
 * armed in the thread meanwhile (no breakpoint, no single-step), so memwatch
 * dying leaves it running as if it had never been stopped. Returns STOP_OK,
 * STOP_TIMEOUT (it did not stop again), STOP_GROUP, STOP_GONE or STOP_ERROR. */
int run_briefly(struct seized *s, unsigned run_us)
{
	int status, r;

	if (ptrace_req(PTRACE_CONT, s->tid, NULL, NULL) < 0)
		return errno == ESRCH ? STOP_GONE : STOP_ERROR;
	s->stopped = false;
	nap_us(run_us);
	if (ptrace_req(PTRACE_INTERRUPT, s->tid, NULL, NULL) < 0)
		return errno == ESRCH ? STOP_GONE : STOP_ERROR;
	for (;;) {
		r = wait_tid(s->tid, &status, STOP_TIMEOUT_MS);
		if (r == 0)
			return STOP_TIMEOUT;    /* not even stopped: release() retries */
		if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
			s->seized = false;
			return STOP_GONE;
		}
		if (!WIFSTOPPED(status))
			continue;
		int sig = WSTOPSIG(status), event = status >> 16;
		s->stopped = true;
		if (event == PTRACE_EVENT_STOP) {
			if (is_stop_signal(sig))
				return STOP_GROUP;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &s->regs) < 0)
				return STOP_ERROR;
			return STOP_OK;
		}
		/* a signal goes to the program as it would have; the interrupt
		 * is still to come */
		if (ptrace_req(PTRACE_CONT, s->tid, NULL, (void *)(long)(event ? 0 : sig)) < 0) {
			if (errno == ESRCH) {
				s->seized = false;
				return STOP_GONE;
			}
		}
		s->stopped = false;
	}
}


/* Copy len bytes into the target at addr. */
static int poke(int pid, int tid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = { (void *)buf, len }, r = { (void *)addr, len };
	kill_point();
	if (process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)len)
		return 0;
	/* fall back to word writes (process_vm_writev may be filtered) */
	const unsigned char *p = buf;
	for (size_t i = 0; i < len; i += sizeof(long)) {
		long w;
		size_t k = len - i < sizeof(long) ? len - i : sizeof(long);
		if (k < sizeof(long)) {
			errno = 0;
			w = ptrace(PTRACE_PEEKDATA, tid, (void *)(addr + i), NULL);
			if (errno)
				return -errno;
		}
		memcpy(&w, p + i, k);
		if (ptrace_req(PTRACE_POKEDATA, tid, (void *)(addr + i), (void *)w) < 0)
			return -errno;
	}
	return 0;
}

/* Whether the SIGSYS the thread is stopped with comes from a seccomp filter
 * (not kill) and the program does not catch SIGSYS (SigCgt in its status). */
static bool seccomp_trap_unhandled(int pid, int tid)
{
	struct proc_status st;
	siginfo_t si;
	char fn[64];

	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0 || si.si_code != SYS_SECCOMP)
		return false;
	snprintf(fn, sizeof fn, "/proc/%d/status", pid);
	if (proc_status_read(fn, &st) < 0)
		return true;
	return !((st.sigcgt >> (SIGSYS - 1)) & 1);
}

/* The registers the thread resumes with after the stop it was seized in: a
 * system call the stop interrupted is restarted as the kernel would restart
 * it when no handler runs (rip back over the syscall instruction). For the
 * signal frame (sigreturn) a restart block cannot be kept (rt_sigreturn
 * resets it, restart_syscall would then fail with EINTR): such a call
 * (nanosleep, poll or a futex wait with a relative timeout) is issued again
 * with its original arguments, its timeout starting over, which the program
 * cannot tell from a late wake-up. orig_rax is -1: nothing restarts twice. */
static struct user_regs_struct resume_regs(const struct user_regs_struct *r, bool for_sigreturn)
{
	struct user_regs_struct n = *r;

	if ((long)r->orig_rax >= 0) {
		switch (-(long)r->rax) {
		case ERESTARTSYS:
		case ERESTARTNOINTR:
		case ERESTARTNOHAND:
			n.rax = r->orig_rax;
			n.rip -= 2;
			break;
		case ERESTART_RESTARTBLOCK:
			if (for_sigreturn) {
				n.rax = r->orig_rax;
				n.rip -= 2;
			} else {
				n.rax = SYS_restart_syscall;
				n.rip -= 2;
			}
			break;
		}
	}
	n.orig_rax = (uint64_t)-1;
	return n;
}

/* Whether the thread is stopped at the entry of the rt_sigreturn system call
 * of our frame: a call we made has returned. */
static bool at_our_sigreturn(const struct seized *s, const struct user_regs_struct *now)
{
	return s->frame_sp && now->orig_rax == SYS_rt_sigreturn && now->rsp == s->frame_sp + 8;
}

/* Give the thread stopped at the entry of our rt_sigreturn its state back
 * directly (its extended state, then its registers with the system call
 * skipped), which keeps a restart block that rt_sigreturn would lose. Dying
 * in between is harmless: before the registers are set the thread still
 * runs rt_sigreturn on our frame. */
static void restore_at_end(struct seized *s)
{
	if (s->xstate) {
		if (s->xstate_is_fp) {
			ptrace_req(PTRACE_SETFPREGS, s->tid, NULL, s->xstate);
		} else {
			struct iovec iov = { s->xstate, s->xstate_len };
			ptrace_req(PTRACE_SETREGSET, s->tid, (void *)NT_X86_XSTATE, &iov);
		}
	}
	struct user_regs_struct r = resume_regs(&s->regs, false);
	if (ptrace_req(PTRACE_SETREGS, s->tid, NULL, &r) == 0)
		s->in_call = false;
}

/* Let go of a thread: give back registers if asked, then detach re-delivering
 * what it was about to receive. Safe to call in any state. A thread left in
 * one of our calls (it did not return in time) is not rolled back: it
 * finishes the call and rt_sigreturn puts it back as it was. */
void release(int pid, struct seized *s, bool restore)
{
	if (!s->seized)
		goto out;
	if (!s->stopped) {
		/* a running tracee cannot be detached: stop it first */
		int status;
		if (ptrace_req(PTRACE_INTERRUPT, s->tid, NULL, NULL) == 0) {
			for (int i = 0; i < 20; i++) {
				int r = wait_tid(s->tid, &status, 100);
				if (r < 0 || (r == 1 && (WIFEXITED(status) || WIFSIGNALED(status)))) {
					s->seized = false;
					goto out;
				}
				if (r == 1 && WIFSTOPPED(status)) {
					int sig = WSTOPSIG(status), event = status >> 16;
					if (event == 0 && s->end_by_signal && sig == s->end_sig) {
						/* the end of our call: the thread is back as it was */
						s->stopped = true;
						s->at_end = true;
						break;
					}
					if (event == 0 && sig != (SIGTRAP | 0x80) && !is_stop_signal(sig)) {
						/* a signal on its way: let it through, keep waiting */
						ptrace_req(PTRACE_CONT, s->tid, NULL, (void *)(long)sig);
						continue;
					}
					if (event == 0 && is_stop_signal(sig))
						s->pending_sig = sig;   /* a stop signal: detach delivers it */
					s->stopped = true;
					s->at_end = false;
					if (sig == (SIGTRAP | 0x80)) {
						struct user_regs_struct now;
						s->at_end = ptrace(PTRACE_GETREGS, s->tid, NULL, &now) == 0 &&
							    at_our_sigreturn(s, &now);
					}
					break;
				}
			}
		}
	}
	if (restore && s->regs_saved && s->stopped) {
		if (s->in_call) {
			if (s->at_end && !s->end_by_signal)
				restore_at_end(s);
			/* else: back by rt_sigreturn already (the end signal
			 * is dropped by the detach), or mid-call: the frame
			 * will restore it */
		} else {
			/* never made to call anything: its interrupt stop restarts
			 * an interrupted system call by itself */
			ptrace_req(PTRACE_SETREGS, s->tid, NULL, &s->regs);
		}
	}
	ptrace_req(PTRACE_DETACH, s->tid, NULL, (void *)(long)s->pending_sig);
	s->seized = false;
	if (s->pending_stop)
		kill(pid, s->pending_stop);
out:
	free(s->xstate);
	s->xstate = NULL;
	s->stopped = false;
}


/* The x86-64 signal frame that rt_sigreturn reads, as the kernel lays it out
 * (arch/x86/include/asm/sigframe.h: struct rt_sigframe; uapi
 * asm/sigcontext.h: struct sigcontext; asm/ucontext.h). Spelt out here
 * because glibc's ucontext_t is a different, larger structure. */
struct k_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;               /* the xsave area, 64-byte aligned */
	uint64_t reserved1[8];
};

struct k_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	struct {
		uint64_t ss_sp;
		int32_t ss_flags, pad;
		uint64_t ss_size;
	} uc_stack;
	struct k_sigcontext uc_mcontext;
	uint64_t uc_sigmask;
};

struct k_rt_sigframe {
	uint64_t pretcode;              /* the return address of our call */
	struct k_ucontext uc;
	unsigned char info[128];        /* siginfo: not read by rt_sigreturn */
};

_Static_assert(sizeof(struct k_sigcontext) == 256, "struct sigcontext is 256 bytes");
_Static_assert(offsetof(struct k_ucontext, uc_mcontext) == 40, "uc_mcontext at 40");
_Static_assert(offsetof(struct k_ucontext, uc_sigmask) == 296, "uc_sigmask at 296");

#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#define FP_XSTATE_MAGIC1 0x46505853U
#define FP_XSTATE_MAGIC2 0x46505845U
#define FXSAVE_SIZE 512
#define SW_RESERVED_OFF 464             /* struct _fpx_sw_bytes in the fxsave area */
#define XSTATE_HEADER_OFF 512
/* Not a valid ss_flags value: do_sigaltstack() rejects it before changing
 * anything, and restore_altstack() ignores the error, so rt_sigreturn leaves
 * the thread's alternate signal stack as it is. */
#define SS_FLAGS_INVALID 0x4d570000

/* The signal masks of the thread's status: pending for it and for its
 * process, blocked, ignored, caught. */
struct sigmasks {
	uint64_t pnd, shdpnd, blk, ign, cgt;
};

/* Read them; 0, or -1 when SigBlk is not there. */
static int read_sigmasks(int pid, int tid, struct sigmasks *sm)
{
	struct proc_status st;
	char fn[96];

	memset(sm, 0, sizeof *sm);
	snprintf(fn, sizeof fn, "/proc/%d/task/%d/status", pid, tid);
	if (proc_status_read(fn, &st) < 0 || !st.has_sigblk)
		return -1;
	sm->pnd = st.sigpnd;
	sm->shdpnd = st.shdpnd;
	sm->blk = st.sigblk;
	sm->ign = st.sigign;
	sm->cgt = st.sigcgt;
	return 0;
}

/* The signal that tells memwatch that a call has returned, or 0 (then the
 * end is seen by PTRACE_SYSCALL at our rt_sigreturn). It is sent to the
 * thread while blocked for the call; the frame's mask unblocks it, so it is
 * delivered right after rt_sigreturn: a traced thread stops there, with its
 * state back; an untraced one (memwatch died) discards it, since the
 * program ignores it (SIG_IGN, or not caught with an ignoring default). It
 * must not be blocked by the thread nor pending already. A thread stopped
 * in a system call with a restart block (nanosleep, poll, a futex with a
 * timeout) gets 0: rt_sigreturn would restart its call with the timeout
 * starting over, while a restore at the rt_sigreturn stop keeps it. */
static int end_signal(const struct seized *s, const struct sigmasks *sm)
{
	static const int cands[] = { SIGURG, SIGWINCH, SIGCHLD };

	if ((long)s->regs.orig_rax >= 0 && (long)s->regs.rax == -ERESTART_RESTARTBLOCK)
		return 0;
	for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
		uint64_t bit = 1ULL << (cands[i] - 1);
		if (!((sm->blk | sm->pnd | sm->shdpnd | sm->cgt) & bit))
			return cands[i];
	}
	return 0;
}

/* The length of the extended state s holds that a signal frame takes: to the
 * end of the last component in use (XSTATE_BV of its header), at its offset
 * in the standard layout (CPUID leaf 0xD). PTRACE_GETREGSET gives the
 * processor's largest layout, AMX's tile data (8 KiB) included, but a
 * process that never asked for that (arch_prctl ARCH_REQ_XCOMP_PERM) has a
 * smaller one in its signal frames, and rt_sigreturn takes a frame's state
 * larger than that for a broken one: it restores the legacy area alone, the
 * upper halves of the vector registers lost. A component not in use is in
 * its initial state, which XRSTOR gives it from the header alone. */
static size_t xstate_in_use(const unsigned char *x, size_t len)
{
	size_t end = XSTATE_HEADER_OFF + 64;
	uint64_t bv;

	memcpy(&bv, x + XSTATE_HEADER_OFF, 8);
	for (unsigned i = 2; i < 64; i++) {
		unsigned size, off, flags, d;
		if (!(bv >> i & 1))
			continue;
		if (!__get_cpuid_count(0xd, i, &size, &off, &flags, &d) || !size || off < FXSAVE_SIZE)
			return len;     /* not a user component of the standard layout */
		if ((size_t)off + size > end)
			end = (size_t)off + size;
	}
	return end < len ? end : len;
}

/* Write, below the stopped thread's red zone, the strings of our calls and a
 * complete signal frame holding the thread's state as it would resume
 * (registers, blocked signals, extended state): every call returns into
 * rt_sigreturn_addr (libc's __restore_rt), whose rt_sigreturn puts the thread
 * back exactly as it was, whether memwatch is still there or not. Needs
 * s->regs and s->xstate saved. strs[i] (n of them) get their addresses in
 * addrs[i]. 0, or -1 with msg. */
int frame_build(int pid, struct seized *s, uint64_t rt_sigreturn_addr, const char *const *strs,
		int n, uint64_t *addrs, char *msg, size_t msglen)
{
	uint64_t top = s->regs.rsp - RED_ZONE, sigblk, p;
	struct sigmasks sm;
	size_t slen = 0, xlen = 0, total;
	struct k_rt_sigframe fr;
	unsigned char *block;
	int i;

	if (read_sigmasks(pid, s->tid, &sm) < 0) {
		snprintf(msg, msglen, "cannot read the blocked signals of thread %d", s->tid);
		return -1;
	}
	sigblk = sm.blk;
	s->sigblk = sigblk;
	s->end_sig = end_signal(s, &sm);
	for (i = 0; i < n; i++)
		slen += strlen(strs[i]) + 1;
	p = (top - slen) & ~(uint64_t)63;
	uint64_t str_at = p;
	/* an xsave area with its header, or the legacy area alone */
	bool xsave = s->xstate && !s->xstate_is_fp && s->xstate_len >= XSTATE_HEADER_OFF + 64;
	size_t xsize = 0;
	if (s->xstate) {
		xsize = xsave ? xstate_in_use(s->xstate, s->xstate_len) : s->xstate_len;
		xlen = xsize + 4;               /* + FP_XSTATE_MAGIC2 */
	}
	uint64_t xaddr = (p - xlen) & ~(uint64_t)63;
	/* the call's entry rsp (= &pretcode) must be 8 mod 16, as after a call */
	uint64_t fsp = ((xaddr - sizeof fr) & ~(uint64_t)15) - 8;
	total = (size_t)(top - fsp);
	block = xcalloc(1, total);

	/* the strings */
	for (i = 0, p = str_at; i < n; i++) {
		size_t l = strlen(strs[i]) + 1;
		memcpy(block + (p - fsp), strs[i], l);
		addrs[i] = p;
		p += l;
	}
	/* the extended state, in the layout the kernel's signal frames use */
	if (s->xstate) {
		unsigned char *x = block + (xaddr - fsp);
		memcpy(x, s->xstate, xsize);
		if (xsave) {
			uint32_t magic1 = FP_XSTATE_MAGIC1, magic2 = FP_XSTATE_MAGIC2;
			uint32_t ext = (uint32_t)xsize + 4, size = (uint32_t)xsize;
			uint64_t features;
			memcpy(&features, x + XSTATE_HEADER_OFF, 8);
			features |= 3;                  /* x87 and SSE always */
			memset(x + SW_RESERVED_OFF, 0, FXSAVE_SIZE - SW_RESERVED_OFF);
			memcpy(x + SW_RESERVED_OFF, &magic1, 4);
			memcpy(x + SW_RESERVED_OFF + 4, &ext, 4);
			memcpy(x + SW_RESERVED_OFF + 8, &features, 8);
			memcpy(x + SW_RESERVED_OFF + 16, &size, 4);
			memcpy(x + xsize, &magic2, 4);
		} else {
			/* only the legacy area: the kernel restores it alone */
			memset(x + SW_RESERVED_OFF, 0, FXSAVE_SIZE - SW_RESERVED_OFF);
		}
	}
	/* the frame */
	struct user_regs_struct r = resume_regs(&s->regs, true);
	s->resume_rip = r.rip;
	memset(&fr, 0, sizeof fr);
	fr.pretcode = rt_sigreturn_addr;
	fr.uc.uc_flags = UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	fr.uc.uc_stack.ss_flags = SS_FLAGS_INVALID;
	fr.uc.uc_sigmask = sigblk;
	struct k_sigcontext *sc = &fr.uc.uc_mcontext;
	sc->r8 = r.r8; sc->r9 = r.r9; sc->r10 = r.r10; sc->r11 = r.r11;
	sc->r12 = r.r12; sc->r13 = r.r13; sc->r14 = r.r14; sc->r15 = r.r15;
	sc->rdi = r.rdi; sc->rsi = r.rsi; sc->rbp = r.rbp; sc->rbx = r.rbx;
	sc->rdx = r.rdx; sc->rax = r.rax; sc->rcx = r.rcx; sc->rsp = r.rsp;
	sc->rip = r.rip; sc->eflags = r.eflags;
	sc->cs = (uint16_t)r.cs;
	sc->ss = (uint16_t)r.ss;
	sc->fpstate = s->xstate ? xaddr : 0;
	memcpy(block, &fr, sizeof fr);

	if (poke(pid, s->tid, fsp, block, total) < 0) {
		snprintf(msg, msglen, "cannot write the call frame below thread %d's stack pointer: %s "
			 "(its stack is not mapped there); attach again when the thread has returned "
			 "from its depth, or start the program with memwatch run", s->tid, strerror(errno));
		free(block);
		return -1;
	}
	free(block);
	s->frame_sp = fsp;
	return 0;
}

/* The start of a call (see remote_call): the thread's registers set for
 * fn(arg0, arg1) on the frame of frame_build, the end signal sent while
 * blocked (when there is one), and the thread resumed: *resume says how
 * (PTRACE_CONT when the end is that signal's delivery, else PTRACE_SYSCALL).
 * CALL_OK, or why not. */
static enum call_result call_start(int pid, struct seized *s, uint64_t fn, uint64_t arg0,
				   uint64_t arg1, enum __ptrace_request *resume, char *msg,
				   size_t msglen)
{
	struct user_regs_struct r = s->regs;

	r.rsp = s->frame_sp;
	r.rip = fn;
	r.rdi = arg0;
	r.rsi = arg1;
	r.rax = 0;
	r.eflags &= ~(1ULL << 10);          /* DF, as the ABI wants at any call */
	r.orig_rax = (uint64_t)-1;          /* no syscall restart into our call (nor the
					     * rt_sigreturn we may be stopped at) */
	if (ptrace_req(PTRACE_SETREGS, s->tid, NULL, &r) < 0) {
		snprintf(msg, msglen, "PTRACE_SETREGS: %s", strerror(errno));
		return CALL_ERROR;
	}
	s->in_call = true;
	s->at_end = false;
	/* the end signal: blocked for the call, sent, unblocked by the frame
	 * (dying anywhere here is harmless: rt_sigreturn restores the mask) */
	*resume = PTRACE_SYSCALL;
	if (s->end_sig) {
		uint64_t mask = s->sigblk | (1ULL << (s->end_sig - 1));
		if (ptrace_req(PTRACE_SETSIGMASK, s->tid, (void *)sizeof mask, &mask) == 0) {
			kill_point();
			if (syscall(SYS_tgkill, pid, s->tid, s->end_sig) == 0)
				*resume = PTRACE_CONT;
		}
	}
	s->end_by_signal = *resume == PTRACE_CONT;
	if (ptrace_req(*resume, s->tid, NULL, NULL) < 0) {
		snprintf(msg, msglen, "ptrace resume: %s", strerror(errno));
		return errno == ESRCH ? CALL_GONE : CALL_ERROR;
	}
	s->stopped = false;
	return CALL_OK;
}

/* The thread in a call started by call_start, followed to its end (CALL_OK),
 * its death, or the timeout; every other stop on the way is dealt with (see
 * remote_call) and the thread resumed as call_start did. */
static enum call_result call_wait(int pid, struct seized *s, enum __ptrace_request resume,
				  unsigned timeout_ms, char *msg, size_t msglen)
{
	uint64_t prev = mono_ns(), end = prev + (uint64_t)timeout_ms * 1000000u;
	int status, w;

	lost_ns = 0;
	kill_point_call();
	for (;;) {
		uint64_t now = mono_ns();
		if (now - prev > 500000000u)     /* lost between our own steps */
			lost_ns += now - prev;
		if (now >= end || (w = wait_tid(s->tid, &status, (unsigned)((end - now) / 1000000u) + 1)) == 0) {
			if (lost_ns)
				snprintf(msg, msglen, "memwatch itself was stopped for %.1f s during the call",
					 (double)lost_ns / 1e9);
			else
				msg[0] = '\0';
			return CALL_TIMEOUT;
		}
		prev = mono_ns();
		if (w < 0 || WIFEXITED(status)) {
			s->seized = false;
			return CALL_GONE;
		}
		if (WIFSIGNALED(status)) {
			s->seized = false;
			snprintf(msg, msglen, "the process was killed by signal %d (%s)", WTERMSIG(status),
				 strsignal(WTERMSIG(status)));
			return is_fault_signal(WTERMSIG(status)) ? CALL_CRASH : CALL_GONE;
		}
		if (!WIFSTOPPED(status))
			continue;
		s->stopped = true;
		int sig = WSTOPSIG(status), event = status >> 16;
		int deliver = 0;
		if (event == 0 && s->end_by_signal && sig == s->end_sig) {
			/* ours if the thread is back where it was: rt_sigreturn ran */
			struct user_regs_struct now_regs;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &now_regs) < 0) {
				s->seized = errno != ESRCH;
				return CALL_GONE;
			}
			if (now_regs.rsp == s->regs.rsp && now_regs.rip == s->resume_rip) {
				s->at_end = true;
				return CALL_OK;
			}
			deliver = sig;
		} else if (event == 0 && sig == (SIGTRAP | 0x80)) {
			/* a system call stop: ours is the entry of rt_sigreturn on
			 * our frame, any other one goes on */
			struct user_regs_struct now_regs;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &now_regs) < 0) {
				s->seized = errno != ESRCH;
				return CALL_GONE;
			}
			if (at_our_sigreturn(s, &now_regs)) {
				s->at_end = true;
				return CALL_OK;
			}
		} else if (event == PTRACE_EVENT_STOP) {
			/* a job-control stop of the process: finish our call first, stop after */
			if (is_stop_signal(sig))
				s->pending_stop = sig;
		} else if (event != 0) {
			/* an event we did not ask for: ignore */
		} else if (sig == SIGSEGV) {
			struct user_regs_struct now_regs;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &now_regs) < 0) {
				s->seized = errno != ESRCH;
				return CALL_GONE;
			}
			snprintf(msg, msglen, "segmentation fault at %#llx during the call",
				 (unsigned long long)now_regs.rip);
			deliver = sig;
		} else if (sig == SIGSYS && seccomp_trap_unhandled(pid, s->tid)) {
			/* A seccomp filter trapped a system call of the loader and the
			 * program has no SIGSYS handler to emulate it: make the call fail
			 * with EPERM instead of letting SIGSYS kill the process (the
			 * kernel rolled rax back to the system call number). */
			struct user_regs_struct now_regs;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &now_regs) == 0) {
				now_regs.rax = (uint64_t)-EPERM;
				ptrace_req(PTRACE_SETREGS, s->tid, NULL, &now_regs);
			}
			snprintf(msg, msglen, "a seccomp filter blocked a system call");
		} else if (is_stop_signal(sig)) {
			s->pending_stop = sig;
		} else {
			deliver = sig;
		}
		if (ptrace_req(resume, s->tid, NULL, (void *)(long)deliver) < 0) {
			if (errno == ESRCH) {
				s->seized = false;
				return CALL_GONE;
			}
		}
		s->stopped = false;
	}
}

/* Make the thread, stopped at its seizure or at the end of a previous call,
 * call fn(arg0, arg1) on the frame of frame_build. The return value is lost
 * to rt_sigreturn: the caller learns what it needs another way. The end is
 * seen without any breakpoint: the thread runs under PTRACE_SYSCALL and
 * stops at the entry of our rt_sigreturn, where the next call or the
 * restore is made; a tracer gone meanwhile leaves nothing behind, and the
 * thread finishes the call and rt_sigreturn on its own. Signals arriving
 * meanwhile are delivered (their handlers run on top of our frame), stop
 * signals are held. */
enum call_result remote_call(int pid, struct seized *s, uint64_t fn, uint64_t arg0, uint64_t arg1,
			     unsigned timeout_ms, char *msg, size_t msglen)
{
	enum __ptrace_request resume;
	enum call_result r = call_start(pid, s, fn, arg0, arg1, &resume, msg, msglen);

	if (r != CALL_OK)
		return r;
	return call_wait(pid, s, resume, timeout_ms, msg, msglen);
}


/* A syscall interrupted by our stop that returned EINTR (timed sockets,
 * epoll_wait...) is made to restart instead, so the application never sees
 * it; only when no signal of its own is pending, which would explain an EINTR. */
bool undo_eintr(struct seized *s)
{
	if ((long)s->regs.orig_rax >= 0 && (long)s->regs.rax == -EINTR && !s->pending_sig) {
		s->regs.rax = (uint64_t)-ERESTARTNOHAND;
		return true;
	}
	return false;
}

