/* test_snapshot.c: unit tests for the .snap encoding: a rich round trip, every
 * truncation and every single-bit flip of a valid file refused, the exact
 * messages for the common faults, forged counts, bad cross-references, forward
 * compatibility (unknown sections skipped) and the atomic file I/O. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "snapshot.h"
#include "util.h"

/* ------------------------------------------------------------------------- */
/* Fixtures. */

/* A snapshot that exercises every field: 3 modules (full-length, short and no
 * build-id), many stacks of up to 200 frames with extreme values, frames outside
 * every module, mallinfo and symbols with absent strings. nstacks sets the size. */
static struct snapshot *rich_snapshot(size_t nstacks)
{
	struct snapshot *s = xcalloc(1, sizeof *s);
	s->version = SNAPSHOT_VERSION;
	s->pid = 31337;
	s->exe = xstrdup("/usr/local/bin/grower with space");
	s->cmdline = xstrdup("grower --leak=\"yes\" \t\xc3\xa9");
	s->time_ns = 1763770000123456789ull;
	s->capture_start_ns = 1763769000000000000ull;
	s->sample_rate = 524288;
	s->max_depth = 200;
	s->rss_bytes = UINT64_MAX;
	s->dropped_stacks = 7;
	s->dropped_bytes = 1ull << 40;
	s->python = SNAP_PYTHON_NATIVE;
	s->python_version = 3 << 8 | 7;
	s->js = SNAP_JS_NOT_SAMPLED;
	s->js_version = xstrdup("11.3.244.8-node.33");
	s->js_why = xstrdup("the JavaScript thread did not reach a safe point within 1000 ms");
	s->mallinfo = (struct snap_mallinfo){ true, 1, 2, UINT64_MAX, 4, 5 };

	s->nmodules = 3;
	s->modules = xcalloc(3, sizeof *s->modules);
	s->modules[0].path = xstrdup("/usr/local/bin/grower with space");
	s->modules[0].build_id_len = 64;
	for (int i = 0; i < 64; i++)
		s->modules[0].build_id[i] = (uint8_t)(i * 7 + 1);
	s->modules[0].bias = 0x555555554000;
	s->modules[0].lo = 0x555555554000;
	s->modules[0].hi = 0x55555555a000;
	s->modules[1].path = xstrdup("/lib/x86_64-linux-gnu/libc.so.6");
	s->modules[1].build_id_len = 20;
	memset(s->modules[1].build_id, 0xab, 20);
	s->modules[1].bias = 0x7ffff7c00000;
	s->modules[1].lo = 0x7ffff7c28000;
	s->modules[1].hi = 0x7ffff7e1d000;
	s->modules[2].path = xstrdup("");

	s->nstacks = nstacks;
	s->stacks = xcalloc(s->nstacks, sizeof *s->stacks);
	for (size_t i = 0; i < s->nstacks; i++) {
		struct snap_stack *st = &s->stacks[i];
		st->flags = i % 3 == 0 ? SNAP_STACK_TRUNCATED : 0;
		st->nframes = (uint32_t)(i * 37 % 201);
		st->frames = st->nframes ? xcalloc(st->nframes, sizeof *st->frames) : NULL;
		for (uint32_t f = 0; f < st->nframes; f++) {
			st->frames[f].module = (f + i) % 4 == 3 ? SNAP_NO_MODULE : (uint32_t)((f + i) % 4);
			/* offsets of every length, from 1 to 10 bytes written */
			st->frames[f].offset = (f % 17 == 0) ? UINT64_MAX - f
					       : (UINT64_C(0x0123456789abcdef) * (f + 1) + i) >> (f % 64);
		}
		st->live_bytes = i * 1000003;
		st->live_blocks = i;
		st->live_samples = i / 2;
		st->alloc_bytes = i == nstacks - 1 ? UINT64_MAX : i * 7777777;
		st->alloc_blocks = i * 3;
	}

	s->nsymbols = 4;
	s->symbols = xcalloc(4, sizeof *s->symbols);
	for (size_t i = 0; i < 4; i++) {
		struct snap_symbol *sym = &s->symbols[i];
		sym->module = i == 3 ? SNAP_NO_MODULE : (uint32_t)i;
		sym->offset = 0x1000 + i;
		sym->nframes = (uint32_t)i;
		sym->frames = i ? xcalloc(i, sizeof *sym->frames) : NULL;
		for (size_t f = 0; f < i; f++) {
			sym->frames[f].function = f == 1 ? NULL : xasprintf("std::vector<int>::push_back(%zu)", f);
			sym->frames[f].file = f == 0 ? NULL : xstrdup("/usr/include/c++/12/bits/stl_vector.h");
			sym->frames[f].line = (uint32_t)(f * 100);
		}
	}
	return s;
}

/* A small valid snapshot: 3 modules, one stack of 3 frames (one per module, small
 * offsets so every varint of the stack section is one byte). */
