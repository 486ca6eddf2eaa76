/* rows-frames.c: what the rows of a report need of each frame of a stack,
 * found once per address and kept by the symbolizer's location number: its
 * source frames (inlined ones expanded) as dframes, what their function names
 * are (the allocator's, the C++ standard library's, hidden by --hide), and the
 * number rows by stack are keyed by. A report of 100 000 stacks asks this of
 * every frame of every stack, mostly of the same few thousand addresses. */
#include "config.h"
#include "hashmap.h"
#include "report-internal.h"
#include "stdframes.h"
#include "util.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

/* Allocator entry points (as glibc names them in its symbol table and its
 * DWARF) and C++ operator new: frames of these at the top of a stack are the
 * allocation machinery, not the code that asked. */
bool allocator_function(const char *fn)
{
	static const char *const names[] = {
		"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
		"aligned_alloc", "memalign", "valloc", "pvalloc", "_int_malloc", "_int_realloc",
		"_int_memalign", "_mid_memalign", "tcache_init", "malloc_hook_ini",
		"realloc_hook_ini", "memalign_hook_ini", "__libc_malloc", "__libc_calloc",
		"__libc_realloc", "__libc_memalign", "__libc_valloc", "__libc_pvalloc",
		"__posix_memalign", "__libc_reallocarray", "__GI___libc_malloc",
		"__GI___libc_realloc", "__GI___libc_free", "sysmalloc",
	};
	size_t i;

	if (!fn)
		return false;
	if (strncmp(fn, "operator new", 12) == 0)
		return true;
	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(fn, names[i]) == 0)
			return true;
	return false;
}

/* What a function name is, found once per name (each rule is a few string
 * compares). */
struct fnclass {
	const char *fn;               /* the symbolizer's interned name */
	uint8_t flags;
};

static bool fnclass_eq(const void *entry, const void *key)
{
	return ((const struct fnclass *)entry)->fn == key;
}

static uint8_t name_flags(struct report *r, const char *fn)
{
	struct fnclass *e;
	bool added;

	if (!fn)
		return 0;
	if (!r->fnclass.esize)
		hashmap_init(&r->fnclass, sizeof(struct fnclass));
	e = hashmap_put(&r->fnclass, hash_mix64((uint64_t)(uintptr_t)fn), fnclass_eq, fn, &added);
	if (added) {
		bool hidden = r->o->has_hide && regexec(&r->o->hide, fn, 0, NULL, 0) == 0;
		e->fn = fn;
		e->flags = (uint8_t)(FN_KNOWN | (hidden ? FN_HIDE : 0) | (std_name(fn) ? FN_STD : 0) |
				     (allocator_function(fn) ? FN_ALLOC : 0));
	}
	return e->flags;
}

uint8_t fn_flags(struct report *r, const struct dframe *d)
{
	if (d->fl & FN_KNOWN)
		return d->fl;
	return name_flags(r, d->function);
}

/* Is the module a system library (under /lib or /usr/lib)? Code there is not
 * the user's: libc, libstdc++, the loader, the system's other libraries. */
static bool system_module(struct report *r, uint32_t gmod)
{
	const char *p;
	if (gmod == SYM_NO_MODULE)
		return false;
	/* a distribution's node keeps all of node in libnode: its frames
	 * are the program's own, as in the node binary of an official build */
	if (!strncmp(symbolizer_module_name(r->z, gmod), "libnode.so", 10))
		return false;
	p = symbolizer_module_path(r->z, gmod);
	return !strncmp(p, "/lib/", 5) || !strncmp(p, "/lib64/", 7) || !strncmp(p, "/usr/lib/", 9) ||
	       !strncmp(p, "/usr/lib64/", 11);
}

/* Is the module a CPython interpreter (python3.11, libpython3.11.so.1.0)? Its
 * frames are the interpreter's internals: where the agent read the Python
 * frames, those stand in the stack where the eval loop's frames were. */
static bool interpreter_module(struct report *r, uint32_t gmod)
{
	const char *n;
	if (gmod == SYM_NO_MODULE)
		return false;
	n = symbolizer_module_name(r->z, gmod);
	if (!strncmp(n, "lib", 3))
		n += 3;
	return !strncmp(n, "python", 6) && n[6] >= '2' && n[6] <= '9';
}

