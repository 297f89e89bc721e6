/*
 * Garbage collection of the intern tables, one bounded step per maintenance
 * tick (store__maintain). Retention deletes chunks, but the series, stacks,
 * locations, functions, mappings and strings they used stayed in memory and on
 * disk for the store's life: with pid as a series label, max_series was a
 * lifetime cap and memory grew with every process a host ever ran.
 *
 * What is live: a series some chunk (of any level) has rows of; every
 * (series, stack) pair of a live series (a chunk's series-local stack ids are
 * positions in that list, so a live series keeps all its pairs); the stacks of
 * live pairs; their locations; the mappings and functions of those; and the
 * strings of those. Everything else is garbage.
 *
 * A cycle:
 *  1. mark (several ticks, gc_budget chunks a tick): the series of every chunk
 *     that existed when the cycle began, read from the cheap totals column.
 *     Chunks written meanwhile (appends, rollups) mark their series as they are
 *     inserted (store_gc_note_rows, the write barrier): an append may use a
 *     series, stack or location through the location cache or the stack memo
 *     without touching an intern table, but it cannot store a row without a
 *     chunk. Marks are conservative: a chunk deleted after it was marked keeps
 *     its series until the next cycle.
 *  2. sweep (one tick, under the store's lock, no append in between): the rest
 *     of the closure above is computed in memory and the garbage retired: it
 *     can no longer be found (an append of the same key makes a new entry), its
 *     keys are compacted away, and the location cache and the stack memo are
 *     emptied (they may name it), as after a rollback.
 *  3. delete (that tick and the next ones, 16384 rows a tick): the retired
 *     rows are deleted from the tables, referrers first (pairs, series, stacks,
 *     locations, functions and mappings, strings), a transaction a tick; then
 *     their ids are given again, lowest first. Killed in between, the rows not
 *     yet deleted load as live entries nothing references (the next cycle
 *     frees them), and no row names a deleted one.
 *
 * store__maintain runs the step before retention, so an entry is freed at the
 * earliest one tick after the last chunk that used it was deleted: a query that
 * scanned that chunk and then expands its stacks (two lock holds) has that
 * long to finish.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

/* Chunks a tick marks when store.gc_budget is 0: their totals columns are
 * small (a few bytes a series), so a tick costs a few ms. */
#define STORE_GC_DEFAULT_BUDGET 1024

void store_gc_fini(struct estore *s)
{
	free(s->gc.series);
	for (int t = 0; t < STORE_N_TABS; t++)
		free(s->gc.dying[t]);
	memset(&s->gc, 0, sizeof(s->gc));
}

/* Marks series id live; false when out of memory (the cycle is abandoned). */
static bool mark_series(struct estore *s, uint64_t id)
{
	struct store_gc *g = &s->gc;

	if (id >= g->cap) {
		size_t old = g->cap;

		if (base_grow((void **)&g->series, &g->cap, id + 1, 1)) {
			g->failed = true;
			return false;
		}
		memset(g->series + old, 0, g->cap - old);
	}
	g->series[id] = 1;
	return true;
}

void store_gc_note_rows(struct estore *s, const struct store_rows *rows)
{
	uint64_t prev = 0;

	if (!s->gc.marking)
		return;
	for (size_t i = 0; i < rows->n; i++)
		if (rows->r[i].series_id != prev) { /* rows are sorted by series */
			prev = rows->r[i].series_id;
			if (!mark_series(s, prev))
				return;
		}
}

/* Marks the series of up to budget chunks after the cursor; *done when none is
 * left. A chunk whose totals do not decode is quarantined (and marks nothing:
 * no scan will read it). */
