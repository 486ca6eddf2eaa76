/* inject-prepare.c: what the injector learns of a process before it stops any
 * thread (inject_prepare: alive, a process, not traced or stopped, a program
 * that can take the agent (progkind.c), where dlopen and __restore_rt are,
 * the agent's start function), the checks repeated on a stopped thread
 * (still_ours, same_program), and the refusals explained (explain_eperm:
 * which of ptrace's permission rules forbids it, and the fix). The attach
 * itself is inject.c. */
#include "config.h"
#include "container.h"
#include "inject-internal.h"
#include "progkind.h"
#include "util.h"
#include "agent/protocol.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* Field 22 of /proc/PID/stat (start time in clock ticks), or 0. */
static unsigned long long proc_start_time(int pid)
{
	char fn[64], buf[1024], *p;
	unsigned long long t = 0;

	snprintf(fn, sizeof fn, "/proc/%d/stat", pid);
	if (read_small_file(fn, buf, sizeof buf) <= 0 || !(p = strrchr(buf, ')')))
		return 0;
	/* after "pid (comm)": state is field 3, starttime field 22 */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
		   "%*d %*d %llu", &t) != 1)
		return 0;
	return t;
}

/* Whether the stopped thread is still one of the process we prepared for:
 * neither the pid nor the thread id was reused by another process meanwhile (a
 * stopped thread cannot change process, so this holds until we let go).
 * Returns 1 when it is, 0 when the thread is another's (the process lives
 * on), -1 when the process itself is gone. */
int still_ours(const struct injector *ij, int tid)
{
	char fn[96];
	struct proc_status st;

	if (proc_start_time(ij->pid) != ij->start_time)
		return -1;
	snprintf(fn, sizeof fn, "/proc/%d/task/%d/status", ij->pid, tid);
	if (proc_status_read(fn, &st) < 0 || st.tgid != ij->pid)
		return 0;
	return 1;
}

/* Set the error and return its negated kind. */
int inject_fail(int kind, char **cause, char **hint, const char *h, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(*cause);
	*cause = xvasprintf(fmt, ap);
	va_end(ap);
	free(*hint);
	*hint = h ? xstrdup(h) : NULL;
	return -kind;
}

bool process_exists(int pid)
{
	char fn[64];
	struct proc_status st;
	snprintf(fn, sizeof fn, "/proc/%d/status", pid);
	return proc_status_read(fn, &st) == 0 && st.state != 'Z' && st.state != 'X';
}

