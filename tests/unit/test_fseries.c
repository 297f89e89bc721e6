/*
 * Tests of src/query/fseries.c: one function's series per step against planted
 * data whose every step is known by hand: self vs total (a recursive function
 * counted once per stack), an inlined function by its own name, the value,
 * share and rate normalisations (the last step shorter), the call-site prefix
 * that Connect's SelectSeries passes, the JSON answer, one step matching
 * the top table, and bad requests (too many steps among them).
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

/*
 * Six profiles of 10 s from T0, i = 0..5, of four stacks (root first):
 *   A main;rec;rec;leaf   1 + i samples     (rec recursive: counted once)
 *   B main;rec            2
 *   C main;other          3 when i is odd
 *   D main;host;inl_[i]   1 when i >= 3     (inl inlined into host: one location)
 * By steps of 20 s ([0,1], [2,3], [4,5]): A 3 7 11, B 4 4 4, C 3 3 3, D 0 1 2;
 * total 10 15 20.
 */
static int plant(struct store *s, int i, char *err, size_t errlen)
{
	struct profile *p = profile__new(PERIOD);
	int e = p ? 0 : -ENOMEM;
	uint64_t f[6], l[5];

	if (e)
		return e;
	f[0] = profile__function(p, "main", NULL, NULL);
	f[1] = profile__function(p, "rec", NULL, NULL);
	f[2] = profile__function(p, "leaf", NULL, NULL);
	f[3] = profile__function(p, "other", NULL, NULL);
	f[4] = profile__function(p, "inl", NULL, NULL);
	f[5] = profile__function(p, "host", NULL, NULL);
	for (int k = 0; k < 4; k++)
		l[k] = profile__location(p, 0, 0x1000 + 16 * (uint64_t)k,
					 &(struct profile_line){f[k], 0}, 1);
	/* lines[0] is the innermost: inl, inlined into host */
	l[4] = profile__location(p, 0, 0x2000, (struct profile_line[]){{f[4], 0}, {f[5], 0}}, 2);
	uint64_t a[] = {l[2], l[1], l[1], l[0]}, b[] = {l[1], l[0]}, c[] = {l[3], l[0]},
		 d[] = {l[4], l[0]};
	int64_t na = 1 + i, nb = 2, nc = i % 2 ? 3 : 0, nd = i >= 3;
	struct store_label extra[] = {{"host", "h"}};

	profile__set_time(p, T0 + i * 10 * S, 10 * S);
	e = profile__add_sample(p, a, 4, (int64_t[]){na, na * PERIOD}, NULL, 0)
		?: profile__add_sample(p, b, 2, (int64_t[]){nb, nb * PERIOD}, NULL, 0);
	if (!e && nc)
		e = profile__add_sample(p, c, 2, (int64_t[]){nc, nc * PERIOD}, NULL, 0);
	if (!e && nd)
		e = profile__add_sample(p, d, 2, (int64_t[]){nd, nd * PERIOD}, NULL, 0);
	e = e ?: store__append(s, p, NULL, extra, 1, NULL, err, errlen);
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
	for (int i = 0; i < 6; i++)
		if (plant(s, i, err, sizeof(err))) {
			fprintf(stderr, "  planting profile %d: %s\n", i, err);
			store__close(s);
			return NULL;
		}
	return s;
}

/* The range of the fixture in steps of 20 s: 3 points. */
static const struct query_request range = {
    .from_ns = T0, .until_ns = T0 + 60 * S, .step_ns = 20 * S};

/* Series of fr over q into fs, then whether its values are want[0..2] and its
 * totals 10 15 20. */
