/* snapshot.c: the .snap binary encoding (memwatch-snapshot(5)): the encoder and
 * the release of a snapshot; the validating decoder is snapdecode.c. Compiled
 * into the CLI and into the agent (which only encodes), which runs inside the
 * target: only malloc/free, string functions and zlib's crc32 (ISA-L's in the
 * CLI, see snap_crc) are used here,
 * never stdio, and nothing exits or prints. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zlib.h>
#ifdef MW_ISAL_CRC
#include <isa-l/crc.h>
#endif

#include "snapshot.h"
#include "snapshot-internal.h"

const char *snap_kind_name(int kind)
{
	static const char *const names[] = { "malloc", "mmap", "brk", "file", "js" };
	return kind >= 0 && kind < (int)(sizeof names / sizeof names[0]) ? names[kind] : "?";
}

/* ------------------------------------------------------------------------- */
/* Encoding. The same code runs twice: once with no buffer to measure the exact
 * size, once into a buffer of that size, so encoding allocates exactly once. */

struct writer {
	unsigned char *buf;  /* NULL while measuring */
	size_t pos;
};

/* Append n bytes (or only count them while measuring). */
static void put_bytes(struct writer *w, const void *p, size_t n)
{
	if (w->buf && n)
		memcpy(w->buf + w->pos, p, n);
	w->pos += n;
}

/* Store v little-endian in n bytes at dst. */
static void store_le(unsigned char *dst, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		dst[i] = (unsigned char)(v >> (8 * i));
}

/* Append an unsigned little-endian integer of n bytes. */
static void put_le(struct writer *w, uint64_t v, int n)
{
	unsigned char b[8];
	store_le(b, v, n);
	put_bytes(w, b, (size_t)n);
}

static void put_u8(struct writer *w, uint8_t v) { put_le(w, v, 1); }
static void put_u16(struct writer *w, uint16_t v) { put_le(w, v, 2); }
static void put_u32(struct writer *w, uint32_t v) { put_le(w, v, 4); }
static void put_u64(struct writer *w, uint64_t v) { put_le(w, v, 8); }

/* Bytes of the LEB128 encoding of v. */
static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Append v as unsigned LEB128: seven bits a byte, low bits first, the high bit
 * set on every byte but the last. The bulk of a file is these, so they are
 * written straight into the buffer (or only counted while measuring). */
static void put_varint(struct writer *w, uint64_t v)
{
	if (!w->buf) {
		w->pos += varint_len(v);
		return;
	}
	unsigned char *p = w->buf + w->pos;
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	w->pos = (size_t)(p - w->buf);
}

/* A module index on the wire: index + 1, so "no module" (UINT32_MAX) is 0. */
static void put_module_ref(struct writer *w, uint32_t module)
{
	put_varint(w, (uint32_t)(module + 1));
}

/* Append a string with a u32 length prefix (NULL is written as ""). */
static void put_str32(struct writer *w, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	put_u32(w, (uint32_t)n);
	put_bytes(w, s, n);
}

/* Append an optional string: varint 0 for NULL, else length + 1, then the bytes. */
static void put_optstr(struct writer *w, const char *s)
{
	if (!s) {
		put_varint(w, 0);
		return;
	}
	size_t n = strlen(s);
	put_varint(w, (uint64_t)n + 1);
	put_bytes(w, s, n);
}

/* Begin a section: write its header with a zero length; returns where the
 * payload starts so end_section can fill the length in. */
static size_t begin_section(struct writer *w, uint32_t type, uint32_t flags)
{
	put_u32(w, type);
	put_u32(w, flags);
	put_u64(w, 0);
	return w->pos;
}

/* End a section: patch its length field now that the payload is written. */
static void end_section(struct writer *w, size_t payload_start)
{
	if (w->buf)
		store_le(w->buf + payload_start - 8, w->pos - payload_start, 8);
}

/* CRC-32 of len bytes (zlib's crc32, the reflected IEEE polynomial). The CLI
 * is built with MW_ISAL_CRC: ISA-L's crc32_gzip_refl, the same CRC folded
 * with carry-less multiplies where the processor has them, about eight times
 * zlib's speed, which a report of a large snapshot (two, for diff) spends
 * before it decodes anything. The agent keeps zlib's, linked in statically. */