/* Is pid another memwatch (the same program as this one, or one named so)? */
static bool is_memwatch(int pid)
{
	char fn[64], comm[32] = "";
	struct stat a, b;

	if (pid <= 0 || pid == getpid())
		return false;
	snprintf(fn, sizeof fn, "/proc/%d/exe", pid);
	if (stat(fn, &a) == 0 && stat("/proc/self/exe", &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		return true;
	snprintf(fn, sizeof fn, "/proc/%d/comm", pid);
	if (read_small_file(fn, comm, sizeof comm) <= 0)
		return false;
	comm[strcspn(comm, "\n")] = '\0';
	return !strcmp(comm, "memwatch");
}

/* The pid of another memwatch tracing a thread of pid (it is attaching: for
 * a few milliseconds), or 0. */
int memwatch_tracing(int pid)
{
	char fn[320];
	struct dirent *de;
	DIR *d;
	int found = 0;

	snprintf(fn, sizeof fn, "/proc/%d/task", pid);
	if (!(d = opendir(fn)))
		return 0;
	while (!found && (de = readdir(d))) {
		struct proc_status st;
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(fn, sizeof fn, "/proc/%d/task/%s/status", pid, de->d_name);
		if (proc_status_read(fn, &st) == 0 && st.tracer && is_memwatch(st.tracer))
			found = st.tracer;
	}
	closedir(d);
	return found;
}

/* The process is in a job-control stop (SIGSTOP, ^Z): the agent's start-up
 * would never run, and a stop is the user's to end, never ours. */
int fail_stopped(int pid, char **cause, char **hint)
{
	char *h = xasprintf("resume it (kill -CONT %d) and retry", pid);
	int r = inject_fail(INJECT_ENOSAFEPOINT, cause, hint, h,
		     "the process is stopped: it cannot run the agent's start-up");
	free(h);
	return r;
}

/* Explain an EPERM from PTRACE_SEIZE with what we can see of the cause. */
int explain_eperm(struct injector *ij, char **cause, char **hint)
{
	unsigned me = getuid();
	bool cap = have_cap_sys_ptrace();
	int scope = yama_scope();
	char fn[64];

	snprintf(fn, sizeof fn, "/proc/%d/status", ij->pid);
	proc_status_read(fn, &ij->st);
	if (ij->st.tracer)
		return inject_fail(INJECT_EPERM, cause, hint, "detach the debugger first, then retry",
			    "already traced by pid %d", ij->st.tracer);
	if (scope == 3)
		return inject_fail(INJECT_EPERM, cause, hint,
			    "kernel.yama.ptrace_scope=3 can only be lowered by rebooting",
			    "ptrace is disabled for everyone (kernel.yama.ptrace_scope=3)");
	if (!cap && me == 0)
		return inject_fail(INJECT_EPERM, cause, hint,
			    "give memwatch CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE, "
			    "or a debugging container's profile that has it)",
			    "ptrace not permitted: memwatch runs as root without CAP_SYS_PTRACE");
	if (!cap && (ij->st.uid[0] != me || ij->st.uid[1] != me || ij->st.uid[2] != me)) {
		char *h = xasprintf("run memwatch as uid %u (the process's owner) or as root",
				    ij->st.uid[1]);
		int r = inject_fail(INJECT_EPERM, cause, hint, h,
			     "ptrace not permitted: the process belongs to uid %u and you are uid %u",
			     ij->st.uid[1], me);
		free(h);
		return r;
	}
	if (!cap && scope >= 1)
		return inject_fail(INJECT_EPERM, cause, hint,
			    "set kernel.yama.ptrace_scope=0 (sysctl -w kernel.yama.ptrace_scope=0) or run as root",
			    "ptrace not permitted by kernel.yama.ptrace_scope=%d", scope);
	snprintf(fn, sizeof fn, "/proc/%d/environ", ij->pid);
	if (!cap && access(fn, R_OK) < 0)
		return inject_fail(INJECT_EPERM, cause, hint, "run memwatch as root",
			    "ptrace not permitted: the process is not dumpable (set-uid, or PR_SET_DUMPABLE 0)");
	return inject_fail(INJECT_EPERM, cause, hint,
		    cap ? "a security module (SELinux, AppArmor) or a container may forbid ptrace"
			: "run memwatch as root (CAP_SYS_PTRACE)",
		    "ptrace not permitted: %s", strerror(EPERM));
}

/* The process as /proc shows it: alive, a process and not a thread, not us,
 * not traced (another memwatch attaching: -INJECT_EBUSY), not stopped or
 * frozen. 0 or -kind. */
static int check_process(struct injector *ij, char **cause, char **hint)
{
	char fn[PATH_MAX];
	int pid = ij->pid, r;

	snprintf(fn, sizeof fn, "/proc/%d/status", pid);
	if (proc_status_read(fn, &ij->st) < 0)
		return inject_fail(INJECT_ENOPROC, cause, hint, NULL, "no such process");
	if (ij->st.state == 'Z' || ij->st.state == 'X')
		return inject_fail(INJECT_ENOPROC, cause, hint, NULL, "the process has exited (zombie)");
	ij->start_time = proc_start_time(pid);
	if (ij->st.tgid && ij->st.tgid != pid)
		return inject_fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
			    "%d is a thread of process %d, not a process", pid, ij->st.tgid);
	if (pid == getpid())
		return inject_fail(INJECT_EUNSUPPORTED, cause, hint, NULL, "memwatch cannot attach to itself");
	if (ij->st.tracer && is_memwatch(ij->st.tracer)) {
		ij->busy_by = ij->st.tracer;
		return -INJECT_EBUSY;
	}
	if (ij->st.tracer) {
		char comm[80] = "?";
		snprintf(fn, sizeof fn, "/proc/%d/comm", ij->st.tracer);
		if (read_small_file(fn, comm, sizeof comm) > 0)
			comm[strcspn(comm, "\n")] = '\0';
		char *h = xasprintf("detach the debugger (pid %d, %s) first, then retry", ij->st.tracer, comm);
		r = inject_fail(INJECT_EPERM, cause, hint, h, "already traced by pid %d (%s)", ij->st.tracer, comm);
		free(h);
		return r;
	}
	if (ij->st.state == 'T' || ij->st.state == 't')
		return fail_stopped(pid, cause, hint);
	if (cgroup_frozen(pid))
		return inject_fail(INJECT_ENOSAFEPOINT, cause, hint, "thaw its cgroup and retry",
			    "the process is in a frozen cgroup");
	return 0;
}

/* Its maps and C library: readable (permissions), a program that can take
 * the agent (glibc, not Go) and has finished starting, its code files the
 * same for us as for it; the loader and libpthread too. 0 or -kind
 * (-INJECT_EBUSY: another memwatch). */
static int read_target(struct injector *ij, char **cause, char **hint)
{
	int pid = ij->pid, r;

	/* Permission problems are visible before any ptrace call: reading the maps
	 * needs the same access (PTRACE_MODE_READ). */
	if ((r = procmaps_read(pid, &ij->cl.maps)) < 0) {
		if (!process_exists(pid))
			return inject_fail(INJECT_ENOPROC, cause, hint, NULL, "no such process");
		if (pid_is_kernel_thread(pid))
			return inject_fail(INJECT_EINTERNAL, cause, hint, NULL,
				    "pid %d is a kernel thread: it has no user memory", pid);
		if (r == -EACCES || r == -EPERM)
			return explain_eperm(ij, cause, hint);
		return inject_fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot read its memory map: %s",
			    strerror(-r));
	}
	/* Another memwatch attaching now (its thread may be anywhere in dlopen of
	 * the agent, which the maps just read may show half loaded): wait for it,
	 * then use the agent it loaded. Looked at after reading the maps, so an
	 * agent seen mapped with no memwatch tracing is one fully started. */
	if ((ij->busy_by = memwatch_tracing(pid)))
		return -INJECT_EBUSY;
	for (size_t i = 0; i < ij->cl.maps.n; i++)
		if (!strcmp(ij->cl.maps.v[i].path, "[vdso]")) {
			ij->cl.vdso_lo = ij->cl.maps.v[i].lo;
			ij->cl.vdso_hi = ij->cl.maps.v[i].hi;
		}
	stack_floor_init(&ij->cl, pid);

	/* what the program is (its interpreter, Go), whatever its files are named:
	 * one that cannot take the agent is told apart from one still starting */
	struct prog_info pi;
	prog_judge_pid(pid, &pi);
	if (prog_refused(pi.kind)) {
		char what[400];
		return inject_fail(INJECT_EUNSUPPORTED, cause, hint, prog_hint(pi.kind),
			    "the process %s: %s", prog_what(&pi, what, sizeof what), prog_why(pi.kind));
	}
	bool essential, readable;
	const char *gone = deleted_mapping(pid, &ij->cl.maps, &essential, &readable);
	if (gone && essential && !readable)
		return inject_fail(INJECT_EUNSUPPORTED, cause, hint,
			    "run memwatch as root (CAP_SYS_ADMIN reads /proc/PID/map_files), or "
			    "restart the program",
			    "'%.*s' was replaced or deleted on disk since the process loaded it, and "
			    "the copy it mapped cannot be read: its stacks cannot be checked for a "
			    "safe point",
			    (int)(strstr(gone, " (deleted)") - gone), gone);
	/* a file upgraded under the process, or a path that names another file
	 * here, in a container: stacks are unwound from the very objects mapped,
	 * through map_files (container-unwind.c) */
	ij->unwind_map_files = (gone && readable) || container_other_root(pid);
	r = module_from_maps(pid, &ij->cl.maps, match_libc, 0, 0, true, NULL, &ij->cl.libc, cause);
	if (r < 0)
		return r == -2 ? -INJECT_EUNSUPPORTED : -INJECT_EINTERNAL;
	if (r == 0) {
		bool any_loader = false;
		for (size_t i = 0; i < ij->cl.maps.n; i++)
			if (is_ldso_name(base_name(ij->cl.maps.v[i].path)))
				any_loader = true;
		/* the program could not be read: its maps say what they can */
		if (!any_loader && pi.kind == PROG_UNKNOWN) {
			pi.kind = PROG_STATIC;
			return inject_fail(INJECT_EUNSUPPORTED, cause, hint, prog_hint(pi.kind),
				    "the process has no C library or dynamic loader mapped: %s",
				    prog_why(pi.kind));
		}
		/* the dynamic loader and no C library yet: the program is starting */
		return inject_fail(INJECT_ESTARTING, cause, hint, NULL,
			    "the process is still starting (its C library is not loaded yet)");
	}
	if (module_from_maps(pid, &ij->cl.maps, match_ldso, 0, 0, false, NULL, &ij->cl.ldso, cause) < 0)
		return -INJECT_EINTERNAL;
	if (module_from_maps(pid, &ij->cl.maps, match_libpthread, 0, 0, true, NULL, &ij->cl.libpthread,
			     cause) < 0)
		return -INJECT_EINTERNAL;
	return 0;
}

