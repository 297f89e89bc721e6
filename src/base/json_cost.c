/*
 * What a JSON text costs once json-c has parsed it: one pass over the text that
 * counts its objects, members, arrays, strings and scalars and prices each at
 * what json-c 0.16 (Debian's libjson-c5) allocates for it, so a decoder can
 * refuse a body before json_tokener builds a tree of hundreds of times its size
 * (`[{},{},...]` is 264 bytes of heap per byte of text).
 *
 * The pass is a small state machine that only needs to get strings right
 * (quotes, backslash escapes): everything else outside a string is a structural
 * byte or part of a scalar token. It does not validate. On malformed text it
 * prices what json-c could have built before it stopped: json-c builds its tree
 * as it reads, so the tree of any prefix costs no more than the priced text.
 * Callers parse in json-c's strict mode (no comments, no single quotes), the
 * only syntax priced here.
 */
#include "base.h"

#include <errno.h>
#include <string.h>

/*
 * Heap bytes json-c 0.16 takes per node, measured on x86-64 glibc with
 * mallinfo2() (uordblks + hblkhd) before and after json_tokener_parse of
 * 10^4..10^6 copies of one element (tests/unit/test_base.c, json_cost_measured,
 * re-measures them against the library in use):
 *   [{},...]      792 per element (8 of it the array slot): an object with its
 *                 16-entry hash table;
 *   [[],...]      152 per element: an array of 32 slots;
 *   [1,...] 72, [1.5,...] 104, [true,...] 72, [null,...] 8, ["x",...] 88,
 *   [64-byte string,...] 136;
 *   {"k":null,...} with 0..24 members: +32 per member (the key's strdup) up to
 *                 11 members, then the table doubles: +680 at the 12th, +1300
 *                 at the 23rd (40 bytes an entry, resized at 2/3 full).
 * The prices below round these up: a member past the 11th is charged 160
 * bytes more (4 entries of 40: the table and the one it replaces), and those
 * before it the same once the object has 12; a number keeps its text (json-c
 * keeps a double's); an array slot is 16 (doubling); the tokener's buffer
 * holds the longest token, twice over while it grows.
 */
#define JSON_COST_OBJECT	784
#define JSON_COST_ARRAY		144
#define JSON_COST_SLOT		16
#define JSON_COST_KEY		32 /* plus its length */
#define JSON_COST_TABLE_ENTRY	160
#define JSON_COST_SMALL_MEMBERS 11
#define JSON_COST_STRING	80 /* plus its length */
#define JSON_COST_NUMBER	96 /* plus its length */
#define JSON_COST_LITERAL	64 /* true, false (null is free) */
#define JSON_COST_TOKENER	4096

struct level {
	bool object, want_key;
	size_t members;
};

struct scan {
	struct base_json_cost *c;
	struct level lv[BASE_JSON_COST_DEPTH];
	unsigned depth;
	size_t longest;
};

static void add(struct scan *s, size_t n)
{
	s->c->bytes = s->c->bytes > SIZE_MAX - n ? SIZE_MAX : s->c->bytes + n;
}

/* A value at the current level: an array's slot. */
static void value(struct scan *s, size_t cost)
{
	s->c->values++;
	add(s, cost + (s->depth && !s->lv[s->depth - 1].object ? JSON_COST_SLOT : 0));
}

/* A string of n bytes ended: a key when its object waits for one. */
static void string(struct scan *s, size_t n)
{
	struct level *l = s->depth ? &s->lv[s->depth - 1] : NULL;

	if (n > s->longest)
		s->longest = n;
	if (!l || !l->object || !l->want_key) {
		value(s, JSON_COST_STRING + n);
		return;
	}
	l->want_key = false;
	add(s, JSON_COST_KEY + n);
	if (++l->members == JSON_COST_SMALL_MEMBERS + 1) /* the table's first resize */
		add(s, (JSON_COST_SMALL_MEMBERS + 1) * JSON_COST_TABLE_ENTRY);
	else if (l->members > JSON_COST_SMALL_MEMBERS)
		add(s, JSON_COST_TABLE_ENTRY);
}

/* A scalar token (number, true, false, null or junk json-c will refuse). */
static void scalar(struct scan *s, const char *t, size_t n)
{
	if (n > s->longest)
		s->longest = n;
	if (n == 4 && !memcmp(t, "null", 4))
		value(s, 0);
	else if ((n == 4 && !memcmp(t, "true", 4)) || (n == 5 && !memcmp(t, "false", 5)))
		value(s, JSON_COST_LITERAL);
	else
		value(s, JSON_COST_NUMBER + n);
}

static int open_level(struct scan *s, bool object)
{
	if (s->depth == BASE_JSON_COST_DEPTH)
		return -E2BIG;
	value(s, object ? JSON_COST_OBJECT : JSON_COST_ARRAY);
	s->lv[s->depth++] = (struct level){object, object, 0};
	if (s->depth > s->c->max_depth)
		s->c->max_depth = s->depth;
	return 0;
}

static bool is_token_byte(char c)
{
	return !strchr("{}[],:\" \t\r\n", c);
}

int base_json_cost(const char *buf, size_t len, struct base_json_cost *out)
{
	struct scan s = {.c = out};
	size_t i = 0, start;
	int err;

	*out = (struct base_json_cost){0};
	while (i < len) {
		char c = buf[i];

		if (c == '"') {
			for (start = ++i; i < len && buf[i] != '"'; i++)
				i += buf[i] == '\\'; /* the escaped byte is never the end */
			string(&s, (i < len ? i : len) - start);
			i++;
			continue;
		}
		if ((c == '{' || c == '[') && (err = open_level(&s, c == '{')))
			return err;
		if ((c == '}' || c == ']') && s.depth)
			s.depth--;
		if (c == ',' && s.depth && s.lv[s.depth - 1].object)
			s.lv[s.depth - 1].want_key = true;
		if (is_token_byte(c)) {
			for (start = i; i < len && is_token_byte(buf[i]); i++)
				;
			scalar(&s, buf + start, i - start);
			continue;
		}
		i++;
	}
	add(&s, JSON_COST_TOKENER + 2 * s.longest);
	return 0;
}
