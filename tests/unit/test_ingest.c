/*
 * Unit tests of src/ingest/: the rules every stored profile follows, the
 * request's time range, the label vocabulary, and the agent's sink seam (a
 * profile reaches the sink as a flat profile with its range, no text).
 */
#include "unit.h"

#include "agent/agent_impl.h"
#include "ingest/ingest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S  1000000000LL
#define T0 (1700000000LL * S)

/* One sample main;work with value v, labels pid=42, tid=7, process=app. */
static struct profile_flat *flat_of(int64_t t, int64_t v)
{
	struct profile *p = profile__new(10000000);
	struct profile_flat *f = NULL;

	if (!p)
		return NULL;
	profile__set_time(p, t, 10 * S);
	uint64_t m = profile__mapping(p, 0x1000, 0x9000, 0, "/bin/app", "");
	struct profile_line l1 = {profile__function(p, "work", "work", "a.c"), 2};
	struct profile_line l0 = {profile__function(p, "main", "main", "a.c"), 1};
	uint64_t locs[2] = {profile__location(p, m, 0x2000, &l1, 1),
			    profile__location(p, m, 0x1000, &l0, 1)};
	struct profile_label labels[3] = {
	    {"pid", NULL, 42}, {"tid", NULL, 7}, {"process", "app", 0}};
	int64_t vals[2] = {v, v * 10000000};

	if (!profile__add_sample(p, locs, 2, vals, labels, 3))
		profile__to_flat(p, &f);
	profile__free(p);
	return f;
}

static const struct store_opts opts = {.sample_labels = ingest_sample_labels, .no_fsync = true};
static const struct store_label app[] = {{INGEST_NAME_LABEL, "app"}, {INGEST_HOST_LABEL, "h1"}};

/* Collects the labels of the only series, "name=value,..." */
static int one_series(void *ctx, const struct store_series *ser)
{
	char *out = ctx;

	for (size_t i = 0; i < ser->n_labels; i++)
		snprintf(out + strlen(out), 256 - strlen(out), "%s=%s,", ser->labels[i].name,
			 ser->labels[i].value);
	return 0;
}

/* The request's range is what is stored (hearth run ignored it before: its
 * sink took the pprof's own time), and the series is the request's labels plus
 * the vocabulary's sample labels, tid left out. */
TEST(ingest_stores_the_request_range_and_labels)
{
	struct store *s = NULL;
	struct profile_flat *f = flat_of(T0, 3);
	struct ingest_request req = {.labels = app,
				     .n_labels = 2,
				     .has_range = true,
				     .from_ns = T0 + 60 * S,
				     .until_ns = T0 + 65 * S,
				     .profile = f};
	struct store_append_result res = {0};
	struct store_stats st;
	char err[256] = "", labels[256] = "", dir[512];

	snprintf(dir, sizeof(dir), "%s/range", unit_tmp_dir());
	CHECK(f && store__open(dir, &opts, &s, err, sizeof(err)) == 0);
	CHECKF(ingest__store(s, &req, T0 + 70 * S, &res, err, sizeof(err)) == 0, "%s", err);
	CHECK(res.samples == 3 && res.series == 1);
	CHECK(f->time_ns == T0 + 60 * S && f->duration_ns == 5 * S);
	CHECK(store__stats(s, &st) == 0);
	CHECKF(st.oldest_ns == T0 + 60 * S && st.newest_ns == T0 + 60 * S, "%lld",
	       (long long)(st.oldest_ns - T0));
	CHECK(store__series_foreach(s, one_series, labels) == 0);
	CHECKF(!strcmp(labels, "__name__=app,host=h1,pid=42,process=app,service_name=app,"), "%s",
	       labels);
cleanup:
	profile_flat__free(f);
	store__close(s);
}

/* Three samples as hearth's agent labels them: a plain process, a process of a
 * systemd unit, and one with no process label. */
static struct profile_flat *agent_flat(int64_t t)
{
	struct profile *p = profile__new(10000000);
	struct profile_flat *f = NULL;
	struct profile_label worker[2] = {{"pid", NULL, 1}, {"process", "worker", 0}};
	struct profile_label web[3] = {
	    {"pid", NULL, 2}, {"process", "nginx", 0}, {"unit", "nginx.service", 0}};
	int64_t vals[2] = {1, 10000000};
	uint64_t loc;
	int err;

	if (!p)
		return NULL;
	profile__set_time(p, t, 10 * S);
	struct profile_line l = {profile__function(p, "main", "main", "a.c"), 1};
	loc = profile__location(p, 0, 0x1000, &l, 1);
	err = profile__add_sample(p, &loc, 1, vals, worker, 2) ?:
	      profile__add_sample(p, &loc, 1, vals, web, 3) ?:
	      profile__add_sample(p, &loc, 1, vals, NULL, 0);
	if (!err)
		profile__to_flat(p, &f);
	profile__free(p);
	return f;
}