static int mark_chunks(struct estore *s, bool *done)
{
	struct store_gc *g = &s->gc;
	size_t budget = s->gc_budget ? s->gc_budget : STORE_GC_DEFAULT_BUDGET, n = 0;
	struct store_rows rows = {0};
	sqlite3_stmt *st = NULL;
	int64_t bad[16], bad_t0[16];
	int bad_level[16], rc, e = 0;
	size_t n_bad = 0;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT id, totals, level, t0 FROM chunks WHERE id > ? AND id <= ?"
			       " ORDER BY id LIMIT ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, g->cursor);
	sqlite3_bind_int64(st, 2, g->last);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)budget);
	while (!e && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		g->cursor = sqlite3_column_int64(st, 0);
		n++;
		rows.n = 0;
		e = store_totals_decode(sqlite3_column_blob(st, 1),
					(size_t)sqlite3_column_bytes(st, 1), NULL, 0, &rows);
		if (e == -EINVAL && n_bad < 16) {
			bad[n_bad] = g->cursor;
			bad_level[n_bad] = sqlite3_column_int(st, 2);
			bad_t0[n_bad++] = sqlite3_column_int64(st, 3);
			e = 0;
			continue;
		}
		for (size_t i = 0; !e && i < rows.n; i++)
			if (!mark_series(s, rows.r[i].series_id))
				e = -ENOMEM;
	}
	if (!e && rc != SQLITE_DONE)
		e = -EIO;
	sqlite3_finalize(st);
	store_rows__fini(&rows);
	for (size_t i = 0; i < n_bad; i++)
		store_quarantine(s, bad[i], bad_level[i], bad_t0[i], "totals do not decode");
	*done = n < budget;
	return e;
}

/* Reads n varints of a key; false when it is cut short. */
static bool get_n(const uint8_t **p, const uint8_t *end, uint64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		if (base_varint_get(p, end, &v[i]))
			return false;
	return true;
}

/* Keeps id of table t (ids out of range are ignored: the key names nothing). */
static inline void keep(struct estore *s, uint8_t **live, int t, uint64_t id)
{
	if (id && id <= s->tabs[t].n)
		live[t][id] = 1;
}

/* The closure of the live series (see the file comment) into live[t][id]. */
static int close_over(struct estore *s, uint8_t **live)
{
	uint64_t v[5];
	size_t len;

	for (uint64_t id = 1; id <= s->tabs[STORE_T_SERIES].n; id++)
		if (id < s->gc.cap && s->gc.series[id])
			live[STORE_T_SERIES][id] = 1;
	for (uint64_t id = 1; id <= s->tabs[STORE_T_PAIRS].n; id++) {
		const uint8_t *k = store_itab__key(&s->tabs[STORE_T_PAIRS], id, &len);

		if (!k)
			continue;
		if (!get_n(&k, k + len, v, 2))
			return -EUCLEAN;
		if (v[0] <= s->tabs[STORE_T_SERIES].n && live[STORE_T_SERIES][v[0]]) {
			live[STORE_T_PAIRS][id] = 1;
			keep(s, live, STORE_T_STACKS, v[1]);
		}
	}
	for (uint64_t id = 1; id <= s->tabs[STORE_T_STACKS].n; id++) {
		const uint8_t *k = store_itab__key(&s->tabs[STORE_T_STACKS], id, &len), *end;

		if (!k || !live[STORE_T_STACKS][id])
			continue;
		for (end = k + len; k < end;) {
			if (!get_n(&k, end, v, 1))
				return -EUCLEAN;
			keep(s, live, STORE_T_LOCATIONS, v[0]);
		}
	}
	for (uint64_t id = 1; id <= s->tabs[STORE_T_LOCATIONS].n; id++) {
		const uint8_t *k = store_itab__key(&s->tabs[STORE_T_LOCATIONS], id, &len), *end;

		if (!k || !live[STORE_T_LOCATIONS][id])
			continue;
		end = k + len;
		/* mapping, address, n_lines, then (function, line) per line */
		if (!get_n(&k, end, v, 3))
			return -EUCLEAN;
		keep(s, live, STORE_T_MAPPINGS, v[0]);
		for (uint64_t i = 0; i < v[2]; i++) {
			if (!get_n(&k, end, v + 3, 2))
				return -EUCLEAN;
			keep(s, live, STORE_T_FUNCTIONS, v[3]);
		}
	}
	for (uint64_t id = 1; id <= s->tabs[STORE_T_FUNCTIONS].n; id++) {
		const uint8_t *k = store_itab__key(&s->tabs[STORE_T_FUNCTIONS], id, &len);

		if (!k || !live[STORE_T_FUNCTIONS][id])
			continue;
		if (!get_n(&k, k + len, v, 3)) /* name, system name, file */
			return -EUCLEAN;
		for (int i = 0; i < 3; i++)
			keep(s, live, STORE_T_STRINGS, v[i]);
	}
	for (uint64_t id = 1; id <= s->tabs[STORE_T_MAPPINGS].n; id++) {
		const uint8_t *k = store_itab__key(&s->tabs[STORE_T_MAPPINGS], id, &len);

		if (!k || !live[STORE_T_MAPPINGS][id])
			continue;
		if (!get_n(&k, k + len, v, 5)) /* start, limit, offset, file, build id */
			return -EUCLEAN;
		keep(s, live, STORE_T_STRINGS, v[3]);
		keep(s, live, STORE_T_STRINGS, v[4]);
	}
	return 0;
}

