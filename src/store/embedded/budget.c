/*
 * The size budget (store_opts.max_disk_bytes; `hearth run|server --max-disk`):
 * the database and its WAL stay under a byte budget. Retention by time alone let
 * a busy host fill the disk; this bounds the store by what it may take.
 *
 * When the files pass the high mark (budget - budget/16), chunks are deleted
 * until the database's live pages are under the low mark (budget - budget/8 -
 * the WAL's bound), in this order, oldest first within each step:
 *
 *   0. raw chunks of 1-min windows whose 1-min rollup is built (the long view
 *      stays: a query of that time reads the rollup, at 1-min resolution),
 *   1. 1-min rollups of 10-min windows whose 10-min rollup is built,
 *   2. 10-min rollups of hours whose 1-h rollup is built,
 *   3. 1-h rollups of 6-h windows whose 6-h rollup is built,
 *   4. everything of the oldest 6-h window (its data is gone), never the window
 *      of the newest data.
 *
 * Due rollups are built first, so a window is downsampled rather than dropped
 * whenever its coarser rollup can be made. Each step's deletes are one
 * transaction (killed anywhere, the store is its last commit). Then the free
 * pages are given back to the file system (PRAGMA incremental_vacuum: stores
 * are created with auto_vacuum=INCREMENTAL; an older store is converted by one
 * VACUUM at the first open with a budget) and the WAL is checkpointed and
 * truncated. The WAL is kept small between: auto-checkpoint and
 * journal_size_limit at the WAL's bound (budget/32, from 64 KiB to 4 MiB).
 *
 * The work runs in store__maintain and right after an append that left the
 * files over the high mark; it never fails the append (errors are logged).
 * Everything here runs with the store's lock held and no transaction open.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The high and low marks: budget - budget/16 and budget - budget/8 - WAL bound. */
#define BUDGET_HIGH_DIV 16
#define BUDGET_LOW_DIV	8
/* The WAL's bound: budget / 32, clamped. */
#define BUDGET_WAL_DIV 32
#define BUDGET_WAL_MIN (64u << 10)
#define BUDGET_WAL_MAX (4u << 20)
/* Chunks one delete step takes at most (one transaction). */
#define BUDGET_STEP_CHUNKS 4096
/* PRAGMA auto_vacuum: what a store created with a budget-aware hearth has. */
#define BUDGET_AUTO_VACUUM_INCREMENTAL 2

static uint64_t wal_bound(const struct estore *s)
{
	uint64_t w = s->opts.max_disk_bytes / BUDGET_WAL_DIV;

	return w < BUDGET_WAL_MIN ? BUDGET_WAL_MIN : w > BUDGET_WAL_MAX ? BUDGET_WAL_MAX : w;
}

int store_budget_pragmas(struct estore *s, char *err, size_t errlen)
{
	char sql[160];
	uint64_t wal = wal_bound(s);
	int64_t page;
	int e;

	/* takes effect on a new database only (before its first table) */
	e = store_exec(s, "PRAGMA auto_vacuum=INCREMENTAL", err, errlen);
	if (e || !s->opts.max_disk_bytes)
		return e;
	page = store_query_int(s, "PRAGMA page_size");
	snprintf(sql, sizeof(sql), "PRAGMA wal_autocheckpoint=%llu; PRAGMA journal_size_limit=%llu",
		 (unsigned long long)(wal / (uint64_t)(page > 0 ? page : 4096)),
		 (unsigned long long)wal);
	return store_exec(s, sql, err, errlen);
}

/* Sizes of the files and of the database's pages in use. */
struct budget_figures {
	uint64_t disk; /* what counts against the budget: database + WAL */
	uint64_t live; /* pages in use (not on the freelist), in bytes */
};

static void measure(struct estore *s, struct budget_figures *f)
{
	int64_t page = store_query_int(s, "PRAGMA page_size");
	int64_t pages = store_query_int(s, "PRAGMA page_count");
	int64_t unused = store_query_int(s, "PRAGMA freelist_count");
	uint64_t bytes[2] = {0, 0}, logical;
	char p[4096];
	struct stat sb;

	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s%s", s->path, i ? "-wal" : "");
		if (!stat(p, &sb))
			bytes[i] = (uint64_t)sb.st_size;
	}
	logical = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	f->live = unused >= 0 && pages >= unused ? (uint64_t)(pages - unused) * (uint64_t)page : 0;
	/* pages still in the WAL make the file that large at the next checkpoint */
	f->disk = (bytes[0] > logical ? bytes[0] : logical) + bytes[1];
	/* a store not converted to incremental vacuum (the one-time VACUUM failed)
	 * cannot shrink its file: its free pages count as reusable room */
	if (store_query_int(s, "PRAGMA auto_vacuum") != BUDGET_AUTO_VACUUM_INCREMENTAL)
		f->disk = f->live + bytes[1];
}

