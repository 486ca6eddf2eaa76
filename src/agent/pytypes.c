/* pytypes.c: the type of the object in each live sampled block of a CPython
 * process, read at snapshot time into the snapshot's types section
 * (mw_python_types), and the reads pyrefs.c shares (a type's name, a str's
 * text, a safe word). Uses the layout pyframes.c found (pyframes.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "python.h"
#include "pyframes.h"
#include "pyversions.h"
#include "snapshot.h"

/* ------------------------------------------------------------------------- */
/* Objects by type: at snapshot time, the type of the object in each live
 * sampled block. An object allocated by the interpreter starts its block, or
 * follows its GC header (PyGC_Head, two words) when its type has
 * Py_TPFLAGS_HAVE_GC, and from 3.11 on the two words of a managed dict (3.12
 * on: a managed dict or weak reference list) before that
 * (_PyType_PreHeaderSize). A block is taken for an object of type T only when
 * the word at the offset where ob_type would be is T, T is a type (its own
 * type is PyType_Type or a metaclass, as PyType_Check tells), and T's flags put the
 * object at exactly that offset. Every word is read by safe reads: a block
 * may be freed while it is read, and nothing here holds the GIL. */

#define TP_NAME 24                   /* PyTypeObject.tp_name (3.8 to 3.15) */
#define TP_BASICSIZE 32              /* .tp_basicsize */
#define TP_FLAGS 168                 /* .tp_flags */
#define HT_QUALNAME_38 864           /* PyHeapTypeObject.ht_qualname: 3.8, 3.10, 3.11 */
#define HT_QUALNAME_39 856           /* 3.9 */
#define HT_QUALNAME_312 872          /* 3.12, 3.13 */
#define TP_DICT 264                  /* .tp_dict */
#define TPF_HEAPTYPE (1ul << 9)
#define TPF_READY (1ul << 12)
#define TPF_HAVE_GC (1ul << 14)
#define TPF_TYPE_SUBCLASS (1ul << 31)
#define TPF_MANAGED_DICT (1ul << 4)  /* 3.11 on */
#define TPF_MANAGED_WEAKREF (1ul << 3)   /* 3.12 on */
#define GC_HEAD 16                   /* sizeof (PyGC_Head) */
#define TYPE_CACHE 65536             /* words remembered per snapshot (a power of 2) */
#define NAME_MAX_LEN 200             /* of a module, or a qualified name */
/* Live samples read per snapshot, at most (a copy of 32 bytes each, and a
 * read of each block: about a second for a million); with every allocation
 * sampled, the others stay untyped. */
#define TYPES_MAX_SAMPLES ((size_t)1 << 20)

struct type_entry {
	uintptr_t type;      /* 0: empty */
	int32_t name;        /* index into the snapshot's types, -1: not a type */
	uint32_t presize;    /* where its objects start in their blocks */
	uint32_t basic;      /* its objects' fixed part (tp_basicsize), 0 unread */
	bool plain;          /* its metatype is type itself */
};

static size_t type_presize(unsigned long flags)
{
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;
	unsigned long pre = minor >= 12 ? TPF_MANAGED_DICT | TPF_MANAGED_WEAKREF : minor == 11 ? TPF_MANAGED_DICT : 0;
	return (flags & TPF_HAVE_GC ? GC_HEAD : 0) + (flags & pre ? 2 * sizeof(void *) : 0);
}

/* Is t a type object? As CPython's PyType_Check: its type is PyType_Type, or
 * a metaclass (a type with Py_TPFLAGS_TYPE_SUBCLASS, itself of type
 * PyType_Type or of another such metaclass). Its flags into *flags. */
