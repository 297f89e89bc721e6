/*
 * The flat ingest path (store__append_flat): a decoded pprof (struct
 * profile_flat) to store ids without building the profile model. It is the
 * same translation as the model path of append.c, in the same order, so a
 * profile gets the same store ids and rows either way (tests/unit/test_store.c
 * compares the two byte for byte); what makes it fast:
 *
 *  - locations are hashed straight from the flat arrays, strings as (pointer,
 *    length), and looked up in the location cache with prefetching, before
 *    the samples need them (flat_find_cached);
 *  - a stack a series used before costs one probe of the stack memo, whose
 *    slot is prefetched a few samples ahead (flat_begin / flat_finish).
 *
 * Flat index i is "profile id" i + 1 in the per-append arrays of struct
 * store_append_ctx. Strings are interned once per append (a->str_ids).
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

static const char *fstr(const struct store_append_ctx *a, uint32_t i, size_t *len)
{
	return profile_flat__str(a->f, i, len);
}

static int flat_string(struct store_append_ctx *a, uint32_t i, uint64_t *id)
{
	size_t len;
	const char *str = fstr(a, i, &len);

	if (a->str_ids[i]) {
		*id = a->str_ids[i];
		return 0;
	}
	/* the NUL is part of the key, as in intern_string */
	return store_itab__intern(&a->s->tabs[STORE_T_STRINGS], str, len + 1, &a->str_ids[i], NULL)
		   ?: (*id = a->str_ids[i], 0);
}

static void flat_mix_str(const struct store_append_ctx *a, uint64_t h[2], uint32_t i)
{
	size_t len;
	const char *str = fstr(a, i, &len);

	store_loccache_mix(h, str, len + 1); /* what mix_str hashes: the bytes and the NUL */
}

/* map_hash of flat mapping m1 (index + 1; 0: none). */
static const uint64_t *flat_map_hash(struct store_append_ctx *a, uint32_t m1)
{
	uint64_t *h = a->map_h[m1];

	if (h[0] || h[1])
		return h;
	h[0] = STORE_LOCCACHE_MAPPING_SEED0;
	h[1] = STORE_LOCCACHE_MAPPING_SEED1;
	if (m1) {
		const struct profile_flat_mapping *m = &a->f->mappings[m1 - 1];
		uint64_t v[3] = {m->start, m->limit, m->offset};

		store_loccache_mix(h, v, sizeof(v));
		flat_mix_str(a, h, m->file);
		flat_mix_str(a, h, m->build_id);
	}
	return h;
}

/* func_hash of flat function fi. */
static const uint64_t *flat_func_hash(struct store_append_ctx *a, uint32_t fi)
{
	uint64_t *h = a->func_h[fi + 1];
	const struct profile_flat_function *fn = &a->f->functions[fi];

	if (h[0] || h[1])
		return h;
	h[0] = STORE_LOCCACHE_FUNCTION_SEED0;
	h[1] = STORE_LOCCACHE_FUNCTION_SEED1;
	flat_mix_str(a, h, fn->name);
	flat_mix_str(a, h, fn->system_name);
	flat_mix_str(a, h, fn->filename);
	return h;
}

/* loc_hash of a flat location: the same bytes in the same order. */
static void flat_loc_hash(struct store_append_ctx *a, const struct profile_flat_location *l,
			  uint64_t h[2])
{
	const uint64_t *mh = flat_map_hash(a, l->mapping);
	uint64_t v[3] = {l->address, l->n_lines};

	h[0] = mh[0];
	h[1] = mh[1];
	store_loccache_mix(h, v, 2 * sizeof(*v));
	for (uint32_t i = 0; i < l->n_lines; i++) {
		const struct profile_flat_line *ln = &a->f->lines[l->line_off + i];
		const uint64_t *fh = flat_func_hash(a, ln->function);

		v[0] = fh[0];
		v[1] = fh[1];
		v[2] = (uint64_t)ln->line;
		store_loccache_mix(h, v, sizeof(v));
	}
}

static int flat_map_id(struct store_append_ctx *a, uint32_t m1, uint64_t *out)
{
	const struct profile_flat_mapping *m;
	uint64_t file, build;
	uint8_t k[64], *e;
	int err;

	if (m1 == 0 || a->map_ids[m1]) {
		*out = m1 ? a->map_ids[m1] : 0;
		return 0;
	}
	m = &a->f->mappings[m1 - 1];
	err = flat_string(a, m->file, &file) ?: flat_string(a, m->build_id, &build);
	if (err)
		return err;
	e = base_varint_put(k, m->start);
	e = base_varint_put(e, m->limit);
	e = base_varint_put(e, m->offset);
	e = base_varint_put(e, file);
	e = base_varint_put(e, build);
	err = store_itab__intern(&a->s->tabs[STORE_T_MAPPINGS], k, (size_t)(e - k), out, NULL);
	a->map_ids[m1] = *out;
	return err;
}

