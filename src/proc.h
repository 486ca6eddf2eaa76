/* proc.h: reading processes' memory figures from /proc (PSS and USS through
 * libproc2), telling who a process is, and finding the members of a process tree. */
#ifndef MEMWATCH_PROC_H
#define MEMWATCH_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runlog.h"

/* The fields of /proc/PID/status (or /proc/PID/task/TID/status) memwatch
 * reads, parsed in one place. Absent lines leave 0 (seccomp: -1). */
struct proc_status {
	char state;              /* State: 'R', 'S', 'D', 'T' stopped, 't' traced, 'Z', 'X' */
	int tgid;                /* Tgid: the process of a thread */
	int ppid;                /* PPid */
	int tracer;              /* TracerPid: 0 when not traced */
	int nspid;               /* NSpid's last field: the pid in its own namespace */
	bool has_uid;            /* a Uid: line was there */
	unsigned uid[4];         /* Uid: real, effective, saved, file system */
	unsigned gid[4];         /* Gid: the same four */
	int seccomp;             /* Seccomp: 0 off, 1 strict, 2 filter; -1 unknown */
	unsigned long long sigcgt; /* SigCgt: the signals it catches, bit N-1 for N */
	unsigned long long sigpnd, shdpnd, sigblk, sigign; /* pending (thread, process), blocked, ignored */
	bool has_sigblk;         /* a SigBlk: line was there */
	unsigned long long capeff; /* CapEff: its effective capabilities */
	uint64_t vm_rss, vm_size, vm_swap;          /* KiB */
	uint64_t vm_hwm;                            /* KiB: the most RSS it ever had */
	uint64_t rss_anon, rss_file, rss_shmem;     /* KiB */
};
/* Parse the text of a status file into *st; buf is changed (lines cut). */
void proc_status_parse(char *buf, struct proc_status *st);
/* Read and parse a status file. 0 or -errno (st is zeroed then). */
int proc_status_read(const char *path, struct proc_status *st);

/* The pid the process has in its own PID namespace (the last NSpid field of
 * /proc/PID/status): what its getpid() returns, and what names its perf map
 * and the agent's socket. pid itself when unknown. */
int proc_inner_pid(int pid);

/* The reader of a whole watch: each process's status file is held open, so one
 * sample costs one pread(2) per process and no allocation. */
struct proc_reader;

/* pss: also read PSS and USS (smaps_rollup: a walk of the page tables, whose cost
 * grows with the resident size). NULL with *cause (caller frees). */
struct proc_reader *proc_reader_new(bool pss, char **cause);
void proc_reader_free(struct proc_reader *r);

/* One process's figures at one sample. */
struct proc_stat {
	bool found;              /* false: no such process (exited and reaped) */
	bool zombie;             /* exited, not reaped yet: counts as gone */
	bool pss_denied;         /* --pss, but smaps_rollup could not be read */
	char state;              /* of its main thread: 'R', 'S', 'T' stopped, 't' traced... */
	bool frozen;             /* its cgroup v2 is frozen (it shows as sleeping) */
	int ppid;
	struct mem_sample s;     /* KiB; pss/uss RUNLOG_NONE unless read */
};

/* Read the figures of pids[0..n) into out[0..n) in one pass over /proc.
 * Returns 0, or -errno when libproc2 failed as a whole. */
int proc_read(struct proc_reader *r, const int *pids, size_t n, struct proc_stat *out);

/* How a process runs now, for the capture: an agent in a stopped process
 * cannot answer, and must not be asked or loaded then. */
enum proc_run {
	PROC_GONE = -1,          /* no such process, or a zombie */
	PROC_RUNNING = 0,        /* running or sleeping: it can answer */
	PROC_STOPPED,            /* 'T': SIGSTOP, SIGTSTP (job control) */
	PROC_TRACED,             /* 't': stopped by a debugger */
	PROC_FROZEN,             /* its cgroup v2 is frozen (cgroup.freeze) */
};
/* The run state of a main-thread state letter from /proc/PID/stat or status. */
enum proc_run proc_run_of_state(char state);
/* How pid runs now: its main thread's state from /proc/PID/stat, then whether
 * its cgroup v2 is frozen (a frozen task shows as sleeping). A few reads of
 * small /proc and cgroup files: for the moments before and while the agent is
 * asked, not for every sample. */
enum proc_run proc_run_state(int pid);
/* The word for a state in messages and events: "stopped", "traced", "frozen". */
const char *proc_run_name(enum proc_run r);

/* How long ago pid started, in seconds (its start time in /proc/PID/stat
 * against the boot-time clock); -1 when it cannot be read. */
double proc_age_s(int pid);
/* Whether a thread of pid is running, waits for a processor or waits for
 * the disk (state R or D in /proc/PID/task/TID/stat): it is at work, and
 * not waiting for input, a timer or a child. A read of each thread's stat:
 * for a process's first seconds, not for every sample. */
bool proc_busy(int pid);
/* Whether pid runs another program than its parent does (/proc/PID/exe): it
 * was started by exec, not only forked. False when either cannot be read. */
bool proc_runs_own_program(int pid);

/* Who a process is, read once at the start. */
struct proc_ident {
	uid_t uid;               /* owner (real uid) */
	bool other_user;         /* not ours and we are not root: /proc shows only part */
	bool zombie;             /* it has exited; its parent has not reaped it yet */
	int tgid;                /* the process (thread group) when pid is a thread */
	char *cmdline;           /* its command line, or "[comm]"; caller frees */
};
/* 0, -ESRCH (no such process) or -EACCES (its /proc entry cannot be read). */
int proc_identify(int pid, struct proc_ident *id);

/* The tree of descendants of some processes, re-scanned at every sample. */
struct proc_tree;
struct proc_tree *proc_tree_new(void);
void proc_tree_free(struct proc_tree *t);
/* Every descendant of roots[0..nroots) (not the roots themselves), with its
 * parent: *pids and *ppids point into t (valid until the next scan), *n their
 * number. 0 or -errno. */
int proc_tree_scan(struct proc_tree *t, const int *roots, size_t nroots,
		   const int **pids, const int **ppids, size_t *n);

#endif