static bool is_type(uintptr_t t, unsigned long *flags)
{
	const void *meta, *mm, *w;

	if (!t || (t & 7) || !pyf_safe_word((const char *)t + PY_OB_TYPE, &meta) || !meta)
		return false;
	if (meta != mw_py.type_type) {
		if (!pyf_safe_word((const char *)meta + TP_FLAGS, &w) || !((uintptr_t)w & TPF_TYPE_SUBCLASS) ||
		    !pyf_safe_word((const char *)meta + PY_OB_TYPE, &mm) || !mm)
			return false;
		if (mm != mw_py.type_type &&
		    (!pyf_safe_word((const char *)mm + TP_FLAGS, &w) || !((uintptr_t)w & TPF_TYPE_SUBCLASS)))
			return false;
	}
	if (!pyf_safe_word((const char *)t + TP_FLAGS, &w))
		return false;
	*flags = (unsigned long)(uintptr_t)w;
	return (*flags & TPF_READY) != 0;
}

/* The text of the str object at p (exactly a str, compact), read by a safe
 * copy: into buf, at most len bytes; 0 when it is not one or cannot be read
 * whole, or holds a control character. */
static size_t safe_str(const void *p, char *buf, size_t len)
{
	char copy[PY_STR_COMPACT_DATA + 4 * NAME_MAX_LEN], text[4 * NAME_MAX_LEN + 4];
	size_t got, n, k;
	int64_t sl;

	if (!p || !pyf_safe_type(p, mw_py.unicode_type))
		return 0;
	got = pyf_safe_read(p, copy, sizeof copy);
	if (got < pyf_lay.str_compact_data)
		return 0;
	/* pyf_read_str reads the copy: the length is bounded by what was copied;
	 * the text is read whole (4 bytes of UTF-8 a character at most), and
	 * one longer than len is none (cut short, it would be another name) */
	memcpy(&sl, copy + pyf_lay.str_length, sizeof sl);
	if (sl <= 0 || sl > NAME_MAX_LEN || (uint64_t)sl > (got - pyf_lay.str_compact_data) / 4)
		return 0;
	n = pyf_read_str(copy, text, 4 * (size_t)sl + 4);
	if (n < (size_t)sl || n > len)
		return 0;
	for (k = 0; k < n; k++)
		if ((unsigned char)text[k] < 0x20 || text[k] == 0x7f)
			return 0;
	memcpy(buf, text, n);
	return n;
}

/* Is the str object at p "__module__"? */
static bool is_module_key(const void *p)
{
	char b[16];
	return safe_str(p, b, sizeof b) == 10 && memcmp(b, "__module__", 10) == 0;
}

/* The hash of the str "__module__" in this process (seeded at its start),
 * learnt from the first class dict it is found in; 0 until then. Read and
 * written under the snapshot's lock. */
static int64_t module_hash;

/* The class's module: the str __module__ in the type's dict (tp_dict), read
 * without the GIL as the interpreter's own lookup finds it: the dict's keys
 * (a combined table: a type's dict is never split), their hash table of
 * indices (1, 2, 4 or 8 bytes each, by its size), then the entries they
 * point to (hash, key, value; 3.11 on, a table of str keys only: key,
 * value). Probed by the hash of "__module__" once it is known, else the
 * entries scanned in order (__module__ is the first a class statement sets).
 * Every read is a safe read, every loop bounded, every key compared by its
 * text; the dict's version tag and keys read again at the end must be those
 * it started with (the class not changed meanwhile). Into buf; 0 when any of
 * it is in doubt (the caller then names the type by tp_name). */
