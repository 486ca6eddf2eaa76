/* ptrace.c: ptrace primitives of the injector: seizing one thread and
 * bringing it to a stop, saving and restoring its registers, letting it go
 * exactly as it was, running it to a return address, and making it call a
 * function (remote_call). */
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
		if (mono_ns() >= end)
			return 0;
		nap_us(nap);
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
	if (ptrace(PTRACE_SEIZE, s->tid, NULL, NULL) < 0) {
		*err = errno;
		return STOP_ERROR;
	}
	s->seized = true;
	s->t_interrupt = mono_ns();
	if (ptrace(PTRACE_INTERRUPT, s->tid, NULL, NULL) < 0) {
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
			ptrace(PTRACE_CONT, s->tid, NULL, NULL);
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
		if (ptrace(PTRACE_CONT, s->tid, NULL, (void *)(long)sig) < 0) {
			*err = errno;
			return errno == ESRCH ? STOP_GONE : STOP_ERROR;
		}
	}
}

#define DR_OFFSET(i) (offsetof(struct user, u_debugreg) + (i) * sizeof(long))

/* Put the thread's debug registers back as they were (the thread is stopped). */
static void disarm(struct seized *s)
{
	if (!s->dr_armed || !s->stopped)
		return;
	ptrace(PTRACE_POKEUSER, s->tid, (void *)DR_OFFSET(7), (void *)s->saved_dr7);
	ptrace(PTRACE_POKEUSER, s->tid, (void *)DR_OFFSET(0), (void *)s->saved_dr0);
	s->dr_armed = false;
}

/* Let go of a thread: give back registers if asked, then detach re-delivering
 * what it was about to receive. Safe to call in any state. */
