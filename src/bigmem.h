/* bigmem.h: memory of many megabytes, filled as soon as it is had (a
 * report's rows), asked for in pages of 2 MiB.
 *
 * A report of 100 000 stacks touched 24 000 pages of 4 KiB: a fault each, and
 * a fifth of its time in the kernel; the rows were 7 500 of them.
 * Transparent huge pages are given only to memory advised so in Debian's
 * default mode ("madvise"); where they are off, or none is free, the advice
 * does nothing.
 *
 * Not the snapshots' frames (11 000 of the faults): allocated at a 2 MiB
 * boundary, they made a trend of ten snapshots peak 25 MB higher, allocated
 * or mapped either way, advised or not, while malloc's chunks reuse what the
 * report freed before. */
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
