/*
 * The statistics of a diff: is a function's change between two selections
 * larger than the noise of sampling and of the workload itself?
 *
 * Each side is cut into intervals (query_buckets: whole stored windows). Per
 * function and side: x_i its value in interval i, T_i the selection's total,
 * d_i the interval's wall seconds, N the selection's samples. The estimate is
 * a share R = Σx/ΣT or a rate r = Σx/Σd; its variance the larger of
 *   - between intervals: n/(n-1) Σ(x_i - R T_i)² / (ΣT)² (rate: d_i for T_i),
 *     what the function's own burstiness gives (a ratio estimator's variance
 *     over the intervals as a sample of the workload), and
 *   - Poisson: R(1-R)/N (rate: samples · value-per-sample² / (Σd)²), what
 *     sampling alone gives, and the floor with fewer than 2 intervals.
 * The change B - A has the interval ± (z·sqrt(VarA + VarB) + half a sample
 * per side): the half samples are a continuity correction (counts are
 * integers), so that 5 samples against 0 is not called a change. When a
 * between-interval variance is the larger, it is itself estimated from few
 * intervals, and z becomes Student's t at the Welch degrees of freedom.
 *
 * The per-function values per interval are summed in one pass over the
 * distinct stacks the diff names anyway (fn_stats__add, from tree.c's walk):
 * a stack's vector of values per interval is added to its leaf function's
 * (self) and to each distinct function on it (total).
 */
#include "query_impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Φ(x) = P(Z <= x) of the standard normal. */
static double normal_cdf(double x)
{
	return 0.5 * erfc(-x / M_SQRT2);
}

double query_normal_quantile(double p)
{
	double lo = -40, hi = 40;

	if (!(p > 0))
		return -INFINITY;
	if (!(p < 1))
		return INFINITY;
	/* Φ is increasing: halve [lo, hi] until it is below 1e-12 wide (~80 steps) */
	while (hi - lo > 1e-12) {
		double mid = 0.5 * (lo + hi);

		if (normal_cdf(mid) < p)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

double query_confidence_z(double confidence)
{
	if (!(confidence > 0) || !(confidence < 1))
		confidence = QUERY_DEFAULT_CONFIDENCE;
	return query_normal_quantile(1 - (1 - confidence) / 2);
}

const char *query_verdict_name(enum query_verdict v)
{
	return v == QUERY_UP ? "up" : v == QUERY_DOWN ? "down" : "noise";
}

int query_norm_parse(const char *s, enum query_norm *out)
{
	if (!strcmp(s, "share"))
		*out = QUERY_NORM_SHARE;
	else if (!strcmp(s, "rate"))
		*out = QUERY_NORM_RATE;
	else
		return -EINVAL;
	return 0;
}

void query_stats__estimate(const struct query_stats_side *s, const double *x, double samples,
			   enum query_norm norm, struct query_est *out)
{
	double sx = 0, st = 0, sd = 0, dev = 0, between, poisson, ratio, per_sample;
	bool rate = norm == QUERY_NORM_RATE;
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < s->n; i++) {
		if (!(s->wall_s[i] > 0))
			continue;
		n++;
		sx += x[i];
		st += s->total[i];
		sd += s->wall_s[i];
	}
	out->intervals = n;
	if (!n || !(st > 0) || !(sd > 0) || !(s->samples > 0)) {
		out->empty = true;
		return;
	}
	ratio = sx / (rate ? sd : st);
	for (size_t i = 0; i < s->n; i++) {
		double r;

		if (!(s->wall_s[i] > 0))
			continue;
		r = x[i] - ratio * (rate ? s->wall_s[i] : s->total[i]);
		dev += r * r;
	}
	between = n > 1 ? dev * (double)n / (double)(n - 1) / ((rate ? sd : st) * (rate ? sd : st))
			: 0;
	per_sample = st / s->samples; /* the selection's value per sample */
	if (rate) {
		double u = samples > 0 ? sx / samples : per_sample;

		poisson = samples * u * u / (sd * sd);
		out->value = ratio * s->scale;
		out->var = (between > poisson ? between : poisson) * s->scale * s->scale;
		out->half_sample = 0.5 * per_sample / sd * s->scale;
	} else {
		poisson = ratio * (1 - ratio) / s->samples;
		poisson = poisson > 0 ? poisson : 0;
		out->value = 100 * ratio;
		out->var = (between > poisson ? between : poisson) * 1e4;
		out->half_sample = 100 * 0.5 / s->samples;
	}
	out->poisson_only = n < 2;
	out->df = n > 1 && between > poisson ? (double)(n - 1) : INFINITY;
}

/* The t quantile of z's tail at df degrees of freedom (Cornish-Fisher
 * expansion: within 0.5% of the exact one from df 5 on). */
static double t_of_z(double z, double df)
{
	double z3 = z * z * z, z5 = z3 * z * z;

	if (!isfinite(df))
		return z;
	return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df);
}

void query_stats__compare(const struct query_est *a, const struct query_est *b, double z,
			  struct query_change *out)
{
	double w, df;

