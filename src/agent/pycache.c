/* pycache.c: CPython's type attribute cache, kept from holding sampled
 * names alive.
 *
 * From 3.10 on, _PyType_Lookup caches each (type, name) it looks up in a
 * table of 4 096 entries in the interpreter state, in the slot that the
 * type's version tag and the name's ADDRESS give, and the entry holds a
 * strong reference to the name until another lookup lands in its slot. Code
 * that makes its attribute names afresh at each call (getattr(obj, "x" + s),
 * _PyImport_GetModuleAttrString in datetime's timetuple) leaves one such str
 * in the table per call, and an unsampled one puts itself out again: its
 * memory goes back to pymalloc, the next name takes the same address, and so
 * the same slot, and replaces it. A sampled name does not: where sampled
 * blocks are malloc's (python.c, own_block) it has an address of its own, and
 * a slot no such name comes back to. It stays, standing for a sampling
 * interval of heap each (the formatdate loop of tests/run-python-typecache.sh
 * showed 245 MiB of "live heap" in a process of 13 MiB RSS).
 *
 * So every few sample points the table is swept, at the sample point itself
 * (pymalloc's caller holds the GIL): each entry whose name may be a sampled
 * block (the filter in front of the live-sample table), an exact str, not
 * interned, that nothing else holds (its reference count is the entry's),
 * is emptied as the interpreter empties its entries (version 0, no value,
 * the name replaced by None), and the name freed as a replaced one is. Any
 * entry may be emptied at any time without harm (the interpreter does the
 * same to all of them when a type changes): the next lookup of that name
 * walks the type's MRO again and fills it. Not PyType_ClearCache(), which
 * also resets the types' version tags.
 *
 * The table's offset in the interpreter state comes from each version's
 * headers (release and Py_DEBUG builds where they differ), and is checked
 * against the running interpreter before it is used: a new name looked up on
 * object must be found, with object's version tag, in the slot the hash
 * gives, holding one reference to it. 3.8 and 3.9 chose the slot by the
 * name's hash, which a sampled name shares with the unsampled ones. */
#include "config.h"

#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "agent.h"
#include "python.h"

#define TS_INTERP 16             /* offsetof(PyThreadState, interp) */
#define TP_VERSION_TAG 384       /* offsetof(PyTypeObject, tp_version_tag), 3.8 to 3.15 */
#define OB_TYPE 8                /* offsetof(PyObject, ob_type) */
#define STR_STATE 32             /* offsetof(PyASCIIObject, state), 3.10 to 3.15 */
#define STR_INTERNED 3u          /* state.interned: its first two bits */
#define TC_SIZE 4096             /* 1 << MCACHE_SIZE_EXP */
#define SWEEP_EVERY 4            /* sample points between sweeps */

struct tc_entry {                /* struct type_cache_entry (a GIL build) */
	uint32_t version;
	void *name;
	void *value;
};

static bool resolved, usable, active;
static size_t tc_at;             /* the table's offset in the interpreter state */
static unsigned points;          /* sample points since the last sweep */
static void *(*tstate_get)(void);
static void (*incref)(void *);
static void (*decref)(void *);
static void *(*lookup)(void *, void *);
static void *(*new_str)(const char *);
static int (*gil_held)(void);
static void *none, *str_type, *object_type;

static inline struct tc_entry *table(void)
{
	char *ts = tstate_get();
	char *interp = ts ? *(char **)(ts + TS_INTERP) : NULL;
	return interp ? (struct tc_entry *)(interp + tc_at) : NULL;
}

static inline uint32_t version_tag(const void *type)
{
	return *(const uint32_t *)((const char *)type + TP_VERSION_TAG);
}

/* The entry's name put out as the interpreter's own eviction does. */
static void empty(struct tc_entry *e)
{
	void *name = e->name;
	e->version = 0;
	e->value = NULL;
	incref(none);
	e->name = none;
	decref(name);
}

