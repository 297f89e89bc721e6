/*
 * Tests of src/query: the selector parser (good and bad input, with the error
 * naming the problem), time and duration parsing, and every operation over a
 * small store: labels, label values, series, merged profile by selector, flame
 * tree, top table, diff and timeline (with groupBy and its limits).
 */
#include "unit.h"

#include "ingest/ingest.h"
#include "query/query.h"
#include "query/query_impl.h" /* query_diff_by_node */
#include "base/base.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define S  1000000000LL
#define T0 (1700000000LL * S)

TEST(selector_parses)
{
	struct query_selector *sel = NULL;
	char err[256];

	CHECK(query_selector__parse("{a=\"x\", b!=\"y\", c=~\"re.*\", d!~'q' ,}", &sel, err,
				    sizeof(err)) == 0);
	CHECK(sel->n == 4);
	CHECK_STREQ(sel->m[0].name, "a");
	CHECK(sel->m[1].op == QUERY_OP_NEQ && sel->m[2].op == QUERY_OP_RE &&
	      sel->m[3].op == QUERY_OP_NRE);
	CHECK_STREQ(sel->m[3].value, "q");
	query_selector__free(sel);
	sel = NULL;
	CHECK(query_selector__parse("my-app.cpu{x=\"a\\\"b\"}", &sel, err, sizeof(err)) == 0);
	CHECK(sel->n == 2);
	CHECK_STREQ(sel->m[0].name, INGEST_NAME_LABEL);
	CHECK_STREQ(sel->m[0].value, "my-app.cpu");
	CHECK_STREQ(sel->m[1].value, "a\"b");
	query_selector__free(sel);
	sel = NULL;
	CHECK(query_selector__parse("", &sel, err, sizeof(err)) == 0 && sel->n == 0);
	query_selector__free(sel);
	sel = NULL;
	CHECK(query_selector__parse(" {} ", &sel, err, sizeof(err)) == 0 && sel->n == 0);
cleanup:
	query_selector__free(sel);
}

TEST(selector_errors_name_the_problem)
{
	static const struct {
		const char *in, *msg;
		int code;
	} cases[] = {
	    {"{a=\"x\"", "expected ',' or '}'", -EINVAL},
	    {"{a=x}", "expected a quoted value", -EINVAL},
	    {"{a==\"x\"}", "expected a quoted value", -EINVAL},
	    {"{a~\"x\"}", "expected one of", -EINVAL},
	    {"{=\"x\"}", "expected a label name", -EINVAL},
	    {"{a=\"x}", "unterminated string", -EINVAL},
	    {"{a=~\"(\"}", "bad regex for label a", -EINVAL},
	    {"{a=\"x\"} junk", "unexpected 'j'", -EINVAL},
	    {"{a=~\"x", "unterminated string", -EINVAL},
	    {"{a=~\"x++++++++++++\"}", "invalid nested repetition operator", -EINVAL},
	    {"{a=~\"((a{99}){99}){99}\"}", "program over 4096 instructions", -EINVAL},
	};
	struct query_selector *sel = NULL;
	char err[256], big[QUERY_MAX_SELECTOR_LEN + 10], *many = NULL;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		CHECKF(query_selector__parse(cases[i].in, &sel, err, sizeof(err)) == cases[i].code,
		       "%s", cases[i].in);
		CHECKF(sel == NULL && strstr(err, cases[i].msg), "%s: %s", cases[i].in, err);
	}
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK(query_selector__parse(big, &sel, err, sizeof(err)) == -E2BIG);
	many = calloc(1, 40 * 10 + 3);
	CHECK(many);
	strcpy(many, "{");
	for (int i = 0; i < 40; i++)
		strcat(many, "a=\"b\",");
	strcat(many, "}");
	CHECK(query_selector__parse(many, &sel, err, sizeof(err)) == -E2BIG);
cleanup:
	free(many);
	query_selector__free(sel);
}

TEST(times_and_durations)
{
	int64_t t, f, u, now = T0;
	char err[256];

	CHECK(base_time_parse("now", now, &t, err, sizeof(err)) == 0 && t == now);
	CHECK(base_time_parse("now-1h", now, &t, err, sizeof(err)) == 0 && t == now - 3600 * S);
	CHECK(base_time_parse("now-1h30m", now, &t, err, sizeof(err)) == 0 && t == now - 5400 * S);
	CHECK(base_time_parse("1700000000", now, &t, err, sizeof(err)) == 0 && t == T0);
	CHECK(base_time_parse("1700000000123", now, &t, err, sizeof(err)) == 0 &&
	      t == T0 + 123000000);
	CHECK(base_time_parse("1700000000123456", now, &t, err, sizeof(err)) == 0 &&
	      t == T0 + 123456000);
	CHECK(base_time_parse("1700000000123456789", now, &t, err, sizeof(err)) == 0 &&
	      t == T0 + 123456789);
	CHECK(base_time_parse("tomorrow", now, &t, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "tomorrow") && strstr(err, "2026-11-27T10:00:00Z"));
	CHECK(base_time_parse("yesterday", now, &t, err, sizeof(err)) == 0 &&
	      t == now - now % (86400 * S) - 86400 * S);
	CHECK(query_parse_range_named("leftfrom", "noon", "leftuntil", NULL, now, &f, &u, err,
				      sizeof(err)) == -EINVAL);
	CHECKF(!strncmp(err, "leftfrom: invalid time \"noon\"", 29), "%s", err);
	CHECK(query_parse_range_named("--from", NULL, "--until", "2026-02-30", now, &f, &u, err,
				      sizeof(err)) == -EINVAL);
	CHECKF(!strncmp(err, "--until: ", 9), "%s", err);
	/* until at INT64_MIN ns and no from: the default hour saturates (found by fuzz_time) */
	CHECK(query_parse_range(NULL, "1677-09-21T00:12:43.145224192Z", now, &f, &u, err,
				sizeof(err)) == 0 &&
	      u == INT64_MIN && f == INT64_MIN);
	CHECK(base_time_parse("now-1x", now, &t, err, sizeof(err)) == -EINVAL);
	CHECK(base_time_parse("99999999999999999999", now, &t, err, sizeof(err)) == -EINVAL);
	CHECK(base_duration_parse("10s", &t, err, sizeof(err)) == 0 && t == 10 * S);
	CHECK(base_duration_parse("60", &t, err, sizeof(err)) == 0 && t == 60 * S);
	CHECK(base_duration_parse("0", &t, err, sizeof(err)) == -ERANGE);
	CHECK(base_duration_parse("1q", &t, err, sizeof(err)) == -EINVAL);
	CHECK(query_parse_range(NULL, NULL, now, &f, &u, err, sizeof(err)) == 0 && u == now &&
	      f == now - 3600 * S);
	CHECK(query_parse_range("now", "now-1h", now, &f, &u, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "is after until"), "%s", err);
cleanup:;
}

/* Every row of tests/unit/data/times.tsv (the one time rule, shared with the
 * UI's test): the parsed nanoseconds, or a refusal whose message names the input. */
TEST(time_rule_table_boundaries)
{
	char path[512], line[256], err[256];
	FILE *f;
	int rows = 0;

	snprintf(path, sizeof(path), "%s/times.tsv", unit_data_dir());
	f = fopen(path, "r");
	CHECKF(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t'), *want;
		int64_t t = -1;
		int ret;

		if (line[0] == '#' || !tab)
			continue;
		*tab = 0;
		want = tab + 1;
		want[strcspn(want, "\n")] = 0;
		ret = base_time_parse(line, T0, &t, err, sizeof(err));
		if (!strcmp(want, "refused")) {
			CHECKF(ret == -EINVAL, "\"%s\": want refused, got %lld", line,
			       (long long)t);
			CHECKF(strstr(err, line), "\"%s\": message \"%s\"", line, err);
		} else {
			CHECKF(ret == 0 && t == strtoll(want, NULL, 10),
			       "\"%s\": want %s, got %d %lld (%s)", line, want, ret, (long long)t,
			       ret ? err : "");
		}
		rows++;
	}
	CHECKF(rows > 40, "only %d rows in %s", rows, path);
cleanup:
	if (f)
		fclose(f);
}

/* A store with two hosts: host a runs proc0 (hot:30 cold:10), host b proc1 (hot:5). */
static struct store *fixture(const char *name)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {.sample_labels = ingest_sample_labels, .no_fsync = true};

	snprintf(dir, sizeof(dir), "%s/%s", unit_tmp_dir(), name);
	if (store__open(dir, &o, &s, err, sizeof(err)))
		return NULL;
	for (int h = 0; h < 2; h++)
		for (int i = 0; i < 6; i++) {
			struct profile *p = profile__new(10000000);
			struct store_label extra[] = {{"host", h ? "b" : "a"}};
			struct profile_label l[] = {{"process", h ? "proc1" : "proc0", 0},
						    {"pid", NULL, 10 + h}};
			uint64_t fm = profile__function(p, "main", NULL, NULL);
			uint64_t fh = profile__function(p, "hot", NULL, NULL);
			uint64_t fc = profile__function(p, "cold", NULL, NULL);
			struct profile_line lm = {fm, 0}, lh = {fh, 0}, lc = {fc, 0};
			uint64_t a[2] = {profile__location(p, 0, 2, &lh, 1),
					 profile__location(p, 0, 1, &lm, 1)};
			uint64_t b[2] = {profile__location(p, 0, 3, &lc, 1), a[1]};
			int64_t vh[2] = {h ? 5 : 30, 0}, vc[2] = {10, 0};

			profile__set_time(p, T0 + i * 10 * S, 10 * S);
			int e = profile__add_sample(p, a, 2, vh, l, 2) ?:
				(h ? 0 : profile__add_sample(p, b, 2, vc, l, 2)) ?:
				store__append(s, p, NULL, extra, 1, NULL, err, sizeof(err));
			profile__free(p);
			if (e) {
				store__close(s);
				return NULL;
			}
		}
	return s;
}

