/*
 * The chunk codec: rows (series, stack, values) of one append or one rollup
 * window as columns, then zlib. Rows are sorted by (series, stack), so series
 * ids are stored once with a row count, stack ids as deltas within a series,
 * and values[1] as its difference from values[0] * period (0 for CPU samples
 * taken at a fixed period: one byte that compresses to almost nothing).
 * See docs/storage.md for the byte layout.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* zlib level of chunk bodies: 6 gives ~15% smaller chunks than 1 at a small
 * fraction of the append's cost (bench/store). */
#define STORE_ZLIB_LEVEL 6

int store_rows__push(struct store_rows *a, const struct store_crow *row)
{
	if (a->n == a->cap && base_grow((void **)&a->r, &a->cap, a->n + 1, sizeof(*a->r)))
		return -ENOMEM;
	a->r[a->n++] = *row;
	return 0;
}

void store_rows__fini(struct store_rows *a)
{
	free(a->r);
	memset(a, 0, sizeof(*a));
}

static int crow_cmp(const void *x, const void *y)
{
	const struct store_crow *a = x, *b = y;

	if (a->series_id != b->series_id)
		return a->series_id < b->series_id ? -1 : 1;
	if (a->stack_id != b->stack_id)
		return a->stack_id < b->stack_id ? -1 : 1;
	return 0;
}

/* Radix digits of RADIX_BITS bits: one or two passes sort the small ids of
 * series and series-local stacks. */
#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)

/* One stable counting-sort pass of src into dst by the digit of key at shift. */
static void radix_pass(const struct store_crow *src, struct store_crow *dst, size_t n, int key,
		       unsigned shift, size_t *count)
{
	size_t sum = 0;

	memset(count, 0, RADIX_SIZE * sizeof(*count));
	for (size_t i = 0; i < n; i++)
		count[((key ? src[i].series_id : src[i].stack_id) >> shift) & (RADIX_SIZE - 1)]++;
	for (size_t d = 0; d < RADIX_SIZE; d++) {
		size_t c = count[d];

		count[d] = sum;
		sum += c;
	}
	for (size_t i = 0; i < n; i++)
		dst[count[((key ? src[i].series_id : src[i].stack_id) >> shift) &
			  (RADIX_SIZE - 1)]++] = src[i];
}

/*
 * LSD radix sort by (series, stack): stack digits first, then series digits,
 * each pass stable; a digit that is the same in every row is skipped, so the
 * usual append (a few hundred series, local stack ids below 2048) takes two
 * passes instead of qsort's n log n indirect comparisons. false when out of
 * memory (the caller falls back to qsort).
 */
static bool radix_sort(struct store_rows *a)
{
	struct store_crow *tmp = malloc(a->n * sizeof(*tmp)), *src = a->r, *dst = tmp;
	size_t *count = malloc(RADIX_SIZE * sizeof(*count));
	uint64_t any[2] = {0, 0}, all[2] = {~0ull, ~0ull}; /* [0] stack, [1] series */

	if (!tmp || !count) {
		free(tmp);
		free(count);
		return false;
	}
	for (size_t i = 0; i < a->n; i++) {
		any[0] |= a->r[i].stack_id;
		all[0] &= a->r[i].stack_id;
		any[1] |= a->r[i].series_id;
		all[1] &= a->r[i].series_id;
	}
	for (int key = 0; key < 2; key++)
		for (unsigned shift = 0; shift < 64; shift += RADIX_BITS) {
			struct store_crow *t;

			if (!(((any[key] ^ all[key]) >> shift) & (RADIX_SIZE - 1)))
				continue; /* every row has this digit */
			radix_pass(src, dst, a->n, key, shift, count);
			t = src;
			src = dst;
			dst = t;
		}
	if (src != a->r)
		memcpy(a->r, src, a->n * sizeof(*src));
	free(tmp);
	free(count);
	return true;
}

void store_rows__sort_merge(struct store_rows *a)
{
	size_t w = 0;

	if (!a->n)
		return;
	if (a->n < 64 || a->n > SIZE_MAX / sizeof(*a->r) || !radix_sort(a))
		qsort(a->r, a->n, sizeof(*a->r), crow_cmp);
	for (size_t i = 1; i < a->n; i++) {
		if (crow_cmp(&a->r[w], &a->r[i]) == 0) {
			for (int k = 0; k < PROFILE_N_VALUES; k++)
				a->r[w].v[k] = base_sat_add(a->r[w].v[k], a->r[i].v[k]);
		} else {
			a->r[++w] = a->r[i];
		}
	}
	a->n = w + 1;
}

/* values[1] relative to values[0] * period, wrapping (decode wraps back). */
static uint64_t v1_delta(const struct store_crow *r, int64_t period)
{
	return base_zigzag((int64_t)((uint64_t)r->v[1] - (uint64_t)r->v[0] * (uint64_t)period));
}

