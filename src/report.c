/* report.c: memwatch show (what one snapshot holds, by call stack) and memwatch
 * diff (what grew between two snapshots, by call stack), as a table for people,
 * folded stacks for flame graphs, JSON, or an SVG flame graph (src/flame.c).
 * Stacks are matched by (module build-id, offset) frames, never by raw
 * addresses, so snapshots of two runs of the same binaries diff cleanly
 * whatever their address layouts. */
#include "config.h"
#include "commands.h"
#include "flame.h"
#include "maps.h"
#include "pprof.h"
#include "report.h"
#include "snapshot.h"
#include "symbolize.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define JSON_VERSION 1

const char diff_usage[] =
	"  memwatch diff [options] BEFORE.snap AFTER.snap\n"
	"    what grew between two snapshots (of one run, or of two runs of the same\n"
	"    binaries), by call stack, largest growth first\n"
	"    -n, --top N            rows of growth and of shrinkage shown (default 10; 0: all)\n"
	"    -m, --min-bytes SIZE   leave out rows whose change is smaller than SIZE\n"
	"    -b, --by KIND          rows per stack (default), function or line\n"
	"    -d, --depth N          source frames shown per stack (default 5 in tables)\n"
	"    -F, --format FMT       table (default), folded (flame graphs), json, svg (a flame\n"
	"                           graph that opens in a browser), or pprof (a gzipped\n"
	"                           profile.proto for go tool pprof; needs -o or a\n"
	"                           redirection: it is not written to a terminal)\n"
	"    -D, --debug-dir DIR    look for debug files by build-id in DIR too (repeatable)\n"
	"    -o, --output FILE      write the report to FILE (a regular file is replaced\n"
	"                           atomically, a device or FIFO written as it is)\n"
	"        --hide REGEX       frames whose function matches are not the user's code\n"
	"        --focus REGEX      only stacks with a frame whose function or file matches\n"
	"        --kind KIND        malloc (heap blocks), mmap (the program's own anonymous\n"
	"                           mappings), brk (its own brk/sbrk growth), file (its\n"
	"                           mappings of files, memfd, shm) or all (default); rows\n"
	"                           of the last three say [mmap], [brk] or [file]\n"
	"        --all-frames       head rows with the innermost frame, not the user's own,\n"
	"                           and show a Python interpreter's own frames\n"
	"        --full-names       C++ names with their template arguments in tables\n"
	"        --details          every figure of both snapshots above the rows\n"
	"    -h, --help             this help\n";

const char show_usage[] =
	"  memwatch show [options] SNAPSHOT.snap\n"
	"    the live heap of one snapshot by call stack, largest first, and the\n"
	"    allocator's view of the process memory\n"
	"    -n, --top N            rows shown (default 10; 0: all)\n"
	"    -m, --min-bytes SIZE   leave out rows smaller than SIZE\n"
	"    -b, --by KIND          rows per stack (default), function or line\n"
	"    -d, --depth N          source frames shown per stack (default 5 in tables)\n"
	"    -F, --format FMT       table (default), folded (flame graphs), json, svg (a flame\n"
	"                           graph that opens in a browser), or pprof (a gzipped\n"
	"                           profile.proto for go tool pprof; needs -o or a\n"
	"                           redirection: it is not written to a terminal)\n"
	"    -D, --debug-dir DIR    look for debug files by build-id in DIR too (repeatable)\n"
	"    -o, --output FILE      write the report to FILE (a regular file is replaced\n"
	"                           atomically, a device or FIFO written as it is)\n"
	"    -E, --embed-symbols FILE  also write a copy of the snapshot with the symbols of\n"
	"                           its frames embedded, to report where its binaries are not\n"
	"        --hide REGEX       frames whose function matches are not the user's code\n"
	"        --focus REGEX      only stacks with a frame whose function or file matches\n"
	"        --kind KIND        malloc (heap blocks), mmap (the program's own anonymous\n"
	"                           mappings), brk (its own brk/sbrk growth), file (its\n"
	"                           mappings of files, memfd, shm) or all (default); rows\n"
	"                           of the last three say [mmap], [brk] or [file]\n"
	"        --all-frames       head rows with the innermost frame, not the user's own,\n"
	"                           and show a Python interpreter's own frames\n"
	"        --full-names       C++ names with their template arguments in tables\n"
	"        --details          every figure of the snapshot above the rows\n"
	"    -h, --help             this help\n";

enum by { BY_STACK, BY_FUNCTION, BY_LINE };
/* --kind: all, or one enum snap_kind plus one */
enum kind { KIND_ALL, KIND_MALLOC, KIND_MMAP, KIND_BRK, KIND_FILE };
enum format { FMT_TABLE, FMT_FOLDED, FMT_JSON, FMT_PPROF, FMT_SVG };

struct opts {
	unsigned long top;
	bool top_set;
	uint64_t min_bytes;
	enum by by;
	unsigned long depth;
	bool depth_set;
	enum format format;
	const char **dirs;
	size_t ndirs;
	const char *output;
	const char *embed;            /* show --embed-symbols FILE */
	bool all_frames;              /* rows headed by their innermost frame, not the user's */
	enum kind kind;               /* --kind: the stacks kept */
	bool full_names;              /* C++ names with their template arguments in tables */
	bool details;                 /* the long header: every figure of every snapshot */
	bool has_hide, has_focus;
	regex_t hide, focus;          /* --hide: frames that are not the user's; --focus: rows kept */
};

/* A frame in global terms: the symbolizer's module index and the offset. */
struct gframe {
	uint32_t gmod;
	uint64_t offset;
};

/* What is attributed to a row in one snapshot. */
struct figures {
	uint64_t live_bytes, live_blocks, live_samples, alloc_bytes, alloc_blocks;
	uint64_t live_stacks;         /* totals only: stacks holding live bytes */
	double live_var;              /* variance of the live_bytes estimate */
};

struct row {
	uint64_t hash;
	char *key;                    /* by function or line: what rows match on */
	size_t keylen;
	uint32_t seq;                 /* creation order: the last tie-break */
	/* the frames of the first contributing stack, after trimming: pointers
	 * into its snapshot (not copies: 100 000 stacks of 40 frames are big) */
	const struct snap_frame *sf;
	const uint32_t *map;          /* its snapshot's module map */
	size_t nmodules;
	uint32_t nframes;
	bool truncated;
	uint8_t kind;                 /* enum snap_kind of its stacks */
	struct figures f[2];          /* [0] before (or the only snapshot), [1] after */
	int64_t growth;               /* diff: f[1].live_bytes - f[0].live_bytes */
	double sd;                    /* standard error of what the row shows: its live
				       * bytes (show) or its growth (diff) */
	bool weak;                    /* within two standard errors of 0: as likely
				       * sampling noise as growth */
};

/* One snapshot being reported. */
struct input {
	const char *path;
	struct snapshot *s;
	uint32_t *map;                /* module index -> global module index */
	struct figures total;
};

struct report {
	struct opts *o;
	struct symbolizer *z;
	struct input in[2];
	int nin;
	struct row *rows;
	size_t nrows, arows;
	size_t *table;                /* open addressing: row index + 1, 0 empty */
	size_t ntable;
	char *kbuf;                   /* key being built */
	size_t klen, kcap;
};

/* A source frame ready to print. */
struct dframe {
	const char *function, *file;
	uint32_t line;
	bool inlined;
	uint32_t gmod;
	uint64_t offset;
};

/* --------------------------------------------------------------------------- */
/* Rows, keyed by stack, function or line. */

static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = UINT64_C(1469598103934665603);
	while (n--) {
		h ^= (unsigned char)*p++;
		h *= UINT64_C(1099511628211);
	}
	return h ^ (h >> 29);
}

static void key_reset(struct report *r)
{
	r->klen = 0;
}

static void key_add(struct report *r, const void *p, size_t n)
{
	if (r->klen + n > r->kcap) {
		r->kcap = (r->klen + n) * 2 + 64;
		r->kbuf = xrealloc(r->kbuf, r->kcap);
	}
	memcpy(r->kbuf + r->klen, p, n);
	r->klen += n;
}

static void key_str(struct report *r, const char *s)
{
	key_add(r, s ? s : "", (s ? strlen(s) : 0) + 1);
}

/* A frame into the key, field by field (the struct has padding). */
static void key_frame(struct report *r, const struct gframe *g)
{
	key_add(r, &g->gmod, sizeof g->gmod);
	key_add(r, &g->offset, sizeof g->offset);
}

/* Frame i of a stack in global terms. */
static struct gframe global_frame(const struct snap_frame *sf, const uint32_t *map,
				  size_t nmodules, uint32_t i)
{
	struct gframe g;
	g.gmod = sf[i].module < nmodules ? map[sf[i].module] : SYM_NO_MODULE;
	g.offset = sf[i].offset;
	return g;
}

static struct gframe row_frame(const struct row *w, uint32_t i)
{
	return global_frame(w->sf, w->map, w->nmodules, i);
}

/* A candidate row: a trimmed stack of one input, and the key built for it
 * (by function or line; by stack the frames are the key). */
struct cand {
	const struct snap_frame *sf;
	const uint32_t *map;
	size_t nmodules;
	uint32_t n;
	uint64_t hash;
	uint8_t kind;
};

/* Is c the row w: the same key, or by stack the same frames? */
static bool row_matches(const struct report *r, const struct row *w, const struct cand *c)
{
	uint32_t i;

	if (w->hash != c->hash || w->kind != c->kind)
		return false;
	if (r->o->by != BY_STACK || w->key)
		return w->key && w->keylen == r->klen && memcmp(w->key, r->kbuf, r->klen) == 0;
	if (w->nframes != c->n)
		return false;
	for (i = 0; i < c->n; i++) {
		struct gframe a = row_frame(w, i), b = global_frame(c->sf, c->map, c->nmodules, i);
		if (a.gmod != b.gmod || a.offset != b.offset)
			return false;
	}
	return true;
}

/* The row of candidate c, created if new. */
static struct row *row_get(struct report *r, const struct cand *c, bool keyed, bool truncated)
{
	size_t i, mask;
	struct row *w;