/* Runs fn into a string. */
#define CAPTURE(buf, call)                                                                         \
	do {                                                                                       \
		size_t len_;                                                                       \
		FILE *out = open_memstream(&buf, &len_);                                           \
		CHECK(out);                                                                        \
		rc = call;                                                                         \
		fclose(out);                                                                       \
	} while (0)

/* Counts the nodes of a tree answer. */
/* Nodes of a tree or diff answer (a diff's "functions" rows are not nodes). */
static size_t count_nodes(const char *json)
{
	const char *end = strstr(json, ",\"functions\":[");
	size_t n = 0;

	for (const char *c = json; (c = strstr(c, "{\"name\":")) && (!end || c < end); c++)
		n++;
	return n;
}

TEST(listings)
{
	struct store *s = fixture("listings");
	struct query_request q = {.from_ns = T0, .until_ns = T0 + 3600 * S};
	char err[256], *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *f = NULL, *t = NULL;
	int rc;

	CHECK(s);
	CAPTURE(a, query_labels_json(s, &q, out, err, sizeof(err)));
	CHECK(rc == 0);
	CHECK_STREQ(a, "[\"__profile_type__\",\"host\",\"pid\",\"process\"]\n");
	CAPTURE(b, query_label_values_json(s, "host", &q, out, err, sizeof(err)));
	CHECK_STREQ(b, "[\"a\",\"b\"]\n");
	CAPTURE(t, query_label_values_json(s, STORE_PROFILE_TYPE_LABEL, &q, out, err, sizeof(err)));
	CHECK_STREQ(t, "[\"" STORE_CPU_PROFILE_TYPE "\"]\n");
	q.query = "{host=\"b\"}";
	CAPTURE(c, query_series_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(c, "\"process\":\"proc1\"") && !strstr(c, "proc0"), "%s", c);
	/* no data in range: no series */
	q.from_ns = T0 + 3600 * S;
	q.until_ns = T0 + 7200 * S;
	CAPTURE(d, query_series_json(s, &q, out, err, sizeof(err)));
	CHECK_STREQ(d, "[]\n");
	/* nor any label name or value */
	q.query = NULL;
	CAPTURE(e, query_labels_json(s, &q, out, err, sizeof(err)));
	CHECK_STREQ(e, "[]\n");
	CAPTURE(f, query_label_values_json(s, "host", &q, out, err, sizeof(err)));
	CHECK_STREQ(f, "[]\n");
cleanup:
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
	free(f);
	free(t);
	store__close(s);
}

/*
 * Several selectors in one request (Connect's matchers): one pass selects the
 * series any of them matches; more than QUERY_MAX_MATCHERS is refused with the
 * count and the limit (a request once held 1,000,000 and ran one query each).
 */
TEST(listings_of_several_selectors_and_their_limit)
{
	struct store *s = fixture("listings_union");
	const char *two[] = {"{host=\"a\"}", "{host=~\"b\"}"}, *one[] = {"{host=\"a\"}"};
	const char *many[QUERY_MAX_MATCHERS + 1];
	struct query_request q = {
	    .from_ns = T0, .until_ns = T0 + 3600 * S, .queries = two, .n_queries = 2};
	char err[256] = "", *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	int rc;

	CHECK(s);
	CAPTURE(a, query_label_values_json(s, "host", &q, out, err, sizeof(err)));
	CHECKF(rc == 0, "%d %s", rc, err);
	CHECK_STREQ(a, "[\"a\",\"b\"]\n");
	q.queries = one;
	q.n_queries = 1;
	CAPTURE(b, query_label_values_json(s, "process", &q, out, err, sizeof(err)));
	CHECK_STREQ(b, "[\"proc0\"]\n");
	for (size_t i = 0; i <= QUERY_MAX_MATCHERS; i++)
		many[i] = "{}";
	q.queries = many;
	q.n_queries = QUERY_MAX_MATCHERS; /* at the limit: served */
	CAPTURE(c, query_series_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(c, "proc0") && strstr(c, "proc1"), "%d %s", rc, err);
	q.n_queries = QUERY_MAX_MATCHERS + 1;
	CAPTURE(d, query_labels_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == -E2BIG && strstr(err, "33 label selectors") && strstr(err, "at most 32"),
	       "%d %s", rc, err);
cleanup:
	free(a);
	free(b);
	free(c);
	free(d);
	store__close(s);
}

TEST(profile_tree_top_by_host)
{
	struct store *s = fixture("tree");
	struct query_request q = {.query = "{host=\"a\"}", .from_ns = T0, .until_ns = T0 + 60 * S};
	struct profile *p = NULL;
	char err[256], *t = NULL, *top = NULL, *small = NULL;
	int rc;

	CHECK(s);
	CHECK(query_profile(s, &q, &p, err, sizeof(err)) == 0);
	CHECK(profile__total(p, 0) == 240); /* 6 x (30 + 10) */
	CAPTURE(t, query_tree_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 &&
		   strstr(t, "{\"unit\":\"samples\",\"total\":240,\"tree\":{\"name\":\"total\""),
	       "%s", t);
	CHECKF(strstr(t, "{\"name\":\"hot\",\"self\":180,\"total\":180}"), "%s", t);
	CAPTURE(top, query_top_json(s, &q, out, err, sizeof(err)));
	CHECKF(strstr(top, "\"rows\":[{\"name\":\"hot\",\"self\":180,\"total\":180},"), "%s", top);
	CHECKF(strstr(top, "{\"name\":\"main\",\"self\":0,\"total\":240}"), "%s", top);
	q.max_nodes = 2;
	CAPTURE(small, query_tree_json(s, &q, out, err, sizeof(err)));
	CHECKF(!strstr(small, "cold") && !strstr(small, "hot") && strstr(small, "main"), "%s",
	       small);
	profile__free(p);
	p = NULL;
	q.query = "{host=~\"[\"}";
	CHECK(query_profile(s, &q, &p, err, sizeof(err)) == -EINVAL && p == NULL);
	q.query = NULL;
	q.from_ns = T0 + 1;
	q.until_ns = T0;
	CHECK(query_profile(s, &q, &p, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "is after until"), "%s", err);
cleanup:
	free(t);
	free(top);
	free(small);
	profile__free(p);
	store__close(s);
}

/*
 * Series that differ only by a label samples do not carry (host) give equal
 * samples: the merge sums them into one, as profile__add_sample would. Host a
 * and host c both run proc0 (pid 10): hot 30 + cold 10 each, 6 profiles each.
 */
TEST(series_with_equal_sample_labels_merge_into_one_sample)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {.sample_labels = ingest_sample_labels, .no_fsync = true};
	struct query_request q = {.from_ns = T0, .until_ns = T0 + 60 * S};
	struct profile *p = NULL;
	struct profile_sample sm;

	snprintf(dir, sizeof(dir), "%s/equal_labels", unit_tmp_dir());
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	for (int h = 0; h < 2; h++)
		for (int i = 0; i < 6; i++) {
			struct profile *in = profile__new(10000000);
			struct store_label extra[] = {{"host", h ? "c" : "a"}};
			struct profile_label l[] = {{"process", "proc0", 0}, {"pid", NULL, 10}};
			uint64_t fm = profile__function(in, "main", NULL, NULL);
			uint64_t fh = profile__function(in, "hot", NULL, NULL);
			uint64_t fc = profile__function(in, "cold", NULL, NULL);
			struct profile_line lm = {fm, 0}, lh = {fh, 0}, lc = {fc, 0};
			uint64_t a[2] = {profile__location(in, 0, 2, &lh, 1),
					 profile__location(in, 0, 1, &lm, 1)};
			uint64_t b[2] = {profile__location(in, 0, 3, &lc, 1), a[1]};
			int64_t vh[2] = {30, 0}, vc[2] = {10, 0};
			int e;

			profile__set_time(in, T0 + i * 10 * S, 10 * S);
			e = profile__add_sample(in, a, 2, vh, l, 2) ?:
			    profile__add_sample(in, b, 2, vc, l, 2) ?:
			    store__append(s, in, NULL, extra, 1, NULL, err, sizeof(err));
			profile__free(in);
			CHECKF(e == 0, "%s", err);
		}
	CHECK(query_profile(s, &q, &p, err, sizeof(err)) == 0);
	CHECKF(profile__n_samples(p) == 2, "%zu samples", profile__n_samples(p));
	CHECK(profile__total(p, 0) == 480); /* 2 hosts x 6 x (30 + 10) */
	CHECK(profile__sample(p, 0, &sm) == 0 && sm.values[0] == 360 && sm.n_labels == 2);
	CHECK(profile__sample(p, 1, &sm) == 0 && sm.values[0] == 120);
	profile__free(p);
	p = NULL;
	/* one host: the same two samples, halved */
	q.query = "{host=\"c\"}";
	CHECK(query_profile(s, &q, &p, err, sizeof(err)) == 0);
	CHECK(profile__n_samples(p) == 2 && profile__total(p, 0) == 240);
