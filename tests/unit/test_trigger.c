/* test_trigger.c: unit tests for the growth trigger and the snapshot schedule:
 * parsing good and bad rules, each rule firing exactly once at the right sample,
 * and when the next snapshot is due. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "trigger.h"

#define MiB (1024.0 * 1024.0)

static void test_parse_good(void **state)
{
	struct trigger_rule r;
	char *cause = NULL;
	(void)state;

	assert_int_equal(trigger_parse("+64MiB", &r, &cause), 0);
	assert_int_equal(r.kind, TRIGGER_ABSOLUTE);
	assert_int_equal(r.bytes, 64u << 20);
	assert_int_equal(trigger_parse("+512K", &r, &cause), 0);
	assert_int_equal(r.kind, TRIGGER_ABSOLUTE);
	assert_int_equal(r.bytes, 512u << 10);
	assert_int_equal(trigger_parse("+20%", &r, &cause), 0);
	assert_int_equal(r.kind, TRIGGER_RELATIVE);
	assert_true(r.percent == 20.0);
	assert_int_equal(trigger_parse("+2.5%", &r, &cause), 0);
	assert_true(r.percent == 2.5);
	assert_int_equal(trigger_parse("10MiB/min", &r, &cause), 0);
	assert_int_equal(r.kind, TRIGGER_RATE);
	assert_true(r.bytes_per_s > 10 * MiB / 60 - 1e-6 && r.bytes_per_s < 10 * MiB / 60 + 1e-6);
	assert_int_equal(trigger_parse("1MiB/s", &r, &cause), 0);
	assert_true(r.bytes_per_s == MiB);
	assert_int_equal(trigger_parse("+360MiB/h", &r, &cause), 0);
	assert_true(r.bytes_per_s == 0.1 * MiB);
	assert_int_equal(trigger_parse("60M/m", &r, &cause), 0);
	assert_true(r.bytes_per_s == MiB);
	assert_null(cause);
}

static void test_parse_bad(void **state)
{
	static const char *bad[] = {
		"", "64MiB", "+", "+0", "+0%", "+-5%", "+x%", "+%", "+5Q", "10MiB/",
		"10MiB/day", "/min", "0/min", "+abc", "20%", "+1e400%", "-64MiB",
	};
	struct trigger_rule r;
	size_t i;
	(void)state;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *cause = NULL;
		if (trigger_parse(bad[i], &r, &cause) != -1)
			fail_msg("trigger '%s' was accepted", bad[i]);
		assert_non_null(cause);
		free(cause);
	}
}

static void test_describe(void **state)
{
	struct trigger_rule r;
	char *cause = NULL, buf[64];
	(void)state;
	assert_int_equal(trigger_parse("+64MiB", &r, &cause), 0);
	assert_string_equal(trigger_describe(&r, buf, sizeof buf), "+64.0 MiB over baseline");
	assert_int_equal(trigger_parse("+20%", &r, &cause), 0);
	assert_string_equal(trigger_describe(&r, buf, sizeof buf), "+20% over baseline");
	assert_int_equal(trigger_parse("10MiB/min", &r, &cause), 0);
	assert_string_equal(trigger_describe(&r, buf, sizeof buf), "10.0 MiB/min sustained");
}

/* Feed samples 1 s apart from rss(i); return the index where the rule fired, -1
 * if never; fail if it fires twice. */
static int fire_index(const char *rule, uint64_t (*rss)(int), int n, double dt)
{
	struct trigger_rule r;
	struct trigger_state st;
	char *cause = NULL;
	int i, at = -1;

	assert_int_equal(trigger_parse(rule, &r, &cause), 0);
	trigger_init(&st, &r);
	for (i = 0; i < n; i++) {
		if (trigger_update(&st, i * dt, rss(i))) {
			if (at >= 0)
				fail_msg("rule %s fired twice (%d and %d)", rule, at, i);
			at = i;
		}
	}
	return at;
}

/* 100 MiB, growing by 1 MiB per sample */
static uint64_t linear(int i)
{
	return (uint64_t)((100 + i) * MiB);
}

/* 100 MiB and flat, with +-2 MiB of noise */
static uint64_t flat(int i)
{
	static const int noise[] = { 0, 2, -1, 1, -2, 0, 1, -1 };
	return (uint64_t)((100 + noise[i % 8]) * MiB);
}