/* The uncompressed body; *out malloc'd. */
static int encode_raw(const struct store_rows *rows, int64_t period, uint8_t **out, size_t *len)
{
	size_t n_series = 0, cap;
	uint8_t *b, *p;

	for (size_t i = 0; i < rows->n; i++)
		n_series += !i || rows->r[i].series_id != rows->r[i - 1].series_id;
	if (rows->n > (SIZE_MAX - 64) / 40)
		return -ENOMEM;
	cap = 20 + n_series * 20 + rows->n * 30;
	b = malloc(cap);
	if (!b)
		return -ENOMEM;
	p = base_varint_put(b, base_zigzag(period));
	p = base_varint_put(p, n_series);
	for (size_t i = 0, prev = 0; i < rows->n;) {
		size_t j = i;

		while (j < rows->n && rows->r[j].series_id == rows->r[i].series_id)
			j++;
		p = base_varint_put(p, rows->r[i].series_id - prev);
		p = base_varint_put(p, j - i);
		prev = rows->r[i].series_id;
		i = j;
	}
	for (size_t i = 0; i < rows->n; i++) {
		bool first = !i || rows->r[i].series_id != rows->r[i - 1].series_id;

		p = base_varint_put(p,
				     rows->r[i].stack_id - (first ? 0 : rows->r[i - 1].stack_id));
	}
	for (size_t i = 0; i < rows->n; i++)
		p = base_varint_put(p, base_zigzag(rows->r[i].v[0]));
	for (size_t i = 0; i < rows->n; i++)
		p = base_varint_put(p, v1_delta(&rows->r[i], period));
	*out = b;
	*len = (size_t)(p - b);
	return 0;
}

static int encode_totals(const struct store_rows *rows, uint8_t **out, size_t *len)
{
	uint8_t *b = malloc(10 + rows->n * 30), *p;
	uint64_t prev = 0;

	if (!b)
		return -ENOMEM;
	p = b;
	for (size_t i = 0; i < rows->n;) {
		int64_t t[PROFILE_N_VALUES] = {0};
		size_t j = i;

		for (; j < rows->n && rows->r[j].series_id == rows->r[i].series_id; j++)
			for (int k = 0; k < PROFILE_N_VALUES; k++)
				t[k] = base_sat_add(t[k], rows->r[j].v[k]);
		p = base_varint_put(p, rows->r[i].series_id - prev);
		for (int k = 0; k < PROFILE_N_VALUES; k++)
			p = base_varint_put(p, base_zigzag(t[k]));
		prev = rows->r[i].series_id;
		i = j;
	}
	*out = b;
	*len = (size_t)(p - b);
	return 0;
}

/* Totals as varint(raw length) + zlib(raw), in place of the raw column. */
static int compress_totals(uint8_t **t, size_t *len)
{
	uLongf zlen = compressBound(*len);
	uint8_t *z = malloc(zlen + 10), *p;

	if (!z)
		return -ENOMEM;
	p = base_varint_put(z, *len);
	if (compress2(p, &zlen, *t, *len, STORE_ZLIB_LEVEL) != Z_OK) {
		free(z);
		return -ENOMEM;
	}
	free(*t);
	*t = z;
	*len = (size_t)(p - z) + zlen;
	return 0;
}

int store_chunk_encode(const struct store_rows *rows, int64_t period, uint8_t **data,
		       size_t *data_len, size_t *raw_len, uint8_t **totals, size_t *totals_len)
{
	uint8_t *raw = NULL, *z = NULL;
	size_t len = 0;
	uLongf zlen;
	int err;

	*data = *totals = NULL;
	err = encode_raw(rows, period, &raw, &len);
	if (err)
		return err;
	zlen = compressBound(len);
	z = malloc(zlen);
	if (!z) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (compress2(z, &zlen, raw, len, STORE_ZLIB_LEVEL) != Z_OK) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = encode_totals(rows, totals, totals_len) ?: compress_totals(totals, totals_len);
	if (err)
		goto cleanup;
	*data = z;
	*data_len = zlen;
	*raw_len = len;
	z = NULL;
cleanup:
	free(raw);
	free(z);
	return err;
}

/* Whether id is in the sorted ids (NULL: every id); *cur walks forward. */
static bool wanted(const uint64_t *ids, size_t n, size_t *cur, uint64_t id)
{
	if (!ids)
		return true;
	while (*cur < n && ids[*cur] < id)
		(*cur)++;
	return *cur < n && ids[*cur] == id;
}

/* Column decoder over the inflated body. */
struct cols {
	const uint8_t *p, *end;
	int64_t period;
	uint64_t n_series;
};

struct series_run {
	uint64_t id, rows;
	bool keep;
};

/* The series column; *runs malloc'd. */
static int decode_series(struct cols *c, const uint64_t *ids, size_t n_ids,
			 struct series_run **runs, uint64_t *n_rows)
{
	struct series_run *r;
	uint64_t sid = 0, d, total = 0;
	size_t cur = 0;

