/*
 * The typed results of query.h: their destructors and hearth's JSON of each
 * (the /api answers and `hearth query`'s output), and the query_*_json
 * functions, which are the engine's typed answer then its writer. Pyroscope's
 * and Connect's shapes are written from the same results (src/server).
 *
 * The tree writer runs once per node of trees the web UI asks 100,000 nodes
 * of: it uses the stdio _unlocked calls (the FILE is ours alone), formats
 * numbers by hand and escapes each distinct name once.
 */
#include "query_impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- destructors ---- */

void query_strings__fini(struct query_strings *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void query_series_list__fini(struct query_series_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		for (size_t k = 0; k < l->s[i].n; k++) {
			free((char *)l->s[i].labels[k].name);
			free((char *)l->s[i].labels[k].value);
		}
		free(l->s[i].labels);
		free(l->s[i].type);
	}
	free(l->s);
	memset(l, 0, sizeof(*l));
}

void query_top__fini(struct query_top *t)
{
	free(t->rows);
	free(t->pool);
	memset(t, 0, sizeof(*t));
}

void query_tree__fini(struct query_tree *t)
{
	free(t->nodes);
	if (t->own) {
		base_strtab__fini(t->own);
		free(t->own);
	}
	query_top__fini(&t->top);
	memset(t, 0, sizeof(*t));
}

void query_diff__fini(struct query_diff *d)
{
	query_tree__fini(&d->tree);
	free(d->rows);
	free(d->pool);
	memset(d, 0, sizeof(*d));
}

void query_timeline__fini(struct query_timeline *t)
{
	for (size_t g = 0; g < t->n_groups; g++) {
		free(t->groups[g].group);
		free(t->groups[g].values);
	}
	free(t->groups);
	memset(t, 0, sizeof(*t));
}

/* ---- JSON pieces ---- */

static void put_i64(FILE *out, int64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	fwrite_unlocked(p, 1, (size_t)(buf + sizeof(buf) - p), out);
}

/* s as base_json_string writes it; a string with nothing to escape in one write. */
static void put_json_string(FILE *out, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;
	size_t n = 0;

	while (c[n] >= 0x20 && c[n] != '"' && c[n] != '\\')
		n++;
	if (c[n]) {
		base_json_string(out, s);
		return;
	}
	fputc_unlocked('"', out);
	fwrite_unlocked(s, 1, n, out);
	fputc_unlocked('"', out);
}

/* A [left,right] pair. */
static void put_pair(FILE *out, const int64_t v[2])
{
	fputc_unlocked('[', out);
	put_i64(out, v[0]);
	fputc_unlocked(',', out);
	put_i64(out, v[1]);
	fputc_unlocked(']', out);
}

/* ---- the tree ---- */

/* Names quoted and escaped as JSON (as base_json_string writes them), each made
 * when first written. */
struct json_names {
	const struct query_tree *t;
	char **q; /* n_names */
};

static const char *json_name(struct json_names *jn, uint32_t id)
{
	const unsigned char *c;
	char *q, *o;

	if (id >= jn->t->n_names)
		return "\"\"";
	if (jn->q[id])
		return jn->q[id];
	c = (const unsigned char *)jn->t->names[id];
	if (!(q = o = malloc(strlen((const char *)c) * 6 + 3)))
		return NULL;
	*o++ = '"';
	for (; *c; c++) {
		if (*c == '"' || *c == '\\')
			*o++ = '\\', *o++ = (char)*c;
		else if (*c < 0x20)
			o += sprintf(o, "\\u%04x", *c);
		else
			*o++ = (char)*c;
	}
	*o++ = '"';
	*o = '\0';
	return jn->q[id] = q;
}

/* {"name":…[,"module":…],"self":…,"total":…, up to the children. */
static int open_node(struct json_names *jn, const struct query_node *n, bool diff, FILE *out)
{
	const char *name = json_name(jn, n->name), *mod = NULL;

	if (!name || (n->module != QUERY_NONE && !(mod = json_name(jn, n->module))))
		return -ENOMEM;
	fputs_unlocked("{\"name\":", out);
	fputs_unlocked(name, out);
	if (mod) {
		fputs_unlocked(",\"module\":", out);
		fputs_unlocked(mod, out);
	}
	fputs_unlocked(",\"self\":", out);
	if (diff)
		put_pair(out, n->self);
	else
		put_i64(out, n->self[0]);
	fputs_unlocked(",\"total\":", out);
	if (diff)
		put_pair(out, n->total);
	else
		put_i64(out, n->total[0]);
	return 0;
}

/*
 * The nodes as nested objects, from their pre-order and depths: a node one
 * level deeper than the one before opens its "children"; a shallower one first
 * closes the levels between. No recursion: a 200,000-frame stack makes a chain
 * of max_nodes nested nodes.
 */
