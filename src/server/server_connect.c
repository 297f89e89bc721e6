/*
 * Pyroscope's query service over the Connect protocol (connectrpc.com/docs/
 * protocol, unary calls): POST /querier.v1.QuerierService/METHOD with an
 * unframed body, `application/proto` (binary protobuf, what Grafana's backend
 * sends) or `application/json` (the proto3 JSON mapping, server_pbjson.c);
 * the answer uses the request's codec. Errors are a JSON object
 * {"code": "...", "message": "..."} with the HTTP status the protocol gives
 * the code (invalid_argument 400, not_found 404, unimplemented 501, internal 500).
 *
 * The messages are proto/querier.proto and proto/types.proto (protoc-c);
 * every method is a thin writer of the query engine's typed results
 * (query.h; the flame graph and label listings through server_render.c): a
 * selector is the request's label_selector plus a __profile_type__ matcher,
 * times are ms since the epoch (0: the default range, the last hour). A list
 * of matchers (LabelNames, LabelValues, Series) is one engine query over their
 * union, at most QUERY_MAX_MATCHERS of them: a request once held 1,000,000
 * and ran one query each.
 */
#include "server_connect.h"
#include "base/base.h"
#include "querier.pb-c.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define CONNECT_PREFIX "/querier.v1.QuerierService/"

/* A Connect error: its code and message. */
struct cerr {
	const char *code;
	char msg[512];
};

/* HTTP status of a Connect error code (the protocol's table). */
static unsigned code_status(const char *code)
{
	if (!strcmp(code, "invalid_argument"))
		return 400;
	if (!strcmp(code, "not_found"))
		return 404;
	if (!strcmp(code, "unimplemented"))
		return 501;
	if (!strcmp(code, "resource_exhausted"))
		return 429;
	if (!strcmp(code, "unavailable"))
		return 503;
	return 500;
}

static enum MHD_Result connect_error(struct server_req *r, const char *code, unsigned status,
				     enum server_reject why, const char *msg)
{
	struct server_mem m;

	snprintf(r->error, sizeof(r->error), "%.255s", msg);
	server_metrics__reject(&r->srv->metrics, why);
	if (server_mem__open(&m))
		return MHD_NO;
	fputs("{\"code\":", m.f);
	base_json_string(m.f, code);
	fputs(",\"message\":", m.f);
	base_json_string(m.f, msg);
	fputs("}\n", m.f);
	return server_reply_mem(r, status ? status : code_status(code), "application/json", &m);
}

enum MHD_Result server_connect_reject(struct server_req *r, unsigned status, enum server_reject why,
				      const char *msg)
{
	const char *code = status == 401		    ? "unauthenticated"
			   : status == 404 || status == 405 ? "unimplemented"
			   : status == 413 || status == 429 ? "resource_exhausted"
			   : status == 503		    ? "unavailable"
			   : status < 500		    ? "invalid_argument"
							    : "internal";

	return connect_error(r, code, status, why, msg);
}

/* An engine error (-EINVAL/-E2BIG: the caller's) as a Connect error. */
static int engine_err(struct cerr *e, int ret, const char *err)
{
	e->code = ret == -EINVAL || ret == -E2BIG ? "invalid_argument" : "internal";
	snprintf(e->msg, sizeof(e->msg), "%s", err[0] ? err : strerror(-ret));
	return ret;
}

static int arg_err(struct cerr *e, const char *fmt, const char *what)
{
	e->code = "invalid_argument";
	snprintf(e->msg, sizeof(e->msg), fmt, what);
	return -EINVAL;
}

/* The range of start/end (ms; 0: now / end - 1 h) into q. */
static int range_ms(int64_t start, int64_t end, struct query_request *q, struct cerr *e)
{
	const int64_t max_ms = INT64_MAX / 1000000;

	if (start < 0 || end < 0 || start > max_ms || end > max_ms)
		return arg_err(e, "start and end are ms since 1970 (%s)",
			       "0 or up to 9223372036854");
	q->until_ns = end ? end * 1000000 : server_now_ns();
	q->from_ns = start ? start * 1000000 : q->until_ns - QUERY_DEFAULT_RANGE_NS;
	if (q->from_ns > q->until_ns)
		return arg_err(e, "start is after end%s", "");
	return 0;
}

/* A profile type ID has 5 non-empty parts NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT;
 * parts (when non-NULL) receives them. */