/*
 * The oldest chunks of one level to delete, in (t0, id) order: every chunk of
 * the level up to (t0, id), so that one statement deletes them.
 */
struct budget_cut {
	int64_t t0, id;
	size_t n;
	uint64_t bytes; /* their blobs' sizes: roughly what deleting them frees */
};

/* Of the window t0 at level: whether its rollup is built (not pending), and
 * whether that made a chunk (a window whose chunks have no rows makes none). */
static int rolled_up(sqlite3_stmt *st, int level, int64_t t0, bool *built, bool *chunk)
{
	sqlite3_bind_int(st, 1, level);
	sqlite3_bind_int64(st, 2, t0);
	int rc = sqlite3_step(st);

	*built = rc == SQLITE_ROW && !sqlite3_column_int(st, 1);
	*chunk = rc == SQLITE_ROW && sqlite3_column_int(st, 0);
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

/*
 * Steps 0-3 of the file comment: the oldest chunks of level whose window of the
 * next level is rolled up, until need bytes or the first one that is not (the
 * order stays oldest first: no hole is left behind a window still pending).
 */
static int pick_downsample(struct estore *s, int level, uint64_t need, struct budget_cut *c)
{
	sqlite3_stmt *st = NULL, *chk = NULL;
	int64_t w = store_level_window_ns[level + 1], checked = -1;
	bool built = false, chunk = false;
	int e = 0;

	*c = (struct budget_cut){0};
	if (sqlite3_prepare_v2(s->db,
			       "SELECT id, t0, length(data) + length(totals), nrows FROM chunks"
			       " WHERE level=? ORDER BY t0, id LIMIT ?",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db,
			       "SELECT EXISTS(SELECT 1 FROM chunks WHERE level=?1 AND t0=?2),"
			       " EXISTS(SELECT 1 FROM pending WHERE level=?1 AND t0=?2)",
			       -1, &chk, NULL) != SQLITE_OK) {
		e = -EIO;
		goto cleanup;
	}
	sqlite3_bind_int(st, 1, level);
	sqlite3_bind_int(st, 2, BUDGET_STEP_CHUNKS);
	while (!e && c->bytes < need && sqlite3_step(st) == SQLITE_ROW) {
		int64_t t0 = sqlite3_column_int64(st, 1), win = t0 - t0 % w;

		if (win != checked) {
			e = rolled_up(chk, level + 1, win, &built, &chunk);
			checked = win;
		}
		/* a chunk without rows (an empty profile) needs no rollup to go */
		if (e || !built || (!chunk && sqlite3_column_int64(st, 3)))
			break;
		c->id = sqlite3_column_int64(st, 0);
		c->t0 = t0;
		c->n++;
		c->bytes += (uint64_t)sqlite3_column_int64(st, 2);
	}
cleanup:
	sqlite3_finalize(st);
	sqlite3_finalize(chk);
	return e;
}

/* Runs the n_sql statements (each bound to the leading ones of args) in one
 * transaction; *n: the rows the first one deleted. */
static int delete_txn(struct estore *s, const char *const *sql, int n_sql, const int64_t args[3],
		      uint64_t *n)
{
	int e = store_exec(s, "BEGIN IMMEDIATE", NULL, 0);

	*n = 0;
	for (int i = 0; !e && i < n_sql; i++) {
		sqlite3_stmt *st = NULL;

		if (sqlite3_prepare_v2(s->db, sql[i], -1, &st, NULL) != SQLITE_OK) {
			e = -EIO;
			break;
		}
		for (int k = 0; k < sqlite3_bind_parameter_count(st) && k < 3; k++)
			sqlite3_bind_int64(st, k + 1, args[k]);
		e = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
		if (!e && i == 0)
			*n = (uint64_t)sqlite3_changes(s->db);
		sqlite3_finalize(st);
	}
	e = e ?: store_exec(s, "COMMIT", NULL, 0);
	if (e) {
		store_exec(s, "ROLLBACK", NULL, 0);
		*n = 0;
	}
	return e;
}

/* Step 4: deletes every chunk (and the rollup work) of the oldest coarsest
 * window, unless it is the newest data's. *n: chunks deleted (0: none may go). */
static int drop_oldest_window(struct estore *s, uint64_t *n)
{
	static const char *const sql[] = {"DELETE FROM chunks WHERE t0 >= ?1 AND t0 < ?2",
					  "DELETE FROM pending WHERE t0 >= ?1 AND t0 < ?2"};
	int64_t oldest = store_query_int(s, "SELECT ifnull(min(t0), 0) FROM chunks");

	*n = 0;
	if (oldest <= 0 || store_first_window(oldest) >= store_first_window(s->newest_ns))
		return 0;
	oldest = store_first_window(oldest);
	return delete_txn(
	    s, sql, 2, (int64_t[3]){oldest, oldest + store_level_window_ns[STORE_LEVELS - 1]}, n);
}

/* One delete step toward the low mark: the first of steps 0-4 that has
 * something to delete. *n: chunks deleted (0: nothing left that may go). */
static int delete_step(struct estore *s, uint64_t need, uint64_t *n)
{
	static const char *const sql[] = {
	    "DELETE FROM chunks WHERE level=?1 AND (t0 < ?2 OR (t0 = ?2 AND id <= ?3))"};
	struct budget_cut c;
	int e = 0;

	*n = 0;
	for (int level = 0; level < STORE_LEVELS - 1; level++) {
		e = pick_downsample(s, level, need, &c);
		if (e)
			return e;
		if (c.n) {
			e = delete_txn(s, sql, 1, (int64_t[3]){level, c.t0, c.id}, n);
			s->stats.budget_downsampled += *n;
			return e;
		}
	}
	e = drop_oldest_window(s, n);
	s->stats.budget_dropped += *n;
	return e;
}

/* Gives the free pages back to the file system and empties the WAL. */
static int shrink_files(struct estore *s)
{
	int e = store_exec(s, "PRAGMA incremental_vacuum", NULL, 0);

	if (sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) !=
	    SQLITE_OK)
		e = e ?: -EIO;
	return e;
}