	if ((r->nrows + 1) * 2 > r->ntable) {
		size_t sz = r->ntable ? r->ntable * 2 : 1024, j;
		free(r->table);
		r->table = xcalloc(sz, sizeof *r->table);
		r->ntable = sz;
		for (j = 0; j < r->nrows; j++) {
			for (i = r->rows[j].hash & (sz - 1); r->table[i]; i = (i + 1) & (sz - 1))
				;
			r->table[i] = j + 1;
		}
	}
	mask = r->ntable - 1;
	for (i = c->hash & mask; r->table[i]; i = (i + 1) & mask) {
		w = &r->rows[r->table[i] - 1];
		if (row_matches(r, w, c))
			return w;
	}
	if (r->nrows == r->arows) {
		r->arows = r->arows ? r->arows * 2 : 256;
		r->rows = xrealloc(r->rows, r->arows * sizeof *r->rows);
	}
	r->table[i] = r->nrows + 1;
	w = &r->rows[r->nrows];
	memset(w, 0, sizeof *w);
	w->seq = (uint32_t)r->nrows++;
	w->hash = c->hash;
	if (keyed) {
		w->key = xmalloc(r->klen);
		memcpy(w->key, r->kbuf, r->klen);
		w->keylen = r->klen;
	}
	w->sf = c->sf;
	w->map = c->map;
	w->nmodules = c->nmodules;
	w->nframes = c->n;
	w->truncated = truncated;
	w->kind = c->kind;
	return w;
}

/* Allocator entry points (as glibc names them in its symbol table and its
 * DWARF) and C++ operator new: frames of these at the top of a stack are the
 * allocation machinery, not the code that asked. */
static bool allocator_function(const char *fn)
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

/* Should the frame at the top of a stack be trimmed: the agent's own, or the
 * allocator's? */
static bool trimmed_frame(struct report *r, const struct gframe *g)
{
	const struct sym_loc *loc;

	if (g->gmod != SYM_NO_MODULE &&
	    strstr(symbolizer_module_path(r->z, g->gmod), "libmemwatch-agent"))
		return true;
	loc = symbolizer_lookup(r->z, g->gmod, g->offset);
	return allocator_function(loc->frames[loc->nframes - 1].function);
}

/* A symbolized frame as a dframe. */
static struct dframe make_dframe(const struct sym_frame *sf, struct gframe g)
{
	struct dframe d = { sf->function, sf->file, sf->line, sf->inlined, g.gmod, g.offset };
	return d;
}

/* Is the module a system library (under /lib or /usr/lib)? Code there is not
 * the user's: libc, libstdc++, the loader, the system's other libraries. */
static bool system_module(struct report *r, uint32_t gmod)
{
	const char *p;
	if (gmod == SYM_NO_MODULE)
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

/* The qualified name in a demangled one, past the return type that names of
 * template functions carry ("void std::vector<…>::_M_realloc_insert<…>(…)"). */
static const char *qualified_name(const char *fn)
{
	const char *p, *start = fn;
	int depth = 0;

	for (p = fn; *p && !(*p == '(' && depth == 0); p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth > 0)
			depth--;
		else if (*p == ' ' && depth == 0 && strncmp(start, "operator", 8) != 0)
			start = p + 1;
	}
	return start;
}

/* A C++ standard library name: its templates are inlined into the caller. */
static bool std_name(const char *fn)
{
	const char *q;
	if (!fn)
		return false;
	q = qualified_name(fn);
	return !strncmp(q, "std::", 5) || !strncmp(q, "__gnu_cxx::", 11) ||
	       !strncmp(q, "__cxxabiv1::", 12) || !strncmp(q, "__cxa_", 6) ||
	       !strncmp(fn, "operator new", 12) || !strncmp(fn, "operator delete", 15);
}

static bool hidden_frame(const struct report *r, const struct dframe *d)
{
	return r->o->has_hide && d->function && regexec(&r->o->hide, d->function, 0, NULL, 0) == 0;
}

/* Is d a frame of the user's own code? Not: a frame --hide names, a frame of
 * the C++ standard library by name, one of the allocator, one in a system
 * library, or one of a CPython interpreter. A frame with no name outside the
 * system's libraries is the user's. */
static bool user_frame(struct report *r, const struct dframe *d)
{
	return !hidden_frame(r, d) && !std_name(d->function) && !allocator_function(d->function) &&
	       !system_module(r, d->gmod) && !interpreter_module(r, d->gmod);
}

/* Every source frame of a row's stack, inlined ones expanded, innermost first,
 * and the index of the first the tables show: the user's own (the innermost
 * when there is none, or with --all-frames). */
struct expanded {
	struct dframe *d;             /* caller frees */
	size_t n, head;
};

static void row_expand(struct report *r, const struct row *w, struct expanded *e, bool want_head)
{
	size_t cap = 0;
	uint32_t i, j;

	e->d = NULL;
	e->n = 0;
	for (i = 0; i < w->nframes; i++) {
		struct gframe g = row_frame(w, i);
		const struct sym_loc *loc = symbolizer_lookup(r->z, g.gmod, g.offset);
		for (j = 0; j < loc->nframes; j++) {
			if (e->n == cap) {
				cap = cap ? cap * 2 : 16;
				e->d = xrealloc(e->d, cap * sizeof *e->d);
			}
			e->d[e->n++] = make_dframe(&loc->frames[j], g);
		}
	}
	/* whole stacks (folded, flame graphs) need no head: the rule costs a few
	 * string compares per frame, a third of an SVG of 100 000 stacks */
	for (e->head = 0; want_head && !r->o->all_frames && e->head < e->n; e->head++)
		if (user_frame(r, &e->d[e->head]))
			break;
	if (e->head == e->n)
		e->head = 0;
}

/* The first frame of a stack (from frame top) that a keyed row (by function or
 * line) is grouped by: the user's own, as row_expand would find it. */
static struct dframe key_frame_of(struct report *r, const struct snap_frame *sf,
				  const uint32_t *map, size_t nm, uint32_t n)
{
	struct dframe first = { 0 };
	bool have = false;

	for (uint32_t i = 0; i < n; i++) {
		struct gframe g = global_frame(sf, map, nm, i);
		const struct sym_loc *loc = symbolizer_lookup(r->z, g.gmod, g.offset);
		for (uint32_t j = 0; j < loc->nframes; j++) {
			struct dframe d = make_dframe(&loc->frames[j], g);
			if (!have) {
				first = d;
				have = true;
			}
			if (r->o->all_frames || user_frame(r, &d))
				return d;
		}
	}
	return first;
}

/* What the head of a row skipped, in a few words: "via 5 std:: frames", "via 2
 * frames in libc.so.6", "via 3 library frames" ("" when nothing was). */
static void describe_skipped(struct report *r, const struct dframe *d, size_t n, char *buf,
			     size_t len)
{
	bool all_std = true, one_module = true;
	size_t i;

	buf[0] = '\0';
	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		all_std = all_std && std_name(d[i].function);
		one_module = one_module && d[i].gmod == d[0].gmod && d[0].gmod != SYM_NO_MODULE;
	}
	if (all_std)
		snprintf(buf, len, "via %zu std:: frame%s", n, n == 1 ? "" : "s");
	else if (one_module)
		snprintf(buf, len, "via %zu frame%s in %s", n, n == 1 ? "" : "s",
			 symbolizer_module_name(r->z, d[0].gmod));
	else
		snprintf(buf, len, "via %zu library frame%s", n, n == 1 ? "" : "s");
}

/* The source frames a row shows, into *out (caller frees): by stack, from its
 * head, at most max (0: all; with whole, every frame from the innermost); by
 * function or line, the one frame it is grouped by. *total: how many there are
 * from the head; via (vialen bytes, may be NULL): what the head skipped. */
static size_t row_frames(struct report *r, const struct row *w, size_t max, bool whole,
			 struct dframe **out, size_t *total, char *via, size_t vialen)
{
	struct expanded e;
	size_t from, n = 0, k;

	row_expand(r, w, &e, !whole || via || r->o->by != BY_STACK);
	from = whole ? 0 : e.head;
	if (via)
		describe_skipped(r, e.d, e.head, via, vialen);
	if (r->o->by != BY_STACK) {
		n = e.n ? 1 : 0;
		if (n) {
			e.d[0] = e.d[e.head];
			if (r->o->by == BY_FUNCTION && e.d[0].function) {
				e.d[0].file = NULL;
				e.d[0].line = 0;
				e.d[0].inlined = false;
			}
		}
		if (total)
			*total = n;
		*out = e.d;
		return n;
	}
	/* frames --hide names are left out below the head too, in tables, and
	 * so are the interpreter's own unless --all-frames */
	for (k = from; k < e.n; k++)
		if (whole || k == from ||
		    (!hidden_frame(r, &e.d[k]) && (r->o->all_frames || !interpreter_module(r, e.d[k].gmod))))
			e.d[n++] = e.d[k];
	if (total)
		*total = n;
	if (max && n > max)
		n = max;
	*out = e.d;
	return n;
}

/* The variance of a stack's live-bytes estimate under Poisson sampling at mean
 * rate R. With n samples of blocks of size s, each kept with p = 1 - e^(-s/R)
 * and weighted s/p, the estimate is E = n s/p and its variance n s^2 (1-p)/p^2
 * = E^2 e^(-s/R) / n: one sample of a small block is as likely noise as not,
 * while a block far larger than R is always sampled and carries no error. The
 * stack's mean block size stands for s (exact when its blocks are alike). */
static double stack_variance(const struct snap_stack *st, uint64_t rate)
{
	double e = (double)st->live_bytes, s;
	if (rate <= 1 || st->live_samples == 0 || st->live_blocks == 0)
		return 0;
	s = e / (double)st->live_blocks;
	return e * e * exp(-s / (double)rate) / (double)st->live_samples;
}

/* Add every stack of input k to the rows. */
static void collect(struct report *r, int k)
{
	struct input *in = &r->in[k];
	size_t i, nm = in->s->nmodules;

	for (i = 0; i < in->s->nstacks; i++) {
		const struct snap_stack *st = &in->s->stacks[i];
		uint32_t n = st->nframes, j, top = 0;
		struct cand c;
		struct gframe g;
		bool keyed = true;
		struct row *w;

		c.kind = (uint8_t)snap_stack_kind(st->flags);
		if (r->o->kind != KIND_ALL && c.kind + 1 != (int)r->o->kind)
			continue;

		/* only the frames that are trimmed, grouped by or printed are ever
		 * symbolized: a table of the top rows of 100 000 stacks looks up the
		 * tops of the stacks and the frames it shows, not every frame */
		while (top < n) {
			g = global_frame(st->frames, in->map, nm, top);
			if (!trimmed_frame(r, &g))
				break;
			top++;
		}
		if (top == n)
			top = 0;   /* nothing but allocator frames: keep them all */

		key_reset(r);
		if (n == 0) {
			key_str(r, "<no frames>");
		} else if (r->o->by == BY_STACK) {
			uint64_t h = UINT64_C(1469598103934665603);
			for (j = top; j < n; j++) {
				g = global_frame(st->frames, in->map, nm, j);
				h = (h ^ g.offset ^ ((uint64_t)g.gmod << 44)) * UINT64_C(0x100000001b3);
				h ^= h >> 31;
			}
			c.hash = h ^ c.kind;
			keyed = false;
		} else {
			struct dframe f = key_frame_of(r, st->frames + top, in->map, nm, n - top);
			if (!f.function || (r->o->by == BY_LINE && !f.file)) {
				/* nothing to group by but the address itself */
				g.gmod = f.gmod;
				g.offset = f.offset;
				key_frame(r, &g);
			} else {
				key_str(r, f.function);
				if (r->o->by == BY_LINE) {
					key_str(r, f.file);
					key_add(r, &f.line, sizeof f.line);
				}
			}
		}
		if (keyed) {
			key_add(r, &c.kind, sizeof c.kind);
			c.hash = hash_bytes(r->kbuf, r->klen);
		}
		c.sf = st->frames + top;
		c.map = in->map;
		c.nmodules = nm;
		c.n = n - top;
		w = row_get(r, &c, keyed, st->flags & SNAP_STACK_TRUNCATED);
		w->f[k].live_bytes += st->live_bytes;
		w->f[k].live_blocks += st->live_blocks;
		w->f[k].live_samples += st->live_samples;
		w->f[k].live_var += stack_variance(st, in->s->sample_rate);
		w->f[k].alloc_bytes += st->alloc_bytes;
		w->f[k].alloc_blocks += st->alloc_blocks;
		in->total.live_bytes += st->live_bytes;
		in->total.live_blocks += st->live_blocks;
		in->total.live_samples += st->live_samples;
		in->total.live_var += stack_variance(st, in->s->sample_rate);
		in->total.alloc_bytes += st->alloc_bytes;
		in->total.alloc_blocks += st->alloc_blocks;
		in->total.live_stacks += st->live_bytes > 0;
	}
}

