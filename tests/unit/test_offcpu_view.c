/*
 * Off-CPU and wall-clock profiles on their way into the store (issue 28,
 * consumer side): a typed model (what the producer builds) keeps its type
 * through profile__to_flat (hearth run's sink) and through pprof_encode +
 * pprof_decode_flat (the agent's push), ingest__store names the series' type
 * from it and keeps `reason` as a series label, and a query of that type gives
 * back the nanoseconds; a CPU profile is not taken for one.
 */
#include "unit.h"

#include "ingest/ingest.h"
#include "query/query.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define S  1000000000LL
#define MS 1000000LL
#define T0 (1700000000LL * S)

/* main;read;[off-cpu: io] 120 ms and main;idle;[off-cpu: sleep] 600 ms, labelled
 * reason, as a model of `type` (NULL: CPU samples). */
static struct profile *model_of(const char *type)
{
	static const char *const reasons[2] = {"io", "sleep"};
	static const char *const fns[2] = {"read", "idle"};
	static const int64_t ms[2] = {120, 600};
	struct profile *p = profile__new(1);

	if (!p || profile__set_type(p, type)) {
		profile__free(p);
		return NULL;
	}
	profile__set_time(p, T0, 10 * S);
	for (int i = 0; i < 2; i++) {
		char leaf[64];

		snprintf(leaf, sizeof(leaf), PROFILE_OFF_CPU_FRAME_PREFIX "%s]", reasons[i]);
		struct profile_line l0 = {profile__function(p, leaf, leaf, ""), 0};
		struct profile_line l1 = {profile__function(p, fns[i], fns[i], "a.c"), 1};
		struct profile_line l2 = {profile__function(p, "main", "main", "a.c"), 1};
		uint64_t locs[3] = {profile__location(p, 0, 0, &l0, 1),
				    profile__location(p, 0, 0x1000 + (uint64_t)i, &l1, 1),
				    profile__location(p, 0, 0x2000, &l2, 1)};
		struct profile_label lab[1] = {{PROFILE_LABEL_REASON, reasons[i], 0}};
		int64_t v[2] = {ms[i] * MS, ms[i] * MS};

		if (profile__add_sample(p, locs, 3, v, lab, 1)) {
			profile__free(p);
			return NULL;
		}
	}
	return p;
}

TEST(time_types_by_sample_type)
{
	CHECK(!strcmp(profile_time_type("off_cpu", "nanoseconds"), PROFILE_OFF_CPU_TYPE));
	CHECK(!strcmp(profile_time_type("wall", "nanoseconds"), PROFILE_WALL_TYPE));
	CHECK(!profile_time_type("off_cpu", "count") && !profile_time_type("cpu", "nanoseconds"));
	CHECK(!profile_type_is_cpu(PROFILE_OFF_CPU_TYPE) && !profile_type_is_cpu(PROFILE_WALL_TYPE));
cleanup:;
}

/* The model's type survives both ways into a flat profile. */
TEST(typed_model_keeps_its_type_as_flat)
{
	struct profile *p = model_of(PROFILE_WALL_TYPE), *cpu = model_of(NULL), *back = NULL;
	struct profile_flat *f = NULL, *g = NULL, *c = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char err[256] = "";

	CHECK(p && cpu);
	CHECK(profile__to_flat(p, &f) == 0);
	CHECKF(profile_flat__type(f) && !strcmp(profile_flat__type(f), PROFILE_WALL_TYPE), "%s",
	       profile_flat__type(f) ?: "(null)");
	CHECK(pprof_encode(p, &buf, &len) == 0);
	CHECKF(pprof_decode_flat(buf, len, &g, err, sizeof(err)) == 0, "%s", err);
	CHECK(profile_flat__type(g) && !strcmp(profile_flat__type(g), PROFILE_WALL_TYPE));
	/* both values are the nanoseconds, not a count derived from the period */
	CHECKF(g->n_samples == 2 && g->samples[0].values[0] == 120 * MS &&
		   g->samples[0].values[1] == 120 * MS,
	       "%lld %lld", (long long)g->samples[0].values[0], (long long)g->samples[0].values[1]);
	CHECK(profile__to_flat(cpu, &c) == 0 && profile_flat__type(c) == NULL);
	/* decoded back into a model (hearth symbolize, recover): still that type */
	CHECKF(pprof_decode(buf, len, &back, err, sizeof(err)) == 0, "%s", err);
	CHECK(profile__type(back) && !strcmp(profile__type(back), PROFILE_WALL_TYPE));
	CHECK(profile__total(back, 0) == 720 * MS && profile__total(back, 1) == 720 * MS);
cleanup:
	profile__free(back);
	free(buf);
	profile_flat__free(f);
	profile_flat__free(g);
	profile_flat__free(c);
	profile__free(p);
	profile__free(cpu);
}