void release(int pid, struct seized *s, bool restore)
{
	if (!s->seized)
		goto out;
	if (!s->stopped) {
		/* a running tracee cannot be detached: stop it first */
		int status;
		if (ptrace(PTRACE_INTERRUPT, s->tid, NULL, NULL) == 0) {
			for (int i = 0; i < 20; i++) {
				int r = wait_tid(s->tid, &status, 100);
				if (r < 0 || (r == 1 && (WIFEXITED(status) || WIFSIGNALED(status)))) {
					s->seized = false;
					goto out;
				}
				if (r == 1 && WIFSTOPPED(status)) {
					int sig = WSTOPSIG(status);
					struct user_regs_struct now;
					if ((status >> 16) == 0 && sig == SIGSEGV &&
					    ptrace(PTRACE_GETREGS, s->tid, NULL, &now) == 0 &&
					    now.rip == MAGIC_RETURN) {
						/* a late return from our call: now it can be undone */
						s->stopped = true;
						restore = true;
						break;
					}
					if ((status >> 16) == 0 && !is_stop_signal(sig)) {
						/* a signal on its way: let it through, keep waiting */
						ptrace(PTRACE_CONT, s->tid, NULL, (void *)(long)sig);
						continue;
					}
					if ((status >> 16) == 0)
						s->pending_sig = sig;   /* a stop signal: detach delivers it */
					s->stopped = true;
					break;
				}
			}
		}
	}
	disarm(s);
	if (restore && s->regs_saved && s->stopped) {
		if (s->xstate) {
			if (s->xstate_is_fp) {
				ptrace(PTRACE_SETFPREGS, s->tid, NULL, s->xstate);
			} else {
				struct iovec iov = { s->xstate, s->xstate_len };
				ptrace(PTRACE_SETREGSET, s->tid, (void *)NT_X86_XSTATE, &iov);
			}
		}
		ptrace(PTRACE_SETREGS, s->tid, NULL, &s->regs);
	}
	ptrace(PTRACE_DETACH, s->tid, NULL, (void *)(long)s->pending_sig);
	s->seized = false;
	if (s->pending_stop)
		kill(pid, s->pending_stop);
out:
	free(s->xstate);
	s->xstate = NULL;
	s->stopped = false;
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

/* Let a thread that was stopped inside libc or the loader run until it returns
 * into the application at addr (a return address on its stack): there every
 * function above has returned and released its locks. The thread runs alone
 * to that point under a hardware execution breakpoint, which lives in its own
 * debug registers: no code is written and no other thread can hit it. Returns
 * STOP_OK with the thread stopped at addr (s->regs refreshed), or STOP_TIMEOUT
 * (stopped again elsewhere), STOP_GROUP, STOP_GONE or STOP_ERROR. */
int run_to_return(struct seized *s, uint64_t addr, unsigned timeout_ms)
{
	int status, r;

	errno = 0;
	long dr7 = ptrace(PTRACE_PEEKUSER, s->tid, (void *)DR_OFFSET(7), NULL);
	if (errno || (dr7 & 0xff))
		return STOP_ERROR;      /* debug registers in use (a debugger's watchpoint) */
	long dr0 = ptrace(PTRACE_PEEKUSER, s->tid, (void *)DR_OFFSET(0), NULL);
	if (errno)
		return STOP_ERROR;
	s->saved_dr0 = dr0;
	s->saved_dr7 = dr7;
	/* DR0 = addr; DR7: L0 enabled, break on execution (R/W0 = 00, LEN0 = 00) */
	if (ptrace(PTRACE_POKEUSER, s->tid, (void *)DR_OFFSET(0), (void *)addr) < 0)
		return STOP_ERROR;
	s->dr_armed = true;
	if (ptrace(PTRACE_POKEUSER, s->tid, (void *)DR_OFFSET(7), (void *)(dr7 | 1)) < 0 ||
	    ptrace(PTRACE_CONT, s->tid, NULL, NULL) < 0) {
		disarm(s);
		return errno == ESRCH ? STOP_GONE : STOP_ERROR;
	}
	s->stopped = false;
	uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000u;
	bool interrupted = false;
	for (;;) {
		uint64_t now = mono_ns();
		unsigned left = now >= end ? 0 : (unsigned)((end - now) / 1000000u) + 1;
		r = wait_tid(s->tid, &status, interrupted ? STOP_TIMEOUT_MS : left);
		if (r == 0 && !interrupted) {
			/* still not back: stop it wherever it is */
			if (ptrace(PTRACE_INTERRUPT, s->tid, NULL, NULL) < 0)
				return STOP_ERROR;
			interrupted = true;
			continue;
		}
		if (r == 0)
			return STOP_TIMEOUT;    /* not even stopped: release() retries */
		if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
			s->seized = false;
			s->dr_armed = false;
			return STOP_GONE;
		}
		if (!WIFSTOPPED(status))
			continue;
		int sig = WSTOPSIG(status), event = status >> 16;
		s->stopped = true;
		if (event == PTRACE_EVENT_STOP) {
			disarm(s);
			if (is_stop_signal(sig))
				return STOP_GROUP;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &s->regs) < 0)
				return STOP_ERROR;
			return STOP_TIMEOUT;
		}
		if (event == 0 && sig == SIGTRAP) {
			struct user_regs_struct now_regs;
			if (ptrace(PTRACE_GETREGS, s->tid, NULL, &now_regs) == 0 && now_regs.rip == addr) {
				/* there; the SIGTRAP is never delivered (resumed with 0) */
				disarm(s);
				s->regs = now_regs;
				return STOP_OK;
			}
		}
		/* any other signal goes to the program as it would have */
		if (ptrace(PTRACE_CONT, s->tid, NULL, (void *)(long)(event ? 0 : sig)) < 0) {
			if (errno == ESRCH) {
				s->seized = false;
				s->dr_armed = false;
				return STOP_GONE;
			}
		}
		s->stopped = false;
	}
}

/* ---------------------------------------------------------------- remote calls */

/* Copy len bytes into the target at addr. */
static int poke(int pid, int tid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = { (void *)buf, len }, r = { (void *)addr, len };
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
		if (ptrace(PTRACE_POKEDATA, tid, (void *)(addr + i), (void *)w) < 0)
			return -errno;
	}
	return 0;
}