/* The candidate places of the table in each version's interpreter state:
 * the release build's, then the Py_DEBUG build's where it differs. */
static size_t candidates(unsigned long v, size_t at[2])
{
	switch (v >> 16) {
	case 0x030a: at[0] = 15216; return 1;
	case 0x030b: at[0] = 9056; return 1;
	case 0x030c: at[0] = 275392; at[1] = 275408; return 2;
	case 0x030d: at[0] = 84656; at[1] = 84672; return 2;
	case 0x030e: at[0] = 81928; at[1] = 81944; return 2;
	case 0x030f: at[0] = 81952; at[1] = 81968; return 2;
	}
	return 0;
}

/* With the GIL held: the table found at one of its places, by a new name
 * looked up on object. */
static bool find(void)
{
	size_t at[2], n = candidates(mw_py.version, at), i;
	bool found = false;
	void *name;

	if (!n || !(name = new_str("memwatch: a name for the type cache's check")))
		return false;
	lookup(object_type, name);
	for (i = 0; i < n && !found; i++) {
		uintptr_t h = (version_tag(object_type) ^ ((uintptr_t)name >> 3)) & (TC_SIZE - 1);
		uintptr_t w[2];
		struct tc_entry *e;
		tc_at = at[i];
		e = table();
		if (!e || !version_tag(object_type) ||
		    !mw_py_safe_word(&e[h], &w[0]) || !mw_py_safe_word(&e[h].name, &w[1]))
			continue;
		if ((uint32_t)w[0] != version_tag(object_type) || w[1] != (uintptr_t)name ||
		    *(const uint32_t *)name != 2)
			continue;
		empty(&e[h]);
		found = *(const uint32_t *)name == 1;
	}
	decref(name);
	return found;
}

static void resolve(void)
{
	resolved = true;
	if (mw_py.version < 0x030a0000 || mw_py.version >= 0x03100000)
		return;
	mw_loader_enter();
	tstate_get = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyThreadState_GetUnchecked");
	if (!tstate_get)
		tstate_get = (void *(*)(void))dlsym(RTLD_DEFAULT, "_PyThreadState_UncheckedGet");
	incref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_IncRef");
	decref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef");
	lookup = (void *(*)(void *, void *))dlsym(RTLD_DEFAULT, "_PyType_Lookup");
	new_str = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "PyUnicode_FromString");
	gil_held = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Check");
	none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
	object_type = dlsym(RTLD_DEFAULT, "PyBaseObject_Type");
	mw_loader_leave();
	str_type = (void *)mw_py.unicode_type;
	if (!tstate_get || !incref || !decref || !lookup || !new_str || !gil_held || !none ||
	    !object_type || !str_type)
		return;
	mw_tls.guard++;     /* the check's name is no sample */
	usable = find();
	mw_tls.guard--;
}

void mw_pycache_swap(bool on)
{
	if (on && !resolved)
		resolve();
	active = on && usable;
	points = 0;
}

static __attribute__((noinline)) void sweep(void)
{
	struct tc_entry *e;
	size_t i;

	points = 0;
	/* (an extension that allocates from the object domain without the
	 * GIL is wrong already; the cache is not touched then) */
	if (!gil_held() || !(e = table()) || mw_py.is_finalizing())
		return;
	for (i = 0; i < TC_SIZE; i++) {
		char *name = e[i].name;
		if (name == none || !name || !mw_maybe_sampled(name))
			continue;
		if (*(const uint32_t *)name != 1 || *(void **)(name + OB_TYPE) != str_type ||
		    *(const uint32_t *)(name + STR_STATE) & STR_INTERNED)
			continue;
		empty(&e[i]);
	}
}

/* At a sample point of the own wrappers, the GIL held. */
void mw_pycache_point(void)
{
	if (active && ++points >= SWEEP_EVERY && !mw_tls.guard)
		sweep();
}
