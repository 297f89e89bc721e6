/*
 * Tests of the store's size budget (src/store/embedded/budget.c, store_opts.max_disk_bytes):
 * a day of a host's profiles (one every 10 s) into a store whose budget holds
 * the day's rollups and a few hours of raw chunks: the files (database + WAL,
 * as `du` sees them) stay within the budget after every append and maintenance
 * tick, the last hour is still raw (a 10 s step answers every profile), and
 * every hour of the day still answers its exact totals at 1 h resolution.
 * A budget too small for the day's rollups drops the oldest windows instead;
 * minutes of empty profiles (no rollup) do not stop the downsampling; a store
 * created without incremental vacuum is converted at the first open with a
 * budget; a profile arriving late into a downsampled window is added to what the
 * window's rollups hold, before and after a reopen. Sizes are deterministic (same profiles, same SQLite pages).
 */
#include "unit.h"

#include "ingest/ingest.h"
#include "query/query.h"
#include "store/store.h"
#include "store/embedded/store_impl.h"

#include <sqlite3.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S    1000000000LL
#define HOUR (3600 * S)
/* A 6-h-aligned start, so that hours and rollup windows line up. */
#define DAY0	 (1700000000LL * S - (1700000000LL * S) % (6 * HOUR))
#define STEP_S	 30 /* a profile every 30 s */
#define PER_DAY	 (24 * 3600 / STEP_S)
#define PER_HOUR (3600 / STEP_S)
#define N_PROC	 12
#define N_STACK	 8

/* Profile i of the host (at DAY0 + 10 s i): N_PROC processes of N_STACK stacks
 * each, counts varying with i; *samples gets its sum of values[0]. */
static struct profile *host_profile(long i, int64_t *samples)
{
	struct profile *p = profile__new(10000000);
	char name[32], proc[32];

	*samples = 0;
	if (!p)
		return NULL;
	profile__set_time(p, DAY0 + i * STEP_S * S, STEP_S * S);
	uint64_t m = profile__mapping(p, 0x1000, 0x90000, 0, "/usr/bin/app", "cafe");
	struct profile_line lm = {profile__function(p, "main", "main", "app.c"), 1};
	uint64_t lmain = profile__location(p, m, 0x1000, &lm, 1);

	for (int k = 0; k < N_PROC; k++) {
		struct profile_label labels[2] = {{"process", proc, 0}, {"pid", NULL, 1000 + k}};

		snprintf(proc, sizeof(proc), "worker%d", k);
		for (int j = 0; j < N_STACK; j++) {
			snprintf(name, sizeof(name), "handler_%d_%d", k, j);
			struct profile_line l = {profile__function(p, name, name, "app.c"), 10 + j};
			uint64_t locs[2] = {
			    profile__location(p, m, 0x2000 + (uint64_t)(k * 64 + j), &l, 1), lmain};
			int64_t c = 1 + (i * 7 + k * 13 + j * 3) % 17;
			int64_t v[2] = {c, c * 10000000};

			*samples += c;
			if (profile__add_sample(p, locs, 2, v, labels, 2)) {
				profile__free(p);
				return NULL;
			}
		}
	}
	return p;
}

/* What counts against the budget, as a user measures it: the two files. */
static uint64_t files_bytes(const char *dir)
{
	const char *names[] = {"hearth.db", "hearth.db-wal"};
	uint64_t sum = 0;
	char p[400];
	struct stat sb;

	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		if (!stat(p, &sb))
			sum += (uint64_t)sb.st_size;
	}
	return sum;
}

/* Appends profiles [from, to) of the day, a maintenance tick a simulated minute;
 * adds each one's samples to hours[], keeps the largest size of the files. */
static int fill_day(struct store *s, const char *dir, long from, long to, int64_t *hours,
		    uint64_t *peak)
{
	char err[256];

	for (long i = from; i < to; i++) {
		int64_t samples;
		struct profile *p = host_profile(i, &samples);
		int e = p ? store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err)) : -ENOMEM;
		uint64_t now;

		profile__free(p);
		if (e) {
			fprintf(stderr, "  append %ld: %s\n", i, err);
			return e;
		}
		hours[i / PER_HOUR] += samples;
		now = files_bytes(dir);
		*peak = now > *peak ? now : *peak;
		if (i % (60 / STEP_S) == 60 / STEP_S - 1 &&
		    (e = store__maintain(s, DAY0 + (i + 1) * STEP_S * S, NULL)))
			return e;
		now = files_bytes(dir);
		*peak = now > *peak ? now : *peak;
	}
	return 0;
}

