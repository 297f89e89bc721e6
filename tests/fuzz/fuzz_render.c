/*
 * libFuzzer target for the Pyroscope render path (server_render.c), the parts that
 * take outside input. The first byte picks what the rest is:
 *
 *   0 mod 3  a /pyroscope/render query: "TYPE{...}" or hearth's "APP{...}"
 *            (pyro_query), and, after the first newline, a label selector for
 *            pyro_selector with that type (the Connect methods' path). When the
 *            label selector parses, the selector made from it must parse too.
 *   1, 2     folded stacks ("a;b;c 5", in a diff "a;b;c 5 7") made into the query
 *            engine's tree JSON (query_tree_json's or query_diff_json's shape: the
 *            stacks' names are a profile's, so any bytes), laid out as a flame
 *            graph (pyro_flame_from_json) and written as /pyroscope/render's
 *            answer, which must be JSON json-c reads, with 4 (diff: 7) numbers per
 *            node and every name index in range.
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

static void write_value(FILE *f, const int64_t v[2], bool diff)
{
	if (diff)
		fprintf(f, "[%lld,%lld]", (long long)v[0], (long long)v[1]);
	else
		fprintf(f, "%lld", (long long)v[0]);
}

/* One stack as a chain below the root: name, self and total of each frame. */
static void write_chain(FILE *f, const char *stack, size_t len, const int64_t v[2], bool diff)
{
	const int64_t zero[2] = {0, 0};
	size_t depth = 0;

	for (const char *p = stack, *end = stack + len; p <= end && depth < PROFILE_MAX_FRAMES;
	     depth++) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		size_t n = semi ? (size_t)(semi - p) : (size_t)(end - p);
		char *name = strndup(p, n);

		fputs(depth ? ",\"children\":[{\"name\":" : "{\"name\":", f);
		base_json_string(f, name ? name : "");
		free(name);
		fputs(",\"self\":", f);
		write_value(f, semi ? zero : v, diff);
		fputs(",\"total\":", f);
		write_value(f, v, diff);
		if (!semi)
			break;
		p = semi + 1;
	}
	for (size_t i = 0; i <= depth && i < PROFILE_MAX_FRAMES; i++)
		fputs(i ? "]}" : "}", f);
}

/* The engine's tree JSON of folded text s: the root "total", one chain per line. */
static char *tree_json(const char *s, bool diff, size_t *len)
{
	int64_t total[2] = {0, 0};
	const int64_t zero[2] = {0, 0};
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
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
	fprintf(f, "{\"unit\":\"%s\",\"tree\":{\"name\":\"total\",\"self\":",
		s[0] & 1 ? "nanoseconds" : "samples");
	write_value(f, zero, diff);
	fputs(",\"total\":", f);
	write_value(f, total, diff);
	fputs(",\"children\":[", f);
	for (const char *l = s, *first = ""; *l; l += n + (l[n] == '\n')) {
		const char *sp, *p;
		int64_t v[2];

		n = strcspn(l, "\n");
		sp = memchr(l, ' ', n);
		if (!sp)
			continue;
		p = sp;
		v[0] = value(&p);
		v[1] = diff ? value(&p) : 0;
		fputs(first, f);
		first = ",";
		write_chain(f, l, (size_t)(sp - l), v, diff);
	}
	fputs("]}}", f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void check_answer(const char *buf, size_t len, const struct pyro_flame *fg, bool diff)
{
	struct json_tokener *tok = json_tokener_new_ex(2 * PROFILE_MAX_FRAMES + 16);
	json_object *o = tok ? json_tokener_parse_ex(tok, buf, (int)len) : NULL;

	if (tok && !o)
		abort(); /* the answer is not JSON */
	json_object_put(o);
	if (tok)
		json_tokener_free(tok);
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

static void render_mode(const char *s, bool diff)
{
	struct pyro_flame fg;
	char *tree, *out = NULL;
	size_t tlen = 0, olen = 0;
	FILE *f;
	int e;

	if (!(tree = tree_json(s, diff, &tlen)))
		return;
	e = pyro_flame_from_json(tree, tlen, diff, &fg);
	if (e && e != -ENOMEM)
		abort(); /* the engine's shape, well formed: it must lay out */
	if (!e) {
		if ((f = open_memstream(&out, &olen))) {
			pyro_flamebearer_json(f, &fg, diff ? base_sat_add(fg.left_ticks, fg.right_ticks)
							   : fg.total,
					      diff ? "double" : "single", s);
			if (!fclose(f))
				check_answer(out, olen, &fg, diff);
			free(out);
		}
		pyro_flame__fini(&fg);
	} else if (fg.n_names || fg.n_levels) {
		abort(); /* a failed layout leaves nothing */
	}
	free(tree);
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
