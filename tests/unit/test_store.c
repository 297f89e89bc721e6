/*
 * Tests of src/store: append → merge round trip (folded output identical),
 * persistence across close/open, atomic rejection of bad appends (label limits,
 * series limit, bad names, no time: nothing stored), rollups (every range, aligned
 * or not, sums exactly the raw data in it; late data is added into a rollup),
 * retention, and the stats /metrics reads; the flat ingest path stores exactly
 * what the model path stores (every table and chunk byte for byte), and the
 * stack memo forgets rolled-back ids.
 */
#include "unit.h"

#include "ingest/ingest.h"
#include "query/query.h"
#include "store/store.h"
#include "store/embedded/store_impl.h"

#include <sqlite3.h>

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

static const struct store_opts fast = {.sample_labels = ingest_sample_labels, .no_fsync = true};
/* The defaults, with the agent's sample labels kept (as hearth serve opens it). */
static const struct store_opts dflt = {.sample_labels = ingest_sample_labels};

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
	f1 = unit_folded(p);
	f2 = unit_folded(m);
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
	CHECK(store__open(dir, &dflt, &s, err, sizeof(err)) == 0);
	CHECK(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	store__close(s);
	s = NULL;
	CHECK(store__open(dir, &dflt, &s, err, sizeof(err)) == 0);
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

/* A batch (one request's profiles) is committed or rolled back whole: after a
 * rollback neither the rows nor the figures nor the interned stacks remain, and an
 * append after a failed one in the batch is refused. */
TEST(batch_commits_or_rolls_back_whole)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct profile *p = make(T0, 2, 4, 3), *q = make(T0 + 20 * S, 2, 4, 5);
	struct store_stats before, st;

	snprintf(dir, sizeof(dir), "%s/batch", unit_tmp_dir());
	CHECK(p && q);
	CHECK(store__open(dir, &dflt, &s, err, sizeof(err)) == 0);
	CHECK(store__stats(s, &before) == 0);
	/* rolled back: nothing of either profile stays */
	CHECKF(store__batch_begin(s, err, sizeof(err)) == 0, "%s", err);
	CHECK(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	CHECKF(store__append(s, q, NULL, NULL, 0, NULL, err, sizeof(err)) == 0, "%s", err);
	CHECK(store__batch_end(s, false, NULL, 0) == 0);
	CHECK(store__stats(s, &st) == 0);
	CHECKF(st.profiles == before.profiles && st.samples == before.samples &&
		   st.stacks == before.stacks,
	       "after rollback: %llu profiles, %llu samples, %llu stacks",
	       (unsigned long long)st.profiles, (unsigned long long)st.samples,
	       (unsigned long long)st.stacks);
	CHECK(merged_total(s, "", T0, T0 + 60 * S) == 0);
	/* committed: both, and they survive a reopen */
	CHECK(store__batch_begin(s, err, sizeof(err)) == 0);
	CHECK(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	CHECK(store__append(s, q, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	CHECKF(store__batch_end(s, true, err, sizeof(err)) == 0, "%s", err);
	store__close(s);
	s = NULL;
	CHECK(store__open(dir, &dflt, &s, err, sizeof(err)) == 0);
	CHECK(store__stats(s, &st) == 0);
	CHECKF(st.profiles == 2 && st.samples == 60 + 100, "%llu profiles, %llu samples",
	       (unsigned long long)st.profiles, (unsigned long long)st.samples);
	CHECK(merged_total(s, "", T0, T0 + 60 * S) == 160);
	/* an append outside any batch still commits on its own */
	CHECK(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	CHECK(merged_total(s, "", T0, T0 + 60 * S) == 220);
	/* store__batch_end without a batch is refused */
	CHECK(store__batch_end(s, true, NULL, 0) == -EINVAL);
cleanup:
	profile__free(p);
	profile__free(q);
	store__close(s);
}

TEST(rejected_appends_store_nothing)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {.sample_labels = ingest_sample_labels,
			       .no_fsync = true,
			       .max_series = 4,
			       .max_labels_per_series = 3};
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
	/* late data lands in a rolled-up hour: it is added into the rollups */
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
	struct store_opts o = {
	    .sample_labels = ingest_sample_labels, .no_fsync = true, .retention_ns = 3600 * S};
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
static int append_via(struct store *s, const struct profile *p, bool flat, char *err,
		      size_t errlen);

/* On the model path, then on the flat path (which probes the cache itself). */
TEST(location_cache_forgets_rolled_back_ids)
{
	struct store_opts o = {
	    .sample_labels = ingest_sample_labels, .no_fsync = true, .max_series = 1};
	struct store *s = NULL;
	struct profile *p1 = make(T0, 1, 1, 1), *bad = make(T0 + 10 * S, 2, 3, 1);
	struct profile *p3 = profile__new(10000000), *p4 = make(T0 + 30 * S, 1, 3, 1), *m = NULL;
	struct query_request q = {.from_ns = T0 + 30 * S, .until_ns = T0 + 31 * S};
	char dir[300], err[256], *f = NULL;

	CHECK(p1 && bad && p3 && p4);
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
	for (int flat = 0; flat < 2; flat++) {
		snprintf(dir, sizeof(dir), "%s/loccache%d", unit_tmp_dir(), flat);
		CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
		CHECK(append_via(s, p1, flat, err, sizeof(err)) == 0);
		/* two series over the limit of one: rolled back after interning f1, g1, g2 */
		CHECK(append_via(s, bad, flat, err, sizeof(err)) == -EDQUOT);
		CHECKF(append_via(s, p3, flat, err, sizeof(err)) == 0, "%s", err);
		/* g1 and g2 again: stored under their own names, not h1/h2 */
		CHECK(append_via(s, p4, flat, err, sizeof(err)) == 0);
		CHECK(query_profile(s, &q, &m, err, sizeof(err)) == 0);
		CHECK((f = unit_folded(m)));
		CHECKF(strstr(f, "main;f0;g1 2") && strstr(f, "main;f0;g2 3") && !strstr(f, "h"),
		       "%s path: %s", flat ? "flat" : "model", f);
		free(f);
		f = NULL;
		profile__free(m);
		m = NULL;
		store__close(s);
		s = NULL;
	}
cleanup:
	free(f);
	profile__free(m);
	profile__free(p1);
	profile__free(bad);
	profile__free(p3);
	profile__free(p4);
	store__close(s);
}

/* ---- the flat ingest path (pprof_decode_flat + store__append_flat) ---- */

/* A tiny profile.proto writer for hand-made messages (protobuf encoding). */
struct pb {
	uint8_t b[4096];
	size_t n;
};

static void pb_raw_varint(struct pb *p, uint64_t v)
{
	while (v >= 0x80 && p->n < sizeof(p->b)) {
		p->b[p->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	if (p->n < sizeof(p->b))
		p->b[p->n++] = (uint8_t)v;
}

static void pb_int(struct pb *p, unsigned field, uint64_t v)
{
	pb_raw_varint(p, (uint64_t)field << 3);
	pb_raw_varint(p, v);
}

static void pb_bytes(struct pb *p, unsigned field, const void *data, size_t len)
{
	pb_raw_varint(p, (uint64_t)field << 3 | 2);
	pb_raw_varint(p, len);
	if (len <= sizeof(p->b) - p->n) {
		memcpy(p->b + p->n, data, len);
		p->n += len;
	}
}

static void pb_msg(struct pb *p, unsigned field, const struct pb *sub)
{
	pb_bytes(p, field, sub->b, sub->n);
}

/* Packed repeated varints. */
static void pb_packed(struct pb *p, unsigned field, const uint64_t *v, size_t n)
{
	struct pb sub = {.n = 0};

	for (size_t i = 0; i < n; i++)
		pb_raw_varint(&sub, v[i]);
	pb_msg(p, field, &sub);
}

static void pb_value_type(struct pb *p, unsigned field, uint64_t type, uint64_t unit)
{
	struct pb vt = {.n = 0};

	pb_int(&vt, 1, type);
	pb_int(&vt, 2, unit);
	pb_msg(p, field, &vt);
}

static void pb_mapping(struct pb *p, uint64_t id, uint64_t start, uint64_t file, uint64_t build)
{
	struct pb m = {.n = 0};

	pb_int(&m, 1, id);
	pb_int(&m, 2, start);
	pb_int(&m, 3, start + 0x100000);
	pb_int(&m, 5, file);
	pb_int(&m, 6, build);
	pb_msg(p, 3, &m);
}

static void pb_function(struct pb *p, uint64_t id, uint64_t name, uint64_t file)
{
	struct pb f = {.n = 0};

	pb_int(&f, 1, id);
	pb_int(&f, 2, name);
	pb_int(&f, 3, name);
	pb_int(&f, 4, file);
	pb_msg(p, 5, &f);
}

/* A location with n lines given as (function id, line) pairs. */
static void pb_location(struct pb *p, uint64_t id, uint64_t mapping, uint64_t addr,
			const uint64_t (*lines)[2], size_t n)
{
	struct pb l = {.n = 0};

	pb_int(&l, 1, id);
	pb_int(&l, 2, mapping);
	pb_int(&l, 3, addr);
	for (size_t i = 0; i < n; i++) {
		struct pb ln = {.n = 0};

		pb_int(&ln, 1, lines[i][0]);
		pb_int(&ln, 2, lines[i][1]);
		pb_msg(&l, 4, &ln);
	}
	pb_msg(p, 4, &l);
}

/* A sample: location ids, count, and labels as (key, str, num) triples. */
static void pb_sample(struct pb *p, const uint64_t *locs, size_t n, uint64_t count,
		      const uint64_t (*labels)[3], size_t n_labels)
{
	struct pb s = {.n = 0};
	uint64_t v[2] = {count, count * 10000000};

	if (n)
		pb_packed(&s, 1, locs, n);
	pb_packed(&s, 2, v, 2);
	for (size_t i = 0; i < n_labels; i++) {
		struct pb l = {.n = 0};

		pb_int(&l, 1, labels[i][0]);
		if (labels[i][1])
			pb_int(&l, 2, labels[i][1]);
		if (labels[i][2])
			pb_int(&l, 3, labels[i][2]);
		pb_msg(&s, 3, &l);
	}
	pb_msg(p, 2, &s);
}

/*
 * What other encoders may send and the model smooths over: inlined lines, a
 * kernel mapping, an unsymbolized location, locations without a mapping, a
 * line without a function, sparse ids, a duplicate mapping, function, location
 * and string (including a second ""), labels in any order, numeric labels, a
 * string label whose value is "" (numeric in the model), an empty stack.
 */
static void flat_fixture(struct pb *p, int64_t t)
{
	static const char *const strs[] = {"",
					   "samples",
					   "count",
					   "cpu",
					   "nanoseconds",
					   "/bin/app",
					   "beef",
					   "[kernel.kallsyms]",
					   "main",
					   "app.c",
					   "inl_a",
					   "inl_b",
					   "do_syscall_64",
					   "process",
					   "pid",
					   "tid",
					   "proc0",
					   "proc1",
					   "comm",
					   "",
					   "main",
					   "worker"};
	enum {
		S_MAIN = 8,
		S_APPC,
		S_INLA,
		S_INLB,
		S_SYSCALL,
		S_PROCESS,
		S_PID,
		S_TID,
		S_PROC0,
		S_PROC1,
		S_COMM,
		S_EMPTY2,
		S_MAIN2,
		S_WORKER
	};
	static const uint64_t l_main[][2] = {{1, 5}}, l_inl[][2] = {{2, 7}, {3, 8}, {1, 9}},
			      l_sys[][2] = {{4, 0}}, l_dup[][2] = {{5, 5}},
			      l_nofn[][2] = {{0, 3}, {2, 1}};
	const uint64_t proc0[][3] = {{S_PROCESS, S_PROC0, 0}, {S_PID, 0, 100}, {S_TID, 0, 7}};
	const uint64_t proc0_rev[][3] = {{S_TID, 0, 8}, {S_PID, 0, 100}, {S_PROCESS, S_PROC0, 0}};
	const uint64_t proc1[][3] = {
	    {S_PROCESS, S_PROC1, 0}, {S_PID, S_EMPTY2, 200}, {S_COMM, S_WORKER, 0}};
	const uint64_t comm[][3] = {{S_COMM, S_WORKER, 0}};
	const uint64_t st1[] = {102, 101, 100}, st2[] = {103, 100}, st3[] = {104},
		       st4[] = {106, 105}, st5[] = {100};

	pb_value_type(p, 1, 1, 2);	   /* samples/count */
	pb_value_type(p, 1, 3, 4);	   /* cpu/nanoseconds */
	pb_sample(p, NULL, 0, 6, comm, 1); /* an empty stack first: no ids at all yet */
	pb_sample(p, st1, 3, 3, proc0, 3);
	pb_sample(p, st2, 2, 2, proc0_rev, 3);
	pb_sample(p, st3, 1, 1, proc1, 3);
	pb_sample(p, st4, 2, 4, proc1, 3);
	pb_sample(p, st5, 1, 5, NULL, 0);
	pb_sample(p, st1, 3, 7, proc0, 3); /* the first sample again */
	pb_mapping(p, 10, 0x400000, 5, 6);
	pb_mapping(p, 20, 0xffffffff81000000ull, 7, 0);
	pb_mapping(p, 30, 0x400000, 5, 6); /* mapping 10 again */
	pb_location(p, 100, 10, 0x401000, l_main, 1);
	pb_location(p, 101, 10, 0x401100, l_inl, 3);
	pb_location(p, 102, 20, 0xffffffff81001234ull, l_sys, 1);
	pb_location(p, 103, 10, 0x401234, NULL, 0);  /* unsymbolized */
	pb_location(p, 104, 0, 0x9999, l_dup, 1);    /* no mapping */
	pb_location(p, 105, 30, 0x401000, l_dup, 1); /* location 100 again */
	pb_location(p, 106, 0, 0, l_nofn, 2);	     /* a line without a function */
	pb_function(p, 1, S_MAIN, S_APPC);
	pb_function(p, 2, S_INLA, S_APPC);
	pb_function(p, 3, S_INLB, S_APPC);
	pb_function(p, 4, S_SYSCALL, 0);
	pb_function(p, 5, S_MAIN2, S_APPC); /* function 1 again, by another string */
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		pb_bytes(p, 6, strs[i], strlen(strs[i]));
	pb_int(p, 9, (uint64_t)t);
	pb_int(p, 10, (uint64_t)(10 * S));
	pb_value_type(p, 11, 3, 4);
	pb_int(p, 12, 10000000);
}

/* Appends the fixture at t through the model (pprof_decode + store__append) or
 * the flat path. */
static int append_fixture(struct store *s, int64_t t, bool flat, char *err, size_t errlen)
{
	struct store_label extra[] = {{"host", "h1"}, {"process", "overridden"}};
	struct pb *msg = calloc(1, sizeof(*msg));
	struct profile_flat *f = NULL;
	struct profile *p = NULL;
	int e = msg ? 0 : -ENOMEM;

	if (!e)
		flat_fixture(msg, t);
	if (!e && flat)
		e = pprof_decode_flat(msg->b, msg->n, &f, err, errlen)
			?: store__append_flat(s, f, NULL, extra, 2, NULL, err, errlen);
	else if (!e)
		e = pprof_decode(msg->b, msg->n, &p, err, errlen)
			?: store__append(s, p, NULL, extra, 2, NULL, err, errlen);
	profile_flat__free(f);
	profile__free(p);
	free(msg);
	return e;
}

/* Every intern table and chunk of a closed store, as text. */
static char *dump_store(const char *dir)
{
	static const char *const sql[] = {
	    "SELECT 'strings', id, hex(k) FROM strings ORDER BY id",
	    "SELECT 'mappings', id, hex(k) FROM mappings ORDER BY id",
	    "SELECT 'functions', id, hex(k) FROM functions ORDER BY id",
	    "SELECT 'locations', id, hex(k) FROM locations ORDER BY id",
	    "SELECT 'stacks', id, hex(k) FROM stacks ORDER BY id",
	    "SELECT 'series', id, hex(k) FROM series ORDER BY id",
	    "SELECT 'series_stacks', id, hex(k) FROM series_stacks ORDER BY id",
	    "SELECT 'chunk', level, t0, dur, nrows, samples, raw_len, hex(totals), hex(data) "
	    "FROM chunks ORDER BY level, t0",
	};
	char path[400], *buf = NULL;
	size_t len = 0;
	sqlite3 *db = NULL;
	FILE *out = open_memstream(&buf, &len);

	snprintf(path, sizeof(path), "%s/hearth.db", dir);
	if (!out || sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto cleanup;
	for (size_t q = 0; q < sizeof(sql) / sizeof(sql[0]); q++) {
		sqlite3_stmt *st = NULL;

		if (sqlite3_prepare_v2(db, sql[q], -1, &st, NULL) != SQLITE_OK)
			goto cleanup;
		while (sqlite3_step(st) == SQLITE_ROW) {
			for (int c = 0; c < sqlite3_column_count(st); c++)
				fprintf(out, "%s ", (const char *)sqlite3_column_text(st, c));
			fputc('\n', out);
		}
		sqlite3_finalize(st);
	}
cleanup:
	sqlite3_close(db);
	if (out)
		fclose(out);
	return buf;
}

TEST(flat_append_stores_what_the_model_path_stores)
{
	/* model twice, flat twice, model then flat: the second append of each finds
	 * everything in the location cache and the stack memo */
	static const bool paths[3][2] = {{false, false}, {true, true}, {false, true}};
	char dirs[3][300], err[256], *dumps[3] = {NULL, NULL, NULL}, *f = NULL;
	struct store *s = NULL;
	struct profile *m = NULL;
	/* addresses, as stored (not grouped per object as a user's view is) */
	struct query_request q = {
	    .from_ns = T0, .until_ns = T0 + 20 * S, .expand_unnamed = true};

	for (int k = 0; k < 3; k++) {
		snprintf(dirs[k], sizeof(dirs[k]), "%s/flat%d", unit_tmp_dir(), k);
		CHECK(store__open(dirs[k], &fast, &s, err, sizeof(err)) == 0);
		CHECKF(append_fixture(s, T0, paths[k][0], err, sizeof(err)) == 0, "%s", err);
		CHECKF(append_fixture(s, T0 + 10 * S, paths[k][1], err, sizeof(err)) == 0, "%s",
		       err);
		if (k == 1) { /* what a user reads back from the flat path */
			CHECKF(query_profile(s, &q, &m, err, sizeof(err)) == 0, "%s", err);
			CHECK((f = unit_folded(m)));
			/* an extra label fills in for a missing sample label */
			CHECKF(
			    strstr(f, "proc0;main;main;inl_b_[i];inl_a_[i];do_syscall_64_[k] "
				      "20\n") &&
				strstr(f, "proc0;main;app+0x1234 4\n") &&
				strstr(f, "proc1;main 2\n") && strstr(f, "proc1;main;inl_a 8\n") &&
				strstr(f, "overridden;main 10\n") && strstr(f, "overridden 12\n"),
			    "%s", f);
		}
		store__close(s);
		s = NULL;
		CHECK((dumps[k] = dump_store(dirs[k])));
	}
	CHECK(strstr(dumps[0], "chunk") && strstr(dumps[0], "series_stacks"));
	CHECKF(strcmp(dumps[0], dumps[1]) == 0, "model:\n%s\nflat:\n%s", dumps[0], dumps[1]);
	CHECKF(strcmp(dumps[0], dumps[2]) == 0, "model:\n%s\nmixed:\n%s", dumps[0], dumps[2]);
cleanup:
	for (int k = 0; k < 3; k++)
		free(dumps[k]);
	free(f);
	profile__free(m);
	store__close(s);
}

/* A profile at t of samples (process, count, stack of n of main/f0/g0 leaf first). */
struct smp_spec {
	const char *proc;
	int64_t count;
	int n;
	const char *frames[3];
};

static struct profile *spec_profile(int64_t t, const struct smp_spec *sp, size_t n)
{
	struct profile *p = profile__new(10000000);
	int err = p ? 0 : -ENOMEM;

	if (p)
		profile__set_time(p, t, 10 * S);
	for (size_t i = 0; i < n && !err; i++) {
		struct profile_label l[1] = {{"process", sp[i].proc, 0}};
		int64_t v[2] = {sp[i].count, sp[i].count * 10000000};
		uint64_t locs[3];

		for (int k = 0; k < sp[i].n; k++) {
			const char *fn = sp[i].frames[k];
			struct profile_line ln = {profile__function(p, fn, fn, "a.c"), 1};

			/* one address per function name: the same location everywhere */
			locs[k] = profile__location(p, 0, 0x1000 * (uint64_t)fn[0], &ln, 1);
		}
		err = profile__add_sample(p, locs, (size_t)sp[i].n, v, l, 1);
	}
	if (err) {
		profile__free(p);
		return NULL;
	}
	return p;
}

/* store__append, or the flat path for p encoded as a pprof. */
static int append_via(struct store *s, const struct profile *p, bool flat, char *err, size_t errlen)
{
	struct profile_flat *f = NULL;
	uint8_t *buf = NULL;
	size_t len;
	int e;

	if (!flat)
		return store__append(s, p, NULL, NULL, 0, NULL, err, errlen);
	e = pprof_encode(p, &buf, &len) ?: pprof_decode_flat(buf, len, &f, err, errlen);
	if (!e) {
		f->time_ns = profile__time_ns(p); /* the encoder keeps it; set it anyway */
		e = store__append_flat(s, f, NULL, NULL, 0, NULL, err, errlen);
	}
	profile_flat__free(f);
	free(buf);
	return e;
}

TEST(stack_memo_forgets_rolled_back_ids)
{
	static const struct smp_spec s1[] = {{"proc0", 1, 3, {"g0", "f0", "main"}}};
	/* a new stack of known locations, then a second series over the limit */
	static const struct smp_spec bad[] = {{"proc0", 2, 2, {"f0", "main"}},
					      {"proc1", 1, 1, {"main"}}};
	/* another new stack takes the rolled-back stack id */
	static const struct smp_spec s3[] = {{"proc0", 4, 1, {"main"}}};
	static const struct smp_spec s4[] = {{"proc0", 3, 2, {"f0", "main"}}};
	struct store_opts o = {
	    .sample_labels = ingest_sample_labels, .no_fsync = true, .max_series = 1};
	struct profile *p1 = spec_profile(T0, s1, 1), *pb = spec_profile(T0 + 10 * S, bad, 2);
	struct profile *p3 = spec_profile(T0 + 20 * S, s3, 1),
		       *p4 = spec_profile(T0 + 30 * S, s4, 1);
	struct query_request q = {.from_ns = T0 + 30 * S, .until_ns = T0 + 31 * S};
	struct profile *m = NULL;
	struct store *s = NULL;
	char dir[300], err[256], *f = NULL;

	CHECK(p1 && pb && p3 && p4);
	for (int flat = 0; flat < 2; flat++) {
		snprintf(dir, sizeof(dir), "%s/memo%d", unit_tmp_dir(), flat);
		CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
		CHECKF(append_via(s, p1, flat, err, sizeof(err)) == 0, "%s", err);
		CHECK(append_via(s, pb, flat, err, sizeof(err)) == -EDQUOT);
		CHECKF(append_via(s, p3, flat, err, sizeof(err)) == 0, "%s", err);
		CHECKF(append_via(s, p4, flat, err, sizeof(err)) == 0, "%s", err);
		CHECK(query_profile(s, &q, &m, err, sizeof(err)) == 0);
		CHECK((f = unit_folded(m)));
		CHECKF(strcmp(f, "proc0;main;f0 3\n") == 0, "%s path: %s", flat ? "flat" : "model",
		       f);
		free(f);
		f = NULL;
		profile__free(m);
		m = NULL;
		store__close(s);
		s = NULL;
	}
cleanup:
	free(f);
	profile__free(m);
	profile__free(p1);
	profile__free(pb);
	profile__free(p3);
	profile__free(p4);
	store__close(s);
}

static int ref_cmp(const void *x, const void *y)
{
	const struct store_crow *a = x, *b = y;

	if (a->series_id != b->series_id)
		return a->series_id < b->series_id ? -1 : 1;
	return a->stack_id < b->stack_id ? -1 : a->stack_id > b->stack_id;
}

TEST(rows_sort_merge_matches_a_plain_sort)
{
	/* small ids (one radix pass each), then ids spread over 64 bits (every pass) */
	static const uint64_t masks[2] = {0x3ff, ~0ull};
	struct store_rows rows = {0};
	struct store_crow *ref = NULL;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t n = 5000, w;

	for (int m = 0; m < 2; m++) {
		CHECK((ref = calloc(n, sizeof(*ref))));
		for (size_t i = 0; i < n; i++) {
			struct store_crow r = {0};

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			r.series_id = (x & masks[m]) % 97 * (masks[m] / 97 + 1);
			r.stack_id = (x >> 20) % 50 * (masks[m] / 50); /* duplicates */
			r.v[0] = (int64_t)(i + 1);
			r.v[1] = (int64_t)i * 3;
			ref[i] = r;
			CHECK(store_rows__push(&rows, &r) == 0);
		}
		store_rows__sort_merge(&rows);
		qsort(ref, n, sizeof(*ref), ref_cmp);
		w = 0;
		for (size_t i = 1; i < n; i++) {
			if (ref_cmp(&ref[w], &ref[i]) == 0) {
				ref[w].v[0] += ref[i].v[0];
				ref[w].v[1] += ref[i].v[1];
			} else {
				ref[++w] = ref[i];
			}
		}
		CHECKF(rows.n == w + 1 && rows.n < n, "%zu rows, want %zu", rows.n, w + 1);
		CHECK(memcmp(rows.r, ref, rows.n * sizeof(*ref)) == 0);
		free(ref);
		ref = NULL;
		store_rows__fini(&rows);
	}
cleanup:
	free(ref);
	store_rows__fini(&rows);
}

/* The flat form of a model is the model again: profile__from_flat of
 * profile__to_flat encodes to the same pprof bytes, comments and numeric
 * labels included, so store__append (which stores the flat form) stores what
 * the model holds. */
TEST(model_to_flat_round_trips)
{
	struct profile *p = make(T0, 3, 4, 2), *back = NULL;
	struct profile_flat *f = NULL;
	uint8_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;

	CHECK(p && profile__add_comment(p, "dropped 3 samples") == 0);
	CHECK(profile__to_flat(p, &f) == 0);
	CHECK(f->time_ns == T0 && f->duration_ns == 10 * S && f->period_ns == 10000000);
	CHECK(f->n_samples == profile__n_samples(p) && f->n_comments == 1);
	CHECK(profile__from_flat(f, &back) == 0);
	CHECK(pprof_encode(p, &a, &na) == 0 && pprof_encode(back, &b, &nb) == 0);
	CHECKF(na == nb && memcmp(a, b, na) == 0, "%zu bytes vs %zu", na, nb);
cleanup:
	free(a);
	free(b);
	profile__free(back);
	profile_flat__free(f);
	profile__free(p);
}
