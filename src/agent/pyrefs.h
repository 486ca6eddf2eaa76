/* pyrefs.h: what the files of the referrer search share (pyrefs.c the
 * request and the search thread, pyrefs-search.c the search, pyrefs-chains.c
 * the chains named, pyrefs-forward.c the forward view): the layouts read,
 * the request and the search's tables. Private to those files. */
#ifndef MEMWATCH_AGENT_PYREFS_H
#define MEMWATCH_AGENT_PYREFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>

#include "agent.h"
#include "python.h"
#include "pyversions.h"

/* ------------------------------------------------------------------------- */
/* Layouts (x86_64), from each version's internal headers: pycore_gc.h
 * (struct _gc_runtime_state, the same from 3.8 to 3.12: a word, three ints,
 * then the three generations (a PyGC_Head, threshold and count: 24 bytes
 * each), generation0, the permanent generation, the statistics and
 * `collecting`), and where that state is: _PyRuntime.gc in 3.8
 * (pycore_pystate.h), PyInterpreterState.gc from 3.9 on (pycore_interp.h;
 * from 3.13 on the offset is read from _Py_DebugOffsets, and where the
 * generations, the permanent one and `collecting` lie is the version's entry
 * in pyversions.h: 3.14 moved them, 3.15 dropped the trash fields before). Checked against the headers
 * of pyenv's builds and Debian's 3.11 (tests/run-python-offsets.sh), and
 * against the running interpreter before any list is walked (gc_check). */
#define PY38_RUNTIME_GC 344          /* _PyRuntimeState.gc (3.8) */
#define PY39_INTERP_GC 616           /* PyInterpreterState.gc (3.9, 3.10) */
#define PY311_INTERP_GC 648          /* 3.11 */
#define PY312_INTERP_GC 112          /* 3.12 */
#define GC_GENERATIONS 24            /* _gc_runtime_state.generations */
#define GC_GENERATION_SIZE 24        /* sizeof (struct gc_generation) */
#define GC_PERMANENT 104             /* .permanent_generation */
#define GC_COLLECTING 200            /* .collecting (int) */
#define GC_HEAD_SIZE 16              /* sizeof (PyGC_Head): _gc_next, _gc_prev */
#define GC_PREV_MASK (~(uintptr_t)3) /* _gc_prev's flags */

#define OB_REFCNT 0
#define OB_TYPE 8
#define OB_SIZE 16                   /* PyVarObject.ob_size */
#define TP_BASICSIZE 32
#define TP_ITEMSIZE 40
#define TP_FLAGS 168
#define TP_TRAVERSE 184
#define TP_DICT 264
#define TP_DICTOFFSET 288
#define LIST_ITEMS 24                /* PyListObject.ob_item */
#define TUPLE_ITEMS 24               /* PyTupleObject.ob_item[] */
#define MODULE_DICT 16               /* PyModuleObject.md_dict */
#define MODULE_NAME 48               /* .md_name */
#define FRAME_CODE 32                /* PyFrameObject.f_code (3.8-3.10) */
#define CODE_NAME 112                /* PyCodeObject.co_name (3.8-3.10) */
#define MANAGED_DICT (-3 * 8)        /* 3.11 on: the managed dict's pointer before the object */
#define PY311_FRAME_LOCALSPLUS 72    /* _PyInterpreterFrame.localsplus (3.11 to 3.13) */
#define PY311_CODE_NLOCALSPLUS 76    /* PyCodeObject.co_nlocalsplus (int; 3.11) */
#define PY312_CODE_NLOCALSPLUS 72    /* 3.12, 3.13 */
#define PY311_CODE_LOCALSPLUSNAMES 96   /* .co_localsplusnames (3.11 to 3.13) */
#define PY311_CODE_NAME 120          /* .co_name (3.11 to 3.13) */
#define PY38_FRAME_LOCALSPLUS 360    /* PyFrameObject.f_localsplus (3.8, 3.9) */
#define PY310_FRAME_LOCALSPLUS 352   /* 3.10 */
#define PY38_CODE_NLOCALS 28         /* PyCodeObject.co_nlocals (int; 3.8 to 3.10) */
#define PY38_CODE_VARNAMES 72        /* .co_varnames (3.8 to 3.10) */
#define PY38_CODE_NAME 112           /* .co_name (3.8 to 3.10) */
#define MAX_LOCAL_ROOTS 64
/* 3.13 on: the version's own (pyversions.h), else the one of the versions before */
#define PYV(field, before) (mw_py_do.v ? (size_t)mw_py_do.v->field : (size_t)(before))

