/*
 * The store's one ingest path: a flat profile → rows (series, stack, values) →
 * one raw chunk, in one SQLite transaction with every newly interned string,
 * mapping, function, location, stack and series. Either all of it commits or
 * none of it does (the in-memory intern tables roll back with the transaction).
 *
 * append_flat.c translates the flat profile's indices to store ids; this file
 * holds what surrounds it: argument checks, series, stacks, the transaction.
 * store__append (the store's core) takes a model and stores its flat form
 * (profile__to_flat), so a model and its pprof store the same rows with the
 * same ids.
 */
#include "store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int store_append_key_room(struct store_append_ctx *a, size_t need)
{
	return base_grow((void **)&a->key, &a->key_cap, need, 1);
}

/*
 * The series-local id of the stack of these store location ids (leaf first) in
 * series: from the stack memo (stackmemo.c) when the series used this stack
 * before, else by interning the stack key and the (series, stack) pair.
 */
int store_append_stack(struct store_append_ctx *a, uint64_t series, const uint64_t *ids, size_t n,
		       const uint64_t h[2], uint64_t *local)
{
	const struct store_stackmemo_slot *sl;
	uint64_t stack;
	uint8_t *e;
	int err;

	if ((sl = store_stackmemo_find(&a->s->stackmemo, h, series))) {
		*local = sl->local;
		return 0;
	}
	if (n > SIZE_MAX / 16 || store_append_key_room(a, n * 10 + 1))
		return -ENOMEM;
	e = a->key;
	for (size_t i = 0; i < n; i++)
		e = base_varint_put(e, ids[i]);
	err = store_itab__intern(&a->s->tabs[STORE_T_STACKS], a->key, (size_t)(e - a->key), &stack,
				 NULL)
		  ?: store_local_id(a->s, series, stack, local);
	return err ?: store_stackmemo_put(&a->s->stackmemo, h, series, stack, *local);
}

static int label_cmp(const void *x, const void *y)
{
	return strcmp(((const struct store_label *)x)->name, ((const struct store_label *)y)->name);
}

/* The kept labels (opts.sample_labels) of a sample's (sorted) labels; numbers
 * are printed into nums. */
static size_t sample_labels(const struct estore *s, const struct profile_label *labels,
			    size_t n_labels, struct store_label *out,
			    char nums[STORE_MAX_SAMPLE_LABELS][24])
{
	size_t n = 0;

	for (size_t i = 0; i < n_labels; i++) {
		const struct profile_label *l = &labels[i];

		for (size_t k = 0; k < s->n_sample_labels && n < s->n_sample_labels; k++) {
			if (strcmp(l->key, s->opts.sample_labels[k]))
				continue;
			if (!l->str) {
				snprintf(nums[n], sizeof(nums[n]), "%lld", (long long)l->num);
				out[n] = (struct store_label){l->key, nums[n]};
			} else {
				out[n] = (struct store_label){l->key, l->str};
			}
			n += *out[n].value != 0; /* an empty value is no label */
			break;
		}
	}
	return n;
}

/* Series key: type NUL (name NUL value NUL)* sorted by name, into a->key. */
static int series_key(struct store_append_ctx *a, const struct store_label *l, size_t n,
		      size_t *len)
{
	size_t need = strlen(a->type) + 1, at;

	for (size_t i = 0; i < n; i++)
		need += strlen(l[i].name) + strlen(l[i].value) + 2;
	if (store_append_key_room(a, need))
		return -ENOMEM;
	at = strlen(a->type) + 1;
	memcpy(a->key, a->type, at);
	for (size_t i = 0; i < n; i++) {
		size_t ln = strlen(l[i].name) + 1, lv = strlen(l[i].value) + 1;

		memcpy(a->key + at, l[i].name, ln);
		memcpy(a->key + at + ln, l[i].value, lv);
		at += ln + lv;
	}
	*len = at;
	return 0;
}

/* The memo slot of a label array: its own, or the empty one where it goes. */
struct store_series_memo *store_append_memo_slot(struct store_append_ctx *a, const void *labels,
						 size_t bytes)
{
	size_t mask = a->memo_cap - 1;
	size_t i = bytes ? (size_t)base_hash_bytes(BASE_HASH_SEED, labels, bytes) & mask : 0;

	for (;; i = (i + 1) & mask) { /* layers: the series memo: slots hold the label array they key */
		struct store_series_memo *m = &a->memo[i];

		if (!m->id || (m->bytes == bytes && (!bytes || !memcmp(m->labels, labels, bytes))))
			return m;
	}
}

