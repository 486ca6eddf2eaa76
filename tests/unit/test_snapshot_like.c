/* test_snapshot_like.c: unit tests for snapshot_decode_like, the decoding of
 * a snapshot beside another of the same process: a stack whose frames are
 * the other's stack's of its index shares them, any other stack (other
 * frames, another count, an index past the other's stacks, none) has its own,
 * and what is decoded is the same as without the other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "snapshot.h"
#include "snapshot-internal.h"
#include "util.h"

/* A snapshot of one module and the given stacks: stack i has n[i] frames,
 * frame f at offset base[i] + f. */
static struct snapshot *make(const uint32_t *n, const uint64_t *base, size_t nstacks)
{
	struct snapshot *s = xcalloc(1, sizeof *s);

	s->version = SNAPSHOT_VERSION;
	s->pid = 42;
	s->exe = xstrdup("/bin/grower");
	s->cmdline = xstrdup("grower");
	s->sample_rate = 1;
	s->nmodules = 1;
	s->modules = xcalloc(1, sizeof *s->modules);
	s->modules[0].path = xstrdup("/bin/grower");
	s->modules[0].lo = 0x1000;
	s->modules[0].hi = 0x900000;
	s->nstacks = nstacks;
	s->stacks = xcalloc(nstacks, sizeof *s->stacks);
	for (size_t i = 0; i < nstacks; i++) {
		struct snap_stack *st = &s->stacks[i];
		st->nframes = n[i];
		st->frames = n[i] ? xcalloc(n[i], sizeof *st->frames) : NULL;
		for (uint32_t f = 0; f < n[i]; f++) {
			st->frames[f].module = f % 2 ? 0 : SNAP_NO_MODULE;
			st->frames[f].offset = base[i] + f;
		}
		st->live_bytes = 100 * (i + 1);
		st->live_blocks = st->live_samples = i + 1;
		st->alloc_bytes = st->live_bytes;
		st->alloc_blocks = st->live_blocks;
	}
	return s;
}

static unsigned char *encode(const struct snapshot *s, size_t *len)
{
	unsigned char *buf = NULL;

	assert_int_equal(snapshot_encode(s, &buf, len), 0);
	return buf;
}

/* With raw, the first is decoded keeping its bytes (snapshot_read_keep),
 * and the second finds the frames it shares by them, undecoded. */
static void shared_where_alike(bool raw)
{
	/* a: 4 stacks; b: stack 0 alike, 1 other offsets, 2 another count,
	 * 3 alike, 4 past a's stacks (but a's stack 0's frames), 5 none */
	static const uint32_t na[] = { 5, 3, 4, 2 };
	static const uint64_t ba[] = { 0x100, 0x200, 0x300, 0x400 };
	static const uint32_t nb[] = { 5, 3, 5, 2, 5, 0 };
	static const uint64_t bb[] = { 0x100, 0x250, 0x300, 0x400, 0x100, 0 };
	static const bool shared[] = { true, false, false, true, false, false };
	struct snapshot *a = make(na, ba, 4), *b = make(nb, bb, 6);
	size_t alen, blen;
	unsigned char *abuf = encode(a, &alen), *bbuf = encode(b, &blen);
	char *cause = NULL;
	struct snapshot *da = raw ? snapshot_decode_raw(abuf, alen, NULL, SNAP_DECODE_KEEP, &cause)
				  : snapshot_decode(abuf, alen, &cause);
	assert_non_null(da);
	if (raw) {
		/* each frame a byte of module and two of offset (0x100-0x403) */
		for (size_t i = 0; i < da->nstacks; i++)
			assert_int_equal(da->raw_len[i], 3 * na[i]);
		da->raw = xmalloc(alen);
		memcpy(da->raw, abuf, alen);
	}
	struct snapshot *plain = snapshot_decode(bbuf, blen, &cause);
	assert_non_null(plain);
	struct snapshot *db = snapshot_decode_like(bbuf, blen, da, &cause);
	assert_non_null(db);
	assert_null(cause);

	assert_int_equal(db->nstacks, 6);
	for (size_t i = 0; i < db->nstacks; i++) {
		const struct snap_stack *x = &db->stacks[i], *y = &plain->stacks[i];
		assert_int_equal(x->nframes, y->nframes);
		if (x->nframes)
			assert_memory_equal(x->frames, y->frames, x->nframes * sizeof *x->frames);
		assert_int_equal(x->live_bytes, y->live_bytes);
		assert_int_equal(x->alloc_blocks, y->alloc_blocks);
		if (shared[i])
			assert_ptr_equal(x->frames, da->stacks[i].frames);
		else
			for (size_t k = 0; k < da->nstacks; k++)
				assert_true(!x->frames || x->frames != da->stacks[k].frames);
	}
	assert_true(db->frames_borrowed);
	/* the same bytes again: encoded as before */
	size_t len2;
	unsigned char *buf2 = encode(db, &len2);
	assert_int_equal(len2, blen);
	assert_memory_equal(buf2, bbuf, blen);
	free(buf2);
	/* freed before the snapshot it borrows from, as a report frees them */
	snapshot_free(da);
	snapshot_free(db);
	snapshot_free(plain);
	snapshot_free(a);
	snapshot_free(b);
	free(abuf);
	free(bbuf);
}

static void test_shared_where_alike(void **state)
{
	(void)state;
	shared_where_alike(false);
}

static void test_shared_where_alike_raw(void **state)
{
	(void)state;
	shared_where_alike(true);
}

/* Without the other (NULL) or with nothing alike, nothing is borrowed. */
static void test_nothing_alike(void **state)
{
	(void)state;
	static const uint32_t na[] = { 3 };
	static const uint64_t ba[] = { 0x10 };
	static const uint64_t bb[] = { 0x20 };
	struct snapshot *a = make(na, ba, 1), *b = make(na, bb, 1);
	size_t alen, blen;
	unsigned char *abuf = encode(a, &alen), *bbuf = encode(b, &blen);
	char *cause = NULL;
	struct snapshot *da = snapshot_decode_like(abuf, alen, NULL, &cause);
	assert_non_null(da);
	assert_false(da->frames_borrowed);
	struct snapshot *db = snapshot_decode_like(bbuf, blen, da, &cause);
	assert_non_null(db);
	assert_false(db->frames_borrowed);
	assert_true(db->stacks[0].frames != da->stacks[0].frames);
	assert_int_equal(db->stacks[0].frames[0].offset, 0x20);
	snapshot_free(db);
	snapshot_free(da);
	snapshot_free(a);
	snapshot_free(b);
	free(abuf);
	free(bbuf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_where_alike),
		cmocka_unit_test(test_shared_where_alike_raw),
		cmocka_unit_test(test_nothing_alike),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
