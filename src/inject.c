/* inject.c: load the agent into a running process with ptrace. One thread is
 * stopped at a safe point, made to call dlopen() and memwatch_agent_start() on
 * its own stack, then put back exactly as it was; the others never stop. */
#include "config.h"
#include "container.h"
#include "inject-internal.h"
#include "util.h"
#include "agent/protocol.h"

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

/* ---------------------------------------------------------------- inject_agent */

struct injector {
	int pid;
	const char *options;
	char *agent_abs;            /* absolute path of the agent file */
	struct container_agent placed;  /* the agent as the process loads it (a copy in a container) */
	struct stat agent_st;
	struct proc_status st;
	uint64_t dlopen_addr;
	uint64_t rt_sigreturn_addr; /* libc's __restore_rt: our calls return into it */
	unsigned char code[2][16];  /* the code at dlopen_addr and rt_sigreturn_addr */
	bool dlopen_is_private;     /* __libc_dlopen_mode */
	uint64_t start_off;         /* memwatch_agent_start in the agent file, relative to its bias */
	struct module loaded;       /* the agent already mapped (already_loaded) */
	struct classifier cl;
	unsigned long long start_time;  /* of the process: tells a reused pid apart */
	int busy_by;                /* INJECT_EBUSY: the memwatch that is attaching */
};

/* What the start function's result slot holds until it stores its result. */
#define START_PENDING "mwsp"

/* Internal to this file: another memwatch is attaching to the process. */
#define INJECT_EBUSY 100

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
static int still_ours(const struct injector *ij, int tid)
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
static int fail(int kind, char **cause, char **hint, const char *h, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int fail(int kind, char **cause, char **hint, const char *h, const char *fmt, ...)
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

static bool process_exists(int pid)
{
	char fn[64];
	struct proc_status st;
	snprintf(fn, sizeof fn, "/proc/%d/status", pid);
	return proc_status_read(fn, &st) == 0 && st.state != 'Z' && st.state != 'X';
}

/* Whether the program is written in Go: its goroutines run on small stacks
 * of its own making, where a call into dlopen would overflow, and its threads
 * do not unwind through libc's tables. Recognised by Go's own ELF sections. */
static bool is_go_program(int pid)
{
	char fn[64];
	bool go = false;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	snprintf(fn, sizeof fn, "/proc/%d/exe", pid);
	if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	elf_version(EV_CURRENT);
	if ((elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		while (!go && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;
			if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)))
				go = !strcmp(name, ".go.buildinfo") || !strcmp(name, ".gopclntab");
		}
	}
	elf_end(elf);
	close(fd);
	return go;
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
static int memwatch_tracing(int pid)
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
static int fail_stopped(int pid, char **cause, char **hint)
{
	char *h = xasprintf("resume it (kill -CONT %d) and retry", pid);
	int r = fail(INJECT_ENOSAFEPOINT, cause, hint, h,
		     "the process is stopped: it cannot run the agent's start-up");
	free(h);
	return r;
}