/* The code at the two addresses our calls go through, into code. */
static bool read_code(const struct injector *ij, unsigned char code[2][16])
{
	struct iovec l[2] = { { code[0], 16 }, { code[1], 16 } };
	struct iovec r[2] = { { (void *)(uintptr_t)ij->dlopen_addr, 16 },
			      { (void *)(uintptr_t)ij->rt_sigreturn_addr, 16 } };
	return process_vm_readv(ij->pid, l, 2, r, 2, 0) == 32;
}

/* Whether the process still runs the program inject_prepare() looked at:
 * one that executed another since (a shell's child becoming the program it
 * starts, a server re-executing itself) has other code there, or none, and a
 * call to the addresses found before would crash it. */
bool same_program(const struct injector *ij)
{
	unsigned char now[2][16];
	return read_code(ij, now) && !memcmp(now, ij->code, sizeof now);
}

/* The start of libc's first executable mapping in m, or 0. */
static uint64_t libc_code_at(const struct maps *m, const struct module *libc)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct mapping *mp = &m->v[i];
		if (mp->perms[2] == 'x' && mp->inode == libc->inode && !strcmp(mp->path, libc->path))
			return mp->lo;
	}
	return 0;
}

/* Whether the process is still starting, as far as libc's code tells: none
 * of it mapped executable yet (the loader has mapped its file, not yet its
 * segments), or mapped elsewhere now than in the maps read before (the
 * process executed a program meanwhile: a shell's child becoming the
 * program it starts). */