/* --------------------------------------------------------------------------- */
/* Sorting and selecting rows. */

/* A row's change and its uncertainty, once every snapshot is collected. In a
 * diff the two estimates are taken as independent (they are, across runs;
 * within one run they share samples, and the error is smaller than said). */
static void row_finish(struct row *w, bool diff)
{
	double v;
	w->growth = (int64_t)w->f[1].live_bytes - (int64_t)w->f[0].live_bytes;
	v = w->f[0].live_var + (diff ? w->f[1].live_var : 0);
	w->sd = sqrt(v);
	w->weak = fabs(diff ? (double)w->growth : (double)w->f[0].live_bytes) <= 2 * w->sd;
}

/* Rows with the evidence of enough samples come before the weak ones. */
static int cmp_weak(const struct row *a, const struct row *b)
{
	return a->weak == b->weak ? 0 : a->weak ? 1 : -1;
}

static int cmp_seq(const struct row *a, const struct row *b)
{
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_live(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa, *b = *(const struct row *const *)pb;
	if (cmp_weak(a, b))
		return cmp_weak(a, b);
	if (a->f[0].live_bytes != b->f[0].live_bytes)
		return a->f[0].live_bytes > b->f[0].live_bytes ? -1 : 1;
	return cmp_seq(a, b);
}

static int cmp_growth_desc(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa, *b = *(const struct row *const *)pb;
	if (cmp_weak(a, b))
		return cmp_weak(a, b);
	if (a->growth != b->growth)
		return a->growth > b->growth ? -1 : 1;
	return cmp_seq(a, b);
}

static int cmp_growth_asc(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa, *b = *(const struct row *const *)pb;
	if (cmp_weak(a, b))
		return cmp_weak(a, b);
	if (a->growth != b->growth)
		return a->growth < b->growth ? -1 : 1;
	return cmp_seq(a, b);
}

/* Rows passing pred, sorted by cmp, at most limit (0: all). Caller frees. */
static struct row **select_rows(struct report *r, bool (*pred)(const struct report *,
							       const struct row *),
				int (*cmp)(const void *, const void *), size_t limit, size_t *n)
{
	struct row **v = xmalloc((r->nrows ? r->nrows : 1) * sizeof *v);
	size_t i, k = 0;

	for (i = 0; i < r->nrows; i++)
		if (pred(r, &r->rows[i]))
			v[k++] = &r->rows[i];
	qsort(v, k, sizeof *v, cmp);
	if (limit && k > limit)
		k = limit;
	*n = k;
	return v;
}

/* --focus: does some frame of the row's stack (its function or file) match? */
static bool focused(const struct report *r, const struct row *w)
{
	struct expanded e;
	bool hit = false;

	if (!r->o->has_focus)
		return true;
	row_expand((struct report *)r, w, &e, false);
	for (size_t i = 0; i < e.n && !hit; i++)
		hit = (e.d[i].function && !regexec(&r->o->focus, e.d[i].function, 0, NULL, 0)) ||
		      (e.d[i].file && !regexec(&r->o->focus, e.d[i].file, 0, NULL, 0));
	free(e.d);
	return hit;
}

static bool pred_live(const struct report *r, const struct row *w)
{
	return w->f[0].live_bytes > 0 && w->f[0].live_bytes >= r->o->min_bytes && focused(r, w);
}

static bool pred_grown(const struct report *r, const struct row *w)
{
	return w->growth > 0 && (uint64_t)w->growth >= r->o->min_bytes && focused(r, w);
}

static bool pred_shrunk(const struct report *r, const struct row *w)
{
	return w->growth < 0 && (uint64_t)-w->growth >= r->o->min_bytes && focused(r, w);
}

/* Rows that hold live bytes in some snapshot (stacks whose blocks were all
 * freed are in a snapshot too, with zeros). */
static size_t held_rows(const struct report *r)
{
	size_t i, n = 0;
	for (i = 0; i < r->nrows; i++)
		n += r->rows[i].f[0].live_bytes > 0 || r->rows[i].f[1].live_bytes > 0;
	return n;
}

/* What happened to a row between the two snapshots. */
static const char *status_of(const struct row *w)
{
	if (w->f[0].live_bytes == 0 && w->f[1].live_bytes > 0)
		return "new";
	if (w->f[1].live_bytes == 0 && w->f[0].live_bytes > 0)
		return "gone";
	if (w->growth > 0)
		return "grown";
	if (w->growth < 0)
		return "shrunk";
	return "same";
}

/* --------------------------------------------------------------------------- */
/* Table output. */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* A C++ name as a table shows it: the arguments of templates elided
 * ("std::vector<…>::_M_realloc_insert<…>(…)"), where they make a name run
 * over a line; --full-names keeps them. An operator's own '<' or '>' is no
 * bracket. */
static void print_short_name(FILE *f, const char *name)
{
	int depth = 0;
	const char *p;

	if (strlen(name) <= 60 || !strchr(name, '<')) {
		fputs(name, f);
		return;
	}
	for (p = name; *p; p++) {
		bool op = p - name >= 8 && !strncmp(p - 8, "operator", 8);
		if (*p == '<' && !op) {
			if (depth++ == 0)
				fputs("<\u2026>", f);
		} else if (*p == '>' && depth > 0 && !(p > name && p[-1] == '-')) {
			depth--;
		} else if (depth == 0) {
			fputc(*p, f);
			if (op && (*p == '<' || *p == '>') && (p[1] == '<' || p[1] == '>' || p[1] == '='))
				fputc(*++p, f);
		}
	}
}

/* One frame as the table shows it. */
static void print_frame(FILE *f, struct report *r, const struct dframe *d, const char *via,
			int kind)
{
	if (!d->function)
		fputs("<unknown>", f);
	else if (r->o->full_names)
		fputs(d->function, f);
	else
		print_short_name(f, d->function);
	if (d->file) {
		fprintf(f, "  %s", base_name(d->file));
		if (d->line)
			fprintf(f, ":%" PRIu32, d->line);
	} else if (d->gmod != SYM_NO_MODULE && r->o->by == BY_FUNCTION && d->function) {
		/* one row stands for many addresses of the function */
		fprintf(f, "  (%s)", symbolizer_module_name(r->z, d->gmod));
	} else if (d->gmod != SYM_NO_MODULE) {
		fprintf(f, "  (%s+0x%" PRIx64 ")", symbolizer_module_name(r->z, d->gmod), d->offset);
	} else {
		fprintf(f, "  (0x%" PRIx64 ")", d->offset);
	}
	if (d->inlined)
		fputs(" [inlined]", f);
	if (kind > SNAP_KIND_MALLOC)
		fprintf(f, " [%s]", snap_kind_name(kind));
	if (via && *via)
		fprintf(f, "  (%s)", via);
	fputc('\n', f);
}

/* The frames of a row after its figures (already printed, width columns). */
static void print_row_frames(FILE *f, struct report *r, const struct row *w, int width)
{
	size_t max = r->o->depth, n, total, i;
	struct dframe *d;
	char via[96];

	n = row_frames(r, w, max, false, &d, &total, via, sizeof via);
	if (n == 0) {
		fputs("<no frames>\n", f);
	}
	for (i = 0; i < n; i++) {
		if (i > 0)
			fprintf(f, "%*s", width, "");
		print_frame(f, r, &d[i], i == 0 ? via : NULL, i == 0 ? w->kind : SNAP_KIND_MALLOC);
	}
	if (total > n)
		fprintf(f, "%*s... %zu more frame%s%s\n", width, "", total - n,
			total - n == 1 ? "" : "s", w->truncated ? " (stack truncated)" : "");
	else if (w->truncated)
		fprintf(f, "%*s... (stack truncated at the depth limit)\n", width, "");
	free(d);
}

/* A wall-clock time in UTC, so a report reads the same in every time zone. */
static const char *fmt_time(char *buf, size_t n, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	if (ns == 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, n, "unknown");
		return buf;
	}
	strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
	return buf;
}

/* The sample rate in words. */
static const char *fmt_rate(char *buf, size_t n, uint64_t rate)
{
	char b[32];
	if (rate <= 1)
		snprintf(buf, n, "every allocation");
	else
		snprintf(buf, n, "one sample per %s on average", fmt_bytes(b, sizeof b, (double)rate));
	return buf;
}

/* A change in bytes, with its sign. */
static const char *fmt_signed(char *buf, size_t n, int64_t v)
{
	if (v > 0) {
		buf[0] = '+';
		fmt_bytes(buf + 1, n - 1, (double)v);
	} else {
		fmt_bytes(buf, n, (double)v);
	}
	return buf;
}

/* The header lines that describe one snapshot. */
static void print_snapshot_header(FILE *f, const struct input *in, const char *label)
{
	const struct snapshot *s = in->s;
	char b1[64], b2[64], b3[32];
	double cap = s->capture_start_ns && s->time_ns > s->capture_start_ns
			     ? (double)(s->time_ns - s->capture_start_ns) / 1e9
			     : 0;

	fprintf(f, "%-10s %s\n", label, in->path);
	fprintf(f, "  process  pid %" PRId32 ", %s\n", s->pid, s->exe && *s->exe ? s->exe : "?");
	if (s->cmdline && *s->cmdline)
		fprintf(f, "  command  %s\n", s->cmdline);
	fprintf(f, "  taken    %s, after %s of capture\n", fmt_time(b1, sizeof b1, s->time_ns),
		fmt_seconds(b3, sizeof b3, cap));
	fprintf(f, "  sampling %s\n", fmt_rate(b2, sizeof b2, s->sample_rate));
	fprintf(f, "  samples  %" PRIu64 " live in %" PRIu64 " stacks", in->total.live_samples,
		in->total.live_stacks);
	if (s->dropped_stacks)
		fprintf(f, "; %" PRIu64 " stacks dropped (%s)", s->dropped_stacks,
			fmt_bytes(b1, sizeof b1, (double)s->dropped_bytes));
	fputc('\n', f);
}