static size_t type_module(uintptr_t t, char *buf, size_t len)
{
	const void *dict, *keys, *values, *tag, *again, *value = NULL;
	unsigned char hd[48];
	uint64_t size, nentries, width, esize;
	uintptr_t indices, entries;
	int64_t h = module_hash;
	size_t n, i;

	if (!mw_py.dict_type || !pyf_lay.dict_keys ||
	    !pyf_safe_word((const char *)t + TP_DICT, &dict) || !dict || !pyf_safe_type(dict, mw_py.dict_type) ||
	    !pyf_safe_word((const char *)dict + PY_DICT_TAG, &tag) ||
	    !pyf_safe_word((const char *)dict + pyf_lay.dict_keys, &keys) || !keys ||
	    !pyf_safe_word((const char *)dict + pyf_lay.dict_values, &values) || values ||
	    pyf_safe_read(keys, hd, sizeof hd) != sizeof hd)
		return 0;
	if (pyf_lay.dk_log2) {
		unsigned l2 = hd[PY311_DK_LOG2_SIZE], l2i = hd[PY311_DK_LOG2_INDEX_BYTES];
		unsigned kind = hd[PY311_DK_KIND];
		if (l2 < 3 || l2 > 24 || l2i < l2 || l2i - l2 != (l2 < 8 ? 0u : l2 < 16 ? 1u : 2u) || kind > 1)
			return 0;
		size = (uint64_t)1 << l2;
		width = (uint64_t)1 << (l2i - l2);
		esize = kind == 1 ? 2 * sizeof(void *) : 3 * sizeof(void *);
		memcpy(&nentries, hd + PY311_DK_NENTRIES, sizeof nentries);
		indices = (uintptr_t)keys + PY311_DK_INDICES;
	} else {
		memcpy(&size, hd + PY38_DK_SIZE, sizeof size);
		if (size < 8 || size > ((uint64_t)1 << 24) || (size & (size - 1)))
			return 0;
		width = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		esize = 3 * sizeof(void *);
		memcpy(&nentries, hd + PY38_DK_NENTRIES, sizeof nentries);
		indices = (uintptr_t)keys + PY38_DK_INDICES;
	}
	/* at most two thirds of the table are usable entries */
	if (nentries > (size << 1) / 3)
		return 0;
	entries = indices + size * width;

	/* probed: bounded as the table is (a lookup ends at an empty slot) */
	if (h) {
		uint64_t perturb = (uint64_t)h, j = (uint64_t)h & (size - 1);
		for (i = 0; i < 64 && !value; i++) {
			/* an index lies within one aligned word (it is aligned to
			 * its width, at most 4 bytes), read whole as pyf_safe_word can */
			uintptr_t at = indices + j * width, e[3];
			const void *w;
			uint64_t v;
			int64_t ix;
			if (!pyf_safe_word((const char *)(at & ~(uintptr_t)7), &w))
				break;
			v = (uint64_t)(uintptr_t)w >> (8 * (at & 7));
			ix = width == 1 ? (int8_t)v : width == 2 ? (int16_t)v : (int32_t)v;
			if (ix == -1)
				break;
			if (ix >= 0 && (uint64_t)ix < nentries &&
			    pyf_safe_read((const char *)(entries + (uint64_t)ix * esize), e, esize) == esize) {
				/* general entries: hash, key, value; str keys only: key, value */
				bool general = esize == 3 * sizeof(void *);
				const void *k = (const void *)e[general ? 1 : 0];
				if ((!general || (int64_t)e[0] == h) && is_module_key(k))
					value = (const void *)e[general ? 2 : 1];
			}
			perturb >>= 5;
			j = (j * 5 + perturb + 1) & (size - 1);
		}
	}
	/* scanned: the first entries, in the order they were set */
	for (i = 0; !value && i < nentries && i < 1024; i += 32) {
		uintptr_t e[32 * 3];
		size_t m = nentries - i < 32 ? (size_t)(nentries - i) : 32, got, k;
		bool general = esize == 3 * sizeof(void *);
		got = pyf_safe_read((const char *)(entries + i * esize), e, m * esize) / esize;
		for (k = 0; k < got && !value; k++) {
			const uintptr_t *x = (const uintptr_t *)((const char *)e + k * esize);
			const void *key = (const void *)x[general ? 1 : 0];
			int64_t kh;
			/* a deleted entry has no key */
			if (!key || !is_module_key(key))
				continue;
			value = (const void *)x[general ? 2 : 1];
			if (general)
				kh = (int64_t)x[0];
			else if (!pyf_safe_word((const char *)key + PY_STR_HASH, (const void **)&kh))
				kh = 0;
			if (kh != 0 && kh != -1)
				module_hash = kh;
		}
		if (got < m)
			break;
	}
	if (!value || !(n = safe_str(value, buf, len)))
		return 0;
	/* the dict as it was when read */
	if (!pyf_safe_word((const char *)dict + PY_DICT_TAG, &again) || again != tag ||
	    !pyf_safe_word((const char *)dict + pyf_lay.dict_keys, &again) || again != keys ||
	    !pyf_safe_word((const char *)t + TP_DICT, &again) || again != dict)
		return 0;
	return n;
}

