/* trigger.c: when memory growth is real (absolute, relative or sustained rate over
 * the baseline), and when the next snapshot is due. Pure policy, no I/O. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trigger.h"
#include "util.h"

/* The rate rule looks at a window of recent samples: the least-squares slope of
 * RSS over the window must reach the rule's rate. The window keeps at least
 * RATE_MIN_POINTS points and, beyond that, no more than RATE_WINDOW_S seconds;
 * the rule may fire only once the window spans RATE_MIN_SPAN_S seconds, so a
 * single burst (one big allocation, a cache warming up for a few seconds) does
 * not count as sustained growth; and each half of the window must have grown by
 * at least half the rule's rate, so that one jump inside the window, whose
 * least-squares slope can be steep, does not count either. Points closer than
 * RATE_MIN_SPACING_S to the previous one are left out of the window, so that at
 * short intervals (100 ms) the 64-entry ring still covers about a minute. */
#define RATE_WINDOW_S 60.0
#define RATE_MIN_SPAN_S 30.0
#define RATE_MIN_POINTS 5u
#define RATE_MIN_SPACING_S 0.9
#define WIN_CAP (sizeof ((struct trigger_state *)0)->win_t / sizeof(double))

/* Parse a growth rule: "+64MiB", "+20%", or a rate "10MiB/min" (/s, /m, /min, /h). */
int trigger_parse(const char *s, struct trigger_rule *r, char **cause)
{
	const char *slash;
	char *num;
	char *sub = NULL;
	uint64_t bytes;

	memset(r, 0, sizeof *r);
	if (!s || !*s) {
		*cause = xstrdup("empty trigger (use +64MiB, +20% or 10MiB/min)");
		return -1;
	}
	slash = strchr(s, '/');
	if (slash) {
		static const struct { const char *u; double s; } per[] = {
			{ "s", 1 }, { "sec", 1 }, { "m", 60 }, { "min", 60 }, { "h", 3600 },
		};
		double div = 0;
		size_t i;

		for (i = 0; i < sizeof per / sizeof per[0]; i++)
			if (strcmp(slash + 1, per[i].u) == 0)
				div = per[i].s;
		num = strndup(s[0] == '+' ? s + 1 : s, (size_t)(slash - s) - (s[0] == '+'));
		if (!num)
			abort();
		if (div == 0 || parse_size(num, &bytes, &sub) < 0 || bytes == 0) {
			*cause = xasprintf("invalid trigger '%s' (a rate is like 10MiB/min, 1MiB/s, 100MiB/h)", s);
			free(sub);
			free(num);
			return -1;
		}
		free(num);
		r->kind = TRIGGER_RATE;
		r->bytes_per_s = (double)bytes / div;
		return 0;
	}
	if (s[0] != '+') {
		*cause = xasprintf("invalid trigger '%s' (growth over the first sample is written with a "
				   "'+': +64MiB or +20%%; a rate like 10MiB/min)", s);
		return -1;
	}
	if (s[strlen(s) - 1] == '%') {
		char *end;
		double p;
		num = strndup(s + 1, strlen(s) - 2);
		if (!num)
			abort();
		p = strtod(num, &end);
		if (end == num || *end || !isfinite(p) || p <= 0 || p > 1e6 || !(num[0] >= '0' && num[0] <= '9')) {
			*cause = xasprintf("invalid trigger '%s' (a share of the baseline is like +20%%)", s);
			free(num);
			return -1;
		}
		free(num);
		r->kind = TRIGGER_RELATIVE;
		r->percent = p;
		return 0;
	}
	if (parse_size(s + 1, &bytes, &sub) < 0 || bytes == 0) {
		*cause = xasprintf("invalid trigger '%s' (an amount over the baseline is like +64MiB)", s);
		free(sub);
		return -1;
	}
	r->kind = TRIGGER_ABSOLUTE;
	r->bytes = bytes;
	return 0;
}

/* The rule for people and for event lines: "+64 MiB over baseline". */
const char *trigger_describe(const struct trigger_rule *r, char *buf, size_t n)
{
	char b[32];
	switch (r->kind) {
	case TRIGGER_ABSOLUTE:
		snprintf(buf, n, "+%s over baseline", fmt_bytes(b, sizeof b, (double)r->bytes));
		break;
	case TRIGGER_RELATIVE:
		snprintf(buf, n, "+%g%% over baseline", r->percent);
		break;
	case TRIGGER_RATE:
		snprintf(buf, n, "%s/min sustained", fmt_bytes(b, sizeof b, r->bytes_per_s * 60));
		break;
	}
	return buf;
}

void trigger_init(struct trigger_state *st, const struct trigger_rule *r)
{
	memset(st, 0, sizeof *st);
	st->rule = *r;
}

/* Index of the i-th oldest point of the window. */
static unsigned win_at(const struct trigger_state *st, unsigned i)
{
	return (st->win_head + WIN_CAP - st->win_n + i) % WIN_CAP;
}

