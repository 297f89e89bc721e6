/*
 * Tests of src/store: append → merge round trip (folded output identical),
 * persistence across close/open, atomic rejection of bad appends (label limits,
 * series limit, bad names, no time: nothing stored), rollups (every range, aligned
 * or not, sums exactly the raw data in it; late data invalidates a rollup),
 * retention, and the stats /metrics reads.
 */
#include "unit.h"

#include "query/query.h"
#include "store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define S  1000000000LL
#define T0 (1700000000LL * S)

/* A profile at time t: for each process p (0..n_proc-1), stacks main;f<p>;g<k>
 * with count (k + 1) * mult, labelled process=proc<p>, pid=100+p. */
static struct profile *make(int64_t t, int n_proc, int n_stacks, int64_t mult)
{
	struct profile *p = profile__new(10000000);
	char name[32];

	if (!p)
		return NULL;
	profile__set_time(p, t, 10 * S);
	uint64_t m = profile__mapping(p, 0x1000, 0x9000, 0, "/bin/app", "beef");
	uint64_t fmain = profile__function(p, "main", "main", "app.c");
	struct profile_line lm = {fmain, 1};
	uint64_t lmain = profile__location(p, m, 0x1000, &lm, 1);

	for (int i = 0; i < n_proc; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		struct profile_line lf = {profile__function(p, name, name, "app.c"), 2};
		uint64_t lfi = profile__location(p, m, 0x2000 + (uint64_t)i, &lf, 1);
		char proc[32];

		snprintf(proc, sizeof(proc), "proc%d", i);
		struct profile_label labels[3] = {
		    {"process", proc, 0}, {"pid", NULL, 100 + i}, {"tid", NULL, 7}};
		for (int k = 0; k < n_stacks; k++) {
			snprintf(name, sizeof(name), "g%d", k);
			struct profile_line lg = {profile__function(p, name, name, "app.c"), 3};
			uint64_t locs[3] = {profile__location(p, m, 0x5000 + (uint64_t)k, &lg, 1),
					    lfi, lmain};
			int64_t v[2] = {(k + 1) * mult, (k + 1) * mult * 10000000};

			if (profile__add_sample(p, locs, 3, v, labels, 3)) {
				profile__free(p);
				return NULL;
			}
		}
	}
	return p;
}

static char *folded(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	folded_write(p, f);
	fclose(f);
	return buf;
}

static int64_t merged_total(struct store *s, const char *q, int64_t from, int64_t until)
{
	struct query_request r = {.query = q, .from_ns = from, .until_ns = until};
	struct profile *p = NULL;
	char err[256];
	int64_t t;

	if (query_profile(s, &r, &p, err, sizeof(err))) {
		fprintf(stderr, "  query_profile: %s\n", err);
		return -1;
	}
	t = profile__total(p, 0);
	profile__free(p);
	return t;
}

static const struct store_opts fast = {.no_fsync = true};

TEST(append_merge_roundtrip)
{
	struct store *s = NULL;
	struct profile *p = make(T0, 3, 5, 1), *m = NULL;
	struct store_label extra[] = {{"host", "a"}};
	struct store_append_result res;
	struct query_request q = {.from_ns = T0 - S, .until_ns = T0 + S};
	char err[256], *f1 = NULL, *f2 = NULL;

	CHECK(p);
	CHECK(store__open(unit_tmp_dir(), &fast, &s, err, sizeof(err)) == 0);
	CHECKF(store__append(s, p, NULL, extra, 1, &res, err, sizeof(err)) == 0, "%s", err);
	CHECK(res.series == 3 && res.new_series == 3 && res.rows == 15 && res.samples == 45);
	CHECK(query_profile(s, &q, &m, err, sizeof(err)) == 0);
	f1 = folded(p);
	f2 = folded(m);
	CHECK(f1 && f2);
	CHECKF(strcmp(f1, f2) == 0, "original:\n%s\nmerged:\n%s", f1, f2);
	CHECK(profile__total(m, 1) == profile__total(p, 1));
cleanup:
	free(f1);
	free(f2);
	profile__free(p);
	profile__free(m);
	store__close(s);
}