/* Every series as "TYPE|name=value,...;" in id order. */
static int all_series(void *ctx, const struct store_series *ser)
{
	char *out = ctx;

	snprintf(out + strlen(out), 1024 - strlen(out), "%s|", ser->profile_type);
	for (size_t i = 0; i < ser->n_labels; i++)
		snprintf(out + strlen(out), 1024 - strlen(out), "%s=%s,", ser->labels[i].name,
			 ser->labels[i].value);
	snprintf(out + strlen(out), 1024 - strlen(out), ";");
	return 0;
}

/* The labels Grafana's Pyroscope data source relies on (docs/grafana.md): a
 * push gets service_name from its app name and the CPU profile type; hearth's
 * agent gets service_name per process (its systemd unit when it has one); a
 * __profile_type__ label becomes the series' profile type (not a label), and a
 * service_name given is kept. */
TEST(ingest_defaults_service_name_and_profile_type)
{
	static const struct store_label agent[] = {{INGEST_NAME_LABEL, INGEST_AGENT_APP},
						   {INGEST_HOST_LABEL, "h1"}};
	static const struct store_label typed[] = {
	    {INGEST_NAME_LABEL, "shop"},
	    {STORE_PROFILE_TYPE_LABEL, "memory:inuse_space:bytes:space:bytes"},
	    {"service_name", "checkout"}};
	struct store *s = NULL;
	struct profile_flat *f = flat_of(T0, 3), *a = agent_flat(T0), *m = flat_of(T0, 4);
	struct ingest_request req = {.labels = app, .n_labels = 2, .profile = f};
	char err[256] = "", got[1024] = "", dir[512];

	snprintf(dir, sizeof(dir), "%s/defaults", unit_tmp_dir());
	CHECK(f && a && m && store__open(dir, &opts, &s, err, sizeof(err)) == 0);
	CHECKF(ingest__store(s, &req, T0, NULL, err, sizeof(err)) == 0, "%s", err);
	req = (struct ingest_request){.labels = agent, .n_labels = 2, .profile = a};
	CHECKF(ingest__store(s, &req, T0, NULL, err, sizeof(err)) == 0, "%s", err);
	req = (struct ingest_request){.labels = typed, .n_labels = 3, .profile = m};
	CHECKF(ingest__store(s, &req, T0, NULL, err, sizeof(err)) == 0, "%s", err);
	CHECK(store__series_foreach(s, all_series, got) == 0);
	CHECKF(!strcmp(got,
		       "process_cpu:cpu:nanoseconds:cpu:nanoseconds|__name__=app,host=h1,pid=42,"
		       "process=app,service_name=app,;"
		       "process_cpu:cpu:nanoseconds:cpu:nanoseconds|__name__=hearth,host=h1,"
		       "pid=1,process=worker,service_name=worker,;"
		       "process_cpu:cpu:nanoseconds:cpu:nanoseconds|__name__=hearth,host=h1,"
		       "pid=2,process=nginx,service_name=nginx.service,unit=nginx.service,;"
		       "process_cpu:cpu:nanoseconds:cpu:nanoseconds|__name__=hearth,host=h1,"
		       "service_name=hearth,;"
		       "memory:inuse_space:bytes:space:bytes|__name__=shop,pid=42,process=app,"
		       "service_name=checkout,;"),
	       "%s", got);
cleanup:
	profile_flat__free(f);
	profile_flat__free(a);
	profile_flat__free(m);
	store__close(s);
}

/* The rules: from after until, a time beyond the clock skew, a negative value
 * are refused with a sentence, and nothing is stored; a long duration is
 * clamped. */
TEST(ingest_refuses_bad_requests_and_clamps)
{
	struct store *s = NULL;
	struct profile_flat *f = flat_of(T0, 1), *neg = flat_of(T0, -1);
	struct ingest_request req = {.labels = app, .n_labels = 2, .profile = f};
	struct store_stats st;
	char err[256] = "", dir[512];

	snprintf(dir, sizeof(dir), "%s/rules", unit_tmp_dir());
	CHECK(f && neg && store__open(dir, &opts, &s, err, sizeof(err)) == 0);
	req.has_range = true;
	req.from_ns = T0 + S;
	req.until_ns = T0;
	CHECK(ingest__store(s, &req, T0, NULL, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "'from'"), "%s", err);
	req.until_ns = T0 + 2 * S;
	CHECK(ingest__store(s, &req, T0 - 3600 * S, NULL, err, sizeof(err)) == -ERANGE);
	CHECKF(strstr(err, "clock skew"), "%s", err);
	req.has_range = false;
	req.profile = neg;
	CHECK(ingest__store(s, &req, T0, NULL, err, sizeof(err)) == -EDOM);
	CHECKF(strstr(err, "negative value"), "%s", err);
	CHECK(store__stats(s, &st) == 0 && st.profiles == 0);
	req.profile = f;
	f->time_ns = T0;
	f->duration_ns = 1LL << 62;
	CHECKF(ingest__store(s, &req, T0, NULL, err, sizeof(err)) == 0, "%s", err);
	CHECK(f->duration_ns == INGEST_MAX_PROFILE_DURATION_NS);
cleanup:
	profile_flat__free(f);
	profile_flat__free(neg);
	store__close(s);
}

