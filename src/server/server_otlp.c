/*
 * POST /v1development/profiles: OTLP/HTTP profiles in (opentelemetry-proto v1.10,
 * ExportProfilesServiceRequest), as application/x-protobuf or application/json,
 * optionally Content-Encoding: gzip. The OTel Collector's otlphttp exporter sends
 * this; the OTel eBPF profiler itself speaks OTLP/gRPC only (docs/api.md, "OTLP
 * profiles", shows the Collector in between).
 *
 * The same guards as /ingest: the body limit, one of SERVER_MAX_DECODES decode
 * slots, a memory budget sized by the body (half of it for the inflated bytes),
 * PROFILE_MAX_FRAMES, ingest's label rules. Everything is decoded, symbolized,
 * labelled and flattened before the first append, so a bad request stores
 * nothing; a request of several CPU profiles is then several appends (a store
 * error in the middle — disk full, series limit — leaves the ones before).
 * Profiles without samples are skipped (said in the answer's partial success and
 * the log), and each profile kept is counted against the budget, so the appends
 * of one request are bounded by its body: at most (budget/2) / OTLP_PROFILE_COST.
 * There is no batch append yet: each is its own store transaction.
 *
 * Native frames sent without names are symbolized here by build-id through one
 * symbolizer per server (its .build-id tree and DEBUGINFOD_URLS), under a mutex,
 * waiting at most SERVER_OTLP_DEBUGINFOD_WAIT_MS per request for debuginfod.
 */
#include "server_impl.h"
#include "ingest/ingest.h"
#include "symbolize/symbolize.h"
#include "base/base.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Longest a request waits for debuginfod fetches in all. */
#define SERVER_OTLP_DEBUGINFOD_WAIT_MS 5000
/* Frames kept of one address's answer (a function and its inlined callees). */
#define OTLP_MAX_SYM_FRAMES_SERVER 16

static pthread_mutex_t otlp_sym_lock = PTHREAD_MUTEX_INITIALIZER;

struct sym_ctx {
	struct server *s;
	int64_t deadline_ns;
	char *strs[3 * OTLP_MAX_SYM_FRAMES_SERVER]; /* owned copies of the last answer */
};

static void sym_ctx__clear(struct sym_ctx *c)
{
	for (size_t i = 0; i < sizeof(c->strs) / sizeof(*c->strs); i++) {
		free(c->strs[i]);
		c->strs[i] = NULL;
	}
}

/* Copies of the symbolizer's strings: they are the symbolizer's until its next call,
 * which another request's thread may make once the lock is released. */
static int copy_frames(struct sym_ctx *c, const struct sym_result *res, struct otlp_frame *out,
		       size_t max)
{
	size_t n = res->n < max ? res->n : max;

	if (n > OTLP_MAX_SYM_FRAMES_SERVER)
		n = OTLP_MAX_SYM_FRAMES_SERVER;
	for (size_t i = 0; i < n; i++) {
		const struct sym_frame *f = &res->frames[i];
		char **s = &c->strs[3 * i];

		s[0] = strdup(f->name ? f->name : "");
		s[1] = strdup(f->system_name ? f->system_name : "");
		s[2] = strdup(f->file ? f->file : "");
		if (!s[0] || !s[1] || !s[2])
			return -ENOMEM;
		out[i] = (struct otlp_frame){s[0], s[1], s[2], f->line};
	}
	return (int)n;
}

static int resolve_locked(struct sym_ctx *c, const char *bid, const char *file, uint64_t off,
			  struct otlp_frame *out, size_t max)
{
	struct server *s = c->s;
	const struct sym_result *res;
	struct sym_object *obj;
	int64_t left_ms;
	int err;

	if (!s->otlp_sym && !(s->otlp_sym = symbolizer__new(NULL)))
		return -ENOMEM;
	err = symbolizer__object_by_build_id(s->otlp_sym, bid, file, &obj);
	left_ms = (c->deadline_ns - server_now_ns()) / 1000000;
	if (err == -EAGAIN && left_ms > 0) {
		symbolizer__wait_debuginfo(s->otlp_sym, (int)left_ms);
		err = symbolizer__object_by_build_id(s->otlp_sym, bid, file, &obj);
	}
	if (err)
		return err == -ENOMEM ? err : 0;
	left_ms = (c->deadline_ns - server_now_ns()) / 1000000;
	if (!sym_object__settled(obj) && left_ms > 0) /* its debug info is on the way */
		symbolizer__wait_debuginfo(s->otlp_sym, (int)left_ms);
	if ((err = symbolizer__resolve(s->otlp_sym, obj, off, &res)))
		return err;
	return copy_frames(c, res, out, max);
}