static struct snapshot *small_snapshot(void)
{
	struct snapshot *s = xcalloc(1, sizeof *s);
	s->pid = 12;
	s->exe = xstrdup("/bin/t");
	s->cmdline = xstrdup("t");
	s->sample_rate = 1;
	s->nmodules = 3;
	s->modules = xcalloc(3, sizeof *s->modules);
	for (int i = 0; i < 3; i++)
		s->modules[i].path = xasprintf("/lib/m%d.so", i);
	s->nstacks = 1;
	s->stacks = xcalloc(1, sizeof *s->stacks);
	s->stacks[0].nframes = 3;
	s->stacks[0].frames = xcalloc(3, sizeof *s->stacks[0].frames);
	for (uint32_t f = 0; f < 3; f++)
		s->stacks[0].frames[f] = (struct snap_frame){ f, 0x10 + f };
	s->stacks[0].live_bytes = 100;
	return s;
}

/* Encode s, failing the test on error. */
static unsigned char *encode(const struct snapshot *s, size_t *len)
{
	unsigned char *buf = NULL;
	assert_int_equal(snapshot_encode(s, &buf, len), 0);
	assert_non_null(buf);
	return buf;
}

/* Decode and expect a failure whose message contains want; returns nothing. */
static void expect_reject(const unsigned char *buf, size_t len, const char *want)
{
	char *cause = NULL;
	struct snapshot *s = snapshot_decode(buf, len, &cause);
	if (s || !cause || (want && !strstr(cause, want))) {
		print_error("decode of %zu bytes: got %s, want an error containing '%s'\n", len,
			    s ? "success" : cause ? cause : "(no cause)", want ? want : "");
		snapshot_free(s);
		free(cause);
		fail();
	}
	free(cause);
}

/* Decode and expect success. */
static struct snapshot *expect_ok(const unsigned char *buf, size_t len)
{
	char *cause = NULL;
	struct snapshot *s = snapshot_decode(buf, len, &cause);
	if (!s) {
		print_error("decode failed: %s\n", cause ? cause : "(no cause)");
		free(cause);
		fail();
	}
	assert_null(cause);
	return s;
}

/* Decode, expect success and drop the result. */
static void expect_ok_free(const unsigned char *buf, size_t len)
{
	snapshot_free(expect_ok(buf, len));
}

/* Compare two optional strings. */
static void assert_str_same(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

/* Every field of a and b equal. */
static void assert_snapshots_equal(const struct snapshot *a, const struct snapshot *b)
{
	assert_int_equal(a->pid, b->pid);
	assert_str_same(a->exe, b->exe);
	assert_str_same(a->cmdline, b->cmdline);
	assert_true(a->time_ns == b->time_ns);
	assert_true(a->capture_start_ns == b->capture_start_ns);
	assert_true(a->sample_rate == b->sample_rate);
	assert_int_equal(a->max_depth, b->max_depth);
	assert_true(a->rss_bytes == b->rss_bytes);
	assert_true(a->dropped_stacks == b->dropped_stacks);
	assert_true(a->dropped_bytes == b->dropped_bytes);
	assert_int_equal(a->python, b->python);
	assert_int_equal(a->python_version, b->python_version);
	assert_int_equal(a->js, b->js);
	assert_str_same(a->js_version, b->js_version);
	assert_str_same(a->js_why, b->js_why);
	assert_int_equal(a->mallinfo.present, b->mallinfo.present);
	if (a->mallinfo.present)
		assert_memory_equal(&a->mallinfo.arena, &b->mallinfo.arena, 5 * sizeof(uint64_t));
	assert_int_equal(a->nmodules, b->nmodules);
	for (size_t i = 0; i < a->nmodules; i++) {
		const struct snap_module *x = &a->modules[i], *y = &b->modules[i];
		assert_str_same(x->path, y->path);
		assert_int_equal(x->build_id_len, y->build_id_len);
		assert_memory_equal(x->build_id, y->build_id, x->build_id_len);
		assert_true(x->bias == y->bias && x->lo == y->lo && x->hi == y->hi);
	}
	assert_int_equal(a->nstacks, b->nstacks);
	for (size_t i = 0; i < a->nstacks; i++) {
		const struct snap_stack *x = &a->stacks[i], *y = &b->stacks[i];
		assert_int_equal(x->flags, y->flags);
		assert_int_equal(x->nframes, y->nframes);
		for (uint32_t f = 0; f < x->nframes; f++) {
			assert_int_equal(x->frames[f].module, y->frames[f].module);
			assert_true(x->frames[f].offset == y->frames[f].offset);
		}
		assert_true(x->live_bytes == y->live_bytes && x->live_blocks == y->live_blocks &&
			    x->live_samples == y->live_samples && x->alloc_bytes == y->alloc_bytes &&
			    x->alloc_blocks == y->alloc_blocks);
	}
	assert_int_equal(a->nsymbols, b->nsymbols);
	for (size_t i = 0; i < a->nsymbols; i++) {
		const struct snap_symbol *x = &a->symbols[i], *y = &b->symbols[i];
		assert_int_equal(x->module, y->module);
		assert_true(x->offset == y->offset);
		assert_int_equal(x->nframes, y->nframes);
		for (uint32_t f = 0; f < x->nframes; f++) {
			assert_str_same(x->frames[f].function, y->frames[f].function);
			assert_str_same(x->frames[f].file, y->frames[f].file);
			assert_int_equal(x->frames[f].line, y->frames[f].line);
		}
	}
}

/* ------------------------------------------------------------------------- */
/* Taking a valid encoding apart and putting (altered) sections back together,
 * with a correct checksum, to reach the checks behind it. */

struct section {
	uint32_t type, flags;
	unsigned char *payload;
	size_t len;
};

/* Split a valid encoding into its sections (the test's own reading of the
 * layout in memwatch-snapshot(5)). Returns the count. */
static size_t split(const unsigned char *buf, size_t len, struct section *out, size_t max)
{
	uint32_t n = (uint32_t)buf[12] | (uint32_t)buf[13] << 8 | (uint32_t)buf[14] << 16 |
		     (uint32_t)buf[15] << 24;
	size_t pos = 16;
	assert_true(n <= max);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t l = 0;
		memcpy(&out[i].type, buf + pos, 4);
		memcpy(&out[i].flags, buf + pos + 4, 4);
		for (int b = 7; b >= 0; b--)
			l = l << 8 | buf[pos + 8 + b];
		pos += 16;
		assert_true(l <= len - 4 - pos);
		out[i].len = (size_t)l;
		out[i].payload = xmalloc(out[i].len + 1);
		memcpy(out[i].payload, buf + pos, out[i].len);
		pos += out[i].len;
	}
	assert_int_equal(pos, len - 4);
	return n;
}