/* The RSS that malloc does not hold (in use or kept free); mallinfo present. */
static uint64_t rest_of_rss(const struct snapshot *s)
{
	uint64_t held = s->mallinfo.in_use + s->mallinfo.free_bytes;
	return s->rss_bytes > held ? s->rss_bytes - held : 0;
}

/* One snapshot in one line: where it is from, when, and how it was sampled. */
static void print_snapshot_line(FILE *f, const struct input *in, const char *label)
{
	const struct snapshot *s = in->s;
	char b1[64], b2[64], b3[32];
	double cap = s->capture_start_ns && s->time_ns > s->capture_start_ns
			     ? (double)(s->time_ns - s->capture_start_ns) / 1e9
			     : 0;

	fprintf(f, "%-8s %s: pid %" PRId32 " %s, %s after %s of capture, %s", label, in->path,
		s->pid, s->exe && *s->exe ? base_name(s->exe) : "?",
		fmt_time(b1, sizeof b1, s->time_ns), fmt_seconds(b3, sizeof b3, cap),
		s->sample_rate <= 1 ? "every allocation" : "1 sample per ");
	if (s->sample_rate > 1)
		fputs(fmt_bytes(b2, sizeof b2, (double)s->sample_rate), f);
	if (s->dropped_stacks)
		fprintf(f, "; %" PRIu64 " stacks dropped (%s)", s->dropped_stacks,
			fmt_bytes(b1, sizeof b1, (double)s->dropped_bytes));
	fputc('\n', f);
}

/* The allocator's view: live sampled heap against what malloc holds and RSS. */
static void print_memory(FILE *f, const struct input *in)
{
	const struct snapshot *s = in->s;
	char b[32];

	fprintf(f, "\nmemory\n");
	fprintf(f, "  %-32s %12s\n", "live heap (sampled estimate)",
		fmt_bytes(b, sizeof b, (double)in->total.live_bytes));
	if (s->mallinfo.present) {
		fprintf(f, "  %-32s %12s\n", "allocator in use",
			fmt_bytes(b, sizeof b, (double)s->mallinfo.in_use));
		fprintf(f, "  %-32s %12s\n", "allocator slack (free, kept)",
			fmt_bytes(b, sizeof b, (double)s->mallinfo.free_bytes));
		if (s->rss_bytes)
			fprintf(f, "  %-32s %12s\n", "rest of RSS (not heap)",
				fmt_bytes(b, sizeof b, (double)rest_of_rss(s)));
	}
	if (s->rss_bytes)
		fprintf(f, "  %-32s %12s\n", "RSS", fmt_bytes(b, sizeof b, (double)s->rss_bytes));
}

/* A standard error with its sign, in a column of width display cells ('±' is
 * two bytes and one cell). */
static void print_sd(FILE *f, double sd, int width)
{
	char b[32], c[40];
	snprintf(c, sizeof c, "\u00b1%s", fmt_bytes(b, sizeof b, sd));
	fprintf(f, "%*s", width + 1, c);
}

/* The sample count of a row, marked when it is too few to tell from noise. */
static void print_samples(FILE *f, const struct row *w, uint64_t n)
{
	fprintf(f, " %7" PRIu64 "%c", n, w->weak ? '?' : ' ');
}

/* The note under a table that shows weak rows. */
static void print_weak_note(FILE *f, struct row **v, size_t n)
{
	size_t i;
	for (i = 0; i < n && !v[i]->weak; i++)
		;
	if (i < n)
		fprintf(f, "  ? too few samples to tell from sampling noise (within two standard errors,\n"
			   "    \u00b1 is one): listed after the rows with evidence\n");
}

/* The figures of every kind of mapping of one snapshot, summed. */
struct kind_sums {
	uint64_t rss[SNAP_REGION_KIND_MAX + 1], anon[SNAP_REGION_KIND_MAX + 1];
	uint64_t swap[SNAP_REGION_KIND_MAX + 1], mappings[SNAP_REGION_KIND_MAX + 1];
};

static void sum_kinds(const struct snapshot *s, struct kind_sums *k)
{
	memset(k, 0, sizeof *k);
	for (size_t i = 0; i < s->nregions; i++) {
		const struct snap_region *g = &s->regions[i];
		k->rss[g->kind] += g->rss;
		k->anon[g->kind] += g->anon;
		k->swap[g->kind] += g->swap;
		k->mappings[g->kind] += g->mappings;
	}
}

/* Kinds in the order a report lists them: the allocator's first. */
static const uint32_t kind_order[] = {
	SNAP_REGION_HEAP, SNAP_REGION_ARENA, SNAP_REGION_ANON, SNAP_REGION_ANON_NAMED,
	SNAP_REGION_STACK, SNAP_REGION_SHMEM, SNAP_REGION_FILE, SNAP_REGION_OTHER,
};
#define NKINDS (sizeof kind_order / sizeof kind_order[0])

/* The named regions (files, [anon:] names, shared memory) of a kind worth a
 * line of their own: the n with the most resident bytes (in a diff, the most
 * change), into idx. */
static size_t top_named(const struct snapshot *a, const struct snapshot *b, uint32_t kind,
			size_t *idx, size_t n);

/* The resident bytes of the region of s with kind and name (0: none). */
static uint64_t region_rss(const struct snapshot *s, uint32_t kind, const char *name)
{
	for (size_t i = 0; s && i < s->nregions; i++)
		if (s->regions[i].kind == kind && s->regions[i].name && !strcmp(s->regions[i].name, name))
			return s->regions[i].rss;
	return 0;
}

static size_t top_named(const struct snapshot *a, const struct snapshot *b, uint32_t kind,
			size_t *idx, size_t n)
{
	int64_t best[8];
	size_t k = 0;

	if (n > 8)
		n = 8;
	for (size_t i = 0; i < b->nregions; i++) {
		const struct snap_region *g = &b->regions[i];
		int64_t v;
		size_t j;
		if (g->kind != kind || !g->name)
			continue;
		v = (int64_t)g->rss - (a ? (int64_t)region_rss(a, kind, g->name) : 0);
		if (v < 0)
			v = -v;
		if (v < 4096 * 16)
			continue;   /* a few pages: not worth a line */
		for (j = k; j > 0 && best[j - 1] < v; j--) {
			if (j < n) {
				best[j] = best[j - 1];
				idx[j] = idx[j - 1];
			}
		}
		if (j < n) {
			best[j] = v;
			idx[j] = i;
			if (k < n)
				k++;
		}
	}
	return k;
}

/* memwatch show: where the resident memory is, by kind of mapping. */
static void print_regions(FILE *f, const struct snapshot *s)
{
	struct kind_sums k;
	char b1[32], b2[32], b3[32];
	size_t top[3], nt;

	if (!s->has_regions)
		return;
	sum_kinds(s, &k);
	fprintf(f, "\nresident memory by mapping %21s %12s %12s %9s\n", "resident", "anonymous",
		"swap", "mappings");
	for (size_t i = 0; i < NKINDS; i++) {
		uint32_t kd = kind_order[i];
		if (!k.mappings[kd])
			continue;
		fprintf(f, "  %-32s %12s %12s %12s %9" PRIu64 "\n", maps_kind_name(kd),
			fmt_bytes(b1, sizeof b1, (double)k.rss[kd]),
			fmt_bytes(b2, sizeof b2, (double)k.anon[kd]),
			fmt_bytes(b3, sizeof b3, (double)k.swap[kd]), k.mappings[kd]);
		if (kd == SNAP_REGION_ANON && s->mallinfo.present && s->mallinfo.mmapped)
			fprintf(f, "    %-30s %12s\n", "of which malloc's large blocks",
				fmt_bytes(b1, sizeof b1, (double)s->mallinfo.mmapped));
		nt = top_named(NULL, s, kd, top, 3);
		for (size_t j = 0; j < nt; j++)
			fprintf(f, "    %-30s %12s\n", base_name(s->regions[top[j]].name),
				fmt_bytes(b1, sizeof b1, (double)s->regions[top[j]].rss));
	}
}

/* memwatch show as a table: the snapshot, the memory, the largest stacks. */
static void table_show(FILE *f, struct report *r)
{
	const struct input *in = &r->in[0];
	struct row **v;
	size_t n, i;
	char b[32];
	const int width = 61;

	if (r->o->details) {
		print_snapshot_header(f, in, "snapshot");
		print_memory(f, in);
		print_regions(f, in->s);
	} else {
		print_snapshot_line(f, in, "snapshot");
		fprintf(f, "memory   live heap %s (%" PRIu64 " samples in %" PRIu64 " stacks)",
			fmt_bytes(b, sizeof b, (double)in->total.live_bytes), in->total.live_samples,
			in->total.live_stacks);
		if (in->s->mallinfo.present)
			fprintf(f, ", allocator in use %s",
				fmt_bytes(b, sizeof b, (double)in->s->mallinfo.in_use));
		if (in->s->rss_bytes)
			fprintf(f, ", RSS %s", fmt_bytes(b, sizeof b, (double)in->s->rss_bytes));
		fputc('\n', f);
	}
	v = select_rows(r, pred_live, cmp_live, r->o->top, &n);
	fprintf(f, "\nlive heap by %s (%zu of %zu rows)\n",
		r->o->by == BY_STACK ? "call stack" : r->o->by == BY_FUNCTION ? "function" : "line",
		n, held_rows(r));
	fprintf(f, "%4s %12s %10s %7s %13s %8s  %s\n", "#", "bytes", "\u00b1", "share", "blocks",
		"samples", "where");
	for (i = 0; i < n; i++) {
		const struct row *w = v[i];
		double share = in->total.live_bytes
				       ? 100.0 * (double)w->f[0].live_bytes / (double)in->total.live_bytes
				       : 0;
		fprintf(f, "%4zu %12s ", i + 1, fmt_bytes(b, sizeof b, (double)w->f[0].live_bytes));
		print_sd(f, w->sd, 10);
		fprintf(f, " %6.1f%% %13" PRIu64, share, w->f[0].live_blocks);
		print_samples(f, w, w->f[0].live_samples);
		fputs("  ", f);
		print_row_frames(f, r, w, width);
	}
	print_weak_note(f, v, n);
	free(v);
}

