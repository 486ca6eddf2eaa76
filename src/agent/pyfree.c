/* pyfree.c: CPython's free lists, so that no object the interpreter recycles
 * through one keeps the sample, and the stack, of the code that first had its
 * memory.
 *
 * The interpreter keeps the objects of its commonest types when they die
 * (dicts, lists, tuples of each length up to 20, floats, the key tables of
 * small dicts, ...) and hands them out again to the next creation of the
 * same kind, without a call to its allocator. A sampled block taken that way
 * would keep the sample, and the stack, of the code that first had it: the
 * code that keeps it would never be named, and the code that dropped it would
 * be blamed for it. Neither half can be seen from outside the interpreter
 * where it happens (both are inside the type's own functions):
 *
 * - An object's own free list takes it only when it is exactly of the
 *   type (a check in every version's deallocator: Py_IS_TYPE(op,
 *   &PyDict_Type) and the like). The deallocators of those types are
 *   wrapped (the type's tp_dealloc slot, called through the type by every
 *   Py_DECREF). An object of exactly the type that must not be listed is
 *   given a copy of its type (the same slots, with the interpreter's own
 *   deallocator in tp_dealloc, which its trashcan compares against) for its
 *   last moments, so the deallocator gives it to tp_free, the allocator's
 *   free (die).
 * - Dicts, tuples and (to 3.13) lists are left on their lists where that
 *   costs no sample (light): one that may be a sample dies as above; any
 *   other goes to the deallocator, whose tp_free (wrapped too) says whether
 *   it was freed or listed. A listed one is counted against the thread's
 *   countdown in place of the creation that will take it unseen; when that
 *   count reaches a sample point the list is emptied through the
 *   interpreter's own constructors, held empty, and the point owed to the
 *   thread's next allocation of that size (agent.h, mw_owed_other), which
 *   is then that creation, allocated and sampled where it is made.
 *   Floats (freed by PyObject_Free itself, and listed without the
 *   deallocator from 3.11), 3.14's lists (freed by PyObject_GC_Del itself)
 *   and any type where the object domain is not pymalloc wrapped are kept
 *   empty: every death of exactly the type dies as above.
 * - The key tables of small dicts are no object: after a dict's
 *   deallocation their list is emptied, from the interpreter's own state
 *   (3.10 to 3.13: fields of the interpreter state; 3.14 and 3.15: a linked
 *   list, struct _Py_freelist, in the interpreter state's
 *   object_state.freelists, which is where a GIL build's _Py_freelists_GET
 *   finds it; at offsets taken from each version's headers, release and
 *   debug builds, and checked against the running interpreter before they
 *   are used), through the function the interpreter exports to
 *   clear it (3.8), or (3.9, whose static variables are neither exported nor
 *   cleared by an exported function) at the addresses its symbol table gives
 *   them. A build without them (3.9 stripped) still recycles its key tables:
 *   said in the snapshot, see mw_pyfree_first_owner.
 *
 * The wrappers go in and out with the allocator's (python.c, with the GIL
 * held), and pass through for any object of another type (a subclass's
 * deallocator calls its base's). The agent is never unloaded, so a type that
 * copied a wrapper from its base meanwhile (a static type readied while
 * capture was on) keeps a valid deallocator and tp_free. A forked child
 * inherits the slots as they were, and the wrappers with them. */
#include "config.h"

#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "python.h"

#define TP_DEALLOC 48          /* offsetof(PyTypeObject, tp_dealloc), 3.8 to 3.15 */
#define TP_BASICSIZE 32        /* offsetof(PyTypeObject, tp_basicsize) */
#define TP_ITEMSIZE 40         /* offsetof(PyTypeObject, tp_itemsize) */
#define TP_FREE 320            /* offsetof(PyTypeObject, tp_free) */
#define OB_TYPE 8              /* offsetof(PyObject, ob_type) */
#define OB_SIZE 16             /* offsetof(PyVarObject, ob_size) */
#define GC_HEAD 16             /* sizeof(PyGC_Head): the block starts that far before */
#define TUPLE_LISTS 20         /* tuples of 1 to 20 items have lists (to 19 before 3.12) */
#define LIGHT_DEPTH 16         /* deaths nested deeper go to the allocator (see light) */
#define DRAIN_MAX 4096         /* more than any list holds (a tuple length's: 2 000) */
#define TS_INTERP 16           /* offsetof(PyThreadState, interp) */
#define DICT_KEYS 32           /* offsetof(PyDictObject, ma_keys) */
#define TP_NAME 24             /* offsetof(PyTypeObject, tp_name) */
#define TYPE_ROOM 512          /* more than sizeof(PyTypeObject): 408 to 3.11, 416 to 3.14, 424 */