/* Store v little-endian in n bytes. */
static void le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Assemble a file of the given version from sections, with a valid CRC-32. */
static unsigned char *assemble(uint16_t version, const struct section *sec, size_t n, size_t *len)
{
	size_t total = 16 + 4;
	for (size_t i = 0; i < n; i++)
		total += 16 + sec[i].len;
	unsigned char *b = xmalloc(total), *p = b;
	memcpy(p, "MEMWSNAP", 8);
	le(p + 8, version, 2);
	le(p + 10, 0, 2);
	le(p + 12, n, 4);
	p += 16;
	for (size_t i = 0; i < n; i++) {
		le(p, sec[i].type, 4);
		le(p + 4, sec[i].flags, 4);
		le(p + 8, sec[i].len, 8);
		memcpy(p + 16, sec[i].payload, sec[i].len);
		p += 16 + sec[i].len;
	}
	le(p, crc32(0, b, (uInt)(p - b)), 4);
	*len = total;
	return b;
}

/* Free the payloads from split. */
static void free_sections(struct section *sec, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(sec[i].payload);
}

/* Index of the section of a type, or fail. */
static size_t find_section(const struct section *sec, size_t n, uint32_t type)
{
	for (size_t i = 0; i < n; i++)
		if (sec[i].type == type)
			return i;
	fail_msg("no section of type %u", type);
	return 0;
}

enum { T_PROCESS = 1, T_MALLINFO = 2, T_MODULES = 3, T_STACKS = 4, T_SYMBOLS = 5 };

/* ------------------------------------------------------------------------- */
/* Tests. */