cleanup:
	profile__free(p);
	store__close(s);
}

TEST(diff_and_timeline)
{
	struct store *s = fixture("diff");
	struct query_request l = {.query = "{host=\"a\"}", .from_ns = T0, .until_ns = T0 + 60 * S};
	struct query_request r = {.query = "{host=\"b\"}", .from_ns = T0, .until_ns = T0 + 60 * S};
	struct query_request tl = {
	    .from_ns = T0, .until_ns = T0 + 60 * S, .step_ns = 20 * S, .group_by = "host"};
	char err[256], *d = NULL, *t = NULL;
	int rc;

	CHECK(s);
	CAPTURE(d, query_diff_json(s, &l, &r, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(d, "\"left\":240,\"right\":30"), "%s", d);
	CHECKF(strstr(d, "{\"name\":\"hot\",\"self\":[180,30],\"total\":[180,30]}"), "%s", d);
	CAPTURE(t, query_timeline_json(s, &tl, out, err, sizeof(err)));
	CHECKF(rc == 0 &&
		   strstr(t, "\"step\":20000,\"groups\":[{\"group\":\"a\",\"values\":[80,80,80]},"
			     "\n{\"group\":\"b\",\"values\":[10,10,10]}]"),
	       "%s", t);
	free(t);
	t = NULL;
	tl.step_ns = 1000000; /* 60000 points */
	CAPTURE(t, query_timeline_json(s, &tl, out, err, sizeof(err)));
	CHECKF(rc == -E2BIG && strstr(err, "points"), "%s", err);
	free(t);
	t = NULL;
	tl.step_ns = 0;
	tl.group_by = "a b";
	CAPTURE(t, query_timeline_json(s, &tl, out, err, sizeof(err)));
	CHECK(rc == -EINVAL);
cleanup:
	free(d);
	free(t);
	store__close(s);
}

/*
 * Two stacks of INT64_MAX samples each (a crafted pprof can say so): every
 * total saturates at INT64_MAX instead of wrapping to -2, and ranges and steps
 * near INT64_MAX are answered (UBSan aborts this binary on any overflow).
 */
TEST(values_saturate_and_ranges_near_int64_max)
{
	struct store_opts o = {.sample_labels = ingest_sample_labels, .no_fsync = true};
	struct store *s = NULL;
	struct profile *p = profile__new(10000000);
	struct store_label extra[] = {{"host", "max"}};
	struct query_request q = {.from_ns = T0 - S, .until_ns = T0 + 60 * S, .step_ns = 10 * S};
	char dir[300], err[256], *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
	int64_t v[2] = {INT64_MAX, INT64_MAX}, ns;
	int rc;

	snprintf(dir, sizeof(dir), "%s/saturate", unit_tmp_dir());
	CHECK(p && store__open(dir, &o, &s, err, sizeof(err)) == 0);
	{
		struct profile_line lh = {profile__function(p, "hot", NULL, NULL), 0};
		struct profile_line lc = {profile__function(p, "cold", NULL, NULL), 0};
		uint64_t h = profile__location(p, 0, 1, &lh, 1),
			 k = profile__location(p, 0, 2, &lc, 1);

		profile__set_time(p, T0, 10 * S);
		CHECK(profile__add_sample(p, &h, 1, v, NULL, 0) == 0);
		CHECK(profile__add_sample(p, &k, 1, v, NULL, 0) == 0);
		CHECKF(store__append(s, p, NULL, extra, 1, NULL, err, sizeof(err)) == 0, "%s", err);
	}
	CAPTURE(a, query_tree_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(a, "\"total\":9223372036854775807,\"tree\""), "%s", a);
	CAPTURE(b, query_top_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(b, "9223372036854775807") && !strstr(b, "-"), "%s", b);
	CAPTURE(c, query_timeline_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(c, "\"values\":[9223372036854775807,0,0"), "%s", c);
	/* The whole int64 range, auto step: refused (too many points) or answered. */
	q.from_ns = 0;
	q.until_ns = INT64_MAX;
	q.step_ns = 0;
	CAPTURE(d, query_timeline_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 || rc == -E2BIG, "%d %s", rc, err);
	q.from_ns = -7427701147406097483; /* now-15250w */
	q.step_ns = INT64_MAX - 10;
	CAPTURE(e, query_timeline_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 || rc == -E2BIG, "%d %s", rc, err);
	free(a);
	a = NULL;
	q.from_ns = INT64_MAX - 10; /* the last 10 ns of the int64 range: no window fits */
	q.until_ns = INT64_MAX;
	CAPTURE(a, query_tree_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(a, "\"total\":0,"), "%d %s", rc, a ? a : err);
	CHECK(base_duration_parse("9999999999", &ns, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "9999999999"), "%s", err);
cleanup:
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
	profile__free(p);
	store__close(s);
}

/* main (app) -> work (libc.so.6) -> sys_read (kernel); main -> unmapped frame. */
TEST(tree_names_modules)
{
	struct profile *p = profile__new(10000000);
	struct store_opts o = {.no_fsync = true};
	struct store *s = NULL;
	struct query_request q = {.from_ns = T0, .until_ns = T0 + 60 * S};
	char dir[300], err[256], *t = NULL, *top = NULL;
	int rc;

	snprintf(dir, sizeof(dir), "%s/modules", unit_tmp_dir());
	CHECK(p && store__open(dir, &o, &s, err, sizeof(err)) == 0);
	uint64_t ma = profile__mapping(p, 0x1000, 0x2000, 0, "/usr/bin/app", "");
	uint64_t ml = profile__mapping(p, 0x7000, 0x8000, 0, "/lib/x86_64-linux-gnu/libc.so.6", "");
	uint64_t mk = profile__mapping(p, 0xffff0000, 0xffffffff, 0, PROFILE_KERNEL_MAPPING, "");
	struct profile_line lm = {profile__function(p, "main", NULL, NULL), 0},
			    lw = {profile__function(p, "work", NULL, NULL), 0},
			    lk = {profile__function(p, "sys_read", NULL, NULL), 0},
			    lu = {profile__function(p, "jit", NULL, NULL), 0};
	uint64_t s1[3] = {profile__location(p, mk, 0xffff0010, &lk, 1),
			  profile__location(p, ml, 0x7010, &lw, 1),
			  profile__location(p, ma, 0x1010, &lm, 1)};
	uint64_t s2[2] = {profile__location(p, 0, 0x9999, &lu, 1), s1[2]};
	int64_t v1[2] = {7, 0}, v2[2] = {3, 0};

	CHECK(profile__add_sample(p, s1, 3, v1, NULL, 0) == 0);
	CHECK(profile__add_sample(p, s2, 2, v2, NULL, 0) == 0);
	struct profile_line lx = {profile__function(p, "we\"ird\\na\001me", NULL, NULL), 0};
	uint64_t s3[2] = {profile__location(p, 0, 0x7777, &lx, 1), s1[2]};
	int64_t v3[2] = {1, 0};

	CHECK(profile__add_sample(p, s3, 2, v3, NULL, 0) == 0);
	profile__set_time(p, T0, 10 * S);
	CHECKF(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0, "%s", err);
	CAPTURE(t, query_tree_json(s, &q, out, err, sizeof(err)));
	CHECK(rc == 0);
	CHECKF(strstr(t, "{\"name\":\"main\",\"module\":\"app\",\"self\":0,\"total\":11"), "%s", t);
	CHECKF(strstr(t, "{\"name\":\"work\",\"module\":\"libc.so.6\",\"self\":0,\"total\":7"),
	       "%s", t);
	CHECKF(strstr(t, "{\"name\":\"sys_read_[k]\",\"module\":\"[kernel]\",\"self\":7"), "%s", t);
	/* names are JSON-escaped: quote, backslash, control character */
	CHECKF(strstr(t, "{\"name\":\"we\\\"ird\\\\na\\u0001me\",\"self\":1,\"total\":1}"), "%s",
	       t);
	/* no mapping: no module key at all (the UI falls back to the name) */
	CHECKF(strstr(t, "{\"name\":\"jit\",\"self\":3,\"total\":3}"), "%s", t);
	CHECKF(!strstr(t, "{\"name\":\"total\",\"module\""), "%s", t);
	/* module names are not functions: the top table does not list them */
	CAPTURE(top, query_top_json(s, &q, out, err, sizeof(err)));
	CHECK(rc == 0);
	CHECKF(strstr(top, "{\"name\":\"we\\\"ird\\\\na\\u0001me\",\"self\":1,\"total\":1}"), "%s",
	       top);
	CHECKF(strstr(top, "\"name\":\"main\"") && !strstr(top, "\"name\":\"app\"") &&
		   !strstr(top, "\"name\":\"[kernel]\"") && !strstr(top, "libc.so.6"),
	       "%s", top);
	/* the web UI asks for 100,000-node trees */
	CHECK(QUERY_MAX_NODES >= 200000);
cleanup:
	free(t);
	free(top);
	profile__free(p);
	store__close(s);
}

/*
 * The top table is profile/top.c's, over the whole merge: f inlined into g in
 * one stack (3) and called from main in another (2) is one row "f" of self 5,
 * as in `pprof -top` (query/tree.c's own table had rows "f" 2 and "f_[i]" 3);
 * and leaf, at the end of 40 stacks main -> aN -> leaf of 1 each, keeps its
 * self 40 when a tree of 20 nodes drops most of its frames (the web UI summed
 * its table from that pruned tree: leaf self 18 or less).
 */
TEST(top_counts_inlined_and_pruned_functions_as_pprof)
{
	struct profile *p = profile__new(10000000);
	struct store_opts o = {.no_fsync = true};
	struct store *s = NULL;
	struct query_request q = {.from_ns = T0, .until_ns = T0 + 60 * S, .max_nodes = 20};
	char dir[300], err[256], *top = NULL, *t = NULL, *both = NULL;
	int rc;

	snprintf(dir, sizeof(dir), "%s/top_inline", unit_tmp_dir());
	CHECK(p && store__open(dir, &o, &s, err, sizeof(err)) == 0);
	{
		uint64_t ff = profile__function(p, "f", NULL, NULL),
			 fg = profile__function(p, "g", NULL, NULL),
			 fm = profile__function(p, "main", NULL, NULL),
			 fl = profile__function(p, "leaf", NULL, NULL);
		struct profile_line in[2] = {{ff, 0}, {fg, 0}}, lf = {ff, 0}, lm = {fm, 0},
				    ll = {fl, 0};
		uint64_t main_loc = profile__location(p, 0, 0x1000, &lm, 1);
		uint64_t a[2] = {profile__location(p, 0, 0x2000, in, 2), main_loc};
		uint64_t b[2] = {profile__location(p, 0, 0x3000, &lf, 1), main_loc};
		int64_t va[2] = {3, 0}, vb[2] = {2, 0}, v1[2] = {1, 0};

		CHECK(profile__add_sample(p, a, 2, va, NULL, 0) == 0);
		CHECK(profile__add_sample(p, b, 2, vb, NULL, 0) == 0);
		for (int i = 0; i < 40; i++) {
			char name[16];
			struct profile_line la;

			snprintf(name, sizeof(name), "a%d", i);
			la = (struct profile_line){profile__function(p, name, NULL, NULL), 0};
			uint64_t c[3] = {profile__location(p, 0, 0x5000 + i * 16, &ll, 1),
					 profile__location(p, 0, 0x4000 + i * 16, &la, 1),
					 main_loc};
			CHECK(profile__add_sample(p, c, 3, v1, NULL, 0) == 0);
		}
	}
	profile__set_time(p, T0, 10 * S);
	CHECKF(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0, "%s", err);
	CAPTURE(t, query_tree_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(t, "\"name\":\"f_[i]\"") && count_nodes(t) == 20, "%s", t);
	CAPTURE(top, query_top_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(top, "{\"unit\":\"samples\",\"total\":45,\"rows\":["
				      "{\"name\":\"leaf\",\"self\":40,\"total\":40},\n"
				      "{\"name\":\"f\",\"self\":5,\"total\":5},"),
	       "%s", top);
	CHECKF(strstr(top, "{\"name\":\"g\",\"self\":0,\"total\":3}") && !strstr(top, "_[i]"), "%s",
	       top);
	CHECKF(strstr(top, "{\"name\":\"main\",\"self\":0,\"total\":45}"), "%s", top);
	/* the tree answer carries the same table when asked (the web UI's one request) */
	q.top_rows = q.max_nodes; /* the same rows as query_top_json above */
	CAPTURE(both, query_tree_json(s, &q, out, err, sizeof(err)));
	top[strlen(top) - 1] = '\0'; /* the newline */
	t[strlen(t) - 2] = '\0';     /* "}\n" */
	CHECKF(rc == 0 && strncmp(both, t, strlen(t)) == 0 &&
		   strncmp(both + strlen(t), ",\"top\":", 7) == 0 &&
		   strncmp(both + strlen(t) + 7, top, strlen(top)) == 0 &&
		   strcmp(both + strlen(t) + 7 + strlen(top), "}\n") == 0,
	       "%s", both);
cleanup:
	free(t);
	free(top);
	free(both);
	profile__free(p);
	store__close(s);
}

/*
 * A store where stacks repeat across series and profiles, with inlined lines,
 * kernel frames, unsymbolized addresses and unmapped locations: the material on
 * which the merge by stack (query_stacks) must answer what the merge into a
 * profile answers.
 */
static struct store *mixed_fixture(const char *name)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {
	    .sample_labels = ingest_sample_labels, .no_fsync = true, .no_auto_rollup = true};
	uint64_t rng = 12345;

	snprintf(dir, sizeof(dir), "%s/%s", unit_tmp_dir(), name);
	if (store__open(dir, &o, &s, err, sizeof(err)))
		return NULL;
	for (int i = 0; i < 30; i++) {
		struct profile *p = profile__new(10000000);
		struct store_label extra[] = {{"host", i % 2 ? "b" : "a"}};
		uint64_t maps[3], locs[24], stack[8];
		int e = p ? 0 : -ENOMEM;

		if (e)
			break;
		maps[0] = profile__mapping(p, 0x1000, 0x9000, 0, "/usr/bin/app", "");
		maps[1] = profile__mapping(p, 0x10000, 0x20000, 0x1000, "/lib/libx.so", "");
		maps[2] =
		    profile__mapping(p, 0xffff0000, 0xffffffff, 0, PROFILE_KERNEL_MAPPING, "");
		for (int l = 0; l < 24; l++) {
			char fn[32];
			struct profile_line ln[2];

			snprintf(fn, sizeof(fn), "f%d", l % 13);
			ln[0] = (struct profile_line){profile__function(p, fn, NULL, NULL), l};
			snprintf(fn, sizeof(fn), "g%d", l % 5);
			ln[1] = (struct profile_line){profile__function(p, fn, NULL, NULL), 0};
			/* 0-2 lines (0: named by address), mapping or none */
			locs[l] = profile__location(p, l % 7 == 6 ? 0 : maps[l % 3],
						    (l % 3 == 2 ? 0xffff0100 : 0x1100) + l * 16, ln,
						    (size_t)(l % 3));
		}
		for (int k = 0; k < 40 && !e; k++) {
			char pid[16];
			size_t n = 1 + (rng >> 33) % 8;
			int64_t v[2];

			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			snprintf(pid, sizeof(pid), "%d", (int)((rng >> 40) % 5));
			struct profile_label lab[] = {{"pid", pid, 0}};
			for (size_t d = 0; d < n; d++) {
				rng = rng * 6364136223846793005ull + 1442695040888963407ull;
				/* few distinct stacks: shallow choices repeat */
				stack[d] = locs[(rng >> 35) % (d < 3 ? 4 : 24)];
			}
			v[0] = 1 + (int64_t)((rng >> 20) % 9);
			v[1] = v[0] * 10000000 + (int64_t)((rng >> 50) % 3);
			e = profile__add_sample(p, stack, n, v, lab, 1);
		}
		profile__set_time(p, T0 + i * 10 * S, 10 * S);
		e = e ?: store__append(s, p, NULL, extra, 1, NULL, err, sizeof(err));
		profile__free(p);
		if (e) {
			store__close(s);
			return NULL;
		}
	}
	/* rollups of the first minutes: a range reads them and raw chunks */
	if (store__maintain(s, T0 + 240 * S, NULL)) {
		store__close(s);
		return NULL;
	}
	return s;
}

