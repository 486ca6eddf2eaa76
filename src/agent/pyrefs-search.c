/* pyrefs-search.c: the referrer search itself (see pyrefs.c), run with the
 * GIL held on the search thread: from the targets backwards, level by level,
 * one pass over every object the collector tracks per level, each one's
 * tp_traverse called with a visit function of ours, until each target has a
 * root, nothing refers to the last level, or a bound is reached. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "pyrefs.h"
#include "snapshot.h"

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

/* The search itself: GIL held. */
void search_run(void)
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
