/* report-svg.c: --format svg, the rows as a flame graph (drawn by flame.c). */
#include "config.h"
#include "flame.h"
#include "report-internal.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

/* By stack, what a frame at a place becomes in the flame graph follows from
 * the place: made once a place, its label interned. */
struct place_frames {
	struct by_place at;           /* a place's index in v + 1 */
	struct flame_frame *v;
	size_t n, cap;
};

/* The flame graph's frame for the frame d, made and kept at its place when
 * d has one (the label in m, written over). NULL when it has no place. */
static const struct flame_frame *place_frame(struct flame *fl, struct report *r, FILE *m,
					     char **labels, struct place_frames *pf,
					     const struct dframe *d)
{
	uint64_t *slot = place_slot(&pf->at, d->place);
	struct flame_frame *x;

	if (!slot)
		return NULL;
	if (*slot)
		return &pf->v[*slot - 1];
	fseek(m, 0, SEEK_SET);
	folded_name(m, r, d);
	fputc('\0', m);
	fflush(m);
	if (pf->n == pf->cap) {
		pf->cap = pf->cap ? pf->cap * 2 : 256;
		pf->v = xrealloc(pf->v, pf->cap * sizeof *pf->v);
	}
	x = &pf->v[pf->n++];
	x->label = NULL;
	x->has_id = true;
	x->label_id = flame_label(fl, *labels);
	x->file = d->file;
	x->line = d->line;
	x->module = d->gmod == SYM_NO_MODULE ? NULL : symbolizer_module_name(r->z, d->gmod);
	x->inlined = d->inlined;
	*slot = pf->n;
	return x;
}

/* The rows as a flame graph (src/flame.c): a snapshot's live bytes, or a
 * diff's growth and shrinkage; frames labelled as in folded stacks. */