static int flat_func_id(struct store_append_ctx *a, uint32_t fi, uint64_t *out)
{
	const struct profile_flat_function *fn = &a->f->functions[fi];
	uint64_t sid[3];
	uint8_t k[32], *e = k;
	int err;

	if (a->func_ids[fi + 1]) {
		*out = a->func_ids[fi + 1];
		return 0;
	}
	err = flat_string(a, fn->name, &sid[0]) ?: flat_string(a, fn->system_name, &sid[1]) ?:
		flat_string(a, fn->filename, &sid[2]);
	if (err)
		return err;
	for (int i = 0; i < 3; i++)
		e = base_varint_put(e, sid[i]);
	err = store_itab__intern(&a->s->tabs[STORE_T_FUNCTIONS], k, (size_t)(e - k), out, NULL);
	a->func_ids[fi + 1] = *out;
	return err;
}

/* Store id of flat location li: location cache first, as loc_id. */
static int flat_loc_id(struct store_append_ctx *a, uint32_t li, uint64_t *out)
{
	const struct profile_flat_location *l = &a->f->locations[li];
	uint64_t mid, fid, h[2];
	uint8_t *e;
	int err;

	flat_loc_hash(a, l, h);
	if ((*out = store_loccache_find(&a->s->loccache, h))) {
		a->loc_ids[li + 1] = *out;
		return 0;
	}
	err = flat_map_id(a, l->mapping, &mid);
	if (err)
		return err;
	if (l->n_lines > 100000 || store_append_key_room(a, 40 + (size_t)l->n_lines * 20))
		return -ENOMEM;
	e = base_varint_put(a->key, mid);
	e = base_varint_put(e, l->address);
	e = base_varint_put(e, l->n_lines);
	for (uint32_t i = 0; i < l->n_lines; i++) {
		const struct profile_flat_line *ln = &a->f->lines[l->line_off + i];

		err = flat_func_id(a, ln->function, &fid);
		if (err)
			return err;
		e = base_varint_put(e, fid);
		e = base_varint_put(e, base_zigzag(ln->line));
	}
	err = store_itab__intern(&a->s->tabs[STORE_T_LOCATIONS], a->key, (size_t)(e - a->key), out,
				 NULL)
		  ?: store_loccache_put(&a->s->loccache, h, *out);
	a->loc_ids[li + 1] = *out;
	return err;
}

/* Locations whose cache slot is loaded ahead of the probe (flat_find_cached). */
#define FLAT_PREFETCH 8

/*
 * Looks every flat location up in the location cache before the samples need
 * them. The probes miss the CPU caches (the table is megabytes, the order
 * random), so each slot is prefetched FLAT_PREFETCH locations before it is
 * compared. Locations not found stay 0 and are interned in sample order by
 * flat_loc_id, so new ids are given in the model path's order; finding has no
 * side effect.
 */
static void flat_find_cached(struct store_append_ctx *a)
{
	const struct store_loccache *c = &a->s->loccache;
	size_t n = a->f->n_locations;
	uint64_t h[FLAT_PREFETCH][2];

	if (!c->n)
		return; /* an empty cache finds nothing */
	for (size_t i = 0; i < n + FLAT_PREFETCH; i++) {
		if (i >= FLAT_PREFETCH) {
			size_t j = i - FLAT_PREFETCH;

			a->loc_ids[j + 1] = store_loccache_find(c, h[j % FLAT_PREFETCH]);
		}
		if (i < n) {
			flat_loc_hash(a, &a->f->locations[i], h[i % FLAT_PREFETCH]);
			store_loccache_prefetch(c, h[i % FLAT_PREFETCH]);
		}
	}
}

/* Series of a flat sample: its labels as the model would hold them (a label
 * whose value is "" is numeric), sorted as the model sorts them. */
