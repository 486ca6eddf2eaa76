/* snapdecode.c: the validating decoder of the .snap binary encoding
 * (memwatch-snapshot(5)): every length, count and reference is checked against
 * the bytes there are, and the first fault is said precisely in a cause string.
 * The encoder is snapshot.c. Linked into the CLI and its tests; no stdio, and
 * nothing exits or prints. */
#include "config.h"

#include <endian.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "snapshot.h"
#include "snapshot-internal.h"
#include "snapframe.h"
#include "snapmsg.h"

/* Smallest encoded size of one record of each list, used to refuse a count that
 * the bytes left could not possibly hold before anything is allocated for it. */
#define MIN_MODULE_LEN (4 + 1 + 3 * 8) /* path length, build-id length, bias, lo, hi */
#define MIN_STACK_LEN 7                /* flags, nframes and five figures, 1 byte each */
#define MIN_FRAME_LEN 2                /* module, offset */
#define MIN_SYMBOL_LEN 3               /* module, offset, nframes */
#define MIN_SYMFRAME_LEN 3             /* function, file, line */
#define MIN_REGION_LEN 7               /* kind, name and five figures */
#define MIN_TYPE_LEN 2                 /* a name: length + 1 and a byte */
#define MIN_TYPED_LEN 5                /* stack, type and three figures */
#define MIN_CHAIN_LEN 4                /* type, stack, end and a count */
#define MIN_LINK_LEN 2                 /* two optional strings */
#define MIN_FORWARD_LEN 3              /* type, bytes and a count */
#define MIN_REFERENT_LEN 3             /* an optional string and two figures */

/* Name of a known section type, for messages. */
static const char *section_name(uint32_t type)
{
	switch (type) {
	case SEC_PROCESS: return "process";
	case SEC_MALLINFO: return "mallinfo";
	case SEC_MODULES: return "modules";
	case SEC_STACKS: return "stacks";
	case SEC_SYMBOLS: return "symbols";
	case SEC_REGIONS: return "regions";
	case SEC_TEMPORARY: return "temporary";
	case SEC_TYPES: return "types";
	case SEC_REFERRERS: return "referrers";
	default: return "unknown";
	}
}

/* ------------------------------------------------------------------------- */
/* Decoding. Every read goes through a cursor that knows where its section ends,
 * so nothing is read out of bounds, and the first failure is kept as the cause. */

struct reader {
	const unsigned char *buf;
	size_t pos;          /* next byte, as an offset from the start of the file */
	size_t end;          /* end of the current section's payload */
	const char *section; /* for messages */
	const char *what;    /* the item being read, for messages: "stack", "module" */
	size_t index;        /* its index */
	char **cause;
	bool failed;
	bool huge;           /* SNAP_DECODE_HUGE */
};

/* Record that the current item runs past its section's end. */
static void overrun(struct reader *r)
{
	if (r->failed)
		return;
	r->failed = true;
	if (r->what)
		set_cause(r->cause, "section '%s' ends at byte %zu inside %s %zu", r->section,
			  r->end, r->what, r->index);
	else
		set_cause(r->cause, "section '%s' ends at byte %zu inside its fixed fields",
			  r->section, r->end);
}

/* Take n bytes; NULL (and the cause set) if the section has fewer left. */
static const unsigned char *take(struct reader *r, size_t n)
{
	if (r->failed)
		return NULL;
	if (r->end - r->pos < n) {
		overrun(r);
		return NULL;
	}
	const unsigned char *p = r->buf + r->pos;
	r->pos += n;
	return p;
}

/* Load an n-byte little-endian unsigned integer. */
static uint64_t load_le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Read a little-endian integer of n bytes (0 after a failure). */
static uint64_t get_le(struct reader *r, int n)
{
	const unsigned char *p = take(r, (size_t)n);
	return p ? load_le(p, n) : 0;
}

static uint8_t get_u8(struct reader *r) { return (uint8_t)get_le(r, 1); }
static uint32_t get_u32(struct reader *r) { return (uint32_t)get_le(r, 4); }
static uint64_t get_u64(struct reader *r) { return get_le(r, 8); }

/* Read an unsigned LEB128 number; at most 10 bytes and 64 bits of value. */
static uint64_t get_varint_slow(struct reader *r)
{
	size_t start = r->pos;
	uint64_t v = 0;

	if (r->failed)
		return 0;
	for (int shift = 0; shift < 70; shift += 7) {
		if (r->pos == r->end) {
			overrun(r);
			return 0;
		}
		uint64_t bits = r->buf[r->pos] & 0x7f;
		bool more = r->buf[r->pos] & 0x80;
		r->pos++;
		if (shift == 63 && bits > 1)
			break; /* more than 64 bits */
		v |= bits << shift;
		if (!more)
			return v;
	}
	r->failed = true;
	set_cause(r->cause, "section '%s': number at byte %zu is longer than 64 bits (%s %zu)",
		  r->section, start, r->what ? r->what : "field", r->index);
	return 0;
}