static int write_nodes(const struct query_tree *t, FILE *out)
{
	struct json_names jn = {t, calloc(t->n_names + 1, sizeof(char *))};
	int e = jn.q ? 0 : -ENOMEM;

	if (!t->n_nodes) /* the engine always makes a root; a tree made elsewhere may not */
		fputs_unlocked("null", out);

	for (size_t i = 0; !e && i < t->n_nodes; i++) {
		uint32_t d = t->nodes[i].depth, pd = i ? t->nodes[i - 1].depth : 0;

		if (i && d > pd) {
			fputs_unlocked(",\"children\":[", out);
		} else if (i) {
			fputc_unlocked('}', out);
			for (; pd > d; pd--)
				fputs_unlocked("]}", out);
			fputc_unlocked(',', out);
		}
		e = open_node(&jn, &t->nodes[i], t->diff, out);
	}
	if (!e && t->n_nodes) {
		fputc_unlocked('}', out);
		for (uint32_t d = t->nodes[t->n_nodes - 1].depth; d > 0; d--)
			fputs_unlocked("]}", out);
	}
	for (size_t i = 0; jn.q && i < t->n_names; i++)
		free(jn.q[i]);
	free(jn.q);
	return e;
}

/* ---- the top table ---- */

/* Formats v at the end of buf (24 bytes); returns where it starts. */
static char *fmt_i64(int64_t v, char *end)
{
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	char *p = end;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	return p;
}

/* Appends the n bytes at s to *o. */
static char *put_bytes(char *o, const char *s, size_t n)
{
	memcpy(o, s, n);
	return o + n;
}

/* One row of the top table's JSON, {"name":…,"self":…,"total":…}, after ",\n"
 * unless first. */
static void put_top_row(FILE *out, const struct top_row *r, bool first)
{
	static const char head[] = ",\n{\"name\":", self[] = ",\"self\":", total[] = ",\"total\":";
	char buf[512], num[24], *o = buf, *p;
	size_t len = 0;

	while ((unsigned char)r->name[len] >= 0x20 && r->name[len] != '"' && r->name[len] != '\\')
		len++;
	if (r->name[len] || len > sizeof(buf) - 128) { /* to escape, or long: as before */
		fputs_unlocked(first ? head + 2 : head, out);
		put_json_string(out, r->name);
	} else {
		o = put_bytes(o, first ? head + 2 : head,
			      first ? sizeof(head) - 3 : sizeof(head) - 1);
		*o++ = '"';
		o = put_bytes(o, r->name, len);
		*o++ = '"';
	}
	o = put_bytes(o, self, sizeof(self) - 1);
	p = fmt_i64(r->self, num + sizeof(num));
	o = put_bytes(o, p, (size_t)(num + sizeof(num) - p));
	o = put_bytes(o, total, sizeof(total) - 1);
	p = fmt_i64(r->total, num + sizeof(num));
	o = put_bytes(o, p, (size_t)(num + sizeof(num) - p));
	*o++ = '}';
	fwrite_unlocked(buf, 1, (size_t)(o - buf), out);
}

int query_top__write_json(const struct query_top *t, FILE *out)
{
	fputs("{\"unit\":", out);
	base_json_string(out, t->unit);
	fprintf(out, ",\"total\":%lld,\"rows\":[", (long long)t->total);
	/* the UI asks for every row (~40,000 of the benchmark's hour): each made in a
	 * buffer and written at once, numbers formatted by hand */
	for (size_t i = 0; i < t->n; i++)
		put_top_row(out, &t->rows[i], i == 0);
	fputs("]}", out);
	return ferror(out) ? -ENOMEM : 0;
}

int query_tree__write_json(const struct query_tree *t, FILE *out)
{
	int e;

	fputs("{\"unit\":", out);
	base_json_string(out, t->unit);
	fputs(",\"total\":", out);
	put_i64(out, t->n_nodes ? t->nodes[0].total[0] : 0);
	fputs(",\"tree\":", out);
	e = write_nodes(t, out);
	if (!e && t->has_top) {
		fputs(",\"top\":", out);
		e = query_top__write_json(&t->top, out);
	}
	fputs("}\n", out);
	return e ?: ferror(out) ? -ENOMEM : 0;
}

/* ---- the diff ---- */

/* A double as JSON (non-finite, which JSON has not: 0); %.6g is more than the
 * statistics' precision. */
static void put_num(FILE *out, double v)
{
	fprintf(out, "%.6g", isfinite(v) ? v : 0.0);
}