int store_budget_enforce(struct estore *s, bool force)
{
	uint64_t budget = s->opts.max_disk_bytes, high, low, n = 1;
	struct budget_figures f;
	int e = 0;

	if (!budget || s->batch)
		return 0;
	high = budget - budget / BUDGET_HIGH_DIV;
	low = budget - budget / BUDGET_LOW_DIV;
	low = low > wal_bound(s) ? low - wal_bound(s) : 0; /* a budget under ~80 KiB */
	measure(s, &f);
	if (f.disk <= high && !force)
		return 0;
	if (f.disk > high)
		store_rollup_due(s, s->newest_ns); /* downsample rather than drop */
	for (measure(s, &f); !e && n && f.live > low; measure(s, &f))
		e = delete_step(s, f.live - low, &n);
	if (e)
		store_log(s, "over its disk budget, deleting chunks failed: %s", strerror(-e));
	e = shrink_files(s) ?: e;
	measure(s, &f);
	if (n || f.disk <= high) {
		s->budget_warned_disk = 0;
	} else {
		if (!s->budget_warned_disk) /* once, until the store is under again */
			store_log(s,
				  "%llu bytes on disk, near or over the disk budget of %llu bytes, "
				  "and only the newest 6-h window's chunks and the intern tables "
				  "are left",
				  (unsigned long long)f.disk, (unsigned long long)budget);
		/* an append tries again only once the files grew by a sixteenth */
		s->budget_warned_disk = f.disk + budget / BUDGET_HIGH_DIV;
	}
	store_reload_stats(s);
	return e;
}

void store_budget_after_append(struct estore *s)
{
	struct budget_figures f;

	if (!s->opts.max_disk_bytes || s->batch)
		return;
	if (s->budget_warned_disk) {
		measure(s, &f);
		if (f.disk < s->budget_warned_disk)
			return;
	}
	store_budget_enforce(s, false); /* logs its errors; the append stands */
}

int store_budget_open(struct estore *s, char *err, size_t errlen)
{
	struct budget_figures f;
	int e;

	s->stats.disk_budget_bytes = s->opts.max_disk_bytes;
	if (!s->opts.max_disk_bytes)
		return 0;
	if (store_query_int(s, "PRAGMA auto_vacuum") != BUDGET_AUTO_VACUUM_INCREMENTAL) {
		/* a store created before: converted once, so that its file can shrink */
		measure(s, &f);
		store_log(
		    s,
		    "converting the store to incremental vacuum for --max-disk: one VACUUM of "
		    "%llu bytes (needs as much free space)",
		    (unsigned long long)f.disk);
		e = store_exec(s, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM", err, errlen);
		if (e)
			store_log(s,
				  "VACUUM failed (%s): free pages count as reusable room instead",
				  err && *err ? err : "SQLite error");
		if (err && errlen)
			*err = 0;
	}
	store_budget_enforce(s, true); /* logs its errors: the store opens all the same */
	return 0;
}
