/*
 * Regressions: the functions whose time changed beyond noise between a window
 * and a baseline (the previous window of the same length, the same window a
 * day or a week earlier, or any range), largest change first, each with its
 * series over both.
 *
 * Each side is read as one side of a diff (query_stacks_buckets: its range cut
 * into intervals of whole stored windows; query_fn_side: its functions by top
 * table row and their values per interval) and every function with data on
 * either side is compared with stats.c's estimates. Many functions are tested
 * at once, so each is tested at 1 - (1 - confidence) / tested (Bonferroni):
 * the chance that the list holds any function that did not change stays at
 * most 1 - confidence, whatever the number of functions. The series are the
 * same intervals summed per step: no second scan.
 */
#include "query_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REGRESS_DAY_NS (86400ll * 1000000000ll)

int query_baseline_parse(const char *s, enum query_baseline *out)
{
	if (!strcmp(s, "previous"))
		*out = QUERY_BASELINE_PREVIOUS;
	else if (!strcmp(s, "1d"))
		*out = QUERY_BASELINE_1D;
	else if (!strcmp(s, "7d"))
		*out = QUERY_BASELINE_7D;
	else
		return -EINVAL;
	return 0;
}

/* One side: its merge cut into intervals, its functions by row id. */
struct side {
	struct query_stacks qs;
	struct query_buckets bk;
	struct query_top top; /* every function of the side; row ids into f */
	struct fn_stats f;
	struct query_stats_side st;
	bool loaded;
};

static void side_fini(struct side *sd)
{
	query_stacks__fini(&sd->qs);
	query_buckets__fini(&sd->bk);
	query_top__fini(&sd->top);
	fn_stats__fini(&sd->f);
}

/* q's selection over [from, until) into sd. */
static int side_load(struct store *s, const struct query_request *q, int64_t from, int64_t until,
		     struct side *sd, char *err, size_t errlen)
{
	struct query_request r = *q;
	int e;

	r.from_ns = from;
	r.until_ns = until;
	e = query_stacks_buckets(s, &r, r.interval_ns, &sd->qs, &sd->bk, err, errlen);
	if (e)
		return e;
	sd->loaded = true;
	fn_stats__init(&sd->f, sd->bk.k);
	e = query_fn_side(s, &sd->qs, &sd->bk, q->value_index, &sd->top, &sd->f);
	return e ? query_fail(err, errlen, e, "naming the functions failed: %s", strerror(-e)) : 0;
}

/* The baseline's range, from the window's and o. 0 or -EINVAL. */
static int baseline_range(const struct query_request *q, const struct query_regressions_opts *o,
			  int64_t *from, int64_t *until, char *err, size_t errlen)
{
	int64_t shift = o->baseline == QUERY_BASELINE_1D   ? REGRESS_DAY_NS
			: o->baseline == QUERY_BASELINE_7D ? 7 * REGRESS_DAY_NS
							   : q->until_ns - q->from_ns;

	if (o->baseline == QUERY_BASELINE_RANGE) {
		*from = o->base_from_ns;
		*until = o->base_until_ns;
		if (*from > *until)
			return query_fail(err, errlen, -EINVAL,
					  "baselineFrom (%" PRId64 ") is after baselineUntil (%" PRId64
					  ")",
					  *from, *until);
		return 0;
	}
	if (q->from_ns > q->until_ns || __builtin_sub_overflow(q->from_ns, shift, from) ||
	    __builtin_sub_overflow(q->until_ns, shift, until))
		return query_fail(err, errlen, -EINVAL,
				  "the baseline of the window %" PRId64 "..%" PRId64
				  " is out of the times hearth can name",
				  q->from_ns, q->until_ns);
	if (o->baseline == QUERY_BASELINE_PREVIOUS)
		*until = q->from_ns;
	return 0;
}

/* A function of either side: its row id on each (0: none). */
struct cand {
	const char *name; /* borrowed from a side's top */
	size_t id[2];
	int64_t v[2]; /* its self (or total) on each side */
};

static uint64_t name_hash(const char *name)
{
	return base_hash_bytes(BASE_HASH_SEED, name, strlen(name));
}

static bool cand_is(const void *ctx, size_t idx, const void *key)
{
	return !strcmp(((const struct cand *)ctx)[idx].name, key);
}