static bool series_is(struct store *s, const struct query_request *q,
		      const struct query_fseries_request *fr, const int64_t want[3])
{
	static const int64_t totals[3] = {10, 15, 20};
	struct query_fseries fs;
	char err[512] = "";
	bool ok;
	int e = query_fseries(s, q, fr, &fs, err, sizeof(err));

	ok = !e && fs.n_points == 3 && fs.n_groups == 1 && fs.step_ns == 20 * S;
	for (size_t i = 0; ok && i < 3; i++)
		ok = fs.groups[0].values[i] == want[i] && fs.groups[0].totals[i] == totals[i];
	if (!ok) {
		fprintf(stderr,
			"  %s %s: rc %d (%s), %zu points:", fr->function ? "function" : "path",
			fr->function ? fr->function : fr->call_site[fr->n_call_site - 1], e, err,
			fs.n_points);
		for (size_t i = 0; !e && i < fs.n_points && fs.n_groups; i++)
			fprintf(stderr, " %lld/%lld", (long long)fs.groups[0].values[i],
				(long long)fs.groups[0].totals[i]);
		fputc('\n', stderr);
	}
	query_fseries__fini(&fs); /* cleared by query_fseries, filled or not */
	return ok;
}

TEST(self_and_total_per_step)
{
	static const struct {
		const char *function;
		enum query_fs_kind kind;
		int64_t want[3];
	} cases[] = {
	    {"rec", QUERY_FS_TOTAL, {7, 11, 15}}, /* A + B: A once, though rec is in it twice */
	    {"rec", QUERY_FS_SELF, {4, 4, 4}},	  /* B */
	    {"leaf", QUERY_FS_SELF, {3, 7, 11}},  /* A */
	    {"leaf", QUERY_FS_TOTAL, {3, 7, 11}},
	    {"main", QUERY_FS_TOTAL, {10, 15, 20}}, /* every stack */
	    {"main", QUERY_FS_SELF, {0, 0, 0}},
	    {"other", QUERY_FS_SELF, {3, 3, 3}},
	    {"inl", QUERY_FS_SELF, {0, 1, 2}}, /* the inlined line is the leaf */
	    {"host", QUERY_FS_SELF, {0, 0, 0}},
	    {"host", QUERY_FS_TOTAL, {0, 1, 2}},
	    {"inl_[i]", QUERY_FS_TOTAL, {0, 0, 0}}, /* the top table's name has no suffix */
	    {"absent", QUERY_FS_TOTAL, {0, 0, 0}},  /* zeros, not an error */
	};
	struct store *s = fixture("kinds");

	CHECK(s);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct query_fseries_request fr = {.function = cases[i].function,
						   .kind = cases[i].kind};

		CHECKF(series_is(s, &range, &fr, cases[i].want), "%s %s", cases[i].function,
		       cases[i].kind == QUERY_FS_SELF ? "self" : "total");
	}
cleanup:
	store__close(s);
}

/* Connect's call site: frame names from the root as the flame tree names them;
 * total = the stacks that start with the path, self = those that are the path. */
TEST(call_site_prefix)
{
	static const char *const rec[] = {"main", "rec"}, *const rec2[] = {"main", "rec", "rec"},
				 *const full[] = {"main", "rec", "rec", "leaf"},
				 *const inner[] = {"rec"},
				 *const inl[] = {"main", "host", "inl_[i]"},
				 *const bare[] = {"main", "host", "inl"},
				 *const longer[] = {"main", "rec", "rec", "leaf", "more"};
	static const struct {
		const char *const *path;
		size_t n;
		enum query_fs_kind kind;
		int64_t want[3];
	} cases[] = {
	    {rec, 2, QUERY_FS_TOTAL, {7, 11, 15}}, /* A + B */
	    {rec, 2, QUERY_FS_SELF, {4, 4, 4}},	   /* B ends there */
	    {rec2, 3, QUERY_FS_TOTAL, {3, 7, 11}}, /* A */
	    {rec2, 3, QUERY_FS_SELF, {0, 0, 0}},
	    {full, 4, QUERY_FS_SELF, {3, 7, 11}},
	    {inner, 1, QUERY_FS_TOTAL, {0, 0, 0}}, /* not from the root: nothing */
	    {inl, 3, QUERY_FS_SELF, {0, 1, 2}},	   /* the flame tree's inline name */
	    {bare, 3, QUERY_FS_TOTAL, {0, 0, 0}},
	    {longer, 5, QUERY_FS_TOTAL, {0, 0, 0}}, /* longer than every stack */
	};
	struct store *s = fixture("call_site");

	CHECK(s);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct query_fseries_request fr = {
		    .call_site = cases[i].path, .n_call_site = cases[i].n, .kind = cases[i].kind};

		CHECKF(series_is(s, &range, &fr, cases[i].want), "case %zu", i);
	}
