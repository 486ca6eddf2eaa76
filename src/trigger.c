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
#define WIN_CAP (sizeof ((struct growth_window *)0)->t / sizeof(double))

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

void trigger_starting(struct trigger_state *st)
{
	st->starting = true;
}

void trigger_busy(struct trigger_state *st, bool busy)
{
	st->busy = busy;
}

/* Whether the baseline can be taken at this sample (see trigger_starting). */
static bool startup_over(struct trigger_state *st, double t, uint64_t rss)
{
	bool over;

	if (!st->starting)
		return true;
	if (!st->seen) {
		st->seen = true;
		st->first_t = t;
		st->prev = rss;
		return false;
	}
	over = (!st->busy && rss < st->prev + st->prev / 16) || t - st->first_t >= TRIGGER_STARTUP_S;
	st->prev = rss;
	return over;
}

/* Index of the i-th oldest point of the window. */
static unsigned win_at(const struct growth_window *w, unsigned i)
{
	return (w->head + WIN_CAP - w->n + i) % WIN_CAP;
}

/* Add a point to the window, dropping points that fell out of it. */
void growth_window_push(struct growth_window *w, double t, double v)
{
	if (w->n > 0) {
		double last = w->t[win_at(w, w->n - 1)];
		if (t - last < RATE_MIN_SPACING_S)
			return;
	}
	if (w->n == WIN_CAP)
		w->n--;
	w->t[w->head] = t;
	w->v[w->head] = v;
	w->head = (w->head + 1) % WIN_CAP;
	w->n++;
	/* drop the oldest while the rest still covers the whole window */
	while (w->n > RATE_MIN_POINTS && t - w->t[win_at(w, 1)] >= RATE_WINDOW_S)
		w->n--;
}

/* Least-squares slope (bytes per second) of the window; false when too short. */
bool growth_window_slope(const struct growth_window *w, double *slope)
{
	double t0, mt = 0, mv = 0, sxx = 0, sxy = 0;
	unsigned i, n = w->n;

	if (n < RATE_MIN_POINTS)
		return false;
	t0 = w->t[win_at(w, 0)];
	if (w->t[win_at(w, n - 1)] - t0 < RATE_MIN_SPAN_S)
		return false;
	for (i = 0; i < n; i++) {
		mt += w->t[win_at(w, i)] - t0;
		mv += w->v[win_at(w, i)];
	}
	mt /= n;
	mv /= n;
	for (i = 0; i < n; i++) {
		double dt = w->t[win_at(w, i)] - t0 - mt;
		sxx += dt * dt;
		sxy += dt * (w->v[win_at(w, i)] - mv);
	}
	if (sxx <= 0)
		return false;
	*slope = sxy / sxx;
	return true;
}

/* Both halves of the window grew by at least half the rate. */
static bool win_halves_grow(const struct growth_window *w, double rate)
{
	unsigned n = w->n, a = win_at(w, 0), mid = win_at(w, n / 2), z = win_at(w, n - 1);
	return w->v[mid] - w->v[a] >= 0.5 * rate * (w->t[mid] - w->t[a]) &&
	       w->v[z] - w->v[mid] >= 0.5 * rate * (w->t[z] - w->t[mid]);
}

/* Feed one sample; true at the first sample where the rule holds, never again. */
bool trigger_update(struct trigger_state *st, double t, uint64_t rss)
{
	bool holds = false;
	double slope;

	if (!st->have_baseline) {
		if (!startup_over(st, t, rss))
			return false;
		st->have_baseline = true;
		st->baseline = rss;
	}
	if (st->rule.kind == TRIGGER_RATE)
		growth_window_push(&st->win, t, (double)rss);
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
		holds = growth_window_slope(&st->win, &slope) && slope >= st->rule.bytes_per_s &&
			win_halves_grow(&st->win, st->rule.bytes_per_s);
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
