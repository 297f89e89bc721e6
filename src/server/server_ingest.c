/*
 * POST /ingest, compatible with Pyroscope's: name=APP{k=v,...}, from, until
 * (unix s/ms/µs/ns), format=pprof|folded|lines (folded by default), sampleRate
 * (default 100: period 1e9/sampleRate ns), spyName; a pprof comes as the raw
 * body or as the multipart field `profile`.
 *
 * Decode fully, validate fully, then one append: a rejected request stores
 * nothing (the store's append is itself atomic). A pprof is decoded into a flat
 * profile and stored by store__append_flat, without building the model; the
 * text formats become a model and go through store__append.
 *
 * Decoding is where a small body turns into a lot of memory (a 250 KiB gzip can
 * inflate to 256 MiB of tiny messages): a pprof decodes within a budget sized by
 * its body (server_memory_budget), and at most SERVER_MAX_DECODES bodies decode at
 * once, so the peak is bounded by a few budgets whatever the number of clients.
 */
#include "server_impl.h"
#include "query/query.h"
#include "store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SERVER_MAX_SAMPLE_RATE 1000000

struct ingest_args {
	struct server_labels labels;
	int64_t from_ns, until_ns;
	long rate;
	const char *format;
};

static enum MHD_Result bad(struct server_req *r, enum server_reject why, const char *msg)
{
	return server_error(r, 400, why, "%s", msg);
}

/*
 * 0, or -ERANGE when t is before 1970 or more than SERVER_MAX_CLOCK_SKEW_NS
 * after now_ns: a chunk there would outlive retention (or never be reached by
 * it) and keep rollups busy. err names `what`, the time and the allowed skew.
 */