/* One section of the diff table (grown or shrunk rows). */
static void table_diff_rows(FILE *f, struct report *r, struct row **v, size_t n)
{
	char b1[32], b2[32], b3[32];
	const int width = 80;
	size_t i;

	fprintf(f, "%4s %11s %10s %11s %11s %10s %8s %-6s  %s\n", "#", "growth", "\u00b1", "before",
		"after", "blocks", "samples", "status", "where");
	for (i = 0; i < n; i++) {
		const struct row *w = v[i];
		int64_t db = (int64_t)w->f[1].live_blocks - (int64_t)w->f[0].live_blocks;
		fprintf(f, "%4zu %11s ", i + 1, fmt_signed(b1, sizeof b1, w->growth));
		print_sd(f, w->sd, 10);
		fprintf(f, " %11s %11s %+10" PRId64, fmt_bytes(b2, sizeof b2, (double)w->f[0].live_bytes),
			fmt_bytes(b3, sizeof b3, (double)w->f[1].live_bytes), db);
		print_samples(f, w, w->f[1].live_samples);
		fprintf(f, " %-6s  ", status_of(w));
		print_row_frames(f, r, w, width);
	}
	print_weak_note(f, v, n);
}

/* memwatch diff: the change of the resident memory by kind of mapping. */
static void print_regions_change(FILE *f, const struct snapshot *a, const struct snapshot *b)
{
	struct kind_sums ka, kb;
	char x[32], y[32], z[32];
	size_t top[3], nt;

	if (!a->has_regions || !b->has_regions)
		return;
	sum_kinds(a, &ka);
	sum_kinds(b, &kb);
	fprintf(f, "\nresident memory by mapping\n");
	for (size_t i = 0; i < NKINDS; i++) {
		uint32_t kd = kind_order[i];
		if (!ka.mappings[kd] && !kb.mappings[kd])
			continue;
		fprintf(f, "  %-28s %11s -> %11s  %s\n", maps_kind_name(kd),
			fmt_bytes(x, sizeof x, (double)ka.rss[kd]),
			fmt_bytes(y, sizeof y, (double)kb.rss[kd]),
			fmt_signed(z, sizeof z, (int64_t)kb.rss[kd] - (int64_t)ka.rss[kd]));
		if (kd == SNAP_REGION_ANON && a->mallinfo.present && b->mallinfo.present &&
		    (a->mallinfo.mmapped || b->mallinfo.mmapped))
			fprintf(f, "    %-26s %11s -> %11s  %s\n", "of which malloc's large blocks",
				fmt_bytes(x, sizeof x, (double)a->mallinfo.mmapped),
				fmt_bytes(y, sizeof y, (double)b->mallinfo.mmapped),
				fmt_signed(z, sizeof z,
					   (int64_t)b->mallinfo.mmapped - (int64_t)a->mallinfo.mmapped));
		nt = top_named(a, b, kd, top, 3);
		for (size_t j = 0; j < nt; j++) {
			const struct snap_region *g = &b->regions[top[j]];
			uint64_t before = region_rss(a, kd, g->name);
			fprintf(f, "    %-26s %11s -> %11s  %s\n", base_name(g->name),
				fmt_bytes(x, sizeof x, (double)before),
				fmt_bytes(y, sizeof y, (double)g->rss),
				fmt_signed(z, sizeof z, (int64_t)g->rss - (int64_t)before));
		}
	}
}

/* The kind of mapping whose resident memory grew most between the snapshots,
 * and by how much (0 when the breakdown is missing or nothing grew). */
static int64_t largest_region_growth(const struct report *r, uint32_t *kind)
{
	struct kind_sums ka, kb;
	int64_t best = 0;

	if (!r->in[0].s->has_regions || !r->in[1].s->has_regions)
		return 0;
	sum_kinds(r->in[0].s, &ka);
	sum_kinds(r->in[1].s, &kb);
	for (uint32_t k = 0; k <= SNAP_REGION_KIND_MAX; k++) {
		int64_t g = (int64_t)kb.rss[k] - (int64_t)ka.rss[k];
		if (g > best) {
			best = g;
			*kind = k;
		}
	}
	return best;
}

/* The RSS growth between the two snapshots (0 when either RSS is unknown). */
static int64_t rss_growth(const struct report *r)
{
	const struct snapshot *a = r->in[0].s, *b = r->in[1].s;
	if (!a->rss_bytes || !b->rss_bytes)
		return 0;
	return (int64_t)b->rss_bytes - (int64_t)a->rss_bytes;
}

/* How much of the RSS growth the sampled stacks explain, or a negative value
 * when RSS did not grow enough to ask (less than 1 MiB: a page here and there). */
static double explained_share(const struct report *r)
{
	int64_t rss = rss_growth(r);
	int64_t heap = (int64_t)r->in[1].total.live_bytes - (int64_t)r->in[0].total.live_bytes;
	if (rss < (int64_t)1 << 20)
		return -1;
	if (heap <= 0)
		return 0;
	return heap >= rss ? 1 : (double)heap / (double)rss;
}

/* One line on how far the sampled stacks account for the RSS growth; when they
 * explain less than half, say where the rest may be, so that an empty or thin
 * report is never read as "nothing grew". */
static void print_explained(FILE *f, const struct report *r)
{
	const struct snapshot *a = r->in[0].s, *b = r->in[1].s;
	double share = explained_share(r);
	uint32_t kind = SNAP_REGION_OTHER;
	char g[32];

	if (share < 0)
		return;
	fmt_signed(g, sizeof g, rss_growth(r));
	if (share >= 0.5) {
		fprintf(f, "  sampled stacks explain %.0f %% of the RSS growth (%s)\n", 100 * share, g);
		return;
	}
	fprintf(f, "  unexplained: sampled stacks explain only %.0f %% of the RSS growth (%s)\n", 100 * share,
		g);
	if (largest_region_growth(r, &kind) > 0) {
		fmt_bytes(g, sizeof g, (double)largest_region_growth(r, &kind));
		fprintf(f, "    %s of it is in %s%s: see \"resident memory by mapping\" below\n", g,
			maps_kind_name(kind),
			kind == SNAP_REGION_HEAP || kind == SNAP_REGION_ARENA
				? " (malloc's own, through calls memwatch does not sample)"
				: kind == SNAP_REGION_ANON ? " outside malloc" : "");
		return;
	}
	fprintf(f, "    %s\n",
		a->mallinfo.present && b->mallinfo.present
			? "the rest is outside the sampled malloc calls (mmap'd memory, an interpreter's\n"
			  "    or runtime's own heap, thread stacks, files)"
			: "the rest is outside the sampled malloc calls (mmap'd memory, an interpreter's\n"
			  "    or runtime's own heap, thread stacks, files), or in an allocator whose\n"
			  "    figures memwatch cannot read");
}

/* memwatch diff as a table: both snapshots, the change, then what grew and
 * what shrank. */
static void table_diff(FILE *f, struct report *r)
{
	const struct input *a = &r->in[0], *b = &r->in[1];
	size_t ng, ns, i, counts[5] = { 0 };
	struct row **grown, **shrunk;
	char x[32], y[32], z[32];

	for (i = 0; i < r->nrows; i++) {
		const char *st = status_of(&r->rows[i]);
		/* a stack whose blocks were all freed on both sides holds nothing */
		if (r->rows[i].f[0].live_bytes == 0 && r->rows[i].f[1].live_bytes == 0)
			continue;
		counts[strcmp(st, "new") == 0 ? 0 : strcmp(st, "grown") == 0 ? 1 :
		       strcmp(st, "shrunk") == 0 ? 2 : strcmp(st, "gone") == 0 ? 3 : 4]++;
	}
	if (!r->o->details) {
		print_snapshot_line(f, a, "before");
		print_snapshot_line(f, b, "after");
		fprintf(f, "change   live heap %s",
			fmt_signed(z, sizeof z,
				   (int64_t)b->total.live_bytes - (int64_t)a->total.live_bytes));
		if (a->s->rss_bytes && b->s->rss_bytes)
			fprintf(f, ", RSS %s (%s -> %s)",
				fmt_signed(z, sizeof z, rss_growth(r)),
				fmt_bytes(x, sizeof x, (double)a->s->rss_bytes),
				fmt_bytes(y, sizeof y, (double)b->s->rss_bytes));
		fprintf(f, "; %zu new, %zu grown, %zu shrunk, %zu gone, %zu unchanged %s\n", counts[0],
			counts[1], counts[2], counts[3], counts[4],
			r->o->by == BY_STACK ? "stacks" : r->o->by == BY_FUNCTION ? "functions" : "lines");
		print_explained(f, r);
		/* where the growth went, when the stacks do not say */
		if (explained_share(r) >= 0 && explained_share(r) < 0.5)
			print_regions_change(f, a->s, b->s);
		goto rows;
	}
	print_snapshot_header(f, a, "before");
	print_snapshot_header(f, b, "after");
	fprintf(f, "\nchange\n");
	fprintf(f, "  %-28s %11s -> %11s  %s\n", "live heap (sampled estimate)",
		fmt_bytes(x, sizeof x, (double)a->total.live_bytes),
		fmt_bytes(y, sizeof y, (double)b->total.live_bytes),
		fmt_signed(z, sizeof z, (int64_t)b->total.live_bytes - (int64_t)a->total.live_bytes));
	if (a->s->mallinfo.present && b->s->mallinfo.present)
		fprintf(f, "  %-28s %11s -> %11s  %s\n", "allocator in use",
			fmt_bytes(x, sizeof x, (double)a->s->mallinfo.in_use),
			fmt_bytes(y, sizeof y, (double)b->s->mallinfo.in_use),
			fmt_signed(z, sizeof z,
				   (int64_t)b->s->mallinfo.in_use - (int64_t)a->s->mallinfo.in_use));
	if (a->s->mallinfo.present && b->s->mallinfo.present && a->s->rss_bytes && b->s->rss_bytes)
		fprintf(f, "  %-28s %11s -> %11s  %s\n", "rest of RSS (not heap)",
			fmt_bytes(x, sizeof x, (double)rest_of_rss(a->s)),
			fmt_bytes(y, sizeof y, (double)rest_of_rss(b->s)),
			fmt_signed(z, sizeof z, (int64_t)rest_of_rss(b->s) - (int64_t)rest_of_rss(a->s)));
	if (a->s->rss_bytes && b->s->rss_bytes)
		fprintf(f, "  %-28s %11s -> %11s  %s\n", "RSS",
			fmt_bytes(x, sizeof x, (double)a->s->rss_bytes),
			fmt_bytes(y, sizeof y, (double)b->s->rss_bytes),
			fmt_signed(z, sizeof z, (int64_t)b->s->rss_bytes - (int64_t)a->s->rss_bytes));
	fprintf(f, "  %zu new, %zu grown, %zu shrunk, %zu gone, %zu unchanged %s\n", counts[0],
		counts[1], counts[2], counts[3], counts[4],
		r->o->by == BY_STACK ? "stacks" : r->o->by == BY_FUNCTION ? "functions" : "lines");

	print_explained(f, r);
	print_regions_change(f, a->s, b->s);
rows:
	grown = select_rows(r, pred_grown, cmp_growth_desc, r->o->top, &ng);
	shrunk = select_rows(r, pred_shrunk, cmp_growth_asc, r->o->top, &ns);
	fprintf(f, "\ngrowth by %s, largest first\n",
		r->o->by == BY_STACK ? "call stack" : r->o->by == BY_FUNCTION ? "function" : "line");
	if (ng)
		table_diff_rows(f, r, grown, ng);
	else if (rss_growth(r) > 0)
		fprintf(f, "  (no sampled stack grew)\n");
	else
		fprintf(f, "  (nothing grew)\n");
	if (ns) {
		fprintf(f, "\nshrinkage, largest first\n");
		table_diff_rows(f, r, shrunk, ns);
	}
	free(grown);
	free(shrunk);
}

