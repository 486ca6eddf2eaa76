/* trend-read.h: the snapshots of a trend, read in order by a second thread a
 * few ahead of their use, so that decoding the next overlaps keying the last
 * and no more than a few are held at once. */
#ifndef MEMWATCH_TREND_READ_H
#define MEMWATCH_TREND_READ_H

#include <stddef.h>

struct snapshot;
struct trend_reader;

/* How snapshot i (at path) is read, in a reading thread: the snapshot, and
 * what else the caller wants made of it into *extra (malloc'd, or NULL);
 * NULL with *cause when it cannot be read. It must touch nothing shared. */
typedef struct snapshot *trend_reader_read(void *arg, size_t i, const char *path, void **extra,
					   char **cause);

/* Start reading the n snapshots at paths (kept by the caller until
 * trend_reader_stop), at most ahead of them decoded and not yet taken, with
 * read called with arg (NULL: snapshot_read); drop frees an extra not taken
 * (NULL: free). */
struct trend_reader *trend_reader_start(const char *const *paths, size_t n, size_t ahead,
					trend_reader_read *read, void *arg, void (*drop)(void *extra));

/* Snapshot i, the one after the last taken (waited for), and what read made
 * of it into *extra: the caller owns both; NULL with *cause (caller frees)
 * when it could not be read. */
struct snapshot *trend_reader_take(struct trend_reader *tr, size_t i, void **extra, char **cause);

/* Stop the reading thread and free what was read and not taken. */
void trend_reader_stop(struct trend_reader *tr);

#endif