static bool libc_starting(const struct injector *ij)
{
	uint64_t was = libc_code_at(&ij->cl.maps, &ij->cl.libc);
	struct maps now = { 0 };
	bool moved;

	if (!was)
		return true;
	if (procmaps_read(ij->pid, &now) < 0)
		return false;
	moved = libc_code_at(&now, &ij->cl.libc) != was;
	procmaps_free(&now);
	return moved;
}

/* Where dlopen is: libc's (glibc >= 2.34), libdl's, or libc's private
 * __libc_dlopen_mode; and libc's __restore_rt, which our calls return into.
 * 0 or -kind. */
static int find_dlopen(struct injector *ij, char **cause, char **hint)
{
	const struct fsym *f;
	int pid = ij->pid, r;

	if ((f = module_find(&ij->cl.libc, "dlopen"))) {
		ij->dlopen_addr = ij->cl.libc.bias + f->lo;
	} else {
		/* glibc < 2.34: libdl's dlopen if the program uses it, else libc's
		 * private entry point */
		struct module dl;
		r = module_from_maps(pid, &ij->cl.maps, match_libdl, 0, 0, true, NULL, &dl, cause);
		if (r < 0)
			return -INJECT_EINTERNAL;
		if (r > 0 && (f = module_find(&dl, "dlopen")))
			ij->dlopen_addr = dl.bias + f->lo;
		if (r > 0)
			module_free(&dl);
		if (!ij->dlopen_addr && (f = module_find(&ij->cl.libc, "__libc_dlopen_mode"))) {
			ij->dlopen_addr = ij->cl.libc.bias + f->lo;
			ij->dlopen_is_private = true;
		}
		if (!ij->dlopen_addr)
			return inject_fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
				    "no dlopen in the process's libc (%s)", ij->cl.libc.path);
	}
	if (!(ij->rt_sigreturn_addr = find_rt_sigreturn(pid, &ij->cl.maps, &ij->cl.libc)) && errno == EPERM)
		return explain_eperm(ij, cause, hint);
	if (!ij->rt_sigreturn_addr && libc_starting(ij))
		return inject_fail(INJECT_ESTARTING, cause, hint, NULL,
			    "the process is still starting (its C library is being loaded)");
	if (!ij->rt_sigreturn_addr)
		return inject_fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
			    "no signal return code (__restore_rt) found in the process's libc (%s)",
			    ij->cl.libc.path);
	if (!read_code(ij, ij->code)) {
		/* (it may end at any point of an attach: said as anywhere else) */
		if (errno == ESRCH)
			return inject_fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
		/* a program executed meanwhile (a shell's child becoming the
		 * program it starts): its libc is elsewhere, or not mapped yet */
		if (errno == EFAULT && libc_starting(ij))
			return inject_fail(INJECT_ESTARTING, cause, hint, NULL,
				    "the process is still starting (its C library is being loaded)");
		return inject_fail(INJECT_EINTERNAL, cause, hint, NULL,
			    "cannot read the process's C library: %s", strerror(errno));
	}
	return 0;
}