/* The name of type t: a class (a heap type) as module.qualname
 * ("__main__.Event", "app.models.Order.Line"; a class of module builtins by
 * its qualified name alone), any other type by its tp_name ("dict",
 * "collections.OrderedDict": a static type's tp_name holds its module), as
 * is a class whose module or qualified name cannot be read for sure. 0: t
 * is not taken for a type (a heap type whose ht_qualname is no str, a
 * tp_name that is not printable ASCII text). */
static size_t type_name(uintptr_t t, unsigned long flags, char *buf, size_t len)
{
	const void *p;
	size_t n, k, m;
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;

	if (flags & TPF_HEAPTYPE) {
		size_t off = mw_py_do.v ? mw_py_do.v->ht_qualname : minor >= 12 ? HT_QUALNAME_312 :
			     minor == 9 ? HT_QUALNAME_39 : HT_QUALNAME_38;
		char qual[NAME_MAX_LEN], mod[NAME_MAX_LEN];
		/* every class has its __qualname__, a str */
		if (!pyf_safe_word((const char *)t + off, &p) || !p || !pyf_safe_type(p, mw_py.unicode_type))
			return 0;
		if ((n = safe_str(p, qual, sizeof qual)) > 0 && (m = type_module(t, mod, sizeof mod)) > 0) {
			if (m == 8 && memcmp(mod, "builtins", 8) == 0)
				m = 0;
			if ((m ? m + 1 : 0) + n <= len) {
				memcpy(buf, mod, m);
				if (m)
					buf[m++] = '.';
				memcpy(buf + m, qual, n);
				return m + n;
			}
		}
	}
	if (!pyf_safe_word((const char *)t + TP_NAME, &p) || !p)
		return 0;
	n = pyf_safe_read(p, buf, len);
	for (k = 0; k < n && buf[k]; k++)
		if ((unsigned char)buf[k] < 0x20 || (unsigned char)buf[k] >= 0x7f)
			return 0;
	return k < n ? k : 0;
}

static int name_index(struct snapshot *s, const char *name, size_t n);

/* For pyrefs.c: the name of type t as the types section has it (0: not a
 * type), and the text of a str object (read directly: the caller holds the
 * GIL and the object). */
size_t mw_py_type_name(uintptr_t t, char *buf, size_t len)
{
	unsigned long flags;
	if (!is_type(t, &flags))
		return 0;
	return type_name(t, flags, buf, len);
}

size_t mw_py_read_str(const void *o, char *buf, size_t len)
{
	return pyf_read_str(o, buf, len);
}

bool mw_py_safe_word(const void *at, uintptr_t *w)
{
	const void *v;
	if (!pyf_safe_word(at, &v))
		return false;
	*w = (uintptr_t)v;
	return true;
}

/* The size of a str object: its header and its characters (as sys.getsizeof
 * counts a compact one); 0 when it is not compact. */
size_t mw_py_str_size(const void *o)
{
	uint32_t state = *(const uint32_t *)((const char *)o + pyf_lay.str_state);
	size_t n = (size_t)*(const int64_t *)((const char *)o + pyf_lay.str_length);
	if (!(state & (1u << 5)))
		return 0;
	if (state & (1u << 6))
		return pyf_lay.str_ascii_data + n + 1;
	return pyf_lay.str_compact_data + (n + 1) * ((state >> 2) & 7);
}

