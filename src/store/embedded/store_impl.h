/*
 * Private to the embedded store (src/store/embedded/): the in-memory intern
 * tables, the chunk codec, the rollup levels and the store struct. Other
 * modules include only store.h; the store's core (core.c) neither.
 */
#ifndef HEARTH_STORE_IMPL_H
#define HEARTH_STORE_IMPL_H

#include "store/store.h"
#include "base/base.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <sqlite3.h>

/* ---- intern table: byte keys -> ids 1..n, with commit/rollback ---- */

/*
 * Keys live in buf (id i's at off[i-1], klen[i-1] bytes); entries added since
 * the last commit are "pending" (pend lists them): rollback drops them (and
 * rebuilds the index, a rare path). GC frees ids (klen STORE_ITAB_FREE), which
 * are given again, lowest first; see itab.c.
 */
#define STORE_ITAB_FREE UINT32_MAX
/* klen of an id missing from the database but named by a stored key (a store
 * salvaged by hearth recover): never given again (see store_check_refs). */
#define STORE_ITAB_LOST (UINT32_MAX - 1)
struct store_itab {
	uint8_t *buf;
	size_t len, cap;
	size_t *off;	  /* off[i]: start of the key of id i+1 */
	uint32_t *klen;	  /* klen[i]: its length, or STORE_ITAB_FREE */
	uint64_t *hashes; /* hashes[i]: its base_hash_bytes (in memory only) */
	size_t n, cap_n;  /* ids 1..n given (some may be free); cap_n: of off, klen, hashes */
	size_t live;	  /* ids in use */
	uint32_t *free;	  /* free ids <= n, highest first */
	size_t nfree, cap_free;
	uint32_t *pend; /* ids given since the last commit, in order */
	size_t npend, cap_pend;
	size_t nflushed; /* of pend, written to the database (a batch writes several times) */
	size_t committed, committed_len; /* n and len at the last commit */
	uint64_t *slots;		 /* (hash tag | id) or 0; nslots is a power of two */
	size_t nslots;
};

void store_itab__fini(struct store_itab *t);
/* Id of key, adding it when new (*added says so; may be NULL). 0 or -ENOMEM. */
int store_itab__intern(struct store_itab *t, const void *key, size_t len, uint64_t *id,
		       bool *added);
/* Id of key or 0. */
uint64_t store_itab__find(const struct store_itab *t, const void *key, size_t len);
/* Key of id; NULL when out of range or free. */
const uint8_t *store_itab__key(const struct store_itab *t, uint64_t id, size_t *len);
/* Whether id is in use. */
static inline bool store_itab__live(const struct store_itab *t, uint64_t id)
{
	return id && id <= t->n && t->klen[id - 1] < STORE_ITAB_LOST;
}
void store_itab__commit(struct store_itab *t);
int store_itab__rollback(struct store_itab *t);
/* At open: key as id (ids ascending; a gap is a freed id). 0, -EINVAL (id not
 * ascending, or a duplicate key), -ENOMEM. store_itab__loaded ends the load. */
int store_itab__load(struct store_itab *t, uint64_t id, const void *key, size_t len);
int store_itab__loaded(struct store_itab *t);
/* Retires every live id with dead[id] != 0 (id < n_dead), between
 * transactions: no longer found nor live, not given again yet (klen
 * STORE_ITAB_LOST); the keys are compacted away. The count retired, -EBUSY
 * (pending entries), -ENOMEM (the index could not be rebuilt: still correct). */
int store_itab__retire(struct store_itab *t, const uint8_t *dead, size_t n_dead);
/* Frees retired ids (their rows are gone from the database): given again from
 * now on; trailing free ids dropped, arrays shrunk. 0, -EBUSY, -ENOMEM. */