/* The agent's start function: in an agent already mapped, or in agent_path,
 * to be loaded. 0 or -kind. */
static int find_agent(struct injector *ij, const char *agent_path, char **cause, char **hint)
{
	const struct fsym *f;
	int pid = ij->pid, r;

	/* The agent: already mapped (this very file, or any memwatch agent), or
	 * to be loaded from agent_path, which must be the same file inside the
	 * process's root (containers). */
	if (stat(agent_path, &ij->agent_st) < 0)
		return inject_fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot use the agent '%s': %s",
			    agent_path, strerror(errno));
	if (!(ij->agent_abs = realpath(agent_path, NULL)))
		return inject_fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot use the agent '%s': %s",
			    agent_path, strerror(errno));
	r = module_from_maps(pid, &ij->cl.maps, NULL, ij->agent_st.st_dev, ij->agent_st.st_ino, true,
			     MEMWATCH_AGENT_START_SYMBOL, &ij->loaded, cause);
	if (r == 0)
		r = module_from_maps(pid, &ij->cl.maps, match_agent, 0, 0, true, MEMWATCH_AGENT_START_SYMBOL,
				     &ij->loaded, cause);
	if (r < 0)
		return -INJECT_EINTERNAL;
	if (r > 0) {
		if (!(f = module_find(&ij->loaded, MEMWATCH_AGENT_START_SYMBOL)))
			return inject_fail(INJECT_ESTART, cause, hint, NULL, "'%s' is loaded but exports no %s",
				    ij->loaded.path, MEMWATCH_AGENT_START_SYMBOL);
		ij->start_off = f->lo;
		ij->cl.agent_lo = ij->loaded.lo;
		ij->cl.agent_hi = ij->loaded.hi;
		return 0;
	}
	/* In a container: its socket must be reachable, and the agent is loaded
	 * from a memfd made in it (inject-memfd.c, once a thread is stopped) or
	 * else copied into its root, owned by its user, unless the same file is
	 * there at the same path. */
	if (container_check_reach(pid, cause, hint) < 0)
		return -INJECT_EPERM;
	container_agent_release(&ij->placed);
	ij->via_memfd = false;
	if (!container_agent_visible(pid, ij->agent_abs) && memfd_possible(ij)) {
		char fn[64];
		struct stat root;
		/* its root is seen with ptrace's permission (PTRACE_MODE_READ) */
		snprintf(fn, sizeof fn, "/proc/%d/root/", pid);
		if (stat(fn, &root) < 0 && (errno == EACCES || errno == EPERM))
			return explain_eperm(ij, cause, hint);
		ij->via_memfd = true;
	} else if ((r = container_place_agent(pid, ij->agent_abs, ij->st.uid[1], ij->st.gid[1],
					      &ij->placed, cause, hint)) < 0) {
		return r == -EACCES ? explain_eperm(ij, cause, hint) : -INJECT_EUNSUPPORTED;
	}
	struct module agent = { 0 };
	uint64_t minv;
	int fd = open(ij->agent_abs, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return inject_fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot open the agent '%s': %s",
			    ij->agent_abs, strerror(errno));
	r = elf_read_syms(fd, ij->agent_abs, true, MEMWATCH_AGENT_START_SYMBOL, &agent, &minv, cause);
	close(fd);
	if (r < 0)
		return r == -2 ? -INJECT_EUNSUPPORTED : -INJECT_EINTERNAL;
	if (!agent.nsyms) {
		module_free(&agent);
		return inject_fail(INJECT_ESTART, cause, hint, NULL, "the agent '%s' exports no %s", ij->agent_abs,
			    MEMWATCH_AGENT_START_SYMBOL);
	}
	ij->start_off = agent.syms[0].lo;
	module_free(&agent);
	return 0;
}