/* An instance's attributes where no __dict__ was made (3.11 on): its values,
 * in the order of the entries of its type's shared keys
 * (PyHeapTypeObject.ht_cached_keys, a split table of str keys: value i is
 * the attribute named by entry i's key). 3.11: a PyDictValues pointer four
 * words before the object (the first of the two words of the pre-header,
 * before the GC header: pycore_object.h, _PyObject_ValuesPointer), NULL once
 * a dict is made; 3.12: the pre-header's second word (three words before)
 * holds either the dict or the values' address minus one
 * (_PyObject_DictOrValuesPointer, odd for values); 3.13: the values inline after the PyObject header of a type with
 * Py_TPFLAGS_INLINE_VALUES (_PyObject_InlineValues: capacity, size,
 * embedded and valid bytes, then the array), valid until they are copied out
 * (pycore_dict.h). The keys' entries (PyDictUnicodeEntry: key, value) follow
 * their one-byte indices, at most 30 of them (SHARED_KEYS_MAX_SIZE). */
#define TP_MEMBERS 240               /* PyTypeObject.tp_members */
#define TP_BASE 256                  /* .tp_base */
#define PY311_HT_CACHED_KEYS 872     /* PyHeapTypeObject.ht_cached_keys (3.11) */
#define PY312_HT_CACHED_KEYS 880     /* 3.12, 3.13 (PyTypeObject.tp_watched before) */
#define PY311_VALUES_PTR 32          /* 3.11: the values' pointer, this many bytes before the object */
#define PY312_DICT_OR_VALUES 24      /* 3.12: the dict or the values minus one, as many before */
#define PY312_VALUES_BIAS 1          /* 3.12: what the values' address is stored less */
#define PY313_INLINE_VALUES 16       /* 3.13: sizeof (PyObject), where the values begin */
#define PY313_DV_CAPACITY 0          /* PyDictValues.capacity (uint8_t) */
#define PY313_DV_VALID 3             /* .valid (uint8_t) */
#define PY313_DV_VALUES 8            /* .values[] */
#define PY311_DK_LOG2_SIZE 8         /* PyDictKeysObject.dk_log2_size (uint8_t; 3.11 on) */
#define PY311_DK_LOG2_INDEX_BYTES 9  /* .dk_log2_index_bytes (uint8_t) */
#define PY311_DK_KIND 10             /* .dk_kind (uint8_t) */
#define PY311_DK_NENTRIES 24         /* .dk_nentries */
#define PY311_DK_INDICES 32          /* .dk_indices[] */
#define PY311_DK_SPLIT 2             /* DICT_KEYS_SPLIT */
#define PY311_DK_UENTRY_SIZE 16      /* sizeof (PyDictUnicodeEntry), its key first */
#define PY311_SHARED_KEYS_MAX 30     /* SHARED_KEYS_MAX_SIZE */
#define STR_LENGTH 16                /* PyASCIIObject.length (3.8 to 3.15) */
#define MAX_ATTR_CHARS 36            /* a longer name is not read (4 bytes of UTF-8 each) */
/* __slots__ (every version): a type's tp_members, an array of PyMemberDef
 * (structmember.h: name, type, offset, flags, doc) ended by a NULL name; a
 * slot is a member of type T_OBJECT_EX at its offset in the object; each
 * class lists its own, its bases' are in theirs (tp_base). */
