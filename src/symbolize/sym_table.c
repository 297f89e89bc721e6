/*
 * sym_table: a sorted array of function symbols searched by address, built once per
 * object (or once for the kernel) and never changed after.
 *
 * Constraint: lookups are the hot path and tables can hold millions of symbols across
 * a system, so an entry is 24 bytes with names as offsets into one blob per table, and
 * the one-frame result handed to callers is made on first use, once per symbol.
 *
 * Where a symbol ends:
 *   sized (st_size > 0)        [start, start + size)
 *   unsized, next in region    [start, next.start)
 *   unsized, last of region    [start, min(next.start, start + SYM_UNSIZED_TAIL))
 * and never past its bound (the end of its ELF section).
 */
#include "symbolize/sym_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* How many earlier symbols to try when addr is past the nearest one (nested symbols). */
#define SYM_LOOKBACK 4

void *sym_grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return p;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return NULL;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return NULL;
	np = realloc(p, ncap * elem);
	if (np)
		*cap = ncap;
	return np;
}

/* Copies s into the blob; *off is where. 0 or -ENOMEM (also past 4 GiB of names). */
static int names_add(struct sym_builder *b, const char *s, uint32_t *off)
{
	size_t n = strlen(s) + 1;
	char *names;

	if (n >= SYM_NO_NAME || b->len >= SYM_NO_NAME - n)
		return -ENOMEM;
	names = sym_grow(b->names, &b->names_cap, b->len + n, 1);
	if (!names)
		return -ENOMEM;
	b->names = names;
	memcpy(b->names + b->len, s, n);
	*off = (uint32_t)b->len;
	b->len += n;
	return 0;
}

int sym_builder__add(struct sym_builder *b, const struct sym_raw *r, const char *name,
		     const char *display)
{
	struct sym_raw raw = *r, *arr;
	int err;

	if (b->n >= SYM_MAX_SYMBOLS)
		return 0;
	arr = sym_grow(b->raw, &b->cap, b->n + 1, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	b->raw = arr;
	raw.name = raw.display = SYM_NO_NAME;
	if (name) {
		if ((err = names_add(b, name, &raw.name)))
			return err;
		raw.display = raw.name;
		if (display && (err = names_add(b, display, &raw.display)))
			return err;
	}
	b->raw[b->n++] = raw;
	return 0;
}

void sym_builder__fini(struct sym_builder *b)
{
	free(b->raw);
	free(b->names);
	memset(b, 0, sizeof(*b));
}

static const char *raw_name(const struct sym_builder *b, const struct sym_raw *r)
{
	return r->name == SYM_NO_NAME ? "" : b->names + r->name;
}

static size_t leading_underscores(const char *s)
{
	return strspn(s, "_");
}

/* By address; at one address the winner first: higher rank, fewer '_', then by name. */
static int raw_cmp(const void *pa, const void *pb, void *arg)
{
	const struct sym_raw *a = pa, *b = pb;
	const char *na = raw_name(arg, a), *nb = raw_name(arg, b);
	size_t ua = leading_underscores(na), ub = leading_underscores(nb);

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank > b->rank ? -1 : 1;
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(na, nb);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* End of raw[i] in an array sorted and with one symbol per address (see file top). */
static uint64_t raw_end(const struct sym_raw *raw, size_t n, size_t i)
{
	const struct sym_raw *r = &raw[i], *next = i + 1 < n ? &raw[i + 1] : NULL;
	uint64_t end;

	if (r->size)
		end = sat_add(r->start, r->size);
	else if (next && next->region == r->region)
		end = next->start;
	else
		end = min_u64(next ? next->start : UINT64_MAX, sat_add(r->start, SYM_UNSIZED_TAIL));
	return min_u64(end, r->bound);
}

/* Keeps the first (best) symbol at each address; returns the new count. */
static size_t dedupe(struct sym_raw *raw, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++)
		if (out == 0 || raw[out - 1].start != raw[i].start)
			raw[out++] = raw[i];
	return out;
}

/* Copies the builder's name at off to dst + *pos; returns its offset in dst. */
static uint32_t move_name(const struct sym_builder *b, char *dst, size_t *pos, uint32_t off)
{
	size_t n = strlen(b->names + off) + 1, at = *pos;

	memcpy(dst + at, b->names + off, n);
	*pos += n;
	return (uint32_t)at;
}

/* Copies only the names the kept entries use into t->names, rewriting their offsets. */
static int compact_names(const struct sym_builder *b, struct sym_table *t)
{
	size_t len = 0, pos = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct sym_entry *e = &t->syms[i];

		if (e->name != SYM_NO_NAME)
			len += strlen(b->names + e->name) + 1;
		if (e->display != e->name)
			len += strlen(b->names + e->display) + 1;
	}
	t->names = malloc(len ? len : 1);
	if (!t->names)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		struct sym_entry *e = &t->syms[i];
		bool same = e->display == e->name;

		if (e->name == SYM_NO_NAME)
			continue;
		e->name = move_name(b, t->names, &pos, e->name);
		e->display = same ? e->name : move_name(b, t->names, &pos, e->display);
	}
	return 0;
}

int sym_builder__finish(struct sym_builder *b, struct sym_table *t)
{
	size_t n;
	int err = 0;

	memset(t, 0, sizeof(*t));
	if (b->n)
		qsort_r(b->raw, b->n, sizeof(*b->raw), raw_cmp, b);
	n = dedupe(b->raw, b->n);
	t->syms = malloc((n ? n : 1) * sizeof(*t->syms));
	if (!t->syms) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		struct sym_entry e = { b->raw[i].start, raw_end(b->raw, n, i), b->raw[i].name,
				       b->raw[i].display };

		if (e.end > e.start)
			t->syms[t->n++] = e;
	}
	err = compact_names(b, t);
cleanup:
	if (err)
		sym_table__fini(t);
	sym_builder__fini(b);
	return err;
}

void sym_table__fini(struct sym_table *t)
{
	if (t->results)
		for (size_t i = 0; i < t->n; i++)
			free(t->results[i]);
	free(t->results);
	free(t->syms);
	free(t->names);
	memset(t, 0, sizeof(*t));
}

long sym_table__find(const struct sym_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	/* Invariant: syms[< lo].start <= addr < syms[>= hi].start. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = 0; k < SYM_LOOKBACK && lo > k; k++) {
		const struct sym_entry *e = &t->syms[lo - 1 - k];

		if (addr < e->end)
			return e->name == SYM_NO_NAME ? -1 : (long)(lo - 1 - k);
	}
	return -1;
}

const struct sym_result *sym_table__result(struct sym_table *t, size_t i)
{
	struct sym_result *r;

	if (!t->results && !(t->results = calloc(t->n, sizeof(*t->results))))
		return NULL;
	if (t->results[i])
		return t->results[i];
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->n = 1;
	r->frames[0].name = t->names + t->syms[i].display;
	r->frames[0].system_name = t->names + t->syms[i].name;
	t->results[i] = r;
	return r;
}
