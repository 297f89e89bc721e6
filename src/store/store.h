/*
 * store: hearth's profile store, one interface (struct store_ops, at the end of
 * this header) with two complete backends: the embedded, crash-safe SQLite
 * store in a directory (store__open; src/store/embedded/, described below and
 * in docs/storage.md) and ClickHouse (store__open_clickhouse;
 * src/store/clickhouse/, docs/clickhouse.md). Every other function here works
 * on either, through the backend's table.
 *
 * A series is a sorted label set plus a profile type. store__append_flat (the
 * one ingest path, reached through src/ingest) splits one flat profile (e.g. a
 * 10 s host profile from the agent, or one /ingest request) into series by the
 * labels of each sample plus the request's extra labels, interns
 * stacks and symbols once per store, and writes the rows (series, stack, values)
 * of the profile as one compressed columnar chunk in a single SQLite transaction
 * (WAL mode). Completed time windows are rolled up into coarser chunks so long
 * ranges read few rows. The layout is documented in docs/storage.md.
 *
 * Threads: every function may be called from any thread; calls are serialized by
 * a mutex inside the store (a long query delays an append, never corrupts it).
 *
 * Return contract: 0 (or a count) on success, -errno on failure. Functions that
 * take err/errlen write one sentence naming the problem there (err may be NULL).
 * Errors that mean "the caller's input is bad" (map them to HTTP 4xx):
 *   -EINVAL  malformed input (empty or invalid label name, empty profile type,
 *            profile without a time, from > until, ...)
 *   -E2BIG   a label set over opts.max_labels_per_series, or a label name/value
 *            longer than STORE_MAX_LABEL_LEN
 *   -EDQUOT  the append would create more series than opts.max_series
 * Anything else (-ENOMEM, -EIO, -ENOSPC, ...) is the server's problem (5xx);
 * -EUCLEAN means stored data does not decode (a corrupt intern-table key): the
 * store cannot serve that request. A chunk that does not decode is not an error:
 * scans skip it, count it (store_stats.corrupt_chunks), log it and move it to the
 * quarantine table (docs/storage.md, "Corruption").
 */
#ifndef HEARTH_STORE_H
#define HEARTH_STORE_H

#include "profile/profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Defaults used when a store_opts field is 0. */
#define STORE_DEFAULT_RETENTION_NS (7ll * 24 * 3600 * 1000000000ll) /* 7 days */
#define STORE_DEFAULT_MAX_SERIES   100000
#define STORE_DEFAULT_MAX_LABELS   32
/* Most entries of store_opts.sample_labels. */
#define STORE_MAX_SAMPLE_LABELS 16
/* Longest label name or value, in bytes (longer: -E2BIG). */
#define STORE_MAX_LABEL_LEN 1024
/* Label names: [a-zA-Z_][a-zA-Z0-9_.]*, like Prometheus plus '.' (OTel names). */

/* Label holding the profile type in series listings (it is not stored as a label). */
#define STORE_PROFILE_TYPE_LABEL "__profile_type__"
/* Profile type of hearth's CPU profiles: Pyroscope's ID of CPU time, whose values are
 * nanoseconds (values[1]; values[0] counts the samples). Stores written before
 * issue 16 hold their CPU series under "process_cpu:samples:count:cpu:nanoseconds". */
#define STORE_CPU_PROFILE_TYPE "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

struct store;

struct store_opts {
	int64_t retention_ns;	      /* 0: STORE_DEFAULT_RETENTION_NS; < 0: keep forever */
	size_t max_series;	      /* 0: STORE_DEFAULT_MAX_SERIES (whole store) */
	size_t max_labels_per_series; /* 0: STORE_DEFAULT_MAX_LABELS (extra + sample labels) */
	/*
	 * false (default): synchronous=FULL, an acknowledged append survives power loss.
	 * true: synchronous=NORMAL, it survives kill -9 of the process but the last
	 * commits may roll back on power loss (tests, benchmarks).
	 */
	bool no_fsync;
	/* true: store__append never rolls up on its own; call store__maintain. */
	bool no_auto_rollup;
	/*
	 * Names of the sample labels that become series labels, NULL-terminated
	 * (at most STORE_MAX_SAMPLE_LABELS; the producers' vocabulary, e.g.
	 * ingest_sample_labels); other sample labels are dropped (e.g. tid, which
	 * would make a series per thread). NULL: none. Borrowed: must outlive the
	 * store.
	 */
	const char *const *sample_labels;
	/*
	 * Most bytes the database and its WAL may take (the embedded store only;
	 * docs/storage.md, "Size budget"): past it, the oldest raw chunks are
	 * replaced by their rollups, then the oldest rollups are dropped. 0: none.
	 */
	uint64_t max_disk_bytes;
	/* Where the store logs what it skipped or repaired (a quarantined chunk);
	 * NULL: stderr. Borrowed: must outlive the store. */
	FILE *log;
};

