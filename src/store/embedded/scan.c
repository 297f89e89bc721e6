/*
 * Reading chunks back: a time range is covered by the coarsest rollups that fit
 * inside it, and finer levels (down to the raw chunks) at its edges and where a
 * rollup is missing (not built yet, or quarantined as corrupt):
 *
 *     from                                                     until
 *      |--raw--|-1m-|-1m-|----10m----|------1h------|-10m-|-1m-|raw|
 *
 * Rollups are built from the same cover restricted to finer levels, so a window
 * is always the sum of exactly the raw chunks that start inside it; a raw chunk
 * appended later into a window already rolled up is added into its rollup
 * (store_rollup_add), the finer chunks under it may be gone (the size budget).
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

int store_insert_chunk(struct estore *s, int level, int64_t t0, int64_t dur,
		       const struct store_rows *rows, int64_t period)
{
	uint8_t *data = NULL, *totals = NULL;
	size_t dlen, rlen, tlen;
	int64_t samples = 0;
	sqlite3_stmt *st = s->ins_chunk;
	int err, rc;

	err = store_chunk_encode(rows, period, &data, &dlen, &rlen, &totals, &tlen);
	if (err)
		return err;
	store_gc_note_rows(s, rows);
	for (size_t i = 0; i < rows->n; i++)
		samples = base_sat_add(samples, rows->r[i].v[0]);
	sqlite3_bind_int(st, 1, level);
	sqlite3_bind_int64(st, 2, t0);
	sqlite3_bind_int64(st, 3, dur);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)rows->n);
	sqlite3_bind_int64(st, 5, samples);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)rlen);
	sqlite3_bind_blob(st, 7, totals, (int)tlen, SQLITE_STATIC);
	sqlite3_bind_blob(st, 8, data, (int)dlen, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	free(data);
	free(totals);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

struct bad_chunk;

/* State of one scan. */
struct scan {
	struct estore *s;
	const uint64_t *ids;
	size_t n_ids;
	int64_t max_window;
	unsigned flags;
	int (*fn)(void *ctx, const struct store_row *rows, size_t n);
	void *ctx;
	struct store_rows rows;
	struct store_row *out;
	size_t out_cap;
	uint8_t *scratch;
	size_t scratch_cap;
	sqlite3_stmt *sel;
	struct bad_chunk *bad; /* chunks that did not decode */
	size_t n_bad, bad_cap;
};

/* A chunk that did not decode, quarantined once the scan is over. */
struct bad_chunk {
	int64_t id, t0;
	int level;
	const char *reason;
};

/* Translates the decoded rows of one chunk into sc->out; *why is set (and
 * nothing translated) when a row names a local stack id its series never had. */
static int translate(struct scan *sc, int64_t t0, int64_t dur, const char **why)
{
	if (base_grow((void **)&sc->out, &sc->out_cap, sc->rows.n, sizeof(*sc->out)))
		return -ENOMEM;
	bool xlate = !(sc->flags & (STORE_SCAN_TOTALS | STORE_SCAN_LOCAL_IDS));

	for (size_t i = 0; i < sc->rows.n; i++) {
		const struct store_crow *r = &sc->rows.r[i];
		uint64_t stack = r->stack_id;

		if (xlate && !(stack = store_global_stack(sc->s, r->series_id, r->stack_id))) {
			*why = "names a stack its series does not have";
			return 0;
		}
		sc->out[i] = (struct store_row){.series_id = r->series_id,
						.stack_id = stack,
						.time_ns = t0,
						.duration_ns = dur,
						.values = {r->v[0], r->v[1]}};
	}
	return 0;
}

/* Decodes the chunk of the current row of st into sc->rows and sc->out; *why
 * is set when its bytes do not decode (the chunk is then skipped). */
static int read_chunk(struct scan *sc, sqlite3_stmt *st, int64_t t0, int64_t dur, const char **why)
{
	int err;

	sc->rows.n = 0;
	if (sc->flags & STORE_SCAN_TOTALS)
		err = store_totals_decode(sqlite3_column_blob(st, 2),
					  (size_t)sqlite3_column_bytes(st, 2), sc->ids, sc->n_ids,
					  &sc->rows);
	else
		err = store_chunk_decode(sqlite3_column_blob(st, 3),
					 (size_t)sqlite3_column_bytes(st, 3),
					 (size_t)sqlite3_column_int64(st, 4), sc->ids, sc->n_ids,
					 &sc->rows, &sc->scratch, &sc->scratch_cap);
	if (err == -EINVAL) {
		*why =
		    sc->flags & STORE_SCAN_TOTALS ? "totals do not decode" : "body does not decode";
		return 0;
	}
	return err ?: translate(sc, t0, dur, why);
}

