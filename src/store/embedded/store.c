/*
 * The embedded store's life cycle: the SQLite database (WAL mode) that holds
 * the intern tables, the chunks and the rollup work list; loading the intern
 * tables into memory at open; statistics; retention; health; and the table of
 * operations (store_embedded_ops) that the store's core calls. Durability comes from SQLite: a commit
 * in WAL mode with synchronous=FULL is on disk when it returns, and a process
 * killed mid-transaction leaves the last commit intact (the WAL is replayed or
 * ignored at the next open).
 */
#include "store_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STORE_SCHEMA_VERSION 1

const int64_t store_level_window_ns[STORE_LEVELS] = {
    0, 60ll * 1000000000ll, 600ll * 1000000000ll, 3600ll * 1000000000ll, 21600ll * 1000000000ll,
};

const char *const store_tab_names[STORE_N_TABS] = {
    "strings", "mappings", "functions", "locations", "stacks", "series", "series_stacks",
};

void store_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int store_exec(struct estore *s, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;

	if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	store_set_err(err, errlen, "%s: %s", s->path, msg ? msg : "SQLite error");
	sqlite3_free(msg);
	return -EIO;
}

static int create_schema(struct estore *s, char *err, size_t errlen)
{
	char sql[256];
	int e;

	for (int t = 0; t < STORE_N_TABS; t++) {
		snprintf(sql, sizeof(sql),
			 "CREATE TABLE IF NOT EXISTS %s(id INTEGER PRIMARY KEY, k BLOB NOT NULL)",
			 store_tab_names[t]);
		e = store_exec(s, sql, err, errlen);
		if (e)
			return e;
	}
	return store_exec(s,
			  "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v INTEGER);"
			  "INSERT OR IGNORE INTO meta VALUES('version', 1);"
			  "CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY,"
			  " level INTEGER NOT NULL, t0 INTEGER NOT NULL, dur INTEGER NOT NULL,"
			  " nrows INTEGER NOT NULL, samples INTEGER NOT NULL,"
			  " raw_len INTEGER NOT NULL, totals BLOB NOT NULL, data BLOB NOT NULL);"
			  "CREATE INDEX IF NOT EXISTS chunks_level_t0 ON chunks(level, t0);"
			  "CREATE TABLE IF NOT EXISTS pending(level INTEGER, t0 INTEGER,"
			  " PRIMARY KEY(level, t0)) WITHOUT ROWID;"
			  "CREATE TABLE IF NOT EXISTS quarantine(qid INTEGER PRIMARY KEY,"
			  " chunk_id INTEGER, level INTEGER, t0 INTEGER, dur INTEGER,"
			  " nrows INTEGER, samples INTEGER, raw_len INTEGER, totals BLOB,"
			  " data BLOB, reason TEXT, at INTEGER);",
			  err, errlen);
}

