/* trend-raw.h: the stacks of a trend's snapshots between the first and the
 * last, to their rows by the bytes of their frames as the file has them,
 * without decoding them. */
#ifndef MEMWATCH_TREND_RAW_H
#define MEMWATCH_TREND_RAW_H

#include "report-internal.h"

/* A stack of a snapshot as scanned: its encoded frames' hashes, and its
 * figures. */
struct raw_rec {
	uint64_t h1, h2;
	uint64_t len;                 /* bytes of its encoded frames */
	uint32_t nframes, flags;
	uint64_t live_bytes, live_blocks, live_samples, alloc_bytes, alloc_blocks;
};

/* The rows of the stacks seen so far, by their encoded frames: good for the
 * snapshots whose module tables map to the global modules as the one it was
 * learnt from. */
struct trend_raw {
	struct hashmap index;
	uint32_t *map;                /* the map it was learnt with (a copy) */
	size_t nmodules;
};

/* st's record (any thread). */
void trend_raw_hash(const struct snap_raw_stack *st, struct raw_rec *out);

/* Input k (its snapshot read as records rec, n of them, map its module map;
 * more: it has types or referrers) into the rows when every stack of it (of
 * the kind asked) is one whose row is known by its bytes: true; false, with
 * nothing added, else. */
bool trend_raw_add_all(struct trend_raw *tr, struct report *r, int k, const uint32_t *map, size_t nm,
		       const struct raw_rec *rec, size_t n, bool more);

/* After input k was keyed whole (its stacks' hashes pre), learn the row of
 * each of its stacks by its bytes (rec, as scanned from the same file). */
void trend_raw_learn(struct trend_raw *tr, struct report *r, int k, const struct raw_rec *rec, size_t n,
		     const struct seen_pre *pre);

void trend_raw_release(struct trend_raw *tr);

#endif
