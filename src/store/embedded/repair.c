/*
 * The second half of store__salvage (salvage.c): after the readable rows were
 * copied, makes the new store whole, so that every query reads it. The copy
 * alone is not: a stack whose location was on a lost page, or a chunk row whose
 * stack was, fails every merge that meets it (issue 30: "merging the profile
 * failed: No such file or directory").
 *
 * Bottom-up, every intern row is kept only if its key decodes and every id it
 * names is kept (strings excepted: a lost string is an empty name, which
 * the readers accept): mappings, functions, locations, stacks, series, then
 * the (series, stack) pairs. Then every chunk is decoded and keeps only the
 * rows whose series and stack survive, with their series-local stack ids
 * renumbered (a dropped pair shifts the later ones of its series); a chunk
 * left empty is deleted, a raw chunk that does not decode is quarantined, a
 * rollup that does not decode deleted. Last, every rollup window that raw
 * chunks fall in and that has no rollup is marked pending, to be built again.
 *
 * Local ids are positions in a series' pairs, in id order. A lost stretch of
 * the pairs table may have held pairs of any series, so the position of every
 * pair after the start of the first lost stretch is unknown: those pairs stay
 * (new appends use them), but no old chunk row is mapped to them; such rows
 * are dropped rather than shown under a wrong stack.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

/* Per series: its old local ids (positions) -> new ones, or -1 (row dropped). */
struct repair_series {
	int64_t *pos;
	size_t n, cap;
	int64_t next; /* new positions given */
};

struct repair {
	sqlite3 *db;
	uint8_t *keep[STORE_N_TABS]; /* by id; sized n[t] */
	size_t n[STORE_N_TABS];
	struct repair_series *ser; /* by series id; n_ser entries */
	size_t n_ser;
	int64_t trust_below; /* pair ids at or above this: their position is unknown */
	struct store_salvage_result *res;
};

static bool kept(const struct repair *r, int t, uint64_t id)
{
	return id < r->n[t] && r->keep[t][id];
}

static bool varints(const uint8_t **k, const uint8_t *end, uint64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		if (base_varint_get(k, end, &v[i]))
			return false;
	return true;
}

/* Whether the key of a row of table t decodes and names only kept rows. */
static bool key_ok(const struct repair *r, int t, const uint8_t *k, size_t len)
{
	struct store_label labels[STORE_MAX_SERIES_LABELS];
	const uint8_t *end = k + len;
	const char *type;
	uint64_t v[5];
	size_t n;

	switch (t) {
	case STORE_T_MAPPINGS: /* its strings may be lost: an empty file name */
		return varints(&k, end, v, 5);
	case STORE_T_FUNCTIONS:
		return varints(&k, end, v, 3);
	case STORE_T_LOCATIONS:
		if (!varints(&k, end, v, 3) || (v[0] && !kept(r, STORE_T_MAPPINGS, v[0])))
			return false;
		for (uint64_t i = 0; i < v[2]; i++)
			if (!varints(&k, end, v + 3, 2) || !kept(r, STORE_T_FUNCTIONS, v[3]))
				return false;
		return k == end;
	case STORE_T_STACKS:
		while (k < end)
			if (!varints(&k, end, v, 1) || !kept(r, STORE_T_LOCATIONS, v[0]))
				return false;
		return true;
	case STORE_T_SERIES:
		return !store_series_labels(k, len, &type, labels, STORE_MAX_SERIES_LABELS, &n);
	}
	return true; /* strings */
}

/* Deletes the rows of table t whose ids are listed. 0 or -EIO. */
static int delete_ids(struct repair *r, const char *table, const uint64_t *ids, size_t n)
{
	char sql[96];
	sqlite3_stmt *st = NULL;
	int e = 0;

	snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE rowid = ?", table);
	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	for (size_t i = 0; !e && i < n; i++) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)ids[i]);
		e = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return e;
}