/* Everything written is read back exactly, and re-encoding gives the same bytes. */
static void test_round_trip(void **state)
{
	(void)state;
	struct snapshot *s = rich_snapshot(500);
	size_t len, len2;
	unsigned char *buf = encode(s, &len);
	struct snapshot *d = expect_ok(buf, len);
	assert_int_equal(d->version, SNAPSHOT_VERSION);
	assert_snapshots_equal(s, d);
	unsigned char *buf2 = encode(d, &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(buf, buf2, len);
	free(buf);
	free(buf2);
	snapshot_free(d);
	snapshot_free(s);
}

/* Frames read with pext (where the processor has it) and with shifts are
 * the same. */
static void test_round_trip_no_pext(void **state)
{
	(void)state;
	struct snapshot *s = rich_snapshot(500);
	size_t len;
	unsigned char *buf = encode(s, &len);
	struct snapshot *d1 = expect_ok(buf, len);
	setenv("MEMWATCH_TEST_NO_PEXT", "1", 1);
	struct snapshot *d2 = expect_ok(buf, len);
	unsetenv("MEMWATCH_TEST_NO_PEXT");
	assert_snapshots_equal(s, d1);
	assert_snapshots_equal(s, d2);
	free(buf);
	snapshot_free(d1);
	snapshot_free(d2);
	snapshot_free(s);
}

/* The temporary section: its figures read back by stack; one whose count is
 * not the stacks' is refused; without it, a snapshot has no temporary
 * figures (not zeros that mean none). */
static void test_temporary(void **state)
{
	(void)state;
	struct snapshot *s = rich_snapshot(40), *d;
	struct section sec[16];
	size_t len, n, k, len2;
	unsigned char *buf, *bad;

	s->has_temp = true;
	s->temp_window_ns = 10485760;
	for (size_t i = 0; i < s->nstacks; i++) {
		s->stacks[i].temp_bytes = 1000 * i + 7;
		s->stacks[i].temp_blocks = i;
	}
	buf = encode(s, &len);
	d = expect_ok(buf, len);
	assert_true(d->has_temp);
	assert_int_equal(d->temp_window_ns, 10485760);
	for (size_t i = 0; i < s->nstacks; i++) {
		assert_int_equal(d->stacks[i].temp_bytes, 1000 * i + 7);
		assert_int_equal(d->stacks[i].temp_blocks, i);
	}
	snapshot_free(d);

	/* the count one short of the stacks' (40 < 128: one varint byte) */
	n = split(buf, len, sec, 16);
	k = find_section(sec, n, 7);
	assert_true(sec[k].len > 5);
	assert_int_equal(sec[k].payload[4], 40);   /* after the 4-byte varint window */
	sec[k].payload[4] = 39;
	bad = assemble(SNAPSHOT_VERSION, sec, n, &len2);
	expect_reject(bad, len2, "section 'temporary': 39 stacks");
	free(bad);

	/* without the section */
	free(sec[k].payload);
	sec[k] = sec[n - 1];
	bad = assemble(SNAPSHOT_VERSION, sec, n - 1, &len2);
	d = expect_ok(bad, len2);
	assert_false(d->has_temp);
	assert_int_equal(d->stacks[3].temp_bytes, 0);
	snapshot_free(d);
	free(bad);
	sec[n - 1].payload = NULL;
	free_sections(sec, n);
	free(buf);
	snapshot_free(s);
}

/* An empty snapshot (no modules, no stacks, no mallinfo) round-trips too. */
static void test_round_trip_empty(void **state)
{
	(void)state;
	struct snapshot s = { .sample_rate = 1 };
	size_t len;
	unsigned char *buf = encode(&s, &len);
	struct snapshot *d = expect_ok(buf, len);
	assert_string_equal(d->exe, "");
	assert_string_equal(d->cmdline, "");
	assert_int_equal(d->nmodules, 0);
	assert_int_equal(d->nstacks, 0);
	assert_int_equal(d->nsymbols, 0);
	assert_false(d->mallinfo.present);
	snapshot_free(d);
	free(buf);
}

/* Varints keep a typical file small: a 3-frame stack of small offsets costs 13
 * bytes, not the 60 of fixed-width fields. */
static void test_compact(void **state)
{
	(void)state;
	struct snapshot *s = small_snapshot();
	size_t len;
	unsigned char *buf = encode(s, &len);
	struct section sec[8];
	size_t n = split(buf, len, sec, 8);
	size_t i = find_section(sec, n, T_STACKS);
	/* count, flags, nframes, 3 x (module, offset), 5 figures (live_bytes 100 is one byte) */
	assert_int_equal(sec[i].len, 1 + 1 + 1 + 6 + 5);
	free_sections(sec, n);
	free(buf);
	snapshot_free(s);
}

/* Every proper prefix of a valid file is refused as truncated (or empty). */
static void test_every_truncation(void **state)
{
	(void)state;
	struct snapshot *s = rich_snapshot(12);
	size_t len;
	unsigned char *buf = encode(s, &len);
	expect_reject(buf, 0, "empty file: not a memwatch snapshot");
	for (size_t k = 1; k < len; k++) {
		/* a copy of exactly k bytes, so the sanitizers catch any read past it */
		unsigned char *cut = xmalloc(k);
		memcpy(cut, buf, k);
		expect_reject(cut, k, "truncated at byte");
		free(cut);
	}
	/* The message says where: a cut inside the stacks section names it. */
	char *cause = NULL;
	assert_null(snapshot_decode(buf, len - 10, &cause));
	char want[64];
	snprintf(want, sizeof want, "truncated at byte %zu (section 'symbols')", len - 10);
	assert_string_equal(cause, want);
	free(cause);
	free(buf);
	snapshot_free(s);
}

/* Every single-bit flip anywhere is refused (CRC-32 catches all of them; flips
 * in the header or section lengths are refused before that), never a crash. */
static void test_every_bit_flip(void **state)
{
	(void)state;
	struct snapshot *s = rich_snapshot(12);
	size_t len;
	unsigned char *buf = encode(s, &len);
	for (size_t i = 0; i < len; i++) {
		for (int b = 0; b < 8; b++) {
			buf[i] ^= (unsigned char)(1 << b);
			expect_reject(buf, len, NULL);
			buf[i] ^= (unsigned char)(1 << b);
		}
	}
	/* a flip in a payload byte, or in a section's type, is reported as
	 * corruption, not as a format fault */
	buf[len / 2] ^= 4;
	expect_reject(buf, len, "checksum mismatch (file corrupted)");
	buf[len / 2] ^= 4;
	buf[16 + 2] ^= 0x40;
	expect_reject(buf, len, "checksum mismatch (file corrupted)");
	buf[16 + 2] ^= 0x40;
	expect_ok_free(buf, len);
	free(buf);
	snapshot_free(s);
}

/* Files that are not snapshots at all. */
static void test_wrong_magic(void **state)
{
	(void)state;
	static const char text[] = "# memwatch run.log version 1\n";
	expect_reject((const unsigned char *)text, sizeof text - 1,
		      "not a memwatch snapshot (no MEMWSNAP signature at byte 0)");
	expect_reject((const unsigned char *)"\x7f" "ELF", 4, "not a memwatch snapshot");
	expect_reject((const unsigned char *)"", 0, "empty file: not a memwatch snapshot");
	expect_reject((const unsigned char *)"MEMW", 4, "truncated at byte 4 (header)");
}

/* A newer format version is refused with both versions named; version 0 too. */
static void test_newer_version(void **state)
{
	(void)state;
	struct snapshot *s = small_snapshot();
	size_t len, len2;
	unsigned char *buf = encode(s, &len);
	struct section sec[8];
	size_t n = split(buf, len, sec, 8);
	unsigned char *v9 = assemble(9, sec, n, &len2);
	char *cause = NULL;
	assert_null(snapshot_decode(v9, len2, &cause));
	assert_string_equal(cause, "format version 9 is newer than this memwatch reads (1)");
	free(cause);
	free(v9);
	unsigned char *v0 = assemble(0, sec, n, &len2);
	expect_reject(v0, len2, "format version 0");
	free(v0);
	free_sections(sec, n);
	free(buf);
	snapshot_free(s);
}

/* Counts that the bytes could not hold are refused before any allocation: a
 * stack count of 2^40, a module count of 2^32-1, a frame count of 2^31. */
static void test_huge_counts(void **state)
{
	(void)state;
	struct snapshot *s = small_snapshot();
	size_t len, len2;
	unsigned char *buf = encode(s, &len);
	struct section sec[8];
	size_t n = split(buf, len, sec, 8);

	size_t st = find_section(sec, n, T_STACKS);
	unsigned char huge[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x20 }; /* 2^40 */
	struct section saved = sec[st];
	sec[st].payload = huge;
	sec[st].len = sizeof huge;
	unsigned char *f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "1099511627776 stacks cannot fit in the 0 bytes left");
	free(f);

	/* one stack claiming 2^31 frames */
	unsigned char frames[] = { 1, 0, 0x80, 0x80, 0x80, 0x80, 0x08, 1, 1 };
	sec[st].payload = frames;
	sec[st].len = sizeof frames;
	f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "2147483648 frames cannot fit");
	free(f);
	sec[st] = saved;

	size_t mo = find_section(sec, n, T_MODULES);
	le(sec[mo].payload, UINT32_MAX, 4);
	f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "4294967295 modules cannot fit");
	free(f);

	free_sections(sec, n);
	free(buf);
	snapshot_free(s);
}