/* Read a NUL-terminated string of at most n-1 bytes from the target. */
void peek_string(int pid, int tid, uint64_t addr, char *buf, size_t n)
{
	struct iovec l = { buf, n - 1 }, r = { (void *)addr, n - 1 };
	ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

	if (got <= 0) {
		size_t i;
		for (i = 0; i + sizeof(long) <= n - 1; i += sizeof(long)) {
			errno = 0;
			long w = ptrace(PTRACE_PEEKDATA, tid, (void *)(addr + i), NULL);
			if (errno)
				break;
			memcpy(buf + i, &w, sizeof w);
			if (memchr(&w, 0, sizeof w))
				break;
		}
		got = (ssize_t)i + (ssize_t)sizeof(long);
		if (got > (ssize_t)n - 1)
			got = (ssize_t)n - 1;
	}
	buf[got > 0 ? got : 0] = '\0';
	buf[n - 1] = '\0';
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

/* Make the stopped thread call fn(arg0, arg1) where arg0 may be a string copied
 * onto its stack (str != NULL). The frame goes below the red zone, 16-byte
 * aligned as at any call; the return address is MAGIC_RETURN. Signals arriving
 * meanwhile are delivered (their handlers run on top of our frame), stop
 * signals are held. *ret gets rax. */
enum call_result remote_call(int pid, struct seized *s, uint64_t fn, const char *str,
			     uint64_t arg1, uint64_t *ret, unsigned timeout_ms, char *msg,
			     size_t msglen)
{
	struct user_regs_struct r = s->regs;
	size_t slen = str ? strlen(str) + 1 : 0;
	uint64_t top = s->regs.rsp - RED_ZONE;
	uint64_t straddr = (top - slen) & ~(uint64_t)15;
	uint64_t sp = straddr - 8;
	size_t blen = (size_t)(top - sp);
	unsigned char *block = xcalloc(1, blen);
	uint64_t magic = MAGIC_RETURN;
	int status, w;

	memcpy(block, &magic, 8);
	if (str)
		memcpy(block + 8, str, slen);
	if (poke(pid, s->tid, sp, block, blen) < 0) {
		snprintf(msg, msglen, "cannot write the call frame: %s", strerror(errno));
		free(block);
		return CALL_ERROR;
	}
	free(block);
	r.rsp = sp;
	r.rip = fn;
	r.rdi = str ? straddr : 0;
	r.rsi = arg1;
	r.rax = 0;
	r.eflags &= ~(1ULL << 10);          /* DF, as the ABI wants at any call */
	r.orig_rax = (uint64_t)-1;          /* no syscall restart into our call */
	if (ptrace(PTRACE_SETREGS, s->tid, NULL, &r) < 0) {
		snprintf(msg, msglen, "PTRACE_SETREGS: %s", strerror(errno));
		return CALL_ERROR;
	}
	if (ptrace(PTRACE_CONT, s->tid, NULL, NULL) < 0) {
		snprintf(msg, msglen, "PTRACE_CONT: %s", strerror(errno));
		return errno == ESRCH ? CALL_GONE : CALL_ERROR;
	}
	s->stopped = false;
	uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		uint64_t now = mono_ns();
		if (now >= end)
			return CALL_TIMEOUT;
		w = wait_tid(s->tid, &status, (unsigned)((end - now) / 1000000u) + 1);
		if (w == 0)
			return CALL_TIMEOUT;
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
		if (event == PTRACE_EVENT_STOP) {
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
			if (now_regs.rip == MAGIC_RETURN) {
				*ret = now_regs.rax;
				return CALL_OK;
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
				ptrace(PTRACE_SETREGS, s->tid, NULL, &now_regs);
			}
			snprintf(msg, msglen, "a seccomp filter blocked a system call");
		} else if (is_stop_signal(sig)) {
			s->pending_stop = sig;
		} else {
			deliver = sig;
		}
		if (ptrace(PTRACE_CONT, s->tid, NULL, (void *)(long)deliver) < 0) {
			if (errno == ESRCH) {
				s->seized = false;
				return CALL_GONE;
			}
		}
		s->stopped = false;
	}
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