/* Every series id of the store (ascending), for scans. */
struct ids {
	uint64_t v[N_PROC * 2];
	size_t n;
};

static int add_id(void *ctx, const struct store_series *ser)
{
	struct ids *ids = ctx;

	if (ids->n == sizeof(ids->v) / sizeof(ids->v[0]))
		return -E2BIG;
	ids->v[ids->n++] = ser->id;
	return 0;
}

/* Per-step totals of a scan: sums[] by step from `from`, and the distinct chunk
 * start times met (raw chunks of one profile each are distinct). */
struct steps {
	int64_t from, step;
	int64_t sums[PER_DAY];
	int64_t times[PER_DAY];
	size_t n_times;
	int64_t longest; /* the longest chunk a row came from */
};

static int add_rows(void *ctx, const struct store_row *rows, size_t n)
{
	struct steps *st = ctx;

	for (size_t i = 0; i < n; i++) {
		int64_t k = (rows[i].time_ns - st->from) / st->step;

		if (k < 0 || k >= PER_DAY)
			return -ERANGE;
		st->sums[k] += rows[i].values[0];
		if (!st->n_times || st->times[st->n_times - 1] != rows[i].time_ns)
			if (st->n_times < PER_DAY)
				st->times[st->n_times++] = rows[i].time_ns;
		if (rows[i].duration_ns > st->longest)
			st->longest = rows[i].duration_ns;
	}
	return 0;
}

/* Totals of [from, until) by step, reading no chunk longer than max_window. */
static int scan_steps(struct store *s, int64_t from, int64_t until, int64_t step,
		      int64_t max_window, struct steps *st)
{
	struct ids ids = {.n = 0};
	int e = store__series_foreach(s, add_id, &ids);

	memset(st, 0, sizeof(*st));
	st->from = from;
	st->step = step;
	if (e)
		return e;
	struct store_scan_query q = {.ids = ids.v,
				     .n_ids = ids.n,
				     .from_ns = from,
				     .until_ns = until,
				     .max_window_ns = max_window,
				     .flags = STORE_SCAN_TOTALS};
	return store__scan(s, &q, add_rows, st);
}

/* The budget of the day test: the day's rollups and a few hours of raw chunks
 * fit, the whole day of raw chunks (about 4x this) does not. */
#define DAY_BUDGET (896ull << 10)

