/* rows-types.c: what rows know of the CPython objects their stacks hold: their
 * parts (by type, the user's lines that allocated a type's objects; by stack,
 * the types of the objects it holds), the reference chains that keep them
 * alive and what one object of a type holds, from the last snapshot's
 * referrer search, and those chains and holdings as text. */
#include "config.h"
#include "report-internal.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Add figures to the part of w named name (file, line), created if new. */
void row_part_add(struct row *w, const char *name, const char *file, uint32_t line, int k,
		     uint64_t bytes, uint64_t blocks)
{
	struct row_part *p = NULL;
	for (uint32_t i = 0; i < w->nparts; i++) {
		struct row_part *q = &w->parts[i];
		if (q->line == line && !strcmp(q->name ? q->name : "", name ? name : "") &&
		    !strcmp(q->file ? q->file : "", file ? file : "")) {
			p = q;
			break;
		}
	}
	if (!p) {
		w->parts = xrealloc(w->parts, (w->nparts + 1) * sizeof *w->parts);
		p = &w->parts[w->nparts++];
		memset(p, 0, sizeof *p);
		p->name = name;
		p->file = file;
		p->line = line;
	}
	p->bytes[k] += bytes;
	p->blocks[k] += blocks;
}

static int cmp_part(const void *a, const void *b, void *arg)
{
	const struct row_part *x = a, *y = b;
	bool diff = *(const bool *)arg;
	int64_t vx = diff ? (int64_t)(x->bytes[1] - x->bytes[0]) : (int64_t)x->bytes[0];
	int64_t vy = diff ? (int64_t)(y->bytes[1] - y->bytes[0]) : (int64_t)y->bytes[0];
	return vx < vy ? 1 : vx > vy ? -1 : 0;
}

size_t row_top_parts(const struct report *r, const struct row *w, size_t max, struct row_part **out)
{
	bool diff = r->nin > 1;
	size_t n = w->nparts;

	*out = NULL;
	if (!n)
		return 0;
	*out = xmalloc(n * sizeof **out);
	memcpy(*out, w->parts, n * sizeof **out);
	qsort_r(*out, n, sizeof **out, cmp_part, &diff);
	/* in a diff, what grew; else what is there */
	while (n > 0 && (diff ? (int64_t)((*out)[n - 1].bytes[1] - (*out)[n - 1].bytes[0]) <= 0
			      : (*out)[n - 1].bytes[0] == 0))
		n--;
	return max && n > max ? max : n;
}

/* The chains of the last snapshot that start from a sample of stack si (and
 * of type index type, or any when UINT32_MAX), to row w. */
void row_chains(struct report *r, struct row *w, int k, size_t si, uint32_t type)
{
	const struct snapshot *s = r->in[k].s;
	if (k != r->nin - 1)
		return;
	for (size_t i = 0; i < s->nchains; i++) {
		const struct snap_refchain *c = &s->chains[i];
		if (c->stack != si || (type != UINT32_MAX && c->type != type))
			continue;
		w->chains = xrealloc(w->chains, (w->nchains + 1) * sizeof *w->chains);
		w->chains[w->nchains++] = c;
	}
	if (type == UINT32_MAX || w->forward)
		return;
	for (size_t i = 0; i < s->nforward; i++)
		if (s->forward[i].type == type) {
			w->forward = &s->forward[i];
			break;
		}
}

/* *s with a, b and c appended. */
static void cat3(char **s, const char *a, const char *b, const char *c)
{
	char *n = xasprintf("%s%s%s%s", *s, a, b, c);
	free(*s);
	*s = n;
}

char *report_chain_text(const struct snap_refchain *c)
{
	char *t = xstrdup(c->end == SNAP_CHAIN_NO_ROOT ? "<no tracked referrer> -> " :
			  c->end != SNAP_CHAIN_ROOT ? "<search stopped> ... " : "");

	for (uint32_t i = 0; i < c->nlinks; i++) {
		const struct snap_reflink *l = &c->links[i];
		const char *type = l->type ? l->type : "?";
		if (i)
			cat3(&t, " -> ", "", "");
		if (i + 1 == c->nlinks && i > 0)
			cat3(&t, l->edge ? l->edge : "", l->edge ? " -> " : "", type);
		else if (l->edge) {
			cat3(&t, l->edge, " (", type);
			cat3(&t, ")", "", "");
		}
		else
			cat3(&t, "(", type, ")");
	}
	return t;
}

size_t row_chain_texts(const struct row *w, size_t max, char ***out)
{
	size_t n = 0;
	*out = NULL;
	for (uint32_t i = 0; i < w->nchains && n < max; i++) {
		char *t = report_chain_text(w->chains[i]);
		bool dup = false;
		for (size_t j = 0; j < n && !dup; j++)
			dup = !strcmp((*out)[j], t);
		if (dup) {
			free(t);
			continue;
		}
		*out = xrealloc(*out, (n + 1) * sizeof **out);
		(*out)[n++] = t;
	}
	return n;
}

char *row_forward_text(const struct snap_forward *fw)
{
	char b[32], c[32];
	char *t = xasprintf("one holds (%s itself):", fmt_bytes(b, sizeof b, (double)fw->bytes));

	for (uint32_t i = 0; i < fw->nreferents && i < 4; i++) {
		const struct snap_referent *x = &fw->referents[i];
		char n[32];
		snprintf(n, sizeof n, "%" PRIu64, x->count);
		cat3(&t, i ? ", " : " ", n, " ");
		cat3(&t, x->type ? x->type : "?", " ", fmt_bytes(c, sizeof c, (double)x->bytes));
	}
	if (!fw->nreferents)
		cat3(&t, " no other object", "", "");
	return t;
}

/* By stack: the types of the objects stack si of input k holds, as parts of
 * its row. */
void row_types(struct report *r, struct row *w, int k, size_t si, size_t *tpos)
{
	const struct snapshot *s = r->in[k].s;
	while (*tpos < s->ntyped && s->typed[*tpos].stack < si)
		(*tpos)++;
	for (; *tpos < s->ntyped && s->typed[*tpos].stack == si; (*tpos)++) {
		const struct snap_typed *t = &s->typed[*tpos];
		row_part_add(w, s->types[t->type], NULL, 0, k, t->live_bytes, t->live_blocks);
	}
}