/* profile/top.c's rows of p's samples in query_top_json's JSON: the table of the
 * merge into a profile, to compare with the merge by stack. */
static int top_of_samples(const struct profile *p, int vi, size_t max, FILE *out)
{
	struct top *t = NULL;
	struct query_top qt = {0};
	struct profile_sample sm;
	int e = top__new(p, vi, &t);

	for (size_t i = 0; !e && i < profile__n_samples(p); i++)
		e = profile__sample(p, i, &sm) ?: top__add(t, sm.locs, sm.n_locs, sm.values[vi]);
	e = e ?: query_top__from(&qt, t, vi, max) ?: query_top__write_json(&qt, out);
	fputc('\n', out);
	query_top__fini(&qt);
	top__free(t);
	return e;
}

/*
 * Tree, top and diff JSON of a request are written from the merge by stack
 * (query_stacks); they must answer for the merge into a profile (query_profile):
 * the same totals, and the top table the one profile/top.c makes of its samples.
 */
TEST(merge_by_stack_answers_as_the_profile_merge)
{
	struct store *s = mixed_fixture("mixed");
	struct query_request q = {.from_ns = T0 + 5 * S, .until_ns = T0 + 290 * S};
	struct query_request r = {.query = "{host=\"b\"}", .from_ns = T0, .until_ns = T0 + 100 * S};
	struct profile *p = NULL, *pr = NULL;
	struct query_stacks qs = {0};
	char err[256], want[128], *fast = NULL, *slow = NULL;
	static const size_t max_nodes[] = {0, 3, 17, 100000};
	int rc;

	CHECK(s);
	CHECK(query_stacks(s, &q, &qs, err, sizeof(err)) == 0);
	CHECK(query_profile(s, &q, &p, err, sizeof(err)) == 0);
	CHECKF(qs.n > 10 && qs.n < profile__n_samples(p), "%zu stacks, %zu samples", qs.n,
	       profile__n_samples(p));
	CHECK(query_stacks__total(&qs, 0) == profile__total(p, 0) && profile__total(p, 0) > 0);
	CHECK(query_stacks__total(&qs, 1) == profile__total(p, 1));
	CHECK(query_profile(s, &r, &pr, err, sizeof(err)) == 0);
	for (int vi = 0; vi < 2; vi++)
		for (size_t m = 0; m < sizeof(max_nodes) / sizeof(max_nodes[0]); m++) {
			size_t lim = max_nodes[m] ? max_nodes[m] : QUERY_DEFAULT_MAX_NODES;

			q.value_index = vi;
			q.max_nodes = max_nodes[m];
			CAPTURE(fast, query_tree_json(s, &q, out, err, sizeof(err)));
			snprintf(want, sizeof(want),
				 "\"total\":%lld,\"tree\":", (long long)profile__total(p, vi));
			CHECKF(rc == 0 && strstr(fast, want) && count_nodes(fast) <= lim,
			       "tree vi %d max %zu: %s", vi, q.max_nodes, fast);
			free(fast), fast = NULL;
			CAPTURE(fast, query_top_json(s, &q, out, err, sizeof(err)));
			CHECK(rc == 0);
			CAPTURE(slow, top_of_samples(p, vi, lim, out));
			CHECKF(strcmp(fast, slow) == 0, "top vi %d:\n%s\n%s", vi, fast, slow);
			free(fast), free(slow), fast = slow = NULL;
			CAPTURE(fast, query_diff_json(s, &q, &r, out, err, sizeof(err)));
			snprintf(want, sizeof(want), "\"left\":%lld,\"right\":%lld,",
				 (long long)profile__total(p, vi),
				 (long long)profile__total(pr, vi));
			CHECKF(rc == 0 && strstr(fast, want) && count_nodes(fast) <= lim,
			       "diff vi %d: %s", vi, fast);
			free(fast), fast = NULL;
		}
	/* frames of every kind made it into the comparison; unnamed ones one per object
	 * by default, one per address with expand_unnamed */
	q.max_nodes = 100000;
	CAPTURE(fast, query_tree_json(s, &q, out, err, sizeof(err)));
	CHECKF(strstr(fast, "_[k]") && strstr(fast, "_[i]") && strstr(fast, "\"libx.so\"") &&
		   strstr(fast, "\"name\":\"[unknown]\"") && !strstr(fast, "\"name\":\"0x"),
	       "%s", fast);
	free(fast), fast = NULL;
	q.expand_unnamed = true;
	CAPTURE(fast, query_tree_json(s, &q, out, err, sizeof(err)));
	CHECKF(strstr(fast, "\"name\":\"0x") && !strstr(fast, "\"name\":\"[unknown]\""), "%s",
	       fast);
	q.expand_unnamed = false;
	/* a selection without data: an empty answer, the same both ways */
	free(fast), fast = NULL;
	q.query = "{host=\"nope\"}";
	CAPTURE(fast, query_tree_json(s, &q, out, err, sizeof(err)));
	CHECK_STREQ(fast, "{\"unit\":\"nanoseconds\",\"total\":0,\"tree\":{\"name\":\"total\","
			  "\"self\":0,\"total\":0}}\n");
	/* bad requests are refused as before */
	q.query = "{host=~\"[\"}";
	query_stacks__fini(&qs);
	CHECK(query_stacks(s, &q, &qs, err, sizeof(err)) == -EINVAL && qs.n == 0);
cleanup:
	free(fast);
	free(slow);
	query_stacks__fini(&qs);
	profile__free(p);
	profile__free(pr);
	store__close(s);
}

