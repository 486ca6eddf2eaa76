/* report-internal.h: what the files of memwatch diff and show share: the rows
 * (rows.c aggregates the stacks of the snapshots into them) and the output
 * formats that write them (report-table.c, report-json.c, report-folded.c,
 * report-svg.c, report-pprof.c), which report.c picks from. Not for other
 * modules: they use report.h. */
#ifndef MEMWATCH_REPORT_INTERNAL_H
#define MEMWATCH_REPORT_INTERNAL_H

#include "hashmap.h"
#include "report.h"
#include "snapshot.h"
#include "symbolize.h"
#include "util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A frame in global terms: the symbolizer's module index and the offset. */
struct gframe {
	uint32_t gmod;
	uint64_t offset;
};

/* What is attributed to a row in one snapshot. */
struct figures {
	uint64_t live_bytes, live_blocks, live_samples, alloc_bytes, alloc_blocks;
	uint64_t temp_bytes, temp_blocks;  /* allocated, and freed soon after */
	double live_var;              /* variance of the live_bytes estimate */
	double alloc_var, temp_var;   /* likewise (bounds: see rows-rank.c) */
};

/* Frames a row leaves out at one place of its stack: how many (lo to hi over
 * the stacks the row merges; hi 0: none) and whose. */
enum gap_what { GAP_STD = 1, GAP_MODULE, GAP_LIBRARY };
struct gap {
	uint32_t lo, hi;
	uint32_t gmod;                /* GAP_MODULE: the module they are all in */
	uint8_t what;                 /* enum gap_what */
};

struct seg;

/* A part of a row: by type, a line of the user's code that allocated its
 * objects (name the function, file and line); by stack, a type of the
 * objects its stacks hold (name the type). Figures per snapshot. */
struct row_part {
	const char *name, *file;
	uint32_t line;
	uint64_t bytes[2], blocks[2];
};

struct row {
	uint64_t hash;
	char *key;                    /* by function or line: what rows match on (by
				       * stack, made again from its first stack) */
	uint32_t keylen;
	uint32_t seq;                 /* creation order: the last tie-break */
	/* the frames of the first contributing stack, after trimming: pointers
	 * into its snapshot (not copies: 100 000 stacks of 40 frames are big) */
	const struct snap_frame *sf;
	const uint32_t *map;          /* its snapshot's module map */
	uint32_t nmodules;
	uint32_t nframes;
	struct gap via;               /* frames passed over above the head */
	/* by stack: where the stacks merged into the row differ from the first
	 * (NULL while they are all alike; see rows.c) */
	struct seg *segs;
	uint32_t nsegs;
	uint32_t nparts;              /* of parts */
	uint32_t nchains;             /* of chains */
	bool truncated;
	uint8_t kind;                 /* enum snap_kind of its stacks */
	bool weak;                    /* within two standard errors of 0: as likely
				       * sampling noise as growth */
	struct figures f[2];          /* [0] before (or the only snapshot), [1] after */
	uint64_t val[2];              /* the bytes --sample ranks by, in f[0] and f[1] */
	int64_t growth;               /* diff: val[1] - val[0] */
	double sd;                    /* standard error of what the row shows: its live
				       * bytes (show) or its growth (diff) */
	const char *type;             /* by type: the type's name */
	struct row_part *parts;       /* see struct row_part */
	/* CPython: what keeps the row's objects alive, and what one of them
	 * holds (by type), from the last snapshot's referrer search */
	const struct snap_refchain **chains;
	const struct snap_forward *forward;
};

/* Start fetching what a writer walking every frame of rows v[0..n) in order
 * (pprof, folded stacks, flame graphs) needs after row i: a row 8 rows
 * ahead, and the frames of the one 2 ahead. Rows in order of size (folded
 * stacks) lie all over the rows and their stacks all over the snapshot:
 * waiting for them was a third of such a writer's time. In the order they lie
 * (select_rows_in_place) it still saves a few per cent. */
static inline void rows_prefetch(struct row *const *v, size_t i, size_t n)
{
	if (i + 8 < n) {
		const char *p = (const char *)v[i + 8];
		for (size_t k = 0; k < sizeof(struct row); k += 64)
			__builtin_prefetch(p + k);
	}
	if (i + 2 < n) {
		const struct row *w = v[i + 2];
		uintptr_t p = (uintptr_t)w->sf & ~(uintptr_t)63;
		uintptr_t e = (uintptr_t)(w->sf + w->nframes);
		for (; p < e; p += 64)
			__builtin_prefetch((const void *)p);
	}
}

