/* pyrefs.c: what keeps sampled Python objects alive (memwatch snap
 * --referrers). For a few sampled live objects of the snapshot's top types
 * and stacks, a chain of references from a root (a module global, a class
 * attribute, a frame, a module) to the object, and what one object of each
 * top type holds (its referents by type and size).
 *
 * The search runs on a thread of its own, which takes the GIL
 * (PyGILState_Ensure) and walks the objects the collector tracks (the
 * generations' lists of PyGC_Head, mirrored per version below), calling each
 * one's tp_traverse with a visit function of ours: backwards, level by level
 * from the targets (the objects that refer to the last level's, one pass over
 * every tracked object per level), until each target has a root, nothing
 * refers to the last level, or a bound is reached (the time limit, counted
 * from the request and so including the wait for the GIL, or the number of
 * objects traversed). Nothing is asked of the interpreter that allocates: the
 * walk reads the objects directly (the GIL is held: none can change or go),
 * dict keys are read with PyDict_Next, and the search's own tables are mmap'd.
 * The thread that asked (the snapshot's) waits at most until the time limit
 * for the GIL: not had by then, the search is given up (the thread that waits
 * for it lets it go as soon as it gets it) and the snapshot says so. Never
 * while the interpreter finalizes, nor while a collection runs. */
#include "config.h"

#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "agent.h"
#include "python.h"
#include "pyversions.h"
#include "snapshot.h"

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

static struct {
	bool looked;
	int (*dict_next)(void *d, intptr_t *pos, void **key, void **value);
	uintptr_t dict_type, list_type, tuple_type, module_type, frame_type;
	const char *runtime;
	void *(*interp_main)(void);
} py;

/* ------------------------------------------------------------------------- */
/* Objects noted while the types are read (mw_python_types): a few per typed
 * entry, whose addresses the search starts from. */

static pthread_mutex_t ex_lock = PTHREAD_MUTEX_INITIALIZER;
static struct example {
	uint32_t typed;
	uintptr_t obj;
} *ex;
static size_t nex;
static const struct snapshot *ex_owner;

void mw_pyrefs_note(const struct snapshot *s, size_t typed, uintptr_t obj)
{
	pthread_mutex_lock(&ex_lock);
	if (typed == SIZE_MAX) {
		ex_owner = s;
		nex = 0;
	} else if (ex_owner == s && nex < EX_MAX) {
		if (!ex) {
			void *m = mmap(NULL, EX_MAX * sizeof *ex, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			ex = m == MAP_FAILED ? NULL : m;
		}
		if (ex) {
			ex[nex].typed = (uint32_t)typed;
			ex[nex].obj = obj;
			nex++;
		}
	}
	pthread_mutex_unlock(&ex_lock);
}

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

static pthread_mutex_t rq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rq_cond;
static pthread_once_t rq_once = PTHREAD_ONCE_INIT;
static struct request {
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
} rq;

/* CLOCK_MONOTONIC, which the request's condition variable waits on. */
static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void rq_init(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&rq_cond, &a);
	pthread_condattr_destroy(&a);
}

static uint32_t arena_str(const char *s, size_t n)
{
	uint32_t at;
	if (!rq.arena || rq.arena_used + n + 1 > ARENA_SIZE)
		return 0;
	at = (uint32_t)rq.arena_used;
	memcpy(rq.arena + at, s, n);
	rq.arena[at + n] = 0;
	rq.arena_used += n + 1;
	return at;
}

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

static struct node *node_find(struct search *se, uintptr_t obj)
{
	size_t m = ((size_t)1 << NODE_BITS) - 1, j;
	for (j = hash_ptr(obj) & m; se->nodes[j].obj; j = (j + 1) & m)
		if (se->nodes[j].obj == obj)
			return &se->nodes[j];
	return NULL;
}

static struct node *node_add(struct search *se, uintptr_t obj)
{
	size_t m = ((size_t)1 << NODE_BITS) - 1, j;
	if (se->nnodes >= ((size_t)1 << NODE_BITS) / 2) {
		se->full = true;
		return NULL;
	}
	for (j = hash_ptr(obj) & m; se->nodes[j].obj; j = (j + 1) & m)
		if (se->nodes[j].obj == obj)
			return &se->nodes[j];
	se->nodes[j].obj = obj;
	se->nnodes++;
	return &se->nodes[j];
}

static struct rootent *root_find(struct search *se, uintptr_t dict)
{
	size_t m = ((size_t)1 << ROOT_BITS) - 1, j;
	for (j = hash_ptr(dict) & m; se->roots[j].dict; j = (j + 1) & m)
		if (se->roots[j].dict == dict)
			return &se->roots[j];
	return NULL;
}

static void root_add(struct search *se, uintptr_t dict, uintptr_t owner, uint8_t kind)
{
	size_t m = ((size_t)1 << ROOT_BITS) - 1, j;
	if (!dict || se->nroots >= ((size_t)1 << ROOT_BITS) / 2)
		return;
	for (j = hash_ptr(dict) & m; se->roots[j].dict; j = (j + 1) & m)
		if (se->roots[j].dict == dict)
			return;
	se->roots[j].dict = dict;
	se->roots[j].owner = owner;
	se->roots[j].kind = kind;
	se->nroots++;
}

static inline size_t filter_bit(uintptr_t p)
{
	return (size_t)(mw_splitmix64(p) >> (64 - FILTER_BITS));
}

/* tp_traverse's visit: does the object being traversed refer to one of the
 * level's objects? Then it is the next level's (once). */
static int visit_back(void *obj, void *arg)
{
	struct search *se = arg;
	uintptr_t o = (uintptr_t)obj;
	struct node *n, *c;
	size_t b;

	if (!o)
		return 0;
	b = filter_bit(o);
	if (!(se->filter[b >> 6] & (1ull << (b & 63))))
		return 0;
	n = node_find(se, o);
	if (!n || n->level != se->level || n->root)
		return 0;
	if (o == se->cur)
		return 0;
	c = node_find(se, se->cur);
	if (c) {
		/* found already (another target's, or an earlier level): the
		 * target of n joins that tree there */
		if (c->target != n->target && !se->join_at[n->target]) {
			se->join_at[n->target] = se->cur;
			se->join_child[n->target] = o;
		}
		return 0;
	}
	c = node_add(se, se->cur);
	if (!c)
		return 1;
	c->parent = o;
	c->target = n->target;
	c->level = (uint16_t)(se->level + 1);
	/* a target a tracked object refers to is alive (the GIL is held),
	 * tracked itself or not (a dict of atomic values is not) */
	if (se->level == 0 && se->t[n->target].obj == o)
		se->t[n->target].alive = true;
	/* the rest of its referents still: another target there joins here */
	return 0;
}

/* The forward view's visit: the target's referents, summed by type. */
static size_t object_size(uintptr_t o);