/* The row of function `name` in rows[0..n), or NULL. */
static const struct top_row *find_row(const struct top_row *rows, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].name, name))
			return &rows[i];
	return NULL;
}

/* profile/top.c's rows of p's samples (the merge into a profile), values[vi]. */
static int rows_of_samples(const struct profile *p, int vi, struct top **t, struct top_row **rows,
			   size_t *n)
{
	struct profile_sample sm;
	int e = top__new(p, vi, t);

	for (size_t i = 0; !e && i < profile__n_samples(p); i++)
		e = profile__sample(p, i, &sm) ?: top__add(*t, sm.locs, sm.n_locs, sm.values[vi]);
	return e ?: top__rows(*t, rows, n);
}

/*
 * The diff's per-function table, as a user checks it: each side's self and total
 * are that selection's top table (counted here from its merge into a profile),
 * the changes are right - left, the share change is the change of self / total
 * in percentage points, every function of either side is there once, and the
 * largest |share change| comes first; topRows, or without it maxNodes, bounds
 * the rows.
 */
TEST(diff_table_is_right_minus_left_of_the_two_merges)
{
	struct store *s = mixed_fixture("difftable");
	struct query_request l = {
	    .from_ns = T0 + 5 * S, .until_ns = T0 + 290 * S, .max_nodes = 100000};
	struct query_request r = {.query = "{host=\"b\"}", .from_ns = T0, .until_ns = T0 + 100 * S};
	struct profile *pl = NULL, *pr = NULL;
	struct top *tl = NULL, *tr = NULL;
	struct top_row *rl = NULL, *rr = NULL;
	struct query_diff d = {0};
	size_t nl = 0, nr = 0, both = 0;
	char err[256];

	CHECK(s);
	for (int vi = 0; vi < 2; vi++) {
		int64_t L, R;

		l.value_index = r.value_index = vi;
		CHECK(query_profile(s, &l, &pl, err, sizeof(err)) == 0 &&
		      query_profile(s, &r, &pr, err, sizeof(err)) == 0);
		CHECK(rows_of_samples(pl, vi, &tl, &rl, &nl) == 0 &&
		      rows_of_samples(pr, vi, &tr, &rr, &nr) == 0);
		CHECKF(query_diff(s, &l, &r, &d, err, sizeof(err)) == 0, "%s", err);
		L = profile__total(pl, vi), R = profile__total(pr, vi);
		CHECKF(d.total[0] == L && d.total[1] == R && L > 0 && R > 0, "%lld %lld",
		       (long long)d.total[0], (long long)d.total[1]);
		both = 0;
		for (size_t i = 0; i < nl; i++)
			both += find_row(rr, nr, rl[i].name) != NULL;
		CHECKF(d.n_rows == nl + nr - both && both > 0, "%zu rows, %zu + %zu - %zu",
		       d.n_rows, nl, nr, both);
		for (size_t i = 0; i < d.n_rows; i++) {
			const struct query_diff_row *x = &d.rows[i];
			const struct top_row *a = find_row(rl, nl, x->name),
					     *b = find_row(rr, nr, x->name);
			double share = 100.0 * ((b ? (double)b->self : 0) / (double)R -
						(a ? (double)a->self : 0) / (double)L);

			CHECKF(x->self[0] == (a ? a->self : 0) &&
				   x->total[0] == (a ? a->total : 0) &&
				   x->self[1] == (b ? b->self : 0) &&
				   x->total[1] == (b ? b->total : 0),
			       "vi %d %s", vi, x->name);
			CHECK(x->self_change == x->self[1] - x->self[0] &&
			      x->total_change == x->total[1] - x->total[0]);
			CHECKF(fabs(x->share_change - share) < 1e-9, "%s %g %g", x->name,
			       x->share_change, share);
			CHECK(i == 0 || fabs(d.rows[i - 1].share_change) >= fabs(x->share_change));
		}
		query_diff__fini(&d);
		/* maxNodes bounds the table, topRows instead when given: the rows of
		 * largest change kept */
		l.max_nodes = 3;
		CHECK(query_diff(s, &l, &r, &d, err, sizeof(err)) == 0 && d.n_rows == 3);
		query_diff__fini(&d);
		l.top_rows = 5;
		CHECK(query_diff(s, &l, &r, &d, err, sizeof(err)) == 0 && d.n_rows == 5 &&
		      d.tree.n_nodes <= 3);
		l.max_nodes = 100000;
		l.top_rows = 0;
		query_diff__fini(&d);
		profile__free(pl), profile__free(pr), pl = pr = NULL;
		top__free(tl), top__free(tr), tl = tr = NULL;
		free(rl), free(rr), rl = rr = NULL;
	}
cleanup:
	query_diff__fini(&d);
	profile__free(pl);
	profile__free(pr);
	top__free(tl);
	top__free(tr);
	free(rl);
	free(rr);
	store__close(s);
}