TEST(persists_across_reopen)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct profile *p = make(T0, 2, 4, 3);
	struct store_stats st;

	snprintf(dir, sizeof(dir), "%s/reopen", unit_tmp_dir());
	CHECK(p);
	CHECK(store__open(dir, NULL, &s, err, sizeof(err)) == 0);
	CHECK(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	store__close(s);
	s = NULL;
	CHECK(store__open(dir, NULL, &s, err, sizeof(err)) == 0);
	CHECK(store__stats(s, &st) == 0);
	CHECK(st.series == 2 && st.profiles == 1 && st.samples == 60 && st.bytes_on_disk > 0);
	CHECK(merged_total(s, "{process=\"proc1\"}", T0, T0 + 1) == 30);
	/* appending after reopen reuses the interned stacks */
	CHECK(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	CHECK(store__stats(s, &st) == 0);
	CHECK(st.series == 2 && st.stacks == 8);
	CHECK(merged_total(s, "", T0, T0 + 1) == 120);
cleanup:
	profile__free(p);
	store__close(s);
}

TEST(rejected_appends_store_nothing)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {.no_fsync = true, .max_series = 4, .max_labels_per_series = 3};
	struct profile *p = make(T0, 3, 2, 1), *big = make(T0 + 10 * S, 5, 2, 1);
	struct profile *notime = make(0, 1, 1, 1);
	struct store_label two[] = {{"host", "a"}, {"kernel", "6.1"}};
	struct store_label bad[] = {{"9x", "a"}};
	struct store_label dup[] = {{"host", "a"}, {"host", "b"}};
	struct store_stats st;

	snprintf(dir, sizeof(dir), "%s/reject", unit_tmp_dir());
	CHECK(p && big && notime);
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	/* process + pid + 2 extra = 4 labels > 3 */
	CHECK(store__append(s, p, NULL, two, 2, NULL, err, sizeof(err)) == -E2BIG);
	CHECKF(strstr(err, "limit of 3"), "%s", err);
	CHECK(store__append(s, p, NULL, bad, 1, NULL, err, sizeof(err)) == -EINVAL);
	CHECK(store__append(s, p, NULL, dup, 2, NULL, err, sizeof(err)) == -EINVAL);
	CHECK(store__append(s, notime, NULL, NULL, 0, NULL, err, sizeof(err)) == -EINVAL);
	CHECK(store__append(s, p, "", NULL, 0, NULL, err, sizeof(err)) == -EINVAL);
	CHECK(store__stats(s, &st) == 0);
	CHECK(st.series == 0 && st.profiles == 0 && st.stacks == 0);
	CHECK(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	/* 5 more processes: 8 series > 4 */
	CHECK(store__append(s, big, NULL, NULL, 0, NULL, err, sizeof(err)) == -EDQUOT);
	CHECKF(strstr(err, "4 series"), "%s", err);
	CHECK(store__stats(s, &st) == 0);
	CHECK(st.series == 3 && st.profiles == 1 && st.samples == 9);
	CHECK(merged_total(s, "", T0, T0 + 100 * S) == 9);
	/* and the store still works after the rollback */
	store__close(s);
	s = NULL;
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	CHECK(store__stats(s, &st) == 0);
	CHECK(st.series == 3 && st.profiles == 1);
	CHECK(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	CHECK(merged_total(s, "", T0, T0 + 100 * S) == 18);
cleanup:
	profile__free(p);
	profile__free(big);
	profile__free(notime);
	store__close(s);
}

/* Two hours of profiles every 10 s with value (i % 7) + 1 per stack. */
static int fill(struct store *s, int64_t start, int n, int64_t *vals)
{
	char err[256];

	for (int i = 0; i < n; i++) {
		struct profile *p = make(start + i * 10 * S, 2, 3, (i % 7) + 1);
		int e = p ? store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) : -ENOMEM;

		profile__free(p);
		if (e)
			return e;
		vals[i] = 12 * ((i % 7) + 1); /* 2 procs x (1+2+3) */
	}
	return 0;
}

static int64_t expect(const int64_t *vals, int n, int64_t start, int64_t from, int64_t until)
{
	int64_t sum = 0;

	for (int i = 0; i < n; i++) {
		int64_t t = start + i * 10 * S;

		if (t >= from && t < until)
			sum += vals[i];
	}
	return sum;
}

TEST(rollups_sum_exactly)
{
	char dir[300], err[256];
	struct store *s = NULL;
	int64_t start = 1700000000LL * S - (1700000000LL * S) % (6 * 3600 * S) - 1800 * S;
	enum { N = 2 * 360 + 200 };
	static int64_t vals[N];
	struct store_stats st;
	int64_t ranges[][2] = {
	    {0, 3600}, {-1800, 7000}, {17, 4013},	 {600, 1200},  {3599, 3601},
	    {0, 9000}, {1234, 1235},  {-100000, 100000}, {5000, 5000},
	};

	snprintf(dir, sizeof(dir), "%s/rollup", unit_tmp_dir());
	CHECK(store__open(dir, &fast, &s, err, sizeof(err)) == 0);
	CHECK(fill(s, start, N, vals) == 0);
	CHECK(store__stats(s, &st) == 0);
	CHECKF(st.chunks > st.profiles + 100, "chunks %llu profiles %llu",
	       (unsigned long long)st.chunks, (unsigned long long)st.profiles);
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		int64_t from = start + ranges[i][0] * S, until = start + ranges[i][1] * S;
		int64_t got = merged_total(s, NULL, from, until);
		int64_t want = expect(vals, N, start, from, until);

		CHECKF(got == want, "range %zu: got %lld want %lld", i, (long long)got,
		       (long long)want);
	}
	/* late data lands in a rolled-up hour: the rollup is dropped and rebuilt */
	struct profile *late = make(start + 605 * S, 1, 1, 1000);
	CHECK(late);
	int e = store__append(s, late, NULL, NULL, 0, NULL, err, sizeof(err));
	profile__free(late);
	CHECK(e == 0);
	CHECK(merged_total(s, "", start, start + 3600 * S) ==
	      expect(vals, N, start, start, start + 3600 * S) + 1000);
	/* the whole time axis costs chunks found, not windows in range */
	CHECK(merged_total(s, "", 1, INT64_MAX) == expect(vals, N, start, 1, INT64_MAX) + 1000);
	CHECK(store__maintain(s, start + N * 10 * S, NULL) == 0);
	CHECK(merged_total(s, "", start, start + 3600 * S) ==
	      expect(vals, N, start, start, start + 3600 * S) + 1000);
	/* scans start at the first stored window: data older than everything so far
	 * (before that window) is still found, from=0 too, and after a reopen */
	late = make(start - 7 * 3600 * S, 1, 1, 77);
	CHECK(late);
	e = store__append(s, late, NULL, NULL, 0, NULL, err, sizeof(err));
	profile__free(late);
	CHECK(e == 0);
	int64_t all = expect(vals, N, start, 1, INT64_MAX) + 1000 + 77;
	CHECK(merged_total(s, "", 0, INT64_MAX) == all);
	store__close(s);
	s = NULL;
	CHECK(store__open(dir, &fast, &s, err, sizeof(err)) == 0);
	CHECK(merged_total(s, "", 0, INT64_MAX) == all);
	CHECK(merged_total(s, "", 0, start) == 77);
cleanup:
	store__close(s);
}