/* Explain an EPERM from PTRACE_SEIZE with what we can see of the cause. */
static int explain_eperm(struct injector *ij, char **cause, char **hint)
{
	unsigned me = getuid();
	bool cap = have_cap_sys_ptrace();
	int scope = yama_scope();
	char fn[64];

	snprintf(fn, sizeof fn, "/proc/%d/status", ij->pid);
	proc_status_read(fn, &ij->st);
	if (ij->st.tracer)
		return fail(INJECT_EPERM, cause, hint, "detach the debugger first, then retry",
			    "already traced by pid %d", ij->st.tracer);
	if (scope == 3)
		return fail(INJECT_EPERM, cause, hint,
			    "kernel.yama.ptrace_scope=3 can only be lowered by rebooting",
			    "ptrace is disabled for everyone (kernel.yama.ptrace_scope=3)");
	if (!cap && me == 0)
		return fail(INJECT_EPERM, cause, hint,
			    "give memwatch CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE, "
			    "or a debugging container's profile that has it)",
			    "ptrace not permitted: memwatch runs as root without CAP_SYS_PTRACE");
	if (!cap && (ij->st.uid[0] != me || ij->st.uid[1] != me || ij->st.uid[2] != me)) {
		char *h = xasprintf("run memwatch as uid %u (the process's owner) or as root",
				    ij->st.uid[1]);
		int r = fail(INJECT_EPERM, cause, hint, h,
			     "ptrace not permitted: the process belongs to uid %u and you are uid %u",
			     ij->st.uid[1], me);
		free(h);
		return r;
	}
	if (!cap && scope >= 1)
		return fail(INJECT_EPERM, cause, hint,
			    "set kernel.yama.ptrace_scope=0 (sysctl -w kernel.yama.ptrace_scope=0) or run as root",
			    "ptrace not permitted by kernel.yama.ptrace_scope=%d", scope);
	snprintf(fn, sizeof fn, "/proc/%d/environ", ij->pid);
	if (!cap && access(fn, R_OK) < 0)
		return fail(INJECT_EPERM, cause, hint, "run memwatch as root",
			    "ptrace not permitted: the process is not dumpable (set-uid, or PR_SET_DUMPABLE 0)");
	return fail(INJECT_EPERM, cause, hint,
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
		return fail(INJECT_ENOPROC, cause, hint, NULL, "no such process");
	if (ij->st.state == 'Z' || ij->st.state == 'X')
		return fail(INJECT_ENOPROC, cause, hint, NULL, "the process has exited (zombie)");
	ij->start_time = proc_start_time(pid);
	if (ij->st.tgid && ij->st.tgid != pid)
		return fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
			    "%d is a thread of process %d, not a process", pid, ij->st.tgid);
	if (pid == getpid())
		return fail(INJECT_EUNSUPPORTED, cause, hint, NULL, "memwatch cannot attach to itself");
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
		r = fail(INJECT_EPERM, cause, hint, h, "already traced by pid %d (%s)", ij->st.tracer, comm);
		free(h);
		return r;
	}
	if (ij->st.state == 'T' || ij->st.state == 't')
		return fail_stopped(pid, cause, hint);
	if (cgroup_frozen(pid))
		return fail(INJECT_ENOSAFEPOINT, cause, hint, "thaw its cgroup and retry",
			    "the process is in a frozen cgroup");
	return 0;
}

/* Its maps and C library: readable (permissions), a glibc process that has
 * finished starting, not Go, its code files the same for us as for it; the
 * loader and libpthread too. 0 or -kind (-INJECT_EBUSY: another memwatch). */
static int read_target(struct injector *ij, char **cause, char **hint)
{
	int pid = ij->pid, r;

	/* Permission problems are visible before any ptrace call: reading the maps
	 * needs the same access (PTRACE_MODE_READ). */
	if ((r = procmaps_read(pid, &ij->cl.maps)) < 0) {
		if (!process_exists(pid))
			return fail(INJECT_ENOPROC, cause, hint, NULL, "no such process");
		if (pid_is_kernel_thread(pid))
			return fail(INJECT_EINTERNAL, cause, hint, NULL,
				    "pid %d is a kernel thread: it has no user memory", pid);
		if (r == -EACCES || r == -EPERM)
			return explain_eperm(ij, cause, hint);
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot read its memory map: %s",
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

	r = module_from_maps(pid, &ij->cl.maps, match_libc, 0, 0, true, NULL, &ij->cl.libc, cause);
	if (r < 0)
		return r == -2 ? -INJECT_EUNSUPPORTED : -INJECT_EINTERNAL;
	if (r == 0) {
		bool musl = false, any_loader = false;
		for (size_t i = 0; i < ij->cl.maps.n; i++) {
			const char *b = base_name(ij->cl.maps.v[i].path);
			if (!strncmp(b, "ld-musl", 7) || !strncmp(b, "libc.musl", 9))
				musl = true;
			if (is_ldso_name(b))
				any_loader = true;
		}
		if (musl)
			return fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
				    "the process uses musl libc; only glibc processes can be attached to");
		if (!any_loader)
			return fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
				    "the process is statically linked (no libc.so or dynamic loader mapped)");
		/* the dynamic loader and no C library yet: the program is starting */
		return fail(INJECT_ESTARTING, cause, hint, NULL,
			    "the process is still starting (its C library is not loaded yet)");
	}
	if (is_go_program(pid))
		return fail(INJECT_EUNSUPPORTED, cause, hint,
			    "Go programs have their own heap profiler (runtime/pprof)",
			    "the process is a Go program: its goroutine stacks are too small "
			    "to load a library on");
	bool deleted;
	const char *blind = unwind_blind_spot(pid, &ij->cl.maps, &deleted);
	if (blind && deleted)
		return fail(INJECT_EUNSUPPORTED, cause, hint,
			    "restart the program, or start it with memwatch run",
			    "'%.*s' was replaced or deleted on disk since the process loaded it: "
			    "its stacks cannot be checked for a safe point",
			    (int)(strstr(blind, " (deleted)") - blind), blind);
	/* (a path that names another file here, in a container, is no blind
	 * spot: its stacks are unwound through map_files, container_unwind.c) */
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

