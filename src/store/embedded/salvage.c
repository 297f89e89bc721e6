/*
 * Salvage of a damaged store (store__salvage, `hearth recover`): when SQLite
 * finds a page corrupt, the store no longer opens (it loads the intern tables
 * whole). This copies every row that can still be read into a new store:
 * each table is read in rowid order; where a read fails, the reader skips
 * ahead (1, 2, 4, ... rowids) until rows can be read again, then reads back
 * down towards the hole, so only rows on unreadable pages are lost. The damaged
 * database is opened read-only and left as it is.
 *
 * Then the copy is made whole (repair.c): what names a lost row is dropped,
 * chunks keep only rows whose series and stack survive, lost rollups are
 * marked to be built again. The new store opens like any other: ids that
 * surviving keys name but whose rows were lost (strings: frames whose strings
 * were lost have empty names) are kept out of reuse (store_check_refs).
 * Both directories are locked (lock.c) while it runs. SQLite's own `.recover` would do the same, but the sqlite3 CLI
 * Debian ships is built without the sqlite_dbpage table it needs.
 */
#include "store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Tables copied, in this order; the first column of each is its rowid. */
static const char *const salvage_tables[] = {
    "strings", "mappings",	"functions", "locations",  "stacks",
    "series",  "series_stacks", "chunks",    "quarantine",
};

/* Largest skip after a failed read (rowids are below 2^63). */
#define SALVAGE_MAX_SKIP (1ll << 62)

struct copier {
	sqlite3 *from, *to;
	sqlite3_stmt *fwd, *back, *ins;
	int ncols;
	uint64_t rows, holes;
	int64_t first_lost; /* of the table being copied: the lowest id that may be lost */
};

/* Inserts the current row of sel. 0 or -EIO. */
static int copy_row(struct copier *c, sqlite3_stmt *sel)
{
	int rc;

	for (int i = 0; i < c->ncols; i++)
		sqlite3_bind_value(c->ins, i + 1, sqlite3_column_value(sel, i));
	rc = sqlite3_step(c->ins);
	sqlite3_reset(c->ins);
	if (rc != SQLITE_DONE)
		return -EIO;
	c->rows++;
	return 0;
}

/* Reads rows from below hi down to (not including) lo, until a read fails. */
static int read_back(struct copier *c, int64_t lo, int64_t hi)
{
	int rc, e = 0;

	sqlite3_bind_int64(c->back, 1, lo);
	sqlite3_bind_int64(c->back, 2, hi);
	while (!e && (rc = sqlite3_step(c->back)) == SQLITE_ROW)
		e = copy_row(c, c->back);
	sqlite3_reset(c->back);
	return e;
}

/* Copies the readable rows of one table. 0 or -EIO (the new database). */
static int copy_table(struct copier *c)
{
	int64_t last = INT64_MIN, hole = 0, skip = 1;
	bool after_hole = false;
	int rc, e = 0;

	for (;;) {
		sqlite3_bind_int64(c->fwd, 1, last);
		while (!e && (rc = sqlite3_step(c->fwd)) == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(c->fwd, 0);

			if (after_hole) { /* the rows between the hole and here */
				after_hole = false;
				e = read_back(c, hole, id);
			}
			e = e ?: copy_row(c, c->fwd);
			last = id;
			skip = 1;
		}
		sqlite3_reset(c->fwd);
		if (e || rc == SQLITE_DONE)
			break;
		/* unreadable from last on: skip ahead, doubling */
		if (!after_hole) {
			c->holes++;
			hole = last;
			after_hole = true;
			if (c->first_lost == INT64_MAX)
				c->first_lost = last == INT64_MIN ? INT64_MIN : last + 1;
		}
		if (skip > SALVAGE_MAX_SKIP || last > INT64_MAX - skip)
			break;
		last = last == INT64_MIN ? 0 : last + skip;
		skip *= 2;
	}
	return e;
}

static int prepare_copier(struct copier *c, const char *table)
{
	char sql[256], *p;
	int n;

	snprintf(sql, sizeof(sql), "SELECT * FROM %s WHERE rowid > ? ORDER BY rowid", table);
	if (sqlite3_prepare_v2(c->from, sql, -1, &c->fwd, NULL) != SQLITE_OK)
		return -ENOENT; /* the table's schema is unreadable or missing */
	snprintf(sql, sizeof(sql),
		 "SELECT * FROM %s WHERE rowid > ? AND rowid < ? ORDER BY rowid DESC", table);
	if (sqlite3_prepare_v2(c->from, sql, -1, &c->back, NULL) != SQLITE_OK)
		return -ENOENT;
	c->ncols = sqlite3_column_count(c->fwd);
	n = snprintf(sql, sizeof(sql), "INSERT OR IGNORE INTO %s VALUES(?", table);
	p = sql + n;
	for (int i = 1; i < c->ncols && p + 4 < sql + sizeof(sql); i++)
		p += sprintf(p, ",?");
	snprintf(p, (size_t)(sql + sizeof(sql) - p), ")");
	if (sqlite3_prepare_v2(c->to, sql, -1, &c->ins, NULL) != SQLITE_OK)
		return -EIO;
	return 0;
}

