/*
 * The query API (/api/...) and /debug/pprof/profile: thin wrappers around
 * src/query — parse the arguments, run the query, map its error codes to HTTP
 * (-EINVAL/-E2BIG: 400, anything else: 500; -EUCLEAN, stored data that does
 * not decode, says so).
 */
#include "server_impl.h"
#include "base/base.h"
#include "query/query.h"
#include "server_connect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Argument name, when given, into *out: a count from 1 to QUERY_MAX_NODES. */
static int count_arg(struct server_req *r, const char *name, size_t *out, char *err, size_t errlen)
{
	const char *v = server_arg(r, name);
	char *end;
	long n;

	if (!v || !*v)
		return 0;
	n = strtol(v, &end, 10);
	if (*end || n < 1 || n > QUERY_MAX_NODES) {
		snprintf(err, errlen, "%s '%.32s' is not a number from 1 to %d", name, v,
			 QUERY_MAX_NODES);
		return -EINVAL;
	}
	*out = (size_t)n;
	return 0;
}

/* Fills q from query/from/until/maxNodes/topRows/step/groupBy with a prefix ("" or
 * "left"). */
static int request_args(struct server_req *r, const char *prefix, struct query_request *q,
			char *err, size_t errlen)
{
	char name[64], uname[64];
	const char *from, *until, *v;
	int ret;

	snprintf(name, sizeof(name), "%squery", prefix);
	q->query = server_arg(r, name);
	if (!q->query && prefix[0])
		q->query = server_arg(r, prefix); /* /api/diff?left=SEL&right=SEL */
	snprintf(name, sizeof(name), "%sfrom", prefix);
	from = server_arg(r, name);
	snprintf(uname, sizeof(uname), "%suntil", prefix);
	until = server_arg(r, uname);
	/* /api/diff: a side without its own range takes from/until (as render-diff) */
	if (prefix[0] && (!from || !*from) && (!until || !*until)) {
		from = server_arg(r, "from");
		until = server_arg(r, "until");
		snprintf(name, sizeof(name), "from");
		snprintf(uname, sizeof(uname), "until");
	}
	if (query_parse_range_named(name, from, uname, until, server_now_ns(), &q->from_ns,
				    &q->until_ns, err, errlen))
		return -EINVAL;
	if ((ret = count_arg(r, "maxNodes", &q->max_nodes, err, errlen)) ||
	    (ret = count_arg(r, "topRows", &q->top_rows, err, errlen)))
		return ret;
	if ((v = server_arg(r, "step")) && *v && base_duration_parse(v, &q->step_ns, err, errlen))
		return -EINVAL;
	q->group_by = server_arg(r, "groupBy");
	/* unnamed=addresses: a frame per address of code without symbols (default: one
	 * per object, "libz.so.1 [no symbols]") */
	if ((v = server_arg(r, "unnamed")) && *v) {
		if (strcmp(v, "addresses") && strcmp(v, "objects")) {
			snprintf(err, errlen, "unnamed '%s' is neither 'objects' nor 'addresses'", v);
			return -EINVAL;
		}
		q->expand_unnamed = !strcmp(v, "addresses");
	}
	return 0;
}

static enum MHD_Result query_failed(struct server_req *r, int ret, const char *err)
{
	if (ret == -EINVAL || ret == -E2BIG)
		return server_error(r, 400, SERVER_REJ_BAD_QUERY, "%s", err);
	if (ret == -EHOSTDOWN) /* the ClickHouse backend's database: retry later */
		return server_error(r, 503, SERVER_REJ_BUSY,
				    "query failed: the store's ClickHouse did not answer or failed "
				    "(%s; the server log has its message); retry later",
				    err[0] ? err : strerror(-ret));
	if (ret == -EUCLEAN)
		return server_error(r, 500, SERVER_REJ_INTERNAL,
				    "query failed: the store's data is corrupt (%s); see the "
				    "server log and docs/storage.md",
				    err[0] ? err : strerror(-ret));
	return server_error(r, 500, SERVER_REJ_INTERNAL, "query failed: %s",
			    err[0] ? err : strerror(-ret));
}