static int visit_fwd(void *obj, void *arg)
{
	struct search *se = arg;
	uintptr_t o = (uintptr_t)obj, t;
	uint32_t k;

	if (!o)
		return 0;
	t = type_of(o);
	if (flags_of_type(t) & TPF_TYPE_SUBCLASS)
		return 0;     /* a class: shared, not held */
	for (k = 0; k < rq.forward[se->fw].n; k++)
		if (rq.forward[se->fw].r[k].type == t)
			break;
	if (k == rq.forward[se->fw].n) {
		if (k == MAX_REFERENTS)
			return 0;
		rq.forward[se->fw].n++;
		rq.forward[se->fw].r[k].type = t;
	}
	rq.forward[se->fw].r[k].count++;
	rq.forward[se->fw].r[k].bytes += object_size(o);
	return 0;
}

static size_t object_size(uintptr_t o)
{
	uintptr_t t = type_of(o);
	unsigned long fl = flags_of_type(t);
	size_t n = (size_t)word(t + TP_BASICSIZE), item = (size_t)word(t + TP_ITEMSIZE);
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;

	if (fl & TPF_UNICODE_SUBCLASS) {
		size_t k = mw_py_str_size((const void *)o);
		if (k)
			n = k;
	} else if (item && minor >= 12 && (fl & TPF_LONG_SUBCLASS)) {
		/* 3.12 on: an int's lv_tag, its digits shifted by 3 */
		n += item * (size_t)(word(o + OB_SIZE) >> 3);
	} else if (item) {
		intptr_t sz = (intptr_t)word(o + OB_SIZE);
		n += item * (size_t)(sz < 0 ? -sz : sz);
	}
	if (fl & TPF_HAVE_GC)
		n += GC_HEAD_SIZE;
	if (minor >= 11 && (fl & TPF_MANAGED_DICT))
		n += 2 * sizeof(void *);
	return n;
}

/* The generations' list heads, as the running interpreter has them: each a
 * circular list whose first node links back to its head and starts an object
 * whose type is a type. Read with safe reads: a wrong layout fails here. */
static int gc_heads(uintptr_t *heads, uintptr_t *state, uintptr_t *interp_out)
{
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;
	uintptr_t gc, interp, nx, pv, t, tt;
	char name[200];
	int i;

	if (minor == 8) {
		if (!py.runtime)
			return -1;
		gc = (uintptr_t)py.runtime + PY38_RUNTIME_GC;
		*interp_out = py.interp_main ? (uintptr_t)py.interp_main() :
			      mw_py.interp_head ? (uintptr_t)mw_py.interp_head() : 0;
	} else {
		size_t off;
		if (minor >= 13) {
			/* from _Py_DebugOffsets (pyversions.c) */
			if (!mw_py_do.v)
				return -1;
			off = mw_py_do.interp_gc;
		} else {
			off = minor <= 10 ? PY39_INTERP_GC : minor == 11 ? PY311_INTERP_GC : PY312_INTERP_GC;
		}
		/* the main interpreter's: the one whose GIL PyGILState_Ensure
		 * takes (the head of the list is the newest) */
		interp = py.interp_main ? (uintptr_t)py.interp_main() :
			 mw_py.interp_head ? (uintptr_t)mw_py.interp_head() : 0;
		if (!interp)
			return -1;
		*interp_out = interp;
		gc = interp + off;
	}
	for (i = 0; i < 4; i++) {
		uintptr_t h = gc + (i < 3 ? PYV(gc_generations, GC_GENERATIONS) + (size_t)i * GC_GENERATION_SIZE :
				   PYV(gc_permanent, GC_PERMANENT));
		if (!mw_py_safe_word((void *)h, &nx) || !mw_py_safe_word((void *)(h + 8), &pv) || !nx || !pv)
			return -1;
		if (nx != h) {
			if (!mw_py_safe_word((void *)(nx + 8), &pv) || (pv & GC_PREV_MASK) != h ||
			    !mw_py_safe_word((void *)(nx + GC_HEAD_SIZE + OB_TYPE), &t) ||
			    !mw_py_safe_word((void *)(t + OB_TYPE), &tt) || !mw_py_type_name(t, name, sizeof name))
				return -1;
		}
		heads[i] = h;
	}
	*state = gc;
	return 0;
}

static bool out_of_time(uint64_t deadline)
{
	return mono_ns() >= deadline;
}

/* One pass over every tracked object: the level's referrers (and, on the
 * first pass, the module and class dicts, and which targets are alive). */
static int pass(struct search *se, const uintptr_t *heads, uint64_t deadline, uint64_t max_objects)
{
	unsigned count = 0;
	for (int i = 0; i < 4; i++) {
		uintptr_t h = heads[i], g;
		for (g = word(h) & ~(uintptr_t)1; g != h; g = word(g) & ~(uintptr_t)1) {
			uintptr_t o = g + GC_HEAD_SIZE, t = type_of(o);
			traverseproc tr;

			if (se->first_pass) {
				unsigned long tf = flags_of_type(t);
				rq.tracked++;
				if (t == py.module_type)
					root_add(se, word(o + MODULE_DICT), o, ROOT_MODULE_DICT);
				else if ((tf & TPF_TYPE_SUBCLASS) && (flags_of_type(o) & TPF_HEAPTYPE))
					root_add(se, word(o + TP_DICT), o, ROOT_CLASS_DICT);
				size_t b = filter_bit(o);
				if (se->filter[b >> 6] & (1ull << (b & 63)))
					for (size_t k = 0; k < se->nt; k++)
						if (se->t[k].obj == o && se->t[k].type == t)
							se->t[k].alive = true;
			}
			rq.visited++;
			tr = (traverseproc)word(t + TP_TRAVERSE);
			if (tr && se->level < MAX_LEVELS) {
				se->cur = o;
				tr((void *)o, visit_back, se);
			}
			if (se->full)
				return SNAP_REFS_OBJECTS;
			if (!(++count & 1023)) {
				if (out_of_time(deadline))
					return SNAP_REFS_TIME;
			}
			if (rq.visited >= max_objects)
				return SNAP_REFS_OBJECTS;
		}
	}
	return SNAP_REFS_DONE;
}

/* What kind of root the object is (or NOT_ROOT). */
static uint8_t root_kind(struct search *se, uintptr_t o)
{
	uintptr_t t = type_of(o);
	struct rootent *r = root_find(se, o);
	if (r)
		return r->kind;
	if (t == py.module_type)
		return ROOT_MODULE;
	if ((flags_of_type(t) & TPF_TYPE_SUBCLASS) && (flags_of_type(o) & TPF_HEAPTYPE))
		return ROOT_CLASS;
	if (py.frame_type && t == py.frame_type)
		return ROOT_FRAME;
	return NOT_ROOT;
}

/* Mark the path from root node n to its target as rooted; the target done. */
static void mark_rooted(struct search *se, struct node *n)
{
	size_t tg = n->target;
	if (se->done[tg])
		return;
	se->done[tg] = true;
	se->top[tg] = n->obj;
	for (struct node *p = n; p; p = p->level ? node_find(se, p->parent) : NULL)
		p->rooted = 1;
}

