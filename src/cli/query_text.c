/*
 * hearth query's text for people: the JSON answers of /api/series, /api/labels,
 * /api/timeline and /api/profile?format=tree (the shapes in query.h) as tables
 * and an indented tree. The same JSON comes from a server or, with --data, from
 * the query_*_json writers, so one renderer serves both; --json prints it as is.
 *
 * The input is a server's answer: parsed with json-c with nesting bounded
 * (QUERY_TEXT_MAX_DEPTH) and its size bounded by the caller (QUERY_TEXT_MAX_BYTES);
 * every member is checked for its type, and a shape it does not know is an error
 * naming what was missing, never a crash (tests/fuzz/fuzz_query_text.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "query_text.h"

/* Timeline columns: the largest groups, the rest summed as "other". */
#define TEXT_TIMELINE_COLS 6

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt,
						     ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static struct json_object *member(struct json_object *o, const char *key, enum json_type t)
{
	struct json_object *v = NULL;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, t))
		return NULL;
	return v;
}

static int64_t int_member(struct json_object *o, const char *key)
{
	struct json_object *v = member(o, key, json_type_int);

	return v ? json_object_get_int64(v) : 0;
}

/* labels: one name (or value) a line. */
static int render_labels(struct json_object *root, FILE *out, char *err, size_t errlen)
{
	size_t n;

	if (!json_object_is_type(root, json_type_array))
		return bad(err, errlen, "the answer is not a list of names");
	n = json_object_array_length(root);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(root, i);

		if (json_object_is_type(v, json_type_string))
			fprintf(out, "%s\n", json_object_get_string(v));
	}
	return 0;
}

/* series: `TYPE {name="value", ...}` a line, as a selector would name it. */
static int render_series(struct json_object *root, FILE *out, char *err, size_t errlen)
{
	size_t n;

	if (!json_object_is_type(root, json_type_array))
		return bad(err, errlen, "the answer is not a list of series");
	n = json_object_array_length(root);
	for (size_t i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(root, i);
		struct json_object *type = member(s, "profileType", json_type_string);
		struct json_object *labels = member(s, "labels", json_type_object);
		bool first = true;

		fprintf(out, "%s {", type ? json_object_get_string(type) : "?");
		if (labels) {
			json_object_object_foreach(labels, k, v)
			{
				fprintf(out, "%s%s=\"%s\"", first ? "" : ", ", k,
					json_object_is_type(v, json_type_string)
					    ? json_object_get_string(v)
					    : "");
				first = false;
			}
		}
		fputs("}\n", out);
	}
	fprintf(out, "# %zu series\n", n);
	return 0;
}

static void put_time(FILE *out, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char buf[32];

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fputs(buf, out);
}

/* timeline: a row per step, a column per group (the largest few, then "other"). */
static int render_timeline(struct json_object *root, FILE *out, char *err, size_t errlen)
{
	struct json_object *groups = member(root, "groups", json_type_array);
	struct json_object *unit = member(root, "unit", json_type_string);
	int64_t from = int_member(root, "from"), step = int_member(root, "step");
	size_t n_groups, n_cols, n_points = 0;

	if (!groups || step <= 0)
		return bad(err, errlen, "the answer has no \"groups\" or \"step\"");
	n_groups = json_object_array_length(groups);
	n_cols = n_groups > TEXT_TIMELINE_COLS ? TEXT_TIMELINE_COLS : n_groups;
	for (size_t g = 0; g < n_groups; g++) {
		struct json_object *v = member(json_object_array_get_idx(groups, g), "values",
					       json_type_array);
		if (v && json_object_array_length(v) > n_points)
			n_points = json_object_array_length(v);
	}
	fprintf(out, "# %s per %" PRId64 " s step; %zu groups\n",
		unit ? json_object_get_string(unit) : "samples", step / 1000, n_groups);
	fprintf(out, "%-20s", "time (UTC)");
	for (size_t g = 0; g < n_cols; g++) {
		struct json_object *name =
		    member(json_object_array_get_idx(groups, g), "group", json_type_string);
		const char *s = name ? json_object_get_string(name) : "";

		fprintf(out, "  %14.14s", *s ? s : n_groups > 1 ? "(none)" : "total");
	}
	if (n_groups > n_cols)
		fprintf(out, "  %14s", "other");
	fputc('\n', out);
	for (size_t i = 0; i < n_points; i++) {
		int64_t other = 0;

		put_time(out, from + (int64_t)i * step);
		for (size_t g = 0; g < n_groups; g++) {
			struct json_object *v = member(json_object_array_get_idx(groups, g),
						       "values", json_type_array);
			struct json_object *x = v ? json_object_array_get_idx(v, i) : NULL;
			int64_t n = x && json_object_is_type(x, json_type_int)
					? json_object_get_int64(x)
					: 0;

			if (g < n_cols)
				fprintf(out, "  %14" PRId64, n);
			else
				other += n;
		}
		if (n_groups > n_cols)
			fprintf(out, "  %14" PRId64, other);
		fputc('\n', out);
	}
	return 0;
}

