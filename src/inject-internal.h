/* inject-internal.h: what the parts of the injector share (inject.c, the
 * orchestration; inject-prepare.c, the look at the process before any thread
 * is stopped; procmaps.c, ptrace.c, safepoint.c). Not for other callers:
 * they use inject.h. x86-64 only. Each function is described where it is
 * defined. */
#ifndef MEMWATCH_INJECT_INTERNAL_H
#define MEMWATCH_INJECT_INTERNAL_H

#include "container.h"
#include "inject.h"
#include "proc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/user.h>
#include <libunwind.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1           /* si_code of a SIGSYS raised by a seccomp filter */
#endif
#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

/* Kernel-internal syscall return values a stopped thread can show in rax; the
 * kernel turns them into a restart when the thread resumes without a handler. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

#define RED_ZONE 128
/* Stack the injected calls may use below the red zone; dlopen needs a few KiB. */
#define STACK_NEEDED (64 * 1024)
/* glibc's flag that makes __libc_dlopen_mode behave like dlopen (glibc < 2.34). */
#define RTLD_DLOPEN_FLAG 0x80000000
#define MAX_FRAMES 512
#define CALL_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 2000
#define RUN_TO_RETURN_MS 20
#define XSTATE_MAX (64 * 1024)
#define AGENT_SONAME "libmemwatch-agent.so"

/* ---------------------------------------------------------------- procmaps.c: the maps, ELF symbols and /proc */

struct mapping {
	uint64_t lo, hi, off, inode;
	unsigned dev_major, dev_minor;
	char perms[5];
	char *path;             /* "" for anonymous mappings */
};

struct maps {
	struct mapping *v;
	size_t n;
};

enum sym_flags {
	SYM_BLOCKING = 1 << 0,  /* on the allow-list of blocking calls */
	SYM_BOTTOM = 1 << 1,    /* may sit at the bottom of a stack (__libc_start_main, clone) */
};

struct fsym {
	uint64_t lo, hi;        /* [lo, hi) relative to the load bias */
	char *name;
	const char *shown;      /* the plainest alias, for messages ("free", not "cfree") */
	unsigned flags;
};

/* A mapped ELF object: its address range in the target, the bias its symbols
 * are relative to, and its defined function symbols sorted by address. */
struct module {
	char *path;             /* as in /proc/PID/maps */
	uint64_t lo, hi;        /* union of its mappings */
	uint64_t bias;
	dev_t dev;
	uint64_t inode;
	struct fsym *syms;
	size_t nsyms;
};

void procmaps_free(struct maps *m);
int procmaps_read(int pid, struct maps *m);
bool is_ldso_name(const char *b);
void module_free(struct module *mod);
int elf_read_syms(int fd, const char *what, bool syms, const char *only_name,
		  struct module *mod, uint64_t *min_vaddr, char **cause);
const struct fsym *module_lookup(const struct module *mod, uint64_t off);
const struct fsym *module_find(const struct module *mod, const char *name);
int module_from_maps(int pid, const struct maps *m, bool (*pred)(const char *),
		     dev_t dev, uint64_t inode, bool load_syms, const char *only_name,
		     struct module *mod, char **cause);
/* Predicates on a mapping's base name, for module_from_maps. */
bool match_libc(const char *b);
bool match_ldso(const char *b);
bool match_libdl(const char *b);
bool match_libpthread(const char *b);
bool match_agent(const char *b);
uint64_t find_rt_sigreturn(int pid, const struct maps *m, const struct module *libc);
int dlerror_read(int pid, const struct maps *m, const struct module *libc, uint64_t fs_base,
		 char *out, size_t outlen);

const char *deleted_mapping(int pid, const struct maps *m, bool *essential, bool *readable);
int read_small_file(const char *fn, char *buf, size_t n);
bool have_cap_sys_ptrace(void);
int yama_scope(void);
bool cgroup_frozen(int pid);

/* ---------------------------------------------------------------- ptrace.c: stopping a thread, remote calls, letting go */

/* One seized thread and what must be given back to it at detach. */
struct seized {
	int tid;
	bool seized, stopped;
	int pending_sig;        /* held at a signal-delivery-stop: delivered at detach */
	int pending_stop;       /* a stop signal that arrived during a call: re-raised */
	bool regs_saved;
	struct user_regs_struct regs;
	unsigned char *xstate;
	size_t xstate_len;
	bool xstate_is_fp;      /* fallback: only the legacy FP state could be saved */
	uint64_t frame_sp;      /* our signal frame on its stack (frame_build), or 0 */
	bool in_call;           /* its registers are set for our calls: the frame holds its state */
	bool at_end;            /* our call has returned (see end_by_signal) */
	int end_sig;            /* the signal that marks the end of a call, or 0 */
	bool end_by_signal;     /* the end is end_sig's delivery after rt_sigreturn (the
				 * thread is back as it was), else the stop at the entry
				 * of rt_sigreturn (PTRACE_SYSCALL) */
	uint64_t sigblk;        /* its blocked signals */
	uint64_t resume_rip;    /* where rt_sigreturn puts it back */
	uint64_t t_interrupt;
	double ran_ms;          /* time it ran free to a return address: not a pause */
};