static bool split_type(const char *id, char parts[5][256])
{
	const char *p = id;

	for (int i = 0; i < 5; i++) {
		size_t n = i < 4 ? strcspn(p, ":") : strlen(p);

		if (!n || n >= 256 || (i < 4 && p[n] != ':') || (i == 4 && strchr(p, ':')))
			return false;
		if (parts)
			snprintf(parts[i], 256, "%.*s", (int)n, p);
		p += n + (i < 4);
	}
	return true;
}

/* q's selector for a profile type and label selector; owned by *sel. */
static int typed_query(const char *type, const char *label_selector, int64_t start, int64_t end,
		       struct query_request *q, char **sel, struct cerr *e)
{
	char err[512] = "";
	int ret;

	*sel = NULL;
	if (!type || !split_type(type, NULL))
		return arg_err(e,
			       "profile_typeID '%.200s' is not "
			       "NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT",
			       type ? type : "");
	if ((ret = range_ms(start, end, q, e)))
		return ret;
	ret = pyro_selector(type, label_selector, sel, err, sizeof(err));
	if (ret)
		return engine_err(e, ret, err);
	q->query = *sel;
	q->value_index = pyro_value_index(type);
	return 0;
}

/*
 * Filters hearth does not apply: a call-site stack selector (outside SelectSeries)
 * or profile IDs. Answering without them would be a wrong answer, so they are
 * refused (unimplemented).
 */
static int unserved_filters(const Types__V1__StackTraceSelector *sts, size_t n_ids, struct cerr *e)
{
	if ((!sts || !sts->n_call_site) && !n_ids)
		return 0;
	e->code = "unimplemented";
	snprintf(e->msg, sizeof(e->msg), "%s filters are not served by hearth",
		 n_ids ? "profile_id_selector" : "stack_trace_selector call_site");
	return -ENOTSUP;
}

static char *dup_or_fail(const char *s, int *ret)
{
	char *c = strdup(s);

	if (!c)
		*ret = -ENOMEM;
	return c;
}

/* ---- methods: each fills *resp (freed with protobuf_c_message_free_unpacked) ---- */

static int m_profile_types(struct server *s, const ProtobufCMessage *in, ProtobufCMessage **resp,
			   struct cerr *e)
{
	const Querier__V1__ProfileTypesRequest *req = (const void *)in;
	Querier__V1__ProfileTypesResponse *out = malloc(sizeof(*out));
	struct query_request q = {0};
	struct query_strings types = {0};
	char err[512] = "", parts[5][256];
	int ret;

	if (!out)
		return -ENOMEM;
	querier__v1__profile_types_response__init(out);
	*resp = &out->base;
	if ((ret = range_ms(req->start, req->end, &q, e)))
		return ret;
	ret =
	    pyro_labels(s->store, &q, NULL, 0, STORE_PROFILE_TYPE_LABEL, &types, err, sizeof(err));
	if (ret) {
		query_strings__fini(&types);
		return engine_err(e, ret, err);
	}
	out->profile_types = calloc(types.n + 1, sizeof(*out->profile_types));
	if (!out->profile_types)
		ret = -ENOMEM;
	for (size_t i = 0; !ret && i < types.n; i++) {
		Types__V1__ProfileType *t = malloc(sizeof(*t));

		if (!t) {
			ret = -ENOMEM;
			break;
		}
		types__v1__profile_type__init(t);
		out->profile_types[out->n_profile_types++] = t;
		t->id = dup_or_fail(types.v[i], &ret);
		if (!split_type(types.v[i], parts))
			continue; /* a type stored under another naming: its ID only */
		t->name = dup_or_fail(parts[0], &ret);
		t->sample_type = dup_or_fail(parts[1], &ret);
		t->sample_unit = dup_or_fail(parts[2], &ret);
		t->period_type = dup_or_fail(parts[3], &ret);
		t->period_unit = dup_or_fail(parts[4], &ret);
	}
	query_strings__fini(&types);
	return ret;
}

/* LabelNames (name NULL) and LabelValues: the listing as `names`. */
static int label_list(struct server *s, char **matchers, size_t n, int64_t start, int64_t end,
		      const char *name, char ***names, size_t *n_names, struct cerr *e)
{
	struct query_request q = {0};
	struct query_strings l = {0};
	char err[512] = "";
	int ret;

	if ((ret = range_ms(start, end, &q, e)))
		return ret;
	ret =
	    pyro_labels(s->store, &q, (const char *const *)matchers, n, name, &l, err, sizeof(err));
	if (ret) {
		query_strings__fini(&l);
		return engine_err(e, ret, err);
	}
	*names = l.v; /* taken over: the response frees them */
	*n_names = l.n;
	return 0;
}

