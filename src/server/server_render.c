/*
 * Pyroscope's shapes of the query engine's answers, for the Connect methods
 * (server_connect.c) and the Pyroscope HTTP API served here: GET
 * /pyroscope/render (flamebearer JSON), /pyroscope/render-diff,
 * /pyroscope/label-values and /pyroscope/labels.
 *
 * Nothing here merges or prunes: each answer is laid out from the engine's
 * typed result (query_tree, query_diff, query_timeline, the label listings,
 * query.h) as Pyroscope lays it out, so a flame graph served here is node for
 * node the tree /api/profile?format=tree serves. Nothing is read back from
 * hearth's own JSON.
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
#include <stdlib.h>
#include <string.h>

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

/* Per level of the layout: its right edge so far, the left edge of the next child
 * of the level's open node, one of each per side in a diff; values' capacity. */
struct lay_level {
	int64_t edge[2], kid_x[2];
	size_t cap;
};

/* Layout state: the tree laid out, the flame graph's name index of each of the
 * tree's name ids (1 + the index; 0 = not yet), the levels' state. */
struct layout {
	const struct query_tree *t;
	struct pyro_flame *fg;
	uint32_t *index;
	struct lay_level *lv;
	size_t cap_names, cap_levels, cap_lv;
};

static int name_index(struct layout *l, uint32_t id, int64_t *out)
{
	bool known = id < l->t->n_names;
	char *c;

	if (known && l->index[id]) {
		*out = l->index[id] - 1;
		return 0;
	}
	if (l->fg->n_names >= UINT32_MAX - 1 ||
	    base_grow((void **)&l->fg->names, &l->cap_names, l->fg->n_names + 1, sizeof(char *)) ||
	    !(c = strdup(known ? l->t->names[id] : "")))
		return -ENOMEM;
	l->fg->names[l->fg->n_names] = c;
	*out = (int64_t)l->fg->n_names++;
	if (known)
		l->index[id] = (uint32_t)*out + 1;
	return 0;
}

/* The level at depth d, created (with its state) when first reached. */
static struct pyro_level *level(struct layout *l, size_t d)
{
	while (l->fg->n_levels <= d) {
		size_t n = l->fg->n_levels;

		if (base_grow((void **)&l->fg->levels, &l->cap_levels, n + 1,
			      sizeof(*l->fg->levels)) ||
		    base_grow((void **)&l->lv, &l->cap_lv, n + 1, sizeof(*l->lv)))
			return NULL;
		l->fg->levels[n] = (struct pyro_level){0};
		l->lv[n] = (struct lay_level){0};
		l->fg->n_levels++;
	}
	return &l->fg->levels[d];
}

/* Lays out node n, the next in pre-order: its left edges are where its parent's
 * next child goes (x 0 for the root). */
static int lay_node(struct layout *l, const struct query_node *n)
{
	bool diff = l->t->diff;
	size_t d = n->depth, nv = diff ? 7 : 4;
	int64_t tot[2] = {n->total[0], diff ? n->total[1] : n->total[0]};
	int64_t self[2] = {n->self[0], diff ? n->self[1] : n->self[0]};
	int64_t x[2] = {0, 0}, vals[7], idx;
	struct pyro_level *lv = level(l, d);
	struct lay_level *st;
	int ret;

	if (!lv)
		return -ENOMEM;
	st = &l->lv[d];
	if (d) {
		struct lay_level *parent = &l->lv[d - 1];

		memcpy(x, parent->kid_x, sizeof(x));
		/* sums of totals that may each be INT64_MAX (saturated at ingest): saturate */
		parent->kid_x[0] = base_sat_add(x[0], tot[0]);
		parent->kid_x[1] = base_sat_add(x[1], tot[1]);
	}
	memcpy(st->kid_x, x, sizeof(x));
	if ((ret = name_index(l, n->name, &idx)))
		return ret;
	vals[0] = base_sat_sub(x[0], st->edge[0]);
	vals[1] = tot[0];
	vals[2] = self[0];
	if (diff) {
		vals[3] = base_sat_sub(x[1], st->edge[1]);
		vals[4] = tot[1];
		vals[5] = self[1];
	}
	vals[nv - 1] = idx;
	st->edge[0] = base_sat_add(x[0], tot[0]);
	st->edge[1] = base_sat_add(x[1], tot[1]);
	if (base_grow((void **)&lv->values, &st->cap, lv->n + nv, sizeof(int64_t)))
		return -ENOMEM;
	memcpy(lv->values + lv->n, vals, nv * sizeof(int64_t));
	lv->n += nv;
	if (self[0] > l->fg->max_self)
		l->fg->max_self = self[0];
	if (diff && self[1] > l->fg->max_self)
		l->fg->max_self = self[1];
	return 0;
}

