/* inject.h: load the agent into a running process by ptrace, stopping one thread
 * at a safe point for a few milliseconds; no debugger involved. */
#ifndef MEMWATCH_INJECT_H
#define MEMWATCH_INJECT_H

#include <stdbool.h>
#include <stdint.h>

struct inject_result {
	bool already_loaded;     /* the agent was there: only memwatch_agent_start was called (or nothing) */
	int tid;                 /* the thread that made the calls */
	unsigned attempts;       /* threads seized before one was accepted */
	double pause_ms;         /* how long the chosen thread was stopped */
	double total_ms;         /* from the decision to the agent running */
};

/* Kinds of failure, returned negated: callers map them to messages and exit
 * statuses; *cause always holds the one line to print, and *hint the fix (or NULL). */
enum inject_error {
	INJECT_ENOPROC = 1,      /* the process does not exist or exited meanwhile */
	INJECT_EPERM,            /* ptrace refused: other uid, Yama, no CAP_SYS_PTRACE, already traced */
	INJECT_EUNSUPPORTED,     /* static binary, no glibc dlopen */
	INJECT_ENOSAFEPOINT,     /* no thread at a safe point before the deadline */
	INJECT_EDLOPEN,          /* dlopen in the target failed (message from dlerror) */
	INJECT_ESTART,           /* memwatch_agent_start failed or the agent did not come up */
	INJECT_EINTERNAL,        /* anything else (ptrace call failed unexpectedly) */
	INJECT_ESTARTING,        /* still starting: the loader is there, the C library not yet */
};

/* How long memwatch lets the injector look for a safe point. */
#define INJECT_DEADLINE_MS 10000

/* Load agent_path into pid (unless an agent is already mapped) and call
 * memwatch_agent_start(options) in it. deadline_ms bounds the search for a safe
 * point. Returns 0 and fills *res, or -enum inject_error with *cause and *hint
 * (caller frees both; hint may be NULL). The target is always left running. */
int inject_agent(int pid, const char *agent_path, const char *options, unsigned deadline_ms,
		 struct inject_result *res, char **cause, char **hint);

/* True when libmemwatch-agent.so is mapped in pid. */
bool inject_agent_loaded(int pid);

#endif
