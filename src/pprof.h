/* pprof.h: memwatch's reports as pprof profiles (the public profile.proto
 * format, gzip-compressed), for `go tool pprof` and the other tools that read
 * it. The profile is symbolized here, at report time: functions, files, lines
 * and inlined frames travel in the file, and mappings carry their build-ids. */
#ifndef MEMWATCH_PPROF_H
#define MEMWATCH_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "snapshot.h"
#include "symbolize.h"

/* The values of a sample, in the order of Go's heap profiles (the sample types
 * alloc_objects, alloc_space, inuse_objects, inuse_space; inuse_space is the
 * default). */
enum pprof_value {
	PPROF_ALLOC_OBJECTS,
	PPROF_ALLOC_SPACE,
	PPROF_INUSE_OBJECTS,
	PPROF_INUSE_SPACE,
	PPROF_NVALUES
};

/* Some of the source frames of one address (global module index, offset):
 * n of them from the first-th (inlined ones first); n 0: all. A stack whose
 * frames are not all shown (a report row that merges stacks keeps only the
 * frames they share) is given as parts. */
struct pprof_part {
	uint32_t gmod;
	uint64_t offset;
	uint32_t first, n;
};

/* One call stack and its values. The frames are those of a snapshot, innermost
 * first; map turns their module indexes into the symbolizer's (as
 * symbolizer_add returned it, nmodules entries). Nothing is copied. */
struct pprof_sample {
	const struct snap_frame *frames;
	uint32_t nframes;
	const uint32_t *map;
	size_t nmodules;
	int64_t value[PPROF_NVALUES];
	const char *kind;             /* the sample label "kind" (malloc, mmap...); NULL: none */
	/* when not NULL, the locations instead of frames: parts of addresses */
	const struct pprof_part *parts;
	uint32_t nparts;
	const char *type;             /* the sample label "type" (CPython: the objects' type); NULL: none */
};

/* What the profile is of: one snapshot (show), or the change from in[0] to
 * in[1] (diff: the values are differences, negative where memory was freed,
 * as `pprof -diff_base` shows them). Each snapshot with its module map. */
struct pprof_source {
	int nin;
	bool alloc_default;           /* alloc_space is the default sample type, not inuse_space */
	const char *path[2];
	const struct snapshot *s[2];
	const uint32_t *map[2];
};

/* Write the profile of the n samples v to f: encoded (protobuf-c) and gzipped.
 * Frames are symbolized with z. The values are memwatch's estimates as they
 * are: already unbiased for the sampling, so a reader must not scale them
 * again (the sampling rate is recorded as the profile's period, as in Go's
 * heap profiles). Returns 0, or -1 with *cause (caller frees). */
int pprof_write(FILE *f, struct symbolizer *z, const struct pprof_source *src,
		const struct pprof_sample *v, size_t n, char **cause);

/* The same with the samples made one at a time, as they are written: next
 * fills *out with the next sample and returns true, or returns false after
 * the last. What *out points to need only last until the next call (a
 * report of 100 000 stacks need not hold 100 000 samples at once). */
typedef bool pprof_next_fn(void *arg, struct pprof_sample *out);
int pprof_write_each(FILE *f, struct symbolizer *z, const struct pprof_source *src,
		     pprof_next_fn *next, void *arg, char **cause);

#endif