TEST(budget_keeps_the_day_at_rollup_resolution)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {
	    .sample_labels = ingest_sample_labels, .no_fsync = true, .max_disk_bytes = DAY_BUDGET};
	static int64_t hours[24];
	static struct steps st;
	uint64_t peak = 0;
	struct store_stats ss;
	int64_t end = DAY0 + 24 * HOUR, total = 0;

	snprintf(dir, sizeof(dir), "%s/day", unit_tmp_dir());
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	CHECK(fill_day(s, dir, 0, PER_DAY, hours, &peak) == 0);
	CHECK(store__stats(s, &ss) == 0);
	fprintf(stderr,
		"  day: peak %llu bytes of a %llu budget (%.1f%%), now %llu; %llu chunks "
		"downsampled, %llu dropped, %llu raw left\n",
		(unsigned long long)peak, (unsigned long long)DAY_BUDGET, 100.0 * peak / DAY_BUDGET,
		(unsigned long long)files_bytes(dir), (unsigned long long)ss.budget_downsampled,
		(unsigned long long)ss.budget_dropped, (unsigned long long)ss.profiles);
	CHECKF(peak <= DAY_BUDGET, "peak %llu", (unsigned long long)peak);
	CHECK(ss.disk_budget_bytes == DAY_BUDGET && ss.bytes_on_disk <= DAY_BUDGET);
	/* the budget did work, by downsampling only: no data lost */
	CHECK(ss.budget_downsampled > 0 && ss.budget_dropped == 0);
	CHECK(ss.profiles < PER_DAY / 2);
	/* the last hour at full resolution: each of its profiles at a 10 s step */
	CHECK(scan_steps(s, end - HOUR, end, 10 * S, 10 * S, &st) == 0);
	CHECKF(st.n_times == PER_HOUR, "%zu raw chunks in the last hour", st.n_times);
	for (int k = 0; k < PER_HOUR; k++)
		CHECKF(st.sums[k * STEP_S / 10] > 0, "no data at %d s of the last hour",
		       k * STEP_S);
	/* the first hour has no raw chunks left: a 10 s step finds nothing */
	CHECK(scan_steps(s, DAY0, DAY0 + HOUR, 10 * S, 10 * S, &st) == 0);
	CHECK(st.n_times == 0);
	/* the whole day at 1-min resolution: the budget took raw chunks only */
	CHECK(scan_steps(s, DAY0, end, 60 * S, 60 * S, &st) == 0);
	for (int k = 0; k < 24 * 60; k++)
		CHECKF(st.sums[k] > 0, "no data in minute %d", k);
	/* the whole day at 1 h resolution: every hour, its exact totals */
	CHECK(scan_steps(s, DAY0, end, HOUR, HOUR, &st) == 0);
	for (int h = 0; h < 24; h++) {
		CHECKF(st.sums[h] == hours[h], "hour %d: %lld samples, %lld appended", h,
		       (long long)st.sums[h], (long long)hours[h]);
		total += hours[h];
	}
	/* and merged over the day */
	struct query_request r = {.from_ns = DAY0, .until_ns = end};
	struct profile *m = NULL;

	CHECK(query_profile(s, &r, &m, err, sizeof(err)) == 0);
	int64_t merged = profile__total(m, 0);
	profile__free(m);
	CHECKF(merged == total, "merged %lld of %lld", (long long)merged, (long long)total);
cleanup:
	store__close(s);
}

#define SMALL_BUDGET 120000ull

/* A budget smaller than the day's rollups: the oldest 6-h windows are dropped
 * whole, the files stay within the budget, the newest data is all there. */
TEST(budget_drops_the_oldest_windows_when_rollups_do_not_fit)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {.sample_labels = ingest_sample_labels,
			       .no_fsync = true,
			       .max_disk_bytes = SMALL_BUDGET};
	static int64_t hours[24];
	static struct steps st;
	uint64_t peak = 0;
	struct store_stats ss;
	int64_t end = DAY0 + 12 * HOUR;

	snprintf(dir, sizeof(dir), "%s/small", unit_tmp_dir());
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	CHECK(fill_day(s, dir, 0, PER_DAY / 2, hours, &peak) == 0);
	CHECK(store__stats(s, &ss) == 0);
	fprintf(stderr, "  small: peak %llu of %llu (%.1f%%); %llu downsampled, %llu dropped\n",
		(unsigned long long)peak, SMALL_BUDGET, 100.0 * peak / SMALL_BUDGET,
		(unsigned long long)ss.budget_downsampled, (unsigned long long)ss.budget_dropped);
	CHECKF(peak <= o.max_disk_bytes, "peak %llu", (unsigned long long)peak);
	CHECK(ss.budget_dropped > 0);
	/* the first 6 h are gone; the last minute still answers at 10 s */
	CHECK(scan_steps(s, DAY0, DAY0 + 6 * HOUR, HOUR, HOUR, &st) == 0);
	CHECK(st.n_times == 0);
	CHECK(scan_steps(s, end - 60 * S, end, 10 * S, 10 * S, &st) == 0);
	CHECKF(st.n_times == 60 / STEP_S, "%zu raw chunks in the last minute", st.n_times);
cleanup:
	store__close(s);
}

/* Empty profiles (an idle host) make raw chunks without rows, and minutes of
 * only those make no 1-min rollup: they are downsampled all the same, and the
 * downsampling goes past them (the 1-min rollups of the hours it passed stay). */