/* The same, at once for the numbers of up to 9 bytes (63 bits) that end
 * before the section does: every number of a snapshot's stacks. */
static inline uint64_t get_varint(struct reader *r)
{
	const unsigned char *p = r->buf + r->pos;
	uint64_t v = 0;

	if (r->failed || r->end - r->pos < 9)
		return get_varint_slow(r);
	for (int i = 0; i < 9; i++) {
		v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			r->pos += (size_t)i + 1;
			return v;
		}
	}
	return get_varint_slow(r);
}

/* Read a varint that must fit in 32 bits. */
static inline uint32_t get_varint32(struct reader *r, const char *field)
{
	size_t at = r->pos;
	uint64_t v = get_varint(r);
	if (v > UINT32_MAX && !r->failed) {
		r->failed = true;
		set_cause(r->cause, "section '%s': %s %llu at byte %zu does not fit in 32 bits (%s %zu)",
			  r->section, field, (unsigned long long)v, at, r->what ? r->what : "field",
			  r->index);
	}
	return (uint32_t)v;
}

/* Read a count of records that need at least min_len bytes each, refusing a count
 * that the rest of the section could not hold (so no allocation follows from a
 * forged count). */
static size_t get_count(struct reader *r, uint64_t count, size_t min_len, const char *what)
{
	if (r->failed)
		return 0;
	if (count > (r->end - r->pos) / min_len) {
		r->failed = true;
		set_cause(r->cause, "section '%s': %llu %s cannot fit in the %zu bytes left at byte %zu",
			  r->section, (unsigned long long)count, what, r->end - r->pos, r->pos);
		return 0;
	}
	return (size_t)count;
}

