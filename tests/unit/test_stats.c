/*
 * Unit tests of src/query/stats.c: the normal quantile, the estimates and
 * intervals of a diff's changes, their edge cases, and a calibration on
 * synthetic data from a fixed-seed generator (deterministic: the figures are
 * the same on every run, so the test cannot fail by chance):
 *  - A/A: 1000 comparisons of two sides drawn from one workload (Poisson
 *    counts, some functions bursty: their rate varies from interval to
 *    interval); the share of functions called up or down is printed and must
 *    stay at or below 1 - confidence plus AA_ALLOWANCE;
 *  - a planted +5% on one function is found, with the truth inside its
 *    interval, and nothing else is.
 */
#include "unit.h"
#include "query/query.h"

#include <math.h>
#include <stdlib.h>

/* One side's intervals of the synthetic workload. */
#define N_INT  QUERY_STATS_INTERVALS /* as the engine cuts a range */
#define N_FN   20
#define N_AA   1000
#define WALL_S 10.0
/* Allowed excess of the A/A false-positive rate over 1 - confidence: the
 * normal approximation of counts and the first-order t correction of a
 * variance estimated from N_INT intervals are not exact. */
#define AA_ALLOWANCE 0.005

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double rng_unit(void)
{
	return ((double)(rng_next() >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_normal(void)
{
	return sqrt(-2 * log(rng_unit())) * cos(2 * M_PI * rng_unit());
}

/* A Poisson count of mean m: by inversion below 50, else its normal
 * approximation (rounded, at least 0). */
static double rng_poisson(double m)
{
	if (m < 50) {
		double p = exp(-m), c = p, u = rng_unit();
		int k = 0;

		while (u > c && k < 1000) {
			p *= m / ++k;
			c += p;
		}
		return k;
	}
	double v = floor(m + sqrt(m) * rng_normal() + 0.5);
	return v > 0 ? v : 0;
}

/* The workload: function f's mean samples per interval; every fourth is
 * bursty (its rate times a log-normal factor of mean 1 per interval). */
static double fn_mean(int f)
{
	static const double m[] = {2, 8, 30, 100, 400, 1500, 5000, 20000};

	return m[f % 8];
}

struct side {
	double x[N_FN][N_INT], total[N_INT], wall[N_INT], samples;
};

/* The function the planted change is on (5000 samples an interval, steady). */
#define PLANTED 6

/* Draws one side; planted: function PLANTED at 1.05x its rate. */
static void draw_side(struct side *s, bool planted)
{
	s->samples = 0;
	for (int i = 0; i < N_INT; i++) {
		s->total[i] = 0;
		s->wall[i] = WALL_S;
		for (int f = 0; f < N_FN; f++) {
			double m = fn_mean(f) * (planted && f == PLANTED ? 1.05 : 1);

			if (f % 4 == 3)
				m *= exp(0.6 * rng_normal() - 0.18);
			s->x[f][i] = rng_poisson(m);
			s->total[i] += s->x[f][i];
		}
		s->samples += s->total[i];
	}
}

static double sum_x(const struct side *s, int f)
{
	double t = 0;

	for (int i = 0; i < N_INT; i++)
		t += s->x[f][i];
	return t;
}

static struct query_stats_side view(const struct side *s, size_t n)
{
	return (struct query_stats_side){n, s->total, s->wall, s->samples, 1};
}

static void change_of(const struct side *a, const struct side *b, int f, enum query_norm norm,
		      double z, struct query_change *c)
{
	struct query_stats_side sa = view(a, N_INT), sb = view(b, N_INT);
	struct query_est ea, eb;

	query_stats__estimate(&sa, a->x[f], sum_x(a, f), norm, &ea);
	query_stats__estimate(&sb, b->x[f], sum_x(b, f), norm, &eb);
	query_stats__compare(&ea, &eb, z, c);
}

TEST(normal_quantile)
{
	CHECK(fabs(query_normal_quantile(0.5)) < 1e-9);
	CHECK(fabs(query_normal_quantile(0.975) - 1.959963984540054) < 1e-9);
	CHECK(fabs(query_normal_quantile(0.995) - 2.575829303548901) < 1e-9);
	CHECK(fabs(query_normal_quantile(0.025) + 1.959963984540054) < 1e-9);
	CHECK(fabs(query_confidence_z(0.99) - 2.575829303548901) < 1e-9);
	CHECK(fabs(query_confidence_z(0.9999) - 3.890591886413) < 1e-8);
cleanup:;
}

/* A/A at 0.99 in both normalisations: the false-positive rate is printed. */
static void aa(enum query_norm norm, double confidence, int *unit_failed)
{
	static struct side a, b;
	double z = query_confidence_z(confidence), rate;
	long fp = 0, fp_bursty = 0, tests = 0;

	rng_state = 31;
	for (int k = 0; k < N_AA; k++) {
		draw_side(&a, false);
		draw_side(&b, false);
		for (int f = 0; f < N_FN; f++) {
			struct query_change c;

			change_of(&a, &b, f, norm, z, &c);
			tests++;
			fp += c.verdict != QUERY_NOISE;
			fp_bursty += c.verdict != QUERY_NOISE && f % 4 == 3;
		}
	}
	rate = (double)fp / (double)tests;
	printf("  A/A %s, confidence %g: %ld of %ld functions called significant: "
	       "false-positive rate %.4f (bursty functions: %ld), allowed %.4f\n",
	       norm == QUERY_NORM_RATE ? "rate" : "share", confidence, fp, tests, rate, fp_bursty,
	       1 - confidence + AA_ALLOWANCE);
	CHECKF(rate <= 1 - confidence + AA_ALLOWANCE, "false-positive rate %.4f", rate);
cleanup:;
}

TEST(aa_false_positive_rate)
{
	aa(QUERY_NORM_SHARE, 0.99, unit_failed);
	aa(QUERY_NORM_RATE, 0.99, unit_failed);
	aa(QUERY_NORM_RATE, 0.95, unit_failed);
}

/* Function PLANTED 5% up on side B: found, the truth in its interval; no other
 * function called significant. */
TEST(planted_change)
{
	static struct side a, b;
	double z = query_confidence_z(0.99), truth = 0.05 * fn_mean(PLANTED) / WALL_S;
	struct query_change c;

	rng_state = 7;
	draw_side(&a, false);
	draw_side(&b, true);
	change_of(&a, &b, PLANTED, QUERY_NORM_RATE, z, &c);
	printf("  planted: change %.1f/s [%.1f, %.1f], truth %.1f/s\n", c.change, c.low, c.high,
	       truth);
	CHECK(c.verdict == QUERY_UP);
	CHECK(c.low <= truth && truth <= c.high);
	for (int f = 0; f < N_FN; f++) {
		if (f == PLANTED)
			continue;
		change_of(&a, &b, f, QUERY_NORM_RATE, z, &c);
		CHECKF(c.verdict == QUERY_NOISE, "function %d: %s", f, query_verdict_name(c.verdict));
	}
cleanup:;
}

/* 0 samples against 5: not significant, in either normalisation. */
TEST(five_against_zero)
{
	double wall[1] = {10}, ta[1] = {1000}, tb[1] = {1000}, x0[1] = {0}, x5[1] = {5};
	struct query_stats_side a = {1, ta, wall, 1000, 1}, b = {1, tb, wall, 1000, 1};
	struct query_est ea, eb;
	struct query_change c;

	for (int norm = 0; norm < 2; norm++) {
		query_stats__estimate(&a, x0, 0, norm, &ea);
		query_stats__estimate(&b, x5, 5, norm, &eb);
		CHECK(ea.poisson_only && eb.poisson_only);
		query_stats__compare(&ea, &eb, query_confidence_z(0.99), &c);
		CHECK(c.change > 0);
		CHECK(c.verdict == QUERY_NOISE);
		CHECK(c.low < 0);
	}
cleanup:;
}

/* One interval per side: Poisson alone, and a large change still found. */
TEST(one_interval_per_side)
{
	double wall[1] = {10}, t[1] = {100000}, xa[1] = {10000}, xb[1] = {12000};
	struct query_stats_side a = {1, t, wall, 100000, 1}, b = {1, t, wall, 100000, 1};
	struct query_est ea, eb;
	struct query_change c;

	query_stats__estimate(&a, xa, xa[0], QUERY_NORM_SHARE, &ea);
	query_stats__estimate(&b, xb, xb[0], QUERY_NORM_SHARE, &eb);
	CHECK(ea.intervals == 1 && ea.poisson_only);
	CHECK(fabs(ea.value - 10) < 1e-9 && fabs(eb.value - 12) < 1e-9);
	query_stats__compare(&ea, &eb, query_confidence_z(0.99), &c);
	CHECK(c.verdict == QUERY_UP);
	CHECK(fabs(c.change - 2) < 1e-9);
cleanup:;
}

/* An empty side: nothing significant, the interval spans 0 and the change. */
TEST(empty_side)
{
	double wall[2] = {10, 10}, t[2] = {1000, 1000}, x[2] = {500, 500}, none[2] = {0, 0};
	struct query_stats_side a = {2, none, none, 0, 1}, b = {2, t, wall, 2000, 1};
	struct query_est ea, eb;
	struct query_change c;

	query_stats__estimate(&a, none, 0, QUERY_NORM_RATE, &ea);
	query_stats__estimate(&b, x, 1000, QUERY_NORM_RATE, &eb);
	CHECK(ea.empty && !eb.empty);
	CHECK(fabs(eb.value - 50) < 1e-9);
	query_stats__compare(&ea, &eb, query_confidence_z(0.99), &c);
	CHECK(c.verdict == QUERY_NOISE);
	CHECK(c.low == 0 && fabs(c.high - 50) < 1e-9);
cleanup:;
}

/* A bursty function: many samples, but its between-interval variance (not
 * Poisson's) sets the interval, so a shift within its burstiness is noise. */
TEST(bursty_is_not_significant)
{
	double wall[4] = {10, 10, 10, 10}, t[4] = {1e5, 1e5, 1e5, 1e5};
	double xa[4] = {2000, 30000, 1000, 25000}, xb[4] = {28000, 3000, 26000, 2000};
	struct query_stats_side a = {4, t, wall, 4e5, 1}, b = {4, t, wall, 4e5, 1};
	struct query_est ea, eb;
	struct query_change c;

	query_stats__estimate(&a, xa, 58000, QUERY_NORM_SHARE, &ea);
	query_stats__estimate(&b, xb, 59000, QUERY_NORM_SHARE, &eb);
	query_stats__compare(&ea, &eb, query_confidence_z(0.99), &c);
	CHECK(c.verdict == QUERY_NOISE);
	/* Poisson alone would have called it */
	CHECK(fabs(c.change) > 2.58 * sqrt(0.145 * 0.855 / 4e5) * 100 * M_SQRT2);
cleanup:;
}