typedef void destructor_fn(void *);

enum { FL_DICT, FL_LIST, FL_TUPLE, FL_FLOAT, FL_TYPES };

struct fl_type {
	const char *sym;       /* the exported type object */
	const char *name;      /* its tp_name */
	void *type;            /* its address */
	destructor_fn *orig;   /* the interpreter's deallocator */
	destructor_fn *wrap;
	bool can_light;        /* its deallocator calls tp_free (PyObject_GC_Del) for
			        * what it does not list */
	bool light;            /* listed and charged (see light), not kept out */
	size_t charge[TUPLE_LISTS + 1];   /* what one counts for (a tuple: by length) */
	_Alignas(64) unsigned char clone[TYPE_ROOM];
};

static void w_dict(void *op);
static void w_list(void *op);
static void w_tuple(void *op);
static void w_float(void *op);

static struct fl_type fl[FL_TYPES] = {
	[FL_DICT] = { .sym = "PyDict_Type", .name = "dict", .wrap = w_dict },
	[FL_LIST] = { .sym = "PyList_Type", .name = "list", .wrap = w_list },
	[FL_TUPLE] = { .sym = "PyTuple_Type", .name = "tuple", .wrap = w_tuple },
	[FL_FLOAT] = { .sym = "PyFloat_Type", .name = "float", .wrap = w_float },
};

/* The constructors that take from each list, and the error state's keepers
 * (a death may come while an exception is being raised). */
static void *(*mk_dict)(void);
static void *(*mk_list)(intptr_t);
static void *(*mk_tuple)(intptr_t);
static void (*py_decref)(void *);
static void (*err_fetch)(void **, void **, void **);
static void (*err_restore)(void *, void *, void *);

static bool resolved;          /* looked up (once) */
static bool usable;            /* the types found and copied */
static bool patched;           /* the slots hold the wrappers */
static unsigned long version;

/* The key tables' list: in the interpreter state (keys_at: its array,
 * keys_n: its count; from 3.14 its head and count), or the exported
 * function that clears it (3.8). */
static size_t keys_at, keys_n;
static bool keys_linked;       /* 3.14 on: a list linked through each table's first word */
static bool keys_static;       /* 3.9: keys_at and keys_n are addresses */
static bool keys_checked;      /* the offsets were found right */
static bool keys_uncovered;    /* the running version's key tables stay recycled */
static void *(*unchecked_tstate)(void);
static void (*keys_free)(void *);
static destructor_fn *gc_del;      /* PyObject_GC_Del */
static int (*clear_dict_3_8)(void);
static int (*clear_3_8[3])(void);   /* 3.8's lists of tuples, lists, floats */

static inline void **ob_type(void *op)
{
	return (void **)((char *)op + OB_TYPE);
}

static inline destructor_fn **slot(void *type)
{
	return (destructor_fn **)((char *)type + TP_DEALLOC);
}

static inline destructor_fn **free_slot(void *type)
{
	return (destructor_fn **)((char *)type + TP_FREE);
}

/* The dying object of exactly this type goes to the allocator, not the list. */
static inline void die(struct fl_type *t, void *op)
{
	void **ty = ob_type(op);
	if (*ty == t->type)
		*ty = t->clone;
	t->orig(op);
}