/* --------------------------------------------------------------------------- */
/* Folded stacks: "outer;...;inner value", for flamegraph.pl, inferno and
 * speedscope. Inlined frames carry flamegraph.pl's "_[i]" annotation. */

static void folded_name(FILE *f, struct report *r, const struct dframe *d)
{
	const char *p;
	size_t n;
	if (d->function) {
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
	if (r->o->by == BY_LINE && d->file)
		fprintf(f, " %s:%" PRIu32, base_name(d->file), d->line);
	if (d->inlined)
		fputs("_[i]", f);
}

/* The rows v as folded stacks, outermost frame first. */
static void folded(FILE *f, struct report *r, struct row **v, size_t n, bool diff)
{
	size_t i, k, nd;
	struct dframe *d;

	for (i = 0; i < n; i++) {
		nd = row_frames(r, v[i], r->o->depth_set ? r->o->depth : 0, true, &d, NULL, NULL, 0);
		if (nd == 0) {
			free(d);
			continue;
		}
		for (k = nd; k-- > 0;) {
			folded_name(f, r, &d[k]);
			if (k)
				fputc(';', f);
		}
		fprintf(f, " %" PRIu64 "\n", diff ? (uint64_t)v[i]->growth : v[i]->f[0].live_bytes);
		free(d);
	}
}

/* --------------------------------------------------------------------------- */
/* JSON output; the schema is in memwatch(1), REPORTS. */

/* The length of the valid UTF-8 sequence at p, or 0. */
static int utf8_len(const unsigned char *p)
{
	int n, i;
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* A JSON string (or null); bytes that are not UTF-8 (a path from another
 * system) become U+FFFD, so the document always parses. */
static void json_str(FILE *f, const char *s)
{
	const unsigned char *p;
	int n;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (p = (const unsigned char *)s; *p; p += n) {
		n = utf8_len(p);
		if (n == 0) {
			fputs("\\ufffd", f);
			n = 1;
		} else if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p);
		} else {
			fwrite(p, 1, (size_t)n, f);
		}
	}
	fputc('"', f);
}

/* The SNAP object of the JSON schema. */
static void json_snapshot(FILE *f, const struct input *in)
{
	const struct snapshot *s = in->s;
	fputs("{\"path\": ", f);
	json_str(f, in->path);
	fprintf(f, ", \"pid\": %" PRId32 ", \"exe\": ", s->pid);
	json_str(f, s->exe);
	fputs(", \"cmdline\": ", f);
	json_str(f, s->cmdline);
	fprintf(f,
		", \"time_ns\": %" PRIu64 ", \"capture_start_ns\": %" PRIu64
		", \"sample_rate\": %" PRIu64 ", \"rss_bytes\": %" PRIu64 ", \"stacks\": %zu"
		", \"dropped_stacks\": %" PRIu64 ", \"dropped_bytes\": %" PRIu64
		", \"live_bytes\": %" PRIu64 ", \"live_blocks\": %" PRIu64
		", \"live_samples\": %" PRIu64 ", \"mallinfo\": ",
		s->time_ns, s->capture_start_ns, s->sample_rate, s->rss_bytes, s->nstacks,
		s->dropped_stacks, s->dropped_bytes, in->total.live_bytes, in->total.live_blocks,
		in->total.live_samples);
	if (s->mallinfo.present)
		fprintf(f,
			"{\"arena\": %" PRIu64 ", \"mmapped\": %" PRIu64 ", \"in_use\": %" PRIu64
			", \"free_bytes\": %" PRIu64 ", \"releasable\": %" PRIu64 "}",
			s->mallinfo.arena, s->mallinfo.mmapped, s->mallinfo.in_use,
			s->mallinfo.free_bytes, s->mallinfo.releasable);
	else
		fputs("null", f);
	fputs(", \"regions\": ", f);
	if (s->has_regions) {
		fputc('[', f);
		for (size_t i = 0; i < s->nregions; i++) {
			const struct snap_region *g = &s->regions[i];
			fprintf(f, "%s{\"kind\": \"%s\", \"name\": ", i ? ", " : "",
				maps_kind_name(g->kind));
			json_str(f, g->name);
			fprintf(f,
				", \"mappings\": %" PRIu64 ", \"size\": %" PRIu64 ", \"rss\": %" PRIu64
				", \"anon\": %" PRIu64 ", \"swap\": %" PRIu64 "}",
				g->mappings, g->size, g->rss, g->anon, g->swap);
		}
		fputs("]}", f);
	} else {
		fputs("null}", f);
	}
}

/* A row's "frames" array, innermost first. */
static void json_frames(FILE *f, struct report *r, const struct row *w)
{
	struct dframe *d;
	size_t n = row_frames(r, w, r->o->depth_set ? r->o->depth : 0, true, &d, NULL, NULL, 0), i;
	struct expanded e;

	/* the frame tables head the row with: the user's own */
	row_expand(r, w, &e, true);
	free(e.d);
	fprintf(f, "\"head\": %zu, \"frames\": [", r->o->by == BY_STACK ? e.head : 0);
	for (i = 0; i < n; i++) {
		fputs(i ? ",\n      {\"function\": " : "\n      {\"function\": ", f);
		json_str(f, d[i].function);
		fputs(", \"file\": ", f);
		json_str(f, d[i].file);
		fprintf(f, ", \"line\": %" PRIu32 ", \"inlined\": %s, \"module\": ", d[i].line,
			d[i].inlined ? "true" : "false");
		json_str(f, d[i].gmod == SYM_NO_MODULE ? NULL : symbolizer_module_path(r->z, d[i].gmod));
		fputs(", \"build_id\": ", f);
		json_str(f, d[i].gmod == SYM_NO_MODULE ? NULL
						      : symbolizer_module_build_id(r->z, d[i].gmod));
		fprintf(f, ", \"offset\": \"0x%" PRIx64 "\"}", d[i].offset);
	}
	fputc(']', f);
	free(d);
}

static const char *by_name(enum by by)
{
	return by == BY_STACK ? "stack" : by == BY_FUNCTION ? "function" : "line";
}

/* memwatch show as JSON. */
static void json_show(FILE *f, struct report *r)
{
	struct row **v;
	size_t n, i;

	v = select_rows(r, pred_live, cmp_live, r->o->top, &n);
	fprintf(f, "{\"version\": %d, \"kind\": \"show\", \"by\": \"%s\",\n \"snapshot\": ",
		JSON_VERSION, by_name(r->o->by));
	json_snapshot(f, &r->in[0]);
	fprintf(f, ",\n \"rows_total\": %zu,\n \"rows\": [", held_rows(r));
	for (i = 0; i < n; i++) {
		const struct row *w = v[i];
		double share = r->in[0].total.live_bytes ? (double)w->f[0].live_bytes /
								   (double)r->in[0].total.live_bytes
							 : 0;
		fprintf(f,
			"%s\n  {\"rank\": %zu, \"kind\": \"%s\", \"live_bytes\": %" PRIu64 ", \"live_blocks\": %" PRIu64
			", \"live_samples\": %" PRIu64 ", \"share\": %.4f, \"alloc_bytes\": %" PRIu64
			", \"alloc_blocks\": %" PRIu64 ", \"stderr_bytes\": %.0f, \"weak\": %s"
			", \"truncated\": %s,\n    ",
			i ? "," : "", i + 1, snap_kind_name(w->kind), w->f[0].live_bytes, w->f[0].live_blocks,
			w->f[0].live_samples, share, w->f[0].alloc_bytes, w->f[0].alloc_blocks, w->sd,
			w->weak ? "true" : "false", w->truncated ? "true" : "false");
		json_frames(f, r, w);
		fputc('}', f);
	}
	fputs("\n ]\n}\n", f);
	free(v);
}

/* The ROW objects of a diff. */
static void json_diff_rows(FILE *f, struct report *r, struct row **v, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++) {
		const struct row *w = v[i];
		fprintf(f,
			"%s\n  {\"rank\": %zu, \"status\": \"%s\", \"kind\": \"%s\", \"growth_bytes\": %" PRId64
			", \"growth_blocks\": %" PRId64 ", \"before_bytes\": %" PRIu64
			", \"after_bytes\": %" PRIu64 ", \"before_blocks\": %" PRIu64
			", \"after_blocks\": %" PRIu64 ", \"before_samples\": %" PRIu64
			", \"after_samples\": %" PRIu64 ", \"stderr_bytes\": %.0f, \"weak\": %s"
			", \"truncated\": %s,\n    ",
			i ? "," : "", i + 1, status_of(w), snap_kind_name(w->kind), w->growth,
			(int64_t)w->f[1].live_blocks - (int64_t)w->f[0].live_blocks,
			w->f[0].live_bytes, w->f[1].live_bytes, w->f[0].live_blocks,
			w->f[1].live_blocks, w->f[0].live_samples, w->f[1].live_samples, w->sd,
			w->weak ? "true" : "false", w->truncated ? "true" : "false");
		json_frames(f, r, w);
		fputc('}', f);
	}
}

/* memwatch diff as JSON. */
static void json_diff(FILE *f, struct report *r)
{
	struct row **grown, **shrunk;
	size_t ng, ns;

	grown = select_rows(r, pred_grown, cmp_growth_desc, r->o->top, &ng);
	shrunk = select_rows(r, pred_shrunk, cmp_growth_asc, r->o->top, &ns);
	fprintf(f, "{\"version\": %d, \"kind\": \"diff\", \"by\": \"%s\",\n \"before\": ",
		JSON_VERSION, by_name(r->o->by));
	json_snapshot(f, &r->in[0]);
	fputs(",\n \"after\": ", f);
	json_snapshot(f, &r->in[1]);
	fprintf(f, ",\n \"growth_bytes\": %" PRId64 ",\n \"rss_growth_bytes\": %" PRId64
		   ",\n \"explained\": ",
		(int64_t)r->in[1].total.live_bytes - (int64_t)r->in[0].total.live_bytes, rss_growth(r));
	if (explained_share(r) < 0)
		fputs("null", f);
	else
		fprintf(f, "%.4f", explained_share(r));
	fprintf(f, ",\n \"rows_total\": %zu,\n \"grown\": [", held_rows(r));
	json_diff_rows(f, r, grown, ng);
	fputs("\n ],\n \"shrunk\": [", f);
	json_diff_rows(f, r, shrunk, ns);
	fputs("\n ]\n}\n", f);
	free(grown);
	free(shrunk);
}