/* A label of a series (or an extra label of an append). */
struct store_label {
	const char *name;
	const char *value;
};

/*
 * Opens (creating dir and the database when missing) the store in dir.
 * opts may be NULL (all defaults). The store owns dir until store__close: an
 * exclusive flock on dir/hearth.lock (docs/storage.md, "One owner per data
 * directory"). 0, -EINVAL (dir is not a directory), -EBUSY (another process,
 * or another open store, owns dir: err names its pid and command line), -EIO
 * (database unreadable or of an unknown version; err says which file),
 * -ENOMEM. On failure *out is NULL.
 */
int store__open(const char *dir, const struct store_opts *opts, struct store **out, char *err,
		size_t errlen);
/* Closes the database (checkpointing the WAL) and frees s. NULL is a no-op. */
void store__close(struct store *s);

/* What one append stored. */
struct store_append_result {
	size_t series;	   /* series the profile touched */
	size_t new_series; /* of which created by this append */
	size_t rows;	   /* stored rows: distinct (series, stack) pairs */
	int64_t samples;   /* sum of values[0] over the profile */
};

/*
 * Stores profile p at profile__time_ns(p) (must be > 0) with type profile_type
 * (NULL: STORE_CPU_PROFILE_TYPE). Each sample goes to the series made of `extra`
 * (e.g. host, kernel, __name__) plus the sample's labels named in
 * opts.sample_labels (numeric labels are printed in decimal); a sample label overrides an
 * extra label of the same name. Samples with no locations are stored as an
 * empty stack.
 *
 * Atomic and durable: when it returns 0 the profile is committed (survives
 * kill -9); on any error nothing of it is stored. res may be NULL.
 * Errors: see the file comment (-EINVAL, -E2BIG, -EDQUOT are the caller's).
 */
int store__append(struct store *s, const struct profile *p, const char *profile_type,
		  const struct store_label *extra, size_t n_extra, struct store_append_result *res,
		  char *err, size_t errlen);

/*
 * The store's one ingest path: store__append for a flat profile (a decoded
 * pprof, or profile__to_flat of a model), stored at f->time_ns. store__append
 * is this on profile__to_flat(p). Locations seen before are found by their
 * content hash straight from the flat arrays (the location cache), and stacks
 * a series used before by their location ids (the stack memo): see
 * docs/storage.md.
 */
int store__append_flat(struct store *s, const struct profile_flat *f, const char *profile_type,
		       const struct store_label *extra, size_t n_extra,
		       struct store_append_result *res, char *err, size_t errlen);

/*
 * One transaction for several appends (the profiles of one request): between
 * store__batch_begin and store__batch_end, this thread's store__append(_flat) calls
 * join it, and they are committed together (one fsync) or rolled back together, so
 * a request stores all of its profiles or none. Other writers wait meanwhile (the
 * store's lock is held): keep a batch to one request's bounded work. After an append
 * in the batch fails, the others are refused (-ECANCELED) and store__batch_end rolls
 * back whatever commit says. On ClickHouse both are no-ops (each insert is its own).
 * 0 or -errno (err says why).
 */
int store__batch_begin(struct store *s, char *err, size_t errlen);
int store__batch_end(struct store *s, bool commit, char *err, size_t errlen);

/*
 * Background work, bounded per call; call it every minute or so (store__append
 * also rolls up on its own unless opts.no_auto_rollup):
 *  - one bounded step of garbage collection: series no chunk references any
 *    more, and the stacks, locations, functions, mappings and strings only they
 *    used, are freed (a cycle spans several calls on a large store; their ids
 *    are given again to new entries),
 *  - rolls up every completed window that has no (or a stale) rollup (a window
 *    that fails is left pending; the others go on),
 *  - deletes chunks whose window ended before now_ns - retention,
 *  - keeps the database and WAL under opts.max_disk_bytes (docs/storage.md,
 *    "Size budget"; appends do it too once the files pass 15/16 of it).
 * *deleted (may be NULL) receives the number of chunks deleted. 0 or -errno.
 */