/*
 * A store whose stacks share long prefixes by name: few functions, several
 * locations of one name (other addresses, with and without a mapping, so a
 * node's module is the first stack's that knows one), inlined lines, stacks that
 * are prefixes of others, a few hundred frames deep, small values (many nodes of
 * equal total, where maxNodes cuts between ties), over two series.
 */
static struct store *shared_prefix_fixture(const char *name)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {.sample_labels = ingest_sample_labels, .no_fsync = true};
	uint64_t rng = 777;
	int e = 0;

	snprintf(dir, sizeof(dir), "%s/%s", unit_tmp_dir(), name);
	if (store__open(dir, &o, &s, err, sizeof(err)))
		return NULL;
	for (int i = 0; i < 4 && !e; i++) {
		struct profile *p = profile__new(10000000);
		struct store_label extra[] = {{"host", i % 2 ? "b" : "a"}};
		uint64_t locs[8], stack[400], map;

		if (!p)
			break;
		map = profile__mapping(p, 0x1000, 0x90000, 0, "/usr/lib/libq.so", "");
		for (int l = 0; l < 8; l++) {
			char fn[8];
			struct profile_line ln[2];

			snprintf(fn, sizeof(fn), "f%d", l % 3);
			ln[0] = (struct profile_line){profile__function(p, fn, NULL, NULL), l};
			ln[1] = (struct profile_line){profile__function(p, "outer", NULL, NULL), 0};
			/* f0..f2 at several addresses; every fourth inlined into outer */
			locs[l] = profile__location(p, l % 2 ? map : 0, 0x1000 + l * 32ull, ln,
						    l % 4 == 3 ? 2 : 1);
		}
		for (int k = 0; k < 60 && !e; k++) {
			size_t n;
			int64_t v[2];

			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			n = 1 + (rng >> 33) % (k % 10 ? 12 : 400);
			for (size_t d = 0; d < n; d++) {
				rng = rng * 6364136223846793005ull + 1442695040888963407ull;
				/* the frames nearest the root vary least: long shared prefixes */
				stack[n - 1 - d] = locs[(rng >> 35) % (d < n / 2 ? 2 : 8)];
			}
			v[0] = 1 + (int64_t)((rng >> 20) % 3);
			v[1] = v[0] * 10000000;
			e = profile__add_sample(p, stack, n, v, NULL, 0);
		}
		profile__set_time(p, T0 + i * 10 * S, 10 * S);
		e = e ?: store__append(s, p, NULL, extra, 1, NULL, err, sizeof(err));
		profile__free(p);
	}
	if (e) {
		store__close(s);
		return NULL;
	}
	return s;
}

/* A diff against nothing as a tree answer: header "left":L,"right":0 -> "total":L,
 * every value [x,0] -> x, and no "functions" table. NULL if it is not such a diff. */
static char *diff_as_tree(const char *diff)
{
	const char *c = strstr(diff, ",\"left\":"), *r, *fn = strstr(diff, ",\"functions\":[");
	char *out = malloc(strlen(diff) + 1), *o = out;

	if (!out || !c || !fn || !(r = strstr(c, ",\"right\":0,\"tree\":"))) {
		free(out);
		return NULL;
	}
	memcpy(o, diff, (size_t)(c - diff));
	o += c - diff;
	o += sprintf(o, ",\"total\":%.*s", (int)(r - c - 8), c + 8);
	for (c = r + 10; c < fn;) { /* from ,"tree": to the table */
		const char *z;

		if (*c == '[' && (z = c + 1 + strspn(c + 1, "-0123456789")) > c + 1 &&
		    strncmp(z, ",0]", 3) == 0) {
			memcpy(o, c + 1, (size_t)(z - c - 1));
			o += z - c - 1;
			c = z + 3;
		} else {
			*o++ = *c++;
		}
	}
	strcpy(o, "}\n");
	return out;
}

/*
 * The flame tree of one selection is built from its stacks sorted by frame names,
 * as the diff's two-sided tree is (tested against node by node below): both must give the same
 * nodes, totals, modules, children order and maxNodes cut (ties between equal
 * totals kept in the order the stacks were merged). The diff of a selection
 * against nothing is that tree with [x,0] values.
 */
TEST(tree_answers_as_the_diff_against_nothing)
{
	struct store *s[2] = {shared_prefix_fixture("shared_prefix"), mixed_fixture("mixed2")};
	struct query_request q = {.from_ns = T0, .until_ns = T0 + 300 * S};
	struct query_request none = {
	    .query = "{host=\"nope\"}", .from_ns = T0, .until_ns = T0 + 300 * S};
	static const size_t max_nodes[] = {1, 2, 3, 5, 17, 64, 333, 2000, 100000};
	char err[256], *t = NULL, *d = NULL, *want = NULL;
	size_t most = 0;
	int rc;

	CHECK(s[0] && s[1]);
	for (int f = 0; f < 2; f++)
		for (int vi = 0; vi < 2; vi++)
			for (size_t m = 0; m < sizeof(max_nodes) / sizeof(max_nodes[0]); m++) {
				q.value_index = vi;
				q.max_nodes = max_nodes[m];
				CAPTURE(t, query_tree_json(s[f], &q, out, err, sizeof(err)));
				CHECKF(rc == 0, "%s", err);
				CAPTURE(d, query_diff_json(s[f], &q, &none, out, err, sizeof(err)));
				CHECKF(rc == 0 && (want = diff_as_tree(d)), "%s", d);
				CHECKF(strcmp(t, want) == 0, "fixture %d vi %d max %zu:\n%s\n%s", f,
				       vi, max_nodes[m], t, want);
				if (f == 0 && count_nodes(t) > most)
					most = count_nodes(t);
				free(t), free(d), free(want), t = d = want = NULL;
			}
	/* the fixture is what it says: deep, cut by maxNodes, modules known and not */
	CHECKF(most > 2000 && most < 100000, "%zu nodes", most);
	q.max_nodes = 100000;
	CAPTURE(t, query_tree_json(s[0], &q, out, err, sizeof(err)));
	CHECKF(strstr(t, "\"module\":\"libq.so\"") && strstr(t, "{\"name\":\"f0\",\"self\"") &&
		   strstr(t, "\"name\":\"f0_[i]\""),
	       "%s", t);
cleanup:
	free(t);
	free(d);
	free(want);
	store__close(s[0]);
	store__close(s[1]);
}

/*
 * The diff's tree is built from both selections' stacks sorted by name as one
 * list (tree.c); it must answer as the node-by-node build (query_diff_by_node):
 * the same nodes, both sides' totals, modules, children order and maxNodes cut
 * (ties in the order tree_add makes nodes: the left's stacks, then the right's),
 * and the same function table with its intervals. Pairs of selections that
 * share stacks, that share none, and one side empty.
 */
TEST(diff_sorted_answers_as_node_by_node)
{
	struct store *s[2] = {shared_prefix_fixture("diff_sorted1"), mixed_fixture("diff_sorted2")};
	static const char *const sel[][2] = {
	    {"{host=\"a\"}", "{host=\"b\"}"}, {NULL, "{host=\"b\"}"},
	    {"{host=\"b\"}", NULL},		  {NULL, NULL},
	    {"{host=\"nope\"}", "{host=\"a\"}"}};
	static const size_t max_nodes[] = {1, 2, 3, 5, 17, 64, 333, 2000, 100000};
	char err[256], *fast = NULL, *slow = NULL;
	int rc;

	CHECK(s[0] && s[1]);
	for (int f = 0; f < 2; f++)
		for (size_t p = 0; p < sizeof(sel) / sizeof(sel[0]); p++)
			for (size_t m = 0; m < sizeof(max_nodes) / sizeof(max_nodes[0]); m++) {
				int vi = (int)(m % 2);
				struct query_request l = {.query = sel[p][0],
							  .from_ns = T0,
							  .until_ns = T0 + 300 * S,
							  .value_index = vi,
							  .max_nodes = max_nodes[m]};
				struct query_request r = l;

				r.query = sel[p][1];
				r.from_ns = T0 + 10 * S; /* another cut of the intervals */
				query_diff_by_node = false;
				CAPTURE(fast, query_diff_json(s[f], &l, &r, out, err, sizeof(err)));
				CHECKF(rc == 0, "%s", err);
				query_diff_by_node = true;
				CAPTURE(slow, query_diff_json(s[f], &l, &r, out, err, sizeof(err)));
				query_diff_by_node = false;
				CHECKF(rc == 0, "%s", err);
				CHECKF(strcmp(fast, slow) == 0,
				       "fixture %d pair %zu vi %d max %zu:\n%s\n%s", f, p, vi,
				       max_nodes[m], fast, slow);
				free(fast), free(slow), fast = slow = NULL;
			}
cleanup:
	query_diff_by_node = false;
	free(fast);
	free(slow);
	store__close(s[0]);
	store__close(s[1]);
}