TEST(budget_downsamples_past_minutes_of_empty_profiles)
{
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {
	    .sample_labels = ingest_sample_labels, .no_fsync = true, .max_disk_bytes = 240000};
	static struct steps st;
	struct store_stats ss;
	int64_t end = DAY0 + 3 * HOUR;

	snprintf(dir, sizeof(dir), "%s/empty", unit_tmp_dir());
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	for (long i = 0; i < 3 * PER_HOUR; i++) {
		int64_t samples;
		/* the first minute of every 10 is empty */
		struct profile *p = i % 20 < 2 ? profile__new(10000000) : host_profile(i, &samples);
		int e;

		CHECK(p);
		if (i % 20 < 2)
			profile__set_time(p, DAY0 + i * STEP_S * S, STEP_S * S);
		e = store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err));
		profile__free(p);
		CHECKF(e == 0, "append %ld: %s", i, err);
	}
	CHECK(store__stats(s, &ss) == 0);
	CHECKF(ss.budget_downsampled > 0 && ss.budget_dropped == 0,
	       "%llu downsampled, %llu dropped, %llu raw left",
	       (unsigned long long)ss.budget_downsampled, (unsigned long long)ss.budget_dropped,
	       (unsigned long long)ss.profiles);
	/* the first hour: no raw chunk left, every minute with data answered */
	CHECK(scan_steps(s, DAY0, DAY0 + HOUR, 10 * S, 10 * S, &st) == 0);
	CHECKF(st.n_times == 0, "%zu raw chunks", st.n_times);
	CHECK(scan_steps(s, DAY0, end, 60 * S, 60 * S, &st) == 0);
	for (int k = 0; k < 3 * 60; k++)
		CHECKF((st.sums[k] > 0) == (k % 10 != 0), "minute %d: %lld", k,
		       (long long)st.sums[k]);
cleanup:
	store__close(s);
}

