/* trend-read.h: the snapshots of a trend, read in order by a second thread a
 * few ahead of their use, so that decoding the next overlaps keying the last
 * and no more than a few are held at once. */
#ifndef MEMWATCH_TREND_READ_H
#define MEMWATCH_TREND_READ_H

#include <stddef.h>

struct snapshot;
struct trend_reader;

/* What the reading thread makes of snapshot i once it is read (a malloc'd
 * block, or NULL), besides the snapshot: it must touch nothing shared. */
typedef void *trend_reader_prep(void *arg, size_t i, const struct snapshot *s);

/* Start reading the n snapshots at paths (kept by the caller until
 * trend_reader_stop), at most ahead of them decoded and not yet taken; prep
 * (may be NULL) is called with arg for each. */
struct trend_reader *trend_reader_start(const char *const *paths, size_t n, size_t ahead,
					trend_reader_prep *prep, void *arg);

/* Snapshot i, the one after the last taken (waited for), and what prep made
 * of it into *extra: the caller owns both; NULL with *cause (caller frees)
 * when it could not be read. */
struct snapshot *trend_reader_take(struct trend_reader *tr, size_t i, void **extra, char **cause);

/* Stop the reading thread and free what was read and not taken. */
void trend_reader_stop(struct trend_reader *tr);

#endif