int store_itab__release(struct store_itab *t, const uint32_t *ids, size_t n);
/* Bytes of memory the table holds. */
size_t store_itab__bytes(const struct store_itab *t);
/* Marks the ids with ref[id] != 0 (id < n_ref) that are not live as lost: never
 * given again. The count marked, or -ENOMEM. */
int store_itab__keep_lost(struct store_itab *t, const uint8_t *ref, size_t n_ref);

/* ---- rows and chunks ---- */

/* One row of a chunk. */
struct store_crow {
	uint64_t series_id, stack_id;
	int64_t v[PROFILE_N_VALUES];
};

/* Growing array of rows. */
struct store_rows {
	struct store_crow *r;
	size_t n, cap;
};
int store_rows__push(struct store_rows *a, const struct store_crow *row);
void store_rows__fini(struct store_rows *a);
/* Sorts by (series, stack) and sums duplicates in place. */
void store_rows__sort_merge(struct store_rows *a);

/*
 * Encodes sorted, merged rows as a compressed columnar chunk (docs/storage.md):
 * *data (malloc'd) is the zlib-compressed body, *raw_len its inflated size;
 * *totals (malloc'd) the per-series totals column, uncompressed.
 * period is the hint for values[1] (values[1] - values[0]*period is stored).
 */
int store_chunk_encode(const struct store_rows *rows, int64_t period, uint8_t **data,
		       size_t *data_len, size_t *raw_len, uint8_t **totals, size_t *totals_len);
/*
 * Decodes a chunk body, appending to out only the rows of series in ids
 * (sorted; NULL = all). scratch is reused between calls. 0, -EINVAL (corrupt), -ENOMEM.
 */
int store_chunk_decode(const uint8_t *data, size_t data_len, size_t raw_len, const uint64_t *ids,
		       size_t n_ids, struct store_rows *out, uint8_t **scratch,
		       size_t *scratch_cap);
/* Decodes a totals column (varint inflated length + zlib; rows with stack_id 0)
 * for series in ids. */
int store_totals_decode(const uint8_t *t, size_t len, const uint64_t *ids, size_t n_ids,
			struct store_rows *out);

/* ---- rollup levels ---- */

/* Level 0 holds one raw chunk per append; level L > 0 one chunk per window. */
#define STORE_LEVELS 5
extern const int64_t
    store_level_window_ns[STORE_LEVELS]; /* [0] = 0 (raw), 1 min, 10 min, 1 h, 6 h */
/* Start of the coarsest window holding t (t > 0). */
static inline int64_t store_first_window(int64_t t)
{
	return t - t % store_level_window_ns[STORE_LEVELS - 1];
}
/* A window is rolled up once data this much newer than its end has arrived. */
#define STORE_ROLLUP_GRACE_NS (60ll * 1000000000ll)

/* ---- location cache (loccache.c): content hash -> store location id ---- */

/* Not a base_hmap: the 128-bit key is the whole entry (no element array for an
 * index to point into), and the probe must stay one cache line, not two. */
struct store_loccache {
	struct store_loccache_slot {
		uint64_t h[2];
		uint64_t id; /* 0 = empty */
	} * slots;
	size_t cap, n; /* cap: power of two or 0 */
};
/* Id cached for the 128-bit hash h, or 0. */
uint64_t store_loccache_find(const struct store_loccache *c, const uint64_t h[2]);
/* Starts loading the slot where h's probe begins (find it a little later). */
static inline void store_loccache_prefetch(const struct store_loccache *c, const uint64_t h[2])
{
	if (c->cap)
		__builtin_prefetch(&c->slots[h[0] & (c->cap - 1)]);
}
/* Caches id for h. 0 or -ENOMEM. */
int store_loccache_put(struct store_loccache *c, const uint64_t h[2], uint64_t id);
/* Forgets every entry (after a rollback: its ids may be given again). */
void store_loccache_clear(struct store_loccache *c);
void store_loccache_fini(struct store_loccache *c);
/*
 * Content hashes of the cache's keys start from these seeds; the model path
 * (append.c) and the flat path (append_flat.c) must fold the same bytes in the
 * same order after them (a mapping: start, limit, offset, file, build-id; a
 * function: name, system name, file name; strings with their NUL), so that
 * either path finds what the other cached.
 */