/* Add a point to the rate window, dropping points that fell out of it. */
static void win_push(struct trigger_state *st, double t, double v)
{
	if (st->win_n > 0) {
		double last = st->win_t[win_at(st, st->win_n - 1)];
		if (t - last < RATE_MIN_SPACING_S)
			return;
	}
	if (st->win_n == WIN_CAP)
		st->win_n--;
	st->win_t[st->win_head] = t;
	st->win_v[st->win_head] = v;
	st->win_head = (st->win_head + 1) % WIN_CAP;
	st->win_n++;
	/* drop the oldest while the rest still covers the whole window */
	while (st->win_n > RATE_MIN_POINTS && t - st->win_t[win_at(st, 1)] >= RATE_WINDOW_S)
		st->win_n--;
}

/* Least-squares slope (bytes per second) of the window; false when too short. */
static bool win_slope(const struct trigger_state *st, double *slope)
{
	double t0, mt = 0, mv = 0, sxx = 0, sxy = 0;
	unsigned i, n = st->win_n;

	if (n < RATE_MIN_POINTS)
		return false;
	t0 = st->win_t[win_at(st, 0)];
	if (st->win_t[win_at(st, n - 1)] - t0 < RATE_MIN_SPAN_S)
		return false;
	for (i = 0; i < n; i++) {
		mt += st->win_t[win_at(st, i)] - t0;
		mv += st->win_v[win_at(st, i)];
	}
	mt /= n;
	mv /= n;
	for (i = 0; i < n; i++) {
		double dt = st->win_t[win_at(st, i)] - t0 - mt;
		sxx += dt * dt;
		sxy += dt * (st->win_v[win_at(st, i)] - mv);
	}
	if (sxx <= 0)
		return false;
	*slope = sxy / sxx;
	return true;
}

/* Both halves of the window grew by at least half the rate. */
static bool win_halves_grow(const struct trigger_state *st, double rate)
{
	unsigned n = st->win_n, a = win_at(st, 0), mid = win_at(st, n / 2), z = win_at(st, n - 1);
	return st->win_v[mid] - st->win_v[a] >= 0.5 * rate * (st->win_t[mid] - st->win_t[a]) &&
	       st->win_v[z] - st->win_v[mid] >= 0.5 * rate * (st->win_t[z] - st->win_t[mid]);
}

/* Feed one sample; true at the first sample where the rule holds, never again. */
bool trigger_update(struct trigger_state *st, double t, uint64_t rss)
{
	bool holds = false;
	double slope;

	if (!st->have_baseline) {
		st->have_baseline = true;
		st->baseline = rss;
	}
	if (st->rule.kind == TRIGGER_RATE)
		win_push(st, t, (double)rss);
	if (st->fired)
		return false;
	switch (st->rule.kind) {
	case TRIGGER_ABSOLUTE:
		holds = rss >= st->baseline && rss - st->baseline >= st->rule.bytes;
		break;
	case TRIGGER_RELATIVE:
		holds = (double)rss >= (double)st->baseline * (1 + st->rule.percent / 100);
		holds = holds && rss > st->baseline;
		break;
	case TRIGGER_RATE:
		holds = win_slope(st, &slope) && slope >= st->rule.bytes_per_s &&
			win_halves_grow(st, st->rule.bytes_per_s);
		break;
	}
	if (holds)
		st->fired = true;
	return holds;
}

/* "+32MiB" is a growth step; anything else must be a duration ("30s", "5m"). */
int snap_step_parse(const char *s, struct snap_step *st, char **cause)
{
	char *sub = NULL;

	memset(st, 0, sizeof *st);
	if (s && s[0] == '+') {
		if (parse_size(s + 1, &st->bytes, &sub) < 0 || st->bytes == 0) {
			*cause = xasprintf("invalid snapshot step '%s' (growth like +32MiB or time like 5m)", s);
			free(sub);
			return -1;
		}
		st->kind = STEP_BYTES;
		return 0;
	}
	if (!s || parse_duration_ms(s, &st->ms, &sub) < 0) {
		*cause = xasprintf("invalid snapshot step '%s' (growth like +32MiB or time like 5m)",
				   s ? s : "");
		free(sub);
		return -1;
	}
	st->kind = STEP_TIME;
	return 0;
}

/* Time steps allow a few milliseconds of scheduling jitter, so that a step of 5m
 * at a 1 s interval is due at the sample taken at 300 s, not at 301 s. */
#define STEP_TIME_SLACK_S 0.005

/* Due when RSS grew by the step over the last snapshot, or the time step passed. */
bool snap_step_due(const struct snap_step *st, double t, uint64_t rss, double last_t,
		   uint64_t last_rss)
{
	if (st->kind == STEP_BYTES)
		return rss >= last_rss && rss - last_rss >= st->bytes;
	return t - last_t + STEP_TIME_SLACK_S >= (double)st->ms / 1000;
}