cleanup:
	store__close(s);
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(b) > 1 ? fabs(b) : 1);
}

TEST(share_and_rate)
{
	struct store *s = fixture("norm");
	struct query_fseries fs = {0};
	struct query_fseries_request fr = {.function = "rec"};
	struct query_request q = range;
	char err[512] = "";

	CHECK(s);
	/* share of rec's total: 7/10, 11/15, 15/20; the total's own share 100 */
	fr.normalize = QUERY_FS_SHARE;
	CHECK(query_fseries(s, &q, &fr, &fs, err, sizeof(err)) == 0);
	CHECK_STREQ(fs.unit, "%");
	CHECK(
	    near(query_fseries__norm(&fs, 0, fs.groups[0].values[0], fs.groups[0].totals[0]), 70));
	CHECK(near(query_fseries__norm(&fs, 1, fs.groups[0].values[1], fs.groups[0].totals[1]),
		   1100.0 / 15));
	CHECK(
	    near(query_fseries__norm(&fs, 2, fs.groups[0].values[2], fs.groups[0].totals[2]), 75));
	CHECK(
	    near(query_fseries__norm(&fs, 2, fs.groups[0].totals[2], fs.groups[0].totals[2]), 100));
	CHECK(query_fseries__norm(&fs, 0, 0, 0) == 0); /* a step without data */
	query_fseries__fini(&fs);
	/* rate of samples: per second of a 20 s step; until at 50 s makes the last
	 * step 10 s long (profile 4 only: A 5 + B 2 of a total 8) */
	q.until_ns = T0 + 50 * S;
	fr.normalize = QUERY_FS_RATE;
	CHECK(query_fseries(s, &q, &fr, &fs, err, sizeof(err)) == 0);
	CHECK_STREQ(fs.unit, "samples/s");
	CHECK(fs.n_points == 3 && fs.groups[0].values[2] == 7 && fs.groups[0].totals[2] == 8);
	CHECK(near(query_fseries__norm(&fs, 0, fs.groups[0].values[0], 0), 7.0 / 20));
	CHECK(near(query_fseries__norm(&fs, 2, fs.groups[0].values[2], 0), 7.0 / 10));
	query_fseries__fini(&fs);
	/* rate of CPU nanoseconds: CPU seconds per second (B: 4 samples of 10 ms
	 * in 20 s is 0.002 of a core) */
	q.until_ns = range.until_ns;
	q.value_index = 1;
	fr.kind = QUERY_FS_SELF;
	CHECK(query_fseries(s, &q, &fr, &fs, err, sizeof(err)) == 0);
	CHECK_STREQ(fs.unit, "seconds/s");
	CHECK_STREQ(fs.raw_unit, "nanoseconds");
	CHECK(fs.groups[0].values[1] == 4 * PERIOD);
	CHECK(near(query_fseries__norm(&fs, 1, fs.groups[0].values[1], 0), 0.002));
	query_fseries__fini(&fs);
	/* natural_value: a CPU selection counts nanoseconds whatever value_index says */
	q.value_index = 0;
	fr.natural_value = true;
	fr.normalize = QUERY_FS_VALUE;
	CHECK(query_fseries(s, &q, &fr, &fs, err, sizeof(err)) == 0);
	CHECK_STREQ(fs.unit, "nanoseconds");
	CHECK(fs.groups[0].values[0] == 4 * PERIOD && fs.groups[0].totals[0] == 10 * PERIOD);
cleanup:
	query_fseries__fini(&fs);
	store__close(s);
}