/* What a sink saw. */
struct seen {
	int calls;
	int64_t from_ns, until_ns, samples;
	char labels[128];
};

static int record_sink(void *ctx, struct ingest_request *req)
{
	struct seen *sn = ctx;

	sn->calls++;
	sn->from_ns = req->from_ns;
	sn->until_ns = req->until_ns;
	sn->samples = req->profile->samples[0].values[0];
	for (size_t i = 0; i < req->n_labels; i++)
		snprintf(sn->labels + strlen(sn->labels), sizeof(sn->labels) - strlen(sn->labels),
			 "%s=%s,", req->labels[i].name, req->labels[i].value);
	return 0;
}

/* The agent's sink seam: a queued flat profile reaches the sink as an ingest
 * request with the agent's labels and its range; a full queue drops the
 * oldest and counts it. */
TEST(agent_sink_gets_flat_profiles_with_their_range)
{
	static const struct store_label lab[] = {{INGEST_NAME_LABEL, INGEST_AGENT_APP}};
	struct seen sn = {0};
	struct agent_opts o = {.sink = record_sink, .sink_ctx = &sn};
	struct agent_sender *snd = NULL;
	struct agent_spool_stats st = {0};
	struct profile_flat *f = flat_of(T0, 5);

	CHECK(f && agent_sender__start(&o, NULL, lab, 1, &snd) == 0);
	CHECK(agent_sender__push_flat(snd, f, NULL, T0, T0 + 10 * S) == 0);
	f = NULL;
	agent_sender__stop(snd, 10.0);
	agent_sender__sink_stats(snd, &st);
	CHECK(sn.calls == 1 && st.sent == 1 && st.queued == 0);
	CHECK(sn.from_ns == T0 && sn.until_ns == T0 + 10 * S && sn.samples == 5);
	CHECKF(!strcmp(sn.labels, "__name__=hearth,"), "%s", sn.labels);
cleanup:
	profile_flat__free(f);
	agent_sender__free(snd);
}

/* A second backend: counts what reaches it. */
struct fake_backend {
	struct store b; /* first: the store the core calls through */
	int appends;
	int64_t time_ns;
	size_t n_extra;
};

static int fake_append(struct store *b, const struct profile_flat *f, const char *type,
		       const struct store_label *extra, size_t n_extra,
		       struct store_append_result *res, char *err, size_t errlen)
{
	struct fake_backend *fb = (struct fake_backend *)b;

	(void)type;
	(void)extra;
	(void)err;
	(void)errlen;
	fb->appends++;
	fb->time_ns = f->time_ns;
	fb->n_extra = n_extra;
	if (res)
		*res = (struct store_append_result){1, 1, f->n_samples, 0};
	return 0;
}

/* ingest__store reaches storage only through the interface: a backend other
 * than the embedded store gets the checked profile, and a refused one never
 * reaches it. */
TEST(ingest_goes_through_the_backend_interface)
{
	static const struct store_ops ops = {.name = "fake", .append_flat = fake_append};
	struct fake_backend fb = {.b = {&ops}};
	struct profile_flat *f = flat_of(T0, 2), *neg = flat_of(T0, -2);
	struct ingest_request req = {.labels = app, .n_labels = 2, .profile = neg};
	char err[256];

	CHECK(f && neg);
	CHECK(ingest__store(&fb.b, &req, T0, NULL, err, sizeof(err)) == -EDOM);
	CHECK(fb.appends == 0);
	req.profile = f;
	req.has_range = true;
	req.from_ns = T0 + S;
	req.until_ns = T0 + 2 * S;
	CHECKF(ingest__store(&fb.b, &req, T0 + 3 * S, NULL, err, sizeof(err)) == 0, "%s", err);
	CHECK(fb.appends == 1 && fb.time_ns == T0 + S && fb.n_extra == 3); /* + service_name */
cleanup:
	profile_flat__free(f);
	profile_flat__free(neg);
}