/* Whether the process still runs the program prepare() looked at: one that
 * executed another since (a shell's child becoming the program it starts,
 * a server re-executing itself) has other code there, or none, and a call to
 * the addresses found before would crash it. */
static bool same_program(const struct injector *ij)
{
	unsigned char now[2][16];
	return read_code(ij, now) && !memcmp(now, ij->code, sizeof now);
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
			return fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
				    "no dlopen in the process's libc (%s)", ij->cl.libc.path);
	}
	if (!(ij->rt_sigreturn_addr = find_rt_sigreturn(pid, &ij->cl.maps, &ij->cl.libc)) && errno == EPERM)
		return explain_eperm(ij, cause, hint);
	if (!ij->rt_sigreturn_addr)
		return fail(INJECT_EUNSUPPORTED, cause, hint, NULL,
			    "no signal return code (__restore_rt) found in the process's libc (%s)",
			    ij->cl.libc.path);
	if (!read_code(ij, ij->code))
		return fail(INJECT_EINTERNAL, cause, hint, NULL,
			    "cannot read the process's C library: %s", strerror(errno));
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
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot use the agent '%s': %s",
			    agent_path, strerror(errno));
	if (!(ij->agent_abs = realpath(agent_path, NULL)))
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot use the agent '%s': %s",
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
			return fail(INJECT_ESTART, cause, hint, NULL, "'%s' is loaded but exports no %s",
				    ij->loaded.path, MEMWATCH_AGENT_START_SYMBOL);
		ij->start_off = f->lo;
		ij->cl.agent_lo = ij->loaded.lo;
		ij->cl.agent_hi = ij->loaded.hi;
		return 0;
	}
	/* In a container: its socket must be reachable, and the agent is copied
	 * into its root, owned by its user, unless the same file is there at the
	 * same path. */
	if (container_check_reach(pid, cause, hint) < 0)
		return -INJECT_EPERM;
	container_agent_release(&ij->placed);
	if ((r = container_place_agent(pid, ij->agent_abs, ij->st.uid[1], ij->st.gid[1], &ij->placed,
				       cause, hint)) < 0)
		return r == -EACCES ? explain_eperm(ij, cause, hint) : -INJECT_EUNSUPPORTED;
	struct module agent = { 0 };
	uint64_t minv;
	int fd = open(ij->agent_abs, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot open the agent '%s': %s",
			    ij->agent_abs, strerror(errno));
	r = elf_read_syms(fd, ij->agent_abs, true, MEMWATCH_AGENT_START_SYMBOL, &agent, &minv, cause);
	close(fd);
	if (r < 0)
		return r == -2 ? -INJECT_EUNSUPPORTED : -INJECT_EINTERNAL;
	if (!agent.nsyms) {
		module_free(&agent);
		return fail(INJECT_ESTART, cause, hint, NULL, "the agent '%s' exports no %s", ij->agent_abs,
			    MEMWATCH_AGENT_START_SYMBOL);
	}
	ij->start_off = agent.syms[0].lo;
	module_free(&agent);
	return 0;
}

/* Everything that can be learnt without stopping a thread: process state,
 * permissions, where dlopen is, the agent's start symbol. */
static int prepare(struct injector *ij, const char *agent_path, char **cause, char **hint)
{
	int r;

	if ((r = check_process(ij, cause, hint)) < 0 || (r = read_target(ij, cause, hint)) < 0 ||
	    (r = find_dlopen(ij, cause, hint)) < 0)
		return r;
	return find_agent(ij, agent_path, cause, hint);
}

