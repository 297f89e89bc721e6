/*
 * libFuzzer target for the Pyroscope render path (server_render.c), the parts that
 * take outside input. The first byte picks what the rest is:
 *
 *   0 mod 3  a /pyroscope/render query: "TYPE{...}" or hearth's "APP{...}"
 *            (pyro_query), and, after the first newline, a label selector for
 *            pyro_selector with that type (the Connect methods' path). When the
 *            label selector parses, the selector made from it must parse too.
 *   1, 2     folded stacks ("a;b;c 5", in a diff "a;b;c 5 7") made into the query
 *            engine's typed tree (struct query_tree, a diff's when 2: the stacks'
 *            names are a profile's, so any bytes), one chain per line below the
 *            root, laid out as a flame graph (pyro_flame_layout) and written as
 *            /pyroscope/render's answer and as hearth's JSON
 *            (query_tree__write_json): both must be JSON json-c reads, the
 *            flame graph with 4 (diff: 7) numbers per node and every name index
 *            in range.
 *
 * Never a crash, a leak or UBSan (the saturating sums of INT64_MAX totals).
 */
#include "base/base.h"
#include "server/server_connect.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void query_mode(char *s)
{
	char *ls = strchr(s, '\n'), *sel = NULL, err[256] = "";
	struct query_selector *a = NULL, *b = NULL;
	int vi, e;

	if (ls)
		*ls++ = 0;
	e = pyro_query(s, &sel, &vi, err, sizeof(err));
	if ((e && (e != -EINVAL || !err[0] || sel)) || (!e && !sel) || (vi != 0 && vi != 1))
		abort();
	free(sel);
	sel = NULL;
	if (!ls)
		return;
	e = pyro_selector(s, ls, &sel, err, sizeof(err));
	if ((e && (e != -EINVAL || !err[0] || sel)) || (!e && !sel))
		abort();
	if (!e && query_selector__parse(ls, &a, err, sizeof(err)) == 0 &&
	    query_selector__parse(sel, &b, err, sizeof(err)) != 0)
		abort(); /* a valid selector with the type's matcher added no longer parses */
	query_selector__free(a);
	query_selector__free(b);
	free(sel);
}

/* A value of the folded text: saturated at INT64_MAX as ingest saturates. */
static int64_t value(const char **p)
{
	int64_t v = 0;

	while (**p == ' ')
		(*p)++;
	for (; **p >= '0' && **p <= '9'; (*p)++)
		v = v > (INT64_MAX - 9) / 10 ? INT64_MAX : v * 10 + (**p - '0');
	return v;
}

/* A typed tree being made: nodes in pre-order, a name per frame. */
struct fuzz_tree {
	struct query_tree t;
	size_t cap_nodes, cap_names;
	char **names;
};

static int add_node(struct fuzz_tree *f, const char *name, size_t n, uint32_t depth,
		    const int64_t self[2], const int64_t total[2])
{
	struct query_node *qn;
	char *c;

	if (base_grow((void **)&f->t.nodes, &f->cap_nodes, f->t.n_nodes + 1, sizeof(*qn)) ||
	    base_grow((void **)&f->names, &f->cap_names, f->t.n_names + 1, sizeof(char *)) ||
	    !(c = strndup(name, n)))
		return -ENOMEM;
	f->names[f->t.n_names] = c;
	qn = &f->t.nodes[f->t.n_nodes++];
	*qn = (struct query_node){
	    .name = (uint32_t)f->t.n_names++, .module = QUERY_NONE, .depth = depth, .n_kids = 0};
	memcpy(qn->self, self, sizeof(qn->self));
	memcpy(qn->total, total, sizeof(qn->total));
	f->t.names = f->names;
	return 0;
}

/* One stack as a chain below the root: each frame of total v, the leaf's self v. */
static int add_chain(struct fuzz_tree *f, const char *stack, size_t len, const int64_t v[2])
{
	const int64_t zero[2] = {0, 0};
	uint32_t depth = 1;
	int e = 0;

	f->t.nodes[0].n_kids++;
	for (const char *p = stack, *end = stack + len;
	     !e && p <= end && depth <= PROFILE_MAX_FRAMES; depth++) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		size_t n = semi ? (size_t)(semi - p) : (size_t)(end - p);

		e = add_node(f, p, n, depth, semi ? zero : v, v);
		if (!e && semi && depth < PROFILE_MAX_FRAMES)
			f->t.nodes[f->t.n_nodes - 1].n_kids = 1;
		if (!semi)
			break;
		p = semi + 1;
	}
	return e;
}

