/*
 * The store's core: every public store__ and store_builder__ function of
 * store.h is a call through the backend's table of operations (struct
 * store_ops), as SQLite's core calls through its VFS table. Nothing here knows
 * which backend it has: the embedded store (embedded/) and ClickHouse
 * (clickhouse/) are complete tables, opened by their own store__open*, and
 * tests/integration/test_layers.sh checks that this folder's own files name
 * neither. What is the same for every backend (store__append's conversion of a
 * profile to its flat form) is done here once.
 */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void store__close(struct store *s)
{
	if (s)
		s->ops->close(s);
}

const char *store__name(const struct store *s)
{
	return s->ops->name;
}

int store__append_flat(struct store *s, const struct profile_flat *f, const char *profile_type,
		       const struct store_label *extra, size_t n_extra,
		       struct store_append_result *res, char *err, size_t errlen)
{
	return s->ops->append_flat(s, f, profile_type, extra, n_extra, res, err, errlen);
}

int store__append(struct store *s, const struct profile *p, const char *profile_type,
		  const struct store_label *extra, size_t n_extra, struct store_append_result *res,
		  char *err, size_t errlen)
{
	struct profile_flat *f = NULL;
	int e = p ? profile__to_flat(p, &f) : 0;

	if (e) {
		if (err && errlen)
			snprintf(err, errlen, "the profile has no flat form: %s", strerror(-e));
		return e == -E2BIG ? -ENOMEM : e; /* 4 GiB of strings: no label of the caller's */
	}
	e = store__append_flat(s, f, profile_type, extra, n_extra, res, err, errlen);
	profile_flat__free(f);
	return e;
}

int store__batch_begin(struct store *s, char *err, size_t errlen)
{
	return s->ops->batch_begin(s, err, errlen);
}

int store__batch_end(struct store *s, bool commit, char *err, size_t errlen)
{
	return s->ops->batch_end(s, commit, err, errlen);
}

int store__maintain(struct store *s, int64_t now_ns, uint64_t *deleted)
{
	return s->ops->maintain(s, now_ns, deleted);
}

int store__stats(struct store *s, struct store_stats *out)
{
	return s->ops->stats(s, out);
}

int store__health(struct store *s, char *err, size_t errlen)
{
	if (err && errlen)
		*err = 0;
	return s->ops->health(s, err, errlen);
}

int store__series_foreach(struct store *s, int (*fn)(void *ctx, const struct store_series *ser),
			  void *ctx)
{
	return s->ops->series_foreach(s, fn, ctx);
}

int store__label_names(struct store *s, const struct store_scan_query *q,
		       int (*fn)(void *ctx, const char *name), void *ctx)
{
	if (q->from_ns > q->until_ns)
		return -EINVAL;
	return q->n_ids ? s->ops->labels(s, NULL, q, fn, ctx) : 0;
}

int store__label_values(struct store *s, const char *name, const struct store_scan_query *q,
			int (*fn)(void *ctx, const char *value), void *ctx)
{
	if (q->from_ns > q->until_ns)
		return -EINVAL;
	return q->n_ids ? s->ops->labels(s, name, q, fn, ctx) : 0;
}

int store__scan(struct store *s, const struct store_scan_query *q, store_rows_fn fn, void *ctx)
{
	return s->ops->scan(s, q, fn, ctx);
}

int store__stack_locations(struct store *s, const uint64_t *stack_ids, size_t n, size_t *off,
			   uint64_t **locs, size_t *cap)
{
	return s->ops->stack_locations(s, stack_ids, n, off, locs, cap);
}

uint64_t store__max_stack_id(struct store *s)
{
	return s->ops->max_stack_id(s);
}

int store_builder__new(struct store *s, struct profile *p, struct store_builder **out)
{
	struct store_builder *b = calloc(1, s->ops->builder_size);

	*out = b;
	if (!b)
		return -ENOMEM;
	b->s = s;
	b->p = p;
	return 0;
}

void store_builder__free(struct store_builder *b)
{
	if (!b)
		return;
	b->s->ops->builder_fini(b);
	free(b);
}

int store_builder__add(struct store_builder *b, uint64_t stack_id,
		       const int64_t values[PROFILE_N_VALUES], const struct profile_label *labels,
		       size_t n_labels)
{
	return b->s->ops->builder_add(b, stack_id, values, labels, n_labels);
}

int store_builder__append(struct store_builder *b, const struct store_builder_sample *sm, size_t n,
			  bool *distinct)
{
	return b->s->ops->builder_append(b, sm, n, distinct);
}

int store_builder__location(struct store_builder *b, uint64_t loc_id, uint64_t *out)
{
	return b->s->ops->builder_location(b, loc_id, out);
}
