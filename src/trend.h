/* trend.h: the shape of one row's live heap over the snapshots of a run, and
 * what it says: a leak, a cache that filled and stopped, a batch freed again,
 * a steady state, or too close to its sampling error to tell. Pure
 * arithmetic, no I/O: memwatch diff of three snapshots or more, the report at
 * the end of a watch, and memwatch top and the HTML page use it. */
#ifndef MEMWATCH_TREND_H
#define MEMWATCH_TREND_H

#include <stdbool.h>
#include <stddef.h>

/* The thresholds (memwatch-reports(7) gives the reasons):
 * TREND_Z: two points differ when they are further apart than TREND_Z times
 *   the standard error of their difference (about 95 % under sampling);
 * TREND_LEAK_SHARE: a leak grew in at least this share of the intervals;
 * TREND_TAIL: the last part of the run a plateau stays flat in (a share of
 *   the run's time, at least one interval);
 * TREND_MIN_LEVEL: a row whose mean is less than this many times its mean
 *   standard error is too small for its shape to be told. */
#define TREND_Z 2.0
#define TREND_LEAK_SHARE 0.75
#define TREND_TAIL (1.0 / 3.0)
#define TREND_MIN_LEVEL 3.0

/* What a row's series says. TREND_UNSURE: too small for its sampling error
 * to separate the shapes, or of no one shape. */
enum trend_verdict {
	TREND_UNSURE = 0,
	TREND_LEAK,          /* grew in nearly every interval, never gave back more than its error */
	TREND_PLATEAU,       /* grew, then stayed within its error for the last part of the run */
	TREND_BURST,         /* grew, and fell again from its peak by more than its error */
	TREND_STEADY,        /* stayed within its error all along */
	TREND_SHRINKING,     /* never rose above its start by more than its error, and fell */
};
#define TREND_NVERDICTS 6

/* One row's trend (trend_of). */
struct trend {
	enum trend_verdict verdict;
	double grown_share;  /* the share (0 to 1) of the n-1 intervals in which its bytes rose */
	double slope;        /* least-squares slope of bytes over time, bytes per minute */
	size_t peak;         /* the index of its largest point (the first of equals) */
};

/* The trend of a row's n points in time order: bytes[i] its estimated live
 * bytes at snapshot i, se[i] the standard error of that estimate (0 for a
 * point known exactly, e.g. a snapshot that does not hold the row), t[i] the
 * snapshot's time in seconds (any origin, rising). n < 3 gives TREND_UNSURE
 * with the share and slope still set (NaN for what n cannot give). */
void trend_of(const double *bytes, const double *se, const double *t, size_t n, struct trend *out);

/* The verdict's word as tables print it: "leak?", "plateau", "burst",
 * "steady", "shrinking", "unsure". Static. */
const char *trend_name(enum trend_verdict v);
/* The verdict a word names (the table's words, and "leak" for "leak?");
 * false when none. */
bool trend_parse(const char *word, enum trend_verdict *v);

/* The seconds until usage reaches limit at slope bytes per minute; -1 when
 * there is no limit (0) or the slope is not positive; 0 when usage is at the
 * limit already. */
double trend_seconds_to_limit(double usage, double limit, double slope);

/* A sparkline of v's n values: the last width of them (all when fewer), one
 * cell each, scaled from their least to their largest, as UTF-8 block
 * characters (three bytes each) or, when !utf8, the ASCII "_.-=+*#@"; NaN
 * values are a space. Written NUL-terminated to buf (size bytes; it ends
 * early rather than split a character). Returns the cells written. */
size_t trend_sparkline(const double *v, size_t n, size_t width, bool utf8, char *buf, size_t size);

#endif
