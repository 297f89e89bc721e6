/*
 * Label selectors in Prometheus syntax: `name{a="x", b!="y", c=~"re", d!~"re"}`.
 * The input comes from HTTP query strings, so the parser is strict, bounded
 * (QUERY_MAX_SELECTOR_LEN, QUERY_MAX_MATCHERS) and names the position of the
 * first problem. Regexes (regex.c) are RE2 syntax anchored at both ends, as
 * PromQL's are, and match in linear time.
 *
 * Linear is still heavy: `(?:.?){1000}` costs ~3000 instructions per byte, and
 * a query matches every series. Series share label values (job, env, a missing
 * label's ""), so a selector remembers each regex's answer per distinct value
 * (struct query_memo, at most QUERY_REGEX_MEMO_BYTES): the cost follows the
 * distinct values, not the series (8 such matchers over 20,000 series with 10
 * jobs: 80 matches instead of 160,000).
 */
#include "query_impl.h"
#include "ingest/ingest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Answers of a selector's regex matchers, keyed by (matcher index, value). */
struct query_memo {
	struct base_hmap index; /* hash -> entry */
	struct memo_entry {
		const char *v; /* in strings */
		size_t len;
		uint32_t m; /* matcher index */
		bool match; /* the regex's answer (before !~ negates it) */
	} * e;		    /* owned */
	size_t n, cap;
	struct base_arena strings;
	size_t bytes;  /* charged against QUERY_REGEX_MEMO_BYTES */
	uint64_t runs; /* regex matches run */
};

struct memo_key {
	const char *v;
	size_t len;
	uint32_t m;
};

struct parser {
	const char *s, *p;
	char *err;
	size_t errlen;
	size_t cap_m; /* capacity of the selector's matcher array, which only the parse grows */
};

static int fail(struct parser *ps, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct parser *ps, int code, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ps->err && ps->errlen)
		snprintf(ps->err, ps->errlen, "invalid selector at offset %zu: %s",
			 (size_t)(ps->p - ps->s), msg);
	return code;
}

static void skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
		ps->p++;
}