/* Sizes keep[t] to the table's highest id + 1. */
static int size_table(struct repair *r, int t)
{
	char sql[96];
	sqlite3_stmt *st = NULL;
	int64_t max = -1;

	snprintf(sql, sizeof(sql), "SELECT ifnull(max(id), 0) FROM %s", store_tab_names[t]);
	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		max = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (max < 0 || max >= UINT32_MAX)
		return -EIO;
	r->n[t] = (size_t)max + 1;
	r->keep[t] = calloc(r->n[t], 1);
	return r->keep[t] ? 0 : -ENOMEM;
}

/* Checks every row of intern table t (not the pairs), deleting the bad ones. */
static int check_table(struct repair *r, int t)
{
	char sql[96];
	sqlite3_stmt *st = NULL;
	uint64_t *bad = NULL;
	size_t nbad = 0, cap = 0;
	int rc, e = size_table(r, t);

	snprintf(sql, sizeof(sql), "SELECT id, k FROM %s ORDER BY id", store_tab_names[t]);
	if (!e && sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
		e = -EIO;
	while (!e && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		const uint8_t *k = sqlite3_column_blob(st, 1);
		size_t len = (size_t)sqlite3_column_bytes(st, 1);

		if (id >= 1 && key_ok(r, t, k ? k : (const uint8_t *)"", len))
			r->keep[t][id] = 1;
		else if (base_grow((void **)&bad, &cap, nbad + 1, sizeof(*bad)))
			e = -ENOMEM;
		else
			bad[nbad++] = (uint64_t)id;
	}
	if (!e && rc != SQLITE_DONE)
		e = -EIO;
	sqlite3_finalize(st);
	e = e ?: delete_ids(r, store_tab_names[t], bad, nbad);
	r->res->dropped_keys += nbad;
	free(bad);
	return e;
}

/* Gives the next old position of series (its pair id pair kept or not). */
static int add_position(struct repair *r, uint64_t series, bool keep, bool trusted)
{
	struct repair_series *s;

	if (series >= r->n_ser)
		return 0; /* a series the table never held: its pair is dropped */
	s = &r->ser[series];
	if (base_grow((void **)&s->pos, &s->cap, s->n + 1, sizeof(*s->pos)))
		return -ENOMEM;
	s->pos[s->n++] = keep && trusted ? s->next : -1;
	if (keep)
		s->next++;
	return 0;
}

/* The pairs: positions old -> new per series, the bad pairs deleted. */
static int check_pairs(struct repair *r)
{
	sqlite3_stmt *st = NULL;
	uint64_t *bad = NULL, v[2];
	size_t nbad = 0, cap = 0;
	int rc, e = 0;

	r->n_ser = r->n[STORE_T_SERIES];
	if (!(r->ser = calloc(r->n_ser, sizeof(*r->ser))))
		return -ENOMEM;
	if (sqlite3_prepare_v2(r->db, "SELECT id, k FROM series_stacks ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK)
		e = -EIO;
	while (!e && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		const uint8_t *k = sqlite3_column_blob(st, 1);
		const uint8_t *end = k + sqlite3_column_bytes(st, 1);
		bool keep = false;

		if (!k || !varints(&k, end, v, 2)) {
			/* a pair of no known series: every later position is in doubt */
			if (id < r->trust_below)
				r->trust_below = id;
		} else {
			keep = kept(r, STORE_T_SERIES, v[0]) && kept(r, STORE_T_STACKS, v[1]);
			e = add_position(r, v[0], keep, id < r->trust_below);
		}
		if (!e && !keep) {
			if (base_grow((void **)&bad, &cap, nbad + 1, sizeof(*bad)))
				e = -ENOMEM;
			else
				bad[nbad++] = (uint64_t)id;
		}
	}
	if (!e && rc != SQLITE_DONE)
		e = -EIO;
	sqlite3_finalize(st);
	e = e ?: delete_ids(r, "series_stacks", bad, nbad);
	r->res->dropped_keys += nbad;
	free(bad);
	return e;
}

/* Keeps the rows of in whose series and stack survive, renumbered, into out;
 * *changed: some row was dropped or renumbered. */
static void filter_rows(struct repair *r, int level, const struct store_rows *in,
			struct store_rows *out, bool *changed)
{
	out->n = 0;
	for (size_t i = 0; i < in->n; i++) {
		struct store_crow row = in->r[i];
		const struct repair_series *s =
		    row.series_id < r->n_ser ? &r->ser[row.series_id] : NULL;
		int64_t pos = s && row.stack_id < s->n ? s->pos[row.stack_id] : -1;

		if (pos < 0 || !kept(r, STORE_T_SERIES, row.series_id)) {
			if (level == 0) { /* a rollup's rows are the raw chunks' again */
				r->res->dropped_rows++;
				r->res->dropped_samples += row.v[0];
			}
			*changed = true;
			continue;
		}
		if ((uint64_t)pos != row.stack_id)
			*changed = true;
		row.stack_id = (uint64_t)pos;
		out->r[out->n++] = row; /* out has in's capacity */
	}
}

/* Runs sql with one chunk id bound. 0 or -EIO. */
static int exec_id(struct repair *r, const char *sql, int64_t id)
{
	sqlite3_stmt *st = NULL;
	int e = -EIO;

	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		e = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	}
	sqlite3_finalize(st);
	return e;
}

/* A chunk that does not decode: a raw one to the quarantine (its bytes kept
 * for a look), a rollup deleted (its window is marked pending at the end). */
static int drop_chunk(struct repair *r, int64_t id, int level)
{
	if (level > 0) {
		r->res->chunks_dropped++;
		return exec_id(r, "DELETE FROM chunks WHERE id = ?", id);
	}
	r->res->chunks_quarantined++;
	return exec_id(r,
		       "INSERT INTO quarantine(chunk_id, level, t0, dur, nrows, samples, raw_len,"
		       " totals, data, reason, at) SELECT id, level, t0, dur, nrows, samples,"
		       " raw_len, totals, data, 'did not decode after hearth recover',"
		       " strftime('%s', 'now') FROM chunks WHERE id = ?",
		       id)
		   ?: exec_id(r, "DELETE FROM chunks WHERE id = ?", id);
}

/* Stores rows as chunk id's new body (re-encoded), or deletes it when empty. */
static int rewrite_chunk(struct repair *r, int64_t id, const struct store_rows *rows)
{
	uint8_t *data = NULL, *totals = NULL;
	size_t dlen, raw_len, tlen;
	int64_t samples = 0, period = 0;
	sqlite3_stmt *st = NULL;
	int e;

	if (!rows->n) {
		r->res->chunks_dropped++;
		return exec_id(r, "DELETE FROM chunks WHERE id = ?", id);
	}
	for (size_t i = 0; i < rows->n; i++) {
		samples += rows->r[i].v[0];
		if (!period && rows->r[i].v[0] > 0) /* the encoding's hint only */
			period = rows->r[i].v[1] / rows->r[i].v[0];
	}
	e = store_chunk_encode(rows, period, &data, &dlen, &raw_len, &totals, &tlen);
	if (!e && sqlite3_prepare_v2(r->db,
				     "UPDATE chunks SET nrows = ?, samples = ?, raw_len = ?,"
				     " totals = ?, data = ? WHERE id = ?",
				     -1, &st, NULL) != SQLITE_OK)
		e = -EIO;
	if (!e) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)rows->n);
		sqlite3_bind_int64(st, 2, samples);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)raw_len);
		sqlite3_bind_blob(st, 4, totals, (int)tlen, SQLITE_STATIC);
		sqlite3_bind_blob(st, 5, data, (int)dlen, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, id);
		e = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
		r->res->chunks_rewritten++;
	}
	sqlite3_finalize(st);
	free(data);
	free(totals);
	return e;
}