	out->left = a->empty ? 0 : a->value;
	out->right = b->empty ? 0 : b->value;
	out->change = out->right - out->left;
	out->verdict = QUERY_NOISE;
	if (a->empty || b->empty) {
		out->low = out->change < 0 ? out->change : 0;
		out->high = out->change > 0 ? out->change : 0;
		return;
	}
	/* Welch-Satterthwaite: the sides' estimated variances' degrees of freedom */
	df = (a->var + b->var) * (a->var + b->var) /
	     ((isfinite(a->df) ? a->var * a->var / a->df : 0) +
	      (isfinite(b->df) ? b->var * b->var / b->df : 0));
	w = t_of_z(z, df > 0 ? df : INFINITY) * sqrt(a->var + b->var) + a->half_sample +
	    b->half_sample;
	out->low = out->change - w;
	out->high = out->change + w;
	if (out->low > 0)
		out->verdict = QUERY_UP;
	else if (out->high < 0)
		out->verdict = QUERY_DOWN;
}

/* ---- one side's functions per interval ---- */

int fn_stats__init(struct fn_stats *f, size_t k)
{
	memset(f, 0, sizeof(*f));
	f->k = k ? k : 1;
	return 0;
}

void fn_stats__fini(struct fn_stats *f)
{
	free(f->self);
	free(f->total);
	free(f->self_n);
	free(f->total_n);
	free(f->stamp);
	memset(f, 0, sizeof(*f));
}

/* Room for row ids below need. */
static int fn_stats_grow(struct fn_stats *f, size_t need)
{
	size_t c1 = f->cap, c2 = f->cap, c3 = f->cap, c4 = f->cap, c5 = f->cap;

	if (need > SIZE_MAX / 8 / f->k)
		return -ENOMEM;
	/* the vectors grow by rows of k: grow the counts first, then size them */
	if (base_grow_zeroed((void **)&f->self_n, &c1, need, sizeof(*f->self_n)) ||
	    base_grow_zeroed((void **)&f->total_n, &c2, need, sizeof(*f->total_n)) ||
	    base_grow_zeroed((void **)&f->stamp, &c3, need, sizeof(*f->stamp)))
		return -ENOMEM;
	c4 *= f->k;
	c5 *= f->k;
	if (base_grow_zeroed((void **)&f->self, &c4, c1 * f->k, sizeof(*f->self)) ||
	    base_grow_zeroed((void **)&f->total, &c5, c1 * f->k, sizeof(*f->total)))
		return -ENOMEM;
	f->cap = c1;
	return 0;
}

/* dst += src over k entries, 8 at a time in loops of known length, which the
 * compiler makes vector adds: this runs once per frame of every stack of a diff
 * (~4 million on the 1 h bench, k ~16). */
static inline void vec_add(float *restrict dst, const float *restrict src, size_t k)
{
	size_t j = 0;

	for (; j + 8 <= k; j += 8)
		for (size_t u = 0; u < 8; u++)
			dst[j + u] += src[j + u];
	for (; j < k; j++)
		dst[j] += src[j];
}

int fn_stats__add(struct fn_stats *f, const size_t *rows, size_t n, const float *vec,
		  double samples)
{
	size_t k = f->k;

	f->n_stacks++;
	for (size_t i = 0; i < n; i++) {
		size_t r = rows[i];

		if (r >= f->cap && fn_stats_grow(f, r + 1))
			return -ENOMEM;
		if (i + 1 == n) { /* the leaf: self */
			vec_add(f->self + r * k, vec, k);
			f->self_n[r] += samples;
		}
		if (f->stamp[r] == f->n_stacks) /* recursion: counted once a stack */
			continue;
		f->stamp[r] = f->n_stacks;
		vec_add(f->total + r * k, vec, k);
		f->total_n[r] += samples;
	}
	return 0;
}

/* The function of row id r (0: none) on side f: its estimate. */
void fn_stats__estimate(const struct fn_stats *f, const struct query_stats_side *s, size_t r,
			bool total, enum query_norm norm, double *x, struct query_est *out)
{
	double n = 0;

	for (size_t j = 0; j < s->n; j++)
		x[j] = r && r < f->cap ? (double)(total ? f->total : f->self)[r * f->k + j] : 0;
	if (r && r < f->cap)
		n = (total ? f->total_n : f->self_n)[r];
	query_stats__estimate(s, x, n, norm, out);
}

void fn_stats__side(const struct query_buckets *b, const char *unit, enum query_norm norm,
		    struct query_stats_side *s)
{
	s->n = b->k;
	s->total = b->total;
	s->wall_s = b->wall_s;
	s->samples = b->samples;
	s->scale = norm == QUERY_NORM_RATE && !strcmp(unit, "nanoseconds") ? 1e-9 : 1;
}

void fn_stats__unit(const char *unit, enum query_norm norm, char *out, size_t len)
{
	if (norm == QUERY_NORM_SHARE)
		snprintf(out, len, "pp");
	else
		snprintf(out, len, "%s/s", !strcmp(unit, "nanoseconds") ? "seconds" : unit);
}