/* A running frame's locals (3.8 to 3.10: its co_nlocals first slots; 3.11
 * on: its co_nlocalsplus first, locals, cells and free variables) that hold
 * an object of the level searched for: roots, as nodes of their own at the
 * next level. */
static int frame_locals(const char *frame, const char *code, void *arg)
{
	struct search *se = arg;
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;
	int n = *(const int *)(code + (minor <= 10 ? PY38_CODE_NLOCALS : minor == 11 ? PY311_CODE_NLOCALSPLUS
											: PY312_CODE_NLOCALSPLUS));
	const uintptr_t *slots = (const uintptr_t *)(frame + (minor <= 9 ? PY38_FRAME_LOCALSPLUS :
							       minor == 10 ? PY310_FRAME_LOCALSPLUS :
							       mw_py_do.v ? mw_py_do.frame_localsplus :
							       PY311_FRAME_LOCALSPLUS));
	/* 3.14 on: each a _PyStackRef, its low bits a tag */
	uintptr_t untag = ~(uintptr_t)(mw_py_do.v ? mw_py_do.v->executable_tag : 0);

	for (int i = 0; i < n && i < 100000; i++) {
		uintptr_t v = slots[i] & untag;
		size_t b;
		struct node *t, *r;
		if (!v)
			continue;
		b = filter_bit(v);
		if (!(se->filter[b >> 6] & (1ull << (b & 63))))
			continue;
		t = node_find(se, v);
		if (!t || t->level != se->level || t->root || se->done[t->target])
			continue;
		if (se->nlocals == MAX_LOCAL_ROOTS)
			return 1;
		r = node_add(se, (uintptr_t)&slots[i]);
		if (!r)
			return 1;
		r->parent = v;
		r->target = t->target;
		r->level = (uint16_t)(se->level + 1);
		r->root = ROOT_LOCAL;
		se->locals[se->nlocals].slot = (uintptr_t)&slots[i];
		se->locals[se->nlocals].code = (uintptr_t)code;
		se->locals[se->nlocals].index = (uint32_t)i;
		se->nlocals++;
		if (se->level == 0 && se->t[t->target].obj == v)
			se->t[t->target].alive = true;
		mark_rooted(se, r);
	}
	return 0;
}

/* After a pass: the new level's roots; the targets that joined a rooted
 * tree; the filter of the objects the next pass looks for. How many objects
 * the next level has. */
static size_t after_pass(struct search *se)
{
	size_t m = (size_t)1 << NODE_BITS, live = 0;

	memset(se->filter, 0, ((size_t)1 << FILTER_BITS) / 8);
	for (size_t j = 0; j < m; j++) {
		struct node *n = &se->nodes[j];
		if (!n->obj || n->level != se->level + 1)
			continue;
		if (n->root == ROOT_LOCAL)
			continue;   /* a frame's slot, rooted when it was found */
		if (n->level > se->deepest[n->target] || !se->deep_node[n->target]) {
			se->deepest[n->target] = n->level;
			se->deep_node[n->target] = n->obj;
		}
		n->root = root_kind(se, n->obj);
		if (n->root) {
			mark_rooted(se, n);
			continue;
		}
		if (se->done[n->target])
			continue;   /* no need to go further from it */
		live++;
		{
			size_t b = filter_bit(n->obj);
			se->filter[b >> 6] |= 1ull << (b & 63);
		}
	}
	/* a target joined to a rooted tree is rooted too, and so is its own
	 * path there (another target may have joined it on the way) */
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t k = 0; k < se->nt; k++) {
			struct node *c;
			if (se->done[k] || !se->join_at[k])
				continue;
			c = node_find(se, se->join_at[k]);
			if (!c || !c->rooted)
				continue;
			se->done[k] = true;
			se->via_join[k] = true;
			se->top[k] = se->join_at[k];
			for (struct node *p = node_find(se, se->join_child[k]); p;
			     p = p->level ? node_find(se, p->parent) : NULL)
				p->rooted = 1;
			changed = true;
		}
	}
	return live;
}

/* Does the first word of a block look like a live object's reference count?
 * A freed one holds the allocator's link there (an address, or glibc's
 * mangled one), or 0. Immortal objects (3.12 on) count 2^32-1 or so. */
static bool alive_refcnt(uintptr_t rc)
{
	return rc != 0 && rc < ((uintptr_t)1 << 40);
}

/* ------------------------------------------------------------------------- */
/* Naming the chains. */

static size_t type_name_of(uintptr_t o, char *buf, size_t len)
{
	return mw_py_type_name(type_of(o), buf, len);
}

static uint32_t type_str(uintptr_t o)
{
	char b[200];
	size_t n = type_name_of(o, b, sizeof b);
	return n ? arena_str(b, n) : 0;
}

static bool is_str(uintptr_t o)
{
	return o && (flags_of_type(type_of(o)) & TPF_UNICODE_SUBCLASS);
}

/* The key under which dict d holds v (its text into buf); 0: not found. -1 a
 * key that is not a str. */
static ssize_t dict_key(uintptr_t d, uintptr_t v, char *buf, size_t len, uint64_t deadline)
{
	intptr_t pos = 0;
	void *k, *val;
	unsigned count = 0;

	if (!py.dict_next)
		return 0;
	while (py.dict_next((void *)d, &pos, &k, &val)) {
		if ((uintptr_t)val == v || (uintptr_t)k == v) {
			if (is_str((uintptr_t)k))
				return (ssize_t)mw_py_read_str(k, buf, len);
			return -1;
		}
		if (!(++count & 4095) && out_of_time(deadline + 100000000ull))
			break;
	}
	return 0;
}

/* The value of str key `name` in dict d (0: none). */
static uintptr_t dict_get(uintptr_t d, const char *name)
{
	intptr_t pos = 0;
	void *k, *val;
	char b[64];
	size_t n = strlen(name);
	unsigned count = 0;

	if (!py.dict_next)
		return 0;
	while (py.dict_next((void *)d, &pos, &k, &val) && ++count < 100000)
		if (is_str((uintptr_t)k) && mw_py_read_str(k, b, sizeof b) == n && memcmp(b, name, n) == 0)
			return (uintptr_t)val;
	return 0;
}

/* A class's name with its module: module.Qual (builtins' without). */
static size_t class_name(uintptr_t cls, char *buf, size_t len)
{
	char q[200];
	size_t n = mw_py_type_name(cls, q, sizeof q), m = 0;
	uintptr_t mod = 0, dict = word(cls + TP_DICT);

	if (!n)
		return 0;
	if (dict)
		mod = dict_get(dict, "__module__");
	if (mod && is_str(mod)) {
		m = mw_py_read_str((void *)mod, buf, len > 1 ? len - 1 : 0);
		/* a name that carries its module already stays as it is */
		if (m && (n <= m || memcmp(q, buf, m) != 0 || q[m] != '.') && m + 1 + n <= len) {
			buf[m] = '.';
			memcpy(buf + m + 1, q, n);
			return m + 1 + n;
		}
	}
	if (n > len)
		n = len;
	memcpy(buf, q, n);
	return n;
}