/* Remembers a chunk that did not decode (once per chunk). */
static int add_bad(struct scan *sc, sqlite3_stmt *st, int level, int64_t t0, const char *why)
{
	int64_t id = sqlite3_column_int64(st, 5);

	for (size_t i = 0; i < sc->n_bad; i++)
		if (sc->bad[i].id == id)
			return 0;
	if (base_grow((void **)&sc->bad, &sc->bad_cap, sc->n_bad + 1, sizeof(*sc->bad)))
		return -ENOMEM;
	sc->bad[sc->n_bad++] = (struct bad_chunk){id, t0, level, why};
	return 0;
}

/* Appends t0 to *seen. */
static int push_seen(int64_t **seen, size_t *n_seen, size_t *cap, int64_t t0)
{
	if (base_grow((void **)seen, cap, *n_seen + 1, sizeof(**seen)))
		return -ENOMEM;
	(*seen)[(*n_seen)++] = t0;
	return 0;
}

/*
 * Every chunk of one level starting in [from, until); *seen (may be NULL) gets
 * the start times of those that decoded, for the caller to cover the rest from
 * finer levels. A chunk whose bytes do not decode is skipped (and quarantined
 * after the scan): the rest of the range is still answered, and a rollup that
 * does not decode is replaced, in this very scan, by the finer chunks it sums.
 */
static int scan_level(struct scan *sc, int level, int64_t from, int64_t until, int64_t **seen,
		      size_t *n_seen)
{
	sqlite3_stmt *st = sc->sel;
	int rc, err = 0;
	size_t cap = 0;

	sqlite3_bind_int(st, 1, level);
	sqlite3_bind_int64(st, 2, from);
	sqlite3_bind_int64(st, 3, until);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t0 = sqlite3_column_int64(st, 0), dur = sqlite3_column_int64(st, 1);
		const char *why = NULL;

		err = read_chunk(sc, st, t0, dur, &why);
		if (!err && why) {
			err = add_bad(sc, st, level, t0, why);
			continue;
		}
		if (!err && seen)
			err = push_seen(seen, n_seen, &cap, t0);
		if (!err && sc->rows.n)
			err = sc->fn(sc->ctx, sc->out, sc->rows.n);
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_reset(st);
	return err;
}

/*
 * Covers [from, until) with levels <= level (see the file comment): the rollups
 * of this level inside the range, then the gaps between them (edges and missing
 * windows) from finer levels. Work is proportional to the chunks found, not to
 * the length of the range: from=0 costs no more than from=now-1h.
 */
static int cover(struct scan *sc, int level, int64_t from, int64_t until)
{
	int64_t w, a, b, prev, *seen = NULL;
	size_t n_seen = 0;
	int err;

	if (from >= until)
		return 0;
	if (level == 0)
		return scan_level(sc, 0, from, until, NULL, NULL);
	w = store_level_window_ns[level];
	if (sc->max_window > 0 && w > sc->max_window)
		return cover(sc, level - 1, from, until);
	a = from - from % w; /* the window of from (rounded toward 0), then the next one */
	if (from % w && __builtin_add_overflow(a, w, &a))
		return cover(sc, level - 1, from, until); /* no whole window before INT64_MAX */
	b = until - until % w;
	if (a >= b)
		return cover(sc, level - 1, from, until);
	err = scan_level(sc, level, a, b - w + 1, &seen, &n_seen);
	prev = from;
	for (size_t i = 0; !err && i < n_seen; i++) {
		err = cover(sc, level - 1, prev, seen[i]);
		prev = seen[i] + w;
	}
	free(seen);
	return err ?: cover(sc, level - 1, prev, until);
}

