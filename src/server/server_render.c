/*
 * Pyroscope's shapes of the query engine's answers, for the Connect methods
 * (server_connect.c) and the Pyroscope HTTP API served here: GET
 * /pyroscope/render (flamebearer JSON), /pyroscope/render-diff,
 * /pyroscope/label-values and /pyroscope/labels.
 *
 * Nothing here merges or prunes: each answer is the engine's own JSON
 * (query_tree_json, query_diff_json, query_timeline_json, the label listings)
 * read back with json-c and laid out as Pyroscope lays it out, so a flame graph
 * served here is node for node the tree /api/profile?format=tree serves.
 *
 * Flame graph layout (flamebearer): level d lists the nodes of depth d left to
 * right, 4 numbers each — the gap between the node's left edge and the right
 * edge of the previous node of the level (x positions count value units from
 * the root's left edge), total, self, and the node's index in names:
 *
 *   level 0: [0, 10, 0, "total"]
 *   level 1: [0, 6, 6, "a"]  [0, 4, 1, "b"]       a at x 0, b at x 6
 *   level 2:                 [6, 3, 3, "c"]       c at x 6: 6 past a's level-2 end 0
 */
#include "server_connect.h"
#include "base/base.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Nesting of the engine's tree JSON: object and children array per frame. */
#define PYRO_JSON_DEPTH (2 * PROFILE_MAX_FRAMES + 16)

/* ---- reading the engine's JSON ---- */

/* Parses the JSON in m (then discarded). 0 or -ENOMEM / -EIO. */
static int mem_json(struct server_mem *m, json_object **out)
{
	struct json_tokener *tok = json_tokener_new_ex(PYRO_JSON_DEPTH);
	int ret = 0;

	*out = NULL;
	if (!tok || fflush(m->f)) {
		ret = -ENOMEM;
		goto cleanup;
	}
	*out = json_tokener_parse_ex(tok, m->buf, (int)m->len);
	if (!*out)
		ret = -EIO; /* the engine wrote something json-c does not read: a bug */
cleanup:
	if (tok)
		json_tokener_free(tok);
	server_mem__discard(m);
	return ret;
}

int pyro_engine_json(pyro_engine_fn fn, struct store *s, const struct query_request *q,
		     json_object **out, char *err, size_t errlen)
{
	struct server_mem m;
	int ret;

	*out = NULL;
	if (server_mem__open(&m))
		return -ENOMEM;
	ret = fn(s, q, m.f, err, errlen);
	if (ret) {
		server_mem__discard(&m);
		return ret;
	}
	return mem_json(&m, out);
}

