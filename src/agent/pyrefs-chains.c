/* pyrefs-chains.c: the referrer search's chains named (see pyrefs.c): each
 * target's path from its root, each link as the attribute, key, item or
 * local it is, with the type of the object it leads to. GIL held. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "pyrefs.h"
#include "snapshot.h"

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
void name_chain(struct search *se, size_t k, uint64_t deadline)
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