/* Writes the merged profile in the format asked for. */
static int write_profile(struct server_req *r, const struct query_request *q, FILE *f,
			 const char **ctype, char *err, size_t errlen)
{
	const char *fmt = server_arg(r, "format");
	struct profile *p = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	if (fmt && strcmp(fmt, "pprof") && strcmp(fmt, "folded") && strcmp(fmt, "tree") &&
	    strcmp(fmt, "top") && strcmp(fmt, "topjson") && strcmp(fmt, "svg")) {
		snprintf(err, errlen,
			 "unknown format '%.64s' (pprof, folded, svg, tree, top, topjson)", fmt);
		return -EINVAL;
	}
	if (!fmt || !strcmp(fmt, "tree")) {
		*ctype = "application/json";
		return query_tree_json(r->srv->store, q, f, err, errlen);
	}
	if (!strcmp(fmt, "topjson")) { /* the web UI's top table: top_write's rows as JSON */
		*ctype = "application/json";
		return query_top_json(r->srv->store, q, f, err, errlen);
	}
	ret = query_profile(r->srv->store, q, &p, err, errlen);
	if (ret)
		return ret;
	*ctype = "text/plain; charset=utf-8";
	if (!strcmp(fmt, "pprof")) {
		*ctype = "application/octet-stream";
		ret = pprof_encode(p, &buf, &len);
		if (!ret && fwrite(buf, 1, len, f) != len)
			ret = -ENOMEM;
		free(buf);
	} else if (!strcmp(fmt, "folded")) {
		ret = folded_write(p, f);
	} else if (!strcmp(fmt, "svg")) {
		char title[256];

		snprintf(title, sizeof(title), "hearth %.200s",
			 q->query && q->query[0] ? q->query : "(all series)");
		*ctype = "image/svg+xml";
		ret = svg_write(p, f, title);
	} else {
		ret = top_write(p, f, q->max_nodes);
	}
	profile__free(p);
	return ret;
}

/* /api/diff's confidence (0.5-0.9999), normalize (share|rate) and interval (the
 * statistics' interval width, 1 s to 1 d) into q. */
static int stats_args(struct server_req *r, struct query_request *q, char *err, size_t errlen)
{
	const char *c = server_arg(r, "confidence"), *n = server_arg(r, "normalize");
	const char *iv = server_arg(r, "interval");
	enum query_norm norm = QUERY_NORM_SHARE;
	char *end;

	if (iv && *iv) {
		if (base_duration_parse(iv, &q->interval_ns, err, errlen))
			return -EINVAL;
		if (q->interval_ns < 1000000000ll || q->interval_ns > 86400ll * 1000000000ll) {
			snprintf(err, errlen, "interval '%.32s' is not a duration from 1s to 1d", iv);
			return -EINVAL;
		}
	}

	if (c && *c) {
		q->confidence = strtod(c, &end);
		if (*end || !(q->confidence >= QUERY_MIN_CONFIDENCE) ||
		    !(q->confidence <= QUERY_MAX_CONFIDENCE)) {
			snprintf(err, errlen, "confidence '%.32s' is not a number from %g to %g", c,
				 QUERY_MIN_CONFIDENCE, QUERY_MAX_CONFIDENCE);
			return -EINVAL;
		}
	}
	if (n && *n && query_norm_parse(n, &norm)) {
		snprintf(err, errlen, "normalize '%.32s' is not share or rate", n);
		return -EINVAL;
	}
	q->normalize = norm;
	return 0;
}

/* /api/regressions' own parameters (baseline, baselineFrom/baselineUntil, kind,
 * limit; normalize defaults to rate) into o, and confidence into q. */
static int regress_args(struct server_req *r, struct query_request *q,
			struct query_regressions_opts *o, char *err, size_t errlen)
{
	const char *b = server_arg(r, "baseline"), *bf = server_arg(r, "baselineFrom");
	const char *bu = server_arg(r, "baselineUntil"), *k = server_arg(r, "kind");
	const char *n = server_arg(r, "normalize"), *l = server_arg(r, "limit");
	char *end;
	long lim;
	int ret;