uint8_t mod_flags(struct report *r, uint32_t gmod)
{
	if (gmod == SYM_NO_MODULE)
		return 0;
	if (gmod >= r->nmodclass) {
		size_t n = symbolizer_nmodules(r->z) > gmod ? symbolizer_nmodules(r->z) : gmod + 1;
		r->modclass = xrealloc(r->modclass, n);
		memset(r->modclass + r->nmodclass, 0, n - r->nmodclass);
		r->nmodclass = n;
	}
	if (!r->modclass[gmod])
		r->modclass[gmod] =
			(uint8_t)(MOD_KNOWN | (system_module(r, gmod) ? MOD_SYSTEM : 0) |
				  (interpreter_module(r, gmod) ? MOD_INTERP : 0) |
				  (strstr(symbolizer_module_path(r->z, gmod), "libmemwatch-agent") ? MOD_AGENT : 0));
	return r->modclass[gmod];
}

/* The facts kept per source frame of a location. */
struct fx {
	uint32_t fid;                 /* its key number; 0: not yet known */
	uint8_t fl;                   /* its name's FN_ flags, FN_KNOWN set */
};

/* The facts of location loc (index i, in module gmod): r->fx from r->fxbase[i] - 1, made at
 * its first use. */
static struct fx *loc_facts_new(struct report *r, const struct sym_loc *loc, uint32_t i,
				uint32_t gmod);

static inline struct fx *loc_facts(struct report *r, const struct sym_loc *loc, uint32_t i,
				   uint32_t gmod)
{
	if (i < r->nfxbase && r->fxbase[i])
		return &r->fx[r->fxbase[i] - 1];
	return loc_facts_new(r, loc, i, gmod);
}

/* loc_facts the first time. */
static struct fx *loc_facts_new(struct report *r, const struct sym_loc *loc, uint32_t i,
				uint32_t gmod)
{
	struct fx *x;
	uint8_t m;

	if (i >= r->nfxbase) {
		size_t n = symbolizer_nlocs(r->z) > i ? symbolizer_nlocs(r->z) : (size_t)i + 1;
		n = n < 2 * r->nfxbase ? 2 * r->nfxbase : n;
		r->fxbase = xrealloc(r->fxbase, n * sizeof *r->fxbase);
		memset(r->fxbase + r->nfxbase, 0, (n - r->nfxbase) * sizeof *r->fxbase);
		r->nfxbase = n;
	}
	if (r->fxbase[i])
		return &r->fx[r->fxbase[i] - 1];
	if (r->nfx + loc->nframes > r->afx) {
		r->afx = (r->nfx + loc->nframes) * 2 + 256;
		r->fx = xrealloc(r->fx, r->afx * sizeof *r->fx);
	}
	r->fxbase[i] = (uint32_t)r->nfx + 1;
	x = &r->fx[r->nfx];
	r->nfx += loc->nframes;
	/* the location is in one module: what user_frame and hidden_below
	 * (rows.c) say of its frames follows from their names and it */
	m = mod_flags(r, gmod);
	for (uint32_t j = 0; j < loc->nframes; j++) {
		uint8_t f = name_flags(r, loc->frames[j].function);
		bool user = !(f & (FN_HIDE | FN_STD | FN_ALLOC)) && !(m & (MOD_SYSTEM | MOD_INTERP));
		bool hidden = (f & FN_HIDE) ||
			      (!r->o->all_frames && ((f & FN_STD) || (m & MOD_INTERP)));
		x[j].fid = 0;
		x[j].fl = (uint8_t)(f | FN_KNOWN | FX_SET | (user ? FX_USER : 0) | (hidden ? FX_HIDDEN : 0));
	}
	return x;
}

uint8_t frame_flags(struct report *r, const struct sym_loc *loc, uint32_t index, uint32_t gmod,
		    uint32_t j)
{
	return loc_facts(r, loc, index, gmod)[j].fl;
}

/* The last locations looked up, direct-mapped: a hit is a few compares here
 * rather than a call into the symbolizer. A location's frames never move;
 * the copy of its sym_loc is good until the entry is taken by another. */
#define RFRONT_BITS 12
struct rfront {
	uint64_t offset;
	uint32_t gmod;
	uint32_t index;               /* location number + 1; 0: empty */
	struct sym_loc loc;
	uint32_t fid;                 /* a location of one source frame: its key
				       * number (0: not yet known) and facts */
	uint8_t fl;
};