uint32_t snap_crc(const unsigned char *p, size_t len)
{
#ifdef MW_ISAL_CRC
	return crc32_gzip_refl(0, p, len);
#else
	uLong crc = crc32(0L, Z_NULL, 0);
	while (len) {
		size_t chunk = len > UINT_MAX / 2 ? UINT_MAX / 2 : len;
		crc = crc32(crc, p, (uInt)chunk);
		p += chunk;
		len -= chunk;
	}
	return (uint32_t)crc;
#endif
}

/* Write the whole encoding of s (header, sections, trailer) into w. */
static void encode_into(struct writer *w, const struct snapshot *s)
{
	uint32_t nsections = 3 + (s->mallinfo.present ? 1 : 0) + (s->nsymbols ? 1 : 0) +
			     (s->has_regions ? 1 : 0) + (s->has_temp ? 1 : 0) + (s->ntypes ? 1 : 0) +
			     (s->has_refs ? 1 : 0);
	size_t at;

	put_bytes(w, SNAPSHOT_MAGIC, SNAP_MAGIC_LEN);
	put_u16(w, SNAPSHOT_VERSION);
	put_u16(w, 0);
	put_u32(w, nsections);

	at = begin_section(w, SEC_PROCESS, SNAP_SECTION_REQUIRED);
	put_u32(w, (uint32_t)s->pid);
	put_u32(w, s->max_depth);
	put_u64(w, s->time_ns);
	put_u64(w, s->capture_start_ns);
	put_u64(w, s->sample_rate);
	put_u64(w, s->rss_bytes);
	put_u64(w, s->dropped_stacks);
	put_u64(w, s->dropped_bytes);
	put_str32(w, s->exe);
	put_str32(w, s->cmdline);
	/* appended to the section: readers that predate them ignore them */
	put_u32(w, s->python);
	put_u32(w, s->python_version);
	put_u32(w, s->js);
	put_optstr(w, s->js_version);
	put_optstr(w, s->js_why);
	end_section(w, at);

	if (s->mallinfo.present) {
		at = begin_section(w, SEC_MALLINFO, 0);
		put_u64(w, s->mallinfo.arena);
		put_u64(w, s->mallinfo.mmapped);
		put_u64(w, s->mallinfo.in_use);
		put_u64(w, s->mallinfo.free_bytes);
		put_u64(w, s->mallinfo.releasable);
		end_section(w, at);
	}

	at = begin_section(w, SEC_MODULES, SNAP_SECTION_REQUIRED);
	put_u32(w, (uint32_t)s->nmodules);
	for (size_t i = 0; i < s->nmodules; i++) {
		const struct snap_module *m = &s->modules[i];
		put_str32(w, m->path);
		put_u8(w, (uint8_t)m->build_id_len);
		put_bytes(w, m->build_id, m->build_id_len);
		put_u64(w, m->bias);
		put_u64(w, m->lo);
		put_u64(w, m->hi);
	}
	end_section(w, at);

	at = begin_section(w, SEC_STACKS, SNAP_SECTION_REQUIRED);
	put_varint(w, s->nstacks);
	for (size_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];
		put_varint(w, st->flags);
		put_varint(w, st->nframes);
		for (uint32_t f = 0; f < st->nframes; f++) {
			put_module_ref(w, st->frames[f].module);
			put_varint(w, st->frames[f].offset);
		}
		put_varint(w, st->live_bytes);
		put_varint(w, st->live_blocks);
		put_varint(w, st->live_samples);
		put_varint(w, st->alloc_bytes);
		put_varint(w, st->alloc_blocks);
	}
	end_section(w, at);

	if (s->nsymbols) {
		at = begin_section(w, SEC_SYMBOLS, 0);
		put_varint(w, s->nsymbols);
		for (size_t i = 0; i < s->nsymbols; i++) {
			const struct snap_symbol *sym = &s->symbols[i];
			put_module_ref(w, sym->module);
			put_varint(w, sym->offset);
			put_varint(w, sym->nframes);
			for (uint32_t f = 0; f < sym->nframes; f++) {
				put_optstr(w, sym->frames[f].function);
				put_optstr(w, sym->frames[f].file);
				put_varint(w, sym->frames[f].line);
			}
		}
		end_section(w, at);
	}

	if (s->has_temp) {
		/* a section of its own, after the stacks in their order: readers
		 * that do not know it read the stacks as before */
		at = begin_section(w, SEC_TEMPORARY, 0);
		put_varint(w, s->temp_window_ns);
		put_varint(w, s->nstacks);
		for (size_t i = 0; i < s->nstacks; i++) {
			put_varint(w, s->stacks[i].temp_bytes);
			put_varint(w, s->stacks[i].temp_blocks);
		}
		end_section(w, at);
	}

	if (s->has_regions) {
		at = begin_section(w, SEC_REGIONS, 0);
		put_varint(w, s->nregions);
		for (size_t i = 0; i < s->nregions; i++) {
			const struct snap_region *g = &s->regions[i];
			put_varint(w, g->kind);
			put_optstr(w, g->name);
			put_varint(w, g->mappings);
			put_varint(w, g->size);
			put_varint(w, g->rss);
			put_varint(w, g->anon);
			put_varint(w, g->swap);
		}
		end_section(w, at);
	}

	if (s->ntypes) {
		at = begin_section(w, SEC_TYPES, 0);
		put_varint(w, s->ntypes);
		for (size_t i = 0; i < s->ntypes; i++)
			put_optstr(w, s->types[i]);
		put_varint(w, s->ntyped);
		for (size_t i = 0; i < s->ntyped; i++) {
			const struct snap_typed *t = &s->typed[i];
			put_varint(w, t->stack);
			put_varint(w, t->type);
			put_varint(w, t->live_samples);
			put_varint(w, t->live_bytes);
			put_varint(w, t->live_blocks);
		}
		end_section(w, at);
	}

	if (s->has_refs) {
		const struct snap_refsearch *q = &s->refsearch;
		at = begin_section(w, SEC_REFERRERS, 0);
		put_varint(w, SNAP_REFS_VERSION);
		put_varint(w, q->status);
		put_varint(w, q->limit_ns);
		put_varint(w, q->max_objects);
		put_varint(w, q->pause_ns);
		put_varint(w, q->visited);
		put_varint(w, q->tracked);
		put_varint(w, q->passes);
		put_optstr(w, q->note);
		put_varint(w, s->nchains);
		for (size_t i = 0; i < s->nchains; i++) {
			const struct snap_refchain *c = &s->chains[i];
			put_varint(w, c->type);
			put_varint(w, c->stack);
			put_varint(w, c->end);
			put_varint(w, c->nlinks);
			for (uint32_t k = 0; k < c->nlinks; k++) {
				put_optstr(w, c->links[k].edge);
				put_optstr(w, c->links[k].type);
			}
		}
		put_varint(w, s->nforward);
		for (size_t i = 0; i < s->nforward; i++) {
			const struct snap_forward *f = &s->forward[i];
			put_varint(w, f->type);
			put_varint(w, f->bytes);
			put_varint(w, f->nreferents);
			for (uint32_t k = 0; k < f->nreferents; k++) {
				put_optstr(w, f->referents[k].type);
				put_varint(w, f->referents[k].count);
				put_varint(w, f->referents[k].bytes);
			}
		}
		end_section(w, at);
	}

	/* The trailer: computed over everything written so far. */
	if (w->buf)
		put_u32(w, snap_crc(w->buf, w->pos));
	else
		w->pos += SNAP_TRAILER_LEN;
}