	memset(o, 0, sizeof(*o));
	if ((ret = stats_args(r, q, err, errlen)))
		return ret;
	o->share = n && !strcmp(n, "share"); /* stats_args checked it; default rate */
	if (b && *b && query_baseline_parse(b, &o->baseline)) {
		snprintf(err, errlen, "baseline '%.32s' is not previous, 1d or 7d", b);
		return -EINVAL;
	}
	if ((bf && *bf) || (bu && *bu)) {
		if (b && *b) {
			snprintf(err, errlen, "baseline '%.32s' and baselineFrom/baselineUntil: give "
				 "one of them", b);
			return -EINVAL;
		}
		if (!bf || !*bf || !bu || !*bu) {
			snprintf(err, errlen, "%s is missing: baselineFrom and baselineUntil go "
				 "together", !bf || !*bf ? "baselineFrom" : "baselineUntil");
			return -EINVAL;
		}
		o->baseline = QUERY_BASELINE_RANGE;
		if (query_parse_range_named("baselineFrom", bf, "baselineUntil", bu,
					    server_now_ns(), &o->base_from_ns, &o->base_until_ns,
					    err, errlen))
			return -EINVAL;
	}
	if (k && *k && strcmp(k, "self") && strcmp(k, "total")) {
		snprintf(err, errlen, "kind '%.32s' is neither self nor total", k);
		return -EINVAL;
	}
	o->total = k && !strcmp(k, "total");
	if (l && *l) {
		lim = strtol(l, &end, 10);
		if (*end || lim < 1 || lim > QUERY_REGRESSIONS_MAX_LIMIT) {
			snprintf(err, errlen, "limit '%.32s' is not a number from 1 to %d", l,
				 QUERY_REGRESSIONS_MAX_LIMIT);
			return -EINVAL;
		}
		o->limit = (size_t)lim;
	}
	return 0;
}

/* Runs the /api endpoint named by the path. */
static int api_dispatch(struct server_req *r, FILE *f, const char **ctype, char *err, size_t errlen)
{
	struct query_request q = {0}, right = {0};
	struct store *st = r->srv->store;
	const char *path = r->url + strlen("/api/");
	int ret;

	*ctype = "application/json";
	if (!strcmp(path, "diff")) {
		if ((ret = request_args(r, "left", &q, err, errlen)) ||
		    (ret = request_args(r, "right", &right, err, errlen)) ||
		    (ret = stats_args(r, &q, err, errlen)))
			return ret;
		right.max_nodes = q.max_nodes;
		return query_diff_json(st, &q, &right, f, err, errlen);
	}
	if ((ret = request_args(r, "", &q, err, errlen)))
		return ret;
	if (!strcmp(path, "regressions")) {
		struct query_regressions_opts o;

		return regress_args(r, &q, &o, err, errlen) ?:
		       query_regressions_json(st, &q, &o, f, err, errlen);
	}
	if (!strcmp(path, "labels"))
		return query_labels_json(st, &q, f, err, errlen);
	if (!strcmp(path, "series"))
		return query_series_json(st, &q, f, err, errlen);
	if (!strcmp(path, "profile"))
		return write_profile(r, &q, f, ctype, err, errlen);
	if (!strcmp(path, "timeline"))
		return query_timeline_json(st, &q, f, err, errlen);
	if (!strncmp(path, "label/", 6)) {
		char name[256];
		const char *slash = strchr(path + 6, '/');

		if (slash && !strcmp(slash, "/values") &&
		    (size_t)(slash - path - 6) < sizeof(name)) {
			snprintf(name, sizeof(name), "%.*s", (int)(slash - path - 6), path + 6);
			return query_label_values_json(st, name, &q, f, err, errlen);
		}
	}
	return -ENOENT;
}

enum MHD_Result server_h_api(struct server *s, struct server_req *r)
{
	struct server_mem m;
	const char *ctype = "application/json";
	char err[512] = "";
	int ret;

	(void)s; /* the pipeline checked the method and that there is a store */
	r->is_query = true;
	if (server_mem__open(&m))
		return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory");
	ret = api_dispatch(r, m.f, &ctype, err, sizeof(err));
	if (ret == -ENOENT && !err[0]) {
		server_mem__discard(&m);
		return server_error(r, 404, SERVER_REJ_NOT_FOUND, "no such endpoint '%.200s'",
				    r->url);
	}
	if (ret) {
		server_mem__discard(&m);
		return query_failed(r, ret, err);
	}
	return server_reply_mem(r, 200, ctype, &m);
}