static int m_label_names(struct server *s, const ProtobufCMessage *in, ProtobufCMessage **resp,
			 struct cerr *e)
{
	const Types__V1__LabelNamesRequest *req = (const void *)in;
	Types__V1__LabelNamesResponse *out = malloc(sizeof(*out));

	if (!out)
		return -ENOMEM;
	types__v1__label_names_response__init(out);
	*resp = &out->base;
	return label_list(s, req->matchers, req->n_matchers, req->start, req->end, NULL,
			  &out->names, &out->n_names, e);
}

static int m_label_values(struct server *s, const ProtobufCMessage *in, ProtobufCMessage **resp,
			  struct cerr *e)
{
	const Types__V1__LabelValuesRequest *req = (const void *)in;
	Types__V1__LabelValuesResponse *out = malloc(sizeof(*out));

	if (!out)
		return -ENOMEM;
	types__v1__label_values_response__init(out);
	*resp = &out->base;
	if (!req->name || !req->name[0])
		return arg_err(e, "LabelValues needs a label name%s", "");
	return label_list(s, req->matchers, req->n_matchers, req->start, req->end, req->name,
			  &out->names, &out->n_names, e);
}

static bool wanted(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return !n;
}

/* One Labels message of series ser, keeping only `keep` labels: the profile
 * type first, then the labels in the engine's (sorted) order. */
static int series_labels(const struct query_series *ser, char **keep, size_t n_keep,
			 Types__V1__Labels **out)
{
	Types__V1__Labels *ls = malloc(sizeof(*ls));
	int ret = 0;

	*out = ls;
	if (!ls)
		return -ENOMEM;
	types__v1__labels__init(ls);
	ls->labels = calloc(ser->n + 2, sizeof(*ls->labels));
	if (!ls->labels)
		return -ENOMEM;
	for (size_t i = 0; i <= ser->n && !ret; i++) {
		const char *name = i ? ser->labels[i - 1].name : STORE_PROFILE_TYPE_LABEL;
		const char *value = i ? ser->labels[i - 1].value : ser->type;
		Types__V1__LabelPair *p;

		if (!wanted(keep, n_keep, name))
			continue;
		if (!(p = malloc(sizeof(*p))))
			return -ENOMEM;
		types__v1__label_pair__init(p);
		ls->labels[ls->n_labels++] = p;
		p->name = dup_or_fail(name, &ret);
		p->value = dup_or_fail(value, &ret);
	}
	return ret;
}

/* The label sets of a Series answer, and an index of them by content: with
 * label_names, distinct series can show the same labels, listed once. */
struct series_set {
	Querier__V1__SeriesResponse *out; /* borrowed: labels_set holds the sets */
	size_t cap;			  /* of out->labels_set */
	struct base_hmap index;		  /* hash of a label set -> its index */
};

static uint64_t labels_hash(const Types__V1__Labels *ls)
{
	uint64_t h = BASE_HASH_SEED;

	for (size_t i = 0; i < ls->n_labels; i++) { /* the NULs keep ("ab","c") from ("a","bc") */
		h = base_hash_bytes(h, ls->labels[i]->name, strlen(ls->labels[i]->name) + 1);
		h = base_hash_bytes(h, ls->labels[i]->value, strlen(ls->labels[i]->value) + 1);
	}
	return h;
}

static bool same_labels(const Types__V1__Labels *a, const Types__V1__Labels *b)
{
	if (a->n_labels != b->n_labels)
		return false;
	for (size_t i = 0; i < a->n_labels; i++)
		if (strcmp(a->labels[i]->name, b->labels[i]->name) ||
		    strcmp(a->labels[i]->value, b->labels[i]->value))
			return false;
	return true;
}

static bool set_eq(const void *ctx, size_t idx, const void *key)
{
	return same_labels(((const struct series_set *)ctx)->out->labels_set[idx], key);
}

