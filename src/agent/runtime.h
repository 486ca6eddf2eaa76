/* runtime.h: the interface between the agent's core and the language
 * runtimes it reads (CPython, node's V8): a runtime is a set of entry points
 * the core calls at its few moments. The core keeps the list (runtimes.c, the
 * one file that names them) and knows none of them by name; a runtime's files
 * include agent.h (which includes this) and their own headers, never the
 * core's private ones (stacks.h). Included by agent.h. */
#ifndef MEMWATCH_AGENT_RUNTIME_H
#define MEMWATCH_AGENT_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct snapshot;

/* A sample's stack (ips, n: innermost first) with the runtime's frames merged
 * in, into out (at most max): the number of frames. Called on the allocating
 * thread, inside a hook, with the loader lock not held: async-signal-safe
 * reads only, no lock another thread may hold across an allocation. *sig:
 * the signature of the runtime's frames merged, a hash of every word that
 * decided them (0: none to give), such that the same native stack with the
 * same signature merges to the same stack; out NULL: only *sig, without
 * merging (cheaper: the sampler keeps each native stack's last two merges
 * and skips the merge when the signature is one of theirs). */
typedef unsigned mw_merge_fn(const uintptr_t *ips, unsigned n, uintptr_t *out, unsigned max,
			     uint64_t *sig);

/* The entry points, each optional (NULL: nothing to do at that moment). They
 * run with mw_tls.guard raised, on the thread named. */
struct mw_runtime {
	const char *name;
	/* memwatch_agent_start, at each start in a process (the caller's
	 * thread, which has the program's descriptor table): look for the
	 * runtime, start a helper thread if it needs one. */
	void (*init)(void);
	/* fork, in pthread_atfork's handlers: prepare takes the runtime's locks
	 * that a hook may hold (the child must not inherit them half-held),
	 * parent lets them go; child makes fresh ones and forgets its helper
	 * threads (a child has none). */
	void (*atfork_prepare)(void);
	void (*atfork_parent)(void);
	void (*atfork_child)(void);
	/* A forked child that goes on capturing (memwatch run --children),
	 * after atfork_child and the core's own restart of capture. */
	void (*capture_resume)(void);
	/* Capture started (a new epoch: mw_rate and mw_depth are the new
	 * settings) and stopped, under the capture lock. */
	void (*capture_start)(void);
	void (*capture_stop)(void);
	/* A snapshot, in three moments. types: with the heap's tables held
	 * still (mw_snapshot_begin), s holding the sampled stacks, before any
	 * reset may renumber them. snapshot: the heap let go; add the
	 * runtime's state, stacks and symbols to s, waiting at most wait_ns
	 * for a thread of the runtime (0: not at all). referrers: asked for
	 * (limit_ns > 0), a search bounded by that time and max_objects
	 * objects traversed. Each 0, or -1 only when out of memory. */
	int (*types)(struct snapshot *s);
	int (*snapshot)(struct snapshot *s, uint64_t wait_ns);
	int (*referrers)(struct snapshot *s, uint64_t limit_ns, uint64_t max_objects);
	/* The status line's words: fields ("key=value", space-separated) and a
	 * closing sentence why ("key=free text": the line's whys are joined
	 * by tabs and end it), each NUL-terminated within its room. */
	void (*status)(char *fields, size_t flen, char *why, size_t wlen);
	/* The frames of a sample: what mw_runtime_frames(rt, true) turns on. */
	mw_merge_fn *frames;
};

/* runtimes.c: the runtimes, in the order their moments run (fork's parent
 * handlers in the reverse order). */
extern const struct mw_runtime *const mw_runtimes[] MW_HIDDEN;
extern const size_t mw_nruntimes MW_HIDDEN;

/* The core's calls of each moment, to every runtime that has that entry
 * (runtimes.c). The snapshot moments stop at the first -1 and return it. */
void mw_runtimes_init(void) MW_HIDDEN;
void mw_runtimes_atfork_prepare(void) MW_HIDDEN;
void mw_runtimes_atfork_parent(void) MW_HIDDEN;
void mw_runtimes_atfork_child(void) MW_HIDDEN;
void mw_runtimes_capture_resume(void) MW_HIDDEN;
void mw_runtimes_capture_start(void) MW_HIDDEN;
void mw_runtimes_capture_stop(void) MW_HIDDEN;
int mw_runtimes_types(struct snapshot *s) MW_HIDDEN;
int mw_runtimes_snapshot(struct snapshot *s, uint64_t wait_ns) MW_HIDDEN;
int mw_runtimes_referrers(struct snapshot *s, uint64_t limit_ns, uint64_t max_objects) MW_HIDDEN;
/* The runtimes' status words into buf (room len): " " and each one's fields,
 * then " " and their whys joined by tabs. */
void mw_runtimes_status(char *buf, size_t len) MW_HIDDEN;

/* heap.c: the merger the sampler calls at every sample, one relaxed load
 * (NULL: none, native frames only). A runtime sets it through
 * mw_runtime_frames: on puts rt->frames in place; off takes it out only if it
 * is rt's, so that one runtime never turns off another's. */
extern mw_merge_fn *mw_frames_hook MW_HIDDEN;
void mw_runtime_frames(const struct mw_runtime *rt, bool on) MW_HIDDEN;

/* The time a snapshot waits for a runtime's thread (node's JavaScript
 * thread, to read V8's profile). */
#define MW_RUNTIME_WAIT_NS (1000 * 1000000ull)

#endif