static void drain_keys(void)
{
	char *ts;
	uintptr_t origin = 0;   /* the interpreter state, or 0 (3.9: addresses) */
	void **items;
	int *n;

	if (clear_dict_3_8) {
		clear_dict_3_8();
		return;
	}
	if (!keys_checked)
		return;
	if (!keys_static) {
		ts = unchecked_tstate();
		if (!ts)
			return;
		origin = *(uintptr_t *)(ts + TS_INTERP);
		if (!origin)
			return;
	}
	if (keys_linked) {
		/* struct _Py_freelist: the head, then the count (-1 once the
		 * interpreter has finalized the list) */
		void **head = (void **)(origin + keys_at);
		intptr_t *count = (intptr_t *)(origin + keys_n);
		while (*count > 0 && *head) {
			void *k = *head;
			*head = *(void **)k;
			--*count;
			keys_free(k);
		}
		return;
	}
	n = (int *)(origin + keys_n);
	items = (void **)(origin + keys_at);
	/* negative once the interpreter has finalized the list */
	while (*n > 0) {
		void *k = items[--*n];
		keys_free(k);
	}
}

/* Lists held empty (every death of the types to the allocator) from a
 * sample point's charge until the thread that charged it has allocated what
 * the point was owed to (hold_owner's owed is 0 again). With the GIL held. */
static bool hold;
static const struct mw_tls *hold_owner;
static const void *freed;      /* the last object a noted tp_free freed */

static inline bool holding(void)
{
	if (!hold)
		return false;
	if (hold_owner == &mw_tls && !mw_tls.owed) {
		hold = false;
		return false;
	}
	return true;
}

/* The tp_free of the light types while patched: PyObject_GC_Del, noted. */
static void noted_free(void *op)
{
	freed = op;
	gc_del(op);
}

/* Empty the list that an object of t (of len items: a tuple's list is by
 * length) would be taken from: objects are made until one comes from the
 * allocator, and each given back to the allocator (hold is up). The guard
 * keeps them out of the samples; the countdown at 0 sends each allocation to
 * the wrappers' slow path, where it is counted. */
static void drain(struct fl_type *t, intptr_t len)
{
	void *et, *ev, *etb, *o;
	unsigned n, before;

	mw_tls.guard++;
	err_fetch(&et, &ev, &etb);
	for (n = 0; n < DRAIN_MAX; n++) {
		before = mw_py_guarded_allocs;
		o = t == &fl[FL_DICT] ? mk_dict() : t == &fl[FL_LIST] ? mk_list(0) : mk_tuple(len);
		if (!o)
			break;
		py_decref(o);
		if (mw_py_guarded_allocs != before)
			break;
	}
	err_restore(et, ev, etb);    /* (and drops an error of a failed one) */
	mw_tls.guard--;
}

const void *mw_pyfree_owed_type;
unsigned mw_pyfree_owed_gen;

/* The listed object's count reached a sample point: the list emptied and
 * held so, the point owed to the next allocation of the object's size. */
static __attribute__((noinline, cold)) void owe(struct fl_type *t, intptr_t len, size_t size)
{
	hold = true;
	hold_owner = &mw_tls;
	mw_pyfree_owed_type = t->type;
	mw_pyfree_owed_gen++;
	mw_tls.owed = (uint32_t)size;    /* (the drain's allocations, guarded, leave it) */
	mw_tls.owed_tries = MW_OWED_TRIES;
	mw_tls.left = 0;
	drain(t, len);
}

static unsigned depth;          /* light deaths under way (with the GIL held) */

/* A death of an object of exactly type t, where its list is left to the
 * interpreter: an object that may be a sample goes to the allocator, where
 * its record goes (die); any other is given to the interpreter's deallocator,
 * and if that listed it (its tp_free, noted, was not called) its size is
 * counted against the thread's countdown, for the creation that will take it
 * from the list unseen. When that count reaches a sample point, the list is
 * emptied and held empty until the point is reached, so that the next
 * creation comes from the allocator and is the sample. Deaths nested more
 * than LIGHT_DEPTH deep go to the allocator too: with the type's own
 * deallocator in the slot the trashcan, which bounds the C stack in deep
 * nests, skips this level. */