#define STORE_LOCCACHE_MAPPING_SEED0  0x6d61707069ull
#define STORE_LOCCACHE_MAPPING_SEED1  0x6e67ull
#define STORE_LOCCACHE_FUNCTION_SEED0 0x66756e63ull
#define STORE_LOCCACHE_FUNCTION_SEED1 0x74696f6eull
/* Folds n bytes at p into the two hashes h. */
void store_loccache_mix(uint64_t h[2], const void *p, size_t n);

/* ---- stack memo (stackmemo.c): (series, store location ids) -> (stack, local id) ---- */

/* Most entries it holds; past this it starts over empty (see stackmemo.c). */
#define STORE_STACKMEMO_MAX (1u << 20)

/* Not a base_hmap, for the location cache's reason: the slot is the entry. */
struct store_stackmemo {
	struct store_stackmemo_slot {
		uint64_t h[2];	/* 128-bit hash of the series and the location ids */
		uint64_t stack; /* global stack id; 0 = empty slot */
		uint32_t series, local;
	} * slots;
	size_t cap, n; /* cap: power of two or 0 */
};
/*
 * Doubles a 128-bit-keyed table (the location cache's or the stack memo's
 * slots: uint64_t h[2], then a word that is 0 in an empty slot; size bytes
 * each), from 4096 slots, reinserting every entry by h[0]. 0 or -ENOMEM (the
 * table is unchanged).
 */
int store_fp_grow(void **slots, size_t *cap, size_t size);
/* Hash of a series' stack: the series, then its location ids, leaf first. */
void store_stackmemo_hash(uint64_t series, const uint64_t *locs, size_t n, uint64_t h[2]);
/* The slot of h for series, or NULL. */
const struct store_stackmemo_slot *store_stackmemo_find(const struct store_stackmemo *m,
							const uint64_t h[2], uint64_t series);
/* Starts loading the slot where h's probe begins. */
static inline void store_stackmemo_prefetch(const struct store_stackmemo *m, const uint64_t h[2])
{
	if (m->cap)
		__builtin_prefetch(&m->slots[h[0] & (m->cap - 1)]);
}
/* Remembers (stack, local) for (series, h). 0 or -ENOMEM. */
int store_stackmemo_put(struct store_stackmemo *m, const uint64_t h[2], uint64_t series,
			uint64_t stack, uint64_t local);
/* Forgets every entry (after a rollback: its ids may be given again). */
void store_stackmemo_clear(struct store_stackmemo *m);
void store_stackmemo_fini(struct store_stackmemo *m);

/* ---- append internals (append.c, append_flat.c) ---- */

/* Per-append state: id translations and scratch (append.c). */
struct store_append_ctx {
	struct estore *s;
	const struct profile_flat *f; /* the profile being stored */
	int64_t time_ns, duration_ns, period_ns;
	const char *type;
	const struct store_label *extra;
	size_t n_extra;
	/* flat index + 1 -> store id, 0 = not yet */
	uint64_t *map_ids, *func_ids, *loc_ids;
	uint64_t *str_ids; /* flat string index -> store string id, 0 = not yet */
	/* flat index + 1 -> content hash (loccache.c), {0, 0} = not yet */
	uint64_t (*map_h)[2], (*func_h)[2];
	/*
	 * Series by the bytes of the sample's label array: the samples of one
	 * process carry the same string indices, and the series key (labels
	 * sorted, joined, looked up) is built once per label set instead of once
	 * per sample. Indices are compared, never dereferenced: equal ones in one
	 * profile are equal strings.
	 * Not a base_hmap: sized once per append (2 slots per sample), never
	 * grown, and the slot is the whole entry.
	 */
	struct store_series_memo {
		const void *labels; /* borrowed from f */
		size_t bytes;
		uint64_t id; /* 0: empty slot */
	} * memo;
	size_t memo_cap; /* power of two */
	uint8_t *key;	 /* scratch for keys */
	size_t key_cap;
	size_t new_series;
	char *err;
	size_t errlen;
};