/* Check that s is something the decoder would accept, so the encoder never
 * writes a file that cannot be read back. */
static bool encodable(const struct snapshot *s)
{
	if (s->sample_rate == 0 || s->nmodules > UINT32_MAX - 1)
		return false;
	if ((s->nmodules && !s->modules) || (s->nstacks && !s->stacks) ||
	    (s->nsymbols && !s->symbols) || (s->nregions && !s->regions) ||
	    (s->nregions && !s->has_regions) || (s->ntypes && !s->types) ||
	    (s->ntyped && (!s->typed || !s->ntypes)))
		return false;
	for (size_t i = 0; i < s->ntypes; i++)
		if (!s->types[i])
			return false;
	for (size_t i = 0; i < s->ntyped; i++)
		if (s->typed[i].stack >= s->nstacks || s->typed[i].type >= s->ntypes)
			return false;
	if ((s->nchains && !s->chains) || (s->nforward && !s->forward) ||
	    ((s->nchains || s->nforward) && !s->has_refs))
		return false;
	for (size_t i = 0; i < s->nchains; i++)
		if (s->chains[i].type >= s->ntypes || s->chains[i].stack >= s->nstacks ||
		    !s->chains[i].nlinks || !s->chains[i].links)
			return false;
	for (size_t i = 0; i < s->nforward; i++)
		if (s->forward[i].type >= s->ntypes || (s->forward[i].nreferents && !s->forward[i].referents))
			return false;
	for (size_t i = 0; i < s->nmodules; i++) {
		const struct snap_module *m = &s->modules[i];
		if (m->build_id_len > SNAP_BUILD_ID_MAX || m->lo > m->hi)
			return false;
		if (m->path && strlen(m->path) > UINT32_MAX)
			return false;
	}
	for (size_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];
		if (st->nframes && !st->frames)
			return false;
		for (uint32_t f = 0; f < st->nframes; f++)
			if (!snap_module_ref_ok(st->frames[f].module, s->nmodules))
				return false;
	}
	for (size_t i = 0; i < s->nsymbols; i++) {
		const struct snap_symbol *sym = &s->symbols[i];
		if (!snap_module_ref_ok(sym->module, s->nmodules) || (sym->nframes && !sym->frames))
			return false;
	}
	return true;
}