/* flat, then one jump of 80 MiB at sample 20 and flat again */
static uint64_t step(int i)
{
	return (uint64_t)((i < 20 ? 100 : 180) * MiB);
}

/* below the baseline first (memory freed), then growing */
static uint64_t dip(int i)
{
	return (uint64_t)((i < 10 ? 100 - i : 90 + (i - 10) * 2) * MiB);
}

static void test_absolute(void **state)
{
	(void)state;
	/* baseline 100 MiB: 164 MiB at sample 64 */
	assert_int_equal(fire_index("+64MiB", linear, 200, 1), 64);
	assert_int_equal(fire_index("+64MiB", flat, 200, 1), -1);
	assert_int_equal(fire_index("+64MiB", step, 100, 1), 20);
	/* 164 MiB = 90 + 2 * (i - 10) at i = 47 */
	assert_int_equal(fire_index("+64MiB", dip, 100, 1), 47);
}

/* A program's start: 576 KiB at its exec, 30 MiB once its interpreter has
 * imported its modules (0.5 s), then flat with noise, then growing by 1 MiB
 * per sample from sample 20 */
static uint64_t startup(int i)
{
	if (i == 0)
		return 576u << 10;
	if (i < 3)
		return (uint64_t)(i * 15 * MiB);
	if (i < 20)
		return (uint64_t)((30 + (i % 2)) * MiB);
	return (uint64_t)((30 + i - 19) * MiB);
}

/* A program that grows fast from its exec on: 10 MiB per sample */
static uint64_t fast(int i)
{
	return (uint64_t)((1 + 10 * i) * MiB);
}

/* A start-up that stalls: 15 MiB at samples 1 and 2 (its loader waited for
 * the disk, or for a processor), then as startup */
static uint64_t stalled(int i)
{
	return i == 2 ? (uint64_t)(15 * MiB) : startup(i);
}

/* Samples dt apart from rss(i), of a process just started, busy (a thread
 * at work) before sample busy_until; as fire_index. */
static int fire_index_busy(const char *rule, uint64_t (*rss)(int), int n, double dt, int busy_until,
			   uint64_t *baseline)
{
	struct trigger_rule r;
	struct trigger_state st;
	char *cause = NULL;
	int i, at = -1;

	assert_int_equal(trigger_parse(rule, &r, &cause), 0);
	trigger_init(&st, &r);
	trigger_starting(&st);
	for (i = 0; i < n; i++) {
		if (trigger_awaits_start(&st))
			trigger_busy(&st, i < busy_until);
		if (trigger_update(&st, i * dt, rss(i))) {
			if (at >= 0)
				fail_msg("rule %s fired twice (%d and %d)", rule, at, i);
			at = i;
		}
	}
	*baseline = st.baseline;
	return at;
}

/* As fire_index_busy, never busy. */
static int fire_index_starting(const char *rule, uint64_t (*rss)(int), int n, double dt,
			       uint64_t *baseline)
{
	return fire_index_busy(rule, rss, n, dt, 0, baseline);
}

static void test_starting(void **state)
{
	uint64_t base;
	(void)state;
	/* at exec, the start-up alone would fire it at 0.5 s */
	assert_int_equal(fire_index("+10MiB", startup, 100, 0.5), 1);
	/* the baseline is the settled 31 MiB of sample 3: 41 MiB at sample 30 */
	assert_int_equal(fire_index_starting("+10MiB", startup, 100, 0.5, &base), 30);
	assert_true(base == (uint64_t)(31 * MiB));
	/* never settling: the baseline is taken TRIGGER_STARTUP_S (3 s) after
	 * the first sample */
	assert_int_equal(fire_index_starting("+64MiB", fast, 100, 1, &base), 10);
	assert_true(base == (uint64_t)(31 * MiB));
	assert_int_equal(fire_index_starting("+20%", flat, 200, 1, &base), -1);
	/* a stall while busy is not the end of the start-up: the baseline is
	 * the settled 30 MiB of sample 4, not the 15 MiB of the stall */
	assert_int_equal(fire_index_busy("+10MiB", stalled, 100, 0.2, 3, &base), 29);
	assert_true(base == (uint64_t)(30 * MiB));
	/* not busy, the stall was taken for the end: fired at sample 3 */
	assert_int_equal(fire_index_starting("+10MiB", stalled, 100, 0.2, &base), 3);
	/* busy for ever: the baseline is taken 3 s after the first sample (31
	 * MiB at sample 15) */
	assert_int_equal(fire_index_busy("+10MiB", stalled, 100, 0.2, 1000, &base), 30);
	assert_true(base == (uint64_t)(31 * MiB));
}

