/* test_crc.c: the CLI's CRC-32 of snapshots (snap_crc built with MW_ISAL_CRC:
 * ISA-L's crc32_gzip_refl) is zlib's crc32, which the agent writes them
 * with: every length to 600 at every alignment, then 5 MiB at once. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>
#include <cmocka.h>

#include "snapshot-internal.h"

static void test_crc(void **state)
{
	(void)state;
#ifndef MW_ISAL_CRC
	fail_msg("built without MW_ISAL_CRC: this test checks the CLI's CRC");
#endif
	size_t big = (size_t)5 << 20;
	unsigned char *b = malloc(big);
	assert_non_null(b);
	uint64_t x = 0x9e3779b97f4a7c15u;
	for (size_t i = 0; i < big; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = (unsigned char)x;
	}
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 600; len++)
			assert_int_equal(snap_crc(b + off, len), (uint32_t)crc32(0, b + off, (uInt)len));
	assert_int_equal(snap_crc(b, big), (uint32_t)crc32(0, b, (uInt)big));
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