/* Writes one formatted sentence into err (NULL or errlen 0: nothing). */
void store_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* a->key holds at least need bytes. 0 or -ENOMEM. */
int store_append_key_room(struct store_append_ctx *a, size_t need);
/* The memo slot of a sample's label array (its bytes): its own, or the empty
 * one where it goes. */
struct store_series_memo *store_append_memo_slot(struct store_append_ctx *a, const void *labels,
						 size_t bytes);
/* Series id of a sample's labels, sorted as the model sorts them
 * (profile_label__cmp), with the append's extra labels: the series key interned, limits
 * checked. 0, -E2BIG, -EDQUOT (a->err says why), -ENOMEM. */
int store_append_series(struct store_append_ctx *a, const struct profile_label *labels,
			size_t n_labels, uint64_t *out);
/* Series-local id of the stack of these store location ids (leaf first) in
 * series, h its store_stackmemo_hash: from the stack memo, or interned. */
int store_append_stack(struct store_append_ctx *a, uint64_t series, const uint64_t *ids, size_t n,
		       const uint64_t h[2], uint64_t *local);
/* Rows of a->f (the flat path, append_flat.c), sorted and merged; *samples is
 * the sum of values[0]. 0 or -errno (a->err says why for the caller's errors). */
int store_append_flat_rows(struct store_append_ctx *a, struct store_rows *rows, int64_t *samples);

/* ---- the store ---- */

enum store_tab {
	STORE_T_STRINGS,
	STORE_T_MAPPINGS,
	STORE_T_FUNCTIONS,
	STORE_T_LOCATIONS,
	STORE_T_STACKS,
	STORE_T_SERIES,
	STORE_T_PAIRS,
	STORE_N_TABS
};
extern const char *const store_tab_names[STORE_N_TABS];

struct estore {
	struct store base; /* ops: store_embedded_ops; first, see estore_of */
	pthread_mutex_t lock;
	/*
	 * store__batch_begin..end: one transaction held by batch_owner (under lock) that
	 * its appends join; the figures below it restored if it rolls back. batch and
	 * batch_owner are read by other threads' appends (atomic).
	 */
	bool batch, batch_failed;
	pthread_t batch_owner;
	struct store_stats batch_stats;
	int64_t batch_newest_ns, batch_first_ns;
	sqlite3 *db;
	int lock_fd; /* DIR/hearth.lock, flock'ed (lock.c); -1 until taken */
	char *dir, *path;
	struct store_opts opts;
	size_t n_sample_labels; /* entries of opts.sample_labels */
	struct store_itab tabs[STORE_N_TABS];
	struct store_stats stats; /* kept current; bytes_on_disk read on demand */
	int64_t newest_ns;	  /* newest raw chunk start */
	/*
	 * No chunk of any level starts before this (the oldest chunk's start aligned
	 * down to the coarsest window; 0 when empty): scans start here, so from=0
	 * costs what from=<first data> costs. Only lowered while the store is open
	 * (retention leaves it low, which is safe).
	 */
	int64_t first_ns;
	sqlite3_stmt *ins_tab[STORE_N_TABS], *ins_chunk, *ins_pending, *del_rollup, *sel_rollup;
	/*
	 * Series-local stack ids: chunks store, per series, the index of a stack in
	 * that series' own list (STORE_T_PAIRS keys are (series, stack) in first-seen
	 * order), so the deltas of the stack column stay small whatever the number of
	 * stacks in the store. local[series] lists its stacks; pair_local[pair id]
	 * is the local index of a pair.
	 */
	struct store_local {
		uint64_t *stacks;
		size_t n, cap;
	} * local;
	size_t local_cap; /* entries of local (series ids 0..local_cap-1) */
	uint32_t *pair_local;
	size_t pair_local_cap;
	struct store_loccache loccache;	  /* see loccache.c */
	struct store_stackmemo stackmemo; /* see stackmemo.c */
	/* The garbage collection's cycle (gc.c). */
	struct store_gc {
		bool marking;	 /* a cycle is marking chunks */
		bool failed;	 /* a mark ran out of memory: the cycle starts over */
		int64_t cursor;	 /* chunks with id <= cursor are marked */
		int64_t last;	 /* the highest chunk id when the cycle began */
		uint8_t *series; /* series marked live, by id */
		size_t cap;
		/* retired ids whose rows are still to be deleted, per table; done
		 * ones before at[t] */
		uint32_t *dying[STORE_N_TABS];
		size_t n_dying[STORE_N_TABS], at[STORE_N_TABS];
	} gc;
	/* chunks a maintenance tick marks (and 16 times as many rows it deletes); 0: the
	 * defaults (tests set it) */
	size_t gc_budget;
	bool salvaged; /* meta.salvaged: written by store__salvage (hearth recover) */
	/* budget.c: over the budget with nothing left to delete, the size at which an
	 * append tries again; 0 otherwise */
	uint64_t budget_warned_disk;
};