static const struct sym_loc *frame_loc_new(struct report *r, struct gframe g, uint32_t *index);

static inline const struct sym_loc *frame_loc_at(struct report *r, struct gframe g,
						 uint32_t *index)
{
	struct rfront *f;

	if (r->rfront) {
		f = &r->rfront[(g.offset * UINT64_C(0x9e3779b97f4a7c15) ^ g.gmod) >> (64 - RFRONT_BITS)];
		if (f->index && f->offset == g.offset && f->gmod == g.gmod) {
			*index = f->index - 1;
			return &f->loc;
		}
	}
	return frame_loc_new(r, g, index);
}

const struct sym_loc *frame_loc(struct report *r, struct gframe g, uint32_t *index)
{
	return frame_loc_at(r, g, index);
}

void frames_resolve(struct report *r, int i)
{
	const struct snapshot *s = r->in[i].s, *prev = i ? r->in[i - 1].s : NULL;
	const uint32_t *map = r->in[i].map;
	const struct snap_stack *last = NULL;
	for (size_t k = 0; k < s->nstacks; k++) {
		const struct snap_stack *st = &s->stacks[k];
		/* the frames the second shares with the first: done */
		if (prev && k < prev->nstacks && st->frames == prev->stacks[k].frames)
			continue;
		/* from the outermost in: a frame where the last stack has the
		 * same one (its callers, mostly) is done */
		for (uint32_t f = st->nframes, j = last ? last->nframes : 0; f-- > 0;) {
			const struct snap_frame *fr = &st->frames[f];
			struct gframe g;
			uint32_t index;
			if (j > 0 && (j--, last->frames[j].offset == fr->offset &&
					   last->frames[j].module == fr->module))
				continue;
			g.gmod = fr->module < s->nmodules ? map[fr->module] : SYM_NO_MODULE;
			g.offset = fr->offset;
			frame_loc_at(r, g, &index);
		}
		last = st;
	}
}

void frames_resolved(struct report *r)
{
	symbolizer_drop_debug(r->z);
}

/* frame_loc of a location not in the front cache. */
static const struct sym_loc *frame_loc_new(struct report *r, struct gframe g, uint32_t *index)
{
	struct rfront *f;
	const struct sym_loc *loc;

	if (!r->rfront)
		r->rfront = xcalloc((size_t)1 << RFRONT_BITS, sizeof *r->rfront);
	f = &r->rfront[(g.offset * UINT64_C(0x9e3779b97f4a7c15) ^ g.gmod) >> (64 - RFRONT_BITS)];
	loc = symbolizer_lookup(r->z, g.gmod, g.offset);
	*index = symbolizer_loc_index(r->z, loc);
	f->offset = g.offset;
	f->gmod = g.gmod;
	f->index = *index + 1;
	f->loc = *loc;
	f->fid = 0;
	return &f->loc;
}

/* Source frame j of location loc (number index, facts x) of frame g, as a
 * dframe, into o. */
static inline void dframe_fill(struct dframe *o, const struct report *r, const struct sym_loc *loc,
			       uint32_t index, uint32_t j, struct gframe g, const struct fx *x)
{
	const struct sym_frame *s = &loc->frames[j];
	memset(o, 0, sizeof *o);
	o->function = s->function;
	o->file = s->file;
	o->line = s->line;
	o->inlined = s->inlined;
	o->gmod = g.gmod;
	o->offset = g.offset;
	o->sub = j;
	o->loc = index + 1;
	o->fl = x[j].fl;
	o->place = (uint32_t)(x - r->fx) + j + 1;
}

struct dframe frame_dframe(struct report *r, const struct sym_loc *loc, uint32_t index,
			   uint32_t j, struct gframe g)
{
	struct dframe d;
	dframe_fill(&d, r, loc, index, j, g, loc_facts(r, loc, index, g.gmod));
	return d;
}