static int flat_series_slow(struct store_append_ctx *a, const struct profile_flat_sample *smp,
			    uint64_t *out)
{
	struct profile_label *l = calloc(smp->n_labels + 1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	for (uint32_t i = 0; i < smp->n_labels; i++) {
		const struct profile_flat_label *fl = &a->f->labels[smp->label_off + i];
		const char *v = fstr(a, fl->str, NULL);

		l[i].key = fstr(a, fl->key, NULL);
		l[i].str = *v ? v : NULL;
		l[i].num = *v ? 0 : fl->num;
	}
	if (smp->n_labels > 1)
		qsort(l, smp->n_labels, sizeof(*l), profile_label__cmp);
	err = store_append_series(a, l, smp->n_labels, out);
	free(l);
	return err;
}

static int flat_series(struct store_append_ctx *a, const struct profile_flat_sample *smp,
		       uint64_t *out)
{
	const struct profile_flat_label *labels = &a->f->labels[smp->label_off];
	size_t bytes = smp->n_labels * sizeof(*labels);
	struct store_series_memo *m = store_append_memo_slot(a, labels, bytes);
	int err;

	if (m->id) {
		*out = m->id;
		return 0;
	}
	err = flat_series_slow(a, smp, out);
	if (!err)
		*m = (struct store_series_memo){labels, bytes, *out};
	return err;
}

/*
 * A flat sample between its two halves (flat_rows): series and location ids
 * known, stack memo slot prefetched, stack not yet looked up.
 */
struct flat_pending {
	uint64_t *ids; /* owned, cap entries */
	size_t cap, n;
	uint64_t series, h[2];
	int64_t v[PROFILE_N_VALUES];
};

/* Samples whose stack memo slot is loaded ahead of the probe. */
#define FLAT_MEMO_AHEAD 4

/* First half: series, store location ids (location cache, or interned), the
 * stack memo hash; the memo slot starts loading. */
static int flat_begin(struct store_append_ctx *a, const struct profile_flat_sample *smp,
		      struct flat_pending *pd)
{
	const uint32_t *locs = &a->f->locs[smp->loc_off];
	int err = 0;

	if (smp->n_locs > pd->cap) {
		free(pd->ids);
		pd->cap = 0;
		if (!(pd->ids = calloc(smp->n_locs, sizeof(*pd->ids))))
			return -ENOMEM;
		pd->cap = smp->n_locs;
	}
	pd->n = smp->n_locs;
	pd->v[0] = smp->values[0];
	pd->v[1] = smp->values[1];
	err = flat_series(a, smp, &pd->series);
	for (uint32_t i = 0; i < smp->n_locs && !err; i++) {
		pd->ids[i] = a->loc_ids[locs[i] + 1];
		if (!pd->ids[i])
			err = flat_loc_id(a, locs[i], &pd->ids[i]);
	}
	if (err)
		return err;
	store_stackmemo_hash(pd->series, pd->ids, pd->n, pd->h);
	store_stackmemo_prefetch(&a->s->stackmemo, pd->h);
	return 0;
}

/* Second half: the stack's local id, and the row. */
static int flat_finish(struct store_append_ctx *a, const struct flat_pending *pd,
		       struct store_rows *rows, int64_t *samples)
{
	struct store_crow r = {.series_id = pd->series, .v = {pd->v[0], pd->v[1]}};
	int err = store_append_stack(a, pd->series, pd->ids, pd->n, pd->h, &r.stack_id);

	*samples = base_sat_add(*samples, pd->v[0]);
	return err ?: store_rows__push(rows, &r);
}

/*
 * Rows of a flat profile. Each sample is begun FLAT_MEMO_AHEAD samples before
 * it is finished, so its stack memo probe finds the slot in the CPU cache.
 * Tables are interned in the model path's order all the same: locations and
 * series (begin) and stacks and pairs (finish) are separate id sequences, each
 * filled in sample order.
 */
int store_append_flat_rows(struct store_append_ctx *a, struct store_rows *rows, int64_t *samples)
{
	struct flat_pending pd[FLAT_MEMO_AHEAD] = {{0}};
	size_t n = a->f->n_samples;
	int err = 0;

	*samples = 0;
	flat_find_cached(a);
	for (size_t i = 0; i < n + FLAT_MEMO_AHEAD && !err; i++) {
		if (i >= FLAT_MEMO_AHEAD)
			err = flat_finish(a, &pd[(i - FLAT_MEMO_AHEAD) % FLAT_MEMO_AHEAD], rows,
					  samples);
		if (!err && i < n)
			err = flat_begin(a, &a->f->samples[i], &pd[i % FLAT_MEMO_AHEAD]);
	}
	for (int k = 0; k < FLAT_MEMO_AHEAD; k++)
		free(pd[k].ids);
	if (!err)
		store_rows__sort_merge(rows);
	return err;
}