int store__maintain(struct store *s, int64_t now_ns, uint64_t *deleted);

/* What store__salvage copied. */
struct store_salvage_result {
	uint64_t rows;	      /* rows copied, all tables */
	uint64_t chunks;      /* of which chunks */
	uint64_t holes;	      /* unreadable stretches skipped (rows there are lost) */
	uint64_t lost_tables; /* tables whose schema could not be read at all */
	/* what was dropped to make the copy whole (a query meets no lost row) */
	uint64_t dropped_keys;	     /* intern rows naming lost rows, or that do not decode */
	uint64_t dropped_rows;	     /* raw chunk rows whose series or stack was lost */
	int64_t dropped_samples;     /* their samples (values[0]) */
	uint64_t chunks_rewritten;   /* chunks written again with their surviving rows */
	uint64_t chunks_dropped;     /* chunks left empty, and rollups that did not decode */
	uint64_t chunks_quarantined; /* raw chunks that did not decode */
	uint64_t windows_pending;    /* rollup windows to be built again */
	uint64_t series;	     /* series in the new store */
};
/*
 * Copies every row that can still be read from the store in dir (a database
 * SQLite finds corrupt, which store__open refuses) into a new store in to_dir
 * (created; it must not hold a database yet), then drops from the copy what
 * names lost rows, so that every query reads it. dir's database is opened
 * read-only; both directories are locked meanwhile (their hearth.lock). See
 * docs/storage.md, "Recovery". 0, -EEXIST, -ENOENT (no database in dir),
 * -EBUSY (a process owns either directory; err names it), -EIO (nothing
 * readable, or the new database failed; err says which file), -ENOMEM.
 */
int store__salvage(const char *dir, const char *to_dir, struct store_salvage_result *res, char *err,
		   size_t errlen);

/* For /metrics. */
struct store_stats {
	uint64_t series;	      /* live series (max_series counts these) */
	uint64_t profiles;	      /* appends stored (raw chunks, after retention) */
	uint64_t rows;		      /* raw rows stored */
	uint64_t samples;	      /* sum of values[0] over raw rows */
	uint64_t stacks;	      /* distinct stacks interned (live) */
	uint64_t locations, strings;  /* live entries of those intern tables */
	uint64_t intern_bytes;	      /* memory of the in-memory intern tables */
	uint64_t corrupt_chunks;      /* chunks quarantined because they did not decode */
	uint64_t corrupt_series_keys; /* series keys that do not decode: left out of queries */
	uint64_t gc_cycles;	      /* garbage collections completed since open */
	uint64_t gc_freed;	      /* intern-table entries they freed */
	uint64_t chunks;	      /* chunks of every level */
	uint64_t bytes_on_disk;	      /* database + WAL files */
	uint64_t disk_budget_bytes;   /* opts.max_disk_bytes (0: no budget) */
	uint64_t budget_downsampled;  /* chunks the budget deleted, a coarser rollup kept */
	uint64_t budget_dropped;      /* chunks the budget deleted with their data */
	int64_t oldest_ns, newest_ns; /* time span of the raw chunks (0 when empty) */
};
int store__stats(struct store *s, struct store_stats *out);

/* ---- read side, for src/query (the server should use query.h instead) ---- */

/* A series as listed: labels sorted by name, borrowed until the callback returns. */
struct store_series {
	uint64_t id; /* >= 1, stable for the life of the store */
	const char *profile_type;
	size_t n_labels;
	const struct store_label *labels;
};

/* Calls fn for every series in id order; a non-zero return of fn stops and is
 * returned. 0 or -errno. fn runs with the store locked: it must not call into it.
 * A series whose stored key does not decode is skipped (counted at open in
 * store_stats.corrupt_series_keys and logged there): one bad key must not make
 * every listing and merge fail. */
int store__series_foreach(struct store *s, int (*fn)(void *ctx, const struct store_series *ser),
			  void *ctx);

/* One stored row as a scan delivers it. */
struct store_row {
	uint64_t series_id;
	uint64_t stack_id;   /* store_builder__add / store__stack_locations resolve it */
	int64_t time_ns;     /* start of the chunk the row comes from */
	int64_t duration_ns; /* length of that chunk's window */
	int64_t values[PROFILE_N_VALUES];
};