size_t expand_frames(struct report *r, const struct snap_frame *sf, const uint32_t *map,
		     size_t nm, uint32_t n, struct dframe **d, size_t *cap)
{
	/* in locals through the loop (see stack_key_ids) */
	struct dframe *out = *d;
	size_t room = *cap, k = 0;

	/* a frame is one source frame or more: room for one each at once, not
	 * doubled up to it (three reallocs a row, a tenth of a flame graph) */
	if (room < n) {
		room = n + n / 4;
		out = xrealloc(out, room * sizeof *out);
	}
	for (uint32_t i = 0; i < n; i++) {
		struct gframe g;
		const struct sym_loc *loc;
		const struct fx *x;
		uint32_t index;

		g.gmod = sf[i].module < nm ? map[sf[i].module] : SYM_NO_MODULE;
		g.offset = sf[i].offset;
		loc = frame_loc_at(r, g, &index);
		x = loc_facts(r, loc, index, g.gmod);
		if (k + loc->nframes > room) {
			room = room ? room * 2 : 16;
			if (room < k + loc->nframes)
				room = k + loc->nframes;
			out = xrealloc(out, room * sizeof *out);
		}
		for (uint32_t j = 0; j < loc->nframes; j++)
			dframe_fill(&out[k++], r, loc, index, j, g, x);
	}
	*d = out;
	*cap = room;
	return k;
}

size_t expand_places(struct report *r, const struct snap_frame *sf, const uint32_t *map,
		     size_t nm, uint32_t n, size_t max, uint32_t **pl, size_t *cap)
{
	uint32_t *out = *pl;
	size_t room = *cap, k = 0;

	if (room < n) {
		room = n + n / 4;
		out = xrealloc(out, room * sizeof *out);
	}
	for (uint32_t i = 0; i < n && (!max || k < max); i++) {
		struct gframe g;
		const struct sym_loc *loc;
		uint32_t index, place;

		g.gmod = sf[i].module < nm ? map[sf[i].module] : SYM_NO_MODULE;
		g.offset = sf[i].offset;
		loc = frame_loc_at(r, g, &index);
		place = (uint32_t)(loc_facts(r, loc, index, g.gmod) - r->fx) + 1;
		if (k + loc->nframes > room) {
			room = room * 2 > k + loc->nframes ? room * 2 : k + loc->nframes;
			out = xrealloc(out, room * sizeof *out);
		}
		for (uint32_t j = 0; j < loc->nframes && (!max || k < max); j++)
			out[k++] = place + j;
	}
	*pl = out;
	*cap = room;
	return k;
}

/* A frame as dframe_same knows it, numbered: rows by stack are keyed by the
 * numbers of their visible frames (4 bytes a frame, not the 30 of the
 * fields: 100 000 stacks of 40 frames). */
struct fid {
	const char *function, *file;
	uint64_t offset;
	uint32_t gmod, line, sub, id;
	uint8_t tag, inlined;
};

static bool fid_eq(const void *entry, const void *key)
{
	const struct fid *a = entry, *b = key;
	return a->tag == b->tag && a->function == b->function && a->file == b->file &&
	       a->line == b->line && a->inlined == b->inlined && a->gmod == b->gmod &&
	       a->offset == b->offset && a->sub == b->sub;
}

static uint32_t fid_of(struct report *r, const struct dframe *d)
{
	struct fid k, *e;
	uint64_t h;
	bool added;

	memset(&k, 0, sizeof k);
	k.function = d->function;
	if (d->function && d->file) {
		k.tag = 1;
		k.file = d->file;
		k.line = d->line;
		k.inlined = d->inlined;
	} else if (d->function && d->gmod == SYM_NO_MODULE) {
		k.tag = 2;
	} else {
		k.tag = 3;
		k.file = d->file;
		k.gmod = d->gmod;
		k.offset = d->offset;
		k.sub = d->sub;
	}
	h = hash_mix64((uint64_t)(uintptr_t)k.function ^ ((uint64_t)(uintptr_t)k.file << 1) ^
		       ((uint64_t)k.line << 40) ^ k.offset ^ ((uint64_t)k.gmod << 48) ^
		       ((uint64_t)k.sub << 56) ^ k.tag);
	if (!r->fids.esize)
		hashmap_init(&r->fids, sizeof(struct fid));
	e = hashmap_put(&r->fids, h, fid_eq, &k, &added);
	if (added) {
		*e = k;
		e->id = (uint32_t)r->fids.n;
	}
	return e->id;
}

/* The key number of source frame j of location loc (number index, facts x)
 * of frame g. */
static inline uint32_t loc_key_id(struct report *r, const struct sym_loc *loc, uint32_t index,
				  uint32_t j, struct gframe g)
{
	struct fx *x = &loc_facts(r, loc, index, g.gmod)[j];
	struct dframe d;

	if (!x->fid) {
		d = frame_dframe(r, loc, index, j, g);
		x->fid = fid_of(r, &d);
	}
	return x->fid;
}