/* A frame naming a module beyond the table is refused, naming stack and frame. */
static void test_bad_module_ref(void **state)
{
	(void)state;
	struct snapshot *s = small_snapshot();
	size_t len, len2;
	unsigned char *buf = encode(s, &len);
	struct section sec[8];
	size_t n = split(buf, len, sec, 8);
	size_t st = find_section(sec, n, T_STACKS);
	/* count, flags, nframes, then (module + 1, offset) pairs: frame 2's module at 7 */
	assert_int_equal(sec[st].payload[7], 3);
	sec[st].payload[7] = 18;
	unsigned char *f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "stack 0 frame 2 names module 17 of 3");
	free(f);
	free_sections(sec, n);
	free(buf);
	snapshot_free(s);

	/* and the encoder refuses to write such a snapshot at all */
	s = small_snapshot();
	s->stacks[0].frames[1].module = 3;
	unsigned char *out = NULL;
	errno = 0;
	assert_int_equal(snapshot_encode(s, &out, &len), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(out);
	s->stacks[0].frames[1].module = 2;
	s->modules[0].build_id_len = 65;
	assert_int_equal(snapshot_encode(s, &out, &len), -1);
	s->modules[0].build_id_len = 0;
	s->modules[0].lo = 2;
	s->modules[0].hi = 1;
	assert_int_equal(snapshot_encode(s, &out, &len), -1);
	s->modules[0].hi = 2;
	assert_int_equal(snapshot_encode(s, &out, &len), 0);
	free(out);
	s->sample_rate = 0;
	assert_int_equal(snapshot_encode(s, &out, &len), -1);
	snapshot_free(s);
}

/* The types section: names and records round-trip; a record naming a stack
 * beyond the stacks is refused, and the encoder will not write one. */
static void test_types(void **state)
{
	(void)state;
	struct snapshot *s = small_snapshot(), *d;
	size_t len, len2;
	unsigned char *buf, *f, *out = NULL;
	struct section sec[8];
	size_t n, t;

	s->ntypes = 2;
	s->types = xcalloc(2, sizeof *s->types);
	s->types[0] = xstrdup("__main__.Event");
	s->types[1] = xstrdup(SNAP_TYPE_NOT_OBJECT);
	s->ntyped = 1;
	s->typed = xcalloc(1, sizeof *s->typed);
	s->typed[0] = (struct snap_typed){ .stack = 0, .type = 1, .live_samples = 3, .live_bytes = 300,
					   .live_blocks = 5 };
	buf = encode(s, &len);
	d = expect_ok(buf, len);
	assert_int_equal(d->ntypes, 2);
	assert_string_equal(d->types[0], "__main__.Event");
	assert_string_equal(d->types[1], SNAP_TYPE_NOT_OBJECT);
	assert_int_equal(d->ntyped, 1);
	assert_int_equal(d->typed[0].stack, 0);
	assert_int_equal(d->typed[0].type, 1);
	assert_int_equal(d->typed[0].live_samples, 3);
	assert_int_equal(d->typed[0].live_bytes, 300);
	assert_int_equal(d->typed[0].live_blocks, 5);
	snapshot_free(d);

	/* count 2, "__main__.Event" (15 then 14 bytes), "<not an object>" (16
	 * then 15), count 1, then the record's stack at 33 */
	n = split(buf, len, sec, 8);
	t = find_section(sec, n, 8);   /* types */
	assert_int_equal(sec[t].payload[33], 0);
	sec[t].payload[33] = 9;
	f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "typed samples 0 name stack 9 of 1, type 1 of 2");
	free(f);
	free_sections(sec, n);
	free(buf);

	s->typed[0].type = 2;
	assert_int_equal(snapshot_encode(s, &out, &len), -1);
	assert_int_equal(errno, EINVAL);
	snapshot_free(s);
}

