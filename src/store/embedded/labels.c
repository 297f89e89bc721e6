/*
 * Label names and values of the embedded store (store__label_names,
 * store__label_values): which of the asked series have data in the range comes
 * from the chunks' totals columns (no row of a chunk body is decoded), their
 * labels from the in-memory series keys. The distinct strings are copied out
 * under the lock and handed to the caller after it, so a slow caller never
 * holds up ingest.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

/* Which of the asked series have data: has[i] for q->ids[i]. */
struct with_data {
	const uint64_t *ids;
	size_t n;
	uint8_t *has;
};

static int id_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int mark(void *ctx, const struct store_row *rows, size_t n)
{
	struct with_data *w = ctx;

	for (size_t i = 0; i < n; i++) {
		const uint64_t *at =
		    bsearch(&rows[i].series_id, w->ids, w->n, sizeof(*w->ids), id_cmp);

		if (at)
			w->has[at - w->ids] = 1;
	}
	return 0;
}

/* The distinct strings found, copied (id 0 of the table is "", seen or not). */
struct found {
	struct base_strtab strs;
	bool empty; /* "" was found */
	int err;
};

static void add(struct found *f, const char *v)
{
	int64_t id = f->err ? 0 : base_strtab__intern(&f->strs, v);

	if (id < 0)
		f->err = (int)id;
	else if (!*v)
		f->empty = true;
}

/* name NULL: the label names (the profile type's among them); else the values of
 * label name, of one series key. */
static int collect(struct estore *s, uint64_t id, const char *name, struct found *f)
{
	struct store_label labels[STORE_MAX_SERIES_LABELS];
	const char *type;
	size_t len, n;
	const uint8_t *k = store_itab__key(&s->tabs[STORE_T_SERIES], id, &len);

	/* freed, or a key that does not decode (counted and logged at open) */
	if (!k || store_series_labels(k, len, &type, labels, STORE_MAX_SERIES_LABELS, &n))
		return 0;
	if (!name)
		add(f, STORE_PROFILE_TYPE_LABEL);
	else if (!strcmp(name, STORE_PROFILE_TYPE_LABEL))
		add(f, type);
	for (size_t i = 0; i < n; i++)
		if (!name)
			add(f, labels[i].name);
		else if (!strcmp(name, labels[i].name))
			add(f, labels[i].value);
	return f->err;
}

int estore_labels(struct store *base, const char *name, const struct store_scan_query *q,
		  int (*fn)(void *ctx, const char *str), void *ctx)
{
	struct estore *s = estore_of(base);
	struct with_data w = {q->ids, q->n_ids, calloc(q->n_ids, 1)};
	struct found f = {0};
	int e = w.has ? base_strtab__init(&f.strs) : -ENOMEM;

	if (!e) {
		pthread_mutex_lock(&s->lock);
		e = store_scan_locked(s,
				      &(struct store_scan_query){q->ids, q->n_ids, q->from_ns,
								 q->until_ns, 0, STORE_SCAN_TOTALS},
				      STORE_LEVELS - 1, mark, &w);
		for (size_t i = 0; !e && i < w.n; i++)
			if (w.has[i])
				e = collect(s, w.ids[i], name, &f);
		pthread_mutex_unlock(&s->lock);
	}
	if (!e && f.empty)
		e = fn(ctx, "");
	for (size_t i = 1; !e && i < f.strs.n; i++)
		e = fn(ctx, f.strs.strs[i]);
	base_strtab__fini(&f.strs); /* safe on the zeroed table of a failed init */
	free(w.has);
	return e;
}