static inline __attribute__((always_inline)) void light(struct fl_type *t, void *op)
{
	intptr_t len = 0;
	size_t size;
	int e;

	if (t == &fl[FL_TUPLE]) {
		len = *(intptr_t *)((char *)op + OB_SIZE);
		size = (uintptr_t)len <= TUPLE_LISTS ? t->charge[len] : 0;
	} else {
		size = t->charge[0];
	}
	if (unlikely(!size || depth >= LIGHT_DEPTH || !__atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED) ||
		     holding() || mw_maybe_sampled((char *)op - GC_HEAD))) {
		die(t, op);
		return;
	}
	freed = NULL;
	depth++;
	t->orig(op);
	depth--;
	if (freed == op)
		return;
	/* (read after the call: the capture may have stopped during it, and then
	 * nothing is counted) */
	e = __atomic_load_n(&mw_hot.capturing, __ATOMIC_RELAXED);
	if (likely(!e || mw_unsampled(size, e)))
		return;
	owe(t, len, size);
}

static inline __attribute__((always_inline)) void dealloc(struct fl_type *t, void *op)
{
	if (t->light && *ob_type(op) == t->type)
		light(t, op);
	else
		die(t, op);
}

static void w_dict(void *op)
{
	dealloc(&fl[FL_DICT], op);
	drain_keys();
}

static void w_list(void *op)
{
	dealloc(&fl[FL_LIST], op);
}

static void w_tuple(void *op)
{
	dealloc(&fl[FL_TUPLE], op);
}

static void w_float(void *op)
{
	die(&fl[FL_FLOAT], op);
}

/* The offsets of the key tables' list (array, count) in the interpreter
 * state, from each version's headers (the x86-64 and aarch64 layouts are the
 * same): 3.10 and 3.11 in dict_state (3.11 between its dict list and count),
 * 3.12 after the dicts' list, 3.13 in object_state.freelists.dictkeys; 3.14
 * and 3.15 the same place, now a struct _Py_freelist (head, count), 8 bytes
 * further in a Py_DEBUG build (alt: the candidate, 0 or 1). */
static bool keys_offsets(unsigned long v, int alt)
{
	keys_linked = false;
	switch (v >> 16) {
	case 0x030a: keys_at = 11336; keys_n = 11976; break;
	case 0x030b: keys_at = 5168; keys_n = 5808; break;
	case 0x030c: keys_at = 271376; keys_n = 272020; break;
	case 0x030d: keys_at = 12504; keys_n = 13144; break;
	case 0x030e: keys_at = 11536; keys_linked = true; break;
	case 0x030f: keys_at = 11528; keys_linked = true; break;
	default: return false;
	}
	if (keys_linked) {
		keys_at += alt ? 8 : 0;
		keys_n = keys_at + sizeof(void *);
	} else if (alt) {
		return false;
	}
	return true;
}

static bool keys_check(void);

/* The key tables' list found at one of its version's candidate places. */
static bool keys_find(void)
{
	int alt;
	for (alt = 0; alt < 2; alt++)
		if (keys_offsets(version, alt) && keys_check())
			return true;
	return false;
}

/* The int at at, read as mw_py_safe_word reads (whole aligned words). */
static bool safe_int(const char *at, long *v)
{
	uintptr_t a = (uintptr_t)at, w;
	if (a & (sizeof(int) - 1) || !mw_py_safe_word((const void *)(a & ~(uintptr_t)7), &w))
		return false;
	*v = (int)(uint32_t)(w >> (8 * (a & 7)));
	return true;
}

/* The list's count at a: an int, or (a linked list) a Py_ssize_t. */
static bool count_at(uintptr_t a, long *v)
{
	uintptr_t w;
	if (!keys_linked)
		return safe_int((const char *)a, v);
	if (a & 7 || !mw_py_safe_word((const void *)a, &w))
		return false;
	*v = (long)w;
	return true;
}

/* 3.9 keeps the list in static variables of dictobject.c (keys_free_list,
 * numfreekeys), which a build that keeps its symbol table names there: found
 * in the file of the module that holds PyDict_Type. False without them (a
 * stripped build). */