/* Turns live[t] into its complement over the live ids (the garbage) and
 * counts it. */
static size_t to_dead(struct estore *s, uint8_t **live)
{
	size_t n = 0;

	for (int t = 0; t < STORE_N_TABS; t++)
		for (uint64_t id = 1; id <= s->tabs[t].n; id++) {
			live[t][id] = store_itab__live(&s->tabs[t], id) && !live[t][id];
			n += live[t][id];
		}
	return n;
}

/* Rows a tick deletes when store.gc_budget is 0 (a few tens of ms of SQLite). */
#define STORE_GC_DEFAULT_DELETES 16384

/*
 * Retires the garbage in memory (it can no longer be found; the location cache
 * and the stack memo, which may name it, are emptied) and lists it for
 * deletion, referrers first: pairs, series, stacks, locations, functions,
 * mappings, strings. 0 or -ENOMEM (nothing retired then).
 */
static int retire(struct estore *s, uint8_t **dead)
{
	struct store_gc *g = &s->gc;
	const struct store_itab *ser = &s->tabs[STORE_T_SERIES];
	int e = 0;

	for (int t = 0; !e && t < STORE_N_TABS; t++) {
		size_t n = 0;

		for (uint64_t id = 1; id <= s->tabs[t].n; id++)
			n += dead[t][id];
		free(g->dying[t]);
		g->dying[t] = NULL;
		g->n_dying[t] = g->at[t] = 0;
		if (n && !(g->dying[t] = malloc(n * sizeof(*g->dying[t]))))
			e = -ENOMEM;
		for (uint64_t id = 1; !e && id <= s->tabs[t].n; id++)
			if (dead[t][id])
				g->dying[t][g->n_dying[t]++] = (uint32_t)id;
	}
	if (e) {
		for (int t = 0; t < STORE_N_TABS; t++)
			g->n_dying[t] = 0;
		return e;
	}
	for (uint64_t id = 1; id <= ser->n && id < s->local_cap; id++)
		if (dead[STORE_T_SERIES][id]) {
			free(s->local[id].stacks);
			memset(&s->local[id], 0, sizeof(s->local[id]));
		}
	store_loccache_clear(&s->loccache);
	store_stackmemo_clear(&s->stackmemo);
	for (int t = 0; t < STORE_N_TABS; t++)
		store_itab__retire(&s->tabs[t], dead[t], s->tabs[t].n + 1);
	return 0;
}

/* Whether retired rows are still to be deleted. */
static bool dying(const struct estore *s)
{
	for (int t = 0; t < STORE_N_TABS; t++)
		if (s->gc.at[t] < s->gc.n_dying[t])
			return true;
	return false;
}

/*
 * Deletes up to the tick's budget of retired rows, referrers first, in one
 * transaction, then gives their ids again. Killed in between, the rows not yet
 * deleted are loaded as live at the next open, and no row names a deleted one.
 */