/* A stack's two hashes for rows-seen.c, made before its rows are (a trend
 * makes them in the thread that reads its snapshots). */
struct seen_pre {
	uint64_t h1, h2;
	uint32_t n, flags;
};

/* One snapshot being reported. */
struct input {
	const char *path;
	struct snapshot *s;
	uint32_t *map;                /* module index -> global module index */
	const struct seen_pre *pre;   /* by stack, its hashes made already (NULL:
				       * made as the stacks are keyed) */
	struct figures total;
	uint64_t live_stacks;         /* stacks holding live bytes */
	/* node: the live bytes of its JavaScript objects (kind js) and of the
	 * V8 heap pages that hold them (mappings made by V8's MemoryAllocator):
	 * the same memory, counted once in the share explained */
	uint64_t js_bytes, v8_page_bytes;
};

struct report {
	const struct report_options *o;
	struct symbolizer *z;
	struct input in[2];
	int nin;
	struct row *rows;
	size_t nrows, arows;
	struct hashmap index;         /* of rows: uint32_t row indexes */
	char *kbuf;                   /* key being built */
	size_t klen, kcap;
	struct dframe *vbuf;          /* a stack being keyed, expanded */
	size_t vcap;
	uint32_t *visbuf;             /* the indexes of its visible frames */
	size_t viscap;
	uint32_t *mbuf;               /* the key of a row by stack it may match */
	size_t mcap;
	bool same_frames;             /* the row found has the candidate's frames */
	struct hashmap fnclass;       /* what function names are (rows-frames.c) */
	struct hashmap fids;          /* the frames rows by stack are keyed by */
	struct fx *fx;                /* facts of the locations' source frames */
	size_t nfx, afx;
	uint32_t *fxbase;             /* by location number: index into fx + 1 */
	size_t nfxbase;
	struct rfront *rfront;        /* the last locations looked up */
	uint8_t *modclass;            /* what modules are, by global index */
	size_t nmodclass;
	struct hashmap seen;          /* the row of each stack seen (rows-seen.c) */
	bool seen_last;               /* the input collected is the last: its
				       * stacks are looked up in seen, not added */
	bool same_index;              /* every input stays in memory until the
				       * last is collected (rows-same.c) */
	struct rows_same {            /* the previous input's stacks (rows-same.c) */
		const struct snapshot *s;
		const uint32_t *map;
		size_t nm;
		uint32_t *row;        /* the row of each of its stacks (or none) */
		uint32_t *cur;        /* the same, of the input being collected */
		bool ok;              /* the input being collected may match it */
		bool filled;          /* seen holds its stacks */
	} same;
};

/* A source frame ready to print. */
struct dframe {
	const char *function, *file;
	uint32_t line;
	bool inlined;
	uint8_t fl;                   /* its name's FN_ flags, when FN_KNOWN is set */
	uint32_t gmod;
	uint32_t loc;                 /* the symbolizer's location number + 1 (0: none) */
	uint64_t offset;
	uint32_t sub;                 /* its index among the frames of its address */
	uint32_t place;               /* a dense number of its place (its location and
				       * sub) + 1, below r->nfx + 1; 0: none */
	struct gap after;             /* frames left out between it and the next one given */
};

/* A value for each place of a frame (dframe.place), 0 until set: by stack, a
 * frame's name follows from its place, so the flame graph keeps its labels
 * there and folded stacks their names. */
struct by_place {
	uint64_t *v;
	size_t n;
};

/* Has each of the n places pl a value in k? */
static inline bool places_known(const struct by_place *k, const uint32_t *pl, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (pl[i] >= k->n || !k->v[pl[i]])
			return false;
	return true;
}

/* The slot of a place (dframe.place), grown (zeroed) as needed; NULL for
 * none (0). */
static inline uint64_t *place_slot(struct by_place *k, uint32_t place)
{
	size_t i = place;
	if (!i)
		return NULL;
	if (i >= k->n) {
		size_t n = i + 1 > 2 * k->n ? i + 1 : 2 * k->n;
		k->v = xrealloc(k->v, n * sizeof *k->v);
		memset(k->v + k->n, 0, (n - k->n) * sizeof *k->v);
		k->n = n;
	}
	return &k->v[i];
}


