/*
 * POST /ingest, compatible with Pyroscope's: name=APP{k=v,...}, from, until
 * (unix s/ms/µs/ns), format=pprof|folded|lines (folded by default), sampleRate
 * (default 100: period 1e9/sampleRate ns), spyName; a pprof comes as the raw
 * body or as the multipart field `profile`.
 *
 * This file is the HTTP boundary of ingest: it parses the query string, decodes
 * the body into a flat profile (a pprof directly, without building the model;
 * the text formats through their model and profile__to_flat), and hands an
 * ingest request to ingest__store (src/ingest/), the path every producer
 * takes. Decode fully, validate fully, then one append: a rejected request
 * stores nothing (the store's append is itself atomic).
 *
 * Decoding is where a small body turns into a lot of memory (a 250 KiB gzip can
 * inflate to 256 MiB of tiny messages): a pprof, and a text format's model, decode
 * within a budget sized by its body (server_memory_budget), and at most SERVER_MAX_DECODES bodies
 * decode at once, so the peak is bounded by a few budgets whatever the number of clients.
 */
#include "server_impl.h"
#include "base/base.h"
#include "ingest/ingest.h"

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

/* Query-string arguments into a; *ok false: the reply (an error) is already queued. */
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
	now = ingest_now_ns();
	a->until_ns = now;
	if (until && base_time_parse(until, now, &a->until_ns, err, sizeof(err)))
		return server_error(r, 400, SERVER_REJ_BAD_TIME, "'until': %s", err);
	a->from_ns = a->until_ns;
	if (from && base_time_parse(from, now, &a->from_ns, err, sizeof(err)))
		return server_error(r, 400, SERVER_REJ_BAD_TIME, "'from': %s", err);
	if (a->from_ns > a->until_ns)
		return bad(r, SERVER_REJ_BAD_TIME, "'from' is after 'until'");
	if (ingest_check_time("'until'", a->until_ns, now, err, sizeof(err)))
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

/* The body of a text format (folded, lines) as a flat profile, within budget. */
static int decode_text(struct server_req *r, const struct ingest_args *a, size_t budget,
		       struct profile_flat **f, char *err, size_t errlen)
{
	struct profile *p = NULL;
	int ret =
	    profile_text_parse_budget((const char *)r->body, r->len, !strcmp(a->format, "lines"),
				      1000000000 / a->rate, budget, &p, err, errlen);

	if (!ret && (ret = profile__to_flat(p, f)))
		snprintf(err, errlen, "%s", strerror(-ret));
	profile__free(p);
	return ret == -E2BIG ? -ENOMEM : ret; /* -EINVAL stays the parser's */
}

/* The body as a flat profile (*f); on failure the reply is already queued. */
static enum MHD_Result decode(struct server_req *r, const struct ingest_args *a,
			      struct profile_flat **f)
{
	size_t n, budget = r->budget; /* the route's: server_memory_budget(len) */
	char err[512] = "";
	const uint8_t *b;
	int ret;

	if (strcmp(a->format, "pprof")) {
		ret = decode_text(r, a, budget, f, err, sizeof(err));
		if (ret == -EFBIG)
			return server_error(
			    r, 413, SERVER_REJ_BOMB,
			    "%s text needs more than this request's memory budget of %zu MiB "
			    "(%u MiB + %u bytes per body byte, at most %u MiB): %s",
			    a->format, budget >> 20, SERVER_MEM_BASE >> 20,
			    SERVER_MEM_PER_BODY_BYTE, SERVER_MEM_MAX >> 20, err);
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
		ret = pprof_decode_flat_budget(b, n, budget, f, err, sizeof(err));
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

enum MHD_Result server_store_failed(struct server_req *r, int ret, const char *err)
{
	if (ret == -EDQUOT)
		return server_error(r, 429, SERVER_REJ_TOO_MANY_SERIES, "%s", err);
	if (ret == -ERANGE)
		return server_error(r, 400, SERVER_REJ_BAD_TIME, "%s", err);
	if (ret == -EDOM)
		return server_error(r, 400, SERVER_REJ_BAD_PROFILE, "%s", err);
	if (ret == -E2BIG || ret == -EINVAL)
		return server_error(r, 400, SERVER_REJ_BAD_LABELS, "%s", err);
	if (ret == -EHOSTDOWN) /* the ClickHouse backend's database: an agent spools, retries */
		return server_error(r, 503, SERVER_REJ_BUSY, "storing failed: %s", err);
	if (ret == -ENOSPC) /* the disk is full: retrying later (an agent's spool) can work */
		return server_error(r, 507, SERVER_REJ_DISK_FULL, "storing failed: %s", err);
	return server_error(r, 500, SERVER_REJ_INTERNAL, "storing failed: %s", err);
}

static enum MHD_Result store_it(struct server *s, struct server_req *r, struct ingest_args *a,
				struct profile_flat *f)
{
	struct store_label labels[SERVER_MAX_LABELS];
	struct store_append_result res = {0};
	struct ingest_request req = {.labels = labels, .n_labels = a->labels.n, .profile = f};
	char err[512] = "";
	int ret;

	for (size_t i = 0; i < a->labels.n; i++)
		labels[i] = (struct store_label){a->labels.keys[i], a->labels.vals[i]};
	/* A pprof keeps its own time unless the request gives one ('from'). */
	if (strcmp(a->format, "pprof") || f->time_ns <= 0 || server_arg(r, "from")) {
		req.has_range = true;
		req.from_ns = a->from_ns;
		req.until_ns = a->until_ns;
	}
	ret =
	    ingest__store(s->store, &req, ingest_now_ns(), &res, err, sizeof(err));
	if (ret)
		return server_store_failed(r, ret, err);
	server__count_ingest(s, res.samples);
	__atomic_add_fetch(&s->metrics.ingested_bytes, r->len, __ATOMIC_RELAXED);
	return server_reply(r, 200, "application/json", strdup("{}\n"), 3);
}

void server__count_ingest(struct server *s, int64_t samples)
{
	server_metrics__ingest(&s->metrics, samples > 0 ? (uint64_t)samples : 0, 0);
}

enum MHD_Result server_h_ingest(struct server *s, struct server_req *r)
{
	struct ingest_args a = {0};
	struct profile_flat *f = NULL;
	enum MHD_Result ret;
	bool ok;

	ret = ingest_args(r, &a, &ok);
	if (ok) /* on one of the decode workers: the slot is the worker */
		ret = decode(r, &a, &f);
	if (ok && f)
		ret = store_it(s, r, &a, f);
	profile_flat__free(f);
	server_labels__fini(&a.labels);
	return ret;
}