/* The referrers section: the search's figures, its chains and forward views
 * round-trip; a chain naming a type beyond the types is refused, and the
 * encoder will not write one; a later version of the section is skipped
 * whole (the snapshot reads as one without it). */
static void test_referrers(void **state)
{
	(void)state;
	struct snapshot *s = small_snapshot(), *d;
	size_t len, len2;
	unsigned char *buf, *f, *out = NULL;
	struct section sec[12];
	size_t n, t;

	s->ntypes = 2;
	s->types = xcalloc(2, sizeof *s->types);
	s->types[0] = xstrdup("Event");
	s->types[1] = xstrdup("list");
	s->has_refs = true;
	s->refsearch = (struct snap_refsearch){ .status = SNAP_REFS_TIME, .limit_ns = 1000000000,
						.max_objects = 5000, .pause_ns = 999, .visited = 77,
						.tracked = 40, .passes = 2, .note = xstrdup("stopped") };
	s->nchains = 1;
	s->chains = xcalloc(1, sizeof *s->chains);
	s->chains[0].type = 0;
	s->chains[0].stack = 0;
	s->chains[0].end = SNAP_CHAIN_ROOT;
	s->chains[0].nlinks = 2;
	s->chains[0].links = xcalloc(2, sizeof *s->chains[0].links);
	s->chains[0].links[0].edge = xstrdup("__main__.AUDIT_LOG");
	s->chains[0].links[0].type = xstrdup("list");
	s->chains[0].links[1].edge = xstrdup("[3]");
	s->chains[0].links[1].type = xstrdup("Event");
	s->nforward = 1;
	s->forward = xcalloc(1, sizeof *s->forward);
	s->forward[0].type = 0;
	s->forward[0].bytes = 56;
	s->forward[0].nreferents = 1;
	s->forward[0].referents = xcalloc(1, sizeof *s->forward[0].referents);
	s->forward[0].referents[0].type = xstrdup("dict");
	s->forward[0].referents[0].count = 1;
	s->forward[0].referents[0].bytes = 1168;
	buf = encode(s, &len);
	d = expect_ok(buf, len);
	assert_true(d->has_refs);
	assert_int_equal(d->refsearch.status, SNAP_REFS_TIME);
	assert_int_equal(d->refsearch.limit_ns, 1000000000);
	assert_int_equal(d->refsearch.max_objects, 5000);
	assert_int_equal(d->refsearch.pause_ns, 999);
	assert_int_equal(d->refsearch.visited, 77);
	assert_int_equal(d->refsearch.tracked, 40);
	assert_int_equal(d->refsearch.passes, 2);
	assert_string_equal(d->refsearch.note, "stopped");
	assert_int_equal(d->nchains, 1);
	assert_int_equal(d->chains[0].nlinks, 2);
	assert_string_equal(d->chains[0].links[0].edge, "__main__.AUDIT_LOG");
	assert_string_equal(d->chains[0].links[1].type, "Event");
	assert_int_equal(d->nforward, 1);
	assert_int_equal(d->forward[0].bytes, 56);
	assert_string_equal(d->forward[0].referents[0].type, "dict");
	assert_int_equal(d->forward[0].referents[0].bytes, 1168);
	snapshot_free(d);

	/* version 1, status 1, limit (5 bytes), max_objects (2), pause (2),
	 * visited, tracked, passes, note (8), count 1 at 22, then the chain's
	 * type at 23 */
	n = split(buf, len, sec, 12);
	t = find_section(sec, n, 9);   /* referrers */
	assert_int_equal(sec[t].payload[23], 0);
	sec[t].payload[23] = 9;
	f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "chain 0 names type 9 of 2, stack 0 of 1, 2 links");
	free(f);
	sec[t].payload[23] = 0;
	sec[t].payload[0] = 2;     /* a later version of the section */
	f = assemble(1, sec, n, &len2);
	d = expect_ok(f, len2);
	assert_false(d->has_refs);
	assert_int_equal(d->nchains, 0);
	assert_int_equal(d->ntypes, 2);
	snapshot_free(d);
	free(f);
	free_sections(sec, n);
	free(buf);

	s->chains[0].type = 2;
	assert_int_equal(snapshot_encode(s, &out, &len), -1);
	assert_int_equal(errno, EINVAL);
	snapshot_free(s);
}

/* An unknown optional section is skipped wherever it sits, and extra bytes at
 * the end of a known section are ignored (room for later fields); an unknown
 * section flagged as required is refused. */