int snapshot_encode(const struct snapshot *s, unsigned char **buf, size_t *len)
{
	struct writer w = { .buf = NULL, .pos = 0 };
	size_t size;

	if (!encodable(s)) {
		errno = EINVAL;
		return -1;
	}
	encode_into(&w, s);
	size = w.pos;
	w.buf = malloc(size);
	if (!w.buf) {
		errno = ENOMEM;
		return -1;
	}
	w.pos = 0;
	encode_into(&w, s);
	*buf = w.buf;
	*len = size;
	return 0;
}


void snapshot_drop_raw(struct snapshot *s)
{
	if (s->raw_mapped)
		munmap(s->raw, s->raw_mapped);
	else
		free(s->raw);
	s->raw_mapped = 0;
	free(s->raw_at);
	free(s->raw_len);
	s->raw = NULL;
	s->raw_at = s->raw_len = NULL;
}

void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	snapshot_drop_raw(s);
	free(s->exe);
	free(s->cmdline);
	free(s->js_version);
	free(s->js_why);
	for (size_t i = 0; s->modules && i < s->nmodules; i++)
		free(s->modules[i].path);
	free(s->modules);
	for (struct snap_frame_chunk *c = s->frame_block, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	if (!s->frame_block && !s->frames_borrowed)
		for (size_t i = 0; s->stacks && i < s->nstacks; i++)
			free(s->stacks[i].frames);
	free(s->stacks);
	for (size_t i = 0; s->symbols && i < s->nsymbols; i++) {
		struct snap_symbol *sym = &s->symbols[i];
		for (uint32_t f = 0; sym->frames && f < sym->nframes; f++) {
			free(sym->frames[f].function);
			free(sym->frames[f].file);
		}
		free(sym->frames);
	}
	free(s->symbols);
	for (size_t i = 0; s->regions && i < s->nregions; i++)
		free(s->regions[i].name);
	free(s->regions);
	for (size_t i = 0; s->types && i < s->ntypes; i++)
		free(s->types[i]);
	free(s->types);
	free(s->typed);
	free(s->refsearch.note);
	for (size_t i = 0; s->chains && i < s->nchains; i++) {
		for (uint32_t k = 0; s->chains[i].links && k < s->chains[i].nlinks; k++) {
			free(s->chains[i].links[k].edge);
			free(s->chains[i].links[k].type);
		}
		free(s->chains[i].links);
	}
	free(s->chains);
	for (size_t i = 0; s->forward && i < s->nforward; i++) {
		for (uint32_t k = 0; s->forward[i].referents && k < s->forward[i].nreferents; k++)
			free(s->forward[i].referents[k].type);
		free(s->forward[i].referents);
	}
	free(s->forward);
	free(s);
}