void report_svg(FILE *f, struct report *r, bool inline_svg)
{
	bool diff = r->nin == 2;
	enum report_sample sample = r->o->sample;
	struct flame *fl = flame_new(diff);
	struct row **v[2];
	size_t n[2] = { 0, 0 }, i, k, nd, ne, e, len, plcap = 0;
	size_t max = r->o->depth_set ? r->o->depth : 0;
	struct flame_frame *fr = NULL;
	struct dframe *d;
	char *labels = NULL, *next, *title, *sub, b[32];
	FILE *m;
	bool by_stack = r->o->by == REPORT_BY_STACK;
	struct place_frames pf = { { NULL, 0 }, NULL, 0, 0 };
	uint32_t *pl = NULL;

	if (diff) {
		v[0] = select_rows_in_place(r, pred_grown, cmp_growth_desc, r->o->top, &n[0]);
		v[1] = select_rows_in_place(r, pred_shrunk, cmp_growth_asc, r->o->top, &n[1]);
	} else {
		v[0] = select_rows_in_place(r, pred_live, cmp_live, r->o->top, &n[0]);
		v[1] = NULL;
	}
	/* labels made by the folded format's code, NUL-separated */
	m = open_memstream(&labels, &len);
	if (!m)
		abort();
	/* written a character at a time, by this thread alone: no lock per call */
	__fsetlocking(m, FSETLOCKING_BYCALLER);
	for (int s = 0; s < 2; s++) {
		for (i = 0; i < n[s]; i++) {
			const struct row *w = v[s][i];
			rows_prefetch(v[s], i, n[s]);
			if (by_stack && row_places(r, w, max, &pl, &plcap, &nd) &&
			    places_known(&pf.at, pl, nd)) {
				/* most rows: every frame's place seen before */
				fr = xrealloc(fr, (nd ? nd : 1) * sizeof *fr);
				for (k = 0; k < nd; k++)
					fr[nd - 1 - k] = pf.v[pf.at.v[pl[k]] - 1];
				ne = nd;
				goto add;
			}
			nd = row_frames(r, w, max, true, &d, NULL, NULL, NULL, 0);
			/* the frames of places first (own, past the row's frames
			 * in fr: at most a gap box after each but the last), each
			 * made over the labels; then the other labels, each row's
			 * over the last one's; where the stacks of a merged row
			 * differ, a box says frames are left out */
			fr = xrealloc(fr, (3 * nd + 1) * sizeof *fr);
			struct flame_frame *own = fr + 2 * nd;
			for (k = 0; k < nd; k++) {
				const struct flame_frame *x =
					by_stack ? place_frame(fl, r, m, &labels, &pf, &d[k]) : NULL;
				own[k].has_id = x != NULL;
				if (x)
					own[k] = *x;
			}
			fseek(m, 0, SEEK_SET);
			ne = 0;
			for (k = 0; k < nd; k++) {
				if (!own[k].has_id) {
					folded_name(m, r, &d[k]);
					fputc('\0', m);
				}
				ne++;
				if (d[k].after.lo && k + 1 < nd) {
					left_out_name(m, r, &d[k].after);
					fputc('\0', m);
					ne++;
				}
			}
			fflush(m);
			/* outermost first */
			next = labels;
			for (k = 0, e = 0; k < nd; k++) {
				bool gap = d[k].after.lo && k + 1 < nd;
				for (int j = 0; j < 1 + gap; j++, e++) {
					struct flame_frame *x = &fr[ne - 1 - e];
					if (!j && own[k].has_id) {
						*x = own[k];
						continue;
					}
					x->has_id = false;
					x->label = next;
					next += strlen(next) + 1;
					x->file = j ? NULL : d[k].file;
					x->line = j ? 0 : d[k].line;
					x->module = j || d[k].gmod == SYM_NO_MODULE
							    ? NULL
							    : symbolizer_module_name(r->z, d[k].gmod);
					x->inlined = !j && d[k].inlined;
				}
			}
			free(d);
add:
			flame_add(fl, fr, ne, diff ? w->val[0] : 0, diff ? w->val[1] : w->val[0],
				  diff ? sample_blocks(&w->f[0], sample) : 0,
				  sample_blocks(&w->f[diff ? 1 : 0], sample));
		}
	}
	fclose(m);
	free(labels);
	free(pf.at.v);
	free(pf.v);
	free(pl);
	if (sample != REPORT_SAMPLE_LIVE) {
		uint64_t t0 = sample_bytes(&r->in[0].total, sample);
		uint64_t t1 = diff ? sample_bytes(&r->in[1].total, sample) : t0;
		title = diff ? xasprintf("%s between %s and %s", sample_words(sample),
					 base_name(r->in[0].path), base_name(r->in[1].path))
			     : xasprintf("%s: %s", sample_words(sample), base_name(r->in[0].path));
		sub = xasprintf("%s %s (sampled estimate), pid %" PRId32 "; widths by bytes %s",
				fmt_bytes(b, sizeof b, (double)(diff ? t1 - t0 : t0)),
				sample == REPORT_SAMPLE_ALLOC ? "allocated" : "freed soon after allocation",
				r->in[0].s->pid, sample == REPORT_SAMPLE_ALLOC ? "allocated" : "temporary");
	} else if (diff) {
		title = xasprintf("memory growth: %s -> %s", base_name(r->in[0].path),
				  base_name(r->in[1].path));
		sub = xasprintf("%s of sampled heap; widths by bytes changed: red grew, blue shrank",
				fmt_signed(b, sizeof b, (int64_t)r->in[1].total.live_bytes -
								(int64_t)r->in[0].total.live_bytes));
	} else {
		title = xasprintf("live heap: %s", base_name(r->in[0].path));
		sub = xasprintf("%s live (sampled estimate), pid %" PRId32 "; widths by live bytes",
				fmt_bytes(b, sizeof b, (double)r->in[0].total.live_bytes), r->in[0].s->pid);
	}
	flame_write(fl, f, title, sub, inline_svg);
	free(title);
	free(sub);
	free(fr);
	free(v[0]);
	free(v[1]);
	flame_free(fl);
}


static int svg_write(FILE *f, struct report *r)
{
	report_svg(f, r, false);
	return 0;
}

const struct report_writer report_svg_writer = { "svg", svg_write, svg_write, true };