static bool keys_symbols(void)
{
	Dl_info info;
	struct stat st;
	const ElfW(Ehdr) *eh;
	const ElfW(Shdr) *sh;
	const unsigned char *m = MAP_FAILED;
	uintptr_t base, list = 0, count = 0;
	bool in_dict = false;
	int fd;
	size_t i, j;

	mw_loader_enter();
	i = dladdr(fl[FL_DICT].type, &info);
	mw_loader_leave();
	if (!i || !info.dli_fname || !info.dli_fbase)
		return false;
	base = (uintptr_t)info.dli_fbase;
	fd = open(info.dli_fname[0] ? info.dli_fname : "/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof *eh)
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return false;
	eh = (const ElfW(Ehdr) *)m;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof *sh ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof *sh > (uint64_t)st.st_size)
		goto out;
	sh = (const ElfW(Shdr) *)(m + eh->e_shoff);
	for (i = 0; i < eh->e_shnum && !(list && count); i++) {
		const ElfW(Shdr) *str;
		const ElfW(Sym) *sym;
		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
			continue;
		str = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > (uint64_t)st.st_size ||
		    str->sh_offset + str->sh_size > (uint64_t)st.st_size || sh[i].sh_entsize != sizeof *sym)
			continue;
		sym = (const ElfW(Sym) *)(m + sh[i].sh_offset);
		for (j = 0; j < sh[i].sh_size / sizeof *sym && !(list && count); j++) {
			const char *name;
			if (sym[j].st_name >= str->sh_size)
				continue;
			name = (const char *)m + str->sh_offset + sym[j].st_name;
			if (!memchr(name, 0, str->sh_size - sym[j].st_name))
				continue;
			if (ELF64_ST_TYPE(sym[j].st_info) == STT_FILE) {
				in_dict = strcmp(name, "dictobject.c") == 0;
				continue;
			}
			if (!in_dict || ELF64_ST_TYPE(sym[j].st_info) != STT_OBJECT)
				continue;
			if (strcmp(name, "keys_free_list") == 0 && sym[j].st_size == 80 * sizeof(void *))
				list = base + sym[j].st_value;
			else if (strcmp(name, "numfreekeys") == 0 && sym[j].st_size == sizeof(int))
				count = base + sym[j].st_value;
		}
	}
out:
	munmap((void *)m, (size_t)st.st_size);
	if (!list || !count)
		return false;
	keys_at = list;
	keys_n = count;
	keys_static = true;
	return true;
}

/* With the GIL held: are the offsets right? A dict given one string key
 * takes a key table of the smallest size (from the list, if it holds one),
 * and its deallocation puts that table back on top of the list. */
static bool keys_check(void)
{
	void *(*dict_new)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyDict_New");
	int (*set)(void *, const char *, void *) =
		(int (*)(void *, const char *, void *))dlsym(RTLD_DEFAULT, "PyDict_SetItemString");
	void (*decref)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef");
	void *none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
	char *ts = unchecked_tstate ? unchecked_tstate() : NULL;
	uintptr_t origin = 0;
	long before, after;
	uintptr_t top;
	void *d, *keys;

	if (!dict_new || !set || !decref || !none || !ts || !keys_free)
		return false;
	if (!keys_static && !(origin = *(uintptr_t *)(ts + TS_INTERP)))
		return false;
	if (!count_at(origin + keys_n, &before))
		return false;
	if (before < 0 || before > 80)
		return false;
	d = dict_new();
	if (!d)
		return false;
	if (set(d, "memwatch", none) != 0) {
		decref(d);
		return false;
	}
	keys = *(void **)((char *)d + DICT_KEYS);
	/* the orig deallocator, not a wrapper: the table goes on the list */
	decref(d);
	if (!count_at(origin + keys_n, &after))
		return false;
	if (after != (before ? before : 1))
		return false;
	if (keys_linked)
		return mw_py_safe_word((const void *)(origin + keys_at), &top) && top == (uintptr_t)keys;
	return mw_py_safe_word((const void *)(origin + keys_at + (uintptr_t)(after - 1) * sizeof(void *)), &top) &&
	       top == (uintptr_t)keys;
}

/* The 8 bytes at a (a type's name), read in whole aligned words. */
static bool safe_name(uintptr_t a, char out[8])
{
	uintptr_t w[2], at = a & ~(uintptr_t)7;
	if (!mw_py_safe_word((const void *)at, &w[0]) || !mw_py_safe_word((const void *)(at + 8), &w[1]))
		return false;
	memcpy(out, (const char *)w + (a - at), 8);
	return true;
}