/* The first column of the first row of sql, or 0. */
static int64_t sqlite3_query_count(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void finalize_copier(struct copier *c)
{
	sqlite3_finalize(c->fwd);
	sqlite3_finalize(c->back);
	sqlite3_finalize(c->ins);
	c->fwd = c->back = c->ins = NULL;
}


/* Creates the new store's schema (store__open does) and opens it raw. */
static int open_new(const char *to_dir, sqlite3 **to, char *err, size_t errlen)
{
	struct store_opts o = {.no_fsync = true};
	struct store *s = NULL;
	char *path = NULL;
	struct stat sb;
	int e;

	if (asprintf(&path, "%s/hearth.db", to_dir) < 0)
		return -ENOMEM;
	if (!stat(path, &sb)) {
		store_set_err(err, errlen, "%s already exists: give an empty or new directory", path);
		free(path);
		return -EEXIST;
	}
	e = store__open(to_dir, &o, &s, err, errlen);
	store__close(s);
	if (!e && sqlite3_open_v2(path, to, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		store_set_err(err, errlen, "%s: %s", path, sqlite3_errmsg(*to));
		e = -EIO;
	}
	free(path);
	return e;
}

/* Takes the damaged directory's lock, so that no hearth writes it meanwhile; a
 * directory where the lock file cannot even be made (a read-only medium) is
 * read all the same. 0, or -EBUSY (err names the owner). */
static int lock_damaged(const char *dir, int *fd, char *err, size_t errlen)
{
	int e = store_dir_lock(dir, fd, err, errlen);

	if (e && e != -EBUSY) {
		if (err && errlen)
			*err = 0;
		e = 0;
	}
	return e;
}

/* Copies every table's readable rows; *pairs_lost_from: the lowest id of
 * series_stacks that may be lost (INT64_MAX: none). */
static int copy_tables(struct copier *c, struct store_salvage_result *res,
		       int64_t *pairs_lost_from)
{
	int e = 0;

	*pairs_lost_from = INT64_MAX;
	for (size_t t = 0; !e && t < sizeof(salvage_tables) / sizeof(*salvage_tables); t++) {
		bool pairs = !strcmp(salvage_tables[t], "series_stacks");
		uint64_t rows = c->rows;
		int pe = prepare_copier(c, salvage_tables[t]);

		c->first_lost = INT64_MAX;
		if (pe == -ENOENT) {
			res->lost_tables++;
			c->first_lost = INT64_MIN;
		} else if (pe) {
			e = pe;
		} else {
			e = copy_table(c);
			if (!strcmp(salvage_tables[t], "chunks"))
				res->chunks = c->rows - rows;
		}
		if (pairs)
			*pairs_lost_from = c->first_lost;
		finalize_copier(c);
	}
	res->rows = c->rows;
	res->holes = c->holes;
	return e;
}

int store__salvage(const char *dir, const char *to_dir, struct store_salvage_result *res, char *err,
		   size_t errlen)
{
	struct copier c = {0};
	char *path = NULL;
	int64_t pairs_lost_from;
	int e = 0, from_lock = -1, to_lock = -1;

	memset(res, 0, sizeof(*res));
	if (err && errlen)
		*err = 0;
	if (asprintf(&path, "%s/hearth.db", dir) < 0)
		return -ENOMEM;
	if (access(path, R_OK)) {
		store_set_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
		free(path);
		return -ENOENT;
	}
	e = lock_damaged(dir, &from_lock, err, errlen);
	/* read-only: the damaged file (and its WAL) stay as they are */
	if (!e && sqlite3_open_v2(path, &c.from, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		store_set_err(err, errlen, "%s: %s", path, sqlite3_errmsg(c.from));
		e = -EIO;
	}
	/* A file shorter than its header says (truncated) is "malformed" at the
	 * first read unless the schema is writable: a flag of this connection
	 * only, which lets SQLite take the file's own length; nothing is written
	 * through a read-only connection. */
	if (!e)
		sqlite3_exec(c.from, "PRAGMA writable_schema=ON", NULL, NULL, NULL);
	e = e ?: open_new(to_dir, &c.to, err, errlen);
	/* the new store's schema is made (and its lock let go) by store__open in
	 * open_new: held from here until the copy is whole */
	e = e ?: store_dir_lock(to_dir, &to_lock, err, errlen);
	if (!e && sqlite3_exec(c.to, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		e = -EIO;
	e = e ?: copy_tables(&c, res, &pairs_lost_from);
	e = e ?: store_salvage_repair(c.to, pairs_lost_from, res);
	if (!e)
		res->series = (uint64_t)sqlite3_query_count(c.to, "SELECT count(*) FROM series");
	/* tells store__open to look for series only chunks still name */
	if (!e && sqlite3_exec(
		      c.to, "INSERT OR REPLACE INTO meta VALUES('salvaged', strftime('%s', 'now'))",
		      NULL, NULL, NULL) != SQLITE_OK)
		e = -EIO;
	if (!e && sqlite3_exec(c.to, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		e = -EIO;
	if (e && c.to && err && !*err)
		store_set_err(err, errlen, "%s/hearth.db: %s", to_dir,
			      e == -ENOMEM ? strerror(ENOMEM) : sqlite3_errmsg(c.to));
	finalize_copier(&c);
	sqlite3_close(c.from);
	sqlite3_close(c.to);
	store_dir_unlock(to_lock);
	store_dir_unlock(from_lock);
	free(path);
	return e;
}
