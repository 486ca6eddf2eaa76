/* fuzz_snapshot.c: libFuzzer target for snapshot_decode. Each input is decoded
 * as given (the header, framing and checksum checks), then again with its CRC-32
 * trailer made right, so mutations reach the section parsers behind the checksum.
 * Whatever decodes must re-encode, decode again and re-encode to the same bytes;
 * whatever is refused must say why; every stack's flags name one of the kinds
 * the reports know; decoded beside itself with its bytes kept, every stack
 * shares the first's frames and the snapshot is the same. Any breach aborts
 * (a finding). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "snapshot.h"
#include "snapshot-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode buf and check the properties above. */
static void check(const unsigned char *buf, size_t len)
{
	char *cause = NULL;
	struct snapshot *s = snapshot_decode(buf, len, &cause);

	if (!s) {
		if (!cause || !*cause)
			abort(); /* a refusal must say why */
		free(cause);
		return;
	}
	if (cause)
		abort();
	for (size_t i = 0; i < s->nstacks; i++) {
		enum snap_kind k = snap_stack_kind(s->stacks[i].flags);
		if (strcmp(snap_kind_name(k), "?") == 0 ||
		    (k != SNAP_KIND_MALLOC) != !!(s->stacks[i].flags & SNAP_STACK_MMAP))
			abort(); /* every flags value is one kind, the one bit 1 says */
	}

	unsigned char *e1 = NULL, *e2 = NULL;
	size_t l1, l2;
	if (snapshot_encode(s, &e1, &l1) != 0)
		abort(); /* what the decoder accepts, the encoder must write */
	struct snapshot *t = snapshot_decode(e1, l1, &cause);
	if (!t)
		abort();
	if (snapshot_encode(t, &e2, &l2) != 0 || l1 != l2 || memcmp(e1, e2, l1) != 0)
		abort(); /* decode and encode are each other's inverse */
	/* read again beside itself, by its bytes kept (as a diff reads its
	 * second snapshot): every stack's frames shared, the same snapshot */
	struct snapshot *k = snapshot_decode_raw(buf, len, NULL, SNAP_DECODE_KEEP, &cause);
	if (!k)
		abort();
	k->raw = malloc(len ? len : 1);
	if (!k->raw)
		abort();
	memcpy(k->raw, buf, len);
	struct snapshot *l = snapshot_decode_like(buf, len, k, &cause);
	unsigned char *e3 = NULL;
	size_t l3;
	if (!l || snapshot_encode(l, &e3, &l3) != 0 || l3 != l1 || memcmp(e1, e3, l1) != 0)
		abort();
	for (size_t i = 0; i < l->nstacks; i++)
		if (l->stacks[i].nframes && l->stacks[i].frames != k->stacks[i].frames)
			abort();
	free(e3);
	snapshot_free(l);
	snapshot_free(k);
	free(e1);
	free(e2);
	snapshot_free(t);
	snapshot_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check(data, size);
	if (size >= 20) {
		/* a private copy of exactly size bytes, so reads past it are caught */
		unsigned char *fixed = malloc(size);
		if (!fixed)
			return 0;
		memcpy(fixed, data, size);
		uint32_t crc = (uint32_t)crc32(0L, fixed, (uInt)(size - 4));
		for (int i = 0; i < 4; i++)
			fixed[size - 4 + i] = (unsigned char)(crc >> (8 * i));
		check(fixed, size);
		free(fixed);
	}
	return 0;
}
