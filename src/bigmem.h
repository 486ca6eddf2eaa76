/* bigmem.h: memory of many megabytes, filled as soon as it is had (a
 * report's rows, the frames of the snapshots of show and diff), asked for
 * in pages of 2 MiB.
 *
 * A report of 100 000 stacks touched 24 000 pages of 4 KiB: a fault each, and
 * a fifth of its time in the kernel; the rows were 7 500 of them.
 * Transparent huge pages are given only to memory advised so in Debian's
 * default mode ("madvise"); where they are off, or none is free, the advice
 * does nothing.
 *
 * The frames (11 000 of the faults) are advised where malloc put them, and
 * only for show and diff: a trend of ten snapshots peaked 25 MB higher with
 * its frames in 2 MiB pages, aligned or not, as malloc's chunks no longer
 * reused what the report had freed before. */
#ifndef MEMWATCH_BIGMEM_H
#define MEMWATCH_BIGMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#define BIGMEM_PAGE ((size_t)2 << 20)

/* Advise the whole 2 MiB pages within [p, p + n). */
static inline void bigmem_advise(void *p, size_t n)
{
	uintptr_t lo = ((uintptr_t)p + BIGMEM_PAGE - 1) & ~(uintptr_t)(BIGMEM_PAGE - 1);
	uintptr_t hi = ((uintptr_t)p + n) & ~(uintptr_t)(BIGMEM_PAGE - 1);

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

#endif