/*
 * GET /debug/pprof/profile?seconds=N, on the event thread: checks the request and
 * holds one of SERVER_MAX_PROFILES_IN_FLIGHT slots (released when the request ends,
 * server.c). From a store, the request waits `seconds` suspended, holding no
 * thread, then runs as a query; a live profile (agent, run) samples on a thread of
 * its own.
 */
static enum MHD_Result pprof_stored(struct server *s, struct server_req *r);
static enum MHD_Result pprof_live(struct server *s, struct server_req *r);

enum MHD_Result server_h_pprof(struct server *s, struct server_req *r)
{
	const char *sec = server_arg(r, "seconds"), *query = server_arg(r, "query");
	bool live = s->opts.live && !(query && *query);
	char *end;
	int err;

	r->seconds = 30;
	if (sec && *sec) {
		r->seconds = strtod(sec, &end);
		if (*end || !(r->seconds > 0) || r->seconds > SERVER_MAX_PROFILE_SECONDS)
			return server_error(r, 400, SERVER_REJ_BAD_PARAM,
					    "seconds '%.32s' is not a duration from 0 to %d", sec,
					    SERVER_MAX_PROFILE_SECONDS);
	}
	if (query && *query && !s->store)
		return server_error(r, 400, SERVER_REJ_BAD_PARAM,
				    "this listener has no store to query");
	if (!live && !s->store)
		return server_error(r, 404, SERVER_REJ_NOT_FOUND, "no profile source");
	r->profile_slot = true;
	if (__atomic_add_fetch(&s->profiles_in_flight, 1, __ATOMIC_RELAXED) >
	    SERVER_MAX_PROFILES_IN_FLIGHT)
		return server_error(
		    r, 429, SERVER_REJ_BUSY,
		    "seconds=%g: %d live profiles are already in flight (the limit); "
		    "retry when one ends",
		    r->seconds, SERVER_MAX_PROFILES_IN_FLIGHT);
	r->from_ns = server_now_ns();
	err = live ? server_spawn(r, pprof_live)
		   : server_defer(r, SERVER_CLASS_QUERY,
				  base_clock_ns(CLOCK_MONOTONIC) + (int64_t)(r->seconds * 1e9),
				  pprof_stored);
	if (err)
		return server_error(r, 503, SERVER_REJ_BUSY,
				    "the server is stopping; the profile was not started");
	return MHD_YES;
}

static enum MHD_Result pprof_reply(struct server_req *r, int ret, struct profile *p,
				   const char *err)
{
	uint8_t *buf = NULL;
	size_t len = 0;

	if (ret)
		return query_failed(r, ret, err);
	ret = pprof_encode(p, &buf, &len);
	profile__free(p);
	if (ret)
		return server_error(r, 500, SERVER_REJ_INTERNAL, "encoding failed");
	return server_reply(r, 200, "application/octet-stream", (char *)buf, len);
}

/* The profile of the request's window, from the store (optionally filtered). */
static enum MHD_Result pprof_stored(struct server *s, struct server_req *r)
{
	struct query_request q = {.query = server_arg(r, "query")};
	struct profile *p = NULL;
	char err[512] = "";
	int ret;

	q.until_ns = server_now_ns();
	q.from_ns = r->from_ns;
	ret = query_profile(s->store, &q, &p, err, sizeof(err));
	return pprof_reply(r, ret, p, err);
}

static enum MHD_Result pprof_live(struct server *s, struct server_req *r)
{
	struct profile *p = NULL;
	char err[512] = "";
	int ret;

	pthread_mutex_lock(&s->live_lock); /* one sampling window at a time */
	ret = s->opts.live(s->opts.ctx, r->seconds, &p);
	pthread_mutex_unlock(&s->live_lock);
	if (ret)
		snprintf(err, sizeof(err), "sampling failed: %s", strerror(-ret));
	return pprof_reply(r, ret, p, err);
}