/* auto_vacuum of the database in dir, read with SQLite directly. */
static int64_t auto_vacuum(const char *dir)
{
	char p[400];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	snprintf(p, sizeof(p), "%s/hearth.db", dir);
	if (sqlite3_open(p, &db) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "PRAGMA auto_vacuum", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* A store of an older hearth (no incremental vacuum): the first open with a
 * budget converts it and brings it under the budget; new stores have it. */
TEST(budget_converts_an_older_store)
{
	char dir[300], err[256], p[400];
	struct store *s = NULL;
	struct store_opts o = {.sample_labels = ingest_sample_labels, .no_fsync = true};
	static int64_t hours[24];
	uint64_t peak = 0;
	sqlite3 *db = NULL;
	struct store_stats ss;

	snprintf(dir, sizeof(dir), "%s/old", unit_tmp_dir());
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	CHECK(fill_day(s, dir, 0, 3 * PER_HOUR, hours, &peak) == 0);
	store__close(s);
	s = NULL;
	CHECK(auto_vacuum(dir) == 2);
	snprintf(p, sizeof(p), "%s/hearth.db", dir);
	CHECK(sqlite3_open(p, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "PRAGMA auto_vacuum=NONE; VACUUM", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	db = NULL;
	CHECK(auto_vacuum(dir) == 0);
	o.max_disk_bytes = files_bytes(dir) / 2;
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	CHECK(store__stats(s, &ss) == 0);
	CHECKF(ss.budget_downsampled > 0, "budget %llu, %llu bytes, %llu raw",
	       (unsigned long long)o.max_disk_bytes, (unsigned long long)files_bytes(dir),
	       (unsigned long long)ss.profiles);
	CHECKF(files_bytes(dir) <= o.max_disk_bytes, "%llu bytes",
	       (unsigned long long)files_bytes(dir));
	store__close(s);
	s = NULL;
	CHECK(auto_vacuum(dir) == 2);
cleanup:
	sqlite3_close(db);
	store__close(s);
}

/* Chunks of level starting in [from, until), read from the chunks table. */
static int64_t chunks_in(struct store *s, int level, int64_t from, int64_t until)
{
	char sql[200];

	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM chunks WHERE level = %d AND t0 >= %lld AND t0 < %lld", level,
		 (long long)from, (long long)until);
	return store_query_int(estore_of(s), sql);
}

/* Appends host profile i as if it started at t, arriving late; *samples: its sum. */
static int append_late(struct store *s, long i, int64_t t, int64_t *samples)
{
	char err[256];
	struct profile *p = host_profile(i, samples);
	int e;

	if (!p)
		return -ENOMEM;
	profile__set_time(p, t, STEP_S * S);
	e = store__append(s, p, NULL, NULL, 0, NULL, err, sizeof(err));
	if (e)
		fprintf(stderr, "  late append at %lld: %s\n", (long long)t, err);
	profile__free(p);
	return e;
}

/* Totals of the first 3 hours at a step of w, and at 1 h, are want[] and hours[]. */
static void check_totals(int *unit_failed, struct store *s, int64_t w, const int64_t *want,
			 const int64_t *hours, const char *when)
{
	static struct steps st;

	CHECK(scan_steps(s, DAY0, DAY0 + 3 * HOUR, w, w, &st) == 0);
	for (int64_t k = 0; k < 3 * HOUR / w; k++)
		CHECKF(st.sums[k] == want[k], "%s: window %lld of %lld s: %lld samples, want %lld",
		       when, (long long)k, (long long)(w / S), (long long)st.sums[k],
		       (long long)want[k]);
	CHECK(scan_steps(s, DAY0, DAY0 + 3 * HOUR, HOUR, HOUR, &st) == 0);
	for (int h = 0; h < 3; h++)
		CHECKF(st.sums[h] == hours[h], "%s: hour %d: %lld samples, want %lld", when, h,
		       (long long)st.sums[h], (long long)hours[h]);
cleanup:;
}

/*
 * Three hours under budget, so that the first hour's finest level left is
 * `level` (1: 1-min rollups, 2: 10-min, 3: 1-h); then a profile arrives late
 * into its sixth minute, and after a reopen another one into its 26th: every
 * window holding them (at that level's step, and every hour) answers what it
 * held before plus the late samples.
 */
static void late_into_downsampled(int *failed, uint64_t budget, int level)
{
	int case_failed = 0, *unit_failed = &case_failed; /* each case runs to its end */
	char dir[300], err[256];
	struct store *s = NULL;
	struct store_opts o = {
	    .sample_labels = ingest_sample_labels, .no_fsync = true, .max_disk_bytes = budget};
	static int64_t hours[24], want[3 * 60];
	static struct steps st;
	int64_t w = store_level_window_ns[level],
		late[2] = {5 * 60 * S + 7 * S, 25 * 60 * S + 3 * S};
	uint64_t peak = 0;

	memset(hours, 0, sizeof(hours));
	snprintf(dir, sizeof(dir), "%s/late%d", unit_tmp_dir(), level);
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	CHECK(fill_day(s, dir, 0, 3 * PER_HOUR, hours, &peak) == 0);
	/* the first hour is held by `level` and coarser rollups only */
	for (int l = 0; l < level; l++)
		CHECKF(chunks_in(s, l, DAY0, DAY0 + HOUR) == 0, "budget %llu: level %d left",
		       (unsigned long long)budget, l);
	CHECK(chunks_in(s, level, DAY0, DAY0 + HOUR) > 0);
	CHECK(scan_steps(s, DAY0, DAY0 + 3 * HOUR, w, w, &st) == 0);
	memcpy(want, st.sums, sizeof(want));
	check_totals(unit_failed, s, w, want, hours, "before");
	for (int k = 0; k < 2 && !*unit_failed; k++) {
		int64_t n;

		if (k) { /* the second one after a restart */
			store__close(s);
			s = NULL;
			CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
			check_totals(unit_failed, s, w, want, hours, "reopened");
		}
		CHECK(append_late(s, 7 + k, DAY0 + late[k], &n) == 0);
		want[late[k] / w] += n;
		hours[0] += n;
		check_totals(unit_failed, s, w, want, hours, k ? "late after reopen" : "late");
		CHECK(store__maintain(s, DAY0 + 3 * HOUR, NULL) == 0);
		check_totals(unit_failed, s, w, want, hours, "maintained");
	}
	store__close(s);
	s = NULL;
	CHECK(store__open(dir, &o, &s, err, sizeof(err)) == 0);
	check_totals(unit_failed, s, w, want, hours, "reopened at the end");
cleanup:
	store__close(s);
	*failed |= case_failed;
}

/* A late profile into a window the budget downsampled is added to what the
 * window holds: nothing the budget kept is lost (docs/storage.md "Late data"). */
TEST(budget_late_profile_adds_to_the_downsampled_windows)
{
	late_into_downsampled(unit_failed, 240000, 1);
	late_into_downsampled(unit_failed, 200000, 2);
	late_into_downsampled(unit_failed, 150000, 3);
}