/* Every source frame of a row's stack, inlined ones expanded, innermost first,
 * and the index of the first the tables show: the user's own (the innermost
 * when there is none, or with --all-frames). */
struct expanded {
	struct dframe *d;             /* caller frees */
	size_t n, head;
};

/* An output format: show writes the report of one snapshot (r->nin 1) to f,
 * diff that of two; each returns 0, or -1 once the error is said. A new
 * format is a new file with one of these, and a line in report.c's table of
 * formats. */
struct report_writer {
	const char *name;             /* as --format names it */
	int (*show)(FILE *f, struct report *r);
	int (*diff)(FILE *f, struct report *r);
	bool whole;                   /* every row unless --top is given: the whole picture */
};

extern const struct report_writer report_table_writer, report_folded_writer,
	report_json_writer, report_svg_writer, report_pprof_writer;

/* rows.c: the stacks of the inputs as rows. */

/* Add every stack of input k to the rows. */
void collect(struct report *r, int k);
/* Free the rows of r and their index. */
void rows_free(struct report *r);
void row_expand(struct report *r, const struct row *w, struct expanded *e, bool want_head);

/* rows-rank.c: the variance of the live bytes of a stack sampled at rate
 * rate, and of bytes in blocks (allocated, temporary) of which no samples
 * are counted. */
double stack_variance(const struct snap_stack *st, uint64_t rate);
double volume_variance(uint64_t bytes, uint64_t blocks, uint64_t rate);
/* A row's change and its uncertainty, once every snapshot is collected. */
void row_finish(struct row *w, bool diff, enum report_sample sample);
/* The bytes, blocks and variance of f that --sample picks. */
uint64_t sample_bytes(const struct figures *f, enum report_sample sample);
uint64_t sample_blocks(const struct figures *f, enum report_sample sample);
double sample_var(const struct figures *f, enum report_sample sample);
/* What --sample shows, in words: "live heap", "allocated", "temporary". */
const char *sample_words(enum report_sample sample);

/* rows-types.c: the CPython objects of rows. Add figures to the part of w
 * named name (file, line) in input k, created if new. */
void row_part_add(struct row *w, const char *name, const char *file, uint32_t line, int k,
		  uint64_t bytes, uint64_t blocks);
/* The chains of the last snapshot that start from a sample of stack si of
 * input k (and of type index type, or any when UINT32_MAX), to row w. */
void row_chains(struct report *r, struct row *w, int k, size_t si, uint32_t type);
/* By stack: the types of the objects stack si of input k holds, as parts of
 * w; *tpos walks input k's typed samples, sorted by stack. */
void row_types(struct report *r, struct row *w, int k, size_t si, size_t *tpos);
/* The parts of a row, the largest first (by growth in a diff, by live bytes
 * after), at most max: into *out (caller frees); how many. */
size_t row_top_parts(const struct report *r, const struct row *w, size_t max, struct row_part **out);
/* The chains of a row, their texts told apart (at most max, caller frees
 * the array and its strings). */
size_t row_chain_texts(const struct row *w, size_t max, char ***out);
/* What one object of a type holds, as a line: "one holds (56 B itself): 2
 * str 120 B, 1 dict 232 B" (caller frees). */
char *row_forward_text(const struct snap_forward *fw);

/* rows.c: a stack's figures into input in's totals; into row w's of input
 * k (rate: its snapshot's sample rate). */
void input_add_total(struct input *in, const struct snap_stack *st);
void row_add_stack(struct row *w, int k, const struct snap_stack *st, uint64_t rate);

/* rows-seen.c: the row a stack of the same frames (and kind, and truncation)
 * went to before, or NULL; *hash is set for rows_seen_put, which records
 * the row w of a stack. pre: the stack's hashes made already, or NULL. */
struct row *rows_seen_get(struct report *r, const struct snap_stack *st, const uint32_t *map, size_t nm,
			  const struct seen_pre *pre, uint64_t *hash);
void rows_seen_put(struct report *r, uint64_t hash, const struct snap_stack *st, const uint32_t *map,
		   size_t nm, const struct seen_pre *pre, const struct row *w);
/* The hashes of stack st (map: its snapshot's nm modules' global indexes)
 * into out: touches nothing shared, for another thread. */