static void test_forward_compat(void **state)
{
	(void)state;
	struct snapshot *s = rich_snapshot(500);
	size_t len, len2;
	unsigned char *buf = encode(s, &len);
	struct section sec[12];
	size_t n = split(buf, len, sec, 10);

	unsigned char junk[40];
	memset(junk, 0xee, sizeof junk);
	struct section more[12];
	size_t m = 0;
	more[m++] = (struct section){ 77, 0, junk, sizeof junk };
	for (size_t i = 0; i < n; i++) {
		more[m++] = sec[i];
		if (i == 1)
			more[m++] = (struct section){ 1000, 0x8000000e, junk, 3 };
	}
	more[m++] = (struct section){ 0xffffffff, 0, junk, 0 };
	size_t p = find_section(more, m, T_PROCESS);
	unsigned char *longer = xcalloc(1, more[p].len + 12);
	memcpy(longer, more[p].payload, more[p].len);
	more[p].payload = longer;
	more[p].len += 12;

	unsigned char *f = assemble(1, more, m, &len2);
	struct snapshot *d = expect_ok(f, len2);
	assert_snapshots_equal(s, d);
	snapshot_free(d);
	free(f);

	/* a process section that ends after the CPython fields (written
	 * before node's were appended) reads with no V8 */
	size_t js_len = 4 + 1 + strlen(s->js_version) + 1 + strlen(s->js_why);
	more[p].len -= 12 + js_len;
	f = assemble(1, more, m, &len2);
	d = expect_ok(f, len2);
	assert_int_equal(d->js, SNAP_JS_NONE);
	assert_null(d->js_version);
	assert_null(d->js_why);
	d->js = s->js;
	d->js_version = xstrdup(s->js_version);
	d->js_why = xstrdup(s->js_why);
	assert_snapshots_equal(s, d);
	snapshot_free(d);
	free(f);

	/* one that ends after cmdline (written before the CPython fields were
	 * appended) reads with both 0 */
	more[p].len -= 8;
	f = assemble(1, more, m, &len2);
	d = expect_ok(f, len2);
	assert_int_equal(d->python, 0);
	assert_int_equal(d->python_version, 0);
	assert_int_equal(d->js, SNAP_JS_NONE);
	d->python = s->python;
	d->python_version = s->python_version;
	d->js = s->js;
	d->js_version = xstrdup(s->js_version);
	d->js_why = xstrdup(s->js_why);
	assert_snapshots_equal(s, d);
	snapshot_free(d);
	free(f);
	more[p].len += 12 + js_len + 8;

	/* a js state newer than this reader reads as none */
	{
		unsigned char *st = longer + more[p].len - 12 - js_len;
		memcpy(st, "\x09\0\0\0", 4);
		f = assemble(1, more, m, &len2);
		d = expect_ok(f, len2);
		assert_int_equal(d->js, SNAP_JS_NONE);
		assert_string_equal(d->js_version, s->js_version);
		snapshot_free(d);
		free(f);
		memcpy(st, "\x03\0\0\0", 4);
	}

	more[0].flags = 1; /* required */
	f = assemble(1, more, m, &len2);
	expect_reject(f, len2, "section of type 77 at byte 16 is required but unknown to this memwatch (format 1)");
	free(f);

	free(longer);
	free_sections(sec, n);
	free(buf);
	snapshot_free(s);
}

/* Structural faults behind a valid checksum: a duplicate or missing section,
 * bytes after the last section, an overlong varint, a NUL in a string, a zero
 * sample rate, a module range upside down. */
static void test_structure(void **state)
{
	(void)state;
	struct snapshot *s = small_snapshot();
	size_t len, len2;
	unsigned char *buf = encode(s, &len);
	struct section sec[8], tmp[9];
	size_t n = split(buf, len, sec, 8);
	unsigned char *f;

	memcpy(tmp, sec, n * sizeof *sec);
	tmp[n] = sec[find_section(sec, n, T_STACKS)];
	f = assemble(1, tmp, n + 1, &len2);
	expect_reject(f, len2, "section 'stacks' appears twice");
	free(f);

	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (sec[i].type != T_MODULES)
			tmp[k++] = sec[i];
	f = assemble(1, tmp, k, &len2);
	expect_reject(f, len2, "section 'modules' is missing");
	free(f);

	/* bytes appended after the trailer */
	f = xmalloc(len + 3);
	memcpy(f, buf, len);
	memset(f + len, 0, 3);
	char want[96];
	snprintf(want, sizeof want, "3 unexpected bytes after the end of the snapshot at byte %zu", len);
	expect_reject(f, len + 3, want);
	free(f);

	/* a section count one short, behind a valid checksum */
	f = assemble(1, sec, n, &len2);
	le(f + 12, n - 1, 4);
	le(f + len2 - 4, crc32(0, f, (uInt)(len2 - 4)), 4);
	expect_reject(f, len2, "unexpected bytes after the last section");
	/* and one too many */
	le(f + 12, n + 1, 4);
	le(f + len2 - 4, crc32(0, f, (uInt)(len2 - 4)), 4);
	expect_reject(f, len2, "no room for its header");
	free(f);

	size_t st = find_section(sec, n, T_STACKS);
	struct section saved = sec[st];
	unsigned char overlong[] = { 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				     0xff, 0x7f, 0, 0, 0, 0, 0 };
	sec[st].payload = overlong;
	sec[st].len = sizeof overlong;
	f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "is longer than 64 bits (stack 0)");
	free(f);
	unsigned char cut[] = { 1, 0, 1, 1, 5, 0, 0, 0, 0 }; /* one figure short */
	sec[st].payload = cut;
	sec[st].len = sizeof cut;
	f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "inside stack 0");
	free(f);
	sec[st] = saved;

	size_t p = find_section(sec, n, T_PROCESS);
	/* pid, max_depth, 2 times, then the sample rate at payload byte 24 */
	le(sec[p].payload + 24, 0, 8);
	f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "sample rate 0");
	free(f);
	le(sec[p].payload + 24, 1, 8);
	/* exe "/bin/t" follows the 8 + 48 fixed bytes and its u32 length */
	sec[p].payload[56 + 4 + 2] = '\0';
	f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "exe at byte");
	free(f);
	sec[p].payload[56 + 4 + 2] = 'i';

	size_t mo = find_section(sec, n, T_MODULES);
	/* module 0: count(4), path len(4) + 9, build-id len(1), bias(8), lo(8), hi(8) */
	le(sec[mo].payload + 4 + 4 + 10 + 1 + 8, 5, 8);
	f = assemble(1, sec, n, &len2);
	expect_reject(f, len2, "module 0 range");
	free(f);

	free_sections(sec, n);
	free(buf);
	snapshot_free(s);
}