int pyro_flame_layout(const struct query_tree *t, struct pyro_flame *out)
{
	struct layout l = {.t = t, .fg = out};
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->unit = !strcmp(t->unit, "nanoseconds") ? "nanoseconds" : "samples";
	if (!t->n_nodes || t->nodes[0].depth)
		return -EIO;
	if (!(l.index = calloc(t->n_names + 1, sizeof(*l.index))))
		return -ENOMEM;
	for (size_t i = 0; !ret && i < t->n_nodes; i++) {
		uint32_t d = t->nodes[i].depth;

		/* pre-order: after the root, every node is at most one deeper than the last */
		if (i && (!d || d > t->nodes[i - 1].depth + 1))
			ret = -EIO;
		else
			ret = lay_node(&l, &t->nodes[i]);
	}
	if (!ret) {
		const struct query_node *root = &t->nodes[0];

		out->left_ticks = root->total[0];
		out->right_ticks = t->diff ? root->total[1] : root->total[0];
		out->total =
		    t->diff ? base_sat_add(root->total[0], root->total[1]) : root->total[0];
	}
	free(l.index);
	free(l.lv);
	if (ret)
		pyro_flame__fini(out);
	return ret;
}

int pyro_flame(struct store *s, const struct query_request *q, struct pyro_flame *out, char *err,
	       size_t errlen)
{
	struct query_tree t;
	int ret = query_tree(s, q, &t, err, errlen);

	memset(out, 0, sizeof(*out));
	if (!ret)
		ret = pyro_flame_layout(&t, out);
	query_tree__fini(&t);
	return ret;
}

int pyro_flame_diff(struct store *s, const struct query_request *l, const struct query_request *r,
		    struct pyro_flame *out, char *err, size_t errlen)
{
	struct query_diff d;
	int ret = query_diff(s, l, r, &d, err, errlen);

	memset(out, 0, sizeof(*out));
	if (!ret)
		ret = pyro_flame_layout(&d.tree, out);
	query_diff__fini(&d);
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

int pyro_labels(struct store *s, const struct query_request *q, const char *const *selectors,
		size_t n, const char *name, struct query_strings *out, char *err, size_t errlen)
{
	struct query_request one = *q;

	/* one pass over the series for all the selectors (their union, listed once);
	 * the engine refuses more than QUERY_MAX_MATCHERS of them (-E2BIG) */
	one.queries = selectors;
	one.n_queries = n;
	return name ? query_label_values(s, name, &one, out, err, errlen)
		    : query_labels(s, &one, out, err, errlen);
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
	fputs("{\"names\":", f);
	query_json_strings(f, fg->names, fg->n_names);
	fputs(",\"levels\":[", f);
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
	char name[32], fname[32], uname[32];
	const char *query, *from, *until, *mn;
	char *end;
	long n;

	snprintf(name, sizeof(name), "%s%s", prefix, *prefix ? "Query" : "query");
	query = server_arg(r, name);
	snprintf(fname, sizeof(fname), "%s%s", prefix, *prefix ? "From" : "from");
	if (!(from = server_arg(r, fname)))
		from = server_arg(r, strcpy(fname, "from")); /* the default of both sides */
	snprintf(uname, sizeof(uname), "%s%s", prefix, *prefix ? "Until" : "until");
	if (!(until = server_arg(r, uname)))
		until = server_arg(r, strcpy(uname, "until"));
	if (!query || !*query) {
		snprintf(err, errlen, "missing '%s%s' (PROFILE_TYPE{label=\"value\"} or APP{...})",
			 prefix, *prefix ? "Query" : "query");
		return -EINVAL;
	}
	if (query_parse_range_named(fname, from, uname, until, server_now_ns(), &q->from_ns,
				    &q->until_ns, err, errlen))
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
	struct query_timeline t;
	int ret = query_timeline(s, q, &t, err, errlen);

	if (!ret) {
		fprintf(f, "\"timeline\":{\"startTime\":%lld,\"samples\":[",
			(long long)(t.from_ns / 1000000000));
		for (size_t i = 0; i < t.n_points; i++)
			fprintf(f, i ? ",%lld" : "%lld",
				(long long)(t.n_groups ? t.groups[0].values[i] : 0));
		fprintf(f, "],\"durationDelta\":%lld}", (long long)(t.step_ns / 1000000000));
	}
	query_timeline__fini(&t);
	return ret;
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
	struct query_strings l = {0};
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
	if (!ret)
		ret = query_strings__write_json(&l, f);
	query_strings__fini(&l);
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