	if (c->n_series > (uint64_t)(c->end - c->p))
		return -EINVAL;
	r = calloc(c->n_series ? c->n_series : 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (uint64_t i = 0; i < c->n_series; i++) {
		if (base_varint_get(&c->p, c->end, &d) ||
		    base_varint_get(&c->p, c->end, &r[i].rows) ||
		    r[i].rows > (uint64_t)(c->end - c->p)) {
			free(r);
			return -EINVAL;
		}
		sid += d;
		r[i].id = sid;
		r[i].keep = wanted(ids, n_ids, &cur, sid);
		total += r[i].rows;
	}
	if (total > (uint64_t)(c->end - c->p)) {
		free(r);
		return -EINVAL;
	}
	*runs = r;
	*n_rows = total;
	return 0;
}

/* Decodes every row after out->n, then keeps the wanted series' rows. */
static int decode_rows(struct cols *c, const struct series_run *runs, uint64_t n_rows,
		       struct store_rows *out)
{
	size_t base = out->n, w;
	uint64_t d;

	for (uint64_t i = 0; i < c->n_series; i++) {
		uint64_t stack = 0;

		for (uint64_t r = 0; r < runs[i].rows; r++) {
			if (base_varint_get(&c->p, c->end, &d))
				return -EINVAL;
			stack += d;
			struct store_crow row = {runs[i].id, stack, {0, 0}};
			if (store_rows__push(out, &row))
				return -ENOMEM;
		}
	}
	for (int k = 0; k < PROFILE_N_VALUES; k++)
		for (uint64_t i = 0; i < n_rows; i++) {
			struct store_crow *row = &out->r[base + i];

			if (base_varint_get(&c->p, c->end, &d))
				return -EINVAL;
			if (k == 0)
				row->v[0] = base_unzigzag(d);
			else
				row->v[1] = (int64_t)((uint64_t)base_unzigzag(d) +
						      (uint64_t)row->v[0] * (uint64_t)c->period);
		}
	w = base;
	for (uint64_t i = 0, at = base; i < c->n_series; i++) {
		if (runs[i].keep && w != at)
			memmove(&out->r[w], &out->r[at], runs[i].rows * sizeof(*out->r));
		if (runs[i].keep)
			w += runs[i].rows;
		at += runs[i].rows;
	}
	out->n = w;
	return 0;
}

int store_chunk_decode(const uint8_t *data, size_t data_len, size_t raw_len, const uint64_t *ids,
		       size_t n_ids, struct store_rows *out, uint8_t **scratch, size_t *scratch_cap)
{
	struct series_run *runs = NULL;
	struct cols c;
	uint64_t v, n_rows;
	uLongf len = raw_len;
	int err;

	if (raw_len > (1u << 30))
		return -EINVAL;
	if (base_grow((void **)scratch, scratch_cap, raw_len + 1, 1))
		return -ENOMEM;
	if (uncompress(*scratch, &len, data, data_len) != Z_OK || len != raw_len)
		return -EINVAL;
	c.p = *scratch;
	c.end = *scratch + len;
	if (base_varint_get(&c.p, c.end, &v) || base_varint_get(&c.p, c.end, &c.n_series))
		return -EINVAL;
	c.period = base_unzigzag(v);
	err = decode_series(&c, ids, n_ids, &runs, &n_rows);
	if (err)
		return err;
	err = decode_rows(&c, runs, n_rows, out);
	free(runs);
	return err;
}

static int totals_rows(const uint8_t *t, size_t len, const uint64_t *ids, size_t n_ids,
		       struct store_rows *out);

int store_totals_decode(const uint8_t *t, size_t len, const uint64_t *ids, size_t n_ids,
			struct store_rows *out)
{
	const uint8_t *p = t, *end = t + len;
	uint64_t raw;
	uLongf rlen;
	uint8_t *buf;
	int err;

	if (base_varint_get(&p, end, &raw) || raw > (1u << 26))
		return -EINVAL;
	buf = malloc(raw + 1);
	if (!buf)
		return -ENOMEM;
	rlen = raw;
	err = uncompress(buf, &rlen, p, (uLong)(end - p)) == Z_OK && rlen == raw
		  ? totals_rows(buf, raw, ids, n_ids, out)
		  : -EINVAL;
	free(buf);
	return err;
}

static int totals_rows(const uint8_t *t, size_t len, const uint64_t *ids, size_t n_ids,
		       struct store_rows *out)
{
	const uint8_t *p = t, *end = t + len;
	uint64_t sid = 0, d, v[PROFILE_N_VALUES];
	size_t cur = 0;

	while (p < end) {
		if (base_varint_get(&p, end, &d) || base_varint_get(&p, end, &v[0]) ||
		    base_varint_get(&p, end, &v[1]))
			return -EINVAL;
		sid += d;
		if (!wanted(ids, n_ids, &cur, sid))
			continue;
		struct store_crow row = {sid, 0, {base_unzigzag(v[0]), base_unzigzag(v[1])}};
		if (store_rows__push(out, &row))
			return -ENOMEM;
	}
	return 0;
}