#define MEMBERDEF_SIZE 40            /* sizeof (PyMemberDef) */
#define MEMBER_TYPE 8                /* .type (int) */
#define MEMBER_OFFSET 16             /* .offset (Py_ssize_t) */
#define MEMBER_T_OBJECT 6            /* T_OBJECT */
#define MEMBER_T_OBJECT_EX 16        /* T_OBJECT_EX */
#define MAX_MEMBERS 256              /* members read of one type */
#define MAX_BASES 32                 /* types read up its tp_base */

#define TPF_HEAPTYPE (1ul << 9)
#define TPF_HAVE_GC (1ul << 14)
#define TPF_MANAGED_DICT (1ul << 4)
#define TPF_INLINE_VALUES (1ul << 2)  /* 3.13 */
#define TPF_LONG_SUBCLASS (1ul << 24)
#define TPF_LIST_SUBCLASS (1ul << 25)
#define TPF_TUPLE_SUBCLASS (1ul << 26)
#define TPF_UNICODE_SUBCLASS (1ul << 28)
#define TPF_DICT_SUBCLASS (1ul << 29)
#define TPF_TYPE_SUBCLASS (1ul << 31)

#define MAX_TARGETS 16
#define TOP_TYPES 4
#define TOP_STACKS 4
#define PER_TYPE 2
#define MAX_LEVELS 24
#define NODE_BITS 18                 /* the table of objects found: 2^18 slots */
#define ROOT_BITS 16                 /* module and class dicts */
#define FILTER_BITS 20               /* a bit per hash of the level's objects */
#define EX_MAX 16384                 /* objects noted per snapshot */
#define MAX_LINKS 16
#define MAX_REFERENTS 8
#define ARENA_SIZE (256 * 1024)      /* the result's strings */

typedef int (*visitproc)(void *obj, void *arg);
typedef int (*traverseproc)(void *self, visitproc visit, void *arg);

/* pyrefs.c: CPython's functions and types the search uses, looked up once. */
struct refs_py {
	bool looked;
	int (*dict_next)(void *d, intptr_t *pos, void **key, void **value);
	uintptr_t dict_type, list_type, tuple_type, module_type, frame_type;
	const char *runtime;
	void *(*interp_main)(void);
};
extern struct refs_py py MW_HIDDEN;

/* ------------------------------------------------------------------------- */
/* The request the snapshot's thread hands to the search thread, and what comes
 * back. */

struct target {
	uintptr_t obj, type;   /* the object and its type object */
	uint32_t tindex;       /* its type in the snapshot's types */
	uint32_t stack;
	bool forward;          /* its forward view is wanted */
	bool alive;            /* met in the tracked lists (for the forward view) */
};

struct out_link {
	uint32_t edge, type;   /* offsets into the arena, 0: none */
};
struct out_chain {
	uint32_t end;
	uint32_t nlinks;
	struct out_link links[MAX_LINKS];
};
struct out_forward {
	bool done;
	uint64_t bytes;
	uint32_t n;
	struct {
		uintptr_t type;
		uint32_t name;
		uint64_t count, bytes;
	} r[MAX_REFERENTS];
};

enum rq_state { RQ_IDLE, RQ_WAITING, RQ_SEARCHING, RQ_DONE };

struct request {
	enum rq_state state;
	bool abandoned;        /* the asker gave up: the search thread cleans up */
	uint64_t deadline_ns, max_objects;
	size_t ntargets;
	struct target targets[MAX_TARGETS];
	/* results */
	uint32_t status;
	char note[160];
	uint64_t pause_ns, visited, tracked;
	uint32_t passes;
	struct out_chain chains[MAX_TARGETS];
	struct out_forward forward[MAX_TARGETS];
	char *arena;
	size_t arena_used;
};
/* pyrefs.c: the one request, handed to the search thread and back (under
 * its lock in pyrefs.c; the search thread alone touches it while it
 * searches). */