int64_t store_query_int(struct estore *s, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int load_tab(struct estore *s, int t, char *err, size_t errlen)
{
	char sql[128];
	sqlite3_stmt *st = NULL;
	struct store_itab *tab = &s->tabs[t];
	int rc, e = 0;

	snprintf(sql, sizeof(sql), "SELECT id, k FROM %s ORDER BY id", store_tab_names[t]);
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while (!e && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const void *k = sqlite3_column_blob(st, 1);
		int len = sqlite3_column_bytes(st, 1);
		sqlite3_int64 id = sqlite3_column_int64(st, 0);

		/* ids ascend; a gap is an id the garbage collection freed */
		e = id < 1 ? -EINVAL : store_itab__load(tab, (uint64_t)id, k ? k : "", (size_t)len);
		if (e == -EINVAL) {
			store_set_err(err, errlen, "%s: table %s is corrupt near id %lld", s->path,
				      store_tab_names[t], (long long)id);
			e = -EIO;
		}
	}
	if (!e && rc != SQLITE_DONE)
		e = -EIO;
	sqlite3_finalize(st);
	return e ?: store_itab__loaded(tab);
}

/* Counters of /metrics from the chunks table. */
static void load_stats(struct estore *s)
{
	struct store_stats *st = &s->stats;

	st->profiles = (uint64_t)store_query_int(s, "SELECT count(*) FROM chunks WHERE level=0");
	st->rows = (uint64_t)store_query_int(s, "SELECT total(nrows) FROM chunks WHERE level=0");
	st->samples =
	    (uint64_t)store_query_int(s, "SELECT total(samples) FROM chunks WHERE level=0");
	st->chunks = (uint64_t)store_query_int(s, "SELECT count(*) FROM chunks");
	st->corrupt_chunks = (uint64_t)store_query_int(s, "SELECT count(*) FROM quarantine");
	st->oldest_ns = store_query_int(s, "SELECT ifnull(min(t0), 0) FROM chunks WHERE level=0");
	st->newest_ns = store_query_int(s, "SELECT ifnull(max(t0), 0) FROM chunks WHERE level=0");
	s->newest_ns = st->newest_ns;
	s->first_ns = store_query_int(s, "SELECT ifnull(min(t0), 0) FROM chunks");
	if (s->first_ns > 0)
		s->first_ns = store_first_window(s->first_ns);
}

void store_reload_stats(struct estore *s)
{
	load_stats(s);
}

/*
 * Counts (stats.corrupt_series_keys) and logs the series keys that do not decode
 * (a damaged store after `hearth recover`). They stay in the table, as a
 * quarantined chunk stays in its table, for a later look; store__series_foreach
 * skips them, so the other series are still listed and merged. Logged here, once
 * per open, and not per query: the first few by id, then the count.
 */
static void count_bad_series_keys(struct estore *s)
{
	struct store_label labels[STORE_MAX_SERIES_LABELS];
	struct store_itab *tab = &s->tabs[STORE_T_SERIES];
	uint64_t bad = 0;

	for (uint64_t id = 1; id <= tab->committed; id++) {
		const char *type;
		size_t len, n;
		const uint8_t *k = store_itab__key(tab, id, &len);

		if (!k || !store_series_labels(k, len, &type, labels, STORE_MAX_SERIES_LABELS, &n))
			continue;
		if (++bad <= 10)
			store_log(s,
				  "series %llu: its stored key (%zu bytes) does not decode; "
				  "the series is left out of every query",
				  (unsigned long long)id, len);
	}
	if (bad > 10)
		store_log(s, "%llu series keys in all do not decode", (unsigned long long)bad);
	s->stats.corrupt_series_keys = bad;
}

static int prepare_all(struct estore *s)
{
	char sql[128];

	for (int t = 0; t < STORE_N_TABS; t++) {
		snprintf(sql, sizeof(sql), "INSERT INTO %s(id, k) VALUES(?, ?)",
			 store_tab_names[t]);
		if (sqlite3_prepare_v2(s->db, sql, -1, &s->ins_tab[t], NULL) != SQLITE_OK)
			return -EIO;
	}
	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO chunks(level, t0, dur, nrows, samples, raw_len, totals,"
			       " data) VALUES(?,?,?,?,?,?,?,?)",
			       -1, &s->ins_chunk, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO pending VALUES(?, ?)", -1,
			       &s->ins_pending, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "DELETE FROM chunks WHERE level=? AND t0=?", -1,
			       &s->del_rollup, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(
		s->db, "SELECT id, data, raw_len FROM chunks WHERE level=? AND t0=? ORDER BY id",
		-1, &s->sel_rollup, NULL) != SQLITE_OK)
		return -EIO;
	return 0;
}

static int open_db(struct estore *s, char *err, size_t errlen)
{
	int64_t version;
	int e;

	if (sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		store_set_err(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
		return -EIO;
	}
	sqlite3_busy_timeout(s->db, 5000);
	e = store_budget_pragmas(s, err, errlen) ?: /* auto_vacuum: before WAL mode */
		store_exec(s, "PRAGMA journal_mode=WAL", err, errlen) ?:
		store_exec(s, s->opts.no_fsync ? "PRAGMA synchronous=NORMAL"
					       : "PRAGMA synchronous=FULL",
			   err, errlen);
	if (e)
		return e;
	/* A store of another format version gets no table added before it is refused. */
	version = store_query_int(s, "SELECT v FROM meta WHERE k='version'");
	if (version == -1 || version == STORE_SCHEMA_VERSION) {
		e = create_schema(s, err, errlen); /* new store, or tables added since */
		if (e)
			return e;
		version = store_query_int(s, "SELECT v FROM meta WHERE k='version'");
	}
	if (version != STORE_SCHEMA_VERSION) {
		store_set_err(err, errlen,
			      "%s: store format version %lld, %s this hearth reads (version %d)",
			      s->path, (long long)version,
			      version > STORE_SCHEMA_VERSION ? "newer than what" : "not one",
			      STORE_SCHEMA_VERSION);
		return -EIO;
	}
	for (int t = 0; t < STORE_N_TABS; t++) {
		e = load_tab(s, t, err, errlen);
		if (e) {
			if (e == -EIO && err && !*err)
				store_set_err(err, errlen, "%s: %s", s->path,
					      sqlite3_errmsg(s->db));
			return e;
		}
	}
	if (store_local_load(s)) {
		store_set_err(err, errlen, "%s: table series_stacks is corrupt", s->path);
		return -EIO;
	}
	s->salvaged = store_query_int(s, "SELECT count(*) FROM meta WHERE k='salvaged'") > 0;
	e = store_check_refs(s);
	if (e < 0) {
		store_set_err(err, errlen, "%s: %s", s->path,
			      e == -EIO ? sqlite3_errmsg(s->db) : strerror(-e));
		return e;
	}
	load_stats(s);
	count_bad_series_keys(s);
	if (prepare_all(s)) {
		store_set_err(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
		return -EIO;
	}
	return store_budget_open(s, err, errlen);
}

static bool is_corrupt(int rc)
{
	return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB;
}

/* Appends to err how to salvage a database SQLite finds corrupt (docs/storage.md,
 * "Recovery"): `hearth recover` copies every row it can still read. */
static void recovery_hint(const struct estore *s, char *err, size_t errlen)
{
	size_t n = err ? strlen(err) : 0;

	if (!err || n + 1 >= errlen)
		return;
	snprintf(err + n, errlen - n,
		 "; the database is damaged: stop hearth, copy what is still readable with "
		 "`hearth recover --data %s --to NEWDIR`, then start hearth with --data NEWDIR "
		 "(docs/storage.md, Recovery)",
		 s->dir);
}

static void fill_defaults(struct store_opts *o)
{
	if (!o->retention_ns)
		o->retention_ns = STORE_DEFAULT_RETENTION_NS;
	if (!o->max_series)
		o->max_series = STORE_DEFAULT_MAX_SERIES;
	if (!o->max_labels_per_series)
		o->max_labels_per_series = STORE_DEFAULT_MAX_LABELS;
	if (o->max_labels_per_series > STORE_MAX_SERIES_LABELS)
		o->max_labels_per_series = STORE_MAX_SERIES_LABELS;
}

int store__open(const char *dir, const struct store_opts *opts, struct store **out, char *err,
		size_t errlen)
{
	struct estore *s;
	struct stat sb;
	size_t n;
	int e;

	*out = NULL;
	if (err && errlen)
		*err = 0;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		store_set_err(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
		store_set_err(err, errlen, "%s is not a directory", dir);
		return -EINVAL;
	}
	for (n = 0; opts && opts->sample_labels && opts->sample_labels[n]; n++)
		if (n == STORE_MAX_SAMPLE_LABELS) {
			store_set_err(err, errlen, "over %d sample labels to keep",
				      STORE_MAX_SAMPLE_LABELS);
			return -EINVAL;
		}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base.ops = &store_embedded_ops;
	s->lock_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	if (opts)
		s->opts = *opts;
	s->n_sample_labels = n;
	fill_defaults(&s->opts);
	s->dir = strdup(dir);
	if (s->dir && asprintf(&s->path, "%s/hearth.db", dir) < 0)
		s->path = NULL;
	if (!s->dir || !s->path) {
		estore_close(&s->base);
		return -ENOMEM;
	}
	e = store_dir_lock(dir, &s->lock_fd, err, errlen) ?: open_db(s, err, errlen);
	if (e) {
		if (s->db && is_corrupt(sqlite3_errcode(s->db)))
			recovery_hint(s, err, errlen);
		estore_close(&s->base);
		return e;
	}
	*out = &s->base;
	return 0;
}

void estore_close(struct store *base)
{
	struct estore *s = estore_of(base);

	for (int t = 0; t < STORE_N_TABS; t++) {
		sqlite3_finalize(s->ins_tab[t]);
		store_itab__fini(&s->tabs[t]);
	}
	store_local_fini(s);
	store_gc_fini(s);
	store_loccache_fini(&s->loccache);
	store_stackmemo_fini(&s->stackmemo);
	sqlite3_finalize(s->ins_chunk);
	sqlite3_finalize(s->ins_pending);
	sqlite3_finalize(s->del_rollup);
	sqlite3_finalize(s->sel_rollup);
	if (s->db) {
		sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
		sqlite3_close(s->db);
	}
	store_dir_unlock(s->lock_fd); /* after the database: the next owner finds it closed */
	pthread_mutex_destroy(&s->lock);
	free(s->dir);
	free(s->path);
	free(s);
}

int store_flush_tabs(struct estore *s)
{
	for (int t = 0; t < STORE_N_TABS; t++) {
		struct store_itab *tab = &s->tabs[t];
		sqlite3_stmt *st = s->ins_tab[t];

		/* from the first not yet written: in a batch (store__batch_begin) the
		 * entries of its earlier appends are in the transaction already */
		for (size_t i = tab->nflushed; i < tab->npend; i++) {
			uint64_t id = tab->pend[i];
			size_t len;
			const uint8_t *k = store_itab__key(tab, id, &len);

			sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
			sqlite3_bind_blob(st, 2, len ? (const void *)k : "", (int)len,
					  SQLITE_STATIC);
			int rc = sqlite3_step(st);
			sqlite3_reset(st);
			if (rc != SQLITE_DONE)
				return -EIO;
		}
		tab->nflushed = tab->npend;
	}
	return 0;
}

void store_tabs_commit(struct estore *s)
{
	for (int t = 0; t < STORE_N_TABS; t++)
		store_itab__commit(&s->tabs[t]);
}

int store_tabs_rollback(struct estore *s)
{
	int e = 0;

	store_local_rollback(s);
	store_loccache_clear(&s->loccache);
	store_stackmemo_clear(&s->stackmemo);
	for (int t = 0; t < STORE_N_TABS; t++)
		e = store_itab__rollback(&s->tabs[t]) ?: e;
	return e;
}

static uint64_t file_size(const char *path, const char *suffix)
{
	char p[4096];
	struct stat sb;

	snprintf(p, sizeof(p), "%s%s", path, suffix);
	return stat(p, &sb) ? 0 : (uint64_t)sb.st_size;
}

int estore_stats(struct store *base, struct store_stats *out)
{
	struct estore *s = estore_of(base);

	pthread_mutex_lock(&s->lock);
	*out = s->stats;
	out->series = s->tabs[STORE_T_SERIES].live;
	out->stacks = s->tabs[STORE_T_STACKS].live;
	out->locations = s->tabs[STORE_T_LOCATIONS].live;
	out->strings = s->tabs[STORE_T_STRINGS].live;
	out->intern_bytes = 0;
	for (int t = 0; t < STORE_N_TABS; t++)
		out->intern_bytes += store_itab__bytes(&s->tabs[t]);
	out->intern_bytes +=
	    s->local_cap * sizeof(*s->local) + s->pair_local_cap * sizeof(*s->pair_local);
	for (size_t i = 0; i < s->local_cap; i++)
		out->intern_bytes += s->local[i].cap * sizeof(*s->local[i].stacks);
	out->bytes_on_disk = file_size(s->path, "") + file_size(s->path, "-wal");
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void store_log(struct estore *s, const char *fmt, ...)
{
	FILE *f = s->opts.log ? s->opts.log : stderr;
	va_list ap;

	va_start(ap, fmt);
	fprintf(f, "hearth store: %s: ", s->path);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	fflush(f);
	va_end(ap);
}

/*
 * Moves chunk id aside into the quarantine table, bytes and all (for a later
 * look), so that no scan decodes it again; a rollup's window becomes pending
 * again, so it is rebuilt from the finer levels. A savepoint: inside a rollup's
 * transaction it commits with it, outside it is its own transaction.
 */
int store_quarantine(struct estore *s, int64_t id, int level, int64_t t0, const char *reason)
{
	sqlite3_stmt *st = NULL;
	int e;

	store_log(s, "chunk %lld (level %d, t0 %lld ns) %s: moved to the quarantine table",
		  (long long)id, level, (long long)t0, reason);
	e = store_exec(s, "SAVEPOINT quarantine", NULL, 0);
	if (e)
		return e;
	if (sqlite3_prepare_v2(
		s->db,
		"INSERT INTO quarantine(chunk_id, level, t0, dur, nrows, samples,"
		" raw_len, totals, data, reason, at) SELECT id, level, t0, dur, nrows,"
		" samples, raw_len, totals, data, ?2, strftime('%s', 'now')"
		" FROM chunks WHERE id = ?1",
		-1, &st, NULL) != SQLITE_OK)
		e = -EIO;
	if (!e) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, reason, -1, SQLITE_STATIC);
		e = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_finalize(st);
		st = NULL;
	}
	if (!e && sqlite3_prepare_v2(s->db, "DELETE FROM chunks WHERE id = ?", -1, &st, NULL) !=
		      SQLITE_OK)
		e = -EIO;
	if (!e) {
		sqlite3_bind_int64(st, 1, id);
		e = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	}
	sqlite3_finalize(st);
	if (!e && level > 0) {
		sqlite3_bind_int(s->ins_pending, 1, level);
		sqlite3_bind_int64(s->ins_pending, 2, t0);
		e = sqlite3_step(s->ins_pending) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_reset(s->ins_pending);
	}
	if (e) {
		store_exec(s, "ROLLBACK TO quarantine", NULL, 0);
		store_log(s, "chunk %lld: quarantine failed: %s", (long long)id,
			  sqlite3_errmsg(s->db));
	}
	store_exec(s, "RELEASE quarantine", NULL, 0);
	load_stats(s);
	return e;
}

/* Deletes chunks (and rollup work) older than the retention. */
static int retain(struct estore *s, int64_t now_ns, uint64_t *deleted)
{
	sqlite3_stmt *st = NULL;
	int64_t cutoff;
	int e = 0;

	if (s->opts.retention_ns < 0 || now_ns < s->opts.retention_ns)
		return 0;
	cutoff = now_ns - s->opts.retention_ns;
	if (sqlite3_prepare_v2(s->db, "DELETE FROM chunks WHERE t0 + dur <= ?1 AND t0 < ?1", -1,
			       &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, cutoff);
	if (sqlite3_step(st) != SQLITE_DONE)
		e = -EIO;
	else if (deleted)
		*deleted = (uint64_t)sqlite3_changes(s->db);
	sqlite3_finalize(st);
	if (!e && sqlite3_prepare_v2(s->db, "DELETE FROM pending WHERE t0 < ?", -1, &st, NULL) ==
		      SQLITE_OK) {
		sqlite3_bind_int64(st, 1, cutoff - store_level_window_ns[STORE_LEVELS - 1]);
		if (sqlite3_step(st) != SQLITE_DONE)
			e = -EIO;
		sqlite3_finalize(st);
	}
	return e;
}

int estore_maintain(struct store *base, int64_t now_ns, uint64_t *deleted)
{
	struct estore *s = estore_of(base);
	int e;

	if (deleted)
		*deleted = 0;
	pthread_mutex_lock(&s->lock);
	/* GC first: what retention deletes now is freed a tick later at the earliest
	 * (gc.c); each part runs whatever the others answered */
	e = store_gc_step(s);
	if (e)
		store_log(s, "garbage collection failed: %s", strerror(-e));
	e = store_rollup_due(s, now_ns) ?: e;
	e = retain(s, now_ns, deleted) ?: e;
	e = store_budget_enforce(s, false) ?: e;
	load_stats(s);
	pthread_mutex_unlock(&s->lock);
	return e;
}

int estore_series_foreach(struct store *base,
				 int (*fn)(void *ctx, const struct store_series *ser), void *ctx)
{
	struct estore *s = estore_of(base);
	struct store_label labels[STORE_MAX_SERIES_LABELS];
	struct store_itab *tab = &s->tabs[STORE_T_SERIES];
	int e = 0;

	pthread_mutex_lock(&s->lock);
	for (uint64_t id = 1; id <= tab->committed && !e; id++) {
		struct store_series ser = {.id = id, .labels = labels};
		size_t len;
		const uint8_t *k = store_itab__key(tab, id, &len);

		if (!k)
			continue; /* freed by the garbage collection */
		/* a key that does not decode was counted and logged at open */
		if (store_series_labels(k, len, &ser.profile_type, labels, STORE_MAX_SERIES_LABELS,
					&ser.n_labels))
			continue;
		e = fn(ctx, &ser);
	}
	pthread_mutex_unlock(&s->lock);
	return e;
}

int store_series_labels(const uint8_t *key, size_t len, const char **type,
			struct store_label *labels, size_t max, size_t *n)
{
	const char *p = (const char *)key, *end = p + len;

	*n = 0;
	if (!len || key[len - 1] != 0)
		return -EINVAL;
	*type = p;
	p += strlen(p) + 1;
	while (p < end) {
		if (*n >= max)
			return -E2BIG;
		labels[*n].name = p;
		p += strlen(p) + 1;
		if (p >= end)
			return -EINVAL;
		labels[*n].value = p;
		p += strlen(p) + 1;
		(*n)++;
	}
	return 0;
}

/* The database answers: a one-page read of its schema (no table scan). */
int estore_health(struct store *base, char *err, size_t errlen)
{
	struct estore *s = estore_of(base);
	int e;

	pthread_mutex_lock(&s->lock);
	e = store_query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'chunks'") == 1
		? 0
		: -EIO;
	if (e)
		store_set_err(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
	pthread_mutex_unlock(&s->lock);
	return e;
}

const struct store_ops store_embedded_ops = STORE_OPS(estore, "embedded", struct estore_builder);
