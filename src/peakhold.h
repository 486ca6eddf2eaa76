/* peakhold.h: the peak snapshot of a capture, held in memory until it is
 * worth a file. A leak that rises to the end would rewrite the peak file at
 * every new high-water mark, each one a write and an event, though its final
 * snapshot is its peak; a peak held here is written only once the live heap
 * has come down from it (peak_fell), or at the end when no snapshot as high
 * came after it. A memwatch killed outright loses the held peak, never a file
 * on disk: every write is a temporary file renamed into place. */
#ifndef MEMWATCH_PEAKHOLD_H
#define MEMWATCH_PEAKHOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "runlog.h"
#include "snapshot.h"

/* One peak snapshot, encoded as its file will hold it. */
struct peak_hold {
	unsigned char *buf;      /* the encoded snapshot; NULL when none is held */
	size_t len;
	double t;                /* the watch's time when it was taken */
	uint64_t live;           /* its live heap (bytes) */
	size_t nstacks;
	char *tag;               /* the end of its event's detail (" delayed_s=...") */
};

/* Hold s (encoded now: the enrichments that need the live process are in it
 * already), taken at t with live bytes, in place of any peak held before.
 * 0, or -1 with *cause (caller frees), the hold left empty. */
int peak_hold_set(struct peak_hold *h, const struct snapshot *s, double t, uint64_t live,
		  const char *tag, char **cause);

/* Write the held peak to path (replacing it when force) and log the event
 * "peak-snapshot" at the watch's time now, with peak_s, its own time. The
 * hold is emptied either way. 0, or -1 with *cause (caller frees). */
int peak_hold_write(struct peak_hold *h, const char *path, bool force, struct runlog *log,
		    double now, int pid, char **cause);

/* Drop the held peak, if any. */
void peak_hold_release(struct peak_hold *h);

/* The margin of a peak: 10 % of it and at least 8 MiB, the step by which the
 * agent marks its peaks and the watch takes a new peak snapshot. */
uint64_t peak_margin(uint64_t peak);

/* Whether live has come down from peak by its margin. */
bool peak_fell(uint64_t live, uint64_t peak);

#endif