/* Adds ls to the answer unless it has that label set already (ls is then freed). */
static int series_add(struct series_set *ss, Types__V1__Labels *ls)
{
	Querier__V1__SeriesResponse *out = ss->out;
	uint64_t h = labels_hash(ls);

	if (base_hmap__find(&ss->index, h, set_eq, ss, ls) != SIZE_MAX) {
		protobuf_c_message_free_unpacked(&ls->base, NULL);
		return 0;
	}
	if (base_grow((void **)&out->labels_set, &ss->cap, out->n_labels_set + 1,
		      sizeof(*out->labels_set)) ||
	    base_hmap__insert(&ss->index, h, out->n_labels_set)) {
		protobuf_c_message_free_unpacked(&ls->base, NULL);
		return -ENOMEM;
	}
	out->labels_set[out->n_labels_set++] = ls;
	return 0;
}

/* Appends the series of q's selection (one pass for all its selectors) to ss. */
static int series_of(struct server *s, struct query_request *q, char **keep, size_t n_keep,
		     struct series_set *ss, struct cerr *e)
{
	struct query_series_list l;
	char err[512] = "";
	int ret = query_series(s->store, q, &l, err, sizeof(err));

	if (ret) {
		query_series_list__fini(&l);
		return engine_err(e, ret, err);
	}
	for (size_t i = 0; !ret && i < l.n; i++) {
		Types__V1__Labels *ls = NULL;

		ret = series_labels(&l.s[i], keep, n_keep, &ls);
		if (ret) {
			if (ls)
				protobuf_c_message_free_unpacked(&ls->base, NULL);
			break;
		}
		ret = series_add(ss, ls);
	}
	query_series_list__fini(&l);
	return ret;
}

static int m_series(struct server *s, const ProtobufCMessage *in, ProtobufCMessage **resp,
		    struct cerr *e)
{
	const Querier__V1__SeriesRequest *req = (const void *)in;
	Querier__V1__SeriesResponse *out = malloc(sizeof(*out));
	struct query_request q = {0};
	struct series_set ss = {out, 0, {0}};
	int ret;

	if (!out)
		return -ENOMEM;
	querier__v1__series_response__init(out);
	*resp = &out->base;
	if ((ret = range_ms(req->start, req->end, &q, e)))
		return ret;
	/* all the matchers in one pass (the engine refuses more than QUERY_MAX_MATCHERS) */
	q.queries = (const char *const *)req->matchers;
	q.n_queries = req->n_matchers;
	ret = series_of(s, &q, req->label_names, req->n_label_names, &ss, e);
	base_hmap__fini(&ss.index);
	return ret;
}

/* A flame graph laid out by server_render.c as a FlameGraph message. */
static int flame_message(struct pyro_flame *fg, Querier__V1__FlameGraph **out)
{
	Querier__V1__FlameGraph *m = malloc(sizeof(*m));

	*out = m;
	if (!m)
		return -ENOMEM;
	querier__v1__flame_graph__init(m);
	m->total = fg->total;
	m->max_self = fg->max_self;
	m->names = fg->names; /* taken over */
	m->n_names = fg->n_names;
	fg->names = NULL;
	fg->n_names = 0;
	m->levels = calloc(fg->n_levels + 1, sizeof(*m->levels));
	if (!m->levels)
		return -ENOMEM;
	for (size_t i = 0; i < fg->n_levels; i++) {
		Querier__V1__Level *l = malloc(sizeof(*l));

		if (!l)
			return -ENOMEM;
		querier__v1__level__init(l);
		m->levels[m->n_levels++] = l;
		l->values = fg->levels[i].values; /* taken over */
		l->n_values = fg->levels[i].n;
		fg->levels[i].values = NULL;
	}
	return 0;
}

/* max_nodes of a request: 0 the default, at most QUERY_MAX_NODES (Grafana asks 16384). */
static int max_nodes(int64_t n, struct query_request *q, struct cerr *e)
{
	if (n < 0)
		return arg_err(e, "max_nodes is negative%s", "");
	q->max_nodes = n > QUERY_MAX_NODES ? QUERY_MAX_NODES : (size_t)n;
	return 0;
}

