/* test_gaps.c: unit tests for the agent's sampling arithmetic (gaps.c): its own
 * log and expm1 against libm over the whole range the sampler uses, the weights
 * a sample stands for, and the gaps' distribution (exponential, mean R). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <cmocka.h>

#include "agent.h"

/* What gaps.c takes from the rest of the agent. */
__thread struct mw_tls mw_tls;
uint64_t mw_rate = 1;

static double rel_err(double got, double want)
{
	return want == 0 ? fabs(got) : fabs(got - want) / fabs(want);
}

static int setup(void **state)
{
	(void)state;
	mw_gaps_init();
	mw_gaps_init();     /* idempotent */
	return 0;
}

/* Every u the gap draw can see, (0, 1], and its ends: within 1e-14 of libm
 * (the gap is -log u times R, so it is the absolute error that counts; near
 * u = 1, where log u nears 0, the relative one grows), and within 1e-13
 * relative below 1/2. */
static void test_log(void **state)
{
	double worst = 0, worst_abs = 0;
	uint64_t s = 12345;
	(void)state;
	assert_true(mw_log(1.0) == 0.0);
	assert_true(rel_err(mw_log(0x1.0p-53), log(0x1.0p-53)) < 1e-13);
	assert_true(rel_err(mw_log(0.5), log(0.5)) < 1e-15);
	for (int i = 0; i < 2000000; i++) {
		s = mw_splitmix64(s);
		/* uniform in (0, 1], and log-uniform over 2^-53 .. 1 */
		double u = i & 1 ? (double)((s >> 11) + 1) * 0x1.0p-53 :
				   exp2(-53.0 * (double)(s >> 11) * 0x1.0p-53);
		double got = mw_log(u), want = log(u), e = rel_err(got, want);
		if (u < 0.5 && e > worst)
			worst = e;
		if (fabs(got - want) > worst_abs)
			worst_abs = fabs(got - want);
		assert_true(got <= 0);
	}
	print_message("mw_log: worst relative error %.3g (u < 1/2), absolute %.3g\n", worst,
		      worst_abs);
	assert_true(worst < 1e-13);
	assert_true(worst_abs < 1e-13);
}

/* -(size + 1) / R for every size and rate the weights see: within 1e-12 (it
 * is about 1e-13). */
static void test_expm1(void **state)
{
	double worst = 0;
	uint64_t s = 777;
	(void)state;
	assert_true(mw_expm1(0.0) == 0.0);
	assert_true(mw_expm1(-800) == -1.0);
	for (int i = 0; i < 2000000; i++) {
		s = mw_splitmix64(s);
		/* log-uniform over 1e-12 .. 700 */
		double x = -exp(log(1e-12) + (log(700.0) - log(1e-12)) * (double)(s >> 11) * 0x1.0p-53);
		double e = rel_err(mw_expm1(x), expm1(x));
		if (e > worst)
			worst = e;
	}
	print_message("mw_expm1: worst relative error %.3g\n", worst);
	assert_true(worst < 1e-12);
}

/* Horvitz-Thompson: a block of s bytes picked with p = 1 - exp(-(s+1)/R)
 * stands for s/p bytes and 1/p blocks; rate 1 is exact. */
static void test_weights(void **state)
{
	static const uint64_t sizes[] = { 0, 1, 16, 100, 4096, 65536, 524288, 1 << 20, 1ull << 30 };
	static const uint64_t rates[] = { 2, 4096, 65536, 524288, 1 << 20 };
	uint64_t b, n;
	(void)state;
	mw_rate = 1;
	mw_inv_rate = 1;
	mw_weights(100, &b, &n);
	assert_int_equal(b, 100);
	assert_int_equal(n, (uint64_t)FX);
	for (size_t r = 0; r < sizeof rates / sizeof *rates; r++) {
		mw_rate = rates[r];
		mw_inv_rate = 1.0 / (double)rates[r];
		for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
			double p = -expm1(-((double)sizes[i] + 1) / (double)rates[r]);
			mw_weights(sizes[i], &b, &n);
			assert_true(fabs((double)b - (double)sizes[i] / p) <= 1.0 + 1e-12 * (double)b);
			assert_true(fabs((double)n - FX / p) <= 1.0 + 1e-12 * (double)n);
		}
	}
}

/* Gaps at R = 4096: mean R, and P(gap > R) = 1/e, within 5 standard errors
 * of 1e6 draws; rate 1 draws 0. */
static void test_gaps(void **state)
{
	const int draws = 1000000;
	double sum = 0, over = 0, sd_mean, sd_p;
	(void)state;
	mw_rate = 1;
	assert_int_equal(mw_draw_gap(&mw_tls), 0);
	mw_rate = 4096;
	mw_inv_rate = 1.0 / 4096;
	mw_tls.rng = 0x1234567;
	for (int i = 0; i < draws; i++) {
		uint64_t g = mw_draw_gap(&mw_tls);
		sum += (double)g;
		over += g > 4096;
	}
	sd_mean = 4096.0 / sqrt(draws);
	sd_p = sqrt(exp(-1) * (1 - exp(-1)) / draws);
	print_message("gaps: mean %.1f (R 4096), P(> R) %.4f (1/e %.4f)\n", sum / draws,
		      over / draws, exp(-1));
	assert_true(fabs(sum / draws - 4095.5) < 5 * sd_mean);
	assert_true(fabs(over / draws - exp(-1)) < 5 * sd_p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log),
		cmocka_unit_test(test_expm1),
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_gaps),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
