/* trend.c: the shape of one row's live heap over a run's snapshots (see
 * trend.h; the rules and their reasons are in memwatch-reports(7)). */
#include "trend.h"

#include <math.h>
#include <string.h>

static const char *const names[TREND_NVERDICTS] = {
	[TREND_UNSURE] = "unsure", [TREND_LEAK] = "leak?",   [TREND_PLATEAU] = "plateau",
	[TREND_BURST] = "burst",   [TREND_STEADY] = "steady", [TREND_SHRINKING] = "shrinking",
};

const char *trend_name(enum trend_verdict v)
{
	return (unsigned)v < TREND_NVERDICTS ? names[v] : "unsure";
}

bool trend_parse(const char *word, enum trend_verdict *v)
{
	for (int i = 0; i < TREND_NVERDICTS; i++)
		if (!strcmp(word, names[i])) {
			*v = (enum trend_verdict)i;
			return true;
		}
	if (!strcmp(word, "leak")) {
		*v = TREND_LEAK;
		return true;
	}
	return false;
}

/* Whether points a and b differ by more than their sampling error: the
 * margin of their difference. */
static double margin(const double *se, size_t a, size_t b)
{
	return TREND_Z * sqrt(se[a] * se[a] + se[b] * se[b]);
}

/* Least-squares slope of y over x, per unit of x; NaN for fewer than 2
 * points or no spread in x. */
static double lsq_slope(const double *x, const double *y, size_t n)
{
	double mx = 0, my = 0, sxy = 0, sxx = 0;
	size_t i;

	if (n < 2)
		return NAN;
	for (i = 0; i < n; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= (double)n;
	my /= (double)n;
	for (i = 0; i < n; i++) {
		sxy += (x[i] - mx) * (y[i] - my);
		sxx += (x[i] - mx) * (x[i] - mx);
	}
	return sxx > 0 ? sxy / sxx : NAN;
}

/* The first point of the last part of the run (TREND_TAIL of its time), at
 * most n-2 so that the part holds an interval. */
static size_t tail_start(const double *t, size_t n)
{
	double from = t[n - 1] - TREND_TAIL * (t[n - 1] - t[0]);
	size_t k = 0;

	while (k < n - 2 && t[k] < from)
		k++;
	return k;
}

void trend_of(const double *bytes, const double *se, const double *t, size_t n, struct trend *out)
{
	size_t i, lo = 0, grew = 0, k;
	double mean = 0, mean_se = 0, tlo, thi;
	bool gave_back = false, rose, fell, tail_flat;

	memset(out, 0, sizeof(*out));
	out->verdict = TREND_UNSURE;
	out->grown_share = NAN;
	out->slope = lsq_slope(t, bytes, n) * 60.0;
	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		if (bytes[i] > bytes[out->peak])
			out->peak = i;
		if (bytes[i] < bytes[lo])
			lo = i;
		mean += bytes[i];
		mean_se += se[i];
	}
	mean /= (double)n;
	mean_se /= (double)n;
	if (n < 2)
		return;
	/* grown: rose at all (the share says how regular); given back: fell
	 * below the highest point so far by more than the margin */
	for (i = 1, k = 0; i < n; i++) {
		if (bytes[i] > bytes[i - 1])
			grew++;
		if (bytes[k] - bytes[i] > margin(se, k, i))
			gave_back = true;
		if (bytes[i] > bytes[k])
			k = i;
	}
	out->grown_share = (double)grew / (double)(n - 1);
	if (n < 3)
		return;

	if (bytes[out->peak] - bytes[lo] <= margin(se, out->peak, lo)) {
		/* it never moved by more than its error */
		out->verdict = mean > 0 && mean >= TREND_MIN_LEVEL * mean_se ? TREND_STEADY : TREND_UNSURE;
		return;
	}
	rose = bytes[out->peak] - bytes[0] > margin(se, out->peak, 0);
	fell = bytes[out->peak] - bytes[n - 1] > margin(se, out->peak, n - 1);
	if (fell) {
		out->verdict = rose ? TREND_BURST : TREND_SHRINKING;
		return;
	}
	if (!rose)
		return;   /* dipped and came back: no one shape */
	/* flat at the end: every point of the last part within the margin of
	 * the others */
	k = tail_start(t, n);
	tlo = thi = bytes[k];
	size_t ilo = k, ihi = k;
	for (i = k; i < n; i++) {
		if (bytes[i] < tlo) {
			tlo = bytes[i];
			ilo = i;
		}
		if (bytes[i] > thi) {
			thi = bytes[i];
			ihi = i;
		}
	}
	tail_flat = thi - tlo <= margin(se, ihi, ilo);
	if (!gave_back && !tail_flat && out->grown_share >= TREND_LEAK_SHARE)
		out->verdict = TREND_LEAK;
	else if (tail_flat && bytes[k] - bytes[0] > margin(se, k, 0))
		out->verdict = TREND_PLATEAU;
}

double trend_seconds_to_limit(double usage, double limit, double slope)
{
	if (!(limit > 0) || !(slope > 0))
		return -1;
	if (usage >= limit)
		return 0;
	return (limit - usage) / slope * 60.0;
}

size_t trend_sparkline(const double *v, size_t n, size_t width, bool utf8, char *buf, size_t size)
{
	static const char ascii[] = "_.-=+*#@";
	double lo = INFINITY, hi = -INFINITY;
	size_t i, from = n > width ? n - width : 0, len = 0, cells = 0;

	if (size == 0)
		return 0;
	for (i = from; i < n; i++) {
		if (isnan(v[i]))
			continue;
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	for (i = from; i < n; i++) {
		int l = isnan(v[i]) ? -1 : hi > lo ? (int)((v[i] - lo) / (hi - lo) * 7.999) : 0;
		size_t need = l < 0 || !utf8 ? 1 : 3;

		if (len + need >= size)
			break;
		if (l < 0)
			buf[len++] = ' ';
		else if (!utf8)
			buf[len++] = ascii[l];
		else {
			/* U+2581 LOWER ONE EIGHTH BLOCK and up: E2 96 81+l */
			buf[len++] = (char)0xe2;
			buf[len++] = (char)0x96;
			buf[len++] = (char)(0x81 + l);
		}
		cells++;
	}
	buf[len] = '\0';
	return cells;
}