/* Every function of both sides, joined by name, into *out (n of them). */
static int candidates(const struct side sd[2], bool total, struct cand **out, size_t *n)
{
	struct base_hmap idx = {0};
	struct cand *c = malloc((sd[0].top.n + sd[1].top.n + 1) * sizeof(*c));
	int e = c ? 0 : -ENOMEM;

	*n = 0;
	for (int k = 0; !e && k < 2; k++)
		for (size_t i = 0; !e && i < sd[k].top.n; i++) {
			const struct top_row *r = &sd[k].top.rows[i];
			uint64_t h = name_hash(r->name);
			size_t at = k ? base_hmap__find(&idx, h, cand_is, c, r->name) : SIZE_MAX;

			if (at == SIZE_MAX) {
				c[*n] = (struct cand){.name = r->name};
				at = (*n)++;
				e = base_hmap__insert(&idx, h, at);
			}
			c[at].id[k] = r->id;
			c[at].v[k] = total ? r->total : r->self;
		}
	base_hmap__fini(&idx);
	if (e)
		free(c);
	*out = e ? NULL : c;
	return e;
}

/* Largest |change| first, then by name. */
static int by_change(const void *a, const void *b)
{
	const struct query_regression *x = a, *y = b;

	if (fabs(x->c.change) != fabs(y->c.change))
		return fabs(x->c.change) > fabs(y->c.change) ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The significant rows of the candidates, largest first, at most limit. */
static int significant(struct query_regressions *out, const struct side sd[2],
		       const struct cand *c, size_t n, size_t limit)
{
	enum query_norm norm = out->share ? QUERY_NORM_SHARE : QUERY_NORM_RATE;
	size_t k = sd[0].st.n > sd[1].st.n ? sd[0].st.n : sd[1].st.n;
	double *x = malloc((k + 1) * sizeof(*x)), z;

	if (!x || !(out->rows = calloc(n + 1, sizeof(*out->rows)))) {
		free(x);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		out->tested += c[i].v[0] || c[i].v[1];
	/* Bonferroni: each of the tested at 1 - (1 - confidence) / tested */
	z = query_confidence_z(1 - (1 - out->confidence) / (double)(out->tested ? out->tested : 1));
	for (size_t i = 0; out->intervals[0] && out->intervals[1] && i < n; i++) {
		struct query_est e[2];
		struct query_regression *r = &out->rows[out->n];

		if (!c[i].v[0] && !c[i].v[1])
			continue;
		for (int s = 0; s < 2; s++)
			fn_stats__estimate(&sd[s].f, &sd[s].st, c[i].id[s], out->total, norm, x,
					   &e[s]);
		query_stats__compare(&e[0], &e[1], z, &r->c);
		if (r->c.verdict == QUERY_NOISE)
			continue;
		r->name = c[i].name;
		r->relative = r->c.left != 0 ? r->c.change / r->c.left : NAN;
		r->id[0] = c[i].id[0];
		r->id[1] = c[i].id[1];
		out->n++;
	}
	free(x);
	if (out->n)
		qsort(out->rows, out->n, sizeof(*out->rows), by_change);
	out->n = out->n < limit ? out->n : limit;
	return 0;
}

/* The series' points: both sides' intervals at step ss, their starts merged. */
static int series_times(struct query_regressions *out, const struct side sd[2], int64_t ss)
{
	size_t cap = 0, n[2] = {0, 0};
	int64_t first[2] = {0, 0};

	for (int s = 0; s < 2; s++) {
		const struct query_buckets *b = &sd[s].bk;
		int64_t last;

		if (!b->k)
			continue;
		last = b->start_ns + (int64_t)(b->k - 1) * b->width_ns;
		first[s] = (b->start_ns / ss - (b->start_ns % ss < 0)) * ss;
		n[s] = (size_t)((last - first[s]) / ss) + 1;
		cap += n[s];
	}
	if (!(out->times = malloc((cap + 1) * sizeof(*out->times))))
		return -ENOMEM;
	/* two ascending runs, merged without repeats */
	for (size_t i = 0, j = 0; i < n[0] || j < n[1];) {
		int64_t a = i < n[0] ? first[0] + (int64_t)i * ss : INT64_MAX;
		int64_t b = j < n[1] ? first[1] + (int64_t)j * ss : INT64_MAX;
		int64_t t = a < b ? a : b;

		out->times[out->n_times++] = t;
		i += a == t;
		j += b == t;
	}
	return 0;
}

/* Index of the point that time t (an interval's start) counts in. */
static size_t point_of(const struct query_regressions *out, int64_t t, int64_t ss)
{
	int64_t p = (t / ss - (t % ss < 0)) * ss;
	size_t lo = 0, hi = out->n_times;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (out->times[mid] < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < out->n_times ? lo : out->n_times - 1;
}

/* Each row's series: its value per point, normalised as its estimate. */
static int series(struct query_regressions *out, const struct side sd[2], int64_t ss)
{
	size_t m = out->n_times;
	double *acc = calloc(3 * (m + 1), sizeof(*acc)); /* value, total, seconds per point */
	int e = acc ? 0 : -ENOMEM;

	for (size_t i = 0; !e && i < out->n; i++) {
		struct query_regression *r = &out->rows[i];

		memset(acc, 0, 3 * (m + 1) * sizeof(*acc));
		for (int s = 0; s < 2; s++) {
			const struct fn_stats *f = &sd[s].f;
			const struct query_buckets *b = &sd[s].bk;
			size_t id = r->id[s];

			for (size_t j = 0; j < b->k; j++) {
				size_t p = point_of(out, b->start_ns + (int64_t)j * b->width_ns, ss);

				if (!(b->wall_s[j] > 0))
					continue;
				if (id && id < f->cap)
					acc[3 * p] += (out->total ? f->total : f->self)[id * f->k + j];
				acc[3 * p + 1] += b->total[j];
				acc[3 * p + 2] += b->wall_s[j];
			}
		}
		if (!(r->values = malloc((m + 1) * sizeof(*r->values)))) {
			e = -ENOMEM;
			break;
		}
		for (size_t p = 0; p < m; p++) {
			double v = acc[3 * p], t = acc[3 * p + 1], w = acc[3 * p + 2];

			r->values[p] = out->share ? (t > 0 ? 100 * v / t : 0)
						  : (w > 0 ? v * sd[1].st.scale / w : 0);
		}
	}
	free(acc);
	return e;
}

/* The rows' names into the answer's own pool (they pointed into the sides'). */
static int own_names(struct query_regressions *out)
{
	size_t len = 1;
	char *o;

	for (size_t i = 0; i < out->n; i++)
		len += strlen(out->rows[i].name) + 1;
	if (!(out->pool = o = malloc(len)))
		return -ENOMEM;
	for (size_t i = 0; i < out->n; i++) {
		size_t k = strlen(out->rows[i].name) + 1;

		memcpy(o, out->rows[i].name, k);
		out->rows[i].name = o;
		o += k;
	}
	return 0;
}

/* One or two plain sentences: what the list means, or why it is empty. */
static void regress_note(struct query_regressions *out)
{
	double each = 1 - (1 - out->confidence) / (double)(out->tested ? out->tested : 1);
	int n;

	if (!out->intervals[0]) {
		snprintf(out->note, sizeof(out->note),
			 "The baseline holds no data for this selector: there is nothing to "
			 "compare the window with.");
		return;
	}
	if (!out->intervals[1]) {
		snprintf(out->note, sizeof(out->note),
			 "The window holds no data for this selector: there is nothing to "
			 "compare.");
		return;
	}
	n = snprintf(out->note, sizeof(out->note),
		     "Each of the %zu functions tested is held to %.6g%% confidence (Bonferroni), "
		     "so the chance that this list holds any function that did not change is at "
		     "most %g%%; a function not listed may still have changed by less than its "
		     "noise.",
		     out->tested, 100 * each, 100 * (1 - out->confidence));
	if (n > 0 && (size_t)n < sizeof(out->note) &&
	    (out->intervals[0] < 2 || out->intervals[1] < 2))
		snprintf(out->note + n, sizeof(out->note) - (size_t)n,
			 " A side with fewer than 2 intervals counts sampling noise only.");
}

/* The comparison of the two loaded sides into out. */
static int compare(struct query_regressions *out, struct side sd[2],
		   const struct query_regressions_opts *o, int64_t step_ns)
{
	enum query_norm norm = out->share ? QUERY_NORM_SHARE : QUERY_NORM_RATE;
	const char *unit = sd[sd[1].qs.n ? 1 : 0].top.unit;
	size_t limit = !o->limit ? QUERY_REGRESSIONS_DEFAULT_LIMIT
		       : o->limit > QUERY_REGRESSIONS_MAX_LIMIT ? QUERY_REGRESSIONS_MAX_LIMIT
								: o->limit;
	int64_t ss = sd[0].bk.width_ns > sd[1].bk.width_ns ? sd[0].bk.width_ns : sd[1].bk.width_ns;
	struct cand *c = NULL;
	size_t n = 0;
	int e;

	fn_stats__unit(unit, norm, out->unit, sizeof(out->unit));
	for (int s = 0; s < 2; s++) {
		struct query_est est;

		fn_stats__side(&sd[s].bk, unit, norm, &sd[s].st);
		query_stats__estimate(&sd[s].st, sd[s].st.total, sd[s].st.samples, QUERY_NORM_RATE,
				      &est);
		out->intervals[s] = est.intervals;
	}
	/* the series' step: a whole number of the longer side's intervals */
	if (ss > 0 && step_ns > ss)
		ss = (step_ns / ss + (step_ns % ss != 0)) * ss;
	e = candidates(sd, out->total, &c, &n) ?: significant(out, sd, c, n, limit);
	e = e ?: ss > 0 ? series_times(out, sd, ss) ?: series(out, sd, ss) : 0;
	e = e ?: own_names(out);
	free(c);
	regress_note(out);
	return e;
}

int query_regressions(struct store *s, const struct query_request *q,
		      const struct query_regressions_opts *o, struct query_regressions *out,
		      char *err, size_t errlen)
{
	struct side sd[2];
	int64_t bf = 0, bu = 0;
	int e;

	memset(out, 0, sizeof(*out));
	memset(sd, 0, sizeof(sd));
	out->confidence = q->confidence > 0 && q->confidence < 1 ? q->confidence
								 : QUERY_DEFAULT_CONFIDENCE;
	out->total = o->total;
	out->share = o->share;
	out->from_ns = q->from_ns;
	out->until_ns = q->until_ns;
	e = baseline_range(q, o, &bf, &bu, err, errlen);
	out->base_from_ns = bf;
	out->base_until_ns = bu;
	e = e ?: side_load(s, q, bf, bu, &sd[0], err, errlen) ?:
	    side_load(s, q, q->from_ns, q->until_ns, &sd[1], err, errlen);
	if (!e && sd[0].qs.n && sd[1].qs.n && !query_same_type(sd[0].qs.type, sd[1].qs.type))
		e = query_fail(err, errlen, -EINVAL,
			       "the baseline and the window are of different profile types (%s and "
			       "%s)",
			       sd[0].qs.type ? sd[0].qs.type : "CPU",
			       sd[1].qs.type ? sd[1].qs.type : "CPU");
	if (!e && (e = compare(out, sd, o, q->step_ns)))
		query_fail(err, errlen, e, "comparing the baseline and the window failed: %s",
			   strerror(-e));
	side_fini(&sd[0]);
	side_fini(&sd[1]);
	return e;
}

void query_regressions__fini(struct query_regressions *r)
{
	for (size_t i = 0; r->rows && i < r->n; i++)
		free(r->rows[i].values);
	free(r->rows);
	free(r->pool);
	free(r->times);
	memset(r, 0, sizeof(*r));
}

/* A double as JSON (non-finite, which JSON has not: 0), as the diff's. */
static void put_num(FILE *out, double v)
{
	fprintf(out, "%.6g", isfinite(v) ? v : 0.0);
}

static void put_span(FILE *out, const char *name, int64_t from, int64_t until, size_t n)
{
	fprintf(out, ",\"%s\":{\"from\":%" PRId64 ",\"until\":%" PRId64 ",\"intervals\":%zu}", name,
		from, until, n);
}

static void put_row(FILE *out, const struct query_regressions *a, const struct query_regression *r)
{
	fputs("{\"name\":", out);
	base_json_string(out, r->name);
	fputs(",\"before\":", out);
	put_num(out, r->c.left);
	fputs(",\"after\":", out);
	put_num(out, r->c.right);
	fputs(",\"change\":", out);
	put_num(out, r->c.change);
	fputs(",\"low\":", out);
	put_num(out, r->c.low);
	fputs(",\"high\":", out);
	put_num(out, r->c.high);
	fprintf(out, ",\"verdict\":\"%s\",\"relative\":", query_verdict_name(r->c.verdict));
	if (isfinite(r->relative))
		put_num(out, r->relative);
	else
		fputs("null", out);
	fputs(",\"series\":{\"times\":[", out);
	for (size_t p = 0; p < a->n_times; p++)
		fprintf(out, p ? ",%" PRId64 : "%" PRId64, a->times[p]);
	fputs("],\"values\":[", out);
	for (size_t p = 0; r->values && p < a->n_times; p++) {
		if (p)
			fputc(',', out);
		put_num(out, r->values[p]);
	}
	fputs("]}}", out);
}

int query_regressions__write_json(const struct query_regressions *r, FILE *out)
{
	fputs("{\"unit\":", out);
	base_json_string(out, r->unit);
	fprintf(out, ",\"normalize\":\"%s\",\"kind\":\"%s\",\"confidence\":",
		r->share ? "share" : "rate", r->total ? "total" : "self");
	put_num(out, r->confidence);
	fprintf(out, ",\"tested\":%zu", r->tested);
	put_span(out, "window", r->from_ns, r->until_ns, r->intervals[1]);
	put_span(out, "baseline", r->base_from_ns, r->base_until_ns, r->intervals[0]);
	fputs(",\"note\":", out);
	base_json_string(out, r->note);
	fputs(",\"functions\":[", out);
	for (size_t i = 0; i < r->n; i++) {
		fputs(i ? ",\n" : "", out);
		put_row(out, r, &r->rows[i]);
	}
	fputs("]}\n", out);
	return ferror(out) ? -ENOMEM : 0;
}

int query_regressions_json(struct store *s, const struct query_request *q,
			   const struct query_regressions_opts *o, FILE *out, char *err,
			   size_t errlen)
{
	struct query_regressions r;
	int e = query_regressions(s, q, o, &r, err, errlen);

	e = e ?: query_regressions__write_json(&r, out);
	query_regressions__fini(&r);
	return e;
}
