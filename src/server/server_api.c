/*
 * The query API (/api/...) and /debug/pprof/profile: thin wrappers around
 * src/query — parse the arguments, run the query, map its error codes to HTTP
 * (-EINVAL/-E2BIG: 400, anything else: 500; -EUCLEAN, stored data that does
 * not decode, says so).
 */
#include "server_impl.h"
#include "query/query.h"
#include "server_connect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
	char name[64];
	const char *from, *until, *v;
	int ret;

	snprintf(name, sizeof(name), "%squery", prefix);
	q->query = server_arg(r, name);
	if (!q->query && prefix[0])
		q->query = server_arg(r, prefix); /* /api/diff?left=SEL&right=SEL */
	snprintf(name, sizeof(name), "%sfrom", prefix);
	from = server_arg(r, name);
	snprintf(name, sizeof(name), "%suntil", prefix);
	until = server_arg(r, name);
	if (query_parse_range(from, until, server_now_ns(), &q->from_ns, &q->until_ns, err, errlen))
		return -EINVAL;
	if ((ret = count_arg(r, "maxNodes", &q->max_nodes, err, errlen)) ||
	    (ret = count_arg(r, "topRows", &q->top_rows, err, errlen)))
		return ret;
	if ((v = server_arg(r, "step")) && *v && query_parse_duration(v, &q->step_ns, err, errlen))
		return -EINVAL;
	q->group_by = server_arg(r, "groupBy");
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
		    (ret = request_args(r, "right", &right, err, errlen)))
			return ret;
		right.max_nodes = q.max_nodes;
		return query_diff_json(st, &q, &right, f, err, errlen);
	}
	if ((ret = request_args(r, "", &q, err, errlen)))
		return ret;
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

	if (!s->store)
		return server_error(r, 404, SERVER_REJ_NOT_FOUND, "this listener has no store");
	if (strcmp(r->method, "GET"))
		return server_error(r, 405, SERVER_REJ_METHOD, "%s takes GET", r->url);
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

/* The profile of the last `seconds`, from the store (optionally filtered by query). */
static int stored_profile(struct server_req *r, double seconds, int64_t t0, struct profile **p,
			  char *err, size_t errlen)
{
	struct query_request q = {.query = server_arg(r, "query")};

	q.until_ns = server_now_ns();
	q.from_ns = t0;
	(void)seconds;
	return query_profile(r->srv->store, &q, p, err, errlen);
}

static enum MHD_Result pprof_run(struct server *s, struct server_req *r, double seconds,
				 const char *query);

/* Holds one of SERVER_MAX_PROFILES_IN_FLIGHT slots while the profile runs: the
 * request waits `seconds`, holding its connection, and too many such requests
 * would take every connection from the short ones. */
enum MHD_Result server_h_pprof(struct server *s, struct server_req *r)
{
	const char *sec = server_arg(r, "seconds"), *query = server_arg(r, "query");
	double seconds = 30;
	char *end;
	enum MHD_Result ret;

	if (sec && *sec) {
		seconds = strtod(sec, &end);
		if (*end || !(seconds > 0) || seconds > SERVER_MAX_PROFILE_SECONDS)
			return server_error(r, 400, SERVER_REJ_BAD_PARAM,
					    "seconds '%.32s' is not a duration from 0 to %d", sec,
					    SERVER_MAX_PROFILE_SECONDS);
	}
	if (__atomic_add_fetch(&s->profiles_in_flight, 1, __ATOMIC_RELAXED) >
	    SERVER_MAX_PROFILES_IN_FLIGHT) {
		__atomic_sub_fetch(&s->profiles_in_flight, 1, __ATOMIC_RELAXED);
		return server_error(
		    r, 429, SERVER_REJ_BUSY,
		    "seconds=%g: %d live profiles are already in flight (the limit); "
		    "retry when one ends",
		    seconds, SERVER_MAX_PROFILES_IN_FLIGHT);
	}
	ret = pprof_run(s, r, seconds, query);
	__atomic_sub_fetch(&s->profiles_in_flight, 1, __ATOMIC_RELAXED);
	return ret;
}

static enum MHD_Result pprof_run(struct server *s, struct server_req *r, double seconds,
				 const char *query)
{
	char err[512] = "";
	struct profile *p = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	int64_t t0 = server_now_ns();
	int ret;

	if (query && *query && !s->store)
		return server_error(r, 400, SERVER_REJ_BAD_PARAM,
				    "this listener has no store to query");
	if (s->opts.live && !(query && *query)) {
		pthread_mutex_lock(&s->live_lock); /* one sampling window at a time */
		ret = s->opts.live(s->opts.ctx, seconds, &p);
		pthread_mutex_unlock(&s->live_lock);
		snprintf(err, sizeof(err), "sampling failed: %s", strerror(-ret));
	} else if (s->store) {
		ret = server_wait(r, seconds);
		if (ret == -EPIPE) { /* nobody to answer */
			snprintf(r->error, sizeof(r->error), "no answer: the client went away");
			return MHD_NO;
		}
		if (ret)
			return server_error(r, 503, SERVER_REJ_BUSY,
					    "the server is stopping; the profile was cut short");
		ret = stored_profile(r, seconds, t0, &p, err, sizeof(err));
	} else {
		return server_error(r, 404, SERVER_REJ_NOT_FOUND, "no profile source");
	}
	if (ret)
		return query_failed(r, ret, err);
	ret = pprof_encode(p, &buf, &len);
	profile__free(p);
	if (ret)
		return server_error(r, 500, SERVER_REJ_INTERNAL, "encoding failed");
	return server_reply(r, 200, "application/octet-stream", (char *)buf, len);
}

static enum MHD_Result h_healthz(struct server *s, struct server_req *r)
{
	(void)s;
	return server_reply(r, 200, "application/json", strdup("{\"status\": \"ok\"}\n"), 17);
}

enum MHD_Result server_route(struct server *s, struct server_req *r)
{
	if (!strcmp(r->url, "/healthz"))
		return h_healthz(s, r);
	if (!strcmp(r->url, "/ingest"))
		return server_h_ingest(s, r);
	if (!strcmp(r->url, "/v1development/profiles"))
		return server_h_otlp(s, r);
	if (!strcmp(r->url, "/api/targets"))
		return server_h_targets(s, r);
	if (!strncmp(r->url, "/api/", 5))
		return server_h_api(s, r);
	if (!strcmp(r->url, "/debug/pprof/profile"))
		return server_h_pprof(s, r);
	if (!strcmp(r->url, "/metrics"))
		return server_h_metrics(s, r);
	if (!strncmp(r->url, "/querier.v1.QuerierService/", 27) ||
	    !strncmp(r->url, "/pyroscope/", 11)) /* Grafana's Pyroscope data source */
		return strncmp(r->url, "/pyroscope/", 11) ? server_h_connect(s, r)
							  : server_h_pyroscope(s, r);
	if (s->store) /* the web UI, with the API it talks to */
		return server_h_web(s, r);
	return server_error(r, 404, SERVER_REJ_NOT_FOUND, "no such endpoint '%.200s'", r->url);
}