void rows_seen_hash(const struct snap_stack *st, const uint32_t *map, size_t nm, struct seen_pre *out);
/* Ask the memory where the stack of pre would be found for the cache, a few
 * stacks before it is looked up. */
void rows_seen_prefetch(const struct report *r, const struct seen_pre *pre);

/* rows-same.c: with same_index, the row of the previous input's stack of
 * index i when st is that very stack, or NULL. rows_same_begin before input
 * k's stacks (record: keep their rows, rows_same_put, for the next input),
 * rows_same_end after; rows_same_fill_seen puts the previous input's stacks
 * into seen (once), for those of input k looked up there. */
void rows_same_begin(struct report *r, int k, bool record);
struct row *rows_same_get(struct report *r, size_t i, const struct snap_stack *st);
void rows_same_put(struct report *r, size_t i, const struct row *w);
void rows_same_fill_seen(struct report *r);
void rows_same_end(struct report *r, int k);
void rows_same_release(struct report *r);

/* rows-frames.c: what rows need of each frame, kept per address. */
enum { FN_HIDE = 1 << 0, FN_STD = 1 << 1, FN_ALLOC = 1 << 2, FN_KNOWN = 1 << 3 };
/* ... and in a dframe of expand_frames, what rows.c's user_frame and
 * hidden_below say of it (FX_SET: these are known) */
enum { FX_USER = 1 << 4, FX_HIDDEN = 1 << 5, FX_SET = 1 << 6 };
/* What a module is: a system library's, a CPython interpreter's, the agent's. */
enum { MOD_SYSTEM = 1 << 0, MOD_INTERP = 1 << 1, MOD_KNOWN = 1 << 2, MOD_AGENT = 1 << 3 };
uint8_t mod_flags(struct report *r, uint32_t gmod);
/* The FN_ and FX_ flags of source frame j of location loc (number index) in
 * module gmod. */
uint8_t frame_flags(struct report *r, const struct sym_loc *loc, uint32_t index, uint32_t gmod,
		    uint32_t j);
/* Is fn an allocator entry point (malloc, operator new...)? */
bool allocator_function(const char *fn);
/* What d's function name is: FN_ flags (0 for a frame with none). */
uint8_t fn_flags(struct report *r, const struct dframe *d);
/* The symbolized location of g, and its number into *index. */
const struct sym_loc *frame_loc(struct report *r, struct gframe g, uint32_t *index);
/* Source frame j of location loc (number index) of frame g as a dframe. */
struct dframe frame_dframe(struct report *r, const struct sym_loc *loc, uint32_t index,
			   uint32_t j, struct gframe g);
/* Every source frame of the n frames sf (innermost first), inlined ones
 * expanded, into *d (*cap entries, grown as needed). Returns how many. */
size_t expand_frames(struct report *r, const struct snap_frame *sf, const uint32_t *map,
		     size_t nm, uint32_t n, struct dframe **d, size_t *cap);
/* The same frames by place (dframe.place) alone, at most max (0: all): a
 * writer that keeps what it made of each place it saw (folded stacks, flame
 * graphs) needs nothing more of a row whose places it all saw. */
size_t expand_places(struct report *r, const struct snap_frame *sf, const uint32_t *map,
		     size_t nm, uint32_t n, size_t max, uint32_t **pl, size_t *cap);
/* What a row by stack (without --all-frames) is keyed by, found without
 * expanding the stack: the numbers of the frames
 * visible_frames (rows.c) gives, from the head head_of gives, into *ids (*cap
 * entries, grown as needed), and the frames above the head as gap_of gives
 * them into *via. Frames dframe_same (rows.c) calls the same have the same
 * number. Returns how many. */
size_t stack_key_ids(struct report *r, const struct snap_frame *sf, const uint32_t *map,
		     size_t nm, uint32_t n, uint32_t **ids, size_t *cap, struct gap *via);
/* Free what rows-frames.c kept in r. */
void frames_release(struct report *r);
/* Look up every frame of input i (those it shares with input i - 1 at
 * their index were, with it), before any row is made. */
void frames_resolve(struct report *r, int i);
/* Then let the debug information read for them go (symbolizer_drop_debug):
 * libdw holds a module's debug sections decompressed whole (10 MB for
 * libc's), which would otherwise sit beside the rows at a report's peak. */
void frames_resolved(struct report *r);