static size_t module_name(uintptr_t mod, char *buf, size_t len)
{
	uintptr_t nm = word(mod + PYV(module_name, MODULE_NAME));
	return is_str(nm) ? mw_py_read_str((void *)nm, buf, len) : 0;
}

/* The byte at a, read by a safe read of its word. */
static bool safe_byte(uintptr_t a, unsigned *b)
{
	uintptr_t w;
	if (!mw_py_safe_word((const void *)(a & ~(uintptr_t)7), &w))
		return false;
	*b = (unsigned)(w >> (8 * (a & 7))) & 0xff;
	return true;
}

/* ".name" into buf for the str object key (its text printable), 0 when it is
 * not one. */
static size_t attr_text(uintptr_t key, char *buf, size_t len)
{
	uintptr_t kt, chars;
	char k[4 * MAX_ATTR_CHARS + 8];
	size_t n;

	/* a str of a length read whole into k: never a name cut short */
	if (!key || !mw_py_safe_word((const void *)(key + OB_TYPE), &kt) || kt != (uintptr_t)mw_py.unicode_type ||
	    !mw_py_safe_word((const void *)(key + STR_LENGTH), &chars) || !chars || chars > MAX_ATTR_CHARS)
		return 0;
	n = mw_py_read_str((const void *)key, k, sizeof k);
	if (!n || n >= sizeof k - 4)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)k[i] < 0x20 || k[i] == 0x7f)
			return 0;
	snprintf(buf, len, ".%.*s", (int)n, k);
	return strlen(buf);
}

/* The attribute of instance o (of type t, flags fl) that holds v, from its
 * values (3.11 on, no __dict__ made: see PY311_HT_CACHED_KEYS): ".name" into
 * buf, 0 when it holds none there, or when anything read is not as CPython
 * lays it out (then the edge keeps the type's name: never a wrong one). */
static size_t values_attr(uintptr_t o, uintptr_t t, unsigned long fl, uintptr_t v, char *buf, size_t len)
{
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;
	uintptr_t values, keys, w, nentries, entries, key;
	unsigned cap = PY311_SHARED_KEYS_MAX, b, l2, l2i, kind;

	if (minor < 11 || (minor >= 13 && !mw_py_do.v) || !(fl & TPF_MANAGED_DICT) || !(fl & TPF_HEAPTYPE))
		return 0;
	if (minor == 11) {
		if (!mw_py_safe_word((const void *)(o - PY311_VALUES_PTR), &values) || !values)
			return 0;
	} else if (minor == 12) {
		if (!mw_py_safe_word((const void *)(o - PY312_DICT_OR_VALUES), &w) || !(w & PY312_VALUES_BIAS))
			return 0;
		values = w + PY312_VALUES_BIAS;
	} else {
		uintptr_t bs;
		if (!(fl & TPF_INLINE_VALUES) || !mw_py_safe_word((const void *)(t + TP_BASICSIZE), &bs) ||
		    bs != PY313_INLINE_VALUES)
			return 0;
		w = o + PY313_INLINE_VALUES;
		if (!safe_byte(w + PY313_DV_VALID, &b) || b != 1 || !safe_byte(w + PY313_DV_CAPACITY, &cap))
			return 0;
		values = w + PY313_DV_VALUES;
	}
	if (values & 7)
		return 0;
	if (!mw_py_safe_word((const void *)(t + (minor >= 13 ? PYV(ht_cached_keys, 0) :
					   minor == 12 ? PY312_HT_CACHED_KEYS : PY311_HT_CACHED_KEYS)),
			     &keys) || !keys || (keys & 7))
		return 0;
	/* a split table of at most 30 entries: one-byte indices */
	if (!safe_byte(keys + PY311_DK_LOG2_SIZE, &l2) || !safe_byte(keys + PY311_DK_LOG2_INDEX_BYTES, &l2i) ||
	    !safe_byte(keys + PY311_DK_KIND, &kind) || kind != PY311_DK_SPLIT || l2 < 3 || l2 > 7 || l2i != l2 ||
	    !mw_py_safe_word((const void *)(keys + PY311_DK_NENTRIES), &nentries) ||
	    nentries > PY311_SHARED_KEYS_MAX)
		return 0;
	entries = keys + PY311_DK_INDICES + ((uintptr_t)1 << l2i);
	for (uintptr_t i = 0; i < nentries && i < cap; i++) {
		if (!mw_py_safe_word((const void *)(values + 8 * i), &w))
			return 0;
		if (w != v)
			continue;
		if (!mw_py_safe_word((const void *)(entries + PY311_DK_UENTRY_SIZE * i), &key))
			return 0;
		return attr_text(key, buf, len);
	}
	return 0;
}

/* The __slots__ member of o (of type t) that holds v: ".name" into buf, from
 * the members of t and of its bases (a member that holds an object, at an
 * offset within the object); 0 when none does, or the margin after the
 * search's deadline is spent (the GIL is held meanwhile). */
static size_t slot_attr(uintptr_t o, uintptr_t t, uintptr_t v, char *buf, size_t len, uint64_t deadline)
{
	uintptr_t size, ty = t;
	unsigned count = 0;

	if (!mw_py_safe_word((const void *)(t + TP_BASICSIZE), &size))
		return 0;
	for (unsigned d = 0; ty && d < MAX_BASES; d++) {
		uintptr_t m, name, kind, off, w;
		if (!mw_py_safe_word((const void *)(ty + TP_MEMBERS), &m))
			return 0;
		for (unsigned j = 0; m && !(m & 7) && j < MAX_MEMBERS; j++) {
			uintptr_t md = m + (uintptr_t)j * MEMBERDEF_SIZE;
			char nb[100];
			size_t n;
			if (!(++count & 255) && out_of_time(deadline + 100000000ull))
				return 0;
			if (!mw_py_safe_word((const void *)md, &name) || !name ||
			    !mw_py_safe_word((const void *)(md + MEMBER_TYPE), &kind) ||
			    !mw_py_safe_word((const void *)(md + MEMBER_OFFSET), &off))
				break;
			kind &= 0xffffffff;
			/* one that holds an object, within the object */
			if ((kind != MEMBER_T_OBJECT && kind != MEMBER_T_OBJECT_EX) || (off & 7) ||
			    off < 2 * sizeof(void *) || off > size || off + sizeof(void *) > size)
				continue;
			if (!mw_py_safe_word((const void *)(o + off), &w) || w != v)
				continue;
			/* its name, a C string */
			for (n = 0; n < sizeof nb; n++) {
				unsigned c;
				if (!safe_byte(name + n, &c))
					return 0;
				if (!c)
					break;
				if (c < 0x20 || c == 0x7f)
					return 0;
				nb[n] = (char)c;
			}
			if (!n || n == sizeof nb)
				return 0;
			snprintf(buf, len, ".%.*s", (int)n, nb);
			return strlen(buf);
		}
		if (!mw_py_safe_word((const void *)(ty + TP_BASE), &ty))
			return 0;
	}
	return 0;
}

