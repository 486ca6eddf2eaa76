/* python.h: what the two halves of the agent's CPython support share:
 * python.c (finding the interpreter, its allocator domains wrapped, the helper
 * thread) and pyframes.c (the Python frames of a sample, read and interned).
 * Private to those two files. */
#ifndef MEMWATCH_AGENT_PYTHON_H
#define MEMWATCH_AGENT_PYTHON_H

#include <stddef.h>
#include <stdint.h>

#include "agent.h"

struct snapshot;

/* python.c: the runtime (runtime.h) these files make, and its state. */
extern const struct mw_runtime mw_python_runtime MW_HIDDEN;
enum mw_python_state {
	MW_PY_NONE,          /* not a CPython process */
	MW_PY_UNSUPPORTED,   /* a CPython the agent cannot read: native-only */
	MW_PY_OFF,           /* supported, wrappers not installed */
	MW_PY_WAITING,       /* capture on, waiting for the GIL (or the start) to swap */
	MW_PY_ON,            /* object allocator wrapped, Python frames recorded */
	MW_PY_FINALIZED,     /* the interpreter finalized: native-only */
	MW_PY_UNREADABLE,    /* a version the agent reads, but its structures are not as
			      * expected (the check at start-up): native-only */
};
int mw_python_state(unsigned long *version) MW_HIDDEN;   /* enum mw_python_state; Py_Version */
/* Whether samples read Python frames: CPython found and supported, and not
 * finalizing (checked again at each sample). Set by python.c, with the
 * runtime's frames hook (mw_runtime_frames). */
extern bool mw_python_frames MW_HIDDEN;
/* A Python frame in a recorded stack: never a user-space address. */
#define MW_PYFRAME_TAG 0xFA00000000000000ull
#define MW_PYFRAME_MASK 0xFF00000000000000ull
/* pyframes.c: merge this thread's Python frames into a native stack (ips, n:
 * innermost first) into out (at most max); returns the number of frames. The
 * runtime's frames entry (see mw_merge_fn, for sig). */
unsigned mw_python_merge(const uintptr_t *ips, unsigned n, uintptr_t *out, unsigned max,
			 uint64_t *sig) MW_HIDDEN;
/* pyframes.c: the type of the object in every live sampled block, into the
 * snapshot's types section (nothing when CPython is not read). 0 or -1. The
 * runtime's types entry. */
int mw_python_types(struct snapshot *s) MW_HIDDEN;
/* pyframes.c: name the Python frames of s (frames outside every module
 * carrying MW_PYFRAME_TAG): they become frames of a module "[python]" whose
 * offsets are the frames' content hashes, named in s's symbol section. 0, or
 * -1 (ENOMEM). */
int mw_python_snapshot(struct snapshot *s) MW_HIDDEN;
/* pyrefs.c: the referrer search into s (section 9), bounded by limit_ns
 * (counted from now, the wait for the GIL included) and max_objects
 * traversed. -1 only when out of memory; a search not made says why in s.
 * The runtime's referrers entry. */
int mw_python_referrers(struct snapshot *s, uint64_t limit_ns, uint64_t max_objects) MW_HIDDEN;
void mw_pyrefs_atfork_child(void) MW_HIDDEN;

typedef struct {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr);
} py_allocator;

/* The interpreter's functions, looked up once. */
struct mw_py {
	int (*is_initialized)(void);
	int (*is_finalizing)(void);
	void *(*this_tstate)(void);
	int (*gil_ensure)(void);
	void (*gil_release)(int);
	void (*get_allocator)(int, py_allocator *);
	void (*set_allocator)(int, py_allocator *);
	const char *(*allocator_name)(void);   /* _PyMem_GetCurrentAllocatorName */
	int (*addr2line)(void *code, int byte_offset);
	const void *code_type;        /* &PyCode_Type */
	const void *unicode_type;     /* &PyUnicode_Type */
	const void *bytes_type;       /* &PyBytes_Type */
	const void *type_type;        /* &PyType_Type */
	const void *dict_type;        /* &PyDict_Type */
	void *(*interp_head)(void);   /* PyInterpreterState_Head */
	void *(*thread_head)(const void *);   /* PyInterpreterState_ThreadHead */
	uintptr_t eval_lo, eval_hi;   /* _PyEval_EvalFrameDefault's text */
	unsigned long version;        /* Py_Version, or read from Py_GetVersion() */
};
extern struct mw_py mw_py MW_HIDDEN;

/* pyframes.c: the offsets the frame walk reads, for mw_py.version: true when
 * it is a version the agent reads. runtime: _PyRuntime, or NULL. Called once,
 * by python.c's probe, before any frame is read. */