/* {"left":a,"right":b,"change":…,"low":…,"high":…,"verdict":…} */
static void put_change(FILE *out, const struct query_change *c, bool verdict)
{
	fputs_unlocked("{\"left\":", out);
	put_num(out, c->left);
	fputs_unlocked(",\"right\":", out);
	put_num(out, c->right);
	fputs_unlocked(",\"change\":", out);
	put_num(out, c->change);
	fputs_unlocked(",\"low\":", out);
	put_num(out, c->low);
	fputs_unlocked(",\"high\":", out);
	put_num(out, c->high);
	if (verdict)
		fprintf(out, ",\"verdict\":\"%s\"", query_verdict_name(c->verdict));
	fputc_unlocked('}', out);
}

/* One plain sentence (or two): what "within noise" means for this answer. */
static void diff_note(const struct query_diff *d, char *buf, size_t len)
{
	const char *side = !d->intervals[0] ? "left" : !d->intervals[1] ? "right" : NULL;
	int n;

	if (side) {
		snprintf(buf, len,
			 "The %s selection holds no data: no change can be told from noise.", side);
		return;
	}
	n = snprintf(buf, len,
		     "A change is within noise when its %g%% interval, which counts sampling "
		     "noise and the variation between the %zu and %zu intervals of the two "
		     "sides, includes zero; only changes beyond it are called up or down.",
		     100 * d->confidence, d->intervals[0], d->intervals[1]);
	if (n > 0 && (size_t)n < len && (d->intervals[0] < 2 || d->intervals[1] < 2))
		snprintf(buf + n, len - (size_t)n,
			 " A side with fewer than 2 intervals counts sampling noise only.");
}

static void put_significance(FILE *out, const struct query_diff *d)
{
	char note[512];

	diff_note(d, note, sizeof(note));
	fputs(",\"significance\":{\"confidence\":", out);
	put_num(out, d->confidence);
	fprintf(out, ",\"normalize\":\"%s\",\"unit\":",
		d->normalize == QUERY_NORM_RATE ? "rate" : "share");
	base_json_string(out, d->stats_unit);
	fprintf(out, ",\"intervals\":[%zu,%zu],\"seconds\":[", d->intervals[0],
		d->intervals[1]);
	put_num(out, d->seconds[0]);
	fputc(',', out);
	put_num(out, d->seconds[1]);
	fputs("],\"note\":", out);
	base_json_string(out, note);
	fputc('}', out);
}

static void put_diff_row(FILE *out, const struct query_diff_row *r, bool first)
{
	fputs_unlocked(first ? "{\"name\":" : ",\n{\"name\":", out);
	put_json_string(out, r->name);
	fputs_unlocked(",\"self\":", out);
	put_pair(out, r->self);
	fputs_unlocked(",\"total\":", out);
	put_pair(out, r->total);
	fputs_unlocked(",\"selfChange\":", out);
	put_i64(out, r->self_change);
	fputs_unlocked(",\"totalChange\":", out);
	put_i64(out, r->total_change);
	/* %.17g: the share as the engine computed it, read back to the same double */
	fprintf(out, ",\"shareChange\":%.17g", r->share_change);
	fputs_unlocked(",\"selfDiff\":", out);
	put_change(out, &r->self_diff, true);
	fputs_unlocked(",\"totalDiff\":", out);
	put_change(out, &r->total_diff, true);
	fputc_unlocked('}', out);
}

int query_diff__write_json(const struct query_diff *d, FILE *out)
{
	int e;

	fputs("{\"unit\":", out);
	base_json_string(out, d->tree.unit);
	fputs(",\"left\":", out);
	put_i64(out, d->total[0]);
	fputs(",\"right\":", out);
	put_i64(out, d->total[1]);
	fputs(",\"tree\":", out);
	e = write_nodes(&d->tree, out);
	fputs(",\"functions\":[", out);
	for (size_t i = 0; !e && i < d->n_rows; i++)
		put_diff_row(out, &d->rows[i], i == 0);
	fputc(']', out);
	put_significance(out, d); /* after the table: the tree's JSON keeps its place */
	fputs("}\n", out);
	return e ?: ferror(out) ? -ENOMEM : 0;
}

/* ---- listings and timelines ---- */

void query_json_strings(FILE *out, char *const *v, size_t n)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', out);
		base_json_string(out, v[i]);
	}
	fputc(']', out);
}

int query_strings__write_json(const struct query_strings *l, FILE *out)
{
	query_json_strings(out, l->v, l->n);
	fputc('\n', out);
	return ferror(out) ? -ENOMEM : 0;
}