/* Scan flags. */
#define STORE_SCAN_TOTALS 1u /* rows are per-series totals (stack_id 0): cheap for timelines */
/*
 * Hints of what the caller sums anyway, so a backend that aggregates where the
 * data is (ClickHouse) sends one row per group instead of every stored row.
 * The embedded store ignores them (its rows are finer; the caller's sums come
 * out the same). MERGE_TIME: the caller sums rows of one (series, stack) over
 * time: a row may cover the whole range. MERGE_SERIES: the caller sums by
 * stack only: a row may also cover several series (series_id then 0).
 */
#define STORE_SCAN_MERGE_TIME	2u
#define STORE_SCAN_MERGE_SERIES 4u

/* What store__scan reads. */
struct store_scan_query {
	const uint64_t *ids;	   /* series ids, sorted ascending; borrowed for the call */
	size_t n_ids;		   /* 0: nothing to scan */
	int64_t from_ns, until_ns; /* chunks starting in [from_ns, until_ns) */
	int64_t max_window_ns;	   /* > 0: no chunk longer than this (timelines: their step) */
	unsigned flags;		   /* STORE_SCAN_* */
};

/* Receives a batch of rows (borrowed for the call); non-zero stops the scan. */
typedef int (*store_rows_fn)(void *ctx, const struct store_row *rows, size_t n);

/*
 * Calls fn with batches of rows of the query's series whose chunks start in
 * [from_ns, until_ns). The coarsest rollups that fit in the range are used,
 * raw chunks at its edges. A non-zero return of fn stops the scan and is
 * returned. 0, -EINVAL (from_ns > until_ns) or -errno. fn runs with the store
 * locked: it must not call into the store.
 */
int store__scan(struct store *s, const struct store_scan_query *q, store_rows_fn fn, void *ctx);

/*
 * Rebuilds stored stacks into a profile: a builder translates store ids to the
 * profile's ids once (mappings, functions, locations), so adding many stacks
 * costs one lookup per frame. The profile is borrowed and must outlive it.
 */
struct store_builder;
/* 0 or -ENOMEM. */
int store_builder__new(struct store *s, struct profile *p, struct store_builder **out);
void store_builder__free(struct store_builder *b);
/*
 * Adds values to the sample of stack stack_id in the builder's profile, with
 * the given sample labels (may be NULL/0). 0, -ENOENT (unknown stack),
 * -EUCLEAN (corrupt stored key), -ENOMEM.
 */
int store_builder__add(struct store_builder *b, uint64_t stack_id,
		       const int64_t values[PROFILE_N_VALUES], const struct profile_label *labels,
		       size_t n_labels);
/* One sample for store_builder__append; labels borrowed for the call. */
struct store_builder_sample {
	uint64_t stack_id;
	int64_t values[PROFILE_N_VALUES];
	const struct profile_label *labels;
	size_t n_labels;
};

/*
 * store_builder__add for n samples, under one lock, for a caller that knows
 * its (stack_id, labels) pairs are distinct (e.g. one per stored (series, stack)
 * pair with sample labels no two series share): while *distinct is true each
 * sample is appended without looking for an equal one (profile__append_sample).
 * Two store locations can still become one profile location (inline chains
 * deeper than 64 lines are cut), and then two stacks one location list: the
 * builder sets *distinct to false, and that and every later sample go through
 * profile__add_sample. The profile is the one store_builder__add would make.
 * Same returns; on error, some of the samples may have been added.
 */
int store_builder__append(struct store_builder *b, const struct store_builder_sample *sm, size_t n,
			  bool *distinct);

/*
 * The profile's id of store location loc_id (added to the builder's profile,
 * with its mapping and functions, on first use). 0, -ENOENT (unknown id),
 * -EUCLEAN (corrupt stored key), -ENOMEM.
 */
int store_builder__location(struct store_builder *b, uint64_t loc_id, uint64_t *out);

/*
 * The store location ids of n stacks, leaf first, one lock for all: stack i's
 * ids are (*locs)[off[i] .. off[i+1]) (off has n + 1 entries). *locs (malloc'd,
 * *cap entries, the caller frees it) is grown as needed. 0, -ENOENT (unknown
 * stack), -EUCLEAN (corrupt key), -ENOMEM.
 */
int store__stack_locations(struct store *s, const uint64_t *stack_ids, size_t n, size_t *off,
			   uint64_t **locs, size_t *cap);

/* The highest stack id the store has given (stack ids are dense, 1..n). */
uint64_t store__max_stack_id(struct store *s);

/* ---- the ClickHouse backend (clickhouse/; docs/clickhouse.md) ---- */