TEST(json_answer)
{
	struct store *s = fixture("json");
	struct query_fseries_request fr = {.function = "leaf", .kind = QUERY_FS_SELF};
	char err[512] = "", *buf = NULL, want[512];
	size_t len;
	FILE *out = NULL;

	CHECK(s);
	CHECK(query_fseries_parse("self", "value", &fr, err, sizeof(err)) == 0);
	CHECK((out = open_memstream(&buf, &len)));
	CHECK(query_fseries_json(s, &range, &fr, out, err, sizeof(err)) == 0);
	fclose(out);
	out = NULL;
	snprintf(want, sizeof(want),
		 "{\"unit\":\"samples\",\"function\":\"leaf\",\"kind\":\"self\",\"normalize\":"
		 "\"value\",\"from\":%lld,\"until\":%lld,\"step\":%lld,\"times\":[%lld,%lld,%lld],"
		 "\"values\":[3,7,11],\"totals\":[10,15,20]}\n",
		 T0, T0 + 60 * S, 20 * S, T0, T0 + 20 * S, T0 + 40 * S);
	CHECK_STREQ(buf, want);
cleanup:
	if (out)
		fclose(out);
	free(buf);
	store__close(s);
}

TEST(bad_requests_name_the_problem)
{
	static const char *const path[] = {"main"};
	struct store *s = fixture("bad");
	struct query_fseries_request fr = {0};
	struct query_fseries fs = {0};
	struct query_request q = range;
	char err[512] = "";

	CHECK(s);
	CHECK(query_fseries(s, &q, &fr, &fs, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "function is required"), "%s", err);
	fr =
	    (struct query_fseries_request){.function = "main", .call_site = path, .n_call_site = 1};
	CHECK(query_fseries(s, &q, &fr, &fs, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "not both"), "%s", err);
	fr = (struct query_fseries_request){.function = ""};
	CHECK(query_fseries(s, &q, &fr, &fs, err, sizeof(err)) == -EINVAL);
	CHECK(query_fseries_parse("both", NULL, &fr, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "kind 'both'"), "%s", err);
	CHECK(query_fseries_parse(NULL, "percent", &fr, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "normalize 'percent'"), "%s", err);
	/* 60 s in steps of 1 ms: 60000 points, over QUERY_MAX_POINTS */
	fr = (struct query_fseries_request){.function = "main"};
	q.step_ns = 1000000;
	CHECK(query_fseries(s, &q, &fr, &fs, err, sizeof(err)) == -E2BIG);
	CHECKF(strstr(err, "use a larger step"), "%s", err);
cleanup:
	query_fseries__fini(&fs);
	store__close(s);
}

/* One step over the whole range is the top table: every function's self and
 * total as query_top counts them (the definitions the series promises). */
TEST(one_step_is_the_top_table)
{
	struct store *s = fixture("top");
	struct query_request q = {.from_ns = T0, .until_ns = T0 + 60 * S, .max_nodes = 100};
	struct query_top t = {0};
	struct query_fseries fs = {0};
	char err[512] = "";

	CHECK(s);
	CHECK(query_top(s, &q, &t, err, sizeof(err)) == 0);
	CHECKF(t.n == 6 && t.total == 45, "%zu rows, total %lld", t.n, (long long)t.total);
	q.step_ns = 60 * S;
	for (size_t i = 0; i < t.n; i++)
		for (int k = 0; k < 2; k++) {
			struct query_fseries_request fr = {
			    .function = t.rows[i].name, .kind = k ? QUERY_FS_SELF : QUERY_FS_TOTAL};

			CHECK(query_fseries(s, &q, &fr, &fs, err, sizeof(err)) == 0);
			CHECKF(fs.n_points == 1 && fs.groups[0].totals[0] == t.total &&
				   fs.groups[0].values[0] == (k ? t.rows[i].self : t.rows[i].total),
			       "%s %s: %lld, top %lld/%lld", t.rows[i].name, k ? "self" : "total",
			       (long long)fs.groups[0].values[0], (long long)t.rows[i].self,
			       (long long)t.rows[i].total);
			query_fseries__fini(&fs);
		}
cleanup:
	query_fseries__fini(&fs);
	query_top__fini(&t);
	store__close(s);
}