/* The source frames a row shows, into *out (caller frees): see rows.c. */
size_t row_frames(struct report *r, const struct row *w, size_t max, bool whole,
		  struct dframe **out, size_t *total, size_t *head, char *via, size_t vialen);
/* By stack, of a row whose stacks are all alike: row_frames(r, w, max, true,
 * ...) by place (expand_places), their number into *n. false for any other
 * row, whose frames only row_frames gives. */
bool row_places(struct report *r, const struct row *w, size_t max, uint32_t **pl, size_t *cap,
		size_t *n);
/* A gap in words: "5 frames in libc.so.6", "4-9 std:: frames" ("" for none). */
void describe_gap(const struct report *r, const struct gap *g, char *buf, size_t len);

/* rows-rank.c: orders of rows (for qsort over struct row *), and which rows a
 * report keeps. */
int cmp_seq(const struct row *a, const struct row *b);
int cmp_live(const void *pa, const void *pb);
int cmp_growth_desc(const void *pa, const void *pb);
int cmp_growth_asc(const void *pa, const void *pb);
bool pred_live(const struct report *r, const struct row *w);
bool pred_grown(const struct report *r, const struct row *w);
bool pred_shrunk(const struct report *r, const struct row *w);
/* Rows passing pred, sorted by cmp, at most limit (0: all). Caller frees. */
struct row **select_rows(struct report *r, bool (*pred)(const struct report *, const struct row *),
			 int (*cmp)(const void *, const void *), size_t limit, size_t *n);
/* The same rows (the first limit by cmp), in the order they lie in memory,
 * which is that of their stacks in the snapshot: for writers whose output
 * does not depend on the order (pprof, flame graphs), reading rows and
 * frames in order rather than all over 70 MB for 100 000 stacks. */
struct row **select_rows_in_place(struct report *r, bool (*pred)(const struct report *,
								  const struct row *),
				  int (*cmp)(const void *, const void *), size_t limit, size_t *n);
size_t held_rows(const struct report *r);
const char *status_of(const struct row *w);

/* The figures of every kind of mapping of one snapshot, summed. */
struct kind_sums {
	uint64_t rss[SNAP_REGION_KIND_MAX + 1], anon[SNAP_REGION_KIND_MAX + 1];
	uint64_t swap[SNAP_REGION_KIND_MAX + 1], mappings[SNAP_REGION_KIND_MAX + 1];
};
void sum_kinds(const struct snapshot *s, struct kind_sums *k);
/* Trust figures of a diff: see rows-rank.c. */
int64_t largest_region_growth(const struct report *r, uint32_t *kind);
int64_t rss_growth(const struct report *r);
/* The bytes of an input that both its js stacks and V8's heap pages count. */
uint64_t js_counted_twice(const struct input *in);
double explained_share(const struct report *r);
/* report-table.c: diff's brief header, from the first snapshot to the last
 * (the two, the change, the rows by status, the share of the RSS growth
 * explained, where the rest went, the referrer search's outcome); a run's
 * trend starts with it too. */
void print_brief(FILE *f, const struct report *r);

/* report-table.c: a signed figure in words, also for the flame graph's title. */
const char *fmt_signed(char *buf, size_t n, int64_t v);
/* report-table.c: a snapshot in one line ("before a.snap: pid 12 prog, ..."),
 * and a row's frames after its figures (width columns already printed). */
void print_snapshot_line(FILE *f, const struct input *in, const char *label);
void print_row_frames(FILE *f, struct report *r, const struct row *w, int width);
/* report-table.c: what --by groups by, in a title ("stack") and a count
 * ("stacks"). */
const char *by_title(enum report_by by);
const char *by_plural(enum report_by by);
/* report-json.c: a JSON string (null for NULL), and a row's frames as the
 * members "merged", "head" and "frames". */
void json_str(FILE *f, const char *s);
void json_frames(FILE *f, struct report *r, const struct row *w);

/* report-folded.c: a frame as folded stacks (and flame graphs) label it. */
void folded_name(FILE *f, struct report *r, const struct dframe *d);
/* report-folded.c: frames left out in a merged row's whole stack, likewise. */
void left_out_name(FILE *f, struct report *r, const struct gap *g);

/* report-svg.c: the flame graph, alone (a page) or inline (an <svg> element
 * for an HTML page). */
void report_svg(FILE *f, struct report *r, bool inline_svg);

/* report-json.c: the name --by gives a grouping. */
const char *by_name(enum report_by by);

#endif