/*
 * Issue 12 item 1: one sample of 200,000 frames (as a pprof could store before
 * ingest capped stack depth, and as the store still holds) must not crash the
 * tree, diff or top writers: the UI asks for maxNodes=20000, a chain of 20,000
 * nested nodes, which a recursive writer cannot go down on an 8 MiB stack.
 */
#define DEEP_FRAMES 200000
TEST(deep_stack_tree_diff_top_do_not_recurse)
{
	char dir[300], err[256], *t = NULL, *d = NULL, *top = NULL;
	struct store_opts o = {.sample_labels = ingest_sample_labels, .no_fsync = true};
	struct query_request q = {.from_ns = T0, .until_ns = T0 + 60 * S, .max_nodes = 20000};
	struct store *s = NULL;
	struct profile *p = profile__new(10000000);
	uint64_t *locs = malloc(DEEP_FRAMES * sizeof(*locs));
	int64_t v[2] = {1, 10000000};
	size_t names = 0, depth = 0, max_depth = 0;
	int rc;

	snprintf(dir, sizeof(dir), "%s/deep", unit_tmp_dir());
	CHECK(p && locs && store__open(dir, &o, &s, err, sizeof(err)) == 0);
	struct profile_line ln = {profile__function(p, "recurse", NULL, NULL), 0};
	uint64_t leaf_fn = profile__function(p, "leaf", NULL, NULL);
	struct profile_line ll = {leaf_fn, 0};

	locs[0] = profile__location(p, 0, 0x2000, &ll, 1);
	locs[1] = profile__location(p, 0, 0x1000, &ln, 1);
	for (size_t i = 2; i < DEEP_FRAMES; i++)
		locs[i] = locs[1];
	profile__set_time(p, T0, 10 * S);
	CHECK(profile__add_sample(p, locs, DEEP_FRAMES, v, NULL, 0) == 0);
	CHECK(store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) == 0);
	CAPTURE(t, query_tree_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0, "%d %s", rc, err);
	/* 20,000 nodes, nested one in the next, every brace closed */
	for (const char *c = t; *c; c++) {
		if (*c == '{')
			depth++, max_depth = depth > max_depth ? depth : max_depth;
		else if (*c == '}')
			depth--;
		names += strncmp(c, "{\"name\":", 8) == 0;
	}
	CHECKF(names == 20000 && depth == 0 && max_depth == 20001, "%zu %zu %zu", names, depth,
	       max_depth);
	CHECK(strstr(t, "{\"name\":\"recurse\",\"self\":0,\"total\":1,\"children\":["));
	CAPTURE(d, query_diff_json(s, &q, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(d, "\"self\":[0,0],\"total\":[1,1],\"children\""), "%d %s", rc,
	       err);
	CAPTURE(top, query_top_json(s, &q, out, err, sizeof(err)));
	CHECKF(rc == 0 && strstr(top, "{\"name\":\"leaf\",\"self\":1,\"total\":1}"), "%d %s", rc,
	       err);
cleanup:
	free(t);
	free(d);
	free(top);
	free(locs);
	profile__free(p);
	store__close(s);
}

/* ---- regexes (issue 12 item 2) ---- */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Whether selector {v=~"re"} (or !~) matches a series whose label v is val. */
static int sel_match(const char *re, bool neg, const char *val, char *err, size_t errlen)
{
	struct store_label labels[] = {{"v", val}};
	struct store_series ser = {1, STORE_CPU_PROFILE_TYPE, 1, labels};
	struct query_selector *sel = NULL;
	char *q = NULL;
	int rc;

	if (asprintf(&q, "{v%s`%s`}", neg ? "!~" : "=~", re) < 0)
		return -ENOMEM;
	rc = query_selector__parse(q, &sel, err, errlen);
	if (!rc)
		rc = query_selector__match(sel, &ser);
	query_selector__free(sel);
	free(q);
	return rc;
}

/*
 * A selector remembers its regexes' answers per distinct value: 8 matchers of
 * `(?:.?){1000}` (~3000 instructions a byte) over 20,000 series of 10 jobs run
 * 80 matches, not 160,000 (41 s a request before). Answers stay right, for !~
 * too, and past the memo's budget (values matched without being remembered).
 */
TEST(regex_answers_are_remembered_per_distinct_value)
{
	const char *m = "job=~\"(?:.?){1000}\"";
	char q[512], err[256] = "", val[300], job[8];
	struct query_selector *sel = NULL, *neg = NULL, *big = NULL;
	struct store_label labels[2] = {{"job", job}, {"v", val}};
	struct store_series ser = {1, STORE_CPU_PROFILE_TYPE, 2, labels};
	size_t n_match = 0, n_neg = 0, n_big = 0, n_long = 4 * QUERY_REGEX_MEMO_BYTES / 256;

	snprintf(q, sizeof(q), "{%s,%s,%s,%s,%s,%s,%s,%s}", m, m, m, m, m, m, m, m);
	CHECK(query_selector__parse(q, &sel, err, sizeof(err)) == 0 && sel->n == 8);
	CHECK(query_selector__parse("{job!~\"j[0-4]\"}", &neg, err, sizeof(err)) == 0);
	CHECK(query_selector__parse("{v=~\"x.*[0-9]\"}", &big, err, sizeof(err)) == 0);
	val[0] = 0;
	for (int i = 0; i < 20000; i++) {
		snprintf(job, sizeof(job), "j%d", i % 10);
		n_match += query_selector__match(sel, &ser);
		n_neg += query_selector__match(neg, &ser);
	}
	printf("  8 regex matchers x 20000 series of 10 jobs: %llu regex runs\n",
	       (unsigned long long)query_selector__regex_runs(sel));
	CHECKF(n_match == 20000, "%zu", n_match);
	CHECKF(query_selector__regex_runs(sel) == 80, "%llu",
	       (unsigned long long)query_selector__regex_runs(sel));
	CHECKF(n_neg == 10000 && query_selector__regex_runs(neg) == 10, "%zu %llu", n_neg,
	       (unsigned long long)query_selector__regex_runs(neg));
	/* distinct 256-byte values for 4x the budget, each seen twice: the first
	 * quarter is answered from the memo the second time, the rest matched again */
	memset(val, 'x', 250);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n_long; i++) {
			snprintf(val + 250, 50, "%05zu", i);
			n_big += query_selector__match(big, &ser);
		}
	CHECKF(n_big == 2 * n_long, "%zu", n_big);
	CHECKF(query_selector__regex_runs(big) > n_long &&
		   query_selector__regex_runs(big) < 2 * n_long,
	       "%llu runs for %zu values", (unsigned long long)query_selector__regex_runs(big),
	       n_long);
cleanup:
	query_selector__free(sel);
	query_selector__free(neg);
	query_selector__free(big);
}

/*
 * The patterns: glibc took ~10 s to compile the first and 17 s to
 * match the second against one 256-byte value. Both must answer right, each
 * compile and match in well under a second (milliseconds without sanitizers).
 */