/* With the chosen thread stopped and its registers saved: write the signal
 * frame our calls return through, dlopen the agent (unless loaded), then call
 * its start function. Neither return value survives rt_sigreturn: the agent
 * is looked for in the memory map, dlopen's error in the thread's dlerror
 * state. Returns 0 or -kind; *no_restore when the thread was left in a call
 * (it puts itself back when the call returns). */
static int do_calls(struct injector *ij, struct seized *s, struct inject_result *res, bool *no_restore,
		    char **cause, char **hint)
{
	char msg[256] = "";
	uint64_t start_addr, addrs[3];
	/* the third: where the start function stores its result (a sentinel
	 * until then, and for an agent that does not store it) */
	const char *strs[3] = { ij->placed.path ? ij->placed.path : ij->agent_abs, ij->options,
				START_PENDING };
	enum call_result cr;
	int pid = ij->pid;

	*no_restore = false;
	if (frame_build(pid, s, ij->rt_sigreturn_addr, strs, 3, addrs, msg, sizeof msg) < 0)
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "%s", msg);
	if (ij->loaded.path) {
		start_addr = ij->loaded.bias + ij->start_off;
		res->already_loaded = true;
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
			return fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited during injection");
		int r = module_from_maps(pid, &m, NULL, ij->agent_st.st_dev, ij->agent_st.st_ino, false, NULL,
					 &mod, &c2);
		if (r == 0 && ij->placed.copied)   /* a copy in its container, by name */
			r = module_from_maps(pid, &m, match_agent, 0, 0, false, NULL, &mod, &c2);
		procmaps_free(&m);
		free(c2);
		if (r <= 0) {
			char err[512] = "";
			dlerror_read(pid, &ij->cl.maps, &ij->cl.libc, s->regs.fs_base, err, sizeof err);
			return fail(INJECT_EDLOPEN, cause, hint,
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
		return fail(INJECT_ESTART, cause, hint, NULL, "%s(\"%s\") returned %d in the process",
			    MEMWATCH_AGENT_START_SYMBOL, ij->options, started);
	return 0;

call_failed:
	switch (cr) {
	case CALL_GONE:
		*no_restore = true;
		return fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited during injection%s%s",
			    msg[0] ? ": " : "", msg);
	case CALL_CRASH:
		*no_restore = true;
		return fail(INJECT_EINTERNAL, cause, hint,
			    ij->st.seccomp == 2 ? "the process runs under a seccomp filter, which may kill "
						  "it for the loader's system calls" : NULL,
			    "the process crashed during injection: %s",
			    msg[0] ? msg : "fatal signal");
	case CALL_TIMEOUT:
		*no_restore = true;
		if (msg[0])     /* the time was lost by memwatch, not by the call */
			return fail(INJECT_EINTERNAL, cause, hint,
				    "memwatch let go of it: the thread resumes where it was when the call returns",
				    "%s in thread %d, over its %u ms limit", msg, s->tid, CALL_TIMEOUT_MS);
		return fail(INJECT_EINTERNAL, cause, hint,
			    "memwatch let go of it: the thread resumes where it was when the call returns",
			    "a call in thread %d did not return within %u ms",
			    s->tid, CALL_TIMEOUT_MS);
	default:
		/* nothing ran, or the previous call ended: release restores it */
		return fail(INJECT_EINTERNAL, cause, hint, NULL, "%s", msg);
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
			*ret = fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
			return TRY_DONE;
		}
		return TRY_NEXT;
	}
	int mine = still_ours(ij, s.tid);
	if (mine <= 0) {
		release(pid, &s, false);
		if (mine < 0) {
			*ret = fail(INJECT_ENOPROC, cause, hint, NULL,
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
		uint64_t t_run = mono_ns();
		int rr = STOP_OK, tries = 0;
		fixed = false;
		while (!ok && run_to && rr == STOP_OK && ms_since(t_run) < RUN_TO_RETURN_MS) {
			if (fixed && ptrace_req(PTRACE_SETREGS, s.tid, NULL, &s.regs) < 0)
				break;
			rr = run_briefly(&s, (unsigned)rand_between(50, 400));
			tries++;
			fixed = false;
			if (rr != STOP_OK)
				break;
			fixed = undo_eintr(&s);
			run_to = 0;
			ok = regs_ok(&ij->cl, &s, why, sizeof why) &&
			     safe_point(&ij->cl, s.tid, s.regs.rip, &run_to, why, sizeof why);
		}
		s.ran_ms = ms_since(t_run);
		if (!ok && run_to && rr == STOP_OK) {
			snprintf(why, sizeof why, "did not return to the application within %d ms",
				 RUN_TO_RETURN_MS);
		} else if (rr == STOP_TIMEOUT) {
			snprintf(why, sizeof why, "did not stop again within %d ms", STOP_TIMEOUT_MS);
		} else if (rr == STOP_GROUP) {
			release(pid, &s, false);
			*ret = fail_stopped(pid, cause, hint);
			return TRY_DONE;
		}
		if (debug)
			fprintf(stderr, "inject: tid %d ran %d times in %.2f ms: %s\n", s.tid, tries,
				s.ran_ms, ok ? "accepted" : why);
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
			     unsigned attempts, unsigned deadline_ms, char **cause, char **hint)
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
	int more = 0;
	for (int i = 0; i < ncand; i++)
		more += cands[i].why[0] != '\0';
	more -= shown;
	int r = fail(INJECT_ENOSAFEPOINT, cause, hint,
		     "retry later, or start the program with memwatch run to preload the agent",
		     "no thread at a safe point within %u ms (%u attempts): %s%s", deadline_ms,
		     attempts, what[0] ? what : "no thread could be examined",
		     more > 0 ? "; ..." : "");
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
			return fail(INJECT_ENOSAFEPOINT, cause, hint, NULL,
				    "interrupted while memwatch pid %d was attaching", other);
		if (mono_ns() >= deadline)
			return fail(INJECT_ENOSAFEPOINT, cause, hint, "retry when it has finished",
				    "memwatch pid %d is attaching to the process and did not finish "
				    "within %u ms", other, deadline_ms);
		nap_us(5000);
	}
	return process_exists(ij->pid) ? 0 : fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
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
	bool debug = getenv("MEMWATCH_INJECT_DEBUG") != NULL;

	memset(res, 0, sizeof *res);
	*cause = NULL;
	*hint = NULL;
	if (pid <= 0)
		return fail(INJECT_ENOPROC, cause, hint, NULL, "no such process");
restart:
	if ((ret = prepare(&ij, agent_path, cause, hint)) == -INJECT_EBUSY)
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
	/* in another root, our paths of its files name other files or none */
	ij.cl.as = unw_create_addr_space(container_other_root(pid) ? container_unwind_accessors(pid)
								   : &_UPT_accessors, 0);
	if (!ij.cl.as) {
		ret = fail(INJECT_EINTERNAL, cause, hint, NULL, "cannot create a libunwind address space");
		goto out;
	}
	unw_set_caching_policy(ij.cl.as, UNW_CACHE_GLOBAL);

	for (unsigned round = 0;; round++) {
		remember_reasons(&seen, &nseen, cands, ncand);
		free(cands);
		cands = NULL;
		if ((ncand = list_threads(pid, &cands)) <= 0) {
			ret = fail(INJECT_ENOPROC, cause, hint, NULL, "the process exited");
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
			ret = fail(INJECT_ENOSAFEPOINT, cause, hint, NULL, "interrupted while looking for a safe point");
			goto out;
		}
		if (mono_ns() >= deadline)
			break;
		nap_us((unsigned)rand_between(1000, 5000));
	}

	ret = fail_no_safepoint(cands, ncand, &seen, &nseen, res->attempts, deadline_ms, cause, hint);
	goto out;
execed:
	/* bounded: a process that executes programs faster than we can look at
	 * them is given up on */
	if (++execs > 20 || mono_ns() >= deadline) {
		ret = fail(INJECT_ENOSAFEPOINT, cause, hint, "retry once it runs one program",
			   "the process executed another program during the attach, %u times", execs);
		goto out;
	}
	if (debug)
		fprintf(stderr, "inject: the process executed another program: starting over\n");
	free(cands);
	free(seen);
	cands = seen = NULL;
	ncand = 0;
	nseen = 0;
	injector_clear(&ij);
	goto restart;
busy:
	if (debug)
		fprintf(stderr, "inject: memwatch pid %d is attaching: waiting for it\n", ij.busy_by);
	free(cands);
	free(seen);
	cands = seen = NULL;
	ncand = 0;
	nseen = 0;
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
