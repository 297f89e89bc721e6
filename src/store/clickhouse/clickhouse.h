/*
 * The ClickHouse backend's internals (clickhouse.c: connection, schema, ingest
 * and the table of operations; clickhouse_read.c: pushed-down scans, label
 * listings, the stack cache and the builder). Private to src/store/clickhouse/:
 * the rest of hearth sees a struct store opened with store__open_clickhouse,
 * whose store__ functions call this backend's table (ch_ops). The schema and
 * its reasons are in docs/clickhouse.md.
 */
#ifndef HEARTH_STORE_CLICKHOUSE_H
#define HEARTH_STORE_CLICKHOUSE_H

#include "store/store.h"
#include "base/base.h"

#include <errno.h>
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

/* A set of 64-bit keys: the keys in insertion order, indexed by base_hmap. */
struct ch_set {
	uint64_t *k; /* k[0 .. n) */
	size_t n, cap;
	struct base_hmap ix; /* hash of k[i] -> i */
};

/* A map of 64-bit keys to 32-bit values: v[i] is the value of keys.k[i]. */
struct ch_map {
	struct ch_set keys;
	uint32_t *v;
	size_t cap;
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
	struct store store; /* ops: ch_ops; first, see ch_of */
	char *base;	    /* "http://HOST:PORT/" (owned) */
	char *db;	    /* database name (owned; [A-Za-z0-9_] only) */
	char *cluster;	    /* Distributed tables over this cluster; NULL: one server (owned) */
	bool replicated;    /* Replicated*MergeTree tables (ZooKeeper; docs/clickhouse.md) */
	char *where;	    /* "HOST:PORT/DB" for messages (owned) */
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
};

/* The ClickHouse store that s is (s->ops == &ch_ops). */
static inline struct chstore *ch_of(struct store *s)
{
	return (struct chstore *)((char *)s - offsetof(struct chstore, store));
}

/* The backend's operations chstore_close ... chstore_builder_location (struct
 * store_ops; clickhouse.c holds the table, clickhouse_read.c the read side).
 * Same contracts as the store__ functions, plus -EHOSTDOWN: ClickHouse did not
 * answer, answered too late or failed an insert; err says which. */
extern const struct store_ops ch_ops;
STORE_OPS_DECLARE(chstore);

/* The builder: cached locations into a profile (the core allocates it). */
struct ch_builder {
	struct store_builder base; /* first: the core's allocation starts here */
	uint32_t *xl;		   /* local location id -> profile id; 0: not yet */
	size_t xl_cap;
};

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
