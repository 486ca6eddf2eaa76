/* snapframe.h: the common frame of a snapshot's stacks read at once, a word
 * at a time (snapdecode.c's inner loop). */
#ifndef MEMWATCH_SNAPFRAME_H
#define MEMWATCH_SNAPFRAME_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"

/* Whether frame9 may use pext: the processor has BMI2 and runs it as one
 * fast instruction (Intel's do; AMD's before Zen 3 run it as microcode, tens
 * to hundreds of cycles, slower than the shifts). MEMWATCH_TEST_NO_PEXT:
 * never. */
static inline bool pext_fast(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	static int known = -1;
	if (getenv("MEMWATCH_TEST_NO_PEXT"))
		return false;
	if (known < 0) {
		__builtin_cpu_init();
		known = __builtin_cpu_supports("bmi2") && __builtin_cpu_is("intel");
	}
	return known;
#else
	return false;
#endif
}

/* The 7-bit groups of the bytes of x packed together: with pext, one
 * instruction (the assembler knows it whatever the compiler targets; it runs
 * only where pext_fast said so), else three shift-and-mask steps. */
static inline uint64_t pack7(uint64_t x, bool pext)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (pext) {
		__asm__("pextq %2, %1, %0" : "=r"(x) : "r"(x), "r"(UINT64_C(0x7f7f7f7f7f7f7f7f)));
		return x;
	}
#endif
	(void)pext;
	x = (x & UINT64_C(0x007f007f007f007f)) | (x & UINT64_C(0x7f007f007f007f00)) >> 1;
	x = (x & UINT64_C(0x00003fff00003fff)) | (x & UINT64_C(0x3fff00003fff0000)) >> 2;
	return (x & UINT64_C(0x000000000fffffff)) | (x & UINT64_C(0x0fffffff00000000)) >> 4;
}

/* The common frame at once, from the 9 bytes at p: a module reference of
 * one byte that names a module of the table (of n), then an offset of up to 8
 * bytes (56 bits), read as one word; *pos moved past it. false for anything
 * else, read again byte by byte to be refused the same way. */
static inline bool frame9(const unsigned char *p, size_t n, struct snap_frame *f, size_t *pos,
			  bool pext)
{
	uint32_t m = p[0];
	uint64_t x, t;

	if (m == 0 || m > 0x7f || m - 1 >= n)
		return false;
	memcpy(&x, p + 1, sizeof x);
	x = le64toh(x);
	t = ~x & UINT64_C(0x8080808080808080);
	if (!t)
		return false;
	x &= t ^ (t - 1);    /* the bytes up to the last one of the number */
	f->module = m - 1;
	f->offset = pack7(x, pext);
	*pos += 2 + (size_t)(__builtin_ctzll(t) >> 3);
	return true;
}

#endif