static int check_time(const char *what, int64_t t, int64_t now_ns, char *err, size_t errlen)
{
	time_t sec = (time_t)(t / 1000000000);
	char when[32] = "?";
	struct tm tm;
	int64_t ahead;

	if (t <= 0) {
		snprintf(err, errlen, "%s time %lld ns is not after 1970-01-01", what,
			 (long long)t);
		return -ERANGE;
	}
	if (t <= now_ns || __builtin_sub_overflow(t, now_ns, &ahead) ||
	    ahead <= SERVER_MAX_CLOCK_SKEW_NS)
		return 0;
	if (gmtime_r(&sec, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(err, errlen,
		 "%s time %s is %lld s ahead of this server's clock, over the allowed clock skew "
		 "of %lld s",
		 what, when, (long long)(ahead / 1000000000),
		 (long long)(SERVER_MAX_CLOCK_SKEW_NS / 1000000000));
	return -ERANGE;
}

/* Query-string arguments into a; on failure the reply is already queued (*done). */
static enum MHD_Result ingest_args(struct server_req *r, struct ingest_args *a, bool *ok)
{
	const char *name = server_arg(r, "name"), *from = server_arg(r, "from"),
		   *until = server_arg(r, "until"), *rate = server_arg(r, "sampleRate"),
		   *spy = server_arg(r, "spyName");
	char err[512], *end;
	int64_t now;
	int ret;

	*ok = false;
	a->format = server_arg(r, "format");
	if (!a->format || !*a->format)
		a->format = "folded";
	if (strcmp(a->format, "folded") && strcmp(a->format, "pprof") && strcmp(a->format, "lines"))
		return server_error(r, 400, SERVER_REJ_BAD_FORMAT,
				    "unknown format '%.64s' (pprof, folded, lines)", a->format);
	if (!name)
		return bad(r, SERVER_REJ_BAD_LABELS, "missing 'name' (APP{label=value,...})");
	ret = server_parse_name(name, &a->labels, err, sizeof(err));
	if (ret == -ENOMEM)
		return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory");
	if (ret)
		return bad(r, SERVER_REJ_BAD_LABELS, err);
	now = server_now_ns();
	a->until_ns = now;
	if (until && query_parse_time(until, now, &a->until_ns, err, sizeof(err)))
		return server_error(r, 400, SERVER_REJ_BAD_TIME, "'until': %s", err);
	a->from_ns = a->until_ns;
	if (from && query_parse_time(from, now, &a->from_ns, err, sizeof(err)))
		return server_error(r, 400, SERVER_REJ_BAD_TIME, "'from': %s", err);
	if (a->from_ns > a->until_ns)
		return bad(r, SERVER_REJ_BAD_TIME, "'from' is after 'until'");
	if (check_time("'until'", a->until_ns, now, err, sizeof(err)))
		return bad(r, SERVER_REJ_BAD_TIME, err);
	a->rate = 100;
	if (rate && *rate) {
		a->rate = strtol(rate, &end, 10);
		if (*end || a->rate < 1 || a->rate > SERVER_MAX_SAMPLE_RATE)
			return server_error(r, 400, SERVER_REJ_BAD_PARAM,
					    "sampleRate '%.64s' is not a number from 1 to %d", rate,
					    SERVER_MAX_SAMPLE_RATE);
	}
	if (spy && strlen(spy) > 128)
		return bad(r, SERVER_REJ_BAD_PARAM, "spyName is over 128 bytes");
	*ok = true;
	return MHD_YES;
}

/* The pprof bytes of the request: the multipart field `profile` or the raw body. */
static int pprof_bytes(struct server_req *r, const uint8_t **b, size_t *n)
{
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");

	if (ct && !strncmp(ct, "multipart/form-data", 19))
		return server_multipart_field(ct, r->body, r->len, "profile", b, n);
	*b = r->body;
	*n = r->len;
	return 0;
}

/* A decoded request: a model (text formats) or a flat profile (pprof). */
struct decoded {
	struct profile *p;
	struct profile_flat *f;
};

static enum MHD_Result decode(struct server_req *r, const struct ingest_args *a, struct decoded *d)
{
	char err[512] = "";
	const uint8_t *b;
	size_t n, budget;
	int ret;

	if (strcmp(a->format, "pprof")) {
		ret = profile_text_parse((const char *)r->body, r->len, !strcmp(a->format, "lines"),
					 1000000000 / a->rate, &d->p, err, sizeof(err));
		if (ret == -EINVAL)
			return server_error(r, 400, SERVER_REJ_BAD_PROFILE,
					    "malformed %s profile: %s", a->format, err);
	} else {
		ret = pprof_bytes(r, &b, &n);
		if (ret == -ENOENT)
			return bad(r, SERVER_REJ_BAD_PROFILE,
				   "multipart body has no 'profile' field");
		if (ret)
			return bad(r, SERVER_REJ_BAD_PROFILE, "malformed multipart body");
		budget = server_memory_budget(r->len);
		ret = pprof_decode_flat_budget(b, n, budget, &d->f, err, sizeof(err));
		if (ret == -EFBIG)
			return server_error(
			    r, 413, SERVER_REJ_BOMB,
			    "pprof needs more than this request's memory budget of %zu MiB "
			    "(%u MiB + %u bytes per body byte, at most %u MiB): %s",
			    budget >> 20, SERVER_MEM_BASE >> 20, SERVER_MEM_PER_BODY_BYTE,
			    SERVER_MEM_MAX >> 20, err);
		if (ret == -EINVAL)
			return server_error(r, 400, SERVER_REJ_BAD_PROFILE, "malformed pprof: %s",
					    err);
	}
	if (ret)
		return server_error(r, 500, SERVER_REJ_INTERNAL, "decoding failed: %s",
				    strerror(-ret));
	return MHD_YES;
}

/* Maps a store__append error to a reply. */
static enum MHD_Result store_failed(struct server_req *r, int ret, const char *err)
{
	if (ret == -EDQUOT)
		return server_error(r, 429, SERVER_REJ_TOO_MANY_SERIES, "%s", err);
	if (ret == -ERANGE)
		return server_error(r, 400, SERVER_REJ_BAD_TIME, "%s", err);
	if (ret == -EDOM)
		return server_error(r, 400, SERVER_REJ_BAD_PROFILE, "%s", err);
	if (ret == -E2BIG || ret == -EINVAL)
		return server_error(r, 400, SERVER_REJ_BAD_LABELS, "%s", err);
	if (ret == -ENOSPC) /* the disk is full: retrying later (an agent's spool) can work */
		return server_error(r, 507, SERVER_REJ_DISK_FULL, "storing failed: %s", err);
	return server_error(r, 500, SERVER_REJ_INTERNAL, "storing failed: %s", err);
}

/* -EDOM when a sample value is below 0 (a CPU profile counts up from 0, and
 * negative samples would make totals shrink or go negative). */
static int check_values(const struct profile *p, const struct profile_flat *f, char *err,
			size_t errlen)
{
	size_t n = f ? f->n_samples : profile__n_samples(p);
	struct profile_sample sm;

	for (size_t i = 0; i < n; i++) {
		const int64_t *v = f ? f->samples[i].values : sm.values;

		if (!f && profile__sample(p, i, &sm))
			continue;
		for (int k = 0; k < PROFILE_N_VALUES; k++)
			if (v[k] < 0) {
				snprintf(err, errlen, "sample %zu has a negative value (%lld)", i,
					 (long long)v[k]);
				return -EDOM;
			}
	}
	return 0;
}

/*
 * The rules of every stored profile (/ingest and hearth run alike): refuses a
 * start before 1970 or beyond the clock skew (-ERANGE) and negative sample
 * values (-EDOM); clamps the duration to [0, SERVER_MAX_PROFILE_DURATION_NS]
 * so a chunk's end (start + duration, which retention compares) stays near its
 * start. p or f is changed in place.
 */
static int check_profile(struct profile *p, struct profile_flat *f, char *err, size_t errlen)
{
	int64_t t = f ? f->time_ns : profile__time_ns(p);
	int64_t dur = f ? f->duration_ns : profile__duration_ns(p);
	int ret;

	ret = check_time("profile", t, server_now_ns(), err, errlen)
		  ?: check_values(p, f, err, errlen);
	if (ret)
		return ret;
	if (dur < 0)
		dur = 0;
	if (dur > SERVER_MAX_PROFILE_DURATION_NS)
		dur = SERVER_MAX_PROFILE_DURATION_NS;
	if (f)
		f->duration_ns = dur;
	else
		profile__set_time(p, t, dur);
	return 0;
}

/* Stores p or f (one of them NULL) under the label pairs. */
static int store_labelled(struct server *s, const char *const *keys, const char *const *vals,
			  size_t n, struct profile *p, struct profile_flat *f, char *err,
			  size_t errlen)
{
	struct store_label extra[SERVER_MAX_LABELS];
	struct store_append_result res = {0};
	int ret;

	if (!s->store) {
		snprintf(err, errlen, "this listener has no store");
		return -ENOTSUP;
	}
	if (n > SERVER_MAX_LABELS) {
		snprintf(err, errlen, "too many labels (at most %d)", SERVER_MAX_LABELS);
		return -E2BIG;
	}
	ret = check_profile(p, f, err, errlen);
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		extra[i] = (struct store_label){.name = keys[i], .value = vals[i]};
	ret = f ? store__append_flat(s->store, f, NULL, extra, n, &res, err, errlen)
		: store__append(s->store, p, NULL, extra, n, &res, err, errlen);
	if (!ret)
		server_metrics__ingest(&s->metrics, res.samples > 0 ? (uint64_t)res.samples : 0, 0);
	return ret;
}

int server_store_flat(struct server *s, const char *const *keys, const char *const *vals, size_t n,
		      struct profile_flat *f, char *err, size_t errlen)
{
	if (!f) {
		snprintf(err, errlen, "no profile given");
		return -EINVAL;
	}
	return store_labelled(s, keys, vals, n, NULL, f, err, errlen);
}

static enum MHD_Result store_it(struct server *s, struct server_req *r, struct ingest_args *a,
				struct decoded *d)
{
	char err[512] = "";
	int64_t t = d->f ? d->f->time_ns : profile__time_ns(d->p);
	int ret;

	if (strcmp(a->format, "pprof") || t <= 0 || server_arg(r, "from")) {
		if (d->f) {
			d->f->time_ns = a->from_ns;
			d->f->duration_ns = a->until_ns - a->from_ns;
		} else {
			profile__set_time(d->p, a->from_ns, a->until_ns - a->from_ns);
		}
	}
	ret = store_labelled(s, (const char *const *)a->labels.keys,
			     (const char *const *)a->labels.vals, a->labels.n, d->p, d->f, err,
			     sizeof(err));
	if (ret)
		return store_failed(r, ret, err);
	__atomic_add_fetch(&s->metrics.ingested_bytes, r->len, __ATOMIC_RELAXED);
	return server_reply(r, 200, "application/json", strdup("{}\n"), 3);
}

/* Waits up to SERVER_DECODE_WAIT_S for one of the SERVER_MAX_DECODES slots. 0 or -EBUSY. */
static int decode_slot(struct server *s)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until); /* sem_timedwait's clock */
	until.tv_sec += SERVER_DECODE_WAIT_S;
	while (sem_timedwait(&s->decodes, &until))
		if (errno != EINTR)
			return -EBUSY;
	return 0;
}

enum MHD_Result server_h_ingest(struct server *s, struct server_req *r)
{
	struct ingest_args a = {0};
	struct decoded d = {0};
	enum MHD_Result ret;
	bool ok;

	if (strcmp(r->method, "POST"))
		return server_error(r, 405, SERVER_REJ_METHOD, "/ingest takes POST");
	if (!s->store)
		return server_error(r, 404, SERVER_REJ_NOT_FOUND, "this listener has no store");
	ret = ingest_args(r, &a, &ok);
	if (ok && decode_slot(s)) {
		ret = server_error(r, 503, SERVER_REJ_BUSY,
				   "%d bodies are being decoded (the limit) and none finished "
				   "within %d s; retry later",
				   SERVER_MAX_DECODES, SERVER_DECODE_WAIT_S);
		ok = false;
	}
	if (ok) {
		ret = decode(r, &a, &d);
		sem_post(&s->decodes);
	}
	if (ok && (d.p || d.f))
		ret = store_it(s, r, &a, &d);
	profile__free(d.p);
	profile_flat__free(d.f);
	server_labels__fini(&a.labels);
	return ret;
}