#define STORE_CLICKHOUSE_SCHEME "clickhouse://"
/*
 * Opens the store kept in a ClickHouse database, from a URL
 * clickhouse://HOST:PORT/DATABASE[?cluster=NAME&replicated=1&timeout=SECONDS]
 * (PORT: the HTTP interface's; cluster: Distributed tables over that cluster
 * of the server's remote_servers; replicated: ReplicatedMergeTree tables, the
 * server configured with ZooKeeper and {shard}/{replica} macros; timeout of
 * each request, default 10 s). Creates
 * the database and tables when missing. Every store__ function of this header
 * works on it except store__salvage, with two differences: -EHOSTDOWN is a
 * further error (ClickHouse cannot be reached, did not answer in time, or
 * failed an insert: nothing was stored; retry later, HTTP 503), and
 * opts.max_series and no_fsync do not apply (docs/clickhouse.md). 0, -EINVAL
 * (a bad URL: err names what), -EIO (a database of another schema version),
 * -EHOSTDOWN, -ENOMEM.
 */
int store__open_clickhouse(const char *url, const struct store_opts *opts, struct store **out,
			   char *err, size_t errlen);
/* Whether spec names a ClickHouse store (begins with STORE_CLICKHOUSE_SCHEME). */
bool store__is_clickhouse(const char *spec);

/*
 * Whether the store can serve now: 0, or -errno with err saying why (ClickHouse
 * cannot be reached: -EHOSTDOWN; the embedded store's database does not answer:
 * -EIO). For /healthz and /metrics; cheap on the embedded store, one round trip
 * on ClickHouse.
 */
int store__health(struct store *s, char *err, size_t errlen);
/* The backend's name: "embedded" or "clickhouse" (logs, /metrics). */
const char *store__name(const struct store *s);

/*
 * Label names of the series q->ids (sorted ascending) that have data in
 * [q->from_ns, q->until_ns), STORE_PROFILE_TYPE_LABEL among them: fn is called
 * once per distinct name, in no particular order, the name borrowed for the
 * call; a non-zero return of fn stops and is returned. q->flags and
 * q->max_window_ns are ignored. 0, -EINVAL (from > until) or -errno.
 * fn must not call into the store.
 */
int store__label_names(struct store *s, const struct store_scan_query *q,
		       int (*fn)(void *ctx, const char *name), void *ctx);
/* The same for the distinct values of label name (STORE_PROFILE_TYPE_LABEL: the
 * profile types) on those series; a series without the label gives none. */
int store__label_values(struct store *s, const char *name, const struct store_scan_query *q,
			int (*fn)(void *ctx, const char *value), void *ctx);

/* ---- the storage interface: what a backend implements ---- */

/*
 * A backend is one table of operations, as SQLite's sqlite3_vfs: the store__
 * and store_builder__ functions above only call through s->ops (src/store/
 * core.c) and never ask which backend they have. Two implement it: the
 * embedded SQLite store (src/store/embedded/, opened by store__open) and
 * ClickHouse (src/store/clickhouse/, store__open_clickhouse). Each operation
 * has the contract of the function of the same name above; every entry is set.
 * A backend's store struct holds a struct store (its ops pointer), which the
 * backend converts back to its own (container_of), and its builder begins with
 * a struct store_builder (the core allocates it: builder_size). The table is
 * static: it outlives every store.
 */
/* The type of each operation (a backend declares its functions with them). */
typedef void store_close_fn(struct store *s);
typedef int store_append_flat_fn(struct store *s, const struct profile_flat *f,
				 const char *profile_type, const struct store_label *extra,
				 size_t n_extra, struct store_append_result *res, char *err,
				 size_t errlen);
typedef int store_batch_begin_fn(struct store *s, char *err, size_t errlen);
typedef int store_batch_end_fn(struct store *s, bool commit, char *err, size_t errlen);
typedef int store_maintain_fn(struct store *s, int64_t now_ns, uint64_t *deleted);
typedef int store_stats_fn(struct store *s, struct store_stats *out);
typedef int store_health_fn(struct store *s, char *err, size_t errlen);
typedef int store_series_foreach_fn(struct store *s,
				    int (*fn)(void *ctx, const struct store_series *ser),
				    void *ctx);
/* store__label_names (name NULL) and store__label_values, with q->n_ids > 0 */
typedef int store_labels_fn(struct store *s, const char *name, const struct store_scan_query *q,
			    int (*fn)(void *ctx, const char *str), void *ctx);