/* How from refers to to: "[3]", "['key']", "__dict__", ".name"; 0 when not
 * known. */
static size_t edge_name(uintptr_t from, uintptr_t to, char *buf, size_t len, bool *is_dict_slot,
			uint64_t deadline)
{
	uintptr_t t = type_of(from);
	unsigned long fl = flags_of_type(t);
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;
	char k[160];
	ssize_t n;

	*is_dict_slot = false;
	if (fl & TPF_DICT_SUBCLASS) {
		n = dict_key(from, to, k, sizeof k, deadline);
		if (n > 0) {
			snprintf(buf, len, "['%.*s']", (int)n, k);
			return strlen(buf);
		}
		if (n < 0 || !(fl & TPF_HEAPTYPE))
			return 0;
		/* a subclass's instance: an attribute still */
	} else if (fl & (TPF_LIST_SUBCLASS | TPF_TUPLE_SUBCLASS)) {
		intptr_t sz = (intptr_t)word(from + OB_SIZE);
		uintptr_t items = fl & TPF_LIST_SUBCLASS ? word(from + LIST_ITEMS) : from + PYV(tuple_items, TUPLE_ITEMS);
		for (intptr_t i = 0; items && i < sz; i++)
			if (word(items + (size_t)i * 8) == to) {
				snprintf(buf, len, "[%ld]", (long)i);
				return strlen(buf);
			}
		if (!(fl & TPF_HEAPTYPE))
			return 0;
	}
	{
		intptr_t off = (intptr_t)word(t + TP_DICTOFFSET);
		uintptr_t slot = 0;
		if (off > 0)
			slot = from + (uintptr_t)off;
		else if (minor >= 11 && (fl & TPF_MANAGED_DICT))
			slot = from + (uintptr_t)(intptr_t)MANAGED_DICT;
		if (slot && word(slot) == to) {
			*is_dict_slot = true;
			snprintf(buf, len, "__dict__");
			return strlen(buf);
		}
	}
	n = (ssize_t)values_attr(from, t, fl, to, buf, len);
	if (n > 0)
		return (size_t)n;
	return slot_attr(from, t, to, buf, len, deadline);
}

/* Append to path the objects from `from` along their parents, down to a
 * target or to stop (included). */
static void walk(struct search *se, uintptr_t from, uintptr_t stop, uintptr_t *path, size_t *np, size_t max)
{
	struct node *n = node_find(se, from);
	for (; n && *np < max; n = n->level ? node_find(se, n->parent) : NULL) {
		path[(*np)++] = n->obj;
		if (stop && n->obj == stop)
			break;
	}
}

/* The objects from the root of target k's chain down to stop, an object on
 * it: for a target rooted through another's tree (joined), that one's chain
 * down to where it joined, then its own objects. */
static void chain_to(struct search *se, size_t k, uintptr_t stop, uintptr_t *path, size_t *np, size_t max,
		     int depth)
{
	struct node *j;

	if (depth > MAX_TARGETS)
		return;
	if (!se->via_join[k]) {
		walk(se, se->top[k], stop, path, np, max);
		return;
	}
	j = node_find(se, se->join_at[k]);
	if (!j)
		return;
	chain_to(se, j->target, se->join_at[k], path, np, max, depth + 1);
	if (!*np || path[*np - 1] != se->join_at[k]) {
		*np = 0;
		return;
	}
	walk(se, se->join_child[k], stop, path, np, max);
}

/* The chain of target k: from its top (a root, or the deepest object found)
 * to the target, as links named. */
static void name_chain(struct search *se, size_t k, uint64_t deadline)
{
	struct out_chain *c = &rq.chains[k];
	uintptr_t path[MAX_LEVELS * 2 + 4];
	size_t np = 0, i, first;
	struct node *n;
	uint8_t kind = NOT_ROOT;
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;
	char b[300], e[200];
	bool slot = false, prev_slot = false;

	c->nlinks = 0;
	c->end = SNAP_CHAIN_NO_ROOT;
	if (se->done[k]) {
		c->end = SNAP_CHAIN_ROOT;
		chain_to(se, k, se->t[k].obj, path, &np, sizeof path / sizeof *path, 0);
		if (!np || path[np - 1] != se->t[k].obj) {
			np = 0;
			c->end = SNAP_CHAIN_STOPPED;
		}
	}
	if (np) {
		struct node *r = node_find(se, path[0]);
		kind = r ? r->root : NOT_ROOT;
	} else {
		n = se->deep_node[k] ? node_find(se, se->deep_node[k]) : NULL;
		walk(se, n ? n->obj : se->t[k].obj, 0, path, &np, sizeof path / sizeof *path);
		c->end = rq.status == SNAP_REFS_DONE ? SNAP_CHAIN_NO_ROOT : SNAP_CHAIN_STOPPED;
	}
	if (!np) {
		path[np++] = se->t[k].obj;
	}
	/* the first link: the root's name */
	first = 0;
	b[0] = 0;
	if (kind == ROOT_MODULE_DICT || kind == ROOT_CLASS_DICT) {
		struct rootent *r = root_find(se, path[0]);
		size_t m = 0;
		ssize_t kn;
		if (r && np > 1) {
			m = kind == ROOT_MODULE_DICT ? module_name(r->owner, b, 200) : class_name(r->owner, b, 200);
			kn = dict_key(path[0], path[1], e, sizeof e, deadline);
			if (m && kn > 0)
				snprintf(b + m, sizeof b - m, ".%.*s", (int)kn, e);
			else if (m)
				snprintf(b + m, sizeof b - m, "['?']");
			first = 1;
		}
	} else if (kind == ROOT_MODULE) {
		size_t m = module_name(path[0], e, sizeof e);
		snprintf(b, sizeof b, "sys.modules['%.*s']", (int)m, e);
	} else if (kind == ROOT_CLASS) {
		size_t m = class_name(path[0], e, sizeof e);
		snprintf(b, sizeof b, "%.*s", (int)m, e);
	} else if (kind == ROOT_LOCAL) {
		/* path[0] is a frame's slot, not an object: never read as one */
		snprintf(b, sizeof b, "a local");
		first = 1;
		for (size_t j = 0; j < se->nlocals && np > 1; j++) {
			uintptr_t code, names, nm, fn;
			size_t m = 0, f = 0;
			char fb[100];
			if (se->locals[j].slot != path[0])
				continue;
			code = se->locals[j].code;
			names = word(code + (minor <= 10 ? PY38_CODE_VARNAMES : PY311_CODE_LOCALSPLUSNAMES));
			fn = word(code + (minor <= 10 ? PY38_CODE_NAME : PY311_CODE_NAME));
			nm = names && se->locals[j].index < (uint32_t)word(names + OB_SIZE) ?
			     word(names + PYV(tuple_items, TUPLE_ITEMS) + 8 * (size_t)se->locals[j].index) : 0;
			if (is_str(nm))
				m = mw_py_read_str((void *)nm, e, sizeof e);
			if (is_str(fn))
				f = mw_py_read_str((void *)fn, fb, sizeof fb);
			snprintf(b, sizeof b, "local %.*s of %.*s()", (int)(m ? m : 1), m ? e : "?",
				 (int)(f ? f : 1), f ? fb : "?");
			first = 1;
			break;
		}
	} else if (kind == ROOT_FRAME) {
		/* 3.8 to 3.10: the frame object holds its code; later ones hold
		 * an interpreter frame, not read here */
		uintptr_t code = minor <= 10 ? word(path[0] + FRAME_CODE) : 0;
		uintptr_t nm = code && type_of(code) == (uintptr_t)mw_py.code_type ? word(code + CODE_NAME) : 0;
		size_t m = is_str(nm) ? mw_py_read_str((void *)nm, e, sizeof e) : 0;
		if (m)
			snprintf(b, sizeof b, "a frame of %.*s()", (int)m, e);
		else
			snprintf(b, sizeof b, "a frame");
	}
	for (i = first; i < np && c->nlinks < MAX_LINKS; i++) {
		struct out_link *l = &c->links[c->nlinks];
		size_t en = 0;
		if (i == first) {
			l->edge = b[0] ? arena_str(b, strlen(b)) : 0;
		} else {
			en = edge_name(path[i - 1], path[i], e, sizeof e, &slot, deadline);
			if (prev_slot && en > 2 && e[0] == '[' && e[1] == '\'') {
				/* obj -> __dict__ -> ['k'] reads obj -> .k */
				c->nlinks--;
				l = &c->links[c->nlinks];
				e[0] = '.';
				memmove(e + 1, e + 2, en - 2);
				en -= 3;
			}
			l->edge = en ? arena_str(e, en) : 0;
			prev_slot = slot;
		}
		l->type = type_str(path[i]);
		c->nlinks++;
	}
	if (np > MAX_LINKS && c->nlinks == MAX_LINKS) {
		/* too long: the last link is the object itself */
		c->links[MAX_LINKS - 1].edge = arena_str("...", 3);
		c->links[MAX_LINKS - 1].type = type_str(path[np - 1]);
	}
}

