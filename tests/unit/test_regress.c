/*
 * Tests of src/query/regress.c on planted data from a fixed-seed generator (the
 * same counts on every run: the test cannot fail by chance): 32 profiles of
 * 10 s, the first 16 the baseline, the last 16 the window; every function's
 * samples per profile are Poisson counts around a fixed mean, except slow_path,
 * whose mean goes from 400 to 600 in the window. The regressions list holds
 * slow_path alone, up, with the true change inside its interval; its series
 * covers both sides; an empty baseline is an answer with no rows and a note; a
 * baseline range the wrong way round is refused.
 */
#include "unit.h"

#include "ingest/ingest.h"
#include "query/query.h"
#include "base/base.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S      1000000000LL
#define T0     (1700000000LL * S)
#define PERIOD 10000000LL /* 10 ms a sample */
#define N_PROF 32	  /* 16 a side */
#define N_FN   12

static uint64_t rng_state = 42;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(void)
{
	return ((double)(rng_next() >> 11) + 0.5) / 9007199254740992.0;
}

/* A Poisson count of mean m (m < 1000): its normal approximation above 50. */
static int64_t rng_poisson(double m)
{
	if (m < 50) {
		double p = exp(-m), c = p, u = rng_unit();
		int64_t k = 0;

		while (u > c && k < 1000) {
			p *= m / (double)++k;
			c += p;
		}
		return k;
	}
	double v = floor(m + sqrt(m) * sqrt(-2 * log(rng_unit())) * cos(2 * M_PI * rng_unit()) +
			 0.5);
	return v > 0 ? (int64_t)v : 0;
}

/* Function f's mean samples a profile (f 0 is slow_path). */
static double mean_of(int f, bool window)
{
	if (!f)
		return window ? 600 : 400;
	return 5.0 * f * f; /* 5 .. 605 */
}

static const char *fn_name(int f, char *buf, size_t len)
{
	if (!f)
		return "slow_path";
	snprintf(buf, len, "fn_%02d", f);
	return buf;
}

/* Profile i: main;fn_f for every f. */
static int plant(struct store *s, int i, char *err, size_t errlen)
{
	struct profile *p = profile__new(PERIOD);
	uint64_t main_loc, loc;
	char name[32];
	int e = p ? 0 : -ENOMEM;

	if (e)
		return e;
	main_loc = profile__location(
	    p, 0, 0x1000, &(struct profile_line){profile__function(p, "main", NULL, NULL), 0}, 1);
	for (int f = 0; !e && f < N_FN; f++) {
		int64_t n = rng_poisson(mean_of(f, i >= N_PROF / 2));

		loc = profile__location(
		    p, 0, 0x2000 + 16 * (uint64_t)f,
		    &(struct profile_line){
			profile__function(p, fn_name(f, name, sizeof(name)), NULL, NULL), 0},
		    1);
		if (n)
			e = profile__add_sample(p, (uint64_t[]){loc, main_loc}, 2,
						(int64_t[]){n, n * PERIOD}, NULL, 0);
	}
	profile__set_time(p, T0 + i * 10 * S, 10 * S);
	e = e ?: store__append(s, p, NULL, NULL, 0, NULL, err, errlen);
	profile__free(p);
	return e;
}

static struct store *fixture(const char *name)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {
	    .sample_labels = ingest_sample_labels, .no_fsync = true, .no_auto_rollup = true};

	snprintf(dir, sizeof(dir), "%s/%s", unit_tmp_dir(), name);
	if (store__open(dir, &o, &s, err, sizeof(err)))
		return NULL;
	rng_state = 42;
	for (int i = 0; i < N_PROF; i++)
		if (plant(s, i, err, sizeof(err))) {
			fprintf(stderr, "  planting profile %d: %s\n", i, err);
			store__close(s);
			return NULL;
		}
	return s;
}

/* The window: the last 16 profiles; the default baseline the first 16. */
static const struct query_request window = {.from_ns = T0 + 160 * S, .until_ns = T0 + 320 * S};

