/* gaps.c: Poisson sampling by bytes: the random gap (in bytes) to each
 * thread's next sample point, and the weight a sample of a given size
 * stands for. Reached only on the slow paths of heap.c. */
#include "config.h"

#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

double mw_inv_rate = 1.0 / MW_DEFAULT_RATE;

/* Seed this thread's generator from its tid, its TLS address and the time, so
 * that threads (and a forked child) draw different gaps. */
void mw_seed(struct mw_tls *t)
{
	struct timespec ts;
	uint64_t s;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s = (uint64_t)syscall(SYS_gettid) ^ ((uint64_t)(uintptr_t)t << 16) ^
	    ((uint64_t)ts.tv_nsec << 1) ^ (uint64_t)ts.tv_sec;
	s = mw_splitmix64(s);
	t->rng = s ? s : 0x2545F4914F6CDD1Dull;
}

void mw_reseed(void)
{
	mw_tls.rng = 0;
	mw_tls.epoch = 0;
	mw_tls.left = 0;
}

static uint64_t next_random(struct mw_tls *t)
{
	uint64_t x = t->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* The two functions of libm the sampler needs, here so that the agent does not
 * bring libm (some 400 KiB of resident pages) into programs that lack it.
 * Each sample needs one of each, so they are the short, table-driven kind:
 * a few multiplications where a series of a dozen terms took as long as the
 * rest of the sample's bookkeeping. The tables are filled from the series at
 * capture start (mw_gaps_init). Accurate to about 1e-13, far below the
 * sampling noise; tests/unit/test_gaps checks them against libm. */

/* 2^k as a double, for |k| < 1000. */
static double pow2i(int k)
{
	union { double d; uint64_t u; } v;
	v.u = (uint64_t)(k + 1023) << 52;
	return v.d;
}

/* 1 / (2k + 1) and 1 / k!, so that the series below need no division. */
static const double inv_odd[] = {
	1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13, 1.0 / 15, 1.0 / 17, 1.0 / 19,
};
static const double inv_fact[] = {
	1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
	1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0,
};

#define LN2 0.6931471805599453

/* log m for m in [sqrt(1/2), sqrt(2)]: 2 atanh((m - 1) / (m + 1)) by its series
 * (|s| < 0.172: 11 terms reach 1e-16). For the tables only. */
static double log_series(double m)
{
	double s = (m - 1.0) / (m + 1.0), s2 = s * s, sum = 1.0 / 21;
	int k;
	for (k = 19; k >= 1; k -= 2)
		sum = sum * s2 + inv_odd[k / 2];
	return 2.0 * s * sum;
}

/* exp(r) - 1 for |r| <= ln2: 13 terms reach 1e-17. For the tables only. */
static double expm1_series(double r)
{
	double poly = inv_fact[13];
	int i;
	for (i = 12; i >= 1; i--)
		poly = poly * r + inv_fact[i];
	return poly * r;
}

/* log: m in [1, 2) is split at its top LOG_BITS bits into c = 1 + i/2^LOG_BITS
 * and m/c in [1, 1 + 2^-LOG_BITS), whose log a short series gives; the table
 * holds 1/c (rounded) and the log of that rounded value's inverse, so the two
 * agree exactly. exp: x = -(64 a + j) ln2/64 + r, |r| <= ln2/128, and
 * exp x = 2^-a 2^(-j/64) exp r. */
#define LOG_BITS 7
static double log_inv_c[1 << LOG_BITS], log_c[1 << LOG_BITS];
static double exp2_neg[64];                    /* 2^(-j/64) */
static bool tables_ready;

void mw_gaps_init(void)
{
	int i;
	if (__atomic_load_n(&tables_ready, __ATOMIC_ACQUIRE))
		return;
	for (i = 0; i < 1 << LOG_BITS; i++) {
		double c = 1.0 + (double)i / (1 << LOG_BITS);
		log_inv_c[i] = 1.0 / c;
		/* log(1 / inv_c), inv_c in (1/2, 1]: the series wants [sqrt(1/2), sqrt(2)] */
		log_c[i] = log_inv_c[i] < 0.7071067811865476 ? LN2 - log_series(2.0 * log_inv_c[i]) :
							       -log_series(log_inv_c[i]);
	}
	for (i = 0; i < 64; i++)
		exp2_neg[i] = 1.0 + expm1_series(-(double)i * (LN2 / 64));
	__atomic_store_n(&tables_ready, true, __ATOMIC_RELEASE);
}

/* Natural logarithm of x > 0 (finite, normal). */
double mw_log(double x)
{
	union { double d; uint64_t u; } v = { .d = x };
	int e = (int)((v.u >> 52) & 0x7ff) - 1023;
	unsigned i = (unsigned)(v.u >> (52 - LOG_BITS)) & ((1u << LOG_BITS) - 1);
	double r, r2, p;
	v.u = (v.u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;   /* m in [1, 2) */
	r = v.d * log_inv_c[i] - 1.0;           /* in [0, 2^-7): 6 terms reach 3e-16 */
	r2 = r * r;                             /* in pairs, for a short dependency chain */
	p = (r - 0.5 * r2) + r2 * r * ((1.0 / 3 - 0.25 * r) + r2 * (1.0 / 5 - r * (1.0 / 6)));
	return e * LN2 + log_c[i] + p;
}

/* exp(x) - 1 for x <= 0, precise for small |x|. */
double mw_expm1(double x)
{
	double r, r2, p, scale;
	int n;
	if (x > -1e-5)
		return x + x * x / 2 + x * x * x / 6;
	if (x < -700)
		return -1.0;
	n = (int)(-x * (64 / LN2) + 0.5);        /* x = -n ln2/64 + r */
	r = x + n * (LN2 / 64);
	r2 = r * r;                               /* exp(r) - 1, |r| <= 0.0055: */
	p = (r + r2 * (0.5 + r * (1.0 / 6))) + r2 * r2 * (1.0 / 24 + r * (1.0 / 120));   /* to 4e-17 */
	scale = pow2i(-(n >> 6)) * exp2_neg[n & 63];
	return scale * p + (scale - 1.0);
}

/* Bytes to the next sample point: exponential with mean R (0 when every
 * allocation is to be recorded). */
uint64_t mw_draw_gap(struct mw_tls *t)
{
	double u, g;
	if (mw_rate <= 1)
		return 0;
	u = (double)((next_random(t) >> 11) + 1) * 0x1.0p-53;   /* (0, 1] */
	g = -mw_log(u) * (double)mw_rate;
	if (g <= 0)
		return 0;
	return g >= 1.8e19 ? UINT64_MAX : (uint64_t)g;
}

/* The Horvitz-Thompson weights of a sampled block of size bytes: it was picked
 * with probability p = 1 - exp(-(size+1)/R) (each allocation counts size+1, so
 * that zero-byte ones can be picked too), so it stands for size/p bytes and 1/p
 * blocks. At R = 1 every allocation is recorded: exact weights. */
void mw_weights(uint64_t size, uint64_t *bytes, uint64_t *blocks_fx)
{
	double p;
	if (mw_rate <= 1) {
		*bytes = size;
		*blocks_fx = (uint64_t)FX;
		return;
	}
	p = 1.0 / -mw_expm1(-((double)size + 1.0) * mw_inv_rate);   /* 1 / p */
	*bytes = (uint64_t)((double)size * p + 0.5);
	*blocks_fx = (uint64_t)(FX * p + 0.5);
}