static inline void push_id(uint32_t **ids, size_t *cap, size_t *k, uint32_t id)
{
	if (*k == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*ids = xrealloc(*ids, *cap * sizeof **ids);
	}
	(*ids)[(*k)++] = id;
}

/* Where stack_key_ids is in a stack. */
struct keywalk {
	bool head, all_std, one_module;
	uint32_t gmod0;
	size_t k, above;
};

/* The next source frame (facts fl, key number id, module gmod) of a stack. */
static inline void key_step(struct keywalk *w, uint32_t **ids, size_t *cap, uint8_t fl,
			    uint32_t id, uint32_t gmod)
{
	if (w->head) {
		if (!(fl & FX_HIDDEN))
			push_id(ids, cap, &w->k, id);
	} else if (fl & FX_USER) {
		w->head = true;
		w->k = 0;
		push_id(ids, cap, &w->k, id);
	} else {
		if (w->above == 0)
			w->gmod0 = gmod;
		w->all_std = w->all_std && (fl & FN_STD);
		w->one_module = w->one_module && gmod == w->gmod0 && w->gmod0 != SYM_NO_MODULE;
		if (w->above == 0 || !(fl & FX_HIDDEN))
			push_id(ids, cap, &w->k, id);
		w->above++;
	}
}

/* One pass over the frames: before the head is found, the frames visible
 * were there no head (the first, and those not hidden) are gathered, and the
 * frames so far are summed up as a gap; at the head, the gathered ones give
 * way to it. Most frames are of a location of one source frame seen before:
 * its facts and number are in the front cache's entry, one probe. */
size_t stack_key_ids(struct report *r, const struct snap_frame *sf, const uint32_t *map,
		     size_t nm, uint32_t n, uint32_t **ids, size_t *cap, struct gap *via)
{
	struct keywalk w = { false, true, true, SYM_NO_MODULE, 0, 0 };
	/* kept in locals through the loop, which the stores to the numbers
	 * would otherwise make reload at every frame */
	struct rfront *front = r->rfront;
	uint32_t *buf = *ids;
	size_t room = *cap;

	memset(via, 0, sizeof *via);
	for (uint32_t i = 0; i < n; i++) {
		struct gframe g;
		const struct sym_loc *loc;
		const struct fx *x;
		struct rfront *f;
		uint32_t index;

		g.gmod = sf[i].module < nm ? map[sf[i].module] : SYM_NO_MODULE;
		g.offset = sf[i].offset;
		if (front) {
			f = &front[(g.offset * UINT64_C(0x9e3779b97f4a7c15) ^ g.gmod) >> (64 - RFRONT_BITS)];
			if (f->fid && f->index && f->offset == g.offset && f->gmod == g.gmod) {
				key_step(&w, &buf, &room, f->fl, f->fid, g.gmod);
				continue;
			}
		}
		loc = frame_loc_at(r, g, &index);
		front = r->rfront;    /* (made by the first lookup) */
		for (uint32_t j = 0; j < loc->nframes; j++) {
			uint32_t id = loc_key_id(r, loc, index, j, g);
			x = loc_facts(r, loc, index, g.gmod);
			key_step(&w, &buf, &room, x[j].fl, id, g.gmod);
			if (loc->nframes == 1) {
				/* frame_loc_at left the location in the front cache */
				f = &front[(g.offset * UINT64_C(0x9e3779b97f4a7c15) ^ g.gmod) >>
					   (64 - RFRONT_BITS)];
				f->fl = x[j].fl;
				f->fid = id;
			}
		}
	}
	*ids = buf;
	*cap = room;
	if (w.head && w.above) {
		via->lo = via->hi = (uint32_t)w.above;
		via->what = w.all_std ? GAP_STD : w.one_module ? GAP_MODULE : GAP_LIBRARY;
		via->gmod = w.one_module ? w.gmod0 : SYM_NO_MODULE;
	}
	return w.k;
}

void frames_release(struct report *r)
{
	hashmap_release(&r->fnclass);
	hashmap_release(&r->fids);
	free(r->fx);
	free(r->fxbase);
	free(r->rfront);
	r->rfront = NULL;
	r->fx = NULL;
	r->fxbase = NULL;
	r->nfx = r->afx = r->nfxbase = 0;
}