TEST(planted_change_alone)
{
	struct store *s = fixture("planted");
	struct query_regressions r = {0};
	struct query_regressions_opts o = {0};
	char err[512] = "";
	double sum = 0, truth = (600.0 - 400.0) / 10; /* samples per second */
	int e;

	CHECK(s);
	e = query_regressions(s, &window, &o, &r, err, sizeof(err));
	CHECKF(!e, "%d %s", e, err);
	fprintf(stderr, "  %zu tested, %zu listed; %s\n", r.tested, r.n, r.note);
	for (size_t i = 0; i < r.n; i++)
		fprintf(stderr, "  %s %.4g -> %.4g: %+.4g [%.4g, %.4g] %s\n", r.rows[i].name,
			r.rows[i].c.left, r.rows[i].c.right, r.rows[i].c.change, r.rows[i].c.low,
			r.rows[i].c.high, query_verdict_name(r.rows[i].c.verdict));
	CHECK(r.tested == N_FN); /* main has no self time: not tested */
	CHECK(r.intervals[0] == 16 && r.intervals[1] == 16);
	CHECK(r.base_from_ns == T0 && r.base_until_ns == T0 + 160 * S);
	CHECK_STREQ(r.unit, "samples/s");
	CHECK(r.n == 1 && !strcmp(r.rows[0].name, "slow_path"));
	CHECK(r.rows[0].c.verdict == QUERY_UP);
	CHECKF(r.rows[0].c.low <= truth && truth <= r.rows[0].c.high, "truth %g", truth);
	CHECK(fabs(r.rows[0].relative - r.rows[0].c.change / r.rows[0].c.left) < 1e-12);
	/* the series: 16 + 16 intervals of 10 s, the mean of its points the
	 * sides' estimates */
	CHECK(r.n_times == 32 && r.times[0] == T0 && r.times[31] == T0 + 310 * S);
	for (size_t p = 16; p < 32; p++)
		sum += r.rows[0].values[p];
	CHECKF(fabs(sum / 16 - r.rows[0].c.right) < 1e-6 * r.rows[0].c.right, "%g", sum / 16);
cleanup:
	query_regressions__fini(&r);
	store__close(s);
}

TEST(share_and_total)
{
	struct store *s = fixture("share");
	struct query_regressions r = {0};
	struct query_regressions_opts o = {.share = true, .total = true, .limit = 5};
	char err[512] = "";
	int e;

	CHECK(s);
	e = query_regressions(s, &window, &o, &r, err, sizeof(err));
	CHECKF(!e, "%d %s", e, err);
	CHECK_STREQ(r.unit, "pp");
	CHECK(r.tested == N_FN + 1); /* main's total too */
	/* slow_path's share grows; every other leaf's shrinks as a share: the list
	 * is ordered by |change|, slow_path first */
	CHECK(r.n >= 1 && r.n <= 5 && !strcmp(r.rows[0].name, "slow_path"));
	for (size_t i = 1; i < r.n; i++)
		CHECK(fabs(r.rows[i - 1].c.change) >= fabs(r.rows[i].c.change));
cleanup:
	query_regressions__fini(&r);
	store__close(s);
}

TEST(empty_baseline_is_an_answer)
{
	struct store *s = fixture("empty");
	struct query_regressions r = {0};
	struct query_regressions_opts o = {.baseline = QUERY_BASELINE_7D};
	char err[512] = "", *buf = NULL;
	size_t len = 0;
	FILE *f = NULL;
	int e;

	CHECK(s);
	e = query_regressions(s, &window, &o, &r, err, sizeof(err));
	CHECKF(!e, "%d %s", e, err);
	CHECK(r.n == 0 && r.intervals[0] == 0 && r.intervals[1] == 16);
	CHECK(r.base_until_ns == window.until_ns - 7 * 86400 * S);
	CHECKF(strstr(r.note, "baseline holds no data"), "%s", r.note);
	CHECK((f = open_memstream(&buf, &len)));
	CHECK(!query_regressions__write_json(&r, f));
	CHECK(!fclose(f));
	f = NULL;
	CHECKF(strstr(buf, "\"functions\":[]") && strstr(buf, "\"baseline\":{\"from\":") &&
		   strstr(buf, "\"intervals\":0}") && strstr(buf, "\"kind\":\"self\"") &&
		   strstr(buf, "\"normalize\":\"rate\""),
	       "%s", buf);
cleanup:
	if (f)
		fclose(f);
	free(buf);
	query_regressions__fini(&r);
	store__close(s);
}

TEST(bad_baseline_range)
{
	struct store *s = fixture("bad");
	struct query_regressions r = {0};
	struct query_regressions_opts o = {
	    .baseline = QUERY_BASELINE_RANGE, .base_from_ns = T0 + 10 * S, .base_until_ns = T0};
	char err[512] = "";
	enum query_baseline b;

	CHECK(s);
	CHECK(query_regressions(s, &window, &o, &r, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "baselineFrom"), "%s", err);
	CHECK(query_baseline_parse("1d", &b) == 0 && b == QUERY_BASELINE_1D);
	CHECK(query_baseline_parse("2d", &b) == -EINVAL);
cleanup:
	query_regressions__fini(&r);
	store__close(s);
}
