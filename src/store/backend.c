/*
 * The embedded store behind the storage interface (struct store_backend_ops):
 * each operation is the store__ function of the same name on the store that
 * embeds the backend. Ingest reaches the store only through this table, so a
 * second backend is a second table, not a second ingest path.
 */
#include "store_impl.h"

#include <stddef.h>

static struct store *of(struct store_backend *b)
{
	return (struct store *)((char *)b - offsetof(struct store, backend));
}

static int be_append_flat(struct store_backend *b, const struct profile_flat *f,
			  const char *profile_type, const struct store_label *extra, size_t n_extra,
			  struct store_append_result *res, char *err, size_t errlen)
{
	return store__append_flat(of(b), f, profile_type, extra, n_extra, res, err, errlen);
}

static int be_scan(struct store_backend *b, const struct store_scan_query *q, store_rows_fn fn,
		   void *ctx)
{
	return store__scan(of(b), q, fn, ctx);
}

static int be_series_foreach(struct store_backend *b,
			     int (*fn)(void *ctx, const struct store_series *ser), void *ctx)
{
	return store__series_foreach(of(b), fn, ctx);
}

static int be_maintain(struct store_backend *b, int64_t now_ns, uint64_t *deleted)
{
	return store__maintain(of(b), now_ns, deleted);
}

const struct store_backend_ops store_embedded_ops = {
    .name = "embedded",
    .append_flat = be_append_flat,
    .scan = be_scan,
    .series_foreach = be_series_foreach,
    .maintain = be_maintain,
};

struct store_backend *store__backend(struct store *s)
{
	return &s->backend;
}
