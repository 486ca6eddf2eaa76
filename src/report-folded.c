/* report-folded.c: --format folded, the rows as folded stacks
 * ("outer;...;inner value") for flamegraph.pl, inferno and speedscope. */
#include "config.h"
#include "report-internal.h"
#include "util.h"

#include <inttypes.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------------------- */
/* Folded stacks: "outer;...;inner value", for flamegraph.pl, inferno and
 * speedscope. Inlined frames carry flamegraph.pl's "_[i]" annotation. */

void folded_name(FILE *f, struct report *r, const struct dframe *d)
{
	const char *p;
	size_t n;
	if (d->function && !strchr(d->function, ';')) {
		fputs(d->function, f);
	} else if (d->function) {
		/* ';' separates frames: none may be inside a name */
		for (p = d->function; *p; p += n) {
			n = strcspn(p, ";");
			fwrite(p, 1, n, f);
			if (p[n] == ';') {
				fputc(':', f);
				n++;
			}
		}
	} else if (d->gmod != SYM_NO_MODULE) {
		fprintf(f, "[%s+0x%" PRIx64 "]", symbolizer_module_name(r->z, d->gmod), d->offset);
	} else {
		fprintf(f, "[0x%" PRIx64 "]", d->offset);
	}
	if ((r->o->by == REPORT_BY_LINE || r->o->by == REPORT_BY_TYPE) && d->file)
		fprintf(f, " %s:%" PRIu32, base_name(d->file), d->line);
	if (d->inlined)
		fputs("_[i]", f);
}

/* Frames left out where the stacks a row merges differ, as a frame of folded
 * stacks and flame graphs: "[2-4 frames in libc.so.6]". */
void left_out_name(FILE *f, struct report *r, const struct gap *g)
{
	char b[96];
	describe_gap(r, g, b, sizeof b);
	fprintf(f, "[%s]", b);
}

/* By stack, each place's name is written once into a buffer, then copied from
 * there for every frame at that place (3.7 million of them for 100 000
 * stacks, a few thousand places). */
struct names {
	FILE *m;                      /* the names, one after another */
	char *buf;
	size_t len;
	struct by_place at;           /* offset << 24 | length + 1 */
};

/* The line being made: the names copied here and the line written at once
 * (a call of fwrite a frame cost a quarter of the whole report). */
struct line {
	char *p;
	size_t n, cap;
};

static void line_grow(struct line *l, size_t n)
{
	l->cap = (l->n + n) * 2 + 256;
	l->p = xrealloc(l->p, l->cap);
}

static inline void line_put(struct line *l, const char *s, size_t n)
{
	if (!n)
		return;     /* (nothing to copy, and no buffer yet perhaps) */
	if (l->n + n > l->cap)
		line_grow(l, n);
	memcpy(l->p + l->n, s, n);
	l->n += n;
}

static inline void line_putc(struct line *l, char ch)
{
	if (l->n + 1 > l->cap)
		line_grow(l, 1);
	l->p[l->n++] = ch;
}

static void line_flush(FILE *f, struct line *l)
{
	if (l->n)
		fwrite(l->p, 1, l->n, f);
	l->n = 0;
}

/* The name of the frame at place onto the line: d is that frame, NULL when
 * its place's name was made before. */
static void put_name(FILE *f, struct report *r, struct names *c, struct line *l, uint32_t place,
		     const struct dframe *d)
{
	uint64_t *slot = c->m ? place_slot(&c->at, place) : NULL, a = slot ? *slot : 0;

	if (!slot) {
		line_flush(f, l);
		folded_name(f, r, d);
		return;
	}
	if (!a) {
		size_t off = c->len;
		folded_name(c->m, r, d);
		if (fflush(c->m) != 0)
			abort();
		if (c->len - off >= 0xffffff) {
			/* a name of 16 MiB: written from there, then let go */
			line_flush(f, l);
			fwrite(c->buf + off, 1, c->len - off, f);
			if (fseek(c->m, (long)off, SEEK_SET) != 0 || fflush(c->m) != 0)
				abort();
			return;
		}
		a = *slot = (uint64_t)off << 24 | (c->len - off + 1);
	}
	line_put(l, c->buf + (a >> 24), (a & 0xffffff) - 1);
}

/* The rows v as folded stacks, outermost frame first. */
static void folded(FILE *f, struct report *r, struct row **v, size_t n, bool diff)
{
	struct names c = { NULL, NULL, 0, { NULL, 0 } };
	struct line l = { NULL, 0, 0 };
	size_t i, k, nd, plcap = 0, max = r->o->depth_set ? r->o->depth : 0;
	uint32_t *pl = NULL;
	struct dframe *d;
	char num[24], *p;
	uint64_t val;

	if (r->o->by == REPORT_BY_STACK) {
		c.m = open_memstream(&c.buf, &c.len);
		if (!c.m)
			abort();
		__fsetlocking(c.m, FSETLOCKING_BYCALLER);
	}
	for (i = 0; i < n; i++) {
		rows_prefetch(v, i, n);
		/* most rows by place alone: those of places named before */
		d = NULL;
		if (!c.m || !row_places(r, v[i], max, &pl, &plcap, &nd) || !places_known(&c.at, pl, nd))
			nd = row_frames(r, v[i], max, true, &d, NULL, NULL, NULL, 0);
		if (nd == 0) {
			free(d);
			continue;
		}
		for (k = nd; k-- > 0;) {
			put_name(f, r, &c, &l, d ? d[k].place : pl[k], d ? &d[k] : NULL);
			if (!k)
				break;
			line_putc(&l, ';');
			if (d && d[k - 1].after.lo) {
				/* every stack of the row has frames here, not
				 * the same: never a call that cannot be */
				line_flush(f, &l);
				left_out_name(f, r, &d[k - 1].after);
				line_putc(&l, ';');
			}
		}
		/* " value\n", the digits made here rather than by fprintf */
		val = diff ? (uint64_t)v[i]->growth : v[i]->val[0];
		p = num + sizeof num;
		*--p = '\n';
		do
			*--p = (char)('0' + val % 10);
		while (val /= 10);
		*--p = ' ';
		line_put(&l, p, (size_t)(num + sizeof num - p));
		line_flush(f, &l);
		free(d);
	}
	if (c.m)
		fclose(c.m);
	free(c.buf);
	free(l.p);
	free(pl);
	free(c.at.v);
}

/* The grown rows of a diff, or the live rows of a snapshot, as folded stacks. */
static int folded_write(FILE *f, struct report *r)
{
	struct row **v;
	size_t n;
	/* written by this thread alone, a name at a time: no lock per call
	 * (a third of the time of 100 000 stacks) */
	int locking = __fsetlocking(f, FSETLOCKING_BYCALLER);

	if (r->nin == 2)
		v = select_rows(r, pred_grown, cmp_growth_desc, r->o->top, &n);
	else
		v = select_rows(r, pred_live, cmp_live, r->o->top, &n);
	folded(f, r, v, n, r->nin == 2);
	__fsetlocking(f, locking);
	free(v);
	return 0;
}

const struct report_writer report_folded_writer = { "folded", folded_write, folded_write, true };
