/*
 * Unit tests of src/scrape/ and of what scraping needs below it: the YAML
 * config (defaults, Parca's keys, errors naming the line), a pprof decoded one
 * sample type at a time (pprof_decode_flat_value), a typed model encoded with
 * its own sample type, and typed series through ingest and query (no type
 * means CPU; two types are never merged; units follow the type).
 */
#include "unit.h"

#include "ingest/ingest.h"
#include "query/query.h"
#include "scrape/scrape.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define S  1000000000LL
#define T0 (1700000000LL * S)

static int parse(const char *yaml, struct scrape_config **c, char *err, size_t len)
{
	return scrape_config__parse("x.yaml", yaml, strlen(yaml), c, err, len);
}

TEST(scrape_config_defaults_as_parca)
{
	struct scrape_config *c = NULL;
	char err[512] = "";
	int e = parse("scrape_configs:\n"
		      "  - job_name: app\n"
		      "    static_configs:\n"
		      "      - targets: ['127.0.0.1:6060', 'h:1']\n"
		      "        labels: {env: prod}\n",
		      &c, err, sizeof(err));

	CHECKF(e == 0, "%d %s", e, err);
	CHECK(c->n_jobs == 1 && c->jobs[0].n_targets == 2);
	CHECK_STREQ(c->jobs[0].name, "app");
	CHECK_STREQ(c->jobs[0].scheme, "http");
	CHECK(c->jobs[0].interval_ns == 10 * S && c->jobs[0].timeout_ns == 10 * S);
	CHECK_STREQ(c->jobs[0].targets[1].address, "h:1");
	CHECK(c->jobs[0].targets[1].n_labels == 1);
	CHECK_STREQ(c->jobs[0].targets[1].labels[0].value, "prod");
	for (int k = 0; k < SCRAPE_N_KINDS; k++)
		CHECK(c->jobs[0].prof[k].enabled);
	CHECK_STREQ(c->jobs[0].prof[SCRAPE_CPU].path, "/debug/pprof/profile");
	CHECK_STREQ(c->jobs[0].prof[SCRAPE_MEMORY].path, "/debug/pprof/allocs");
cleanup:
	scrape_config__free(c);
}

TEST(scrape_config_global_prefix_and_profiles)
{
	struct scrape_config *c = NULL;
	char err[512] = "";
	int e = parse("global: {scrape_interval: 5s}\n"
		      "scrape_configs:\n"
		      "  - job_name: a\n"
		      "    scheme: https\n"
		      "    static_configs: [{targets: ['h:1']}]\n"
		      "    profiling_config:\n"
		      "      path_prefix: /svc\n"
		      "      pprof_config:\n"
		      "        process_cpu: {delta: true}\n"
		      "        memory: {path: /debug/pprof/heap}\n"
		      "        block: {enabled: false}\n"
		      "  - job_name: b\n"
		      "    scrape_interval: 1m30s\n"
		      "    scrape_timeout: 500ms\n"
		      "    static_configs: [{targets: ['h:2']}]\n",
		      &c, err, sizeof(err));

	CHECKF(e == 0, "%d %s", e, err);
	CHECK(c->n_jobs == 2);
	/* a 5 s interval caps the default timeout at 5 s, as in Prometheus */
	CHECK(c->jobs[0].interval_ns == 5 * S && c->jobs[0].timeout_ns == 5 * S);
	CHECK_STREQ(c->jobs[0].scheme, "https");
	CHECK_STREQ(c->jobs[0].prof[SCRAPE_MEMORY].path, "/svc/debug/pprof/heap");
	CHECK_STREQ(c->jobs[0].prof[SCRAPE_GOROUTINE].path, "/svc/debug/pprof/goroutine");
	CHECK(!c->jobs[0].prof[SCRAPE_BLOCK].enabled && c->jobs[0].prof[SCRAPE_MUTEX].enabled);
	CHECK(c->jobs[1].interval_ns == 90 * S && c->jobs[1].timeout_ns == S / 2);
	CHECK(scrape_config__n_targets(c) == 2);
cleanup:
	scrape_config__free(c);
}

/* Every mistake is refused with the file and the line of the bad node. */
TEST(scrape_config_errors_name_the_line)
{
	static const struct {
		const char *yaml, *want;
	} cases[] = {
	    {"scrape_configs:\n  - job_name: a\n    scheme: ftp\n", "x.yaml:3: scheme 'ftp'"},
	    {"scrape_configs:\n  - static_configs: [{targets: ['h:1']}]\n",
	     "x.yaml:2: a scrape config without job_name"},
	    {"scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: h:1\n",
	     "x.yaml:4: targets must be a list"},
	    {"scrape_configs:\n  - job_name: a\n    scrape_interval: 0s\n",
	     "x.yaml:3: scrape_interval: '0s' is outside 1s to 1h"},
	    {"scrape_configs:\n  - job_name: a\n    profiling_config:\n      pprof_config:\n"
	     "        memory: {enabled: maybe}\n",
	     "x.yaml:5: enabled: 'maybe' is not true or false"},
	    {"scrape_configs:\n  - job_name: a\n    profiling_config:\n      pprof_config:\n"
	     "        process_cpu: {delta: false}\n",
	     "x.yaml:5: delta: false is not supported"},
	    {"scrape_config:\n  - job_name: a\n", "x.yaml:1: unknown key 'scrape_config'"},
	    {"", "x.yaml:1: the file is empty"},
	    {"scrape_configs:\n  - job_name: a\n    profiling_config: {path_prefix: x}\n",
	     "x.yaml:3: path_prefix 'x' must start with '/'"},
	    {"scrape_configs: [\n", "x.yaml:2: "},
	};
	struct scrape_config *c = NULL;
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int e = parse(cases[i].yaml, &c, err, sizeof(err));

		CHECKF(e == -EINVAL && !c, "case %zu: %d", i, e);
		CHECKF(!strncmp(err, cases[i].want, strlen(cases[i].want)), "case %zu: %s", i, err);
	}