static void resolve(void)
{
	size_t room;
	int i;

	resolved = true;
	version = mw_py.version;
	if (version < 0x03080000 || version >= 0x03100000)
		return;     /* the layouts known here */
	room = version >= 0x030f0000 ? 424 : version >= 0x030c0000 ? 416 : 408;
	mw_loader_enter();
	for (i = 0; i < FL_TYPES; i++)
		fl[i].type = dlsym(RTLD_DEFAULT, fl[i].sym);
	unchecked_tstate = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyThreadState_GetUnchecked");
	if (!unchecked_tstate)
		unchecked_tstate = (void *(*)(void))dlsym(RTLD_DEFAULT, "_PyThreadState_UncheckedGet");
	keys_free = (void (*)(void *))dlsym(RTLD_DEFAULT, version >= 0x030d0000 ? "PyMem_Free" :
							 "PyObject_Free");
	if (version < 0x03090000) {
		clear_dict_3_8 = (int (*)(void))dlsym(RTLD_DEFAULT, "PyDict_ClearFreeList");
		clear_3_8[0] = (int (*)(void))dlsym(RTLD_DEFAULT, "PyTuple_ClearFreeList");
		clear_3_8[1] = (int (*)(void))dlsym(RTLD_DEFAULT, "PyList_ClearFreeList");
		clear_3_8[2] = (int (*)(void))dlsym(RTLD_DEFAULT, "PyFloat_ClearFreeList");
	}
	gc_del = dlsym(RTLD_DEFAULT, "PyObject_GC_Del");
	mk_dict = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyDict_New");
	mk_list = (void *(*)(intptr_t))dlsym(RTLD_DEFAULT, "PyList_New");
	mk_tuple = (void *(*)(intptr_t))dlsym(RTLD_DEFAULT, "PyTuple_New");
	py_decref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef");
	err_fetch = (void (*)(void **, void **, void **))dlsym(RTLD_DEFAULT, "PyErr_Fetch");
	err_restore = (void (*)(void *, void *, void *))dlsym(RTLD_DEFAULT, "PyErr_Restore");
	mw_loader_leave();
	for (i = 0; i < FL_TYPES; i++) {
		uintptr_t w, tt, nm;
		char name[8];
		/* the layout checked before a slot is written: a type object (a
		 * build with other object headers, Py_TRACE_REFS, has its slots
		 * elsewhere) named as expected */
		if (!fl[i].type || !mw_py_safe_word((char *)fl[i].type + room - sizeof w, &w) ||
		    !mw_py_safe_word((char *)fl[i].type + OB_TYPE, &tt) || tt != (uintptr_t)mw_py.type_type ||
		    !mw_py_safe_word((char *)fl[i].type + TP_NAME, &nm) || !safe_name(nm, name) ||
		    memcmp(name, fl[i].name, strlen(fl[i].name) + 1) != 0)
			return;
		memcpy(fl[i].clone, fl[i].type, room);
		fl[i].orig = *slot(fl[i].type);
		if (!fl[i].orig)
			return;
		*slot(fl[i].clone) = fl[i].orig;
		/* Listed and charged (light) where the deallocator hands what it
		 * does not list to tp_free, through the type (dict and tuple in
		 * every version read; list to 3.13: 3.14's calls
		 * PyObject_GC_Del itself), and that slot holds PyObject_GC_Del
		 * as expected. */
		fl[i].can_light = i != FL_FLOAT && gc_del && mk_dict && mk_list && mk_tuple &&
				  py_decref && err_fetch && err_restore &&
				  (i != FL_LIST || version < 0x030e0000) &&
				  *free_slot(fl[i].type) == gc_del;
	}
	usable = true;
}

/* What each object of t counts for in the countdown: as its allocation
 * does (python.c: the object domain as now wrapped), from its type's sizes
 * and the GC header before it. False when that domain is not counted. */
static bool charges(struct fl_type *t)
{
	intptr_t basic = *(intptr_t *)((char *)t->type + TP_BASICSIZE);
	intptr_t item = *(intptr_t *)((char *)t->type + TP_ITEMSIZE);
	size_t n;
	int len;

	memset(t->charge, 0, sizeof t->charge);
	if (t != &fl[FL_TUPLE])
		return (t->charge[0] = mw_py_obj_taken(GC_HEAD + (size_t)basic)) != 0;
	for (len = 1; len <= TUPLE_LISTS; len++) {
		n = ((size_t)(basic + item * len) + 7) & ~(size_t)7;
		if (!(t->charge[len] = mw_py_obj_taken(GC_HEAD + n)))
			return false;
	}
	return true;
}