/* One step of the garbage collection (gc.c), from store__maintain. 0 or -errno. */
int store_gc_step(struct estore *s);
/* The write barrier: a chunk of these rows is being stored. */
void store_gc_note_rows(struct estore *s, const struct store_rows *rows);
void store_gc_fini(struct estore *s);
/*
 * At open: ids that stored keys (and, in a salvaged store, chunks) name but the tables
 * lack (lost rows of a salvaged database) are kept out of reuse, so that a new
 * entry never takes the meaning of a lost one. Logged. 0 or -errno.
 */
int store_check_refs(struct estore *s);

/* Local id of stack in series (adding the pair when new). 0 or -ENOMEM. */
int store_local_id(struct estore *s, uint64_t series, uint64_t stack, uint64_t *local);
/* Global stack id of a local id; 0 when out of range (corrupt chunk). */
static inline uint64_t store_global_stack(const struct estore *s, uint64_t series, uint64_t local)
{
	if (series >= s->local_cap || local >= s->local[series].n)
		return 0;
	return s->local[series].stacks[local];
}
/* Drops the local ids of pending pairs (before the pairs table rolls back). */
void store_local_rollback(struct estore *s);
/* Rebuilds the local ids from the pairs table (at open). 0, -EINVAL, -ENOMEM. */
int store_local_load(struct estore *s);
void store_local_fini(struct estore *s);

/* The size budget (budget.c). Before the schema: auto_vacuum for a new store, the
 * WAL's bound. 0 or -EIO. */
int store_budget_pragmas(struct estore *s, char *err, size_t errlen);
/* At open, after the load: converts an older store to incremental vacuum (one
 * VACUUM) and brings the store under its budget. 0: failures are logged, and the
 * store opens all the same. */
int store_budget_open(struct estore *s, char *err, size_t errlen);
/* Deletes chunks when the files are over the budget's high mark (or always with
 * force) until under the low mark, then shrinks the files. 0 or -errno. */
int store_budget_enforce(struct estore *s, bool force);
/* store_budget_enforce after a committed append; errors are logged only. */
void store_budget_after_append(struct estore *s);
/* Reloads the counters of stats from the chunks table (store.c). */
void store_reload_stats(struct estore *s);

/* One owner per data directory (lock.c): an exclusive flock on DIR/hearth.lock,
 * into *fd, with this process's pid and command line written there. 0; -EBUSY
 * when another process holds it (err names it: pid, command line); -errno. */