/* Outcome of waiting for a stop. */
enum stop_result {
	STOP_OK = 0,
	STOP_GONE = -1,         /* the thread (or process) exited */
	STOP_TIMEOUT = -2,
	STOP_GROUP = -3,        /* the process is in a job-control stop */
	STOP_FAULT = -4,        /* the thread is taking a fault signal: left to it */
	STOP_ERROR = -5,
};

enum call_result {
	CALL_OK = 0,
	CALL_GONE = -1,         /* the process exited or was killed */
	CALL_TIMEOUT = -2,      /* the function did not return: state cannot be rolled back */
	CALL_ERROR = -3,        /* a ptrace request failed before the call started */
	CALL_CRASH = -4,        /* the process died of a fault during the call */
};

double ms_since(uint64_t t0);
void nap_us(unsigned us);
int seize_and_stop(struct seized *s, int *err);
void release(int pid, struct seized *s, bool restore);
int save_regs(struct seized *s, int *err);
int save_xstate(struct seized *s, int *err);
int run_briefly(struct seized *s, unsigned run_us);
int frame_build(int pid, struct seized *s, uint64_t rt_sigreturn_addr, const char *const *strs,
		int n, uint64_t *addrs, char *msg, size_t msglen);
enum call_result remote_call(int pid, struct seized *s, uint64_t fn, uint64_t arg0, uint64_t arg1,
			     unsigned timeout_ms, char *msg, size_t msglen);
long ptrace_req(enum __ptrace_request req, int tid, void *addr, void *data);
long ptrace_requests(void);
bool undo_eintr(struct seized *s);

/* ---------------------------------------------------------------- safepoint.c: which thread may be used, and when */

enum cand_class {
	CAND_RESTARTABLE,       /* blocked in a system call that restarts transparently */
	CAND_RUNNING,           /* running user code: needs the stack check */
	CAND_SOCKET,            /* socket calls: may return EINTR when they have a timeout */
	CAND_SKIP,              /* never interrupted */
};

struct cand {
	int tid;
	enum cand_class cls;
	long nr;                /* system call number, -1 when not in one */
	char why[96];           /* last reason it was not used */
};

enum frame_kind { FK_APP, FK_LDSO, FK_VDSO, FK_LIBC, FK_AGENT };

struct classifier {
	struct module libc, libpthread, ldso;
	uint64_t vdso_lo, vdso_hi;
	uint64_t agent_lo, agent_hi;    /* an agent already loaded: its hooks take locks */
	struct maps maps;
	uint64_t stack_lo, stack_hi;    /* the main thread's [stack] as read, */
	uint64_t stack_floor;           /*   the lowest address it may grow down to (0: unknown) */
	unw_addr_space_t as;
};

int list_threads(int pid, struct cand **out);
bool safe_point(struct classifier *cl, int tid, uint64_t rip, uint64_t *run_to, char *why,
		size_t whylen);
bool regs_ok(const struct classifier *cl, const struct seized *s, char *why, size_t whylen);
/* Where the main thread's stack may grow down to: its [stack] mapping's top
 * less pid's RLIMIT_STACK, and never into the guard gap above the mapping
 * below it. After cl->maps is read. */
void stack_floor_init(struct classifier *cl, int pid);
/* The words regs_ok's reason starts with for a thread too deep in its stack. */
#define DEEP_STACK_WHY "sits deep in its stack"

/* ---------------------------------------------------------------- inject-prepare.c: the process before any thread is stopped */

/* What one attach has learnt of the process and of the agent (inject.c and
 * inject-prepare.c). */
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
	bool unwind_map_files;      /* unwind from the mapped objects (deleted files, another root) */
	bool via_memfd;             /* it does not see our agent file: load it from a memfd
				     * (inject-memfd.c), a copy in its root as the fallback */
	uint64_t memfd_create_addr; /* libc's memfd_create and close, for via_memfd */
	uint64_t close_addr;
	unsigned long long start_time;  /* of the process: tells a reused pid apart */
	int busy_by;                /* INJECT_EBUSY: the memwatch that is attaching */
};

/* Internal to the injector: another memwatch is attaching to the process. */
#define INJECT_EBUSY 100

int inject_fail(int kind, char **cause, char **hint, const char *h, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
int inject_prepare(struct injector *ij, const char *agent_path, char **cause, char **hint);
int still_ours(const struct injector *ij, int tid);
bool same_program(const struct injector *ij);
bool process_exists(int pid);
int memwatch_tracing(int pid);
int fail_stopped(int pid, char **cause, char **hint);
int explain_eperm(struct injector *ij, char **cause, char **hint);

/* ---------------------------------------------------------------- inject-memfd.c: the agent where the process cannot see our file */

/* The room frame_build leaves for the path dlopen is given (a memfd's, a copy's). */
#define MEMFD_PATH_MAX 256
bool memfd_possible(struct injector *ij);
int memfd_load_agent(struct injector *ij, struct seized *s, const uint64_t *addrs, uint64_t *start_addr,
		     enum call_result *cr, char *msg, size_t msglen, char **cause, char **hint);

#endif
