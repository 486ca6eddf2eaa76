/* progkind.h: whether the agent can be loaded into a program, told by what the
 * program is (its ELF interpreter, that interpreter's C library, Go's own
 * sections), not by the names of its files. One answer for memwatch run (a
 * program about to start) and for the injector (a running process). */
#ifndef MEMWATCH_PROGKIND_H
#define MEMWATCH_PROGKIND_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

enum prog_kind {
	PROG_GLIBC,       /* linked with glibc, or run by glibc's loader: the agent can be loaded */
	PROG_UNKNOWN,     /* not an ELF program that could be read: nothing is decided */
	PROG_STATIC,      /* no ELF interpreter: statically linked */
	PROG_MUSL,        /* musl's loader (which is musl's C library itself) */
	PROG_GO,          /* a Go program, statically linked (or with a loader other than glibc's) */
	PROG_CGO,         /* a Go program run by glibc's loader (cgo): its C code
			   * allocates with glibc's malloc; preloaded, never injected */
	PROG_OTHER,       /* an ELF interpreter that is neither glibc's nor musl's */
};

struct prog_info {
	enum prog_kind kind;
	bool has_interp;          /* the ELF program has an interpreter (PT_INTERP) */
	char interp[256];         /* that interpreter as the program names it, or "" */
	char judged[PATH_MAX];    /* the ELF file judged: the program, or the
				   * interpreter of its #! script; "" when none */
	bool script;              /* judged is the interpreter of a #! script */
};

/* Judge the program at path as exec would start it: a #! script by its
 * interpreter (through "env NAME", by NAME found on PATH), an ELF program by
 * its interpreter. Never fails: pi->kind is PROG_UNKNOWN when it cannot tell. */
void prog_judge_file(const char *path, struct prog_info *pi);

/* Judge the running process pid by its program (/proc/PID/exe) and the
 * interpreter it mapped (/proc/PID/map_files, else through /proc/PID/root).
 * PROG_UNKNOWN when they cannot be read. */
void prog_judge_pid(int pid, struct prog_info *pi);

/* The command name resolved through PATH as execvp(3) does (a name with a
 * slash as it is); caller frees; NULL when no executable file has the name. */
char *prog_find_in_path(const char *name);

/* Whether the agent cannot be injected into a running program of this kind. */
bool prog_refused(enum prog_kind k);
/* Whether it cannot be preloaded into one (memwatch run): a Go program with
 * cgo takes it, for its C allocations. */
bool prog_unpreloadable(enum prog_kind k);
/* For a kind preloaded with a part of it unseen (cgo: the Go heap): that
 * part, in one line, and the hint for it; NULL for the others. */
const char *prog_unseen(enum prog_kind k);

/* What the program is, to follow its subject ("is statically linked (it has
 * no ELF interpreter)"), into buf; returns buf. For a refused kind only. */
const char *prog_what(const struct prog_info *pi, char *buf, size_t size);
/* Why its allocations cannot be sampled, and the fix (the hint). */
const char *prog_why(enum prog_kind k);
const char *prog_hint(enum prog_kind k);

#endif
