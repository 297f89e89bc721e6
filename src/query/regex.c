/*
 * The regular expressions of label matchers (=~, !~): RE2 syntax, as
 * Prometheus users write it, matched in time linear in the value's length.
 *
 * The pattern comes from an HTTP query string, so nothing here may take more
 * than linear time or bounded memory, whatever it says. glibc's regcomp, used
 * before, copies the subtree of every `+` and `{n}`, so `(((((.*)+)+)+)+)+Q`
 * took ~10 s to compile, and its backtracking matcher took 17 s on one 256-byte
 * value (while the store's lock was held). Here:
 *
 *   parse    pattern -> syntax tree, one pass, nesting at most
 *            QUERY_REGEX_MAX_NESTING deep (the only recursion), counted repeats
 *            {n,m} at most QUERY_REGEX_MAX_REPEAT;
 *   compile  tree -> a Thompson NFA program (Thompson 1968; the construction of
 *            Cox, "Regular Expression Matching Can Be Simple And Fast"); `x+` is
 *            `L: x; split L, out` (one copy of x, not two), only {n,m} copies
 *            x, and the program (and the work to make it) stops at
 *            QUERY_REGEX_MAX_PROG instructions with an error;
 *   match    the NFA simulated over the value's runes, one set of states per
 *            position: O(len(value) x program size), no backtracking, no
 *            allocation (the state sets are made at compile time).
 *
 * The whole value must match (Prometheus anchors matchers at both ends), and
 * `.` matches a newline too (Prometheus 3). Matching is by UTF-8 code point;
 * an invalid byte is one rune U+FFFD. (?i) folds ASCII letters only.
 * Refused with a message naming them: backreferences, lookaround, \p Unicode
 * classes, \C, \Q..\E; a repeat right after a repeat (`a**`), as RE2 does.
 */
#include "query_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define RE_MAX_RUNE 0x10ffff
#define RE_BAD_RUNE 0xfffd
#define RE_NONE	    UINT32_MAX

enum re_op { OP_RUNE, OP_CLASS, OP_ANY, OP_ANYNL, OP_SPLIT, OP_JMP, OP_ASSERT, OP_MATCH };
enum re_assert { AS_BOT, AS_EOT, AS_BOL, AS_EOL, AS_WORDB, AS_NWORDB };

struct re_inst {
	uint8_t op, arg; /* arg: fold (RUNE), enum re_assert (ASSERT) */
	uint32_t x, y;	 /* rune or class index; jump targets (SPLIT prefers x) */
};

struct re_range {
	uint32_t lo, hi;
};

struct re_class {
	uint32_t off, n; /* ranges[off ..], sorted, disjoint */
};

struct query_regex {
	struct re_inst *prog;
	size_t n, cap;
	struct re_range *ranges;
	size_t n_ranges, ranges_cap;
	struct re_class *classes;
	size_t n_classes, classes_cap;
	/* match scratch, n entries each: two state lists, marks, DFS stack */
	uint32_t *cur, *next, *mark, *stack;
};

/* ---- syntax tree ---- */

enum re_kind { N_LIT, N_CLASS, N_ANY, N_ASSERT, N_CAT, N_ALT, N_REP };

struct re_node {
	uint8_t kind, arg;	  /* arg: fold (LIT), dot matches \n (ANY) */
	uint32_t a;		  /* rune, class index, assert kind */
	int32_t min, max;	  /* REP; max -1 = unbounded */
	uint32_t kid, next, last; /* first child, next sibling, last child (CAT/ALT) */
};

enum re_flag { F_FOLD = 1, F_DOTNL = 2, F_MULTILINE = 4 };