/* Series of sample labels sorted as the model sorts them (profile_label__cmp). */
int store_append_series(struct store_append_ctx *a, const struct profile_label *labels,
			size_t n_labels, uint64_t *out)
{
	struct store_label l[STORE_MAX_SERIES_LABELS + STORE_MAX_SAMPLE_LABELS];
	char nums[STORE_MAX_SAMPLE_LABELS][24];
	size_t n = sample_labels(a->s, labels, n_labels, l, nums), ns = n, len;
	bool added;
	int err;

	for (size_t i = 0; i < a->n_extra; i++) {
		bool dup = false;

		for (size_t k = 0; k < ns && !dup; k++)
			dup = strcmp(l[k].name, a->extra[i].name) == 0;
		if (!dup && *a->extra[i].value)
			l[n++] = a->extra[i];
	}
	if (n > a->s->opts.max_labels_per_series) {
		snprintf(a->err, a->errlen, "a series has %zu labels, over the limit of %zu", n,
			 a->s->opts.max_labels_per_series);
		return -E2BIG;
	}
	for (size_t i = 0; i < ns; i++)
		if (strlen(l[i].value) > STORE_MAX_LABEL_LEN) {
			snprintf(a->err, a->errlen, "label %s is longer than %d bytes", l[i].name,
				 STORE_MAX_LABEL_LEN);
			return -E2BIG;
		}
	if (n)
		qsort(l, n, sizeof(*l), label_cmp);
	err = series_key(a, l, n, &len)
		  ?: store_itab__intern(&a->s->tabs[STORE_T_SERIES], a->key, len, out, &added);
	if (err || !added)
		return err;
	a->new_series++;
	if (a->s->tabs[STORE_T_SERIES].live > a->s->opts.max_series) {
		snprintf(a->err, a->errlen, "the store holds its limit of %zu series",
			 a->s->opts.max_series);
		return -EDQUOT;
	}
	return 0;
}