static int m_select_merge_stacktraces(struct server *s, const ProtobufCMessage *in,
				      ProtobufCMessage **resp, struct cerr *e)
{
	const Querier__V1__SelectMergeStacktracesRequest *req = (const void *)in;
	Querier__V1__SelectMergeStacktracesResponse *out = malloc(sizeof(*out));
	struct query_request q = {0};
	struct pyro_flame fg = {0};
	char *sel = NULL, err[512] = "";
	int ret;

	if (!out)
		return -ENOMEM;
	querier__v1__select_merge_stacktraces_response__init(out);
	*resp = &out->base;
	if (req->format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE) {
		e->code = "unimplemented";
		snprintf(e->msg, sizeof(e->msg),
			 "format PROFILE_FORMAT_TREE is not served by hearth; ask for "
			 "PROFILE_FORMAT_FLAMEGRAPH");
		return -ENOTSUP;
	}
	ret = unserved_filters(req->stack_trace_selector, req->n_profile_id_selector, e) ?:
	      typed_query(req->profile_typeid, req->label_selector, req->start, req->end, &q, &sel,
			  e) ?: max_nodes(req->max_nodes, &q, e);
	if (!ret && (ret = pyro_flame(s->store, &q, &fg, err, sizeof(err))))
		engine_err(e, ret, err);
	if (!ret)
		ret = flame_message(&fg, &out->flamegraph);
	pyro_flame__fini(&fg);
	free(sel);
	return ret;
}

/* A message in a codec: packed protobuf, or proto3 JSON and a newline; *buf
 * malloc'd. 0, -ENOTSUP (no JSON form: pbjson_encode), -ENOMEM. */
static int encode(const ProtobufCMessage *m, bool json, uint8_t **buf, size_t *len)
{
	FILE *f;
	int ret;

	*buf = NULL;
	if (!json) {
		*len = protobuf_c_message_get_packed_size(m);
		if (!(*buf = malloc(*len + 1)))
			return -ENOMEM;
		protobuf_c_message_pack(m, *buf);
		return 0;
	}
	if (!(f = open_memstream((char **)buf, len)))
		return -ENOMEM;
	ret = pbjson_encode(m, f);
	fputc('\n', f);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret) {
		free(*buf);
		*buf = NULL;
	}
	return ret;
}

/* SelectMergeProfile's answer: the merged profile's profile.proto message
 * (pprof_message) encoded in the request's codec. */
struct profile_answer {
	bool json;
	uint8_t *buf;
	size_t len;
};

static int encode_profile(const void *msg, void *ctx)
{
	struct profile_answer *a = ctx;

	return encode(msg, a->json, &a->buf, &a->len);
}

/* SelectMergeProfile answers the bytes of a message built by profile/ (raw), in
 * the request's codec, rather than a message built here. */
static int select_merge_profile(struct server *s, const ProtobufCMessage *in, bool json,
				uint8_t **raw, size_t *raw_len, struct cerr *e)
{
	const Querier__V1__SelectMergeProfileRequest *req = (const void *)in;
	struct query_request q = {0};
	struct profile_answer a = {.json = json};
	struct profile *p = NULL;
	char *sel = NULL, err[512] = "";
	int ret;

	ret = unserved_filters(req->stack_trace_selector, req->n_profile_id_selector, e)
		  ?: typed_query(req->profile_typeid, req->label_selector, req->start, req->end, &q,
				 &sel, e);
	if (!ret && (ret = query_profile(s->store, &q, &p, err, sizeof(err))))
		engine_err(e, ret, err);
	if (!ret)
		ret = pprof_message(p, encode_profile, &a);
	*raw = a.buf;
	*raw_len = a.len;
	profile__free(p);
	free(sel);
	return ret;
}

/* A Series of one group: its group_by label (none for the "" group), and a point
 * (ms, values[i]) at each step i where present[i] is not 0, at from_ms +
 * i * step_ms. *out is set as soon as it is allocated. */
static int series_msg(const char *group_by, const char *group, size_t n,
		      const int64_t *present, const int64_t *values, int64_t from_ms,
		      int64_t step_ms, Types__V1__Series **out)
{
	Types__V1__Series *ser = malloc(sizeof(*ser));
	Types__V1__LabelPair *p;
	size_t np = 0;
	int ret = 0;

	if (!(*out = ser))
		return -ENOMEM;
	types__v1__series__init(ser);
	if (group_by && group[0]) {
		if (!(ser->labels = calloc(1, sizeof(*ser->labels))) || !(p = malloc(sizeof(*p))))
			return -ENOMEM;
		types__v1__label_pair__init(p);
		ser->labels[ser->n_labels++] = p;
		p->name = dup_or_fail(group_by, &ret);
		p->value = dup_or_fail(group, &ret);
	}
	for (size_t i = 0; i < n; i++)
		np += present[i] != 0;
	if (!(ser->points = calloc(np + 1, sizeof(*ser->points))))
		return -ENOMEM;
	for (size_t i = 0; !ret && i < n; i++) {
		Types__V1__Point *pt;

		if (!present[i])
			continue;
		if (!(pt = malloc(sizeof(*pt))))
			return -ENOMEM;
		types__v1__point__init(pt);
		ser->points[ser->n_points++] = pt;
		pt->value = (double)values[i];
		pt->timestamp = from_ms + (int64_t)i * step_ms;
	}
	return ret;
}