struct seen {
	int off, cpu, reasons;
};

static int count_series(void *ctx, const struct store_series *ser)
{
	struct seen *s = ctx;

	s->off += !strcmp(ser->profile_type, PROFILE_OFF_CPU_TYPE);
	s->cpu += !strcmp(ser->profile_type, STORE_CPU_PROFILE_TYPE);
	for (size_t i = 0; i < ser->n_labels; i++)
		s->reasons += !strcmp(ser->labels[i].name, PROFILE_LABEL_REASON);
	return 0;
}

/* hearth run's path: model -> flat -> ingest__store, no type given. */
TEST(ingest_names_the_type_and_keeps_reason)
{
	static const struct store_opts opts = {.sample_labels = ingest_sample_labels,
					       .no_fsync = true};
	static const struct store_label app[] = {{INGEST_NAME_LABEL, INGEST_AGENT_APP},
						 {INGEST_HOST_LABEL, "h1"}};
	struct profile *p = model_of(PROFILE_OFF_CPU_TYPE), *cpu = model_of(NULL), *got = NULL;
	struct profile_flat *f = NULL, *c = NULL;
	struct store *s = NULL;
	struct seen seen = {0};
	char err[256] = "", dir[512];
	const char *sel = "{__profile_type__=\"" PROFILE_OFF_CPU_TYPE "\", reason!=\"sleep\"}";
	struct query_request q = {.query = sel, .from_ns = T0 - S, .until_ns = T0 + 20 * S};

	snprintf(dir, sizeof(dir), "%s/offcpu", unit_tmp_dir());
	CHECK(p && cpu && profile__to_flat(p, &f) == 0 && profile__to_flat(cpu, &c) == 0);
	CHECK(store__open(dir, &opts, &s, err, sizeof(err)) == 0);
	struct ingest_request req = {.labels = app, .n_labels = 2, .profile = f};
	struct ingest_request rc = {.labels = app, .n_labels = 2, .profile = c};
	CHECKF(ingest__store(s, &req, T0 + 20 * S, NULL, err, sizeof(err)) == 0, "%s", err);
	CHECKF(ingest__store(s, &rc, T0 + 20 * S, NULL, err, sizeof(err)) == 0, "%s", err);
	CHECK(store__series_foreach(s, count_series, &seen) == 0);
	/* a series per reason of each type (the CPU model has the same labels) */
	CHECKF(seen.off == 2 && seen.cpu == 2 && seen.reasons == 4, "off %d cpu %d reasons %d",
	       seen.off, seen.cpu, seen.reasons);
	CHECKF(query_profile(s, &q, &got, err, sizeof(err)) == 0, "%s", err);
	CHECKF(profile__total(got, 1) == 120 * MS && profile__total(got, 0) == 120 * MS, "%lld",
	       (long long)profile__total(got, 1));
	CHECK(profile__type(got) && !strcmp(profile__type(got), PROFILE_OFF_CPU_TYPE));
cleanup:
	profile__free(got);
	profile_flat__free(f);
	profile_flat__free(c);
	profile__free(p);
	profile__free(cpu);
	store__close(s);
}
