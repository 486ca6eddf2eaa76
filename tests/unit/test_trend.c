/* test_trend.c: unit tests for trend.c: the verdict of each shape, with and
 * without sampling error, the share grown, the slope, the time to a limit,
 * the words and the sparkline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "trend.h"

#define MIB 1048576.0

/* The verdict of n points a minute apart, each with the error se. */
static struct trend of(const double *b, double se, size_t n)
{
	double t[32], e[32];
	struct trend tr;

	for (size_t i = 0; i < n; i++) {
		t[i] = 60.0 * (double)i;
		e[i] = b[i] > 0 ? se : 0;
	}
	trend_of(b, e, t, n, &tr);
	return tr;
}

static void test_leak(void **state)
{
	const double b[] = { 1 * MIB, 2 * MIB, 3 * MIB, 4 * MIB, 5 * MIB, 6 * MIB, 7 * MIB, 8 * MIB };
	struct trend tr = of(b, 0.3 * MIB, 8);
	(void)state;
	assert_int_equal(tr.verdict, TREND_LEAK);
	assert_true(fabs(tr.grown_share - 1.0) < 1e-9);
	assert_true(fabs(tr.slope - MIB) < 1);   /* 1 MiB a minute */
	assert_int_equal(tr.peak, 7);
	/* one interval without growth of seven is still nearly every one */
	const double c[] = { 1 * MIB, 2 * MIB, 3 * MIB, 3 * MIB, 5 * MIB, 6 * MIB, 7 * MIB, 8 * MIB };
	assert_int_equal(of(c, 0.3 * MIB, 8).verdict, TREND_LEAK);
}

static void test_plateau(void **state)
{
	const double b[] = { 0, 4 * MIB, 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB };
	(void)state;
	assert_int_equal(of(b, 0.5 * MIB, 9).verdict, TREND_PLATEAU);
	/* still creeping at a tenth of its pace: stopped, for the rule */
	const double c[] = { 0, 4 * MIB, 8 * MIB, 8.1 * MIB, 8.2 * MIB, 8.3 * MIB, 8.4 * MIB, 8.5 * MIB, 8.6 * MIB };
	assert_int_equal(of(c, 0.5 * MIB, 9).verdict, TREND_PLATEAU);
}

static void test_burst_and_shrinking(void **state)
{
	const double b[] = { 0, 0, 3 * MIB, 6 * MIB, 9 * MIB, 0, 0 };
	const double s[] = { 9 * MIB, 9 * MIB, 6 * MIB, 3 * MIB, 1 * MIB };
	(void)state;
	assert_int_equal(of(b, 0.5 * MIB, 7).verdict, TREND_BURST);
	assert_int_equal(of(b, 0.5 * MIB, 7).peak, 4);
	assert_int_equal(of(s, 0.5 * MIB, 5).verdict, TREND_SHRINKING);
}

static void test_steady_and_unsure(void **state)
{
	const double b[] = { 8 * MIB, 8.5 * MIB, 7.8 * MIB, 8.2 * MIB, 8.1 * MIB, 7.9 * MIB };
	const double small[] = { 100e3, 600e3, 50e3, 400e3, 200e3, 300e3 };
	const double dip[] = { 8 * MIB, 2 * MIB, 8 * MIB, 8 * MIB };
	(void)state;
	/* within its error all along */
	assert_int_equal(of(b, 1 * MIB, 6).verdict, TREND_STEADY);
	/* exact figures: the same moves are real */
	assert_int_not_equal(of(b, 0, 6).verdict, TREND_STEADY);
	/* a row of a sample or two: its error is as large as itself */
	assert_int_equal(of(small, 512e3, 6).verdict, TREND_UNSURE);
	/* down and back: no one shape */
	assert_int_equal(of(dip, 0.1 * MIB, 4).verdict, TREND_UNSURE);
	/* a row that is all zeros says nothing */
	const double z[] = { 0, 0, 0 };
	assert_int_equal(of(z, 0, 3).verdict, TREND_UNSURE);
}

static void test_few_points(void **state)
{
	const double b[] = { 1 * MIB, 2 * MIB };
	struct trend tr = of(b, 0, 2);
	(void)state;
	assert_int_equal(tr.verdict, TREND_UNSURE);
	assert_true(fabs(tr.grown_share - 1.0) < 1e-9);
	tr = of(b, 0, 1);
	assert_true(isnan(tr.grown_share));
	assert_true(isnan(tr.slope));
}

static void test_limit_names_sparkline(void **state)
{
	enum trend_verdict v;
	const double s[] = { 0, 1, 2, 3, 4, 5, 6, 7, NAN };
	char buf[64];
	(void)state;
	/* 100 MiB left at 10 MiB a minute: 10 minutes */
	assert_true(fabs(trend_seconds_to_limit(400 * MIB, 500 * MIB, 10 * MIB) - 600) < 1e-6);
	assert_true(trend_seconds_to_limit(400 * MIB, 0, 10 * MIB) < 0);
	assert_true(trend_seconds_to_limit(400 * MIB, 500 * MIB, -1) < 0);
	assert_true(trend_seconds_to_limit(600 * MIB, 500 * MIB, 1) == 0);
	assert_string_equal(trend_name(TREND_LEAK), "leak?");
	assert_true(trend_parse("leak", &v) && v == TREND_LEAK);
	assert_true(trend_parse("leak?", &v) && v == TREND_LEAK);
	assert_true(trend_parse("plateau", &v) && v == TREND_PLATEAU);
	assert_false(trend_parse("maybe", &v));
	assert_int_equal(trend_sparkline(s, 9, 16, false, buf, sizeof buf), 9);
	assert_string_equal(buf, "_.-=+*#@ ");
	assert_int_equal(trend_sparkline(s, 9, 3, false, buf, sizeof buf), 3);
	assert_string_equal(buf, "_@ ");   /* the last three, 6 to 7 */
	assert_int_equal(trend_sparkline(s, 2, 8, true, buf, sizeof buf), 2);
	assert_string_equal(buf, "\u2581\u2588");
	/* no room: ends before a character would be split */
	assert_int_equal(trend_sparkline(s, 8, 8, true, buf, 7), 2);
	assert_int_equal(trend_sparkline_scaled(s, 2, 8, 0, 14, false, buf, sizeof buf), 2);
	assert_string_equal(buf, "__");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leak),
		cmocka_unit_test(test_plateau),
		cmocka_unit_test(test_burst_and_shrinking),
		cmocka_unit_test(test_steady_and_unsure),
		cmocka_unit_test(test_few_points),
		cmocka_unit_test(test_limit_names_sparkline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