/* The rows as a flame graph (src/flame.c): a snapshot's live bytes, or a
 * diff's growth and shrinkage; frames labelled as in folded stacks. */
static void flame_svg(FILE *f, struct report *r, bool inline_svg)
{
	bool diff = r->nin == 2;
	struct flame *fl = flame_new(diff);
	struct row **v[2];
	size_t n[2] = { 0, 0 }, i, k, nd, len;
	struct flame_frame *fr = NULL;
	struct dframe *d;
	char *labels = NULL, *title, *sub, b[32];
	FILE *m;

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
	for (int s = 0; s < 2; s++) {
		for (i = 0; i < n[s]; i++) {
			const struct row *w = v[s][i];
			nd = row_frames(r, w, r->o->depth_set ? r->o->depth : 0, true, &d, NULL, NULL, 0);
			/* each row's labels over the last one's */
			fseek(m, 0, SEEK_SET);
			for (k = 0; k < nd; k++) {
				folded_name(m, r, &d[k]);
				fputc('\0', m);
			}
			fflush(m);
			fr = xrealloc(fr, (nd ? nd : 1) * sizeof *fr);
			for (k = 0; k < nd; k++) {
				struct flame_frame *x = &fr[nd - 1 - k];
				x->label = k ? x[1].label + strlen(x[1].label) + 1 : labels;
				x->file = d[k].file;
				x->line = d[k].line;
				x->module = d[k].gmod == SYM_NO_MODULE ? NULL
								   : symbolizer_module_name(r->z, d[k].gmod);
				x->inlined = d[k].inlined;
			}
			flame_add(fl, fr, nd, diff ? w->f[0].live_bytes : 0, diff ? w->f[1].live_bytes : w->f[0].live_bytes,
				  diff ? w->f[0].live_blocks : 0, diff ? w->f[1].live_blocks : w->f[0].live_blocks);
			free(d);
		}
	}
	fclose(m);
	free(labels);
	if (diff) {
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

/* --------------------------------------------------------------------------- */
/* pprof output (the encoder is pprof.c): every row with something to show, by
 * stack; in a diff the values are changes, negative where memory was freed. */

static bool pred_pprof(const struct report *r, const struct row *w)
{
	if (!focused(r, w))
		return false;
	if (r->nin == 2)
		return (w->growth || w->f[0].live_blocks != w->f[1].live_blocks ||
			w->f[0].alloc_bytes != w->f[1].alloc_bytes) &&
		       (uint64_t)llabs(w->growth) >= r->o->min_bytes;
	return (w->f[0].live_bytes || w->f[0].alloc_bytes) && w->f[0].live_bytes >= r->o->min_bytes;
}

/* Largest change first, growth or not. */
static int cmp_change(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa, *b = *(const struct row *const *)pb;
	if (llabs(a->growth) != llabs(b->growth))
		return llabs(a->growth) > llabs(b->growth) ? -1 : 1;
	return cmp_seq(a, b);
}

/* Write the report as a pprof profile. 0, or -1 (said). */
static int pprof_out(FILE *f, struct report *r)
{
	struct pprof_source src = { .nin = r->nin };
	struct pprof_sample *p;
	struct row **v;
	size_t n, i;
	char *cause = NULL;
	int rc, k;

	v = select_rows(r, pred_pprof, r->nin == 2 ? cmp_change : cmp_live, r->o->top, &n);
	p = xcalloc(n ? n : 1, sizeof *p);
	for (i = 0; i < n; i++) {
		const struct figures *a = &v[i]->f[0], *b = &v[i]->f[r->nin == 2 ? 1 : 0];
		bool diff = r->nin == 2;
		p[i].frames = v[i]->sf;
		p[i].nframes = r->o->depth_set && r->o->depth && r->o->depth < v[i]->nframes
				       ? (uint32_t)r->o->depth : v[i]->nframes;
		p[i].map = v[i]->map;
		p[i].nmodules = v[i]->nmodules;
		p[i].kind = snap_kind_name(v[i]->kind);
		p[i].value[PPROF_ALLOC_OBJECTS] = (int64_t)b->alloc_blocks - (diff ? (int64_t)a->alloc_blocks : 0);
		p[i].value[PPROF_ALLOC_SPACE] = (int64_t)b->alloc_bytes - (diff ? (int64_t)a->alloc_bytes : 0);
		p[i].value[PPROF_INUSE_OBJECTS] = (int64_t)b->live_blocks - (diff ? (int64_t)a->live_blocks : 0);
		p[i].value[PPROF_INUSE_SPACE] = (int64_t)b->live_bytes - (diff ? (int64_t)a->live_bytes : 0);
	}
	for (k = 0; k < r->nin; k++) {
		src.path[k] = r->in[k].path;
		src.s[k] = r->in[k].s;
		src.map[k] = r->in[k].map;
	}
	rc = pprof_write(f, r->z, &src, p, n, &cause);
	if (rc < 0) {
		mw_error("%s", cause);
		free(cause);
	}
	free(p);
	free(v);
	return rc;
}

/* --------------------------------------------------------------------------- */
/* Command lines. */

/* Options with no short form. */
enum { OPT_HIDE = 256, OPT_FOCUS, OPT_ALL_FRAMES, OPT_FULL_NAMES, OPT_DETAILS, OPT_KIND };

/* Compile a --hide or --focus pattern into re. 0, or an exit status (said). */
static int compile_pattern(const char *cmd, const char *opt, const char *pat, regex_t *re,
			   bool *has)
{
	char msg[128];
	int rc;

	if (*has) {
		mw_error("%s: %s given twice (one pattern: join them with |)", cmd, opt);
		return MW_EXIT_USAGE;
	}
	rc = regcomp(re, pat, REG_EXTENDED | REG_NOSUB);
	if (rc != 0) {
		regerror(rc, re, msg, sizeof msg);
		mw_error("%s: invalid %s '%s': %s", cmd, opt, pat, msg);
		return MW_EXIT_USAGE;
	}
	*has = true;
	return 0;
}

/* Parse the options shared by diff and show. Returns -1 to go on, or an exit
 * status (help printed, or a usage error said). */
static int parse_opts(int argc, char **argv, const char *usage, struct opts *o)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "min-bytes", required_argument, NULL, 'm' },
		{ "by", required_argument, NULL, 'b' },
		{ "depth", required_argument, NULL, 'd' },
		{ "format", required_argument, NULL, 'F' },
		{ "debug-dir", required_argument, NULL, 'D' },
		{ "output", required_argument, NULL, 'o' },
		{ "embed-symbols", required_argument, NULL, 'E' },
		{ "hide", required_argument, NULL, OPT_HIDE },
		{ "focus", required_argument, NULL, OPT_FOCUS },
		{ "all-frames", no_argument, NULL, OPT_ALL_FRAMES },
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "full-names", no_argument, NULL, OPT_FULL_NAMES },
		{ "details", no_argument, NULL, OPT_DETAILS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *cause = NULL, *end;
	int c;

	o->top = 10;
	o->depth = 5;
	opterr = 0;
	optind = 0;   /* a full reset: capture.c calls cmd_diff after its own getopt */
	while ((c = getopt_long(argc, argv, "+n:m:b:d:F:D:o:E:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
		case 'd':
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (!*optarg || *end || errno || optarg[0] == '-' || v > 1000000) {
				mw_error("%s: invalid %s '%s' (a number, 0 for all)", argv[0],
					 c == 'n' ? "--top" : "--depth", optarg);
				return MW_EXIT_USAGE;
			}
			if (c == 'n') {
				o->top = v;
				o->top_set = true;
			} else {
				o->depth = v;
				o->depth_set = true;
			}
			break;
		case 'm':
			if (parse_size(optarg, &o->min_bytes, &cause) < 0) {
				mw_error("%s: --min-bytes: %s", argv[0], cause);
				free(cause);
				return MW_EXIT_USAGE;
			}
			break;
		case 'b':
			if (strcmp(optarg, "stack") == 0)
				o->by = BY_STACK;
			else if (strcmp(optarg, "function") == 0)
				o->by = BY_FUNCTION;
			else if (strcmp(optarg, "line") == 0)
				o->by = BY_LINE;
			else {
				mw_error("%s: invalid --by '%s' (stack, function or line)", argv[0], optarg);
				return MW_EXIT_USAGE;
			}
			break;
		case 'F':
			if (strcmp(optarg, "table") == 0)
				o->format = FMT_TABLE;
			else if (strcmp(optarg, "folded") == 0)
				o->format = FMT_FOLDED;
			else if (strcmp(optarg, "json") == 0)
				o->format = FMT_JSON;
			else if (strcmp(optarg, "pprof") == 0)
				o->format = FMT_PPROF;
			else if (strcmp(optarg, "svg") == 0)
				o->format = FMT_SVG;
			else {
				mw_error("%s: invalid --format '%s' (table, folded, json, svg or pprof)",
					 argv[0], optarg);
				return MW_EXIT_USAGE;
			}
			break;
		case 'D':
			o->dirs = xrealloc(o->dirs, (o->ndirs + 1) * sizeof *o->dirs);
			o->dirs[o->ndirs++] = optarg;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'E':
			if (usage != show_usage) {
				mw_error("%s: unknown option '--embed-symbols' (memwatch show has it)", argv[0]);
				return MW_EXIT_USAGE;
			}
			o->embed = optarg;
			break;
		case OPT_HIDE:
		case OPT_FOCUS: {
			int rc = c == OPT_HIDE
					 ? compile_pattern(argv[0], "--hide", optarg, &o->hide, &o->has_hide)
					 : compile_pattern(argv[0], "--focus", optarg, &o->focus,
							   &o->has_focus);
			if (rc)
				return rc;
			break;
		}
		case OPT_ALL_FRAMES:
			o->all_frames = true;
			break;
		case OPT_KIND:
			if (strcmp(optarg, "all") == 0)
				o->kind = KIND_ALL;
			else if (strcmp(optarg, "malloc") == 0)
				o->kind = KIND_MALLOC;
			else if (strcmp(optarg, "mmap") == 0)
				o->kind = KIND_MMAP;
			else if (strcmp(optarg, "brk") == 0)
				o->kind = KIND_BRK;
			else if (strcmp(optarg, "file") == 0)
				o->kind = KIND_FILE;
			else {
				mw_error("%s: invalid --kind '%s' (malloc, mmap, brk, file or all)", argv[0],
					 optarg);
				return MW_EXIT_USAGE;
			}
			break;
		case OPT_FULL_NAMES:
			o->full_names = true;
			break;
		case OPT_DETAILS:
			o->details = true;
			break;
		case 'h':
			fputs("Usage:\n", stdout);
			fputs(usage, stdout);
			return MW_EXIT_OK;
		default:
			if (optopt && strchr("nmbdFDoE", optopt))
				mw_error("%s: option '-%c' needs a value", argv[0], optopt);
			else if (optopt)
				mw_error("%s: unknown option '-%c'", argv[0], optopt);
			else
				mw_error("%s: unknown option '%s'", argv[0], argv[optind - 1]);
			mw_hint("memwatch %s --help", argv[0]);
			return MW_EXIT_USAGE;
		}
	}
	/* folded stacks, flame graphs and profiles are for the whole picture */
	if ((o->format == FMT_FOLDED || o->format == FMT_PPROF || o->format == FMT_SVG) &&
	    !o->top_set)
		o->top = 0;
	if (o->format == FMT_PPROF && o->by != BY_STACK) {
		mw_error("%s: --by %s does not apply to --format pprof (pprof groups by itself: -functions, -lines)",
			 argv[0], by_name(o->by));
		return MW_EXIT_USAGE;
	}
	if (o->format == FMT_PPROF && (!o->output || strcmp(o->output, "-") == 0) &&
	    isatty(STDOUT_FILENO)) {
		mw_error("%s: --format pprof is binary and is not written to a terminal", argv[0]);
		mw_hint("add -o FILE (e.g. -o heap.pb.gz), or redirect standard output");
		return MW_EXIT_USAGE;
	}
	return -1;
}

/* The main program's module of s: the one whose path is the exe, else the first. */
static const struct snap_module *main_module(const struct snapshot *s)
{
	size_t i;
	for (i = 0; i < s->nmodules; i++)
		if (s->exe && s->modules[i].path && strcmp(s->modules[i].path, s->exe) == 0)
			return &s->modules[i];
	return s->nmodules ? &s->modules[0] : NULL;
}

/* Different programs (build-ids, or paths without build-ids) make a diff of
 * little meaning outside the shared libraries: say so once. */
static void check_same_program(const struct report *r)
{
	const struct snap_module *a = main_module(r->in[0].s), *b = main_module(r->in[1].s);
	bool differ;

	if (!a || !b)
		return;
	if (a->build_id_len && b->build_id_len)
		differ = a->build_id_len != b->build_id_len ||
			 memcmp(a->build_id, b->build_id, a->build_id_len) != 0;
	else
		differ = strcmp(a->path ? a->path : "", b->path ? b->path : "") != 0;
	if (differ)
		mw_warn("'%s' and '%s' are of different programs (%s, %s): only stacks in the code they share can match",
			r->in[0].path, r->in[1].path, a->path && *a->path ? a->path : "?",
			b->path && *b->path ? b->path : "?");
}

/* Free everything a report holds (the snapshots too). */
static void report_free(struct report *r)
{
	size_t i;
	for (i = 0; i < r->nrows; i++)
		free(r->rows[i].key);
	free(r->rows);
	free(r->table);
	free(r->kbuf);
	for (i = 0; i < (size_t)r->nin; i++) {
		snapshot_free(r->in[i].s);
		free(r->in[i].map);
	}
	symbolizer_free(r->z);
	free(r->o->dirs);
	if (r->o->has_hide)
		regfree(&r->o->hide);
	if (r->o->has_focus)
		regfree(&r->o->focus);
}

/* show --embed-symbols: a copy of s with the symbols of its frames, written
 * (atomically) where asked; s itself is left as it was. A snapshot that has
 * its symbols already is copied as it is. 0 or -1 (said). */
static int embed_copy(const struct opts *o, struct snapshot *s)
{
	size_t nsym = s->nsymbols;
	struct snap_symbol *sym = s->symbols;
	struct snapshot *tmp;
	char *cause = NULL;
	int rc = 0;

	if (nsym == 0 && symbolize_embed(s, o->dirs, o->ndirs, &cause) < 0)
		rc = -1;
	if (rc == 0 && snapshot_write(s, o->embed, true, &cause) < 0)
		rc = -1;
	if (rc < 0) {
		mw_error("%s", cause);
		free(cause);
	}
	if (nsym == 0) {
		/* the report goes on from the files, as without the option */
		tmp = xcalloc(1, sizeof *tmp);
		tmp->nsymbols = s->nsymbols;
		tmp->symbols = s->symbols;
		snapshot_free(tmp);
		s->nsymbols = nsym;
		s->symbols = sym;
	}
	return rc;
}

/* Can debuginfod show a progress line (see symbolize.c)? */
static bool progress_possible(void)
{
	const char *u = getenv("DEBUGINFOD_URLS");
	return u && *u && !getenv("DEBUGINFOD_PROGRESS") && isatty(STDERR_FILENO);
}

/* Read the inputs into r (r->o set) and build the rows. 0, or an exit status
 * (said; r freed). */
static int report_load(struct report *r, char *const *paths, int npaths)
{
	struct opts *o = r->o;
	char *cause = NULL;
	int i;

	for (i = 0; i < npaths; i++) {
		r->in[i].path = paths[i];
		r->in[i].s = snapshot_read(paths[i], &cause);
		if (!r->in[i].s) {
			mw_error("%s", cause);
			free(cause);
			r->nin = i;
			report_free(r);
			return MW_EXIT_BADFILE;
		}
	}
	r->nin = npaths;
	if (npaths == 2)
		check_same_program(r);
	if (o->embed && embed_copy(o, r->in[0].s) < 0) {
		report_free(r);
		return MW_EXIT_FAILURE;
	}
	r->z = symbolizer_new(o->dirs, o->ndirs);
	for (i = 0; i < npaths; i++)
		r->in[i].map = symbolizer_add(r->z, r->in[i].s);
	for (i = 0; i < npaths; i++)
		collect(r, i);
	for (size_t k = 0; k < r->nrows; k++)
		row_finish(&r->rows[k], npaths == 2);
	return MW_EXIT_OK;
}

int report_parts(char *const *paths, int npaths, const char **dirs, size_t ndirs, FILE *table,
		 FILE *svg)
{
	struct opts o = { .top = 10, .depth = 5 };
	struct report r = { .o = &o };
	int st;

	/* report_free frees the list of directories: a copy */
	o.dirs = xmalloc((ndirs ? ndirs : 1) * sizeof *o.dirs);
	if (ndirs)
		memcpy(o.dirs, dirs, ndirs * sizeof *o.dirs);
	o.ndirs = ndirs;
	st = report_load(&r, paths, npaths);
	if (st != MW_EXIT_OK)
		return st;
	if (table && npaths == 2)
		table_diff(table, &r);
	else if (table)
		table_show(table, &r);
	if (svg) {
		o.top = 0;
		flame_svg(svg, &r, true);
	}
	report_free(&r);
	return MW_EXIT_OK;
}

/* Read the inputs, build the rows and write the report: the common body of
 * diff (two paths) and show (one). */
static int run_report(struct opts *o, char **paths, int npaths)
{
	struct report r = { .o = o };
	struct outfile *out;
	char *cause = NULL, *text = NULL;
	size_t textlen = 0;
	int status;
	FILE *f;

	status = report_load(&r, paths, npaths);
	if (status != MW_EXIT_OK)
		return status;

	out = outfile_open(o->output ? o->output : "-", true, &cause);
	if (!out) {
		mw_error("%s", cause);
		free(cause);
		report_free(&r);
		return MW_EXIT_FAILURE;
	}
	/* where debuginfod may show its progress line on a terminal, the report
	 * is made in memory first, so that the line is gone before the first
	 * line of the report goes out */
	if (progress_possible())
		f = open_memstream(&text, &textlen);
	else
		f = outfile_stream(out);
	if (!f) {
		mw_error("open_memstream: %s", strerror(errno));
		outfile_abort(out);
		report_free(&r);
		return MW_EXIT_FAILURE;
	}
	if (o->format == FMT_TABLE) {
		if (npaths == 2)
			table_diff(f, &r);
		else
			table_show(f, &r);
	} else if (o->format == FMT_JSON) {
		if (npaths == 2)
			json_diff(f, &r);
		else
			json_show(f, &r);
	} else if (o->format == FMT_PPROF) {
		if (pprof_out(f, &r) < 0) {
			if (f != outfile_stream(out))
				fclose(f);
			free(text);
			outfile_abort(out);
			report_free(&r);
			return MW_EXIT_FAILURE;
		}
	} else if (o->format == FMT_SVG) {
		flame_svg(f, &r, false);
	} else {
		struct row **v;
		size_t n;
		if (npaths == 2)
			v = select_rows(&r, pred_grown, cmp_growth_desc, o->top, &n);
		else
			v = select_rows(&r, pred_live, cmp_live, o->top, &n);
		folded(f, &r, v, n, npaths == 2);
		free(v);
	}
	if (f != outfile_stream(out)) {
		if (fclose(f) != 0) {
			mw_error("cannot make the report: %s", strerror(errno));
			free(text);
			outfile_abort(out);
			report_free(&r);
			return MW_EXIT_FAILURE;
		}
		symbolizer_progress_done(r.z);
		fwrite(text, 1, textlen, outfile_stream(out));
		free(text);
	}
	if (outfile_commit(out, &cause) < 0) {
		mw_error("%s", cause);
		free(cause);
		status = MW_EXIT_FAILURE;
	}
	report_free(&r);
	return status;
}

/* memwatch diff [options] BEFORE AFTER */
int cmd_diff(int argc, char **argv)
{
	struct opts o = { 0 };
	int st = parse_opts(argc, argv, diff_usage, &o);

	if (st >= 0) {
		free(o.dirs);
		return st;
	}
	if (argc - optind != 2) {
		mw_error("diff: expected two snapshots, BEFORE and AFTER (got %d)", argc - optind);
		mw_hint("memwatch diff [options] before.snap after.snap");
		free(o.dirs);
		return MW_EXIT_USAGE;
	}
	return run_report(&o, argv + optind, 2);
}

/* memwatch show [options] SNAPSHOT */
int cmd_show(int argc, char **argv)
{
	struct opts o = { 0 };
	int st = parse_opts(argc, argv, show_usage, &o);

	if (st >= 0) {
		free(o.dirs);
		return st;
	}
	if (argc - optind != 1) {
		mw_error("show: expected one snapshot (got %d)", argc - optind);
		mw_hint("memwatch show [options] a.snap");
		free(o.dirs);
		return MW_EXIT_USAGE;
	}
	return run_report(&o, argv + optind, 1);
}