/* Group g of timeline t as a Series: its group_by label (none for the group of
 * series without it) and a point (ms, value) at each step with data, as
 * Pyroscope answers. *out is set as soon as it is allocated. */
static int group_series(const struct query_timeline *t, size_t g, const char *group_by,
			Types__V1__Series **out)
{
	const struct query_timeline_group *gr = &t->groups[g];

	return series_msg(group_by, gr->group, t->n_points, gr->values, gr->values,
			  t->from_ns / 1000000, t->step_ns / 1000000, out);
}

/* Group g of a call site's series as a Series: its group_by label, and a point
 * (ms, value) at each step where the group has data (the value may be 0 there:
 * the call site took none of it). */
static int call_site_series(const struct query_fseries *fs, size_t g, const char *group_by,
			    Types__V1__Series **out)
{
	const struct query_fseries_group *gr = &fs->groups[g];

	return series_msg(group_by, gr->group, fs->n_points, gr->totals, gr->values,
			  fs->from_ns / 1000000, fs->step_ns / 1000000, out);
}

/* Whether group g of fs has a non-zero value (Pyroscope answers no series for
 * a group the call site took nothing of). */
static bool group_has_value(const struct query_fseries *fs, size_t g)
{
	for (size_t i = 0; i < fs->n_points; i++)
		if (fs->groups[g].values[i])
			return true;
	return false;
}

/*
 * SelectSeries with stack_trace_selector.call_site (Pyroscope's StackTraceSelector:
 * "stack traces having the prefix provided", root at call_site[0]): per step the
 * value of the stacks whose frames, root first and named as the flame graph
 * names them, start with the call site's names (the total of that flame graph
 * node), so Grafana draws one function's series.
 */
static int call_site_answer(struct server *s, const Querier__V1__SelectSeriesRequest *req,
			    const struct query_request *q, Querier__V1__SelectSeriesResponse *out,
			    struct cerr *e)
{
	const Types__V1__StackTraceSelector *sts = req->stack_trace_selector;
	struct query_fseries_request fr = {.n_call_site = sts->n_call_site};
	struct query_fseries fs = {0};
	const char **path = calloc(sts->n_call_site + 1, sizeof(*path));
	char err[512] = "";
	size_t n = 0, lim = req->limit > 0 ? (size_t)req->limit : SIZE_MAX;
	int ret = path ? 0 : -ENOMEM;

	for (size_t i = 0; path && i < sts->n_call_site; i++)
		path[i] = sts->call_site[i]->name ? sts->call_site[i]->name : "";
	fr.call_site = path;
	if (!ret && (ret = query_fseries(s->store, q, &fr, &fs, err, sizeof(err))))
		engine_err(e, ret, err);
	if (!ret && !(out->series = calloc(fs.n_groups + 1, sizeof(*out->series))))
		ret = -ENOMEM;
	for (size_t g = 0; !ret && g < fs.n_groups && n < lim; g++) {
		if (!group_has_value(&fs, g))
			continue;
		n++;
		ret = call_site_series(&fs, g, q->group_by, &out->series[out->n_series++]);
	}
	query_fseries__fini(&fs);
	free(path);
	return ret;
}

static int m_select_series(struct server *s, const ProtobufCMessage *in, ProtobufCMessage **resp,
			   struct cerr *e)
{
	const Querier__V1__SelectSeriesRequest *req = (const void *)in;
	Querier__V1__SelectSeriesResponse *out = malloc(sizeof(*out));
	struct query_request q = {0};
	struct query_timeline t = {0};
	char *sel = NULL, err[512] = "";
	size_t n;
	int ret;