int query_series_list__write_json(const struct query_series_list *l, FILE *out)
{
	fputc('[', out);
	for (size_t i = 0; i < l->n; i++) {
		fputs(i ? ",\n{\"profileType\":" : "{\"profileType\":", out);
		base_json_string(out, l->s[i].type);
		fputs(",\"labels\":{", out);
		for (size_t j = 0; j < l->s[i].n; j++) {
			if (j)
				fputc(',', out);
			base_json_string(out, l->s[i].labels[j].name);
			fputc(':', out);
			base_json_string(out, l->s[i].labels[j].value);
		}
		fputs("}}", out);
	}
	fputs("]\n", out);
	return ferror(out) ? -ENOMEM : 0;
}

int query_timeline__write_json(const struct query_timeline *t, FILE *out)
{
	fputs("{\"unit\":", out);
	base_json_string(out, t->unit);
	fprintf(out, ",\"from\":%lld,\"until\":%lld,\"step\":%lld,\"groups\":[",
		(long long)(t->from_ns / 1000000), (long long)(t->until_ns / 1000000),
		(long long)(t->step_ns / 1000000));
	for (size_t g = 0; g < t->n_groups; g++) {
		fputs(g ? ",\n{\"group\":" : "{\"group\":", out);
		base_json_string(out, t->groups[g].group);
		fputs(",\"values\":[", out);
		for (size_t i = 0; i < t->n_points; i++)
			fprintf(out, i ? ",%lld" : "%lld", (long long)t->groups[g].values[i]);
		fputs("]}", out);
	}
	fputs("]}\n", out);
	return ferror(out) ? -ENOMEM : 0;
}

/* ---- the engine's answer, then its JSON ---- */

/* Any typed result, and which one it is. */
enum result_kind { R_STRINGS, R_SERIES, R_TREE, R_TOP, R_DIFF, R_TIMELINE };
union result {
	struct query_strings strings;
	struct query_series_list series;
	struct query_tree tree;
	struct query_top top;
	struct query_diff diff;
	struct query_timeline timeline;
};

static int write_result(enum result_kind k, const union result *r, FILE *out)
{
	switch (k) {
	case R_STRINGS:
		return query_strings__write_json(&r->strings, out);
	case R_SERIES:
		return query_series_list__write_json(&r->series, out);
	case R_TREE:
		return query_tree__write_json(&r->tree, out);
	case R_TOP: /* an object also nested in a tree's answer: the newline here */
		return query_top__write_json(&r->top, out) ?: (fputc('\n', out), 0);
	case R_DIFF:
		return query_diff__write_json(&r->diff, out);
	default:
		return query_timeline__write_json(&r->timeline, out);
	}
}

/* The engine's answer r (e: how making it went) as JSON, then freed. */
static int answer_json(int e, enum result_kind k, union result *r, FILE *out)
{
	e = e ?: write_result(k, r, out);
	if (k == R_STRINGS)
		query_strings__fini(&r->strings);
	else if (k == R_SERIES)
		query_series_list__fini(&r->series);
	else if (k == R_TREE)
		query_tree__fini(&r->tree);
	else if (k == R_TOP)
		query_top__fini(&r->top);
	else if (k == R_DIFF)
		query_diff__fini(&r->diff);
	else
		query_timeline__fini(&r->timeline);
	return e;
}

int query_labels_json(struct store *s, const struct query_request *q, FILE *out, char *err,
		      size_t errlen)
{
	union result r;

	return answer_json(query_labels(s, q, &r.strings, err, errlen), R_STRINGS, &r, out);
}

int query_label_values_json(struct store *s, const char *name, const struct query_request *q,
			    FILE *out, char *err, size_t errlen)
{
	union result r;

	return answer_json(query_label_values(s, name, q, &r.strings, err, errlen), R_STRINGS, &r,
			   out);
}

int query_series_json(struct store *s, const struct query_request *q, FILE *out, char *err,
		      size_t errlen)
{
	union result r;

	return answer_json(query_series(s, q, &r.series, err, errlen), R_SERIES, &r, out);
}

int query_tree_json(struct store *s, const struct query_request *q, FILE *out, char *err,
		    size_t errlen)
{
	union result r;

	return answer_json(query_tree(s, q, &r.tree, err, errlen), R_TREE, &r, out);
}

int query_top_json(struct store *s, const struct query_request *q, FILE *out, char *err,
		   size_t errlen)
{
	union result r;

	return answer_json(query_top(s, q, &r.top, err, errlen), R_TOP, &r, out);
}

int query_diff_json(struct store *s, const struct query_request *left,
		    const struct query_request *right, FILE *out, char *err, size_t errlen)
{
	union result r;

	return answer_json(query_diff(s, left, right, &r.diff, err, errlen), R_DIFF, &r, out);
}

int query_timeline_json(struct store *s, const struct query_request *q, FILE *out, char *err,
			size_t errlen)
{
	union result r;

	return answer_json(query_timeline(s, q, &r.timeline, err, errlen), R_TIMELINE, &r, out);
}