static int delete_some(struct estore *s)
{
	struct store_gc *g = &s->gc;
	size_t budget = s->gc_budget ? s->gc_budget * 16 : STORE_GC_DEFAULT_DELETES;
	size_t upto[STORE_N_TABS];
	char sql[64];
	int e = store_exec(s, "BEGIN IMMEDIATE", NULL, 0);

	for (int t = STORE_N_TABS - 1; t >= 0; t--) {
		sqlite3_stmt *st = NULL;

		upto[t] = g->at[t];
		if (e || upto[t] == g->n_dying[t] || !budget)
			continue;
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE id = ?", store_tab_names[t]);
		if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
			e = -EIO;
		for (; !e && budget && upto[t] < g->n_dying[t]; upto[t]++, budget--) {
			sqlite3_bind_int64(st, 1, g->dying[t][upto[t]]);
			e = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
			sqlite3_reset(st);
		}
		sqlite3_finalize(st);
	}
	e = e ?: store_exec(s, "COMMIT", NULL, 0);
	if (e) {
		store_exec(s, "ROLLBACK", NULL, 0);
		return e; /* retried next tick */
	}
	for (int t = 0; t < STORE_N_TABS; t++) {
		if (upto[t] == g->at[t])
			continue;
		store_itab__release(&s->tabs[t], g->dying[t] + g->at[t], upto[t] - g->at[t]);
		s->stats.gc_freed += upto[t] - g->at[t];
		g->at[t] = upto[t];
	}
	return 0;
}

/* The sweep: the closure, then the garbage retired. 0 or -errno. */
static int sweep(struct estore *s)
{
	uint8_t *live[STORE_N_TABS] = {0};
	int e = 0;

	for (int t = 0; !e && t < STORE_N_TABS; t++)
		if (!(live[t] = calloc(s->tabs[t].n + 1, 1)))
			e = -ENOMEM;
	e = e ?: close_over(s, live);
	if (e == -EUCLEAN)
		store_log(s, "garbage collection skipped: an intern-table key does not decode");
	if (!e && to_dead(s, live))
		e = retire(s, live);
	for (int t = 0; t < STORE_N_TABS; t++)
		free(live[t]);
	return e;
}

/* Starts a cycle: the chunks now in the table are the ones to mark. */
static int begin(struct estore *s)
{
	sqlite3_stmt *st = NULL;
	struct store_gc *g = &s->gc;

	if (sqlite3_prepare_v2(s->db, "SELECT ifnull(max(id), 0) FROM chunks", -1, &st, NULL) !=
		SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return -EIO;
	}
	g->last = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	g->cursor = 0;
	g->failed = false;
	if (g->cap)
		memset(g->series, 0, g->cap);
	g->marking = true;
	return 0;
}

int store_gc_step(struct estore *s)
{
	struct store_gc *g = &s->gc;
	bool done = false;
	int e;

	if (dying(s)) { /* the last sweep's rows, a budget a tick */
		e = delete_some(s);
		if (!e && !dying(s))
			s->stats.gc_cycles++;
		return e;
	}
	if (!g->marking && (e = begin(s)))
		return e;
	e = mark_chunks(s, &done);
	if (!e && g->failed)
		e = -ENOMEM;
	if (e || !done) {
		if (e) /* start over next tick */
			g->marking = false;
		return e;
	}
	g->marking = false;
	e = sweep(s);
	if (!e && dying(s))
		e = delete_some(s);
	if (!e && !dying(s))
		s->stats.gc_cycles++;
	return e;
}

/* ---- at open: ids named but missing (store_check_refs) ---- */

/* What the references found: ref[t][id] for id <= n, and the highest id named
 * past the table's end. */
struct refs {
	uint8_t *ref[STORE_N_TABS];
	uint64_t over[STORE_N_TABS];
};

static void ref_id(struct estore *s, struct refs *r, int t, uint64_t id)
{
	if (id <= s->tabs[t].n)
		r->ref[t][id] = 1;
	else if (id > r->over[t] && id < UINT32_MAX - 1)
		r->over[t] = id;
}

/* The references of every live key of table t (a key that does not decode is
 * left for the readers to report). */