/* One node and its children, indented two spaces a level: total%, self%, name. */
static void render_node(struct json_object *node, int64_t whole, int depth, FILE *out)
{
	struct json_object *name = member(node, "name", json_type_string);
	struct json_object *kids = member(node, "children", json_type_array);
	int64_t total = int_member(node, "total"), self = int_member(node, "self");
	size_t n = kids ? json_object_array_length(kids) : 0;

	fprintf(out, "%6.2f%% %6.2f%%  %*s%s\n", whole ? 100.0 * (double)total / (double)whole : 0,
		whole ? 100.0 * (double)self / (double)whole : 0, 2 * depth, "",
		name ? json_object_get_string(name) : "?");
	for (size_t i = 0; i < n; i++)
		render_node(json_object_array_get_idx(kids, i), whole, depth + 1, out);
}

/* tree: the flame tree, largest child first, as `pprof -tree` reads top down. */
static int render_tree(struct json_object *root, FILE *out, char *err, size_t errlen)
{
	struct json_object *tree = member(root, "tree", json_type_object);
	struct json_object *unit = member(root, "unit", json_type_string);
	int64_t whole = int_member(root, "total");

	if (!tree)
		return bad(err, errlen, "the answer has no \"tree\"");
	fprintf(out, "# %" PRId64 " %s in all\n", whole, unit ? json_object_get_string(unit) : "");
	fprintf(out, "%7s %7s  %s\n", "total", "self", "function (callees indented below)");
	render_node(tree, whole, 0, out);
	return 0;
}

static double num_member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return NAN;
	return json_object_get_double(v);
}

/* "FROM – UNTIL (N intervals)" of a window or baseline object. */
static void put_span(FILE *out, struct json_object *span)
{
	put_time(out, int_member(span, "from") / 1000000);
	fputs(" – ", out);
	put_time(out, int_member(span, "until") / 1000000);
	fprintf(out, " (%" PRId64 " intervals)", int_member(span, "intervals"));
}

/* regressions: a line saying what was compared, then a row per function. */
static int render_regressions(struct json_object *root, FILE *out, char *err, size_t errlen)
{
	struct json_object *fns = member(root, "functions", json_type_array);
	struct json_object *w = member(root, "window", json_type_object);
	struct json_object *b = member(root, "baseline", json_type_object);
	struct json_object *unit = member(root, "unit", json_type_string);
	struct json_object *kind = member(root, "kind", json_type_string);
	struct json_object *note = member(root, "note", json_type_string);
	size_t n;

	if (!fns || !w || !b || !unit || !kind)
		return bad(err, errlen, "the answer lacks functions, window, baseline, unit or kind");
	fputs("# window ", out);
	put_span(out, w);
	fputs(" against baseline ", out);
	put_span(out, b);
	fprintf(out, "; %s in %s, confidence %g over the %" PRId64 " functions tested\n",
		json_object_get_string(kind), json_object_get_string(unit),
		num_member(root, "confidence"), int_member(root, "tested"));
	n = json_object_array_length(fns);
	if (n)
		fprintf(out, "%-40s %12s %12s %12s %27s %9s\n", "function", "before", "after",
			"change", "interval", "relative");
	for (size_t i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(fns, i);
		struct json_object *name = member(r, "name", json_type_string);
		double rel = num_member(r, "relative");
		char relbuf[32] = "new";

		if (!name)
			return bad(err, errlen, "function %zu has no name", i);
		if (isfinite(rel))
			snprintf(relbuf, sizeof(relbuf), "%+.1f%%", 100 * rel);
		fprintf(out, "%-40s %12.4g %12.4g %+12.4g  [%+11.4g, %+11.4g] %9s\n",
			json_object_get_string(name), num_member(r, "before"),
			num_member(r, "after"), num_member(r, "change"), num_member(r, "low"),
			num_member(r, "high"), relbuf);
	}
	if (note)
		fprintf(out, "# %s\n", json_object_get_string(note));
	return 0;
}

int query_text_render(const char *format, const char *json, size_t len, FILE *out, char *err,
		      size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *root;
	int ret;

	if (len > QUERY_TEXT_MAX_BYTES || len > (size_t)INT32_MAX)
		return bad(err, errlen, "the answer is over %d bytes", QUERY_TEXT_MAX_BYTES);
	tok = json_tokener_new_ex(QUERY_TEXT_MAX_DEPTH);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, json, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		ret = bad(err, errlen, "the answer is not JSON: %s",
			  json_tokener_error_desc(json_tokener_get_error(tok)));
		goto cleanup;
	}
	if (!strcmp(format, "labels"))
		ret = render_labels(root, out, err, errlen);
	else if (!strcmp(format, "series"))
		ret = render_series(root, out, err, errlen);
	else if (!strcmp(format, "timeline"))
		ret = render_timeline(root, out, err, errlen);
	else if (!strcmp(format, "tree"))
		ret = render_tree(root, out, err, errlen);
	else if (!strcmp(format, "regressions"))
		ret = render_regressions(root, out, err, errlen);
	else
		ret = bad(err, errlen, "no text form for '%s'", format);
cleanup:
	json_object_put(root);
	json_tokener_free(tok);
	return ret;
}