	if (!out)
		return -ENOMEM;
	querier__v1__select_series_response__init(out);
	*resp = &out->base;
	if (req->n_group_by > 1)
		return arg_err(e, "hearth groups series by one label at most (group_by has %s)",
			       "several");
	if (req->aggregation ==
	    TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE) {
		e->code = "unimplemented";
		snprintf(e->msg, sizeof(e->msg),
			 "hearth sums series; aggregation AVERAGE is not "
			 "served");
		return -ENOTSUP;
	}
	if (!(req->step >= 0) || req->step > 1e9)
		return arg_err(e, "step is not a number of seconds from 0 to 1e9%s", "");
	if (req->limit < 0)
		return arg_err(e, "limit is negative%s", "");
	ret = typed_query(req->profile_typeid, req->label_selector, req->start, req->end, &q, &sel,
			  e);
	q.step_ns = (int64_t)llround(req->step * 1e9);
	q.group_by = req->n_group_by ? req->group_by[0] : NULL;
	if (!ret && req->stack_trace_selector && req->stack_trace_selector->n_call_site) {
		ret = call_site_answer(s, req, &q, out, e);
		free(sel);
		return ret;
	}
	if (!ret && (ret = query_timeline(s->store, &q, &t, err, sizeof(err))))
		engine_err(e, ret, err);
	n = req->limit && (size_t)req->limit < t.n_groups ? (size_t)req->limit : t.n_groups;
	if (!ret && !(out->series = calloc(n + 1, sizeof(*out->series))))
		ret = -ENOMEM;
	for (size_t g = 0; !ret && g < n; g++)
		ret = group_series(&t, g, q.group_by, &out->series[out->n_series++]);
	query_timeline__fini(&t);
	free(sel);
	return ret;
}

static int m_profile_stats(struct server *s, const ProtobufCMessage *in, ProtobufCMessage **resp,
			   struct cerr *e)
{
	Types__V1__GetProfileStatsResponse *out = malloc(sizeof(*out));
	struct store_stats st = {0};
	int ret;

	(void)in;
	if (!out)
		return -ENOMEM;
	types__v1__get_profile_stats_response__init(out);
	*resp = &out->base;
	if ((ret = store__stats(s->store, &st)))
		return engine_err(e, ret, "");
	out->data_ingested = st.profiles > 0;
	out->oldest_profile_time = st.oldest_ns / 1000000;
	out->newest_profile_time = st.newest_ns / 1000000;
	return 0;
}

typedef int (*method_fn)(struct server *s, const ProtobufCMessage *in, ProtobufCMessage **resp,
			 struct cerr *e);

static const struct method {
	const char *name;
	const ProtobufCMessageDescriptor *in;
	method_fn run; /* NULL: SelectMergeProfile (pprof bytes) */
} methods[] = {
    {"ProfileTypes", &querier__v1__profile_types_request__descriptor, m_profile_types},
    {"LabelNames", &types__v1__label_names_request__descriptor, m_label_names},
    {"LabelValues", &types__v1__label_values_request__descriptor, m_label_values},
    {"Series", &querier__v1__series_request__descriptor, m_series},
    {"SelectMergeStacktraces", &querier__v1__select_merge_stacktraces_request__descriptor,
     m_select_merge_stacktraces},
    {"SelectMergeProfile", &querier__v1__select_merge_profile_request__descriptor, NULL},
    {"SelectSeries", &querier__v1__select_series_request__descriptor, m_select_series},
    {"GetProfileStats", &types__v1__get_profile_stats_request__descriptor, m_profile_stats},
};

/* The request's codec from its Content-Type: 1 JSON, 0 binary, -1 neither. */
static int codec(struct server_req *r)
{
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
	size_t n = ct ? strcspn(ct, "; ") : 0;

	if (ct && n == 16 && !strncasecmp(ct, "application/json", n))
		return 1;
	if (ct && n == 17 && !strncasecmp(ct, "application/proto", n))
		return 0;
	return -1;
}

/* Replies with raw (an answer already encoded: taken over) or resp in the
 * request's codec. */
static enum MHD_Result answer(struct server_req *r, bool json, const ProtobufCMessage *resp,
			      uint8_t **raw, size_t raw_len)
{
	uint8_t *buf = *raw;
	size_t len = raw_len;
	int ret = buf ? 0 : encode(resp, json, &buf, &len);

	*raw = NULL;
	if (ret == -ENOTSUP)
		return connect_error(r, "internal", 500, SERVER_REJ_INTERNAL,
				     "the answer has no JSON form");
	if (ret)
		return connect_error(r, "internal", 500, SERVER_REJ_INTERNAL, "out of memory");
	return server_reply(r, 200, json ? "application/json" : "application/proto", (char *)buf,
			    len);
}

