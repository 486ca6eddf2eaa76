/* pyrefs-forward.c: the referrer search's forward view (see pyrefs.c): what
 * one object of each top type holds, its referents by type with their
 * count and size. GIL held. */
#include "config.h"

#include <string.h>

#include "agent.h"
#include "pyrefs.h"
#include "snapshot.h"

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
void forward_view(struct search *se, size_t k)
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