cleanup:
	scrape_config__free(c);
}

/* One sample main;alloc of value v in a model of type `type`. */
static struct profile *typed(const char *type, int64_t v)
{
	struct profile *p = profile__new(524288);
	uint64_t m, loc[2];
	struct profile_line l1, l0;
	int64_t vals[2] = {v, v};

	if (!p || profile__set_type(p, type)) {
		profile__free(p);
		return NULL;
	}
	profile__set_time(p, T0, 0);
	m = profile__mapping(p, 0x1000, 0x9000, 0, "/bin/app", "");
	l1 = (struct profile_line){profile__function(p, "alloc", "alloc", "a.go"), 2};
	l0 = (struct profile_line){profile__function(p, "main", "main", "a.go"), 1};
	loc[0] = profile__location(p, m, 0x2000, &l1, 1);
	loc[1] = profile__location(p, m, 0x1000, &l0, 1);
	if (profile__add_sample(p, loc, 2, vals, NULL, 0)) {
		profile__free(p);
		return NULL;
	}
	return p;
}

/* A typed model is written as a one-value pprof of its own sample and period
 * types, and decoded back value by value; a missing index is refused. */
TEST(typed_pprof_round_trip)
{
	struct profile *p = typed("memory:inuse_space:bytes:space:bytes", 4096);
	struct profile_flat *f = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char err[256];
	int e;

	CHECK(p && pprof_encode(p, &buf, &len) == 0);
	e = pprof_decode_flat_value(buf, len, 0, 0, &f, err, sizeof(err));
	CHECKF(e == 0, "%s", err);
	CHECK(f->n_sample_types == 1 && f->n_samples == 1);
	CHECK_STREQ(profile_flat__str(f, f->sample_types[0].type, NULL), "inuse_space");
	CHECK_STREQ(profile_flat__str(f, f->sample_types[0].unit, NULL), "bytes");
	CHECK_STREQ(profile_flat__str(f, f->period_type.type, NULL), "space");
	CHECK(f->samples[0].values[0] == 4096 && f->samples[0].values[1] == 4096);
	profile_flat__free(f);
	f = NULL;
	e = pprof_decode_flat_value(buf, len, 0, 1, &f, err, sizeof(err));
	CHECKF(e == -EINVAL && strstr(err, "1 sample types"), "%d %s", e, err);
	/* a CPU pprof: index 1 is cpu/nanoseconds, in both values */
	free(buf);
	buf = NULL;
	profile__free(p);
	p = typed(NULL, 3);
	CHECK(p && pprof_encode(p, &buf, &len) == 0);
	CHECK(pprof_decode_flat_value(buf, len, 0, 1, &f, err, sizeof(err)) == 0);
	CHECK(f->n_sample_types == 2 && f->samples[0].values[0] == 3 &&
	      f->samples[0].values[1] == 3);
cleanup:
	profile_flat__free(f);
	free(buf);
	profile__free(p);
}

static int store_typed(struct store *s, const char *type, int64_t v)
{
	struct profile *p = typed(type, v);
	struct profile_flat *f = NULL;
	struct store_label labels[] = {{"job", "app"}, {STORE_PROFILE_TYPE_LABEL, type}};
	struct ingest_request req = {.labels = labels, .n_labels = type ? 2 : 1};
	int e = p ? profile__to_flat(p, &f) : -ENOMEM;

	req.profile = f;
	e = e ?: ingest__store(s, &req, T0 + S, NULL, NULL, 0);
	profile_flat__free(f);
	profile__free(p);
	return e;
}

static char *tree_of(struct store *s, const char *query, char *err, size_t errlen, int *e)
{
	struct query_request q = {.query = query, .from_ns = T0 - S, .until_ns = T0 + S};
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	*e = out ? query_tree_json(s, &q, out, err, errlen) : -ENOMEM;
	if (out)
		fclose(out);
	return buf;
}

/* A series' __profile_type__ label becomes its type; a selector without a type
 * merges CPU only; a type selects its own series, in its unit; two types at
 * once are refused. */
TEST(typed_series_query)
{
	struct store *s = NULL;
	char err[512] = "", *a = NULL, *b = NULL, *c = NULL;
	int e;

	CHECK(store__open(unit_tmp_dir(), &(struct store_opts){.no_fsync = true}, &s, err,
			  sizeof(err)) == 0);
	CHECK(store_typed(s, NULL, 7) == 0);
	CHECK(store_typed(s, "memory:inuse_space:bytes:space:bytes", 1 << 20) == 0);
	a = tree_of(s, "{job=\"app\"}", err, sizeof(err), &e);
	CHECKF(e == 0 && strstr(a, "{\"unit\":\"samples\",\"total\":7,"), "%d %s", e, a);
	b = tree_of(s, "{__profile_type__=\"memory:inuse_space:bytes:space:bytes\"}", err,
		    sizeof(err), &e);
	CHECKF(e == 0 && strstr(b, "{\"unit\":\"bytes\",\"total\":1048576,"), "%d %s", e, b);
	c = tree_of(s, "{__profile_type__=~\".+\"}", err, sizeof(err), &e);
	CHECKF(e == -EINVAL && strstr(err, "several profile types"), "%d %s", e, err);
cleanup:
	free(a);
	free(b);
	free(c);
	store__close(s);
}