typedef int store_scan_fn(struct store *s, const struct store_scan_query *q, store_rows_fn fn,
			  void *ctx);
typedef int store_stack_locations_fn(struct store *s, const uint64_t *stack_ids, size_t n,
				     size_t *off, uint64_t **locs, size_t *cap);
typedef uint64_t store_max_stack_id_fn(struct store *s);
typedef void store_builder_fini_fn(struct store_builder *b);
typedef int store_builder_add_fn(struct store_builder *b, uint64_t stack_id,
				 const int64_t values[PROFILE_N_VALUES],
				 const struct profile_label *labels, size_t n_labels);
typedef int store_builder_append_fn(struct store_builder *b, const struct store_builder_sample *sm,
				    size_t n, bool *distinct);
typedef int store_builder_location_fn(struct store_builder *b, uint64_t loc_id, uint64_t *out);

struct store_ops {
	const char *name; /* "embedded", "clickhouse" */
	store_close_fn *close;
	store_append_flat_fn *append_flat;
	store_batch_begin_fn *batch_begin;
	store_batch_end_fn *batch_end;
	store_maintain_fn *maintain;
	store_stats_fn *stats;
	store_health_fn *health;
	store_series_foreach_fn *series_foreach;
	store_labels_fn *labels;
	store_scan_fn *scan;
	store_stack_locations_fn *stack_locations;
	store_max_stack_id_fn *max_stack_id;
	/*
	 * store_builder__new allocates builder_size zeroed bytes (the backend's
	 * builder, a struct store_builder first) and sets its s and p, as SQLite's
	 * core allocates szOsFile bytes for a VFS's file; store_builder__free calls
	 * builder_fini (which frees what the backend added), then frees it.
	 */
	size_t builder_size;
	store_builder_fini_fn *builder_fini;
	store_builder_add_fn *builder_add;
	store_builder_append_fn *builder_append;
	store_builder_location_fn *builder_location;
};

/*
 * A backend's operations are the functions P_close, P_append_flat, ... for its
 * prefix P (one per entry above): STORE_OPS_DECLARE(P) declares them (in the
 * backend's private header) and STORE_OPS(P, NAME, BUILDER) is its table, so a
 * backend that lacks one does not compile, as SQLite's os_unix.c fills each of
 * its VFS tables with one macro.
 */
#define STORE_OPS_DECLARE(P)                                                                       \
	store_close_fn P##_close;                                                                  \
	store_append_flat_fn P##_append_flat;                                                      \
	store_batch_begin_fn P##_batch_begin;                                                      \
	store_batch_end_fn P##_batch_end;                                                          \
	store_maintain_fn P##_maintain;                                                            \
	store_stats_fn P##_stats;                                                                  \
	store_health_fn P##_health;                                                                \
	store_series_foreach_fn P##_series_foreach;                                                \
	store_labels_fn P##_labels;                                                                \
	store_scan_fn P##_scan;                                                                    \
	store_stack_locations_fn P##_stack_locations;                                              \
	store_max_stack_id_fn P##_max_stack_id;                                                    \
	store_builder_fini_fn P##_builder_fini;                                                    \
	store_builder_add_fn P##_builder_add;                                                      \
	store_builder_append_fn P##_builder_append;                                                \
	store_builder_location_fn P##_builder_location
#define STORE_OPS(P, NAME, BUILDER)                                                                \
	{                                                                                          \
		.name = NAME, .close = P##_close, .append_flat = P##_append_flat,                  \
		.batch_begin = P##_batch_begin, .batch_end = P##_batch_end,                        \
		.maintain = P##_maintain, .stats = P##_stats, .health = P##_health,                \
		.series_foreach = P##_series_foreach, .labels = P##_labels, .scan = P##_scan,      \
		.stack_locations = P##_stack_locations, .max_stack_id = P##_max_stack_id,          \
		.builder_size = sizeof(BUILDER), .builder_fini = P##_builder_fini,                 \
		.builder_add = P##_builder_add, .builder_append = P##_builder_append,              \
		.builder_location = P##_builder_location,                                          \
	}

/* What the core sees of a store and of a builder: the backend's table. */
struct store {
	const struct store_ops *ops; /* static: outlives the store */
};
struct store_builder {
	struct store *s;   /* borrowed: the store the builder reads */
	struct profile *p; /* borrowed: the profile it adds to */
};

#endif /* HEARTH_STORE_H */