/* The typed tree of folded text s: the root "total", one chain per line. */
static int make_tree(const char *s, bool diff, struct fuzz_tree *f)
{
	int64_t total[2] = {0, 0};
	const int64_t zero[2] = {0, 0};
	size_t n = 0;
	int e;

	memset(f, 0, sizeof(*f));
	f->t.diff = diff;
	snprintf(f->t.unit, sizeof(f->t.unit), "%s", s[0] & 1 ? "nanoseconds" : "samples");
	for (const char *l = s; *l; l += n + (l[n] == '\n')) { /* the totals first */
		const char *sp, *p;

		n = strcspn(l, "\n");
		sp = memchr(l, ' ', n);
		if (!sp)
			continue;
		p = sp;
		total[0] = base_sat_add(total[0], value(&p));
		total[1] = base_sat_add(total[1], diff ? value(&p) : 0);
	}
	e = add_node(f, "total", 5, 0, zero, total);
	for (const char *l = s; !e && *l; l += n + (l[n] == '\n')) {
		const char *sp, *p;
		int64_t v[2];

		n = strcspn(l, "\n");
		sp = memchr(l, ' ', n);
		if (!sp)
			continue;
		p = sp;
		v[0] = value(&p);
		v[1] = diff ? value(&p) : 0;
		e = add_chain(f, l, (size_t)(sp - l), v);
	}
	return e;
}

static void fuzz_tree_fini(struct fuzz_tree *f)
{
	for (size_t i = 0; i < f->t.n_names; i++)
		free(f->names[i]);
	free(f->names);
	free(f->t.nodes);
}

/* Whether buf is JSON json-c reads (true when json-c has no memory to tell). */
static bool is_json(const char *buf, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(2 * PROFILE_MAX_FRAMES + 16);
	json_object *o = tok ? json_tokener_parse_ex(tok, buf, (int)len) : NULL;
	bool ok = !tok || o;

	json_object_put(o);
	if (tok)
		json_tokener_free(tok);
	return ok;
}

static void check_answer(const char *buf, size_t len, const struct pyro_flame *fg, bool diff)
{
	if (!is_json(buf, len))
		abort(); /* the answer is not JSON */
	for (size_t d = 0; d < fg->n_levels; d++) {
		size_t nv = diff ? 7 : 4;

		if (fg->levels[d].n % nv)
			abort();
		for (size_t i = nv - 1; i < fg->levels[d].n; i += nv)
			if (fg->levels[d].values[i] < 0 ||
			    (size_t)fg->levels[d].values[i] >= fg->n_names)
				abort();
	}
}

/* hearth's JSON of the same tree must be JSON too. */
static void check_tree_json(const struct query_tree *t)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int e;

	if (!f)
		return;
	e = query_tree__write_json(t, f);
	if (!fclose(f) && !e && !is_json(out, len))
		abort();
	free(out);
}

static void render_mode(const char *s, bool diff)
{
	struct fuzz_tree tree;
	struct pyro_flame fg;
	char *out = NULL;
	size_t olen = 0;
	FILE *f;
	int e;

	if (make_tree(s, diff, &tree)) {
		fuzz_tree_fini(&tree);
		return;
	}
	e = pyro_flame_layout(&tree.t, &fg);
	if (e && e != -ENOMEM)
		abort(); /* the engine's shape, well formed: it must lay out */
	if (!e) {
		if ((f = open_memstream(&out, &olen))) {
			pyro_flamebearer_json(
			    f, &fg, diff ? base_sat_add(fg.left_ticks, fg.right_ticks) : fg.total,
			    diff ? "double" : "single", s);
			if (!fclose(f))
				check_answer(out, olen, &fg, diff);
			free(out);
		}
		pyro_flame__fini(&fg);
	} else if (fg.n_names || fg.n_levels) {
		abort(); /* a failed layout leaves nothing */
	}
	check_tree_json(&tree.t);
	fuzz_tree_fini(&tree);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1 || size > (1 << 16))
		return 0;
	s = strndup((const char *)data + 1, size - 1); /* up to the first NUL, as a URL's */
	if (!s)
		return 0;
	if (data[0] % 3 == 0)
		query_mode(s);
	else
		render_mode(s, data[0] % 3 == 2);
	free(s);
	return 0;
}