/* Reads chunk id, keeps its surviving rows (see the file's comment). */
static int check_chunk(struct repair *r, int64_t id, struct store_rows *rows,
		       struct store_rows *kept_rows, uint8_t **scratch, size_t *scratch_cap)
{
	sqlite3_stmt *st = NULL;
	bool changed = false;
	int level = 0, e;

	if (sqlite3_prepare_v2(r->db,
			       "SELECT level, raw_len, data, totals FROM chunks WHERE id = ?", -1,
			       &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	e = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO;
	rows->n = 0;
	if (!e) {
		level = sqlite3_column_int(st, 0);
		e = store_chunk_decode(
		    sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2),
		    (size_t)sqlite3_column_int64(st, 1), NULL, 0, rows, scratch, scratch_cap);
	}
	if (!e) { /* a totals column that does not decode is written again */
		kept_rows->n = 0;
		changed = store_totals_decode(sqlite3_column_blob(st, 3),
					      (size_t)sqlite3_column_bytes(st, 3), NULL, 0,
					      kept_rows) != 0;
	}
	sqlite3_finalize(st);
	if (e == -EINVAL)
		return drop_chunk(r, id, level);
	if (e)
		return e;
	if (base_grow((void **)&kept_rows->r, &kept_rows->cap, rows->n + 1, sizeof(*rows->r)))
		return -ENOMEM;
	filter_rows(r, level, rows, kept_rows, &changed);
	return changed ? rewrite_chunk(r, id, kept_rows) : 0;
}

static int check_chunks(struct repair *r)
{
	sqlite3_stmt *st = NULL;
	struct store_rows rows = {0}, kept_rows = {0};
	int64_t *ids = NULL;
	size_t n = 0, cap = 0, scratch_cap = 0;
	uint8_t *scratch = NULL;
	int rc, e = 0;

	/* the ids first: the loop below updates and deletes chunks */
	if (sqlite3_prepare_v2(r->db, "SELECT id FROM chunks ORDER BY id", -1, &st, NULL) !=
	    SQLITE_OK)
		return -EIO;
	while (!e && (rc = sqlite3_step(st)) == SQLITE_ROW)
		if (base_grow((void **)&ids, &cap, n + 1, sizeof(*ids)))
			e = -ENOMEM;
		else
			ids[n++] = sqlite3_column_int64(st, 0);
	if (!e && rc != SQLITE_DONE)
		e = -EIO;
	sqlite3_finalize(st);
	for (size_t i = 0; !e && i < n; i++)
		e = check_chunk(r, ids[i], &rows, &kept_rows, &scratch, &scratch_cap);
	store_rows__fini(&rows);
	store_rows__fini(&kept_rows);
	free(scratch);
	free(ids);
	return e;
}

/* Every window of levels 1.. that raw chunks fall in and that has no rollup:
 * pending, so that the next maintenance builds it (the copy has no pending
 * table: it has no rowid). */
static int mark_pending(struct repair *r)
{
	char sql[512];

	for (int l = 1; l < STORE_LEVELS; l++) {
		long long w = (long long)store_level_window_ns[l];

		snprintf(sql, sizeof(sql),
			 "INSERT OR IGNORE INTO pending SELECT DISTINCT %d, c.t0 - c.t0 %% %lld"
			 " FROM chunks c WHERE c.level = 0 AND NOT EXISTS(SELECT 1 FROM chunks u"
			 " WHERE u.level = %d AND u.t0 = c.t0 - c.t0 %% %lld)",
			 l, w, l, w);
		if (sqlite3_exec(r->db, sql, NULL, NULL, NULL) != SQLITE_OK)
			return -EIO;
		r->res->windows_pending += (uint64_t)sqlite3_changes(r->db);
	}
	return 0;
}

int store_salvage_repair(sqlite3 *db, int64_t pairs_lost_from, struct store_salvage_result *res)
{
	struct repair r = {.db = db, .trust_below = pairs_lost_from, .res = res};
	static const int order[] = {STORE_T_STRINGS,   STORE_T_MAPPINGS, STORE_T_FUNCTIONS,
				    STORE_T_LOCATIONS, STORE_T_STACKS,	 STORE_T_SERIES};
	int e = 0;

	for (size_t i = 0; !e && i < sizeof(order) / sizeof(*order); i++)
		e = check_table(&r, order[i]);
	e = e ?: check_pairs(&r);
	e = e ?: check_chunks(&r);
	e = e ?: mark_pending(&r);
	for (size_t i = 0; i < r.n_ser; i++)
		free(r.ser[i].pos);
	free(r.ser);
	for (int t = 0; t < STORE_N_TABS; t++)
		free(r.keep[t]);
	return e;
}