static void forward_view(struct search *se, size_t k)
{
	uintptr_t o = se->t[k].obj, t = se->t[k].type;
	traverseproc tr = (traverseproc)word(t + TP_TRAVERSE);
	struct out_forward *f = &rq.forward[k];

	memset(f, 0, sizeof *f);
	f->bytes = object_size(o);
	se->fw = k;
	if (tr)
		tr((void *)o, visit_fwd, se);
	for (uint32_t i = 0; i < f->n; i++) {
		char b[200];
		uintptr_t rt = f->r[i].type;
		size_t n = mw_py_type_name(rt, b, sizeof b);
		f->r[i].name = n ? arena_str(b, n) : 0;
	}
	f->done = true;
}

static void *map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The search itself: GIL held. */
static void search(void)
{
	struct search se;
	uintptr_t heads[4], state;
	size_t nodes_sz = ((size_t)1 << NODE_BITS) * sizeof(struct node);
	size_t roots_sz = ((size_t)1 << ROOT_BITS) * sizeof(struct rootent);
	size_t filter_sz = ((size_t)1 << FILTER_BITS) / 8;
	uint64_t deadline = rq.deadline_ns;
	int st = SNAP_REFS_DONE;

	memset(&se, 0, sizeof se);
	if (gc_heads(heads, &state, &se.interp) < 0) {
		rq.status = SNAP_REFS_UNAVAILABLE;
		snprintf(rq.note, sizeof rq.note, "the collector's lists are not where this version keeps them");
		return;
	}
	if (*(const int *)(state + PYV(gc_collecting, GC_COLLECTING))) {
		rq.status = SNAP_REFS_UNAVAILABLE;
		snprintf(rq.note, sizeof rq.note, "a garbage collection was running");
		return;
	}
	se.nodes = map(nodes_sz);
	se.roots = map(roots_sz);
	se.filter = map(filter_sz);
	if (!se.nodes || !se.roots || !se.filter) {
		rq.status = SNAP_REFS_UNAVAILABLE;
		snprintf(rq.note, sizeof rq.note, "out of memory");
		goto out;
	}
	se.t = rq.targets;
	se.nt = rq.ntargets;
	for (size_t k = 0; k < se.nt; k++) {
		struct node *n = node_add(&se, se.t[k].obj);
		size_t b = filter_bit(se.t[k].obj);
		if (!n)
			continue;
		n->target = (uint16_t)k;
		n->level = 0;
		se.filter[b >> 6] |= 1ull << (b & 63);
	}
	se.first_pass = true;
	for (se.level = 0; se.level < MAX_LEVELS; se.level++) {
		size_t live;
		bool all = true;
		/* the locals of the running frames first (3.11 on) */
		mw_py_each_frame((const void *)se.interp, frame_locals, &se);
		for (size_t k = 0; k < se.nt; k++)
			all = all && se.done[k];
		if (all)
			break;
		all = true;
		st = pass(&se, heads, deadline, rq.max_objects);
		rq.passes++;
		se.first_pass = false;
		if (st != SNAP_REFS_DONE)
			break;
		live = after_pass(&se);
		for (size_t k = 0; k < se.nt; k++)
			all = all && se.done[k];
		if (all || !live)
			break;
	}
	if (st == SNAP_REFS_DONE && se.level >= MAX_LEVELS) {
		st = SNAP_REFS_OBJECTS;
		snprintf(rq.note, sizeof rq.note, "no root within %d references", MAX_LEVELS);
	}
	if (st != SNAP_REFS_DONE && se.level < MAX_LEVELS) {
		/* what the interrupted pass found still counts */
		after_pass(&se);
	}
	rq.status = (uint32_t)st;
	if (st == SNAP_REFS_TIME)
		snprintf(rq.note, sizeof rq.note, "the time limit was reached after %u passes", rq.passes);
	else if (st == SNAP_REFS_OBJECTS && !rq.note[0])
		snprintf(rq.note, sizeof rq.note, se.full ? "the table of referrers found was full"
							  : "the object limit was reached after %u passes",
			 rq.passes);
	for (size_t k = 0; k < se.nt; k++) {
		/* a target that is not what it was noted as (freed meanwhile)
		 * has no chain */
		uintptr_t w, rc;
		if (!mw_py_safe_word((void *)(se.t[k].obj + OB_TYPE), &w) || w != se.t[k].type ||
		    !mw_py_safe_word((void *)(se.t[k].obj + OB_REFCNT), &rc) || !alive_refcnt(rc)) {
			rq.chains[k].nlinks = 0;
			continue;
		}
		name_chain(&se, k, deadline);
		/* the forward view only of an object met alive in the lists */
		if (se.t[k].forward && se.t[k].alive)
			forward_view(&se, k);
	}
out:
	if (se.nodes)
		munmap(se.nodes, nodes_sz);
	if (se.roots)
		munmap(se.roots, roots_sz);
	if (se.filter)
		munmap(se.filter, filter_sz);
}