extern struct request rq MW_HIDDEN;


/* CLOCK_MONOTONIC, which the request's condition variable waits on. */
static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline bool out_of_time(uint64_t deadline)
{
	return mono_ns() >= deadline;
}

/* pyrefs.c: a copy of s (n bytes) in the request's arena: its offset, 0
 * when full. */
uint32_t arena_str(const char *s, size_t n) MW_HIDDEN;

/* ------------------------------------------------------------------------- */
/* The search, with the GIL held. */

static inline uintptr_t word(uintptr_t a)
{
	return *(const uintptr_t *)a;
}

static inline uintptr_t type_of(uintptr_t o)
{
	return word(o + OB_TYPE);
}

static inline unsigned long flags_of_type(uintptr_t t)
{
	return (unsigned long)word(t + TP_FLAGS);
}

struct node {
	uintptr_t obj;         /* 0: empty slot */
	uintptr_t parent;      /* the object it refers to, towards its target */
	uint16_t target;
	uint16_t level;        /* 0: a target */
	uint8_t root;          /* enum root_kind, once known */
	uint8_t rooted;        /* on the path of a root found */
};
enum root_kind { NOT_ROOT, ROOT_MODULE_DICT, ROOT_CLASS_DICT, ROOT_MODULE, ROOT_CLASS, ROOT_FRAME, ROOT_LOCAL };

struct rootent {
	uintptr_t dict, owner;   /* dict: a module's or a class's; owner: it */
	uint8_t kind;
};

struct search {
	struct node *nodes;
	struct rootent *roots;
	uint64_t *filter;
	size_t nnodes, nroots;
	uintptr_t cur;           /* the object being traversed */
	uint16_t level;          /* the level being searched for (its referrers') */
	bool first_pass;
	bool full;               /* the node table is full */
	struct target *t;
	size_t nt;
	/* per target: its chain's top (a rooted node, or the deepest found), and
	 * where it joined another target's tree */
	uintptr_t top[MAX_TARGETS];
	uintptr_t join_at[MAX_TARGETS], join_child[MAX_TARGETS];
	bool done[MAX_TARGETS];
	bool via_join[MAX_TARGETS];  /* done through join_at, not a root of its own */
	uint16_t deepest[MAX_TARGETS];
	uintptr_t deep_node[MAX_TARGETS];
	size_t fw;               /* forward: the target being traversed */
	/* 3.11 on: a running frame's locals that hold a level's objects, each
	 * a node of its own (its obj the slot's address) */
	struct { uintptr_t slot, code; uint32_t index; } locals[MAX_LOCAL_ROOTS];
	size_t nlocals;
	uintptr_t interp;
};

static inline size_t hash_ptr(uintptr_t p)
{
	return (size_t)mw_splitmix64(p >> 4);
}

static inline struct node *node_find(struct search *se, uintptr_t obj)
{
	size_t m = ((size_t)1 << NODE_BITS) - 1, j;
	for (j = hash_ptr(obj) & m; se->nodes[j].obj; j = (j + 1) & m)
		if (se->nodes[j].obj == obj)
			return &se->nodes[j];
	return NULL;
}

static inline struct rootent *root_find(struct search *se, uintptr_t dict)
{
	size_t m = ((size_t)1 << ROOT_BITS) - 1, j;
	for (j = hash_ptr(dict) & m; se->roots[j].dict; j = (j + 1) & m)
		if (se->roots[j].dict == dict)
			return &se->roots[j];
	return NULL;
}

static inline void *map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* pyrefs-search.c: the search itself, GIL held: rq's targets in, its
 * results out. */
void search_run(void) MW_HIDDEN;
/* pyrefs-chains.c: the chain of target k named into rq.chains[k]. */
void name_chain(struct search *se, size_t k, uint64_t deadline) MW_HIDDEN;
/* pyrefs-forward.c: what target k holds, into rq.forward[k]. */
void forward_view(struct search *se, size_t k) MW_HIDDEN;

#endif