int store_scan_locked(struct estore *s, const struct store_scan_query *q, int max_level,
		      store_rows_fn fn, void *ctx)
{
	struct scan sc = {.s = s,
			  .ids = q->ids,
			  .n_ids = q->n_ids,
			  .max_window = q->max_window_ns,
			  .flags = q->flags,
			  .fn = fn,
			  .ctx = ctx};
	int64_t from = q->from_ns, until = q->until_ns;
	int err;

	if (from <= 0)
		from = 1;
	/* nothing starts before first_ns: a range from 0 (or years back) starts there;
	 * the coarsest windows stay aligned, so the same rollups are used */
	if (s->first_ns > 0 && from < s->first_ns)
		from = s->first_ns;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT t0, dur, totals, data, raw_len, id FROM chunks"
			       " WHERE level=? AND t0>=? AND t0<? ORDER BY t0",
			       -1, &sc.sel, NULL) != SQLITE_OK)
		return -EIO;
	err = cover(&sc, max_level, from, until);
	sqlite3_finalize(sc.sel);
	/* after the scan's statement is done: quarantine changes the chunks table */
	for (size_t i = 0; i < sc.n_bad; i++)
		store_quarantine(s, sc.bad[i].id, sc.bad[i].level, sc.bad[i].t0, sc.bad[i].reason);
	free(sc.bad);
	store_rows__fini(&sc.rows);
	free(sc.out);
	free(sc.scratch);
	return err;
}

int estore_scan(struct store *base, const struct store_scan_query *q, store_rows_fn fn, void *ctx)
{
	struct estore *s = estore_of(base);
	int err;

	if (!q->n_ids)
		return 0;
	if (q->from_ns > q->until_ns)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	err = store_scan_locked(s, q, STORE_LEVELS - 1, fn, ctx);
	pthread_mutex_unlock(&s->lock);
	return err;
}

/* ---- rollups ---- */

static int collect(void *ctx, const struct store_row *rows, size_t n)
{
	struct store_rows *out = ctx;

	for (size_t i = 0; i < n; i++) {
		struct store_crow r = {
		    rows[i].series_id, rows[i].stack_id, {rows[i].values[0], rows[i].values[1]}};
		if (store_rows__push(out, &r))
			return -ENOMEM;
	}
	return 0;
}

/* The period hint of merged rows: values[1] / values[0] of the first row. */
static int64_t period_hint(const struct store_rows *rows)
{
	for (size_t i = 0; i < rows->n; i++)
		if (rows->r[i].v[0] > 0)
			return rows->r[i].v[1] / rows->r[i].v[0];
	return 0;
}

/* Builds the rollup of one window in its own transaction. */
static int rollup_one(struct estore *s, int level, int64_t t0)
{
	struct store_rows rows = {0};
	int64_t w = store_level_window_ns[level];
	sqlite3_stmt *st = NULL;
	int err;

	err = store_exec(s, "BEGIN IMMEDIATE", NULL, 0);
	if (err)
		return err;
	err =
	    store_scan_locked(s,
			      &(struct store_scan_query){
				  .from_ns = t0, .until_ns = t0 + w, .flags = STORE_SCAN_LOCAL_IDS},
			      level - 1, collect, &rows);
	if (!err) {
		store_rows__sort_merge(&rows);
		sqlite3_bind_int(s->del_rollup, 1, level);
		sqlite3_bind_int64(s->del_rollup, 2, t0);
		err = sqlite3_step(s->del_rollup) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_reset(s->del_rollup);
	}
	if (!err && rows.n)
		err = store_insert_chunk(s, level, t0, w, &rows, period_hint(&rows));
	if (!err && sqlite3_prepare_v2(s->db, "DELETE FROM pending WHERE level=? AND t0=?", -1, &st,
				       NULL) == SQLITE_OK) {
		sqlite3_bind_int(st, 1, level);
		sqlite3_bind_int64(st, 2, t0);
		err = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	}
	sqlite3_finalize(st);
	err = err ?: store_exec(s, "COMMIT", NULL, 0);
	if (err)
		store_exec(s, "ROLLBACK", NULL, 0);
	else if (rows.n)
		s->stats.chunks++;
	store_rows__fini(&rows);
	return err;
}

/*
 * Reads the rollup of window t0 at level (one chunk; every one, were there
 * more) into out, with the series-local ids as stored. *n: chunks read; *bad:
 * the id of one that does not decode, or names a stack its series lacks (0:
 * none), and *why the reason.
 */