static void test_relative(void **state)
{
	(void)state;
	assert_int_equal(fire_index("+20%", linear, 200, 1), 20);
	assert_int_equal(fire_index("+20%", flat, 200, 1), -1);
	assert_int_equal(fire_index("+100%", step, 100, 1), -1);
	assert_int_equal(fire_index("+80%", step, 100, 1), 20);
}

static void test_rate(void **state)
{
	(void)state;
	/* 1 MiB/s = 60 MiB/min: fires once the window spans 30 s, at sample 30 */
	assert_int_equal(fire_index("30MiB/min", linear, 200, 1), 30);
	assert_int_equal(fire_index("60MiB/min", linear, 200, 1), 30);
	/* faster than the growth: never */
	assert_int_equal(fire_index("61MiB/min", linear, 200, 1), -1);
	assert_int_equal(fire_index("1MiB/min", flat, 200, 1), -1);
	/* at 125 ms intervals the window still needs 30 s: sample 240 */
	assert_int_equal(fire_index("100MiB/min", linear, 1000, 0.125), 240);
	/* 8 MiB/s at 125 ms, and a 60 s window still fits the ring */
	assert_int_equal(fire_index("400MiB/min", linear, 2000, 0.125), 240);
	/* at 10 s intervals 5 points span 40 s: sample 4 */
	assert_int_equal(fire_index("5MiB/min", linear, 100, 10), 4);
	/* one jump of 80 MiB is not sustained growth at 200 MiB/min: the slope over
	 * the window is at most ~2.7 MiB/s, and it decays */
	assert_int_equal(fire_index("200MiB/min", step, 200, 1), -1);
}

static void test_step_parse(void **state)
{
	struct snap_step st;
	char *cause = NULL;
	static const char *bad[] = { "", "+", "+0", "32MiB", "0", "5x", "+5x", "-5m" };
	size_t i;
	(void)state;

	assert_int_equal(snap_step_parse("+32MiB", &st, &cause), 0);
	assert_int_equal(st.kind, STEP_BYTES);
	assert_int_equal(st.bytes, 32u << 20);
	assert_int_equal(snap_step_parse("5m", &st, &cause), 0);
	assert_int_equal(st.kind, STEP_TIME);
	assert_int_equal(st.ms, 300000);
	assert_int_equal(snap_step_parse("30s", &st, &cause), 0);
	assert_int_equal(st.ms, 30000);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cause = NULL;
		if (snap_step_parse(bad[i], &st, &cause) != -1)
			fail_msg("step '%s' was accepted", bad[i]);
		assert_non_null(cause);
		free(cause);
	}
}

static void test_step_due(void **state)
{
	struct snap_step st;
	char *cause = NULL;
	(void)state;

	assert_int_equal(snap_step_parse("+32MiB", &st, &cause), 0);
	assert_false(snap_step_due(&st, 10, 131 << 20, 5, 100 << 20));
	assert_true(snap_step_due(&st, 10, 132 << 20, 5, 100 << 20));
	assert_true(snap_step_due(&st, 10, 200 << 20, 5, 100 << 20));
	/* less than at the last snapshot: not due, no wrap-around */
	assert_false(snap_step_due(&st, 10, 50 << 20, 5, 100 << 20));

	assert_int_equal(snap_step_parse("5m", &st, &cause), 0);
	assert_false(snap_step_due(&st, 299, 0, 0, 0));
	assert_false(snap_step_due(&st, 310, 0, 11, 0));
	/* a sample a millisecond early by scheduling jitter still counts */
	assert_true(snap_step_due(&st, 299.999, 0, 0, 0));
	assert_true(snap_step_due(&st, 300, 0, 0, 0));
	assert_true(snap_step_due(&st, 311, 1 << 30, 11, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_absolute),
		cmocka_unit_test(test_relative),
		cmocka_unit_test(test_starting),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_step_parse),
		cmocka_unit_test(test_step_due),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