bool mw_py_layout(const char *runtime) MW_HIDDEN;
/* pyversions.c: CPython 3.13 on, the offsets read from the interpreter's
 * own _Py_DebugOffsets at the positions its version's entry in pyversions.h
 * gives, with that entry (v) for what the table does not publish. */
struct mw_pyver;
struct mw_py_do {
	const struct mw_pyver *v;    /* NULL: not a version read this way */
	size_t interp_gc, ts_current_frame;
	size_t frame_previous, frame_executable, frame_instr_ptr, frame_localsplus, frame_owner;
	size_t code_filename, code_qualname, code_adaptive;
	size_t dict_keys, dict_values;
	size_t str_state, str_length, str_ascii_size;
};
extern struct mw_py_do mw_py_do MW_HIDDEN;
/* The entry of pyversions.h for CPython 3.minor, or NULL. */
const struct mw_pyver *mw_pyver_of(unsigned minor) MW_HIDDEN;
/* Fill mw_py_do for mw_py.version from runtime (_PyRuntime): true when the
 * version has an entry and the table says it describes this very build (its
 * cookie, the same version, with the GIL), each offset in a structure of
 * sane size and in the order the structures have. */
bool mw_py_debug_offsets(const char *runtime) MW_HIDDEN;
/* Why mw_py_debug_offsets refused a version it has an entry for, in a few
 * words ("a free-threaded build"), or NULL. */
extern const char *mw_py_do_refused MW_HIDDEN;
/* pyframes.c: check the layout against the running interpreter (without the
 * GIL: a frame popped meanwhile can make it fail once): 1 it holds, 0 nothing to check it on yet (no Python frame in any
 * thread), -1 it does not hold (why says how, in a few words). */
int mw_py_check(char *why, size_t len) MW_HIDDEN;
/* pyframes.c, for pyrefs.c (see there). */
size_t mw_py_type_name(uintptr_t t, char *buf, size_t len) MW_HIDDEN;
size_t mw_py_read_str(const void *o, char *buf, size_t len) MW_HIDDEN;
bool mw_py_safe_word(const void *at, uintptr_t *w) MW_HIDDEN;
size_t mw_py_str_size(const void *o) MW_HIDDEN;
int mw_py_name_index(struct snapshot *s, const char *name, size_t n) MW_HIDDEN;
void mw_py_each_frame(const void *interp, int (*fn)(const char *frame, const char *code, void *arg),
		      void *arg) MW_HIDDEN;
/* pyrefs.c: while mw_python_types reads the types of snapshot s, an object
 * of typed entry `typed` (at most two per entry are noted); typed SIZE_MAX
 * starts a new snapshot. */
void mw_pyrefs_note(const struct snapshot *s, size_t typed, uintptr_t obj) MW_HIDDEN;

/* pyfree.c: with the GIL held (python.c's swap), the free lists kept
 * empty (on) or left to the interpreter again; and whether objects of a type
 * (its name; NULL: dicts' key tables) may still be recycled meanwhile. */
void mw_pyfree_swap(bool on) MW_HIDDEN;
bool mw_pyfree_first_owner(const char *type) MW_HIDDEN;
/* The type's name (n bytes of name, room len) followed by " recycled" where
 * mw_pyfree_first_owner(type) says so; its length. */
size_t mw_pyfree_mark(const char *type, char *name, size_t n, size_t len) MW_HIDDEN;
/* pyfree.c: the type of the object whose next creation a sample point is
 * owed to (mw_tls.owed), set with it (the GIL held); and how many
 * allocations of other sizes may come first, after which the point falls
 * where the countdown says. */
#define MW_OWED_TRIES 256
extern const void *mw_pyfree_owed_type MW_HIDDEN;
extern unsigned mw_pyfree_owed_gen MW_HIDDEN;     /* counts the points owed */
/* pycache.c: with the GIL held, the type attribute cache swept of sampled
 * names that only it holds, every few sample points of the own wrappers
 * (on: the wrappers going in with sampled blocks taken from malloc). */
void mw_pycache_swap(bool on) MW_HIDDEN;
void mw_pycache_point(void) MW_HIDDEN;
/* python.c, for pyfree.c: allocations through the wrappers while the guard
 * is up (the allocator reached, nothing sampled), and what an object of n
 * bytes counts for in the object domain (0: not counted there). */
extern unsigned mw_py_guarded_allocs MW_HIDDEN;
size_t mw_py_obj_taken(size_t n) MW_HIDDEN;

/* fork: the child must not inherit the frame table's lock half-held. */
void mw_pyframes_atfork_prepare(void) MW_HIDDEN;
void mw_pyframes_atfork_parent(void) MW_HIDDEN;
void mw_pyframes_atfork_child(void) MW_HIDDEN;

#endif
