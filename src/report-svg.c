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

/* The rows as a flame graph (src/flame.c): a snapshot's live bytes, or a
 * diff's growth and shrinkage; frames labelled as in folded stacks. */
void report_svg(FILE *f, struct report *r, bool inline_svg)
{
	bool diff = r->nin == 2;
	enum report_sample sample = r->o->sample;
	struct flame *fl = flame_new(diff);
	struct row **v[2];
	size_t n[2] = { 0, 0 }, i, k, nd, ne, e, len;
	struct flame_frame *fr = NULL;
	struct dframe *d;
	char *labels = NULL, *next, *title, *sub, b[32];
	FILE *m;
	/* by stack, a frame's label follows from its place: made and
	 * interned once a place */
	bool by_stack = r->o->by == REPORT_BY_STACK;
	struct by_place known = { NULL, 0 };   /* a place's label id + 1 */
	uint32_t *ids = NULL;         /* a row's frames' known labels (UINT32_MAX: none) */
	size_t aids = 0;

	if (diff) {
		v[0] = select_rows(r, pred_grown, cmp_growth_desc, r->o->top, &n[0]);
		v[1] = select_rows(r, pred_shrunk, cmp_growth_asc, r->o->top, &n[1]);
	} else {
		v[0] = select_rows(r, pred_live, cmp_live, r->o->top, &n[0]);
		v[1] = NULL;
	}
	/* the labels of a row, NUL-separated, made by the folded format's code */
	m = open_memstream(&labels, &len);
	if (!m)
		abort();
	/* written a character at a time, by this thread alone: no lock per call */
	__fsetlocking(m, FSETLOCKING_BYCALLER);
	for (int s = 0; s < 2; s++) {
		for (i = 0; i < n[s]; i++) {
			const struct row *w = v[s][i];
			if (i + 1 < n[s])
				row_prefetch(v[s][i + 1]);
			nd = row_frames(r, w, r->o->depth_set ? r->o->depth : 0, true, &d, NULL, NULL, NULL, 0);
			/* each row's labels over the last one's; where the stacks
			 * of a merged row differ, a box says frames are left out */
			fseek(m, 0, SEEK_SET);
			ne = 0;
			if (nd > aids) {
				aids = nd;
				ids = xrealloc(ids, aids * sizeof *ids);
			}
			for (k = 0; k < nd; k++) {
				uint64_t *kl = by_stack ? place_slot(&known, &d[k]) : NULL;
				ids[k] = kl && *kl ? (uint32_t)(*kl - 1) : UINT32_MAX;
				if (ids[k] == UINT32_MAX) {
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
			fr = xrealloc(fr, (ne ? ne : 1) * sizeof *fr);
			next = labels;
			for (k = 0, e = 0; k < nd; k++) {
				bool gap = d[k].after.lo && k + 1 < nd;
				for (int j = 0; j < 1 + gap; j++, e++) {
					struct flame_frame *x = &fr[ne - 1 - e];
					x->has_id = false;
					if (!j && ids[k] != UINT32_MAX) {
						x->has_id = true;
						x->label_id = ids[k];
						x->label = NULL;
					} else {
						x->label = next;
						next += strlen(next) + 1;
						uint64_t *slot;
						if (!j && by_stack && (slot = place_slot(&known, &d[k]))) {
							x->has_id = true;
							x->label_id = flame_label(fl, x->label);
							*slot = x->label_id + 1;
						}
					}
					x->file = j ? NULL : d[k].file;
					x->line = j ? 0 : d[k].line;
					x->module = j || d[k].gmod == SYM_NO_MODULE
							    ? NULL
							    : symbolizer_module_name(r->z, d[k].gmod);
					x->inlined = !j && d[k].inlined;
				}
			}
			flame_add(fl, fr, ne, diff ? w->val[0] : 0, diff ? w->val[1] : w->val[0],
				  diff ? sample_blocks(&w->f[0], sample) : 0,
				  sample_blocks(&w->f[diff ? 1 : 0], sample));
			free(d);
		}
	}
	fclose(m);
	free(labels);
	free(known.v);
	free(ids);
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