/* Valid label name: [a-zA-Z_][a-zA-Z0-9_.]*. */
static bool name_ok(const char *s)
{
	if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return false;
	for (s++; *s; s++)
		if (!(*s == '_' || *s == '.' || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

static int check_args(int64_t time_ns, const char *type, const struct store_label *extra,
		      size_t n_extra, size_t max_labels, char *err, size_t errlen)
{
	if (time_ns <= 0) {
		snprintf(err, errlen, "the profile has no start time");
		return -EINVAL;
	}
	if (!*type || strlen(type) > STORE_MAX_LABEL_LEN) {
		snprintf(err, errlen, "the profile type is empty or too long");
		return -EINVAL;
	}
	if (n_extra > max_labels) {
		snprintf(err, errlen, "%zu labels given, over the limit of %zu", n_extra,
			 max_labels);
		return -E2BIG;
	}
	for (size_t i = 0; i < n_extra; i++) {
		if (!name_ok(extra[i].name) || !extra[i].value) {
			snprintf(err, errlen,
				 "invalid label name \"%.64s\" (want [a-zA-Z_][a-zA-Z0-9_.]*)",
				 extra[i].name ? extra[i].name : "");
			return -EINVAL;
		}
		if (strlen(extra[i].name) > STORE_MAX_LABEL_LEN ||
		    strlen(extra[i].value) > STORE_MAX_LABEL_LEN) {
			snprintf(err, errlen, "label %.64s is longer than %d bytes", extra[i].name,
				 STORE_MAX_LABEL_LEN);
			return -E2BIG;
		}
		for (size_t k = 0; k < i; k++)
			if (strcmp(extra[k].name, extra[i].name) == 0) {
				snprintf(err, errlen, "label %.64s is given twice", extra[i].name);
				return -EINVAL;
			}
	}
	return 0;
}

/*
 * The windows of t (levels 1-4) and the append's rows: added into the rollup of
 * each window that has one (late data: scan.c, store_rollup_add), the others
 * marked for rollup. Never dropped and rebuilt: the finer chunks of a window
 * the size budget downsampled are gone, and its rollup alone holds their data.
 */
static int touch_windows(struct estore *s, int64_t t, const struct store_rows *rows)
{
	for (int l = 1; l < STORE_LEVELS; l++) {
		int64_t w = t - t % store_level_window_ns[l];
		bool found;
		int err = store_rollup_add(s, l, w, rows, &found), rc;

		if (err)
			return err;
		if (found)
			continue;
		sqlite3_bind_int(s->ins_pending, 1, l);
		sqlite3_bind_int64(s->ins_pending, 2, w);
		rc = sqlite3_step(s->ins_pending);
		sqlite3_reset(s->ins_pending);
		if (rc != SQLITE_DONE)
			return -EIO;
	}
	return 0;
}

static int write_append(struct store_append_ctx *a, struct store_rows *rows, int64_t *samples)
{
	struct estore *s = a->s;
	int64_t t = a->time_ns;
	int err;

	err = store_append_flat_rows(a, rows, samples);
	if (err)
		return err;
	err = store_insert_chunk(s, 0, t, a->duration_ns, rows, a->period_ns) ?:
		store_flush_tabs(s) ?: touch_windows(s, t, rows);
	if (err == -EIO)
		snprintf(a->err, a->errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
	return err;
}

static int alloc_ctx(struct store_append_ctx *a)
{
	const struct profile_flat *f = a->f;
	size_t n_maps = f->n_mappings, n_funcs = f->n_functions, n_locs = f->n_locations;
	size_t n_samples = f->n_samples;

	a->map_ids = calloc(n_maps + 1, sizeof(uint64_t));
	a->func_ids = calloc(n_funcs + 1, sizeof(uint64_t));
	a->loc_ids = calloc(n_locs + 1, sizeof(uint64_t));
	a->map_h = calloc(n_maps + 1, sizeof(*a->map_h));
	a->func_h = calloc(n_funcs + 1, sizeof(*a->func_h));
	a->str_ids = calloc(f->n_strings + 1, sizeof(uint64_t));
	a->memo_cap = 16;
	while (a->memo_cap < 2 * n_samples && a->memo_cap < SIZE_MAX / 4)
		a->memo_cap *= 2;
	a->memo = calloc(a->memo_cap, sizeof(*a->memo));
	return a->map_ids && a->func_ids && a->loc_ids && a->memo && a->map_h && a->func_h &&
		       a->str_ids
		   ? 0
		   : -ENOMEM;
}

static void free_ctx(struct store_append_ctx *a)
{
	free(a->map_ids);
	free(a->func_ids);
	free(a->loc_ids);
	free(a->map_h);
	free(a->func_h);
	free(a->str_ids);
	free(a->memo);
	free(a->key);
}

/* A full disk is the operator's to fix, not a fault of the store or the profile:
 * say so (the server answers 507), before ROLLBACK resets SQLite's error. */
static int disk_full(struct estore *s, int err)
{
	return err == -EIO && (sqlite3_extended_errcode(s->db) & 0xff) == SQLITE_FULL ? -ENOSPC
										      : err;
}

/* Appends in its own transaction, or in the batch's (store__batch_begin). */
static int append_locked(struct store_append_ctx *a, struct store_append_result *res)
{
	struct estore *s = a->s;
	struct store_rows rows = {0};
	int64_t samples = 0;
	int err;

	if (s->batch && s->batch_failed) {
		store_set_err(a->err, a->errlen, "an earlier profile of this batch failed");
		return -ECANCELED;
	}
	err = alloc_ctx(a) ?: (s->batch ? 0 : store_exec(s, "BEGIN IMMEDIATE", a->err, a->errlen));
	if (err)
		goto cleanup;
	err = write_append(a, &rows, &samples)
		  ?: (s->batch ? 0 : store_exec(s, "COMMIT", a->err, a->errlen));
	if (err) {
		err = disk_full(s, err);
		if (s->batch) { /* store__batch_end rolls the whole batch back */
			s->batch_failed = true;
			goto cleanup;
		}
		store_exec(s, "ROLLBACK", NULL, 0);
		store_tabs_rollback(s);
		goto cleanup;
	}
	if (!s->batch)
		store_tabs_commit(s);
	s->stats.profiles++;
	s->stats.chunks++;
	s->stats.rows += rows.n;
	s->stats.samples += (uint64_t)samples;
	if (!s->stats.oldest_ns || a->time_ns < s->stats.oldest_ns)
		s->stats.oldest_ns = a->time_ns;
	if (!s->first_ns || store_first_window(a->time_ns) < s->first_ns)
		s->first_ns = store_first_window(a->time_ns);
	if (a->time_ns > s->newest_ns)
		s->newest_ns = s->stats.newest_ns = a->time_ns;
	if (res)
		*res = (struct store_append_result){0, a->new_series, rows.n, samples};
	for (size_t i = 0; res && i < rows.n; i++)
		res->series += !i || rows.r[i].series_id != rows.r[i - 1].series_id;
cleanup:
	store_rows__fini(&rows);
	return err;
}

static bool in_batch(struct estore *s);

/* Checks the arguments, then appends under the store's lock. */
static int append(struct store_append_ctx *a, struct store_append_result *res, char *err,
		  size_t errlen)
{
	char dummy[8];
	struct estore *s = a->s;
	int e;

	a->err = err && errlen ? err : dummy;
	a->errlen = err && errlen ? errlen : sizeof(dummy);
	*a->err = 0;
	a->type = a->type ? a->type : STORE_CPU_PROFILE_TYPE;
	e = check_args(a->time_ns, a->type, a->extra, a->n_extra, s->opts.max_labels_per_series,
		       a->err, a->errlen);
	if (e)
		return e;
	if (in_batch(s)) { /* the lock is the batch's: rollups wait for its end */
		e = append_locked(a, res);
		free_ctx(a);
		return e;
	}
	pthread_mutex_lock(&s->lock);
	e = append_locked(a, res);
	if (!e && !s->opts.no_auto_rollup)
		store_rollup_due(s, s->newest_ns); /* best effort: store__maintain retries */
	if (!e)
		store_budget_after_append(s);
	pthread_mutex_unlock(&s->lock);
	free_ctx(a);
	return e;
}

/* Whether this thread holds s's batch (and so its lock). */
static bool in_batch(struct estore *s)
{
	return __atomic_load_n(&s->batch, __ATOMIC_ACQUIRE) &&
	       pthread_equal(__atomic_load_n(&s->batch_owner, __ATOMIC_RELAXED), pthread_self());
}

int estore_batch_begin(struct store *base, char *err, size_t errlen)
{
	struct estore *s = estore_of(base);
	int e;

	pthread_mutex_lock(&s->lock);
	if ((e = store_exec(s, "BEGIN IMMEDIATE", err, errlen))) {
		pthread_mutex_unlock(&s->lock);
		return e;
	}
	s->batch_failed = false;
	s->batch_stats = s->stats;
	s->batch_newest_ns = s->newest_ns;
	s->batch_first_ns = s->first_ns;
	__atomic_store_n(&s->batch_owner, pthread_self(), __ATOMIC_RELAXED);
	__atomic_store_n(&s->batch, true, __ATOMIC_RELEASE);
	return 0;
}

int estore_batch_end(struct store *base, bool commit, char *err, size_t errlen)
{
	struct estore *s = estore_of(base);
	int e = 0;

	if (!in_batch(s))
		return -EINVAL;
	if (commit && !s->batch_failed)
		e = store_exec(s, "COMMIT", err, errlen);
	if (!commit || s->batch_failed || e) {
		e = e ? disk_full(s, e) : commit ? -ECANCELED : 0;
		store_exec(s, "ROLLBACK", NULL, 0);
		store_tabs_rollback(s);
		s->stats = s->batch_stats;
		s->newest_ns = s->batch_newest_ns;
		s->first_ns = s->batch_first_ns;
	} else {
		store_tabs_commit(s);
	}
	__atomic_store_n(&s->batch, false, __ATOMIC_RELEASE);
	if (!e && commit && !s->opts.no_auto_rollup)
		store_rollup_due(s, s->newest_ns);
	if (!e && commit)
		store_budget_after_append(s);
	pthread_mutex_unlock(&s->lock);
	return e;
}

int estore_append_flat(struct store *s, const struct profile_flat *f, const char *profile_type,
		       const struct store_label *extra, size_t n_extra,
		       struct store_append_result *res, char *err, size_t errlen)
{
	struct store_append_ctx a = {
	    .s = estore_of(s), .f = f, .type = profile_type, .extra = extra, .n_extra = n_extra};

	if (f) {
		a.time_ns = f->time_ns;
		a.duration_ns = f->duration_ns;
		a.period_ns = f->period_ns;
	}
	return append(&a, res, err, errlen);
}