/* ------------------------------------------------------------------------- */
/* The search thread. */

static void search_exit(void *arg)
{
	(void)arg;
	/* the interpreter ended this thread: it asked for the GIL while the
	 * interpreter finalized */
	pthread_mutex_lock(&rq_lock);
	rq.status = SNAP_REFS_UNAVAILABLE;
	snprintf(rq.note, sizeof rq.note, "the interpreter is finalizing");
	rq.state = rq.abandoned ? RQ_IDLE : RQ_DONE;
	pthread_cond_broadcast(&rq_cond);
	pthread_mutex_unlock(&rq_lock);
}

static void *search_main(void *arg)
{
	int g;
	uint64_t t0;

	(void)arg;
	mw_tls.guard = 1;
	pthread_cleanup_push(search_exit, NULL);
	g = mw_py.gil_ensure();
	t0 = mono_ns();
	pthread_mutex_lock(&rq_lock);
	if (rq.abandoned) {
		rq.state = RQ_IDLE;
		pthread_mutex_unlock(&rq_lock);
		mw_py.gil_release(g);
		goto out;
	}
	rq.state = RQ_SEARCHING;
	pthread_mutex_unlock(&rq_lock);
	if (mw_py.is_finalizing()) {
		rq.status = SNAP_REFS_UNAVAILABLE;
		snprintf(rq.note, sizeof rq.note, "the interpreter is finalizing");
	} else {
		search();
	}
	rq.pause_ns = mono_ns() - t0;
	mw_py.gil_release(g);
	pthread_mutex_lock(&rq_lock);
	rq.state = rq.abandoned ? RQ_IDLE : RQ_DONE;
	pthread_cond_broadcast(&rq_cond);
	pthread_mutex_unlock(&rq_lock);
out:
	pthread_cleanup_pop(0);
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* The snapshot's side. */

static void look_up(void)
{
	if (py.looked)
		return;
	mw_loader_enter();
	py.dict_next = (int (*)(void *, intptr_t *, void **, void **))dlsym(RTLD_DEFAULT, "PyDict_Next");
	py.dict_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyDict_Type");
	py.list_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyList_Type");
	py.tuple_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyTuple_Type");
	py.module_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyModule_Type");
	py.frame_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyFrame_Type");
	py.runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
	py.interp_main = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyInterpreterState_Main");
	mw_loader_leave();
	py.looked = true;
}

static bool placeholder(const struct snapshot *s, uint32_t t)
{
	return strcmp(s->types[t], SNAP_TYPE_NOT_OBJECT) == 0 || strcmp(s->types[t], SNAP_TYPE_UNREADABLE) == 0;
}

/* Choose the targets among the objects noted for s: up to PER_TYPE of each of
 * the TOP_TYPES types with the most sampled live bytes, and one of the
 * leading type of each of the TOP_STACKS stacks with the most that have no
 * target of that type yet. */
static size_t choose(const struct snapshot *s, struct target *t)
{
	uint64_t *tbytes = NULL, best;
	uint32_t top[TOP_TYPES], seen[64];
	size_t nt = 0, ntop = 0, nst = 0, nseen = 0, i, k;

	pthread_mutex_lock(&ex_lock);
	if (ex_owner != s || !nex || !s->ntypes)
		goto out;
	tbytes = calloc(s->ntypes, sizeof *tbytes);
	if (!tbytes)
		goto out;
	for (i = 0; i < s->ntyped; i++)
		if (!placeholder(s, s->typed[i].type))
			tbytes[s->typed[i].type] += s->typed[i].live_bytes;
	for (ntop = 0; ntop < TOP_TYPES; ntop++) {
		uint32_t bi = UINT32_MAX;
		for (best = 0, i = 0; i < s->ntypes; i++)
			if (tbytes[i] > best) {
				best = tbytes[i];
				bi = (uint32_t)i;
			}
		if (bi == UINT32_MAX)
			break;
		top[ntop] = bi;
		tbytes[bi] = 0;
	}
	for (k = 0; k < ntop; k++) {
		size_t got = 0;
		for (i = 0; i < nex && got < PER_TYPE && nt < MAX_TARGETS; i++) {
			const struct snap_typed *ty;
			if (ex[i].typed >= s->ntyped || s->typed[ex[i].typed].type != top[k])
				continue;
			ty = &s->typed[ex[i].typed];
			t[nt].obj = ex[i].obj;
			t[nt].tindex = ty->type;
			t[nt].stack = ty->stack;
			t[nt].forward = got == 0;
			nt++;
			got++;
		}
	}
	/* the stacks, in the order of their bytes: an object of each one's
	 * largest typed entry of a real type, unless a target above is of that
	 * stack and type already (then the next stack) */
	for (nst = 0; nst < TOP_STACKS && nt < MAX_TARGETS;) {
		size_t bi = SIZE_MAX;
		bool dup = false;
		for (best = 0, i = 0; i < s->ntyped; i++) {
			bool taken = false;
			for (k = 0; k < nseen; k++)
				taken = taken || seen[k] == s->typed[i].stack;
			if (!taken && !placeholder(s, s->typed[i].type) && s->typed[i].live_bytes > best) {
				best = s->typed[i].live_bytes;
				bi = i;
			}
		}
		if (bi == SIZE_MAX || nseen == sizeof seen / sizeof *seen)
			break;
		seen[nseen++] = s->typed[bi].stack;
		for (size_t j = 0; j < nt; j++)
			dup = dup || (t[j].stack == s->typed[bi].stack && t[j].tindex == s->typed[bi].type);
		if (dup)
			continue;
		for (i = 0; i < nex; i++) {
			if (ex[i].typed != bi)
				continue;
			t[nt].obj = ex[i].obj;
			t[nt].tindex = s->typed[bi].type;
			t[nt].stack = s->typed[bi].stack;
			t[nt].forward = false;
			nt++;
			nst++;
			break;
		}
	}
out:
	pthread_mutex_unlock(&ex_lock);
	free(tbytes);
	return nt;
}

static char *dup_arena(uint32_t at)
{
	return at ? strdup(rq.arena + at) : NULL;
}

/* The results into s (rq_lock held, the search thread done). -1: ENOMEM. */
static int results(struct snapshot *s)
{
	size_t k;

	s->chains = calloc(rq.ntargets ? rq.ntargets : 1, sizeof *s->chains);
	s->forward = calloc(rq.ntargets ? rq.ntargets : 1, sizeof *s->forward);
	if (!s->chains || !s->forward)
		return -1;
	for (k = 0; k < rq.ntargets; k++) {
		const struct out_chain *c = &rq.chains[k];
		struct snap_refchain *d = &s->chains[s->nchains];
		const struct out_forward *f = &rq.forward[k];

		if (c->nlinks) {
			d->links = calloc(c->nlinks, sizeof *d->links);
			if (!d->links)
				return -1;
			d->type = rq.targets[k].tindex;
			d->stack = rq.targets[k].stack;
			d->end = c->end;
			d->nlinks = c->nlinks;
			s->nchains++;
			for (uint32_t j = 0; j < c->nlinks; j++) {
				d->links[j].edge = dup_arena(c->links[j].edge);
				d->links[j].type = dup_arena(c->links[j].type);
			}
		}
		if (f->done) {
			struct snap_forward *g = &s->forward[s->nforward];
			uint32_t order[MAX_REFERENTS], n = 0;
			g->type = rq.targets[k].tindex;
			g->bytes = f->bytes;
			g->referents = calloc(f->n ? f->n : 1, sizeof *g->referents);
			if (!g->referents)
				return -1;
			s->nforward++;
			/* largest first */
			for (uint32_t j = 0; j < f->n; j++) {
				uint32_t at = n++;
				while (at && f->r[order[at - 1]].bytes < f->r[j].bytes) {
					order[at] = order[at - 1];
					at--;
				}
				order[at] = j;
			}
			for (uint32_t j = 0; j < n; j++) {
				g->referents[j].type = dup_arena(f->r[order[j]].name);
				g->referents[j].count = f->r[order[j]].count;
				g->referents[j].bytes = f->r[order[j]].bytes;
			}
			g->nreferents = n;
		}
	}
	return 0;
}

static void set_note(struct snapshot *s, uint32_t status, const char *note)
{
	s->refsearch.status = status;
	free(s->refsearch.note);
	s->refsearch.note = note && *note ? strdup(note) : NULL;
}

int mw_python_referrers(struct snapshot *s, uint64_t limit_ns, uint64_t max_objects)
{
	struct target t[MAX_TARGETS];
	uint64_t start = mono_ns(), deadline = start + limit_ns;
	struct timespec ts;
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	size_t n;
	int r = 0;

	mw_tls.guard++;
	s->has_refs = true;
	s->refsearch.limit_ns = limit_ns;
	s->refsearch.max_objects = max_objects;
	pthread_once(&rq_once, rq_init);
	if (mw_python_state(NULL) == MW_PY_NONE) {
		set_note(s, SNAP_REFS_UNAVAILABLE, "no CPython in this process");
		goto out;
	}
	if (mw_python_state(NULL) != MW_PY_ON || !mw_python_frames || !mw_py.gil_ensure) {
		set_note(s, SNAP_REFS_UNAVAILABLE, "Python objects are not sampled in this process now");
		goto out;
	}
	if (!mw_py.is_initialized() || mw_py.is_finalizing()) {
		set_note(s, SNAP_REFS_UNAVAILABLE, "the interpreter is finalizing");
		goto out;
	}
	look_up();
	if (!py.module_type || !py.dict_next) {
		set_note(s, SNAP_REFS_UNAVAILABLE, "the interpreter does not export what the search needs");
		goto out;
	}
	memset(t, 0, sizeof t);
	n = choose(s, t);
	if (!n) {
		set_note(s, SNAP_REFS_DONE, "no sampled live object to search from");
		goto out;
	}
	for (size_t k = 0; k < n; k++)
		if (!mw_py_safe_word((void *)(t[k].obj + OB_TYPE), &t[k].type))
			t[k].type = 0;
	pthread_mutex_lock(&rq_lock);
	if (rq.state != RQ_IDLE) {
		pthread_mutex_unlock(&rq_lock);
		set_note(s, SNAP_REFS_NO_GIL, "an earlier search still waits for the GIL");
		goto out;
	}
	if (!rq.arena) {
		rq.arena = map(ARENA_SIZE);
		if (!rq.arena) {
			pthread_mutex_unlock(&rq_lock);
			set_note(s, SNAP_REFS_UNAVAILABLE, "out of memory");
			goto out;
		}
	}
	{
		char *arena = rq.arena;
		memset(&rq, 0, sizeof rq);
		rq.arena = arena;
		rq.arena_used = 1;    /* offset 0 is "none" */
	}
	rq.state = RQ_WAITING;
	rq.deadline_ns = deadline;
	rq.max_objects = max_objects;
	rq.ntargets = n;
	memcpy(rq.targets, t, sizeof t);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(&th, &attr, search_main, NULL) != 0) {
		rq.state = RQ_IDLE;
		pthread_attr_destroy(&attr);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_mutex_unlock(&rq_lock);
		set_note(s, SNAP_REFS_UNAVAILABLE, "cannot start a thread");
		goto out;
	}
#ifdef __GLIBC__
	pthread_setname_np(th, "memwatch-refs");
#endif
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* the GIL, until the deadline */
	ts.tv_sec = (time_t)(deadline / 1000000000u);
	ts.tv_nsec = (long)(deadline % 1000000000u);
	while (rq.state == RQ_WAITING && mono_ns() < deadline)
		pthread_cond_timedwait(&rq_cond, &rq_lock, &ts);
	if (rq.state == RQ_WAITING) {
		rq.abandoned = true;
		pthread_mutex_unlock(&rq_lock);
		set_note(s, SNAP_REFS_NO_GIL, "the GIL was not had within the time limit");
		s->refsearch.pause_ns = 0;
		goto out;
	}
	/* the search ends by itself at the deadline; a last margin for the
	 * naming of what it found */
	ts.tv_sec += 2;
	while (rq.state == RQ_SEARCHING && mono_ns() < deadline + 2000000000ull)
		pthread_cond_timedwait(&rq_cond, &rq_lock, &ts);
	if (rq.state != RQ_DONE) {
		rq.abandoned = true;
		pthread_mutex_unlock(&rq_lock);
		set_note(s, SNAP_REFS_UNAVAILABLE, "the search did not end in time");
		goto out;
	}
	s->refsearch.pause_ns = rq.pause_ns;
	s->refsearch.visited = rq.visited;
	s->refsearch.tracked = rq.tracked;
	s->refsearch.passes = rq.passes;
	set_note(s, rq.status, rq.note);
	r = results(s);
	rq.state = RQ_IDLE;
	pthread_mutex_unlock(&rq_lock);
out:
	mw_tls.guard--;
	return r;
}

void mw_pyrefs_atfork_child(void)
{
	/* a search thread is not in the child */
	pthread_mutex_init(&rq_lock, NULL);
	pthread_mutex_init(&ex_lock, NULL);
	rq.state = RQ_IDLE;
}
