/* story.h: what /proc tells of a process's memory over a watch (story.c), for
 * the end of a watch whose capture was refused or failed: its RSS from the
 * first sample to the last, the peak, what it is made of at the end. */
#ifndef MEMWATCH_STORY_H
#define MEMWATCH_STORY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "runlog.h"

struct rss_story {
	bool seen;
	double t0, t1;               /* the first and the latest sample */
	uint64_t first, last, peak;  /* RSS, bytes */
	uint64_t anon, file, shmem, swap;   /* the latest sample's parts, bytes */
};

/* Add a sample of s (KiB, as read) taken at t seconds. */
void rss_story_add(struct rss_story *st, double t, const struct mem_sample *s);
/* Print to f, for pid whose allocations were not sampled because of why:
 * "memwatch: pid N: not sampled (WHY); from /proc: RSS A -> B (+C) over T s,
 * peak P; at the end anon X, file Y..." Nothing when no sample was seen. */
void rss_story_print(FILE *f, int pid, const char *why, const struct rss_story *st);

#endif