int store_dir_lock(const char *dir, int *fd, char *err, size_t errlen);
/* Releases it (fd < 0: nothing). */
void store_dir_unlock(int fd);

/* Second half of store__salvage (repair.c), in the new database's open
 * transaction: drops what names lost rows, rewrites the chunks to their
 * surviving rows, marks lost rollups pending; counts into res.
 * pairs_lost_from: the lowest series_stacks id that may be lost (INT64_MAX:
 * none). 0, -EIO, -ENOMEM. */
int store_salvage_repair(sqlite3 *db, int64_t pairs_lost_from, struct store_salvage_result *res);

/* One line to opts.log (stderr by default), prefixed with the database's path. */
void store_log(struct estore *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Moves a chunk that does not decode to the quarantine table (logged, counted in
 * stats.corrupt_chunks); a rollup's window becomes pending again. 0 or -EIO. */
int store_quarantine(struct estore *s, int64_t id, int level, int64_t t0, const char *reason);

/* Runs SQL with no result; 0 or -EIO (err gets sqlite's message). */
int store_exec(struct estore *s, const char *sql, char *err, size_t errlen);
/* The first column of the first row of sql as an integer; -1 when sql fails or
 * returns no row. */
int64_t store_query_int(struct estore *s, const char *sql);
/* Writes the pending entries of every intern table; 0 or -EIO. */
int store_flush_tabs(struct estore *s);
void store_tabs_commit(struct estore *s);
int store_tabs_rollback(struct estore *s);
/* Inserts one chunk row. 0 or -EIO. */
int store_insert_chunk(struct estore *s, int level, int64_t t0, int64_t dur,
		       const struct store_rows *rows, int64_t period);
/* Rolls up complete windows (newest data >= window end + grace). */
int store_rollup_due(struct estore *s, int64_t now_ns);
/*
 * Adds rows (a raw chunk's: sorted, merged, series-local stack ids) into the
 * rollup of window t0 at level, in the caller's transaction. *found: the window
 * had a rollup, which now holds rows too; false: it had none (the caller marks
 * it pending), or it did not decode (quarantined, and pending again). 0, -EIO,
 * -ENOMEM.
 */
int store_rollup_add(struct estore *s, int level, int64_t t0, const struct store_rows *rows,
		     bool *found);

/* ---- the embedded store's operations (struct store_ops; store.c holds the table) ---- */

extern const struct store_ops store_embedded_ops;
/* The embedded store that s is (s->ops == &store_embedded_ops). */
static inline struct estore *estore_of(struct store *s)
{
	return (struct estore *)((char *)s - offsetof(struct estore, base));
}
/* Its operations, estore_close ... estore_builder_location (append.c, build.c,
 * labels.c, scan.c, store.c). */
STORE_OPS_DECLARE(estore);

/* The builder (build.c): the core allocates it (store_ops.builder_size). */
struct estore_builder {
	struct store_builder base; /* first: the core's allocation starts here */
	/* store id -> profile id, per table; 0 = not yet. 4 bytes an entry: the lookup per
	 * frame misses the cache less (a profile never holds 2^32 records) */
	uint32_t *xl[STORE_N_TABS];
	size_t cap[STORE_N_TABS];
	uint64_t *locs;
	size_t locs_cap;
};
/* Internal scan flag: deliver series-local stack ids as stored (rollups). */
#define STORE_SCAN_LOCAL_IDS 0x100u
/* Scan with the lock held, restricted to levels <= max_level. */
int store_scan_locked(struct estore *s, const struct store_scan_query *q, int max_level,
		      store_rows_fn fn, void *ctx);

/* Series key: type NUL (name NUL value NUL)* with names sorted. */
int store_series_labels(const uint8_t *key, size_t len, const char **type,
			struct store_label *labels, size_t max, size_t *n);
#define STORE_MAX_SERIES_LABELS 256

#endif /* HEARTH_STORE_IMPL_H */