/* Copy n bytes into a new NUL-terminated string, refusing an embedded NUL. */
static char *get_chars(struct reader *r, size_t n, const char *field)
{
	size_t at = r->pos;
	const unsigned char *p = take(r, n);
	if (!p)
		return NULL;
	if (memchr(p, '\0', n)) {
		r->failed = true;
		set_cause(r->cause, "section '%s': %s at byte %zu contains a NUL byte", r->section,
			  field, at);
		return NULL;
	}
	char *s = malloc(n + 1);
	if (!s) {
		r->failed = true;
		set_cause(r->cause, "out of memory");
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* Read a string with a u32 length prefix. */
static char *get_str32(struct reader *r, const char *field)
{
	uint32_t n = get_u32(r);
	return r->failed ? NULL : get_chars(r, n, field);
}

/* Read an optional string (varint 0: absent, else length + 1). */
static char *get_optstr(struct reader *r, const char *field)
{
	uint64_t n = get_varint(r);
	if (r->failed || n == 0)
		return NULL;
	if (n - 1 > r->end - r->pos) {
		overrun(r);
		return NULL;
	}
	return get_chars(r, (size_t)(n - 1), field);
}

/* Read a module reference (index + 1; 0 is "no module"); the caller checks it
 * against the module table, to name the frame in its message. */
static uint32_t get_module_ref(struct reader *r)
{
	return get_varint32(r, "module reference") - 1;
}

/* Refuse a module reference beyond the table: "stack 5 frame 2 names module 17
 * of 3" (frame < 0: the item has no frames, as for a symbol). */
static void check_module_ref(struct reader *r, uint32_t module, size_t nmodules, size_t at,
			     long frame)
{
	if (r->failed || snap_module_ref_ok(module, nmodules))
		return;
	r->failed = true;
	if (frame >= 0)
		set_cause(r->cause, "%s %zu frame %zu names module %u of %zu (byte %zu)", r->what,
			  r->index, (size_t)frame, module, nmodules, at);
	else
		set_cause(r->cause, "%s %zu names module %u of %zu (byte %zu)", r->what, r->index,
			  module, nmodules, at);
}

/* Allocate n zeroed records (n already checked against the input length). */
static void *alloc_records(struct reader *r, size_t n, size_t size)
{
	if (r->failed || n == 0)
		return NULL;
	void *p = calloc(n, size);
	if (!p) {
		r->failed = true;
		set_cause(r->cause, "out of memory");
	}
	return p;
}

/* Where each known section sits in the input. */
struct section_loc {
	bool seen;
	size_t start, end; /* payload bounds */
};

/* Position r on a section's payload. */
static void enter_section(struct reader *r, const struct section_loc *loc, uint32_t type)
{
	r->pos = loc->start;
	r->end = loc->end;
	r->section = section_name(type);
	r->what = NULL;
	r->index = 0;
}

/* The process section: fixed fields, then exe and cmdline. */
static void decode_process(struct reader *r, struct snapshot *s)
{
	size_t rate_at;
	s->pid = (int32_t)get_u32(r);
	s->max_depth = get_u32(r);
	s->time_ns = get_u64(r);
	s->capture_start_ns = get_u64(r);
	rate_at = r->pos;
	s->sample_rate = get_u64(r);
	s->rss_bytes = get_u64(r);
	s->dropped_stacks = get_u64(r);
	s->dropped_bytes = get_u64(r);
	s->exe = get_str32(r, "exe");
	s->cmdline = get_str32(r, "cmdline");
	/* fields appended later: absent in older files */
	if (!r->failed && r->end - r->pos >= 8) {
		s->python = get_u32(r);
		s->python_version = get_u32(r);
	}
	if (!r->failed && r->end - r->pos >= 4) {
		s->js = get_u32(r);
		s->js_version = get_optstr(r, "js_version");
		s->js_why = get_optstr(r, "js_why");
		/* a state this reader does not know says nothing it can use */
		if (s->js > SNAP_JS_MAX)
			s->js = SNAP_JS_NONE;
	}
	if (!r->failed && s->sample_rate == 0) {
		r->failed = true;
		set_cause(r->cause, "section 'process': sample rate 0 at byte %zu is not valid",
			  rate_at);
	}
}

/* The mallinfo section: five u64 figures. */
static void decode_mallinfo(struct reader *r, struct snapshot *s)
{
	s->mallinfo.arena = get_u64(r);
	s->mallinfo.mmapped = get_u64(r);
	s->mallinfo.in_use = get_u64(r);
	s->mallinfo.free_bytes = get_u64(r);
	s->mallinfo.releasable = get_u64(r);
	s->mallinfo.present = !r->failed;
}

/* The modules section: u32 count, then path, build-id, bias and range each. */
static void decode_modules(struct reader *r, struct snapshot *s)
{
	uint32_t count = get_u32(r);
	size_t n = get_count(r, count, MIN_MODULE_LEN, "modules");
	if (n == UINT32_MAX) { /* the index UINT32_MAX means "no module" */
		r->failed = true;
		set_cause(r->cause, "section 'modules': too many modules (%zu)", n);
		return;
	}
	s->modules = alloc_records(r, n, sizeof *s->modules);
	if (!s->modules)
		return;
	s->nmodules = n;
	r->what = "module";
	for (size_t i = 0; i < n && !r->failed; i++) {
		struct snap_module *m = &s->modules[i];
		r->index = i;
		m->path = get_str32(r, "module path");
		size_t at = r->pos;
		m->build_id_len = get_u8(r);
		if (!r->failed && m->build_id_len > SNAP_BUILD_ID_MAX) {
			r->failed = true;
			set_cause(r->cause, "section 'modules': module %zu build-id of %u bytes at byte %zu (at most %d)",
				  i, m->build_id_len, at, SNAP_BUILD_ID_MAX);
			return;
		}
		const unsigned char *id = take(r, m->build_id_len);
		if (id)
			memcpy(m->build_id, id, m->build_id_len);
		m->bias = get_u64(r);
		at = r->pos;
		m->lo = get_u64(r);
		m->hi = get_u64(r);
		if (!r->failed && m->lo > m->hi) {
			r->failed = true;
			set_cause(r->cause, "section 'modules': module %zu range at byte %zu ends before it starts",
				  i, at);
		}
	}
}

/* The frames of a snapshot's stacks are kept in chunks of this many bytes
 * or so (one stack's frames are never split): 100 000 stacks are a few
 * allocations, not 100 000, and each is small enough for malloc to reuse
 * the memory a snapshot freed before rather than map it anew. Those asked
 * for in 2 MiB pages are larger, as only the whole pages inside a chunk
 * can be: seven in eight of them, not one in two. */
#define FRAME_CHUNK_BYTES (4u << 20)
#define HUGE_FRAME_CHUNK_BYTES (16u << 20)

/* Room for nf frames in s's current chunk, a new chunk when it has not; the
 * frames there are the caller's to fill. NULL when out of memory. */
static struct snap_frame *frames_room(struct snapshot *s, size_t nf, size_t upper, bool huge)
{
	struct snap_frame_chunk *c = s->frame_block;
	size_t cap;

	if (c && nf <= c->cap - c->used) {
		c->used += nf;
		return c->f + c->used - nf;
	}
	/* no more than the bytes left could hold: a small snapshot's one chunk
	 * is its size */
	cap = (huge ? HUGE_FRAME_CHUNK_BYTES : FRAME_CHUNK_BYTES) / sizeof(struct snap_frame);
	cap = cap < upper ? cap : upper;
	cap = cap > nf ? cap : nf;
	c = malloc(sizeof *c + cap * sizeof(struct snap_frame));
	if (!c)
		return NULL;
	if (huge)
		bigmem_advise(c, sizeof *c + cap * sizeof(struct snap_frame));
	c->next = s->frame_block;
	c->cap = cap;
	c->used = nf;
	s->frame_block = c;
	return c->f;
}

/* Give back the room frames_room made last for nf frames. */
static void frames_unroom(struct snapshot *s, size_t nf)
{
	s->frame_block->used -= nf;
}

/* The stacks section: varint count, then per stack flags, frames and figures.
 * With like (another snapshot of the same process, kept longer than s), a
 * stack whose frames are byte for byte those of like's stack of its index
 * shares them rather than holding a copy. */
static void decode_stacks(struct reader *r, struct snapshot *s, const struct snapshot *like,
			  bool keep)
{
	size_t n = get_count(r, get_varint(r), MIN_STACK_LEN, "stacks");
	/* like's frames are good here when its module numbers are */
	bool raw_like = like && like->raw && like->nmodules <= s->nmodules;

	s->stacks = alloc_records(r, n, sizeof *s->stacks);
	if (!s->stacks)
		return;
	if (keep) {
		s->raw_at = alloc_records(r, n, sizeof *s->raw_at);
		s->raw_len = alloc_records(r, n, sizeof *s->raw_len);
		if (!s->raw_at || !s->raw_len)
			return;
	}
	s->nstacks = n;
	r->what = "stack";
	bool pext = pext_fast();
	for (size_t i = 0; i < n && !r->failed; i++) {
		struct snap_stack *st = &s->stacks[i];
		struct snap_frame *fr = NULL;
		r->index = i;
		st->flags = get_varint32(r, "flags");
		uint32_t nframes = get_varint32(r, "frame count");
		size_t nf = get_count(r, nframes, MIN_FRAME_LEN, "frames");
		if (r->failed)
			break;
		size_t frames_at = r->pos;
		st->nframes = (uint32_t)nf;
		if (raw_like && nf && i < like->nstacks && like->stacks[i].nframes == nf &&
		    like->raw_len[i] <= r->end - r->pos &&
		    memcmp(r->buf + r->pos, like->raw + like->raw_at[i], like->raw_len[i]) == 0) {
			/* the same bytes read as the same frames: like's */
			st->frames = like->stacks[i].frames;
			s->frames_borrowed = true;
			r->pos += like->raw_len[i];
		} else if (nf) {
			fr = frames_room(s, nf, (r->end - r->pos) / MIN_FRAME_LEN, r->huge);
			if (!fr) {
				r->failed = true;
				set_cause(r->cause, "out of memory");
				break;
			}
			st->frames = fr;
			for (uint32_t f = 0; f < nf && !r->failed; f++) {
				size_t at = r->pos;
				if (r->end - r->pos >= 9 &&
				    frame9(r->buf + r->pos, s->nmodules, &fr[f], &r->pos, pext))
					continue;
				fr[f].module = get_module_ref(r);
				check_module_ref(r, fr[f].module, s->nmodules, at, (long)f);
				fr[f].offset = get_varint(r);
			}
			if (like && i < like->nstacks && like->stacks[i].nframes == nf && !r->failed &&
			    memcmp(like->stacks[i].frames, fr, nf * sizeof *fr) == 0) {
				frames_unroom(s, nf);
				st->frames = like->stacks[i].frames;
				s->frames_borrowed = true;
			}
		}
		if (keep) {
			s->raw_at[i] = frames_at;
			s->raw_len[i] = r->pos - frames_at;
		}
		st->live_bytes = get_varint(r);
		st->live_blocks = get_varint(r);
		st->live_samples = get_varint(r);
		st->alloc_bytes = get_varint(r);
		st->alloc_blocks = get_varint(r);
	}
}

/* The temporary section: the window, then a varint count that is the stacks'
 * and their temp_bytes and temp_blocks in the stacks' order. */
static void decode_temporary(struct reader *r, struct snapshot *s)
{
	size_t at;
	uint64_t n;

	s->temp_window_ns = get_varint(r);
	at = r->pos;
	n = get_varint(r);
	if (!r->failed && n != s->nstacks) {
		r->failed = true;
		set_cause(r->cause, "section 'temporary': %llu stacks at byte %zu, the stacks section has %zu",
			  (unsigned long long)n, at, s->nstacks);
		return;
	}
	r->what = "stack";
	for (size_t i = 0; i < s->nstacks && !r->failed; i++) {
		r->index = i;
		s->stacks[i].temp_bytes = get_varint(r);
		s->stacks[i].temp_blocks = get_varint(r);
	}
	s->has_temp = !r->failed;
}

/* The symbols section: varint count, then per address its resolved frames. */
static void decode_symbols(struct reader *r, struct snapshot *s)
{
	size_t n = get_count(r, get_varint(r), MIN_SYMBOL_LEN, "symbols");
	s->symbols = alloc_records(r, n, sizeof *s->symbols);
	if (!s->symbols)
		return;
	s->nsymbols = n;
	r->what = "symbol";
	for (size_t i = 0; i < n && !r->failed; i++) {
		struct snap_symbol *sym = &s->symbols[i];
		size_t at = r->pos;
		r->index = i;
		sym->module = get_module_ref(r);
		check_module_ref(r, sym->module, s->nmodules, at, -1);
		sym->offset = get_varint(r);
		uint32_t nframes = get_varint32(r, "frame count");
		size_t nf = get_count(r, nframes, MIN_SYMFRAME_LEN, "symbol frames");
		sym->frames = alloc_records(r, nf, sizeof *sym->frames);
		if (r->failed)
			return;
		sym->nframes = (uint32_t)nf;
		for (uint32_t f = 0; f < nf && !r->failed; f++) {
			sym->frames[f].function = get_optstr(r, "function name");
			sym->frames[f].file = get_optstr(r, "file name");
			sym->frames[f].line = get_varint32(r, "line");
		}
	}
}

/* The regions section: varint count, then kind, name and figures each. A kind
 * this reader does not know is read as "other", so a later writer may add
 * kinds. */
static void decode_regions(struct reader *r, struct snapshot *s)
{
	size_t n = get_count(r, get_varint(r), MIN_REGION_LEN, "regions");
	s->has_regions = !r->failed;
	s->regions = alloc_records(r, n, sizeof *s->regions);
	if (!s->regions)
		return;
	s->nregions = n;
	r->what = "region";
	for (size_t i = 0; i < n && !r->failed; i++) {
		struct snap_region *g = &s->regions[i];
		r->index = i;
		g->kind = get_varint32(r, "kind");
		if (g->kind > SNAP_REGION_KIND_MAX)
			g->kind = SNAP_REGION_OTHER;
		g->name = get_optstr(r, "region name");
		g->mappings = get_varint(r);
		g->size = get_varint(r);
		g->rss = get_varint(r);
		g->anon = get_varint(r);
		g->swap = get_varint(r);
	}
}

static void decode_types(struct reader *r, struct snapshot *s)
{
	size_t n = get_count(r, get_varint(r), MIN_TYPE_LEN, "types"), m;
	s->types = alloc_records(r, n, sizeof *s->types);
	if (!s->types)
		return;
	s->ntypes = n;
	r->what = "type";
	for (size_t i = 0; i < n && !r->failed; i++) {
		r->index = i;
		s->types[i] = get_optstr(r, "type name");
		if (!s->types[i] && !r->failed) {
			r->failed = true;
			set_cause(r->cause, "section '%s': type %zu has no name", r->section, i);
		}
	}
	m = get_count(r, get_varint(r), MIN_TYPED_LEN, "typed samples");
	if (r->failed || !m)
		return;
	s->typed = alloc_records(r, m, sizeof *s->typed);
	if (!s->typed)
		return;
	s->ntyped = m;
	r->what = "typed samples";
	for (size_t i = 0; i < m && !r->failed; i++) {
		struct snap_typed *t = &s->typed[i];
		r->index = i;
		t->stack = get_varint32(r, "stack");
		t->type = get_varint32(r, "type");
		t->live_samples = get_varint(r);
		t->live_bytes = get_varint(r);
		t->live_blocks = get_varint(r);
		if (!r->failed && (t->stack >= s->nstacks || t->type >= s->ntypes)) {
			r->failed = true;
			set_cause(r->cause, "section '%s': typed samples %zu name stack %u of %zu, type %u of %zu",
				  r->section, i, t->stack, s->nstacks, t->type, s->ntypes);
		}
	}
}

/* Section 9: the referrer search. A later version of the section (its first
 * field) is skipped whole: the snapshot reads as one without it. */
static void decode_referrers(struct reader *r, struct snapshot *s)
{
	struct snap_refsearch *q = &s->refsearch;
	uint64_t version = get_varint(r);
	size_t n;

	if (r->failed || version != SNAP_REFS_VERSION)
		return;
	s->has_refs = true;
	q->status = get_varint32(r, "status");
	q->limit_ns = get_varint(r);
	q->max_objects = get_varint(r);
	q->pause_ns = get_varint(r);
	q->visited = get_varint(r);
	q->tracked = get_varint(r);
	q->passes = get_varint32(r, "passes");
	q->note = get_optstr(r, "note");
	if (q->status > SNAP_REFS_UNAVAILABLE)
		q->status = SNAP_REFS_UNAVAILABLE;
	n = get_count(r, get_varint(r), MIN_CHAIN_LEN, "chains");
	if (r->failed)
		return;
	if (n) {
		s->chains = alloc_records(r, n, sizeof *s->chains);
		if (!s->chains)
			return;
		s->nchains = n;
	}
	r->what = "chain";
	for (size_t i = 0; i < n && !r->failed; i++) {
		struct snap_refchain *c = &s->chains[i];
		size_t k;
		r->index = i;
		c->type = get_varint32(r, "type");
		c->stack = get_varint32(r, "stack");
		c->end = get_varint32(r, "end");
		if (c->end > SNAP_CHAIN_STOPPED)
			c->end = SNAP_CHAIN_STOPPED;
		k = get_count(r, get_varint(r), MIN_LINK_LEN, "links");
		if (!r->failed && (c->type >= s->ntypes || c->stack >= s->nstacks || !k)) {
			r->failed = true;
			set_cause(r->cause, "section '%s': chain %zu names type %u of %zu, stack %u of %zu, %zu links",
				  r->section, i, c->type, s->ntypes, c->stack, s->nstacks, k);
		}
		if (r->failed)
			return;
		c->links = alloc_records(r, k, sizeof *c->links);
		if (!c->links)
			return;
		c->nlinks = (uint32_t)k;
		for (size_t j = 0; j < k && !r->failed; j++) {
			c->links[j].edge = get_optstr(r, "edge");
			c->links[j].type = get_optstr(r, "link type");
		}
	}
	n = get_count(r, get_varint(r), MIN_FORWARD_LEN, "forward views");
	if (r->failed || !n)
		return;
	s->forward = alloc_records(r, n, sizeof *s->forward);
	if (!s->forward)
		return;
	s->nforward = n;
	r->what = "forward view";
	for (size_t i = 0; i < n && !r->failed; i++) {
		struct snap_forward *f = &s->forward[i];
		size_t k;
		r->index = i;
		f->type = get_varint32(r, "type");
		f->bytes = get_varint(r);
		k = get_count(r, get_varint(r), MIN_REFERENT_LEN, "referents");
		if (!r->failed && f->type >= s->ntypes) {
			r->failed = true;
			set_cause(r->cause, "section '%s': forward view %zu names type %u of %zu",
				  r->section, i, f->type, s->ntypes);
		}
		if (r->failed || !k)
			continue;
		f->referents = alloc_records(r, k, sizeof *f->referents);
		if (!f->referents)
			return;
		f->nreferents = (uint32_t)k;
		for (size_t j = 0; j < k && !r->failed; j++) {
			f->referents[j].type = get_optstr(r, "referent type");
			f->referents[j].count = get_varint(r);
			f->referents[j].bytes = get_varint(r);
		}
	}
}

/* Check the header, the checksum and the section headers; fill locs for the
 * known sections. The checksum decides how a fault is named: when it holds, the
 * bytes are what the writer wrote and a fault is a malformed file; when it does
 * not, a section running past the end means the file was cut ("truncated at
 * byte N"), and anything else means it was damaged ("checksum mismatch"). 0 or
 * -1 with *cause. */
static int decode_frame(const unsigned char *buf, size_t len, struct snapshot *s,
			struct section_loc locs[SEC_KNOWN_MAX + 1], bool check_crc, char **cause)
{
	size_t body_end, pos;
	uint32_t nsections;
	bool crc_ok;

	if (len == 0) {
		set_cause(cause, "empty file: not a memwatch snapshot");
		return -1;
	}
	size_t cmp = len < SNAP_MAGIC_LEN ? len : SNAP_MAGIC_LEN;
	if (memcmp(buf, SNAPSHOT_MAGIC, cmp) != 0) {
		set_cause(cause, "not a memwatch snapshot (no MEMWSNAP signature at byte 0)");
		return -1;
	}
	if (len < SNAP_HEADER_LEN + SNAP_TRAILER_LEN) {
		set_cause(cause, "truncated at byte %zu (header)", len);
		return -1;
	}
	/* The version comes first: a newer format may frame its bytes differently. */
	s->version = (uint32_t)load_le(buf + 8, 2);
	if (s->version > SNAPSHOT_VERSION) {
		set_cause(cause, "format version %u is newer than this memwatch reads (%d)",
			  s->version, SNAPSHOT_VERSION);
		return -1;
	}
	body_end = len - SNAP_TRAILER_LEN;
	crc_ok = !check_crc || snap_crc(buf, body_end) == (uint32_t)load_le(buf + body_end, 4);
	if (s->version == 0) {
		set_cause(cause, crc_ok ? "format version 0 at byte 8 is not valid"
					: "checksum mismatch (file corrupted)");
		return -1;
	}
	nsections = (uint32_t)load_le(buf + 12, 4);

	pos = SNAP_HEADER_LEN;
	for (uint32_t i = 0; i < nsections; i++) {
		if (body_end - pos < SNAP_SECTION_HDR_LEN) {
			if (crc_ok)
				set_cause(cause, "section %u of %u: no room for its header at byte %zu (the file ends at %zu)",
					  i + 1, nsections, pos, body_end);
			else
				set_cause(cause, "truncated at byte %zu (header of section %u of %u)",
					  len, i + 1, nsections);
			return -1;
		}
		uint32_t type = (uint32_t)load_le(buf + pos, 4);
		uint32_t flags = (uint32_t)load_le(buf + pos + 4, 4);
		uint64_t length = load_le(buf + pos + 8, 8);
		size_t hdr_at = pos;
		bool known = type >= SEC_PROCESS && type <= SEC_KNOWN_MAX;
		pos += SNAP_SECTION_HDR_LEN;
		if (length > body_end - pos) {
			if (crc_ok)
				set_cause(cause, "section at byte %zu declares %llu bytes, only %zu remain",
					  hdr_at, (unsigned long long)length, body_end - pos);
			else if (known)
				set_cause(cause, "truncated at byte %zu (section '%s')", len,
					  section_name(type));
			else
				set_cause(cause, "truncated at byte %zu (section of type %u)", len, type);
			return -1;
		}
		if (!crc_ok) {
			/* Structure is only judged on intact bytes; skip to the next. */
		} else if (known && locs[type].seen) {
			set_cause(cause, "section '%s' appears twice (again at byte %zu)",
				  section_name(type), hdr_at);
			return -1;
		} else if (known) {
			locs[type].seen = true;
			locs[type].start = pos;
			locs[type].end = pos + (size_t)length;
		} else if (flags & SNAP_SECTION_REQUIRED) {
			set_cause(cause, "section of type %u at byte %zu is required but unknown to this memwatch (format %d)",
				  type, hdr_at, SNAPSHOT_VERSION);
			return -1;
		}
		pos += (size_t)length;
	}
	if (!crc_ok) {
		/* A whole snapshot followed by something else reads well up to its own
		 * trailer: say so rather than calling it corrupt. */
		if (pos < body_end && snap_crc(buf, pos) == (uint32_t)load_le(buf + pos, 4))
			set_cause(cause, "%zu unexpected bytes after the end of the snapshot at byte %zu",
				  len - pos - SNAP_TRAILER_LEN, pos + SNAP_TRAILER_LEN);
		else
			set_cause(cause, "checksum mismatch (file corrupted)");
		return -1;
	}
	if (pos != body_end) {
		set_cause(cause, "%zu unexpected bytes after the last section at byte %zu",
			  body_end - pos, pos);
		return -1;
	}
	for (uint32_t t = SEC_PROCESS; t <= SEC_KNOWN_MAX; t++) {
		if (!locs[t].seen && t != SEC_MALLINFO && t != SEC_SYMBOLS && t != SEC_REGIONS &&
		    t != SEC_TEMPORARY && t != SEC_TYPES && t != SEC_REFERRERS) {
			set_cause(cause, "section '%s' is missing", section_name(t));
			return -1;
		}
	}
	return 0;
}

/* Decode buf: every section (whole), or the head that snapshot_decode_head
 * says, without the checksum. */
static struct snapshot *decode(const unsigned char *buf, size_t len, char **cause, bool whole,
			       const struct snapshot *like, unsigned flags)
{
	struct section_loc locs[SEC_KNOWN_MAX + 1];
	struct snapshot *s;
	struct reader r = { .buf = buf, .cause = cause, .huge = flags & SNAP_DECODE_HUGE };

	if (cause)
		*cause = NULL;
	s = calloc(1, sizeof *s);
	if (!s) {
		set_cause(cause, "out of memory");
		return NULL;
	}
	memset(locs, 0, sizeof locs);
	/* (the checksum reads every byte: the head goes without) */
	if (decode_frame(buf, len, s, locs, whole, cause) < 0) {
		snapshot_free(s);
		return NULL;
	}
	/* Modules first: stacks and symbols refer to them. Bytes after the fields a
	 * section is known to have are ignored (later versions may append fields). */
	enter_section(&r, &locs[SEC_PROCESS], SEC_PROCESS);
	decode_process(&r, s);
	if (!r.failed && locs[SEC_MALLINFO].seen) {
		enter_section(&r, &locs[SEC_MALLINFO], SEC_MALLINFO);
		decode_mallinfo(&r, s);
	}
	if (!r.failed) {
		enter_section(&r, &locs[SEC_MODULES], SEC_MODULES);
		decode_modules(&r, s);
	}
	if (!r.failed && whole) {
		enter_section(&r, &locs[SEC_STACKS], SEC_STACKS);
		decode_stacks(&r, s, like, flags & SNAP_DECODE_KEEP);
	}
	if (!r.failed && locs[SEC_SYMBOLS].seen) {
		enter_section(&r, &locs[SEC_SYMBOLS], SEC_SYMBOLS);
		decode_symbols(&r, s);
	}
	if (!r.failed && whole && locs[SEC_REGIONS].seen) {
		enter_section(&r, &locs[SEC_REGIONS], SEC_REGIONS);
		decode_regions(&r, s);
	}
	if (!r.failed && whole && locs[SEC_TEMPORARY].seen) {
		enter_section(&r, &locs[SEC_TEMPORARY], SEC_TEMPORARY);
		decode_temporary(&r, s);
	}
	if (!r.failed && whole && locs[SEC_TYPES].seen) {
		enter_section(&r, &locs[SEC_TYPES], SEC_TYPES);
		decode_types(&r, s);
	}
	if (!r.failed && whole && locs[SEC_REFERRERS].seen) {
		enter_section(&r, &locs[SEC_REFERRERS], SEC_REFERRERS);
		decode_referrers(&r, s);
	}
	if (r.failed) {
		snapshot_free(s);
		return NULL;
	}
	return s;
}

struct snapshot *snapshot_decode(const unsigned char *buf, size_t len, char **cause)
{
	return decode(buf, len, cause, true, NULL, 0);
}

struct snapshot *snapshot_decode_like(const unsigned char *buf, size_t len,
				      const struct snapshot *like, char **cause)
{
	return decode(buf, len, cause, true, like, 0);
}

struct snapshot *snapshot_decode_raw(const unsigned char *buf, size_t len,
				     const struct snapshot *like, unsigned flags, char **cause)
{
	return decode(buf, len, cause, true, like, flags);
}

struct snapshot *snapshot_decode_head(const unsigned char *buf, size_t len, char **cause)
{
	return decode(buf, len, cause, false, NULL, 0);
}

/* Move past count varints, a word at a time: their last bytes are the bytes
 * without the top bit. false (the cause set) when the section ends first. */
static bool skip_varints(struct reader *r, uint64_t count)
{
	while (count && r->end - r->pos >= 8) {
		uint64_t w, t;
		unsigned c;
		memcpy(&w, r->buf + r->pos, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w = __builtin_bswap64(w);
#endif
		t = ~w & UINT64_C(0x8080808080808080);
		/* the stop bits counted by a multiply (no popcount instruction
		 * is assumed): each byte's 0 or 1 summed into the top byte */
		c = (unsigned)(((t >> 7) * UINT64_C(0x0101010101010101)) >> 56);
		if (c < count) {
			count -= c;
			r->pos += 8;
			continue;
		}
		while (--count)
			t &= t - 1;
		r->pos += (size_t)(__builtin_ctzll(t) >> 3) + 1;
		return true;
	}
	for (; count && r->pos < r->end; r->pos++)
		if (!(r->buf[r->pos] & 0x80))
			count--;
	if (count) {
		overrun(r);
		return false;
	}
	return true;
}

int snapshot_scan_stacks(const unsigned char *buf, size_t len, snapshot_raw_fn *each, void *arg,
			 bool *more, char **cause)
{
	struct section_loc locs[SEC_KNOWN_MAX + 1];
	struct snapshot head;
	struct reader r = { .buf = buf, .cause = cause };
	size_t n;

	if (cause)
		*cause = NULL;
	memset(&head, 0, sizeof head);
	memset(locs, 0, sizeof locs);
	if (decode_frame(buf, len, &head, locs, true, cause) < 0)
		return -1;
	*more = locs[SEC_TYPES].seen || locs[SEC_REFERRERS].seen;
	enter_section(&r, &locs[SEC_STACKS], SEC_STACKS);
	n = get_count(&r, get_varint(&r), MIN_STACK_LEN, "stacks");
	r.what = "stack";
	for (size_t i = 0; i < n && !r.failed; i++) {
		struct snap_raw_stack st;
		r.index = i;
		st.flags = get_varint32(&r, "flags");
		st.nframes = get_varint32(&r, "frame count");
		st.frames = buf + r.pos;
		if (r.failed || !skip_varints(&r, 2 * (uint64_t)st.nframes))
			break;
		st.frames_len = (size_t)(buf + r.pos - st.frames);
		st.live_bytes = get_varint(&r);
		st.live_blocks = get_varint(&r);
		st.live_samples = get_varint(&r);
		st.alloc_bytes = get_varint(&r);
		st.alloc_blocks = get_varint(&r);
		if (!r.failed)
			each(arg, i, &st);
	}
	return r.failed ? -1 : 0;
}