int mw_py_name_index(struct snapshot *s, const char *name, size_t n)
{
	return name_index(s, name, n);
}

static int name_index(struct snapshot *s, const char *name, size_t n)
{
	char **x;
	for (size_t i = 0; i < s->ntypes; i++)
		if (strlen(s->types[i]) == n && memcmp(s->types[i], name, n) == 0)
			return (int)i;
	x = realloc(s->types, (s->ntypes + 1) * sizeof *x);
	if (!x)
		return -2;
	s->types = x;
	x[s->ntypes] = strndup(name, n);
	if (!x[s->ntypes])
		return -2;
	return (int)s->ntypes++;
}

/* What t is, from the cache (direct-mapped: a word that is not a type, met
 * once, is soon overwritten; the few types stay) or read now. */
static struct type_entry *type_lookup(struct type_entry *cache, struct snapshot *s, uintptr_t t)
{
	static struct type_entry none = { 0, -1, 0, 0, false };
	size_t j = (size_t)((t >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (TYPE_CACHE - 1);
	unsigned long flags;
	char name[2 * NAME_MAX_LEN + 1];
	size_t n;

	if (t < 4096 || (t & 7))
		return &none;
	if (cache[j].type == t)
		return &cache[j];
	cache[j].type = t;
	cache[j].name = -1;
	cache[j].presize = 0;
	cache[j].basic = 0;
	cache[j].plain = false;
	if (is_type(t, &flags) && (n = type_name(t, flags, name, sizeof name)) > 0) {
		const void *meta;
		const void *basic;
		name[n < sizeof name ? n : sizeof name - 1] = '\0';
		n = mw_pyfree_mark(name, name, n, sizeof name);   /* still recycled? */
		cache[j].name = name_index(s, name, n);
		cache[j].presize = (uint32_t)type_presize(flags);
		if (pyf_safe_word((const char *)t + TP_BASICSIZE, &basic) &&
		    (uintptr_t)basic < ((uintptr_t)1 << 20))
			cache[j].basic = (uint32_t)(uintptr_t)basic;
		cache[j].plain = pyf_safe_word((const char *)t + PY_OB_TYPE, &meta) && meta == mw_py.type_type;
	}
	return &cache[j];
}

/* The type of the object in the block at a, of size bytes: its name index,
 * -1 none (not an object), -2 unreadable, -3 out of memory. The object's
 * address into *obj. An object must lie within the block: past its end (a
 * sampled block of CPython's is taken from malloc, 513 bytes for a list's
 * 16-byte item array) lie words of its memory's earlier use, which named
 * such blocks "int" or a type read from freed memory. */
static int block_type(struct type_entry *cache, struct snapshot *s, uintptr_t a, size_t size,
		      uintptr_t *obj)
{
	uintptr_t w[6];
	size_t got = pyf_safe_read((const char *)a, w, sizeof w), o;
	int pass;

	if (got < 2 * sizeof(void *))
		return -2;
	/* first the places whose word names a type of metatype type (nearly
	 * every type), then those of a metaclass: a GC object's header, read
	 * as an object, has a pointer to another header where its type would
	 * be, which the looser test of a metaclass passes now and then (a
	 * list's predecessor, whose type's reference count read as its name,
	 * was a type "(") */
	for (pass = 0; pass < 2; pass++)
		for (o = 0; o <= 32 && o + 2 * sizeof(void *) <= got && o + 2 * sizeof(void *) <= size;
		     o += GC_HEAD) {
			struct type_entry *e = type_lookup(cache, s, w[o / 8 + 1]);
			if (e->name == -2)
				return -3;
			if (e->name >= 0 && e->presize == o && o + e->basic <= size &&
			    e->plain == (pass == 0)) {
				*obj = a + o;
				return e->name;
			}
		}
	return -1;
}

struct typed_key {
	uint64_t key;        /* stack << 32 | type index + 1; 0 empty */
	size_t at;           /* index into s->typed */
};

int mw_python_types(struct snapshot *s)
{
	struct mw_live_copy *live = NULL;
	struct type_entry *cache = NULL;
	struct typed_key *idx = NULL;
	size_t n = 0, i, cap;
	int not_obj = -1, unread = -1, r = -1;

	if (!mw_python_frames || !mw_py.type_type || !mw_py.unicode_type)
		return 0;
	mw_tls.guard++;
	if (mw_heap_copy_live(&live, &n, TYPES_MAX_SAMPLES) < 0)
		goto out;
	for (cap = 64; cap < 2 * n + 2; cap *= 2)
		;
	cache = calloc(TYPE_CACHE, sizeof *cache);
	idx = calloc(cap, sizeof *idx);
	s->typed = calloc(n ? n : 1, sizeof *s->typed);
	if (!cache || !idx || !s->typed)
		goto out;
	if (!s->types && !(s->types = calloc(1, sizeof *s->types)))
		goto out;
	mw_pyrefs_note(s, SIZE_MAX, 0);
	for (i = 0; i < n; i++) {
		const struct mw_live_copy *l = &live[i];
		int t;
		uint64_t key;
		size_t j;

		if (l->stack >= s->nstacks || snap_stack_kind(s->stacks[l->stack].flags) != SNAP_KIND_MALLOC)
			continue;
		uintptr_t obj = 0;
		/* the block's size, from its weights (bytes and blocks, each
		 * that size times the same factor), with room for their rounding */
		size_t size = l->blocks_fx ? (size_t)((double)l->bytes * FX / (double)l->blocks_fx) + 8
					   : SIZE_MAX;
		t = block_type(cache, s, l->addr, size, &obj);
		if (t == -3)
			goto out;
		if (t == -1) {
			char no[32] = SNAP_TYPE_NOT_OBJECT;
			if (not_obj < 0 && (not_obj = name_index(s, no, mw_pyfree_mark(NULL, no, strlen(no), sizeof no))) < 0)
				goto out;
			t = not_obj;
		} else if (t == -2) {
			if (unread < 0 && (unread = name_index(s, SNAP_TYPE_UNREADABLE, strlen(SNAP_TYPE_UNREADABLE))) < 0)
				goto out;
			t = unread;
		}
		key = (uint64_t)l->stack << 32 | (uint32_t)(t + 1);
		for (j = (size_t)(mw_splitmix64(key) & (cap - 1)); idx[j].key && idx[j].key != key; j = (j + 1) & (cap - 1))
			;
		if (!idx[j].key) {
			idx[j].key = key;
			idx[j].at = s->ntyped;
			memset(&s->typed[s->ntyped], 0, sizeof s->typed[0]);
			s->typed[s->ntyped].stack = l->stack;
			s->typed[s->ntyped].type = (uint32_t)t;
			s->ntyped++;
		}
		if (obj && s->typed[idx[j].at].live_samples < 2)
			mw_pyrefs_note(s, idx[j].at, obj);
		s->typed[idx[j].at].live_samples++;
		s->typed[idx[j].at].live_bytes += l->bytes;
		/* blocks summed in fixed point, rounded below */
		s->typed[idx[j].at].live_blocks += l->blocks_fx;
	}
	for (i = 0; i < s->ntyped; i++)
		s->typed[i].live_blocks = (uint64_t)((double)s->typed[i].live_blocks / FX + 0.5);
	r = 0;
out:
	if (r < 0) {
		free(s->typed);
		s->typed = NULL;
		s->ntyped = 0;
	}
	if (!s->ntypes) {
		free(s->types);
		s->types = NULL;
	}
	free(live);
	free(cache);
	free(idx);
	mw_tls.guard--;
	return r;
}
