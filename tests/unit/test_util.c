/* test_util.c: unit tests for the size, duration and pid parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "util.h"

static void test_durations(void **state)
{
	uint64_t ms;
	char *cause = NULL;
	(void)state;
	assert_int_equal(parse_duration_ms("500ms", &ms, &cause), 0);
	assert_int_equal(ms, 500);
	assert_int_equal(parse_duration_ms("1s", &ms, &cause), 0);
	assert_int_equal(ms, 1000);
	assert_int_equal(parse_duration_ms("2m", &ms, &cause), 0);
	assert_int_equal(ms, 120000);
	assert_int_equal(parse_duration_ms("1.5", &ms, &cause), 0);
	assert_int_equal(ms, 1500);
	assert_int_equal(parse_duration_ms("1h", &ms, &cause), 0);
	assert_int_equal(ms, 3600000);
	assert_int_equal(parse_duration_ms("36500d", &ms, &cause), 0);
	assert_true(ms == 36500ull * 86400000ull);
	static const char *bad[] = { "", "0", "0s", "-1s", "1x", "s", "1 s", "nan", "inf", "0.1ms",
				     "36501d", "1e99s" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cause = NULL;
		assert_int_equal(parse_duration_ms(bad[i], &ms, &cause), -1);
		assert_non_null(cause);
		free(cause);
	}
	cause = NULL;
	parse_duration_ms("1e99s", &ms, &cause);
	assert_string_equal(cause, "duration '1e99s' out of range (1ms to 36500d)");
	free(cause);
}

static void test_sizes(void **state)
{
	uint64_t b;
	char *cause = NULL;
	(void)state;
	assert_int_equal(parse_size("512", &b, &cause), 0);
	assert_int_equal(b, 512);
	assert_int_equal(parse_size("64KiB", &b, &cause), 0);
	assert_int_equal(b, 65536);
	assert_int_equal(parse_size("1.5M", &b, &cause), 0);
	assert_int_equal(b, 1572864);
	assert_int_equal(parse_size("2G", &b, &cause), 0);
	assert_int_equal(b, 2147483648u);
	static const char *bad[] = { "", "-5", "5Q", "MiB", "1e400", "99999999999T" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cause = NULL;
		assert_int_equal(parse_size(bad[i], &b, &cause), -1);
		assert_non_null(cause);
		free(cause);
	}
}

static void test_pids(void **state)
{
	int pid;
	char *cause = NULL;
	(void)state;
	assert_int_equal(parse_pid("123", &pid, &cause), 0);
	assert_int_equal(pid, 123);
	assert_int_equal(parse_pid("/proc/77", &pid, &cause), 0);
	assert_int_equal(pid, 77);
	assert_int_equal(parse_pid("/proc/77/", &pid, &cause), 0);
	static const char *bad[] = { "", "0", "-3", "12a", "/proc/", "99999999999", "/proc/self" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cause = NULL;
		assert_int_equal(parse_pid(bad[i], &pid, &cause), -1);
		free(cause);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_pids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