struct re_parser {
	const char *s, *p, *end;
	struct query_regex *re;
	struct re_node *nodes;
	size_t n_nodes, nodes_cap;
	size_t work; /* compile: nodes visited (bounded with the program) */
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int perr(struct re_parser *ps, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return query_fail(ps->err, ps->errlen, -EINVAL, "%s at offset %zu", msg,
			  (size_t)(ps->p - ps->s));
}

static int new_node(struct re_parser *ps, uint8_t kind, uint32_t a, uint32_t *out)
{
	if (base_grow((void **)&ps->nodes, &ps->nodes_cap, ps->n_nodes + 1, sizeof(*ps->nodes)))
		return -ENOMEM;
	ps->nodes[ps->n_nodes] = (struct re_node){
	    .kind = kind, .a = a, .kid = RE_NONE, .next = RE_NONE, .last = RE_NONE};
	*out = (uint32_t)ps->n_nodes++;
	return 0;
}

static void add_kid(struct re_parser *ps, uint32_t parent, uint32_t kid)
{
	struct re_node *p = &ps->nodes[parent];

	if (p->last == RE_NONE)
		p->kid = kid;
	else
		ps->nodes[p->last].next = kid;
	p->last = kid;
}

/* The next rune of [*p, end) (UTF-8; an invalid byte is RE_BAD_RUNE), advancing *p. */
static uint32_t next_rune(const char **p, const char *end)
{
	const unsigned char *s = (const unsigned char *)*p;
	size_t left = (size_t)(end - *p), n;
	uint32_t r, min;

	if (s[0] < 0x80) {
		*p += 1;
		return s[0];
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, r = s[0] & 0x1f, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, r = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, r = s[0] & 0x07, min = 0x10000;
	else
		n = 0, r = 0, min = 0;
	for (size_t i = 1; n && i < n; i++) {
		if (i >= left || (s[i] & 0xc0) != 0x80) {
			n = 0;
			break;
		}
		r = r << 6 | (s[i] & 0x3f);
	}
	if (!n || r < min || r > RE_MAX_RUNE || (r >= 0xd800 && r <= 0xdfff)) {
		*p += 1;
		return RE_BAD_RUNE;
	}
	*p += n;
	return r;
}

/* ---- character classes ---- */

struct class_buf {
	struct re_range *r;
	size_t n, cap;
};

static int class_add(struct class_buf *c, uint32_t lo, uint32_t hi)
{
	if (base_grow((void **)&c->r, &c->cap, c->n + 1, sizeof(*c->r)))
		return -ENOMEM;
	c->r[c->n++] = (struct re_range){lo, hi};
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct re_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts and merges c's ranges in place. */
static void class_norm(struct class_buf *c)
{
	size_t w = 0;

	if (!c->n)
		return;
	qsort(c->r, c->n, sizeof(*c->r), range_cmp);
	for (size_t i = 1; i < c->n; i++) {
		if (c->r[i].lo <= c->r[w].hi + 1) {
			if (c->r[i].hi > c->r[w].hi)
				c->r[w].hi = c->r[i].hi;
		} else {
			c->r[++w] = c->r[i];
		}
	}
	c->n = w + 1;
}

/* Replaces c (normalized) by its complement in [0, RE_MAX_RUNE]. */
static int class_negate(struct class_buf *c)
{
	struct class_buf o = {0};
	uint32_t from = 0;
	int e = 0;

	for (size_t i = 0; i < c->n && !e; i++) {
		if (c->r[i].lo > from)
			e = class_add(&o, from, c->r[i].lo - 1);
		from = c->r[i].hi + 1;
	}
	if (!e && from <= RE_MAX_RUNE)
		e = class_add(&o, from, RE_MAX_RUNE);
	free(c->r);
	*c = o;
	return e;
}

/* Adds the other case of the ASCII letters in c's ranges. */
static int class_fold(struct class_buf *c)
{
	size_t n = c->n;
	int e = 0;

	for (size_t i = 0; i < n && !e; i++) {
		uint32_t lo = c->r[i].lo, hi = c->r[i].hi;

		if (lo <= 'Z' && hi >= 'A')
			e = class_add(c, (lo > 'A' ? lo : 'A') + 32, (hi < 'Z' ? hi : 'Z') + 32);
		if (!e && lo <= 'z' && hi >= 'a')
			e = class_add(c, (lo > 'a' ? lo : 'a') - 32, (hi < 'z' ? hi : 'z') - 32);
	}
	return e;
}

/* The ranges of \d \w \s (lower case c), NULL for another letter. */
static const char *perl_class(char c)
{
	switch (c) {
	case 'd':
		return "09";
	case 'w':
		return "09AZaz__";
	case 's':
		return "\t\n\f\r  ";
	default:
		return NULL;
	}
}

/* POSIX [:name:] classes (ASCII, as RE2), as lo/hi pairs. */
static const char *posix_class(const char *name, size_t len)
{
	static const struct {
		const char *name, *ranges;
	} tab[] = {
	    {"alnum", "09AZaz"},
	    {"alpha", "AZaz"},
	    {"ascii", "\x01\x7f"},
	    {"blank", "\t\t  "},
	    {"cntrl", "\x01\x1f\x7f\x7f"},
	    {"digit", "09"},
	    {"graph", "!~"},
	    {"lower", "az"},
	    {"print", " ~"},
	    {"punct", "!/:@[`{~"},
	    {"space", "\t\r  "},
	    {"upper", "AZ"},
	    {"word", "09AZaz__"},
	    {"xdigit", "09AFaf"},
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strlen(tab[i].name) == len && !memcmp(tab[i].name, name, len))
			return tab[i].ranges;
	return NULL;
}

/* Adds the lo/hi pairs of ranges (negated: their complement) to c. NUL is
 * never in a pair list but [:ascii:] and [:cntrl:] include it: added apart. */
static int class_add_pairs(struct class_buf *c, const char *ranges, bool neg, bool nul)
{
	struct class_buf t = {0};
	int e = nul ? class_add(&t, 0, 0) : 0;

	for (const char *r = ranges; !e && *r; r += 2)
		e = class_add(&t, (unsigned char)r[0], (unsigned char)r[1]);
	if (!e && neg) {
		class_norm(&t);
		e = class_negate(&t);
	}
	for (size_t i = 0; !e && i < t.n; i++)
		e = class_add(c, t.r[i].lo, t.r[i].hi);
	free(t.r);
	return e;
}

/* Stores the class (normalized; folded with F_FOLD) in re; its index in *idx. */
static int class_store(struct re_parser *ps, struct class_buf *c, bool neg, int flags,
		       uint32_t *idx)
{
	struct query_regex *re = ps->re;
	int e = flags & F_FOLD ? class_fold(c) : 0;

	if (e)
		return e;
	class_norm(c);
	if (neg && (e = class_negate(c)))
		return e;
	if (base_grow((void **)&re->ranges, &re->ranges_cap, re->n_ranges + c->n + 1,
		      sizeof(*re->ranges)) ||
	    base_grow((void **)&re->classes, &re->classes_cap, re->n_classes + 1,
		      sizeof(*re->classes)))
		return -ENOMEM;
	if (c->n) /* an empty class ([^\x00-\x{10ffff}]) has no array at all */
		memcpy(re->ranges + re->n_ranges, c->r, c->n * sizeof(*c->r));
	re->classes[re->n_classes] = (struct re_class){(uint32_t)re->n_ranges, (uint32_t)c->n};
	re->n_ranges += c->n;
	*idx = (uint32_t)re->n_classes++;
	return 0;
}

/* ---- escapes ---- */

/* \xHH or \x{H...}, after the 'x'. */
static int parse_hex(struct re_parser *ps, uint32_t *r)
{
	uint32_t v = 0;
	int n = 0;

	if (ps->p < ps->end && *ps->p == '{') {
		for (ps->p++; ps->p < ps->end && base_hex_digit(*ps->p) >= 0 && n < 8; ps->p++, n++)
			v = v * 16 + (uint32_t)base_hex_digit(*ps->p);
		if (ps->p >= ps->end || *ps->p != '}' || !n || v > RE_MAX_RUNE)
			return perr(ps, "invalid \\x{...} escape");
		ps->p++;
	} else {
		for (; ps->p < ps->end && n < 2 && base_hex_digit(*ps->p) >= 0; ps->p++, n++)
			v = v * 16 + (uint32_t)base_hex_digit(*ps->p);
		if (n != 2)
			return perr(ps, "invalid \\x escape (want \\xHH or \\x{H...})");
	}
	*r = v;
	return 0;
}

/*
 * An escape after the backslash, as a rune (*rune) or a Perl class (*cls set,
 * *neg for \D \W \S) or, outside a class, an assertion (*as). Refuses what RE2
 * refuses and what it has that is not supported here, naming it.
 */
static int parse_escape(struct re_parser *ps, bool in_class, uint32_t *rune, const char **cls,
			bool *neg, int *as)
{
	char c;

	*cls = NULL, *as = -1;
	if (ps->p >= ps->end)
		return perr(ps, "trailing backslash");
	c = *ps->p++;
	if ((*cls = perl_class(c))) {
		*neg = false;
		return 0;
	}
	if (c >= 'A' && c <= 'Z' && (*cls = perl_class((char)(c + 32)))) {
		*neg = true;
		return 0;
	}
	switch (c) {
	case 'n':
		*rune = '\n';
		return 0;
	case 't':
		*rune = '\t';
		return 0;
	case 'r':
		*rune = '\r';
		return 0;
	case 'f':
		*rune = '\f';
		return 0;
	case 'v':
		*rune = '\v';
		return 0;
	case 'a':
		*rune = '\a';
		return 0;
	case 'x':
		return parse_hex(ps, rune);
	case 'p':
	case 'P':
		return perr(ps, "Unicode classes (\\%c) are not supported", c);
	case 'Q':
		return perr(ps, "\\Q...\\E quoting is not supported (escape each character)");
	case 'C':
		return perr(ps, "\\C (any byte) is not supported");
	}
	if (c >= '1' && c <= '9')
		return perr(ps, "backreferences (\\%c) are not supported (RE2 syntax)", c);
	if (!in_class && (c == 'b' || c == 'B' || c == 'A' || c == 'z')) {
		*as = c == 'b' ? AS_WORDB : c == 'B' ? AS_NWORDB : c == 'A' ? AS_BOT : AS_EOT;
		return 0;
	}
	if ((unsigned char)c < 0x80 && !(c >= '0' && c <= '9') &&
	    !((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) {
		*rune = (unsigned char)c;
		return 0;
	}
	ps->p--;
	return perr(ps, "invalid escape \\%c", c);
}

/* ---- parser: pattern -> tree ---- */

static int parse_alt(struct re_parser *ps, int depth, int flags, uint32_t *node);

/* A repeat count {n}, {n,} or {n,m} at ps->p: 1 (consumed), 0 (not one: a
 * literal '{', as RE2 reads it) or -EINVAL. */
static int parse_count(struct re_parser *ps, int32_t *min, int32_t *max)
{
	const char *p = ps->p + 1;
	long v[2] = {0, -1};
	int k = 0, digits = 0;

	for (; p < ps->end; p++) {
		if (*p >= '0' && *p <= '9') {
			if (k == 1 && v[1] < 0)
				v[1] = 0;
			v[k] = v[k] > 100000 ? v[k] : v[k] * 10 + (*p - '0');
			digits++;
		} else if (*p == ',' && k == 0 && digits) {
			k = 1;
		} else {
			break;
		}
	}
	if (p >= ps->end || *p != '}' || !digits)
		return 0;
	if (k == 0)
		v[1] = v[0];
	if (v[0] > QUERY_REGEX_MAX_REPEAT || v[1] > QUERY_REGEX_MAX_REPEAT)
		return perr(ps, "repeat count over %d", QUERY_REGEX_MAX_REPEAT);
	if (v[1] >= 0 && v[1] < v[0])
		return perr(ps, "invalid repeat count {%ld,%ld}", v[0], v[1]);
	*min = (int32_t)v[0], *max = (int32_t)v[1];
	ps->p = p + 1;
	return 1;
}

/* A quantifier at ps->p: 1 (consumed, with its lazy '?'), 0 (none) or -EINVAL. */
static int parse_quant(struct re_parser *ps, int32_t *min, int32_t *max)
{
	int r = 1;

	if (ps->p >= ps->end)
		return 0;
	switch (*ps->p) {
	case '*':
		*min = 0, *max = -1, ps->p++;
		break;
	case '+':
		*min = 1, *max = -1, ps->p++;
		break;
	case '?':
		*min = 0, *max = 1, ps->p++;
		break;
	case '{':
		r = parse_count(ps, min, max);
		break;
	default:
		return 0;
	}
	if (r == 1 && ps->p < ps->end && *ps->p == '?') /* lazy: same language */
		ps->p++;
	return r;
}

/* [:name:] or [:^name:] at ps->p into c: 1 (consumed), 0 (not one) or -errno. */
static int parse_posix(struct re_parser *ps, struct class_buf *c)
{
	const char *b = ps->p + 2, *e = b, *ranges;
	bool neg = b < ps->end && *b == '^';

	while (e + 1 < ps->end && !(e[0] == ':' && e[1] == ']') && e[0] != ']')
		e++;
	if (e + 1 >= ps->end || e[0] != ':')
		return 0;
	b += neg;
	if (!(ranges = posix_class(b, (size_t)(e - b))))
		return perr(ps, "unknown POSIX class [:%.*s:]", (int)(e - b), b);
	ps->p = e + 2;
	return class_add_pairs(c, ranges, neg, !strncmp(b, "ascii", 5) || !strncmp(b, "cntrl", 5))
		   ?: 1;
}

/* One rune of a class, or a Perl/POSIX class added to c (*is_rune false). */
static int class_atom(struct re_parser *ps, struct class_buf *c, uint32_t *r, bool *is_rune)
{
	const char *cls;
	bool neg;
	int as, e;

	*is_rune = false;
	if (*ps->p == '[' && ps->p + 1 < ps->end && ps->p[1] == ':' &&
	    (e = parse_posix(ps, c)) != 0)
		return e < 0 ? e : 0;
	if (*ps->p != '\\') {
		*r = next_rune(&ps->p, ps->end);
		*is_rune = true;
		return 0;
	}
	ps->p++;
	if ((e = parse_escape(ps, true, r, &cls, &neg, &as)))
		return e;
	if (cls)
		return class_add_pairs(c, cls, neg, false);
	*is_rune = true;
	return 0;
}

/* [...] after the '[': a class node. */
static int parse_class(struct re_parser *ps, int flags, uint32_t *node)
{
	const char *start = ps->p - 1;
	struct class_buf c = {0};
	bool neg = false, first = true, is_rune;
	uint32_t lo, hi, idx;
	int e = 0;

	if (ps->p < ps->end && *ps->p == '^')
		neg = true, ps->p++;
	while (!e) {
		if (ps->p >= ps->end) {
			ps->p = start;
			e = perr(ps, "missing closing ]");
			break;
		}
		if (*ps->p == ']' && !first) {
			ps->p++;
			break;
		}
		first = false;
		if ((e = class_atom(ps, &c, &lo, &is_rune)) || !is_rune)
			continue;
		hi = lo;
		if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
			ps->p++;
			if ((e = class_atom(ps, &c, &hi, &is_rune)))
				continue;
			if (!is_rune || hi < lo) {
				e = perr(ps, "invalid character class range");
				continue;
			}
		}
		e = class_add(&c, lo, hi);
	}
	e = e ?: class_store(ps, &c, neg, flags, &idx) ?: new_node(ps, N_CLASS, idx, node);
	free(c.r);
	return e;
}

/* An escape outside a class: a literal, a class or an assertion node. */
static int escape_node(struct re_parser *ps, int flags, uint32_t *node)
{
	struct class_buf c = {0};
	const char *cls;
	uint32_t r = 0, idx;
	bool neg;
	int as, e = parse_escape(ps, false, &r, &cls, &neg, &as);

	if (e)
		return e;
	if (as >= 0)
		return new_node(ps, N_ASSERT, (uint32_t)as, node);
	if (!cls) {
		e = new_node(ps, N_LIT, r, node);
		if (!e && (flags & F_FOLD) && ((r | 0x20) >= 'a' && (r | 0x20) <= 'z'))
			ps->nodes[*node].arg = 1, ps->nodes[*node].a = r | 0x20;
		return e;
	}
	e = class_add_pairs(&c, cls, neg, false) ?: class_store(ps, &c, false, flags, &idx) ?:
	    new_node(ps, N_CLASS, idx, node);
	free(c.r);
	return e;
}

/* Flags of "(?flags)" or "(?flags:" after the '?': *flags updated; 1 when the
 * group goes on (':'), 0 when it ended (')'). */
static int parse_flags(struct re_parser *ps, int *flags)
{
	bool clear = false, any = false;

	for (; ps->p < ps->end; ps->p++) {
		int f = 0;

		switch (*ps->p) {
		case 'i':
			f = F_FOLD;
			break;
		case 's':
			f = F_DOTNL;
			break;
		case 'm':
			f = F_MULTILINE;
			break;
		case 'U': /* ungreedy: the same language */
			break;
		case '-':
			if (clear)
				return perr(ps, "invalid flags group");
			clear = true;
			continue;
		case ':': /* (?: is a plain group, (?-: is not */
		case ')':
			if (!any && (clear || *ps->p == ')'))
				return perr(ps, "invalid flags group");
			return *ps->p++ == ':';
		default:
			return perr(ps, "invalid or unsupported group (?%c", *ps->p);
		}
		any = true;
		*flags = clear ? *flags & ~f : *flags | f;
	}
	return perr(ps, "missing closing )");
}

/* "(?P<name>", "(?<name>": skips the name (groups capture nothing here). */
static int skip_group_name(struct re_parser *ps)
{
	const char *b = ps->p;

	while (ps->p < ps->end && (*ps->p == '_' || (*ps->p >= '0' && *ps->p <= '9') ||
				   ((*ps->p | 0x20) >= 'a' && (*ps->p | 0x20) <= 'z')))
		ps->p++;
	if (ps->p == b || ps->p >= ps->end || *ps->p != '>')
		return perr(ps, "invalid named group");
	ps->p++;
	return 0;
}

/* A group after the '(': its contents, or RE_NONE for a flags-only group,
 * whose flags then hold for the rest of the enclosing group. */
static int parse_group(struct re_parser *ps, int depth, int *flags, uint32_t *node)
{
	const char *start = ps->p - 1;
	int gflags = *flags, e;

	if (depth >= QUERY_REGEX_MAX_NESTING)
		return perr(ps, "groups nested deeper than %d", QUERY_REGEX_MAX_NESTING);
	if (ps->p < ps->end && *ps->p == '?') {
		const char *q = ++ps->p;
		size_t left = (size_t)(ps->end - q);

		if (left && (*q == '=' || *q == '!'))
			return perr(ps, "lookahead (?%c is not supported (RE2 syntax)", *q);
		if (left > 1 && q[0] == '<' && (q[1] == '=' || q[1] == '!'))
			return perr(ps, "lookbehind (?<%c is not supported (RE2 syntax)", q[1]);
		if (left > 1 && q[0] == 'P' && q[1] == '<')
			ps->p += 2, e = skip_group_name(ps);
		else if (left && q[0] == '<')
			ps->p += 1, e = skip_group_name(ps);
		else if ((e = parse_flags(ps, &gflags)) == 0) {
			*flags = gflags;
			*node = RE_NONE;
			return 0;
		}
		if (e < 0)
			return e;
	}
	if ((e = parse_alt(ps, depth + 1, gflags, node)))
		return e;
	if (ps->p >= ps->end || *ps->p != ')') {
		ps->p = start;
		return perr(ps, "missing closing )");
	}
	ps->p++;
	return 0;
}

static int parse_atom(struct re_parser *ps, int depth, int *flags, uint32_t *node)
{
	int32_t min, max;
	uint32_t r;
	int e;

	switch (*ps->p) {
	case '(':
		ps->p++;
		return parse_group(ps, depth, flags, node);
	case '[':
		ps->p++;
		return parse_class(ps, *flags, node);
	case '.':
		ps->p++;
		e = new_node(ps, N_ANY, 0, node);
		if (!e)
			ps->nodes[*node].arg = !!(*flags & F_DOTNL);
		return e;
	case '^':
	case '$':
		r = *ps->p++ == '^' ? (*flags & F_MULTILINE ? AS_BOL : AS_BOT)
				    : (*flags & F_MULTILINE ? AS_EOL : AS_EOT);
		return new_node(ps, N_ASSERT, r, node);
	case '\\':
		ps->p++;
		return escape_node(ps, *flags, node);
	case '*':
	case '+':
	case '?':
		return perr(ps, "missing argument to repetition operator %c", *ps->p);
	case '{': {
		const char *at = ps->p;

		if ((e = parse_count(ps, &min, &max)) != 0) {
			ps->p = at;
			return e < 0 ? e : perr(ps, "missing argument to repetition operator {");
		}
		break;
	}
	}
	r = next_rune(&ps->p, ps->end);
	e = new_node(ps, N_LIT, r, node);
	if (!e && (*flags & F_FOLD) && (r | 0x20) >= 'a' && (r | 0x20) <= 'z')
		ps->nodes[*node].arg = 1, ps->nodes[*node].a = r | 0x20;
	return e;
}

/* An atom and its quantifier; RE_NONE for a flags-only group. */
static int parse_piece(struct re_parser *ps, int depth, int *flags, uint32_t *node)
{
	int32_t min, max, m2, x2;
	uint32_t rep;
	const char *at;
	int q, e = parse_atom(ps, depth, flags, node);

	if (e)
		return e;
	at = ps->p;
	if ((q = parse_quant(ps, &min, &max)) <= 0)
		return q;
	if (*node == RE_NONE) {
		ps->p = at;
		return perr(ps, "missing argument to repetition operator");
	}
	at = ps->p;
	if ((q = parse_quant(ps, &m2, &x2)) != 0) {
		ps->p = at;
		return q < 0 ? q : perr(ps, "invalid nested repetition operator");
	}
	if ((e = new_node(ps, N_REP, 0, &rep)))
		return e;
	ps->nodes[rep].min = min, ps->nodes[rep].max = max, ps->nodes[rep].kid = *node;
	*node = rep;
	return 0;
}

static int parse_cat(struct re_parser *ps, int depth, int *flags, uint32_t *node)
{
	uint32_t piece;
	int e = new_node(ps, N_CAT, 0, node);

	while (!e && ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
		e = parse_piece(ps, depth, flags, &piece);
		if (!e && piece != RE_NONE)
			add_kid(ps, *node, piece);
	}
	return e;
}

static int parse_alt(struct re_parser *ps, int depth, int flags, uint32_t *node)
{
	uint32_t alt = RE_NONE, cat;
	int e;

	for (;;) {
		if ((e = parse_cat(ps, depth, &flags, &cat)))
			return e;
		if (ps->p >= ps->end || *ps->p != '|')
			break;
		ps->p++;
		if (alt == RE_NONE && (e = new_node(ps, N_ALT, 0, &alt)))
			return e;
		add_kid(ps, alt, cat);
	}
	if (alt != RE_NONE)
		add_kid(ps, alt, cat);
	*node = alt != RE_NONE ? alt : cat;
	return 0;
}

/* ---- compiler: tree -> program ---- */

#define RE_PATCH (UINT32_MAX - 1) /* a jump to the end of the construct being emitted */

static int inst(struct re_parser *ps, uint8_t op, uint8_t arg, uint32_t x, uint32_t y)
{
	struct query_regex *re = ps->re;

	if (re->n >= QUERY_REGEX_MAX_PROG)
		return query_fail(ps->err, ps->errlen, -EINVAL,
				  "program over %d instructions (repeats expand: x{n} is n "
				  "copies of x)",
				  QUERY_REGEX_MAX_PROG);
	if (base_grow((void **)&re->prog, &re->cap, re->n + 1, sizeof(*re->prog)))
		return -ENOMEM;
	re->prog[re->n++] = (struct re_inst){op, arg, x, y};
	return 0;
}

/* Points the RE_PATCH targets of instructions [from, n) at n. */
static void patch(struct query_regex *re, size_t from)
{
	for (size_t i = from; i < re->n; i++) {
		if (re->prog[i].x == RE_PATCH && re->prog[i].op == OP_JMP)
			re->prog[i].x = (uint32_t)re->n;
		if (re->prog[i].y == RE_PATCH && re->prog[i].op == OP_SPLIT)
			re->prog[i].y = (uint32_t)re->n;
	}
}

static int emit(struct re_parser *ps, uint32_t id);

static int emit_rep(struct re_parser *ps, const struct re_node *nd)
{
	struct query_regex *re = ps->re;
	int32_t copies = nd->max < 0 && nd->min > 0 ? nd->min - 1 : nd->min;
	uint32_t loop;
	size_t from;
	int e = 0;

	for (int32_t i = 0; i < copies && !e; i++)
		e = emit(ps, nd->kid);
	if (e)
		return e;
	loop = (uint32_t)re->n;
	if (nd->max < 0 && nd->min == 0) /* L: split L+1, out; x; jmp L */
		return inst(ps, OP_SPLIT, 0, loop + 1, RE_PATCH) ?: emit(ps, nd->kid) ?:
		       inst(ps, OP_JMP, 0, loop, 0) ?: (patch(re, loop), 0);
	if (nd->max < 0) /* L: x; split L, out */
		return emit(ps, nd->kid) ?: inst(ps, OP_SPLIT, 0, loop, (uint32_t)re->n + 1);
	from = re->n; /* x{n,m}: n copies, then (m - n) x (split next, out; x) */
	for (int32_t i = nd->min; i < nd->max && !e; i++)
		e = inst(ps, OP_SPLIT, 0, (uint32_t)re->n + 1, RE_PATCH) ?: emit(ps, nd->kid);
	if (!e)
		patch(re, from);
	return e;
}

static int emit_alt(struct re_parser *ps, const struct re_node *nd)
{
	struct query_regex *re = ps->re;
	size_t from = re->n;
	int e = 0;

	for (uint32_t k = nd->kid; k != RE_NONE && !e; k = ps->nodes[k].next) {
		size_t split = re->n;

		if (ps->nodes[k].next == RE_NONE) { /* the last branch */
			e = emit(ps, k);
			break;
		}
		e = inst(ps, OP_SPLIT, 0, (uint32_t)split + 1, 0) ?: emit(ps, k) ?:
		    inst(ps, OP_JMP, 0, RE_PATCH, 0);
		if (!e)
			re->prog[split].y = (uint32_t)re->n;
	}
	if (!e)
		patch(re, from);
	return e;
}

/* Emits node id. Recursion as deep as the tree: bounded by the nesting limit. */
static int emit(struct re_parser *ps, uint32_t id)
{
	const struct re_node *nd = &ps->nodes[id];
	int e = 0;

	/* The work, not only the program, is bounded: (){1000}{1000} emits nothing. */
	if (++ps->work > 4 * (size_t)QUERY_REGEX_MAX_PROG + ps->n_nodes)
		return query_fail(ps->err, ps->errlen, -EINVAL,
				  "program over %d instructions (repeats expand: x{n} is n "
				  "copies of x)",
				  QUERY_REGEX_MAX_PROG);
	switch (nd->kind) {
	case N_LIT:
		return inst(ps, OP_RUNE, nd->arg, nd->a, 0);
	case N_CLASS:
		return inst(ps, OP_CLASS, 0, nd->a, 0);
	case N_ANY:
		return inst(ps, nd->arg ? OP_ANY : OP_ANYNL, 0, 0, 0);
	case N_ASSERT:
		return inst(ps, OP_ASSERT, (uint8_t)nd->a, 0, 0);
	case N_CAT:
		for (uint32_t k = nd->kid; k != RE_NONE && !e; k = ps->nodes[k].next)
			e = emit(ps, k);
		return e;
	case N_ALT:
		return emit_alt(ps, nd);
	case N_REP:
		return emit_rep(ps, nd);
	default:
		return 0;
	}
}

int query_regex__compile(const char *pattern, struct query_regex **out, char *err, size_t errlen)
{
	size_t len = strlen(pattern);
	struct re_parser ps = {pattern, pattern, pattern + len, .err = err, .errlen = errlen};
	struct query_regex *re = calloc(1, sizeof(*re));
	uint32_t root;
	int e;

	*out = NULL;
	if (!re)
		return -ENOMEM;
	ps.re = re;
	if (len > QUERY_MAX_REGEX_LEN)
		e = query_fail(err, errlen, -EINVAL, "longer than %d bytes", QUERY_MAX_REGEX_LEN);
	else
		e = parse_alt(&ps, 0, F_DOTNL, &root);
	if (!e && ps.p < ps.end)
		e = perr(&ps, "unexpected )");
	e = e ?: emit(&ps, root) ?: inst(&ps, OP_MATCH, 0, 0, 0);
	if (!e) {
		re->cur = calloc(re->n, sizeof(*re->cur));
		re->next = calloc(re->n, sizeof(*re->next));
		re->mark = calloc(re->n, sizeof(*re->mark));
		re->stack = calloc(2 * re->n, sizeof(*re->stack));
		if (!re->cur || !re->next || !re->mark || !re->stack)
			e = -ENOMEM;
	}
	free(ps.nodes);
	if (e) {
		if (e == -ENOMEM)
			query_fail(err, errlen, e, "out of memory compiling the regex");
		query_regex__free(re);
		return e;
	}
	*out = re;
	return 0;
}

void query_regex__free(struct query_regex *re)
{
	if (!re)
		return;
	free(re->prog);
	free(re->ranges);
	free(re->classes);
	free(re->cur);
	free(re->next);
	free(re->mark);
	free(re->stack);
	free(re);
}

size_t query_regex__size(const struct query_regex *re)
{
	return re ? re->n : 0;
}

/* ---- matcher: the NFA simulated over the runes ---- */

static bool is_word(int32_t r)
{
	return r == '_' || (r >= '0' && r <= '9') || ((r | 0x20) >= 'a' && (r | 0x20) <= 'z');
}

static bool assert_holds(int kind, int32_t prev, int32_t next)
{
	switch (kind) {
	case AS_BOT:
		return prev < 0;
	case AS_EOT:
		return next < 0;
	case AS_BOL:
		return prev < 0 || prev == '\n';
	case AS_EOL:
		return next < 0 || next == '\n';
	case AS_WORDB:
		return is_word(prev) != is_word(next);
	default:
		return is_word(prev) == is_word(next);
	}
}

static bool in_class(const struct query_regex *re, uint32_t cls, uint32_t r)
{
	const struct re_range *rg = re->ranges + re->classes[cls].off;
	size_t lo = 0, hi = re->classes[cls].n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r < rg[mid].lo)
			hi = mid;
		else if (r > rg[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/*
 * Adds the states reachable from pc without consuming a rune (through jumps,
 * splits and assertions that hold between prev and next) to list. Iterative:
 * every state is pushed at most once per incoming edge (two per state).
 */
static void add_states(const struct query_regex *re, uint32_t *list, size_t *n, uint32_t pc,
		       uint32_t step, int32_t prev, int32_t next)
{
	size_t top = 0;

	re->stack[top++] = pc;
	while (top) {
		const struct re_inst *in;

		pc = re->stack[--top];
		if (re->mark[pc] == step)
			continue;
		re->mark[pc] = step;
		in = &re->prog[pc];
		switch (in->op) {
		case OP_JMP:
			re->stack[top++] = in->x;
			break;
		case OP_SPLIT:
			re->stack[top++] = in->y;
			re->stack[top++] = in->x;
			break;
		case OP_ASSERT:
			if (assert_holds(in->arg, prev, next))
				re->stack[top++] = pc + 1;
			break;
		default:
			list[(*n)++] = pc;
		}
	}
}

static bool consumes(const struct query_regex *re, const struct re_inst *in, uint32_t r)
{
	switch (in->op) {
	case OP_RUNE:
		return in->arg ? (r | 0x20) == in->x : r == in->x; /* fold: x is a-z */
	case OP_CLASS:
		return in_class(re, in->x, r);
	case OP_ANY:
		return true;
	case OP_ANYNL:
		return r != '\n';
	default:
		return false;
	}
}

static int32_t peek_rune(const char *p, const char *end)
{
	return p < end ? (int32_t)next_rune(&p, end) : -1;
}

bool query_regex__match(const struct query_regex *re, const char *s, size_t len)
{
	const char *p = s, *end = s + len;
	uint32_t *cur = re->cur, *next = re->next, *t, step = 1;
	size_t n_cur = 0, n_next;
	int32_t prev = -1;

	memset(re->mark, 0, re->n * sizeof(*re->mark));
	add_states(re, cur, &n_cur, 0, step, prev, peek_rune(p, end));
	while (p < end && n_cur) {
		uint32_t r = next_rune(&p, end);
		int32_t after = peek_rune(p, end);

		if (++step == 0) { /* wrapped after 2^32 runes: marks start over */
			memset(re->mark, 0, re->n * sizeof(*re->mark));
			step = 1;
		}
		n_next = 0;
		for (size_t i = 0; i < n_cur; i++)
			if (consumes(re, &re->prog[cur[i]], r))
				add_states(re, next, &n_next, cur[i] + 1, step, (int32_t)r, after);
		t = cur, cur = next, next = t;
		n_cur = n_next;
		prev = (int32_t)r;
	}
	for (size_t i = 0; p >= end && i < n_cur; i++)
		if (re->prog[cur[i]].op == OP_MATCH)
			return true;
	return false;
}