TEST(retention_deletes_old_chunks)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {.no_fsync = true, .retention_ns = 3600 * S};
	int64_t start = T0;
	static int64_t vals[400];
	uint64_t deleted = 0;
	struct store_stats st;

	snprintf(dir, sizeof(dir), "%s/retain", unit_tmp_dir());
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	CHECK(fill(s, start, 400, vals) == 0);
	CHECK(store__maintain(s, start + 2 * 3600 * S, &deleted) == 0);
	CHECK(deleted > 0);
	CHECK(store__stats(s, &st) == 0);
	CHECK(st.oldest_ns >= start + 3600 * S - 10 * S);
	CHECK(merged_total(s, "", start, start + 3600 * S - 10 * S) == 0);
cleanup:
	store__close(s);
}

TEST(open_errors)
{
	struct store *s = NULL;
	char err[256], path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/plainfile", unit_tmp_dir());
	f = fopen(path, "w");
	CHECK(f);
	fclose(f);
	CHECK(store__open(path, NULL, &s, err, sizeof(err)) == -EINVAL);
	CHECK(s == NULL && strstr(err, "not a directory"));
cleanup:
	store__close(s);
}

/*
 * The location cache (content hash -> location id, kept across appends) must
 * forget the ids of a rolled-back append: they are given again to other
 * locations, and a stale entry would name a later frame wrongly.
 */
TEST(location_cache_forgets_rolled_back_ids)
{
	struct store_opts o = {.no_fsync = true, .max_series = 1};
	struct store *s = NULL;
	struct profile *p1 = make(T0, 1, 1, 1), *bad = make(T0 + 10 * S, 2, 3, 1);
	struct profile *p3 = profile__new(10000000), *p4 = make(T0 + 30 * S, 1, 3, 1), *m = NULL;
	struct query_request q = {.from_ns = T0 + 30 * S, .until_ns = T0 + 31 * S};
	char dir[300], err[256], *f = NULL;

	CHECK(p1 && bad && p3 && p4);
	snprintf(dir, sizeof(dir), "%s/loccache", unit_tmp_dir());
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	CHECK(store__append(s, p1, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	/* two series over the limit of one: rolled back after interning f1, g1, g2 */
	CHECK(store__append(s, bad, NULL, NULL, 0, NULL, err, sizeof(err)) == -EDQUOT);
	/* three other new locations take the ids f1, g1 and g2 had */
	profile__set_time(p3, T0 + 20 * S, 10 * S);
	for (int k = 0; k < 3; k++) {
		char name[16];
		struct profile_label l[2] = {{"process", "proc0", 0}, {"pid", NULL, 100}};
		int64_t v[2] = {1, 10000000};

		snprintf(name, sizeof(name), "h%d", k);
		struct profile_line ln = {profile__function(p3, name, name, "h.c"), 1};
		uint64_t loc = profile__location(p3, 0, 0x7000 + (uint64_t)k, &ln, 1);
		CHECK(profile__add_sample(p3, &loc, 1, v, l, 2) == 0);
	}
	CHECKF(store__append(s, p3, NULL, NULL, 0, NULL, err, sizeof(err)) == 0, "%s", err);
	/* g1 and g2 again: stored under their own names, not h1/h2 */
	CHECK(store__append(s, p4, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	CHECK(query_profile(s, &q, &m, err, sizeof(err)) == 0);
	CHECK((f = folded(m)));
	CHECKF(strstr(f, "main;f0;g1 2") && strstr(f, "main;f0;g2 3") && !strstr(f, "h"), "%s", f);
cleanup:
	free(f);
	profile__free(m);
	profile__free(p1);
	profile__free(bad);
	profile__free(p3);
	profile__free(p4);
	store__close(s);
}