static int read_rollup(struct estore *s, int level, int64_t t0, struct store_rows *out, size_t *n,
		       int64_t *bad, const char **why)
{
	sqlite3_stmt *st = s->sel_rollup;
	uint8_t *scratch = NULL;
	size_t scratch_cap = 0;
	int rc = SQLITE_DONE, err = 0;

	*n = 0;
	*bad = 0;
	sqlite3_bind_int(st, 1, level);
	sqlite3_bind_int64(st, 2, t0);
	while (!err && !*bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t at = out->n;

		(*n)++;
		err = store_chunk_decode(
		    sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1),
		    (size_t)sqlite3_column_int64(st, 2), NULL, 0, out, &scratch, &scratch_cap);
		*why = err == -EINVAL ? "body does not decode" : NULL;
		for (size_t i = at; !err && !*why && i < out->n; i++)
			if (!store_global_stack(s, out->r[i].series_id, out->r[i].stack_id))
				*why = "names a stack its series does not have";
		if (*why) {
			*bad = sqlite3_column_int64(st, 0);
			err = 0;
		}
	}
	if (!err && !*bad && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_reset(st);
	free(scratch);
	return err;
}

/*
 * A late append into a window already rolled up: its rows are added into the
 * rollup (and into every coarser one, by the caller), which is then exactly
 * what a rebuild would make from complete finer levels. Rebuilding instead
 * would lose what the size budget deleted underneath: the finer chunks of a
 * downsampled window are gone, and the rollup is all that holds them.
 */
int store_rollup_add(struct estore *s, int level, int64_t t0, const struct store_rows *rows,
		     bool *found)
{
	struct store_rows sum = {0};
	const char *why = NULL;
	size_t n;
	int64_t bad;
	int err = read_rollup(s, level, t0, &sum, &n, &bad, &why);

	*found = !err && n && !bad;
	if (!err && bad) {
		/* moved aside with its bytes and pending again: rebuilt from what the
		 * finer levels still hold (docs/storage.md, "Corruption") */
		err = store_quarantine(s, bad, level, t0, why);
		sqlite3_bind_int(s->del_rollup, 1, level);
		sqlite3_bind_int64(s->del_rollup, 2, t0);
		if (!err && sqlite3_step(s->del_rollup) != SQLITE_DONE)
			err = -EIO;
		sqlite3_reset(s->del_rollup);
	}
	if (err || !*found || !rows->n)
		goto cleanup;
	for (size_t i = 0; !err && i < rows->n; i++)
		err = store_rows__push(&sum, &rows->r[i]);
	if (err)
		goto cleanup;
	store_rows__sort_merge(&sum);
	sqlite3_bind_int(s->del_rollup, 1, level);
	sqlite3_bind_int64(s->del_rollup, 2, t0);
	err = sqlite3_step(s->del_rollup) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_reset(s->del_rollup);
	err = err
		  ?: store_insert_chunk(s, level, t0, store_level_window_ns[level], &sum,
					period_hint(&sum));
cleanup:
	store_rows__fini(&sum);
	return err;
}

int store_rollup_due(struct estore *s, int64_t now_ns)
{
	sqlite3_stmt *st = NULL;
	int64_t due[256];
	int first_err = 0;

	/* a window that fails stays pending (and is logged); the others go on */
	for (int l = 1; l < STORE_LEVELS; l++) {
		size_t n = 0;

		if (sqlite3_prepare_v2(s->db,
				       "SELECT t0 FROM pending WHERE level=? AND t0<=? ORDER BY t0"
				       " LIMIT 256",
				       -1, &st, NULL) != SQLITE_OK)
			return -EIO;
		sqlite3_bind_int(st, 1, l);
		sqlite3_bind_int64(st, 2,
				   now_ns - store_level_window_ns[l] - STORE_ROLLUP_GRACE_NS);
		while (n < 256 && sqlite3_step(st) == SQLITE_ROW)
			due[n++] = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		for (size_t i = 0; i < n; i++) {
			int err = rollup_one(s, l, due[i]);

			if (err && !first_err) {
				store_log(s, "rollup of level %d window %lld ns failed: %s", l,
					  (long long)due[i], strerror(-err));
				first_err = err;
			}
		}
	}
	return first_err;
}