void mw_pyfree_swap(bool on)
{
	int i;

	if (!resolved)
		resolve();
	if (!usable || on == patched)
		return;
	if (on && !keys_checked && !clear_dict_3_8 && !keys_uncovered) {
		keys_checked = version >> 16 == 0x0309 ? keys_symbols() && keys_check() : keys_find();
		keys_uncovered = !keys_checked;
	}
	if (on && clear_dict_3_8) {
		/* what the lists held before the capture (3.8 exports the
		 * functions that clear them; later versions do not) */
		clear_dict_3_8();
		for (i = 0; i < 3; i++)
			if (clear_3_8[i])
				clear_3_8[i]();
	}
	hold = false;
	for (i = 0; i < FL_TYPES; i++) {
		destructor_fn **s = slot(fl[i].type), **f = free_slot(fl[i].type);
		fl[i].light = on && fl[i].can_light && charges(&fl[i]);
		if (fl[i].light && *f == gc_del)
			*f = noted_free;
		else if (!fl[i].light && *f == noted_free)
			*f = gc_del;
		if (on && *s == fl[i].orig)
			*s = fl[i].wrap;
		else if (!on && *s == fl[i].wrap)
			*s = fl[i].orig;
	}
	patched = on;
}

/* Whether objects of the named type may still have been recycled by the
 * interpreter while capture was on (their sampled site may then be the first
 * owner of their memory, not the code that keeps them): the free-list types
 * whose list is not kept empty here (all four where the types could not be
 * wrapped; those of rarer objects, whose lists are left alone: 3.8's methods,
 * frames to 3.10, slices, contexts, async generators' parts, MemoryError);
 * floats from 3.11 on, whose arithmetic's specialized instructions put a
 * dying float on its list without its deallocator; from 3.14 on, ints (the
 * same, and their own list) and the objects of the lists struct
 * _Py_freelists added (iterators of lists, tuples and ranges, ranges,
 * builtin methods, bound methods, asyncio's future iterators; complex
 * numbers in 3.15); and blocks that are no object (type NULL) where the
 * small dicts' key tables are still recycled. */
bool mw_pyfree_first_owner(const char *type)
{
	static const char *const rare[] = {
		"builtin_function_or_method", "method", "frame", "slice", "Context",
		"async_generator_asend", "async_generator_wrapped_value", "MemoryError",
	};
	static const char *const since_3_14[] = {
		"int", "list_iterator", "tuple_iterator", "range", "range_iterator",
		"builtin_method", "_asyncio.FutureIter",
	};
	size_t i;

	if (!usable || !patched)
		return type ? strcmp(type, "dict") == 0 || strcmp(type, "list") == 0 ||
			      strcmp(type, "tuple") == 0 || strcmp(type, "float") == 0 : true;
	if (!type)
		return keys_uncovered;
	if (strcmp(type, "float") == 0)
		return version >= 0x030b0000;
	if (strcmp(type, "complex") == 0)
		return version >= 0x030f0000;
	for (i = 0; i < sizeof since_3_14 / sizeof since_3_14[0]; i++)
		if (strcmp(type, since_3_14[i]) == 0)
			return version >= 0x030e0000;
	for (i = 0; i < sizeof rare / sizeof rare[0]; i++)
		if (strcmp(type, rare[i]) == 0)
			return (i < 2 ? version < 0x03090000 || version >= 0x030e0000 :
				i == 2 ? version < 0x030b0000 : true);
	return false;
}

/* name (n bytes of room len) with the word that says so, where
 * mw_pyfree_first_owner says so: its new length. */
size_t mw_pyfree_mark(const char *type, char *name, size_t n, size_t len)
{
	static const char word[] = " recycled";
	if (!mw_pyfree_first_owner(type) || n + sizeof word > len)
		return n;
	memcpy(name + n, word, sizeof word);
	return n + sizeof word - 1;
}