static void key_refs(struct estore *s, struct refs *r, int t)
{
	uint64_t v[5];
	size_t len;

	for (uint64_t id = 1; id <= s->tabs[t].n; id++) {
		const uint8_t *k = store_itab__key(&s->tabs[t], id, &len), *end;

		if (!k)
			continue;
		end = k + len;
		switch (t) {
		case STORE_T_PAIRS:
			if (get_n(&k, end, v, 2)) {
				ref_id(s, r, STORE_T_SERIES, v[0]);
				ref_id(s, r, STORE_T_STACKS, v[1]);
			}
			break;
		case STORE_T_STACKS:
			while (k < end && get_n(&k, end, v, 1))
				ref_id(s, r, STORE_T_LOCATIONS, v[0]);
			break;
		case STORE_T_LOCATIONS:
			if (!get_n(&k, end, v, 3))
				break;
			if (v[0])
				ref_id(s, r, STORE_T_MAPPINGS, v[0]);
			for (uint64_t i = 0; i < v[2] && get_n(&k, end, v + 3, 2); i++)
				ref_id(s, r, STORE_T_FUNCTIONS, v[3]);
			break;
		case STORE_T_FUNCTIONS:
			for (int i = 0; i < 3 && get_n(&k, end, v, 1); i++)
				if (v[0])
					ref_id(s, r, STORE_T_STRINGS, v[0]);
			break;
		case STORE_T_MAPPINGS:
			if (get_n(&k, end, v, 5)) {
				if (v[3])
					ref_id(s, r, STORE_T_STRINGS, v[3]);
				if (v[4])
					ref_id(s, r, STORE_T_STRINGS, v[4]);
			}
			break;
		}
	}
}

/* The series every chunk names (its totals column). */
static int chunk_refs(struct estore *s, struct refs *r)
{
	struct store_rows rows = {0};
	sqlite3_stmt *st = NULL;
	int rc, e = 0;

	if (sqlite3_prepare_v2(s->db, "SELECT totals FROM chunks", -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while (!e && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		rows.n = 0;
		e = store_totals_decode(sqlite3_column_blob(st, 0),
					(size_t)sqlite3_column_bytes(st, 0), NULL, 0, &rows);
		if (e == -EINVAL)
			e = 0; /* quarantined when a scan reads it */
		for (size_t i = 0; !e && i < rows.n; i++)
			ref_id(s, r, STORE_T_SERIES, rows.r[i].series_id);
	}
	if (!e && rc != SQLITE_DONE)
		e = -EIO;
	sqlite3_finalize(st);
	store_rows__fini(&rows);
	return e;
}

int store_check_refs(struct estore *s)
{
	struct refs r = {0};
	int e = 0, lost = 0;

	for (int t = 0; !e && t < STORE_N_TABS; t++)
		if (!(r.ref[t] = calloc(s->tabs[t].n + 1, 1)))
			e = -ENOMEM;
	for (int t = 0; !e && t < STORE_N_TABS; t++)
		key_refs(s, &r, t);
	/* chunks can name a series the table lacks only after a salvage (rows
	 * lost); reading every chunk's totals is left to such stores */
	if (!e && s->salvaged)
		e = chunk_refs(s, &r);
	for (int t = 0; !e && t < STORE_N_TABS; t++) {
		size_t n = s->tabs[t].n + 1, want = r.over[t] ? r.over[t] + 1 : n;
		uint8_t *ref = r.ref[t];

		if (want > n) { /* ids past the end were named: all of them are taken */
			if (!(ref = realloc(ref, want))) { /* layers: exact size, new bytes set to 1, not 0 */
				e = -ENOMEM;
				break;
			}
			memset(ref + n, 1, want - n);
			r.ref[t] = ref;
		}
		int k = store_itab__keep_lost(&s->tabs[t], ref, want);

		if (k < 0)
			e = k;
		else if (k) {
			lost += k;
			store_log(s,
				  "table %s: %d ids are named but missing (lost rows): not reused",
				  store_tab_names[t], k);
		}
	}
	for (int t = 0; t < STORE_N_TABS; t++)
		free(r.ref[t]);
	return e ?: lost;
}