/* Tests (MEMWATCH_TEST_END_TARGET): the process is killed, and gone, between
 * reading its maps and reading its C library's code, as a process that exits
 * on its own may be. */
static void test_end_target(int pid)
{
	if (!getenv("MEMWATCH_TEST_END_TARGET"))
		return;
	kill(pid, SIGKILL);
	for (int i = 0; i < 2000 && process_exists(pid); i++)
		usleep(1000);
}

/* Everything that can be learnt without stopping a thread: process state,
 * permissions, where dlopen is, the agent's start symbol. */
int inject_prepare(struct injector *ij, const char *agent_path, char **cause, char **hint)
{
	int r;

	if ((r = check_process(ij, cause, hint)) < 0)
		return r;
	if ((r = read_target(ij, cause, hint)) == 0) {
		test_end_target(ij->pid);
		if ((r = find_dlopen(ij, cause, hint)) == 0)
			r = find_agent(ij, agent_path, cause, hint);
	}
	/* The process may end at any moment of this, and whatever was being
	 * read then (its maps, its libc's code) is missing: that is said as the
	 * exit it is, not as what could not be found. */
	if (r < 0 && r != -INJECT_EBUSY && r != -INJECT_ENOPROC &&
	    (proc_start_time(ij->pid) != ij->start_time || !process_exists(ij->pid)))
		return inject_fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
	return r;
}
