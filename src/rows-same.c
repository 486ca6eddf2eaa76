/* rows-same.c: the stack at the same index of the previous input, when it
 * is the same stack. Two snapshots of one process list most of their stacks
 * in the same order (the agent's table changes little between them): where
 * the module tables are alike, a stack whose flags and frames are byte for
 * byte those of the previous input's stack of its index goes to that stack's
 * row, after one memcmp, instead of hashing its frames for rows-seen.c. The
 * stacks that are not are looked up there, in a table filled from the
 * previous input the first time one is needed. Only for inputs that all stay
 * in memory until the last is collected (report_load's): the previous
 * snapshot's frames are read again. */
#include "config.h"
#include "report-internal.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define NO_ROW UINT32_MAX

void rows_same_begin(struct report *r, int k, bool record)
{
	const struct input *in = &r->in[k];
	struct rows_same *p = &r->same;

	p->ok = p->row && p->nm == in->s->nmodules &&
		(!p->nm || memcmp(p->map, in->map, p->nm * sizeof *p->map) == 0);
	p->cur = NULL;
	if (record && in->s->nstacks) {
		p->cur = xmalloc(in->s->nstacks * sizeof *p->cur);
		for (size_t i = 0; i < in->s->nstacks; i++)
			p->cur[i] = NO_ROW;
	}
}

struct row *rows_same_get(struct report *r, size_t i, const struct snap_stack *st)
{
	const struct rows_same *p = &r->same;
	const struct snap_stack *q;

	if (!p->ok || i >= p->s->nstacks || p->row[i] == NO_ROW)
		return NULL;
	q = &p->s->stacks[i];
	if (q->flags != st->flags || q->nframes != st->nframes ||
	    (st->nframes && q->frames != st->frames &&
	     memcmp(q->frames, st->frames, st->nframes * sizeof *st->frames) != 0))
		return NULL;
	return &r->rows[p->row[i]];
}

void rows_same_put(struct report *r, size_t i, const struct row *w)
{
	if (r->same.cur)
		r->same.cur[i] = (uint32_t)(w - r->rows);
}

void rows_same_fill_seen(struct report *r)
{
	struct rows_same *p = &r->same;
	uint64_t h;

	if (!p->row || p->filled)
		return;
	p->filled = true;
	for (size_t i = 0; i < p->s->nstacks; i++) {
		const struct snap_stack *st = &p->s->stacks[i];
		if (p->row[i] == NO_ROW)
			continue;
		rows_seen_get(r, st, p->map, p->nm, NULL, &h);
		rows_seen_put(r, h, st, p->map, p->nm, NULL, &r->rows[p->row[i]]);
	}
}

void rows_same_end(struct report *r, int k)
{
	struct rows_same *p = &r->same;

	free(p->row);
	p->row = p->cur;
	p->cur = NULL;
	p->filled = false;
	p->ok = false;
	p->s = p->row ? r->in[k].s : NULL;
	p->map = p->row ? r->in[k].map : NULL;
	p->nm = p->row ? r->in[k].s->nmodules : 0;
}

void rows_same_release(struct report *r)
{
	free(r->same.row);
	free(r->same.cur);
	memset(&r->same, 0, sizeof r->same);
}