static int64_t jint(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static json_object *jget(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* ---- flame graphs ---- */

void pyro_flame__fini(struct pyro_flame *fg)
{
	for (size_t i = 0; i < fg->n_names; i++)
		free(fg->names[i]);
	free(fg->names);
	for (size_t i = 0; i < fg->n_levels; i++)
		free(fg->levels[i].values);
	free(fg->levels);
	memset(fg, 0, sizeof(*fg));
}

/* Layout state: names by index (and a json-c object as the name -> index map),
 * each level's right edge so far (one per side in a diff). */
struct layout {
	struct pyro_flame *fg;
	json_object *index;
	size_t cap_names, cap_levels;
	int64_t (*edge)[2];
	bool diff;
};

static int name_index(struct layout *l, const char *name, int64_t *out)
{
	json_object *v;
	char *c;

	if (json_object_object_get_ex(l->index, name, &v)) {
		*out = json_object_get_int64(v);
		return 0;
	}
	if (base_grow((void **)&l->fg->names, &l->cap_names, l->fg->n_names + 1, sizeof(char *)) ||
	    !(c = strdup(name)))
		return -ENOMEM;
	l->fg->names[l->fg->n_names] = c;
	*out = (int64_t)l->fg->n_names++;
	return json_object_object_add(l->index, name, json_object_new_int64(*out)) ? -ENOMEM : 0;
}

/* The level at depth d, created (with its edges) when first reached. */
static struct pyro_level *level(struct layout *l, size_t d)
{
	size_t old = l->cap_levels;

	while (l->fg->n_levels <= d) {
		if (base_grow((void **)&l->fg->levels, &l->cap_levels, l->fg->n_levels + 1,
			      sizeof(*l->fg->levels)))
			return NULL;
		if (l->cap_levels != old) {
			void *e = realloc(l->edge, l->cap_levels * sizeof(*l->edge));

			if (!e)
				return NULL;
			l->edge = e;
			old = l->cap_levels;
		}
		l->fg->levels[l->fg->n_levels] = (struct pyro_level){0};
		l->edge[l->fg->n_levels][0] = l->edge[l->fg->n_levels][1] = 0;
		l->fg->n_levels++;
	}
	return &l->fg->levels[d];
}

/* A node's value: a number, or a diff's [left, right]. */
static void node_value(json_object *v, int64_t out[2])
{
	if (json_object_is_type(v, json_type_array)) {
		out[0] = json_object_get_int64(json_object_array_get_idx(v, 0));
		out[1] = json_object_get_int64(json_object_array_get_idx(v, 1));
	} else {
		out[0] = out[1] = json_object_get_int64(v);
	}
}

/* Lays out node n at depth d whose left edges are x[0] (left) and x[1] (right). */
static int lay_node(struct layout *l, json_object *n, size_t d, const int64_t x[2])
{
	json_object *name = jget(n, "name"), *kids = jget(n, "children");
	int64_t tot[2], self[2], idx, cx[2] = {x[0], x[1]}, vals[7];
	struct pyro_level *lv = level(l, d);
	size_t nv = l->diff ? 7 : 4;
	size_t nk = kids ? json_object_array_length(kids) : 0;
	int ret;

	if (!lv)
		return -ENOMEM;
	node_value(jget(n, "total"), tot);
	node_value(jget(n, "self"), self);
	ret = name_index(l, name ? json_object_get_string(name) : "", &idx);
	if (ret)
		return ret;
	vals[0] = base_sat_sub(x[0], l->edge[d][0]);
	vals[1] = tot[0];
	vals[2] = self[0];
	if (l->diff) {
		vals[3] = base_sat_sub(x[1], l->edge[d][1]);
		vals[4] = tot[1];
		vals[5] = self[1];
	}
	vals[nv - 1] = idx;
	/* sums of totals that may each be INT64_MAX (saturated at ingest): saturate */
	l->edge[d][0] = base_sat_add(x[0], tot[0]);
	l->edge[d][1] = base_sat_add(x[1], tot[1]);
	lv->values = realloc(lv->values, (lv->n + nv) * sizeof(int64_t));
	if (!lv->values)
		return -ENOMEM;
	memcpy(lv->values + lv->n, vals, nv * sizeof(int64_t));
	lv->n += nv;
	if (self[0] > l->fg->max_self)
		l->fg->max_self = self[0];
	if (l->diff && self[1] > l->fg->max_self)
		l->fg->max_self = self[1];
	for (size_t i = 0; i < nk; i++) {
		json_object *k = json_object_array_get_idx(kids, i);
		int64_t kt[2];

		ret = lay_node(l, k, d + 1, cx);
		if (ret)
			return ret;
		node_value(jget(k, "total"), kt);
		cx[0] = base_sat_add(cx[0], kt[0]);
		cx[1] = base_sat_add(cx[1], kt[1]);
	}
	return 0;
}

static const char *unit_of(json_object *o)
{
	json_object *u = jget(o, "unit");

	return u && !strcmp(json_object_get_string(u), "nanoseconds") ? "nanoseconds" : "samples";
}

/* The flame graph of the engine's tree answer o. */
static int lay_tree(json_object *o, bool diff, struct pyro_flame *out)
{
	struct layout l = {.fg = out, .diff = diff, .index = json_object_new_object()};
	json_object *tree = jget(o, "tree");
	int64_t x[2] = {0, 0}, tot[2];
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	out->unit = unit_of(o);
	if (!l.index)
		goto cleanup;
	ret = tree ? lay_node(&l, tree, 0, x) : -EIO;
	if (ret)
		goto cleanup;
	node_value(jget(tree, "total"), tot);
	out->total = diff ? base_sat_add(tot[0], tot[1]) : tot[0];
	out->left_ticks = tot[0];
	out->right_ticks = tot[1];
cleanup:
	json_object_put(l.index);
	free(l.edge);
	if (ret)
		pyro_flame__fini(out);
	return ret;
}

int pyro_flame(struct store *s, const struct query_request *q, struct pyro_flame *out, char *err,
	       size_t errlen)
{
	json_object *o;
	int ret = pyro_engine_json(query_tree_json, s, q, &o, err, errlen);

	memset(out, 0, sizeof(*out));
	if (ret)
		return ret;
	ret = lay_tree(o, false, out);
	json_object_put(o);
	return ret;
}

int pyro_flame_diff(struct store *s, const struct query_request *l, const struct query_request *r,
		    struct pyro_flame *out, char *err, size_t errlen)
{
	struct server_mem m;
	json_object *o;
	int ret;

	memset(out, 0, sizeof(*out));
	if (server_mem__open(&m))
		return -ENOMEM;
	ret = query_diff_json(s, l, r, m.f, err, errlen);
	if (ret) {
		server_mem__discard(&m);
		return ret;
	}
	if ((ret = mem_json(&m, &o)))
		return ret;
	ret = lay_tree(o, true, out);
	json_object_put(o);
	return ret;
}

/* ---- selectors ---- */

int pyro_value_index(const char *type)
{
	const char *unit;

	if (!type || strncmp(type, "process_cpu:", 12))
		return 0;
	unit = strchr(type + 12, ':');
	return unit && !strncmp(unit + 1, "nanoseconds:", 12) ? 1 : 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int pyro_selector(const char *type, const char *label_selector, char **out, char *err,
		  size_t errlen)
{
	const char *ls = label_selector ? label_selector : "";
	size_t n, end;
	bool comma;
	FILE *f;
	size_t len;

	*out = NULL;
	while (is_space(*ls))
		ls++;
	n = strlen(ls);
	while (n && is_space(ls[n - 1]))
		n--;
	if (!n)
		ls = "{}", n = 2;
	if (!type || !*type)
		return (*out = strndup(ls, n)) ? 0 : -ENOMEM;
	if (ls[n - 1] != '}') {
		snprintf(err, errlen, "label selector '%.200s' does not end with '}'", ls);
		return -EINVAL;
	}
	/* the matcher goes before the final '}', after a ',' unless the braces are empty
	 * or the selector already ends with one ("{a=\"b\",}" parses: fuzz_render found
	 * that a second ',' made it a selector that does not) */
	end = n - 1;
	for (n = end; n > 0 && is_space(ls[n - 1]); n--)
		;
	comma = n > 0 && ls[n - 1] != '{' && ls[n - 1] != ',';
	if (!(f = open_memstream(out, &len)))
		return -ENOMEM;
	fprintf(f, "%.*s%s__profile_type__=", (int)n, ls, comma ? "," : "");
	base_json_string(f, type); /* a JSON string is a valid selector value */
	fputc('}', f);
	if (fclose(f))
		return -ENOMEM;
	return 0;
}

int pyro_query(const char *query, char **sel, int *value_index, char *err, size_t errlen)
{
	const char *q = query ? query : "", *brace = strchr(q, '{');
	size_t plen = brace ? (size_t)(brace - q) : strlen(q), colons = 0;
	char type[1024];
	int ret;

	for (size_t i = 0; i < plen; i++)
		colons += q[i] == ':';
	*value_index = 0;
	if (colons != 4) /* hearth's own syntax: APP{...} or {...} */
		return (*sel = strdup(q)) ? 0 : -ENOMEM;
	if (plen >= sizeof(type)) {
		snprintf(err, errlen, "profile type in query '%.100s…' is too long", q);
		return -EINVAL;
	}
	memcpy(type, q, plen);
	type[plen] = 0;
	ret = pyro_selector(type, brace ? brace : "", sel, err, errlen);
	*value_index = pyro_value_index(type);
	return ret;
}

/* ---- label listings ---- */

void pyro_strings__fini(struct pyro_strings *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The label listing of q's selection, appended to out. */
static int labels_one(struct store *s, const struct query_request *q, const char *name,
		      struct pyro_strings *out, size_t *cap, char *err, size_t errlen)
{
	struct server_mem m;
	json_object *o;
	int ret;

	if (server_mem__open(&m))
		return -ENOMEM;
	ret = name ? query_label_values_json(s, name, q, m.f, err, errlen)
		   : query_labels_json(s, q, m.f, err, errlen);
	if (ret) {
		server_mem__discard(&m);
		return ret;
	}
	if ((ret = mem_json(&m, &o)))
		return ret;
	for (size_t i = 0; i < json_object_array_length(o) && !ret; i++) {
		char *c = strdup(json_object_get_string(json_object_array_get_idx(o, i)));

		if (!c || base_grow((void **)&out->v, cap, out->n + 1, sizeof(char *))) {
			free(c);
			ret = -ENOMEM;
		} else {
			out->v[out->n++] = c;
		}
	}
	json_object_put(o);
	return ret;
}

int pyro_labels(struct store *s, const struct query_request *q, const char *const *selectors,
		size_t n, const char *name, struct pyro_strings *out, char *err, size_t errlen)
{
	struct query_request one = *q;
	size_t cap = 0, k = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	/* one pass over the series for all the selectors (their union); the engine
	 * refuses more than QUERY_MAX_MATCHERS of them (-E2BIG) */
	one.queries = selectors;
	one.n_queries = n;
	ret = labels_one(s, &one, name, out, &cap, err, errlen);
	if (ret) {
		pyro_strings__fini(out);
		return ret;
	}
	if (out->n)
		qsort(out->v, out->n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < out->n; i++) { /* distinct: selectors may overlap */
		if (k && !strcmp(out->v[k - 1], out->v[i]))
			free(out->v[i]);
		else
			out->v[k++] = out->v[i];
	}
	out->n = k;
	return 0;
}

/* ---- timelines ---- */

void pyro_timeline__fini(struct pyro_timeline *t)
{
	for (size_t i = 0; i < t->n_groups; i++) {
		free(t->groups[i].value);
		free(t->groups[i].values);
	}
	free(t->groups);
	memset(t, 0, sizeof(*t));
}

int pyro_timeline(struct store *s, const struct query_request *q, struct pyro_timeline *out,
		  char *err, size_t errlen)
{
	json_object *o, *groups;
	int ret = pyro_engine_json(query_timeline_json, s, q, &o, err, errlen);

	memset(out, 0, sizeof(*out));
	if (ret)
		return ret;
	out->from_ms = jint(o, "from");
	out->step_ms = jint(o, "step");
	groups = jget(o, "groups");
	out->n_points =
	    out->step_ms > 0
		? (size_t)((jint(o, "until") - out->from_ms + out->step_ms - 1) / out->step_ms)
		: 0;
	out->groups = calloc(json_object_array_length(groups) + 1, sizeof(*out->groups));
	if (!out->groups)
		ret = -ENOMEM;
	for (size_t g = 0; !ret && g < json_object_array_length(groups); g++) {
		json_object *gr = json_object_array_get_idx(groups, g), *vals = jget(gr, "values");
		struct pyro_group *pg = &out->groups[out->n_groups++];
		size_t nv = json_object_array_length(vals);

		if (nv > out->n_points)
			out->n_points = nv;
		pg->value = strdup(json_object_get_string(jget(gr, "group")));
		pg->values = calloc(out->n_points + 1, sizeof(int64_t));
		if (!pg->value || !pg->values) {
			ret = -ENOMEM;
			break;
		}
		for (size_t i = 0; i < nv; i++)
			pg->values[i] = json_object_get_int64(json_object_array_get_idx(vals, i));
	}
	json_object_put(o);
	if (ret)
		pyro_timeline__fini(out);
	return ret;
}

/* ---- GET /pyroscope/... ---- */

/* The flamebearer units of a query's profile type ("samples" without one). */
static const char *units(const char *query, const char *unit)
{
	const char *q = query ? query : "";
	size_t plen = strcspn(q, "{");

	if (memmem(q, plen, ":bytes:", 7))
		return "bytes";
	if (!strncmp(q, "goroutine:", 10))
		return "goroutines";
	if (!strncmp(q, "memory:", 7))
		return "objects";
	return unit;
}

static void write_flamebearer(FILE *f, const struct pyro_flame *fg, int64_t ticks)
{
	fputs("{\"names\":[", f);
	for (size_t i = 0; i < fg->n_names; i++) {
		if (i)
			fputc(',', f);
		base_json_string(f, fg->names[i]);
	}
	fputs("],\"levels\":[", f);
	for (size_t i = 0; i < fg->n_levels; i++) {
		fputs(i ? ",[" : "[", f);
		for (size_t k = 0; k < fg->levels[i].n; k++)
			fprintf(f, k ? ",%lld" : "%lld", (long long)fg->levels[i].values[k]);
		fputc(']', f);
	}
	fprintf(f, "],\"numTicks\":%lld,\"maxSelf\":%lld}", (long long)ticks,
		(long long)fg->max_self);
}

static void write_metadata(FILE *f, const char *format, const char *query, const char *unit)
{
	fprintf(f, "\"metadata\":{\"format\":\"%s\",\"spyName\":\"hearth\",\"sampleRate\":%d,",
		format, strcmp(unit, "nanoseconds") ? 100 : 1000000000);
	fputs("\"units\":", f);
	base_json_string(f, units(query, unit));
	fputs(",\"name\":", f);
	base_json_string(f, query ? query : "");
	fputc('}', f);
}

/* ---- for fuzz_render: the layout and writers on JSON text ---- */

int pyro_flame_from_json(const char *buf, size_t len, bool diff, struct pyro_flame *out)
{
	struct json_tokener *tok = json_tokener_new_ex(PYRO_JSON_DEPTH);
	json_object *o = NULL;
	int ret = -EIO;

	memset(out, 0, sizeof(*out));
	if (!tok)
		return -ENOMEM;
	if (len <= INT_MAX && (o = json_tokener_parse_ex(tok, buf, (int)len)))
		ret = lay_tree(o, diff, out);
	json_object_put(o);
	json_tokener_free(tok);
	return ret;
}

void pyro_flamebearer_json(FILE *f, const struct pyro_flame *fg, int64_t ticks, const char *format,
			   const char *query)
{
	fputs("{\"version\":1,\"flamebearer\":", f);
	write_flamebearer(f, fg, ticks);
	fputc(',', f);
	write_metadata(f, format, query, fg->unit);
	fputs("}\n", f);
}

/* A Pyroscope query and range from the arguments `prefix`query/from/until. */
static int render_args(struct server_req *r, const char *prefix, struct query_request *q,
		       char **sel, char *err, size_t errlen)
{
	char name[32];
	const char *query, *from, *until, *mn;
	char *end;
	long n;

	snprintf(name, sizeof(name), "%s%s", prefix, *prefix ? "Query" : "query");
	query = server_arg(r, name);
	snprintf(name, sizeof(name), "%s%s", prefix, *prefix ? "From" : "from");
	from = server_arg(r, name) ? server_arg(r, name) : server_arg(r, "from");
	snprintf(name, sizeof(name), "%s%s", prefix, *prefix ? "Until" : "until");
	until = server_arg(r, name) ? server_arg(r, name) : server_arg(r, "until");
	if (!query || !*query) {
		snprintf(err, errlen, "missing '%s%s' (PROFILE_TYPE{label=\"value\"} or APP{...})",
			 prefix, *prefix ? "Query" : "query");
		return -EINVAL;
	}
	if (query_parse_range(from, until, server_now_ns(), &q->from_ns, &q->until_ns, err, errlen))
		return -EINVAL;
	if ((mn = server_arg(r, "max-nodes")) || (mn = server_arg(r, "maxNodes"))) {
		n = strtol(mn, &end, 10);
		if (!*mn || *end || n < 1 || n > QUERY_MAX_NODES) {
			snprintf(err, errlen, "max-nodes '%.32s' is not a number from 1 to %d", mn,
				 QUERY_MAX_NODES);
			return -EINVAL;
		}
		q->max_nodes = (size_t)n;
	}
	if (pyro_query(query, sel, &q->value_index, err, errlen))
		return -EINVAL;
	q->query = *sel;
	return 0;
}

/* The whole range's totals: flamebearer's timeline. */
static int write_timeline(struct store *s, const struct query_request *q, FILE *f, char *err,
			  size_t errlen)
{
	struct pyro_timeline t;
	int ret = pyro_timeline(s, q, &t, err, errlen);

	if (ret)
		return ret;
	fprintf(f, "\"timeline\":{\"startTime\":%lld,\"samples\":[", (long long)(t.from_ms / 1000));
	for (size_t i = 0; i < t.n_points; i++)
		fprintf(f, i ? ",%lld" : "%lld",
			(long long)(t.n_groups ? t.groups[0].values[i] : 0));
	fprintf(f, "],\"durationDelta\":%lld}", (long long)(t.step_ms / 1000));
	pyro_timeline__fini(&t);
	return 0;
}

static int render(struct server_req *r, FILE *f, char *err, size_t errlen)
{
	const char *fmt = server_arg(r, "format");
	struct query_request q = {0};
	struct pyro_flame fg = {0};
	char *sel = NULL;
	int ret;

	if (fmt && strcmp(fmt, "json")) {
		snprintf(err, errlen, "format '%.32s' is not served (json)", fmt);
		return -EINVAL;
	}
	ret = render_args(r, "", &q, &sel, err, errlen)
		  ?: pyro_flame(r->srv->store, &q, &fg, err, errlen);
	if (ret)
		goto cleanup;
	fputs("{\"version\":1,\"flamebearer\":", f);
	write_flamebearer(f, &fg, fg.total);
	fputc(',', f);
	write_metadata(f, "single", server_arg(r, "query"), fg.unit);
	fputc(',', f);
	ret = write_timeline(r->srv->store, &q, f, err, errlen);
	fputs("}\n", f);
cleanup:
	pyro_flame__fini(&fg);
	free(sel);
	return ret;
}

static int render_diff(struct server_req *r, FILE *f, char *err, size_t errlen)
{
	struct query_request l = {0}, rt = {0};
	struct pyro_flame fg = {0};
	char *ls = NULL, *rs = NULL;
	int ret = render_args(r, "left", &l, &ls, err, errlen)
		      ?: render_args(r, "right", &rt, &rs, err, errlen);

	if (!ret && l.value_index != rt.value_index) {
		snprintf(err, errlen,
			 "leftQuery and rightQuery count different values "
			 "(profile types); a diff compares one type");
		ret = -EINVAL;
	}
	rt.max_nodes = l.max_nodes;
	if (!ret)
		ret = pyro_flame_diff(r->srv->store, &l, &rt, &fg, err, errlen);
	if (ret)
		goto cleanup;
	fputs("{\"version\":1,\"flamebearer\":", f);
	write_flamebearer(f, &fg, base_sat_add(fg.left_ticks, fg.right_ticks));
	fputc(',', f);
	write_metadata(f, "double", server_arg(r, "leftQuery"), fg.unit);
	fprintf(f, ",\"leftTicks\":%lld,\"rightTicks\":%lld}\n", (long long)fg.left_ticks,
		(long long)fg.right_ticks);
cleanup:
	pyro_flame__fini(&fg);
	free(ls);
	free(rs);
	return ret;
}

/* /pyroscope/labels and /pyroscope/label-values (label NULL: the names). */
static int label_list(struct server_req *r, const char *label, FILE *f, char *err, size_t errlen)
{
	struct query_request q = {0};
	struct pyro_strings l = {0};
	const char *query = server_arg(r, "query");
	char *sel = NULL;
	int vi, ret;

	if (query_parse_range(server_arg(r, "from"), server_arg(r, "until"), server_now_ns(),
			      &q.from_ns, &q.until_ns, err, errlen))
		return -EINVAL;
	if (query && *query && (ret = pyro_query(query, &sel, &vi, err, errlen)))
		return ret;
	q.query = sel;
	ret = pyro_labels(r->srv->store, &q, NULL, 0, label, &l, err, errlen);
	if (!ret) {
		fputc('[', f);
		for (size_t i = 0; i < l.n; i++) {
			if (i)
				fputc(',', f);
			base_json_string(f, l.v[i]);
		}
		fputs("]\n", f);
	}
	pyro_strings__fini(&l);
	free(sel);
	return ret;
}

static int pyroscope_dispatch(struct server_req *r, FILE *f, char *err, size_t errlen)
{
	const char *path = r->url + strlen("/pyroscope/"), *label;

	if (!strcmp(path, "render"))
		return render(r, f, err, errlen);
	if (!strcmp(path, "render-diff"))
		return render_diff(r, f, err, errlen);
	if (!strcmp(path, "labels"))
		return label_list(r, NULL, f, err, errlen);
	if (!strcmp(path, "label-values")) {
		label = server_arg(r, "label");
		if (!label || !*label) {
			snprintf(err, errlen, "missing 'label' (the label whose values to list)");
			return -EINVAL;
		}
		return label_list(r, label, f, err, errlen);
	}
	return -ENOENT;
}

enum MHD_Result server_h_pyroscope(struct server *s, struct server_req *r)
{
	struct server_mem m;
	char err[512] = "";
	int ret;

	(void)s; /* the pipeline checked the method and that there is a store */
	r->is_query = true;
	if (server_mem__open(&m))
		return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory");
	ret = pyroscope_dispatch(r, m.f, err, sizeof(err));
	if (!ret)
		return server_reply_mem(r, 200, "application/json", &m);
	server_mem__discard(&m);
	if (ret == -ENOENT)
		return server_error(r, 404, SERVER_REJ_NOT_FOUND, "no such endpoint '%.200s'",
				    r->url);
	if (ret == -EINVAL || ret == -E2BIG)
		return server_error(r, 400, SERVER_REJ_BAD_QUERY, "%s", err);
	return server_error(r, 500, SERVER_REJ_INTERNAL, "query failed: %s",
			    err[0] ? err : strerror(-ret));
}