TEST(regex_pathological_patterns_answer_in_milliseconds)
{
	char nested[200] = "", val[257], err[256];
	double t0, worst = 0;

	for (int i = 0; i < 16; i++)
		strcat(nested, "(");
	strcat(nested, ".*x");
	for (int i = 0; i < 16; i++)
		strcat(nested, ")+");
	memset(val, 'a', 256);
	val[256] = 0;
	const struct {
		const char *re;
		char last; /* the value's last byte */
		int want;
	} cases[] = {
	    {"(((((.*)+)+)+)+)+Q", 'a', 0},
	    {"(((((.*)+)+)+)+)+Q", 'Q', 1},
	    {nested, 'a', 0},
	    {nested, 'x', 1},
	    {"(a|aa)*(a|aa)*(a|aa)*b", 'a', 0},
	    {"(a*)*(a*)*(a*)*a{10,200}", 'a', 1},
	    {"(x+x+)+y", 'a', 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		val[255] = cases[i].last;
		t0 = now_ms();
		int got = sel_match(cases[i].re, false, val, err, sizeof(err));
		double ms = now_ms() - t0;

		worst = ms > worst ? ms : worst;
		CHECKF(got == cases[i].want, "%s on ...%c: %d (%s)", cases[i].re, cases[i].last,
		       got, got < 0 ? err : "");
		CHECKF(ms < 500, "%s took %.0f ms", cases[i].re, ms);
	}
	fprintf(stderr, "  slowest pathological regex: %.2f ms\n", worst);
cleanup:;
}

/* RE2 syntax as Prometheus users write it: whole-value matches. */
TEST(regex_re2_syntax)
{
	static const struct {
		const char *re, *val;
		int want;
	} cases[] = {
	    {"foo", "foo", 1},
	    {"foo", "foobar", 0}, /* anchored at both ends */
	    {"fo+", "fooo", 1},
	    {"foo|bar", "bar", 1},
	    {"(foo|bar)baz", "barbaz", 1},
	    {"(?:ab)+", "ababab", 1},
	    {"(?:ab)+", "ababa", 0},
	    {"a{2,3}", "aaa", 1},
	    {"a{2,3}", "aaaa", 0},
	    {"a{2}", "aa", 1},
	    {"a{2,}", "aaaaaa", 1},
	    {"a{,2}", "a{,2}", 1}, /* not a repeat: literal, as RE2 */
	    {"x*?y??z+?", "xxz", 1},
	    {"[a-c]+", "abcab", 1},
	    {"[^a-c]+", "xyz\n", 1},
	    {"[^a-c]+", "xaz", 0},
	    {"[]a]+", "]a]", 1},
	    {"[a-]+", "a-a", 1},
	    {"\\d+\\.\\d+", "10.25", 1},
	    {"\\w+", "a_Z9", 1},
	    {"\\W", "-", 1},
	    {"a\\sb", "a\tb", 1},
	    {"[\\d\\s]+", "1 2", 1},
	    {"[[:alpha:]]+[[:digit:]]", "abc1", 1},
	    {"[[:^alpha:]]", "a", 0},
	    {"a.c", "a\nc", 1}, /* Prometheus 3: . matches a newline */
	    {"(?-s)a.c", "a\nc", 0},
	    {"(?i)HeLLo", "hello", 1},
	    {"(?i:a)b", "Ab", 1},
	    {"(?i:a)b", "AB", 0},
	    {"(?i)[a-c]+", "ABC", 1},
	    {"caf.", "caf\xc3\xa9", 1}, /* one rune, two bytes */
	    {"caf..", "caf\xc3\xa9", 0},
	    {"\\x41\\x{263a}", "A\xe2\x98\xba", 1},
	    {"^foo$", "foo", 1},
	    {"a\\B.b", "a b", 0},
	    {"a\\b b", "a b", 1},
	    {"(?P<name>a)(?<n2>b)", "ab", 1},
	    {"", "", 1},
	    {"", "a", 0},
	    {"a|", "", 1},
	    {"((a*)*)*", "aaaa", 1},
	    {"\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\", ".*+?()[]{}|^$\\", 1},
	    {"nginx|envoy", "envoy", 1},
	    {".*", "", 1},
	    {"a.*z", "a\xff z", 1}, /* invalid UTF-8: one rune */
	    {"(?m)a$\n^b", "a\nb", 1},
	    {"a$\n^b", "a\nb", 0},
	    {"\\Aab\\z", "ab", 1},
	    {"(?U)a+", "aa", 1},
	    {"[\\x41-\\x43]+", "ABC", 1},
	    {"a[^\\x00-\\x{10ffff}]?", "a", 1}, /* an empty class (fuzz_matcher) */
	};
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = sel_match(cases[i].re, false, cases[i].val, err, sizeof(err));

		CHECKF(got == cases[i].want, "%s on \"%s\": %d (%s)", cases[i].re, cases[i].val,
		       got, got < 0 ? err : "");
		CHECKF(sel_match(cases[i].re, true, cases[i].val, err, sizeof(err)) == !got,
		       "!~ %s", cases[i].re);
	}
cleanup:;
}

/* What is refused, with a message naming it; every limit of docs/api.md. */
TEST(regex_refusals_name_the_problem)
{
	char deep[400] = "", big[QUERY_MAX_REGEX_LEN + 2], err[256];
	static const struct {
		const char *re, *msg;
	} cases[] = {
	    {"(a)\\1", "backreferences"},
	    {"a(?=b)", "lookahead"},
	    {"(?<!a)b", "lookbehind"},
	    {"\\pL", "Unicode classes"},
	    {"a**", "nested repetition"},
	    {"x++", "nested repetition"},
	    {"a{2}{3}", "nested repetition"},
	    {"*a", "missing argument"},
	    {"a{1001}", "repeat count over 1000"},
	    {"a{3,2}", "invalid repeat count"},
	    {"((a{1000}){1000})", "program over 4096 instructions"},
	    {"((){1000}){1000}", "program over 4096 instructions"},
	    {"(a", "missing closing )"},
	    {"a)", "unexpected )"},
	    {"[a", "missing closing ]"},
	    {"[z-a]", "invalid character class range"},
	    {"[[:nope:]]", "unknown POSIX class"},
	    {"\\q", "invalid escape"},
	    {"a\\", "trailing backslash"},
	    {"(?z)", "unsupported group"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		CHECKF(sel_match(cases[i].re, false, "a", err, sizeof(err)) == -EINVAL, "%s",
		       cases[i].re);
		CHECKF(strstr(err, "bad regex for label v: ") && strstr(err, cases[i].msg),
		       "%s: %s", cases[i].re, err);
	}
	for (int i = 0; i < QUERY_REGEX_MAX_NESTING + 1; i++)
		strcat(deep, "(");
	CHECK(sel_match(deep, false, "a", err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "nested deeper than 100"), "%s", err);
	deep[QUERY_REGEX_MAX_NESTING] = 0; /* 100 deep is fine */
	for (int i = 0; i < QUERY_REGEX_MAX_NESTING; i++)
		strcat(deep, ")");
	CHECKF(sel_match(deep, false, "", err, sizeof(err)) == 1, "%s", err);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK(sel_match(big, false, "a", err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "longer than 1024 bytes"), "%s", err);
	big[QUERY_MAX_REGEX_LEN] = 0;
	CHECKF(sel_match(big, false, big, err, sizeof(err)) == 1, "%s", err);
cleanup:;
}

struct slow_query {
	struct store *s;
	const char *sel;
	double ms;
	int rc;
	volatile int done;
};

static void *run_slow_query(void *arg)
{
	struct slow_query *sq = arg;
	struct query_request q = {.query = sq->sel, .from_ns = T0, .until_ns = T0 + 3600 * S};
	char err[256], *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);
	double t0 = now_ms();

	sq->rc = f ? query_series_json(sq->s, &q, f, err, sizeof(err)) : -ENOMEM;
	if (f)
		fclose(f);
	free(out);
	sq->ms = now_ms() - t0;
	sq->done = 1;
	return NULL;
}

/*
 * Regexes are matched after the store's lock is released: ingest does not
 * wait for a query whose regex costs milliseconds per series (the largest
 * program on 1000-byte values: ~1 s for 60 series under ASan). Matched under
 * the lock, every append during the query waited for all of it.
 */
TEST(ingest_does_not_wait_for_regex_matching)
{
	char dir[300], err[256], val[1001];
	struct store_opts o = {.sample_labels = ingest_sample_labels, .no_fsync = true};
	struct store *s = NULL;
	struct slow_query sq = {0};
	pthread_t th;
	bool started = false;
	double worst = 0;
	int appends = 0;

	snprintf(dir, sizeof(dir), "%s/slowre", unit_tmp_dir());
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	memset(val, 'a', 1000);
	val[1000] = 0;
	for (int i = 0; i < 61; i++) {
		struct profile *p = profile__new(10000000);
		char id[16];
		struct store_label extra[] = {{"id", id}, {"v", val}};
		struct profile_line l = {p ? profile__function(p, "f", NULL, NULL) : 0, 0};
		uint64_t loc = p ? profile__location(p, 0, 1, &l, 1) : 0;
		int64_t v[2] = {1, 10000000};
		int e;

		snprintf(id, sizeof(id), "%d", i);
		profile__set_time(p, T0 + i * S, S);
		e = !p || profile__add_sample(p, &loc, 1, v, NULL, 0) ||
		    store__append(s, p, NULL, extra, 2, NULL, err, sizeof(err));
		profile__free(p);
		CHECK(!e);
		val[i % 1000] = 'b'; /* every value distinct */
	}
	/* (?:[ab]?){1000} keeps ~1000 states alive over the 1000 runes; no c: no match */
	sq = (struct slow_query){.s = s, .sel = "{v=~\"(?:[ab]?){1000}c{1,1000}\"}"};
	CHECK(pthread_create(&th, NULL, run_slow_query, &sq) == 0);
	started = true;
	while (!sq.done && appends < 1000) {
		struct profile *p = profile__new(10000000);
		struct store_label extra[] = {{"id", "ingest"}};
		struct profile_line l = {p ? profile__function(p, "g", NULL, NULL) : 0, 0};
		uint64_t loc = p ? profile__location(p, 0, 1, &l, 1) : 0;
		int64_t v[2] = {1, 10000000};
		double t0 = now_ms(), ms;
		int e;

		profile__set_time(p, T0 + appends * S, S);
		e = !p || profile__add_sample(p, &loc, 1, v, NULL, 0) ||
		    store__append(s, p, NULL, extra, 1, NULL, err, sizeof(err));
		profile__free(p);
		ms = now_ms() - t0;
		worst = ms > worst ? ms : worst;
		appends++;
		CHECK(!e);
		usleep(5000);
	}
	pthread_join(th, NULL);
	started = false;
	fprintf(stderr, "  query %.0f ms; %d appends meanwhile, slowest %.1f ms\n", sq.ms, appends,
		worst);
	CHECK(sq.rc == 0);
	CHECKF(sq.ms > 400, "the query took %.0f ms: too fast to show anything", sq.ms);
	CHECKF(worst < sq.ms / 4, "an append waited %.0f ms of the query's %.0f ms", worst, sq.ms);
cleanup:
	if (started)
		pthread_join(th, NULL);
	store__close(s);
}