static bool is_name_start(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_name_char(char c, bool app)
{
	return is_name_start(c) || (c >= '0' && c <= '9') || c == '.' ||
	       (app && (c == '-' || c == ':'));
}

/* A label name (or, app=true, an application name with '-' and ':'); malloc'd. */
static int parse_name(struct parser *ps, bool app, char **out)
{
	const char *b = ps->p;

	if (!is_name_start(*ps->p))
		return fail(ps, -EINVAL, "expected a label name");
	while (is_name_char(*ps->p, app))
		ps->p++;
	*out = strndup(b, (size_t)(ps->p - b));
	return *out ? 0 : -ENOMEM;
}

static int parse_op(struct parser *ps, enum query_op *op)
{
	const char *p = ps->p;

	if (p[0] == '=' && p[1] == '~')
		*op = QUERY_OP_RE, ps->p += 2;
	else if (p[0] == '!' && p[1] == '~')
		*op = QUERY_OP_NRE, ps->p += 2;
	else if (p[0] == '!' && p[1] == '=')
		*op = QUERY_OP_NEQ, ps->p += 2;
	else if (p[0] == '=')
		*op = QUERY_OP_EQ, ps->p += 1;
	else
		return fail(ps, -EINVAL, "expected one of = != =~ !~");
	return 0;
}

static char unescape(char c)
{
	switch (c) {
	case 'n':
		return '\n';
	case 't':
		return '\t';
	case 'r':
		return '\r';
	default:
		return c;
	}
}

/* A quoted value ("…", '…' or `…`, the last without escapes); malloc'd. */
static int parse_value(struct parser *ps, char **out)
{
	char q = *ps->p, *v, *w;

	if (q != '"' && q != '\'' && q != '`')
		return fail(ps, -EINVAL, "expected a quoted value");
	v = w = malloc(strlen(ps->p) + 1);
	if (!v)
		return -ENOMEM;
	for (ps->p++; *ps->p && *ps->p != q; ps->p++) {
		if (*ps->p == '\\' && q != '`') {
			if (!*++ps->p)
				break;
			*w++ = unescape(*ps->p);
		} else {
			*w++ = *ps->p;
		}
	}
	*w = 0;
	if (*ps->p != q) {
		free(v);
		return fail(ps, -EINVAL, "unterminated string");
	}
	ps->p++;
	*out = v;
	return 0;
}

/* Sets m->op to op, compiling the regex first for =~ and !~ (m->op stays EQ,
 * with nothing to free, until a regex compiled). */
static int compile(struct parser *ps, struct query_matcher *m, enum query_op op)
{
	char msg[160];
	int rc;

	if (op != QUERY_OP_RE && op != QUERY_OP_NRE) {
		m->op = op;
		return 0;
	}
	rc = query_regex__compile(m->value, &m->re, msg, sizeof(msg));
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		return fail(ps, -EINVAL, "bad regex for label %.64s: %s", m->name, msg);
	m->op = op;
	return 0;
}

static int add(struct query_selector *sel, struct parser *ps, struct query_matcher **m)
{
	int err = base_grow_max((void **)&sel->m, &ps->cap_m, sel->n + 1, sizeof(*sel->m),
				QUERY_MAX_MATCHERS);

	if (err == -E2BIG)
		return fail(ps, -E2BIG, "more than %d matchers", QUERY_MAX_MATCHERS);
	if (err)
		return err;
	*m = &sel->m[sel->n++];
	memset(*m, 0, sizeof(**m));
	return 0;
}

static int parse_matcher(struct query_selector *sel, struct parser *ps)
{
	struct query_matcher *m;
	enum query_op op = QUERY_OP_EQ;
	int err = add(sel, ps, &m);

	if (err)
		return err;
	err = parse_name(ps, false, &m->name);
	if (!err) {
		skip_ws(ps);
		err = parse_op(ps, &op);
	}
	if (!err) {
		skip_ws(ps);
		err = parse_value(ps, &m->value);
	}
	return err ?: compile(ps, m, op);
}

static int parse_braces(struct query_selector *sel, struct parser *ps)
{
	int err;

	ps->p++; /* '{' */
	for (;;) {
		skip_ws(ps);
		if (*ps->p == '}')
			break;
		err = parse_matcher(sel, ps);
		if (err)
			return err;
		skip_ws(ps);
		if (*ps->p == ',')
			ps->p++;
		else if (*ps->p != '}')
			return fail(ps, -EINVAL, "expected ',' or '}'");
	}
	ps->p++;
	return 0;
}

static int parse(struct query_selector *sel, struct parser *ps)
{
	struct query_matcher *m;
	int err;

	skip_ws(ps);
	if (is_name_start(*ps->p)) {
		err = add(sel, ps, &m);
		if (err)
			return err;
		m->op = QUERY_OP_EQ;
		m->name = strdup(INGEST_NAME_LABEL);
		err = m->name ? parse_name(ps, true, &m->value) : -ENOMEM;
		if (err)
			return err;
		skip_ws(ps);
	}
	if (*ps->p == '{') {
		err = parse_braces(sel, ps);
		if (err)
			return err;
		skip_ws(ps);
	}
	if (*ps->p)
		return fail(ps, -EINVAL, "unexpected '%c'", *ps->p);
	return 0;
}

int query_selector__parse(const char *s, struct query_selector **out, char *err, size_t errlen)
{
	struct parser ps = {s ? s : "", s ? s : "", err, errlen, 0};
	struct query_selector *sel;
	int e;

	*out = NULL;
	if (strlen(ps.s) > QUERY_MAX_SELECTOR_LEN) {
		if (err && errlen)
			snprintf(err, errlen, "selector longer than %d bytes",
				 QUERY_MAX_SELECTOR_LEN);
		return -E2BIG;
	}
	sel = calloc(1, sizeof(*sel));
	if (!sel)
		return -ENOMEM;
	e = parse(sel, &ps);
	for (size_t i = 0; !e && !sel->memo && i < sel->n; i++)
		if (sel->m[i].re && !(sel->memo = calloc(1, sizeof(*sel->memo))))
			e = -ENOMEM;
	if (e) {
		query_selector__free(sel);
		return e;
	}
	*out = sel;
	return 0;
}

static void memo_free(struct query_memo *mo)
{
	if (!mo)
		return;
	base_hmap__fini(&mo->index);
	base_arena__fini(&mo->strings);
	free(mo->e);
	free(mo);
}

void query_selector__free(struct query_selector *sel)
{
	if (!sel)
		return;
	memo_free(sel->memo);
	for (size_t i = 0; i < sel->n; i++) {
		free(sel->m[i].name);
		free(sel->m[i].value);
		query_regex__free(sel->m[i].re);
	}
	free(sel->m);
	free(sel);
}

static const char *label_value(const struct store_series *ser, const char *name)
{
	if (strcmp(name, STORE_PROFILE_TYPE_LABEL) == 0)
		return ser->profile_type;
	for (size_t i = 0; i < ser->n_labels; i++)
		if (strcmp(ser->labels[i].name, name) == 0)
			return ser->labels[i].value;
	return "";
}

static bool has_label(const struct store_series *ser, const char *name)
{
	for (size_t i = 0; i < ser->n_labels; i++)
		if (strcmp(ser->labels[i].name, name) == 0)
			return true;
	return false;
}

bool query_task_label(const char *name)
{
	return !strcmp(name, PROFILE_LABEL_PID) || !strcmp(name, PROFILE_LABEL_TID) ||
	       !strcmp(name, PROFILE_LABEL_COMM);
}

const char *query_task__value(const struct query_task *t, const char *name)
{
	if (!strcmp(name, PROFILE_LABEL_PID))
		return t->pid;
	if (!strcmp(name, PROFILE_LABEL_TID))
		return t->tid;
	if (!strcmp(name, PROFILE_LABEL_COMM))
		return t->comm ? t->comm : "";
	return "";
}

bool query_selector__has_task(const struct query_selector *sel)
{
	for (size_t i = 0; sel && i < sel->n; i++)
		if (query_task_label(sel->m[i].name))
			return true;
	return false;
}

static bool memo_eq(const void *ctx, size_t idx, const void *key)
{
	const struct memo_entry *e = &((const struct query_memo *)ctx)->e[idx];
	const struct memo_key *k = key;

	return e->m == k->m && e->len == k->len && !memcmp(e->v, k->v, k->len);
}

/* Remembers an answer while the budget allows (failing to is not an error:
 * the next series with that value runs the regex again). */
static void memo_put(struct query_memo *mo, uint64_t h, const struct memo_key *k, bool match)
{
	/* the entry, its copy of the value, and about two index slots */
	size_t cost = sizeof(*mo->e) + k->len + 2 * sizeof(struct base_hmap_slot);
	const char *v;

	if (mo->bytes + cost > QUERY_REGEX_MEMO_BYTES ||
	    base_grow((void **)&mo->e, &mo->cap, mo->n + 1, sizeof(*mo->e)) ||
	    !(v = base_arena__copy(&mo->strings, k->v, k->len, 1)) ||
	    base_hmap__insert(&mo->index, h, mo->n))
		return;
	mo->e[mo->n++] = (struct memo_entry){v, k->len, k->m, match};
	mo->bytes += cost;
}

/* Whether matcher i's regex matches all of v, from the memo when it knows. */
static bool regex_match(const struct query_selector *sel, size_t i, const char *v)
{
	struct query_memo *mo = sel->memo;
	struct memo_key k = {v, strlen(v), (uint32_t)i};
	uint64_t h = base_hash_bytes(base_hash_u64(BASE_HASH_SEED, i), v, k.len);
	size_t at = base_hmap__find(&mo->index, h, memo_eq, mo, &k);
	bool match;

	if (at != SIZE_MAX)
		return mo->e[at].match;
	match = query_regex__match(sel->m[i].re, v, k.len);
	mo->runs++;
	memo_put(mo, h, &k, match);
	return match;
}

uint64_t query_selector__regex_runs(const struct query_selector *sel)
{
	return sel && sel->memo ? sel->memo->runs : 0;
}

bool query_selector__match(const struct query_selector *sel, const struct store_series *ser)
{
	return query_selector__match_some(sel, ser, false) &&
	       query_selector__match_some(sel, ser, true);
}

bool query_selector__match_some(const struct query_selector *sel, const struct store_series *ser,
				bool regex)
{
	for (size_t i = 0; sel && i < sel->n; i++) {
		const struct query_matcher *m = &sel->m[i];
		const char *v;
		bool ok;

		if (regex != (m->op == QUERY_OP_RE || m->op == QUERY_OP_NRE))
			continue;
		/* pid/tid/comm of a series without them: the stacks' task locations answer */
		if (query_task_label(m->name) && !has_label(ser, m->name))
			continue;
		v = label_value(ser, m->name);

		switch (m->op) {
		case QUERY_OP_EQ:
			ok = strcmp(v, m->value) == 0;
			break;
		case QUERY_OP_NEQ:
			ok = strcmp(v, m->value) != 0;
			break;
		case QUERY_OP_RE:
			ok = regex_match(sel, i, v);
			break;
		default:
			ok = !regex_match(sel, i, v);
			break;
		}
		if (!ok)
			return false;
	}
	return true;
}

bool query_selector__match_task(const struct query_selector *sel, const struct query_task *t)
{
	for (size_t i = 0; sel && i < sel->n; i++) {
		const struct query_matcher *m = &sel->m[i];
		const char *v;
		bool ok;

		if (!query_task_label(m->name))
			continue;
		v = query_task__value(t, m->name);
		switch (m->op) {
		case QUERY_OP_EQ:
			ok = strcmp(v, m->value) == 0;
			break;
		case QUERY_OP_NEQ:
			ok = strcmp(v, m->value) != 0;
			break;
		case QUERY_OP_RE:
			ok = regex_match(sel, i, v);
			break;
		default:
			ok = !regex_match(sel, i, v);
			break;
		}
		if (!ok)
			return false;
	}
	return true;
}
