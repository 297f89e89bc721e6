/*
 * The ClickHouse backend's internals (clickhouse.c: connection, schema and
 * ingest; clickhouse_read.c: pushed-down scans and the stack cache). Private
 * to src/store: the rest of hearth sees a struct store opened with
 * store__open_clickhouse, whose store__ functions forward here. The schema
 * and its reasons are in docs/clickhouse.md.
 */
#ifndef HEARTH_STORE_CLICKHOUSE_H
#define HEARTH_STORE_CLICKHOUSE_H

#include "store.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The schema version this hearth writes and reads (table hearth_schema). */
#define CH_SCHEMA_VERSION 1
#define CH_DAY_NS	  (86400ll * 1000000000ll)
#define CH_HOUR_NS	  (3600ll * 1000000000ll)

/* A growable byte buffer (HTTP bodies, RowBinary rows). */
struct ch_buf {
	uint8_t *p;
	size_t n, cap;
};

/* Open-addressing set of 64-bit keys (0 is never a key). */
struct ch_set {
	uint64_t *k;
	size_t n, cap; /* cap: 0 or a power of two */
};

/* Open-addressing map of 64-bit keys (0 is never a key) to 32-bit values. */
struct ch_map {
	uint64_t *k;
	uint32_t *v;
	size_t n, cap;
};

/* Read cache: what a scan's stack hashes expanded to, under process-local dense ids. */
struct ch_stack {
	size_t off; /* locs of the stack: stack_locs[off .. off + n) (local location ids) */
	uint32_t n;
};
struct ch_loc {
	uint32_t map; /* local mapping id; 0: none */
	uint64_t address;
	size_t line_off; /* lines[line_off .. + n_lines) */
	uint32_t n_lines;
};
struct ch_line {
	uint32_t func; /* local function id */
	int64_t line;
};
struct ch_func {
	char *name, *system_name, *filename; /* owned */
};
struct ch_mapping {
	uint64_t start, limit, offset;
	char *file, *build_id; /* owned */
};

struct chstore {
	char *base;	 /* "http://HOST:PORT/" (owned) */
	char *db;	 /* database name (owned; [A-Za-z0-9_] only) */
	char *cluster;	 /* Distributed tables over this cluster; NULL: one server (owned) */
	bool replicated; /* Replicated*MergeTree tables (ZooKeeper; docs/clickhouse.md) */
	char *where;	 /* "HOST:PORT/DB" for messages (owned) */
	long timeout_ms;
	struct store_opts opts;
	size_t n_sample_labels;

	pthread_mutex_t lock; /* everything below */
	/* (table, day, hash) keys this process inserted: each is inserted once a day */
	struct ch_set written;
	/* hash -> local id, per kind */
	struct ch_map stack_ix, loc_ix, func_ix, map_ix;
	struct ch_stack *stacks; /* local id - 1 */
	size_t n_stacks, cap_stacks;
	uint64_t *stack_locs;
	size_t n_stack_locs, cap_stack_locs;
	struct ch_loc *locs;
	size_t n_locs, cap_locs;
	struct ch_line *lines;
	size_t n_lines, cap_lines;
	struct ch_func *funcs;
	size_t n_funcs, cap_funcs;
	struct ch_mapping *maps;
	size_t n_maps, cap_maps;
	uint64_t appends, rows, samples; /* this process's ingest, for /metrics */
};

int chstore_open(const char *url, const struct store_opts *opts, struct chstore **out, char *err,
		 size_t errlen);
void chstore_free(struct chstore *c);

/* The backend's store__ operations (same contracts, plus -EHOSTDOWN: ClickHouse
 * did not answer, answered too late or failed an insert; err says which). */
int chstore_append_flat(struct chstore *c, const struct profile_flat *f, const char *profile_type,
			const struct store_label *extra, size_t n_extra,
			struct store_append_result *res, char *err, size_t errlen);
int chstore_maintain(struct chstore *c, int64_t now_ns, uint64_t *deleted);
int chstore_stats(struct chstore *c, struct store_stats *out);
int chstore_series_foreach(struct chstore *c, int (*fn)(void *ctx, const struct store_series *ser),
			   void *ctx);
int chstore_scan(struct chstore *c, const struct store_scan_query *q, store_rows_fn fn, void *ctx);
uint64_t chstore_max_stack_id(struct chstore *c);
int chstore_stack_locations(struct chstore *c, const uint64_t *stack_ids, size_t n, size_t *off,
			    uint64_t **locs, size_t *cap);
/* A store_builder's work on this backend: xl/xl_cap is the builder's cache of
 * local location id -> profile id. */
int chstore_location(struct chstore *c, struct profile *p, uint32_t **xl, size_t *xl_cap,
		     uint64_t loc_id, uint64_t *out);
int chstore_builder_add(struct chstore *c, struct profile *p, uint32_t **xl, size_t *xl_cap,
			uint64_t stack_id, const int64_t values[PROFILE_N_VALUES],
			const struct profile_label *labels, size_t n_labels);

/* ---- shared by clickhouse.c and clickhouse_read.c ---- */

/*
 * One request to ClickHouse's HTTP interface: with sql_in_url, the SQL goes in
 * the URL and body is its data (an INSERT); else body is the SQL. The answer
 * (may be NULL) is appended to out. 0; -EHOSTDOWN when ClickHouse cannot be
 * reached, times out, or fails an INSERT; -EIO when it refuses a query; err
 * says which, with ClickHouse's own message.
 */
int ch_http(struct chstore *c, const char *sql_in_url, const void *body, size_t len,
	    struct ch_buf *out, char *err, size_t errlen);
/* ch_http of a printf-formatted SQL statement with no data. */
int ch_sql(struct chstore *c, struct ch_buf *out, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

int ch_buf_put(struct ch_buf *b, const void *p, size_t n);
int ch_buf_printf(struct ch_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ch_buf_fini(struct ch_buf *b);

bool ch_set_has(const struct ch_set *s, uint64_t k);
int ch_set_add(struct ch_set *s, uint64_t k);
void ch_set_fini(struct ch_set *s);
/* The value of k, 0 when absent. */
uint32_t ch_map_get(const struct ch_map *m, uint64_t k);
int ch_map_put(struct ch_map *m, uint64_t k, uint32_t v);
void ch_map_fini(struct ch_map *m);

/* RowBinary reading: each returns false when the input is cut short. */
struct ch_rd {
	const uint8_t *p, *end;
};
bool ch_rd_u64(struct ch_rd *r, uint64_t *v);
bool ch_rd_varint(struct ch_rd *r, uint64_t *v);
bool ch_rd_str(struct ch_rd *r, const char **s, size_t *len);

/* The day (YYYY-MM-DD, UTC) of t_ns into out[11]. */
void ch_day_str(int64_t t_ns, char out[11]);

#endif /* HEARTH_STORE_CLICKHOUSE_H */