/* Writing is atomic and refuses to overwrite without force; reading names the
 * file in every message. */
/* The kind of a stack from its flags: bits 2 and 3 refine bit 1, so a reader
 * that knows only bit 1 reads brk and file stacks as mappings. */
static void test_stack_kinds(void **state)
{
	(void)state;
	assert_int_equal(snap_stack_kind(0), SNAP_KIND_MALLOC);
	assert_int_equal(snap_stack_kind(SNAP_STACK_TRUNCATED), SNAP_KIND_MALLOC);
	assert_int_equal(snap_stack_kind(SNAP_STACK_MMAP), SNAP_KIND_MMAP);
	assert_int_equal(snap_stack_kind(SNAP_STACK_MMAP | SNAP_STACK_BRK), SNAP_KIND_BRK);
	assert_int_equal(snap_stack_kind(SNAP_STACK_MMAP | SNAP_STACK_FILE), SNAP_KIND_FILE);
	assert_int_equal(snap_stack_kind(SNAP_STACK_MMAP | SNAP_STACK_FILE | SNAP_STACK_BRK),
			 SNAP_KIND_BRK);
	/* without bit 1 the refinements mean nothing */
	assert_int_equal(snap_stack_kind(SNAP_STACK_BRK | SNAP_STACK_FILE), SNAP_KIND_MALLOC);
	assert_string_equal(snap_kind_name(SNAP_KIND_MALLOC), "malloc");
	assert_string_equal(snap_kind_name(SNAP_KIND_MMAP), "mmap");
	assert_string_equal(snap_kind_name(SNAP_KIND_BRK), "brk");
	assert_string_equal(snap_kind_name(SNAP_KIND_FILE), "file");
	assert_string_equal(snap_kind_name(9), "?");
}

static void test_file_io(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_snapshot.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *path = xasprintf("%s/a.snap", dir);
	char *cause = NULL;
	struct snapshot *s = rich_snapshot(500);

	assert_int_equal(snapshot_write(s, path, false, &cause), 0);
	struct snapshot *d = snapshot_read(path, &cause);
	assert_non_null(d);
	assert_snapshots_equal(s, d);
	snapshot_free(d);

	assert_int_equal(snapshot_write(s, path, false, &cause), -1);
	assert_non_null(strstr(cause, "exists"));
	free(cause);
	cause = NULL;
	assert_int_equal(snapshot_write(s, path, true, &cause), 0);

	/* a truncated copy: the message names the file and the byte */
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, 100), 0);
	assert_null(snapshot_read(path, &cause));
	char *want = xasprintf("'%s': truncated at byte 100 (section 'process')", path);
	assert_string_equal(cause, want);
	free(want);
	free(cause);
	cause = NULL;

	char *missing = xasprintf("%s/missing.snap", dir);
	assert_null(snapshot_read(missing, &cause));
	want = xasprintf("cannot read '%s': No such file or directory", missing);
	assert_string_equal(cause, want);
	free(want);
	free(cause);
	cause = NULL;

	/* writing into a directory that does not exist leaves nothing behind */
	char *nodir = xasprintf("%s/no/such/dir.snap", dir);
	assert_int_equal(snapshot_write(s, nodir, false, &cause), -1);
	assert_non_null(strstr(cause, "cannot write"));
	free(cause);

	/* a write that fails part way (the file size limit stands in for a full
	 * disk) leaves neither the file nor a temporary one */
	struct rlimit saved, small;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
	small = saved;
	small.rlim_cur = 4096;
	signal(SIGXFSZ, SIG_IGN);
	char *full = xasprintf("%s/full.snap", dir);
	cause = NULL;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	int ret = snapshot_write(s, full, false, &cause);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
	assert_int_equal(ret, -1);
	assert_non_null(strstr(cause, "File too large"));
	free(cause);
	assert_int_equal(access(full, F_OK), -1);
	free(full);

	unlink(path);
	assert_int_equal(rmdir(dir), 0); /* empty: no temporary file was left */
	free(nodir);
	free(missing);
	free(path);
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_no_pext),
		cmocka_unit_test(test_round_trip_empty),
		cmocka_unit_test(test_temporary),
		cmocka_unit_test(test_compact),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_every_bit_flip),
		cmocka_unit_test(test_wrong_magic),
		cmocka_unit_test(test_newer_version),
		cmocka_unit_test(test_huge_counts),
		cmocka_unit_test(test_bad_module_ref),
		cmocka_unit_test(test_forward_compat),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_referrers),
		cmocka_unit_test(test_structure),
		cmocka_unit_test(test_stack_kinds),
		cmocka_unit_test(test_file_io),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