static int resolve(void *ctx, const char *bid, const char *file, uint64_t off,
		   struct otlp_frame *out, size_t max)
{
	struct sym_ctx *c = ctx;
	int r;

	sym_ctx__clear(c);
	pthread_mutex_lock(&otlp_sym_lock);
	r = resolve_locked(c, bid, file, off, out, max);
	pthread_mutex_unlock(&otlp_sym_lock);
	return r;
}

void server_otlp__stop(struct server *s)
{
	symbolizer__free(s->otlp_sym);
	s->otlp_sym = NULL;
}

/* ---- the request ---- */

static const char *header(struct server_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* Whether content type ct (parameters ignored) is t. */
static bool ctype_is(const char *ct, const char *t)
{
	size_t n = strlen(t);

	return !strncasecmp(ct, t, n) && (ct[n] == 0 || ct[n] == ';' || ct[n] == ' ');
}

/* The body, inflated when gzip'd (*owned then the caller's to free); on failure the
 * reply is already queued and *ok false. */
static enum MHD_Result body(struct server_req *r, size_t budget, const uint8_t **b, size_t *n,
			    uint8_t **owned, bool *ok)
{
	const char *enc = header(r, "Content-Encoding");
	char err[256] = "";
	int ret;

	*ok = false;
	*b = r->body;
	*n = r->len;
	if (!enc || !*enc || !strcasecmp(enc, "identity")) {
		*ok = true;
		return MHD_YES;
	}
	if (strcasecmp(enc, "gzip"))
		return server_error(r, 415, SERVER_REJ_BAD_FORMAT,
				    "Content-Encoding '%.64s' is not supported (gzip, identity)",
				    enc);
	ret = profile_gunzip(r->body, r->len, budget / 2, owned, n, err, sizeof(err));
	if (ret == -EFBIG)
		return server_error(r, 413, SERVER_REJ_BOMB,
				    "the gzip body inflates past this request's memory budget "
				    "(%zu MiB for inflating): %s",
				    (budget / 2) >> 20, err);
	if (ret == -EINVAL)
		return server_error(r, 400, SERVER_REJ_BAD_PROFILE, "bad gzip body: %s", err);
	if (ret)
		return server_error(r, 500, SERVER_REJ_INTERNAL, "inflating failed: %s",
				    strerror(-ret));
	*b = *owned;
	*ok = true;
	return MHD_YES;
}

static enum MHD_Result decode_failed(struct server_req *r, int ret, const char *err, bool json,
				     size_t budget)
{
	const char *what = json ? "OTLP/JSON" : "OTLP protobuf";

	if (ret == -EFBIG)
		return server_error(r, 413, SERVER_REJ_BOMB,
				    "%s request needs more than its memory budget of %zu MiB: %s",
				    what, budget >> 20, err);
	if (ret == -EINVAL || ret == -EPROTO)
		return server_error(r, 400, SERVER_REJ_BAD_PROFILE, "malformed %s request: %s",
				    what, err);
	if (ret == -E2BIG)
		return server_error(r, 400, SERVER_REJ_BAD_LABELS, "%s", err);
	return server_error(r, 500, SERVER_REJ_INTERNAL, "decoding failed: %s", strerror(-ret));
}

/* Everything a request stores, made before the first append. */
struct otlp_batch {
	struct otlp_decoded dec;
	struct server_labels *labels; /* one per series */
	struct profile_flat **flats;  /* one per series */
};

static void batch__fini(struct otlp_batch *b)
{
	for (size_t i = 0; i < b->dec.n_series; i++) {
		if (b->labels)
			server_labels__fini(&b->labels[i]);
		if (b->flats)
			profile_flat__free(b->flats[i]);
	}
	free(b->labels);
	free(b->flats);
	otlp_decoded__fini(&b->dec);
}

/* What ingest__store would refuse of a profile's time, checked for every profile
 * before the first is stored (its own checks come one profile at a time; negative
 * values are otlp_decode's). false: the reply is queued. */
static bool check_time(struct server_req *r, const struct profile_flat *f, size_t i)
{
	char err[256];

	if (f->time_ns > 0 && ingest_check_time("the profile's time_unix_nano", f->time_ns,
						ingest_now_ns(), err, sizeof(err))) {
		server_error(r, 400, SERVER_REJ_BAD_TIME, "profile %zu: %s", i, err);
		return false;
	}
	return true;
}

/* Checks every series' labels (ingest's rules) and flattens its model. */
static enum MHD_Result prepare(struct server_req *r, struct otlp_batch *b, bool *ok)
{
	char err[512];
	int ret;

	*ok = false;
	b->labels = calloc(b->dec.n_series + 1, sizeof(*b->labels));
	b->flats = calloc(b->dec.n_series + 1, sizeof(*b->flats));
	if (!b->labels || !b->flats)
		return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory");
	for (size_t i = 0; i < b->dec.n_series; i++) {
		const struct otlp_series *s = &b->dec.series[i];

		for (size_t k = 0; k < s->n_labels; k++) {
			ret = server_labels__add(&b->labels[i], s->labels[k].key,
						 s->labels[k].value, err, sizeof(err));
			if (ret == -ENOMEM)
				return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory");
			if (ret)
				return server_error(r, 400, SERVER_REJ_BAD_LABELS,
						    "resource attribute as label %s: %s",
						    s->labels[k].key, err);
		}
		b->flats[i] = b->dec.series[i].flat; /* flattened by otlp_decode (o.flatten) */
		b->dec.series[i].flat = NULL;
		if (!check_time(r, b->flats[i], i))
			return MHD_YES;
	}
	*ok = true;
	return MHD_YES;
}

/* Stores every profile of the request in one transaction (one fsync): all or none,
 * so a refused request stores nothing. */
static enum MHD_Result store_all(struct server *s, struct server_req *r, struct otlp_batch *b,
				 int64_t *samples, bool *ok)
{
	int64_t now = ingest_now_ns();
	char err[512] = "";
	int ret = store__batch_begin(s->store, err, sizeof(err));

	for (size_t i = 0; !ret && i < b->dec.n_series; i++) {
		struct store_label labels[SERVER_MAX_LABELS];
		struct store_append_result res = {0};
		struct ingest_request req = {
		    .labels = labels, .n_labels = b->labels[i].n, .profile = b->flats[i]};

		for (size_t k = 0; k < b->labels[i].n; k++)
			labels[k] =
			    (struct store_label){b->labels[i].keys[k], b->labels[i].vals[k]};
		if (b->flats[i]->time_ns <= 0) { /* no time given: now */
			req.has_range = true;
			req.from_ns = req.until_ns = now;
		}
		ret = ingest__store(s->store, &req, now, &res, err, sizeof(err));
		if (ret && b->dec.n_series > 1) { /* name the profile in a request of several */
			char e2[sizeof(err)];

			snprintf(e2, sizeof(e2), "profile %zu of %zu: %.400s", i + 1,
				 b->dec.n_series, err);
			memcpy(err, e2, sizeof(err));
		}
		*samples += res.samples;
	}
	if (ret) {
		store__batch_end(s->store, false, NULL, 0);
		*ok = false;
		return server_store_failed(r, ret, err);
	}
	if ((ret = store__batch_end(s->store, true, err, sizeof(err)))) {
		*ok = false;
		return server_store_failed(r, ret, err);
	}
	return MHD_YES;
}

static void put_varint(FILE *f, uint64_t x)
{
	uint8_t b[BASE_VARINT_MAX];

	fwrite(b, 1, (size_t)(base_varint_put(b, x) - b), f);
}

/* The partial-success message: why profiles were rejected, and how many empty
 * ones were skipped (OTLP lets a full success carry a message with
 * rejected_profiles 0, as a warning). */
static void reply_message(const struct otlp_decoded *d, char *msg, size_t len)
{
	int n = snprintf(msg, len, "%s", d->rejected ? d->reject_reason : "");

	if (d->empty && n >= 0 && (size_t)n < len)
		snprintf(msg + n, len - (size_t)n,
			 "%s%" PRIu64 " profiles without samples were skipped (nothing to store)",
			 n ? "; " : "", d->empty);
}

/* ExportProfilesServiceResponse in the request's encoding: empty, or a partial
 * success naming the profiles not stored (and those skipped). */
static enum MHD_Result reply(struct server_req *r, const struct otlp_decoded *d, bool json)
{
	char msg[384];
	size_t msg_len;
	struct server_mem m;
	uint64_t n = d->rejected;

	reply_message(d, msg, sizeof(msg));
	msg_len = strlen(msg);
	if (server_mem__open(&m))
		return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory");
	if (json && msg_len) {
		fprintf(m.f,
			"{\"partialSuccess\":{\"rejectedProfiles\":\"%" PRIu64
			"\",\"errorMessage\":\"",
			n);
		for (const char *p = msg; *p; p++) { /* the sample type's name is the sender's */
			if (*p == '"' || *p == '\\')
				fputc('\\', m.f);
			fputc((unsigned char)*p < 0x20 ? '?' : *p, m.f);
		}
		fputs("\"}}\n", m.f);
	} else if (json) {
		fputs("{}\n", m.f);
	} else if (msg_len) { /* 1: partial_success { 1: rejected_profiles, 2: error_message } */
		fputc(0x0a, m.f);
		put_varint(m.f, (n ? 1 + base_varint_len(n) : 0) + 1 + base_varint_len(msg_len) +
				    msg_len);
		if (n) {
			fputc(0x08, m.f);
			put_varint(m.f, n);
		}
		fputc(0x12, m.f);
		put_varint(m.f, msg_len);
		fwrite(msg, 1, msg_len, m.f);
	}
	return server_reply_mem(r, 200, json ? "application/json" : "application/x-protobuf", &m);
}

static enum MHD_Result handle(struct server *s, struct server_req *r, bool json)
{
	struct sym_ctx sc = {.s = s,
			     .deadline_ns = server_now_ns() +
					    SERVER_OTLP_DEBUGINFOD_WAIT_MS * (int64_t)1000000};
	struct otlp_opts o = {.json = json, .flatten = true, .symbolize = resolve, .ctx = &sc};
	size_t budget = r->budget, n; /* the route's: server_memory_budget(len) */
	struct otlp_batch b = {0};
	uint8_t *owned = NULL;
	const uint8_t *buf;
	int64_t samples = 0;
	enum MHD_Result ret;
	char err[512] = "";
	bool ok;
	int dr;

	ret = body(r, budget, &buf, &n, &owned, &ok);
	if (ok) {
		o.budget = budget / 2;
		dr = otlp_decode(buf, n, &o, &b.dec, err, sizeof(err));
		sym_ctx__clear(&sc);
		free(owned);
		owned = NULL;
		if (dr)
			ret = decode_failed(r, dr, err, json, o.budget);
		ok = !dr;
	}
	if (ok)
		ret = prepare(r, &b, &ok);
	if (ok)
		ret = store_all(s, r, &b, &samples, &ok);
	if (ok) {
		server__count_ingest(s, samples);
		__atomic_add_fetch(&s->metrics.ingested_bytes, r->len, __ATOMIC_RELAXED);
		if (b.dec.frames_symbolized || b.dec.frames_unsymbolized)
			server_log(s, "debug",
				   "otlp: %" PRIu64 " native frames symbolized, %" PRIu64
				   " left as module+offset",
				   b.dec.frames_symbolized, b.dec.frames_unsymbolized);
		if (b.dec.empty)
			server_log(s, "debug",
				   "otlp: %" PRIu64 " profiles without samples skipped, %zu stored",
				   b.dec.empty, b.dec.n_series);
		ret = reply(r, &b.dec, json);
	}
	free(owned);
	batch__fini(&b);
	return ret;
}

enum MHD_Result server_h_otlp(struct server *s, struct server_req *r)
{
	const char *ct = header(r, "Content-Type");
	bool json;

	if (!ct || !(ctype_is(ct, "application/x-protobuf") ||
		     ctype_is(ct, "application/protobuf") || ctype_is(ct, "application/json")))
		return server_error(
		    r, 415, SERVER_REJ_BAD_FORMAT,
		    "Content-Type '%.64s' is not an OTLP one (application/x-protobuf, "
		    "application/json)",
		    ct ? ct : "");
	json = ctype_is(ct, "application/json");
	return handle(s, r, json); /* on a decode worker: the slot is the worker */
}