/* Decodes the body (a JSON one within budget bytes), runs the method and answers. */
static enum MHD_Result call(struct server *s, struct server_req *r, const struct method *mt,
			    bool json, size_t budget)
{
	ProtobufCMessage *in = NULL, *resp = NULL;
	struct cerr e = {0};
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	char err[512] = "";
	enum MHD_Result res;
	int ret;

	if (json)
		ret = pbjson_decode_budget(mt->in, (const char *)r->body, r->len, budget, &in, err,
					   sizeof(err));
	else
		ret = (in = protobuf_c_message_unpack(mt->in, NULL, r->len, r->body))
			  ? 0
			  : (snprintf(err, sizeof(err), "malformed protobuf body (%zu bytes)",
				      r->len),
			     -EINVAL);
	if (ret == -EFBIG) {
		res = connect_error(r, "resource_exhausted", 413, SERVER_REJ_BOMB, err);
		goto cleanup;
	}
	if (ret == -EINVAL) {
		res = connect_error(r, "invalid_argument", 0, SERVER_REJ_BAD_QUERY, err);
		goto cleanup;
	}
	if (!ret)
		ret = mt->run ? mt->run(s, in, &resp, &e)
			      : select_merge_profile(s, in, json, &raw, &raw_len, &e);
	if (ret && e.code)
		res = connect_error(
		    r, e.code, 0,
		    strcmp(e.code, "internal") ? SERVER_REJ_BAD_QUERY : SERVER_REJ_INTERNAL, e.msg);
	else if (ret)
		res = connect_error(r, "internal", 0, SERVER_REJ_INTERNAL, strerror(-ret));
	else
		res = answer(r, json, resp, &raw, raw_len);
cleanup:
	if (in)
		protobuf_c_message_free_unpacked(in, NULL);
	if (resp)
		protobuf_c_message_free_unpacked(resp, NULL);
	free(raw);
	return res;
}

/* A gzipped request body (Connect's Content-Encoding) in place, inflated to at
 * most the server's body limit and half the request's memory budget (a few KiB of
 * gzip inflate to gigabytes). 0, or -1 when the error is answered. */
static int inflate_body(struct server_req *r, size_t budget)
{
	size_t n, max = r->srv->max_body < budget / 2 ? r->srv->max_body : budget / 2;
	char msg[256], why[128];
	uint8_t *b;
	int ret = profile_gunzip(r->body, r->len, max, &b, &n, why, sizeof(why));

	snprintf(msg, sizeof(msg),
		 "the gzipped body inflates past %zu MiB: the body limit (--max-body-mb) or half "
		 "this request's memory budget of %zu MiB (%u MiB + %u bytes per body byte)",
		 max >> 20, budget >> 20, SERVER_MEM_BASE >> 20, SERVER_MEM_PER_BODY_BYTE);
	if (ret == -EFBIG)
		connect_error(r, "resource_exhausted", 413, SERVER_REJ_BOMB, msg);
	else if (ret == -EINVAL)
		connect_error(r, "invalid_argument", 0, SERVER_REJ_BAD_FORMAT,
			      "Content-Encoding is gzip but the body is not valid gzip");
	else if (ret)
		connect_error(r, "internal", 0, SERVER_REJ_INTERNAL, "out of memory");
	if (ret)
		return -1;
	free(r->body);
	r->body = b;
	r->len = r->cap = n;
	return 0;
}

enum MHD_Result server_h_connect(struct server *s, struct server_req *r)
{
	const char *name = r->url + strlen(CONNECT_PREFIX), *enc;
	/* sized by the bytes on the wire, before any inflating */
	size_t budget = r->budget; /* the route's: server_memory_budget(len) */
	char msg[300];
	int json;

	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (strcmp(name, methods[i].name))
			continue;
		if ((json = codec(r)) < 0)
			return connect_error(r, "invalid_argument", 415, SERVER_REJ_BAD_FORMAT,
					     "Content-Type must be application/proto or "
					     "application/json");
		enc = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Encoding");
		if (enc && *enc && strcmp(enc, "identity") && strcmp(enc, "gzip"))
			return connect_error(r, "unimplemented", 0, SERVER_REJ_BAD_FORMAT,
					     "Content-Encoding must be gzip or identity");
		if (enc && !strcmp(enc, "gzip")) {
			if (inflate_body(r, budget))
				return MHD_YES; /* answered */
			budget -= r->len;	/* the inflated body's share */
		}
		r->is_query = true;
		return call(s, r, &methods[i], json == 1, budget);
	}
	snprintf(msg, sizeof(msg), "no method '%.200s' in querier.v1.QuerierService", name);
	return connect_error(r, "unimplemented", 404, SERVER_REJ_NOT_FOUND, msg);
}
