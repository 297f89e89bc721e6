/*
 * The ClickHouse backend's read side. A scan is one aggregation run by
 * ClickHouse (GROUP BY stack, or (series, stack), or (series, step), as the
 * scan's flags allow: see store.h), so what crosses the network is one row
 * per stack or per pair, never the raw rows. Stacks come back as content
 * hashes; this file expands the ones it has not met (stacks, then their
 * locations, functions and mappings, one IN query per kind) into a cache
 * under process-local dense ids, which is what the query layer's arrays
 * indexed by stack id and store_builder expect. The cache only grows with
 * the distinct stacks this server has been asked about, as the embedded
 * store's tables grow with the stacks it holds.
 */
#include "clickhouse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hashes per IN query (the text of one is ~21 bytes a hash). */
#define CH_IN_BATCH 50000
/* Rows handed to a scan's callback at a time. */
#define CH_SCAN_BATCH 4096

/* ---- series ---- */

/* The strings of one RowBinary series row, NUL-terminated in scratch. */
static int read_series(struct ch_rd *r, struct ch_buf *scratch, struct store_series *ser,
		       struct store_label *labels, size_t max)
{
	const char *s;
	size_t len, off[2 * STORE_DEFAULT_MAX_LABELS * 4 + 1];
	uint64_t n, nv;

	scratch->n = 0;
	if (!ch_rd_u64(r, &ser->id) || !ch_rd_str(r, &s, &len) || ch_buf_put(scratch, s, len) ||
	    ch_buf_put(scratch, "", 1) || !ch_rd_varint(r, &n) || n > max)
		return -EIO;
	for (uint64_t i = 0; i < n; i++) {
		off[i] = scratch->n;
		if (!ch_rd_str(r, &s, &len) || ch_buf_put(scratch, s, len) ||
		    ch_buf_put(scratch, "", 1))
			return -EIO;
	}
	if (!ch_rd_varint(r, &nv) || nv != n)
		return -EIO;
	for (uint64_t i = 0; i < n; i++) {
		off[n + i] = scratch->n;
		if (!ch_rd_str(r, &s, &len) || ch_buf_put(scratch, s, len) ||
		    ch_buf_put(scratch, "", 1))
			return -EIO;
	}
	ser->profile_type = (const char *)scratch->p;
	ser->n_labels = (size_t)n;
	ser->labels = labels;
	for (uint64_t i = 0; i < n; i++)
		labels[i] = (struct store_label){(const char *)scratch->p + off[i],
						 (const char *)scratch->p + off[n + i]};
	return 0;
}

int chstore_series_foreach(struct store *s, int (*fn)(void *ctx, const struct store_series *ser),
			   void *ctx)
{
	struct chstore *c = ch_of(s);
	struct store_label labels[STORE_DEFAULT_MAX_LABELS * 4];
	struct ch_buf a = {0}, scratch = {0};
	char err[512];
	int e = ch_sql(c, &a, err, sizeof(err),
		       "SELECT id, any(type), any(names), any(vals) FROM %s.series GROUP BY id "
		       "ORDER BY id FORMAT RowBinary",
		       c->db);
	struct ch_rd r = {a.p, a.p + a.n};

	if (e)
		fprintf(c->opts.log ? c->opts.log : stderr, "hearth: listing series: %s\n", err);
	while (!e && r.p < r.end) {
		struct store_series ser;

		e = read_series(&r, &scratch, &ser, labels, sizeof(labels) / sizeof(labels[0]));
		e = e ?: fn(ctx, &ser);
	}
	ch_buf_fini(&a);
	ch_buf_fini(&scratch);
	return e;
}

/* ---- the stack cache ---- */

/* What one resolution fetched, before it enters the cache. */
struct fetched {
	uint64_t *hash; /* per entry */
	uint64_t *u;	/* kind-specific: see each fetch */
	size_t n, cap, nu, capu;
	struct ch_buf strs; /* functions and mappings: their strings, NUL-terminated */
	size_t *soff;
	size_t nsoff, capsoff;
};

static void fetched_fini(struct fetched *f)
{
	free(f->hash);
	free(f->u);
	free(f->soff);
	ch_buf_fini(&f->strs);
	memset(f, 0, sizeof(*f));
}

static int push_u(struct fetched *f, uint64_t v)
{
	if (base_grow((void **)&f->u, &f->capu, f->nu + 1, sizeof(*f->u)))
		return -ENOMEM;
	f->u[f->nu++] = v;
	return 0;
}

static int push_hash(struct fetched *f, uint64_t h)
{
	if (base_grow((void **)&f->hash, &f->cap, f->n + 1, sizeof(*f->hash)))
		return -ENOMEM;
	f->hash[f->n++] = h;
	return 0;
}

static int push_str(struct fetched *f, struct ch_rd *r)
{
	const char *s;
	size_t len;

	if (!ch_rd_str(r, &s, &len))
		return -EIO;
	if (base_grow((void **)&f->soff, &f->capsoff, f->nsoff + 1, sizeof(*f->soff)))
		return -ENOMEM;
	f->soff[f->nsoff++] = f->strs.n;
	return ch_buf_put(&f->strs, s, len) ?: ch_buf_put(&f->strs, "", 1);
}

/* An array of UInt64 / Int64 into f->u, its length first. */
static int push_array(struct fetched *f, struct ch_rd *r)
{
	uint64_t n, v;
	int e;

	if (!ch_rd_varint(r, &n) || n > (uint64_t)(r->end - r->p) / 8)
		return -EIO;
	if ((e = push_u(f, n)))
		return e;
	for (uint64_t i = 0; i < n; i++)
		if (!ch_rd_u64(r, &v) || (e = push_u(f, v)))
			return e ? e : -EIO;
	return 0;
}

/*
 * Rows of `sql_head` ... "WHERE hash IN (hashes) GROUP BY hash" for the n
 * hashes, in batches; each row (hash first) parsed by row().
 */
static int fetch_in(struct chstore *c, const char *cols, const char *table, const uint64_t *hashes,
		    size_t n, int (*row)(struct fetched *f, struct ch_rd *r), struct fetched *f)
{
	char err[512] = "";
	int e = 0;

	for (size_t at = 0; at < n && !e; at += CH_IN_BATCH) {
		struct ch_buf q = {0}, a = {0};
		size_t end = n - at < CH_IN_BATCH ? n : at + CH_IN_BATCH;

		e = ch_buf_printf(&q, "SELECT hash, %s FROM %s.%s WHERE hash IN (", cols, c->db,
				  table);
		for (size_t i = at; i < end && !e; i++)
			e = ch_buf_printf(&q, i > at ? ",%llu" : "%llu",
					  (unsigned long long)hashes[i]);
		e = e ?: ch_buf_printf(&q, ") GROUP BY hash FORMAT RowBinary");
		e = e ?: ch_http(c, NULL, q.p, q.n, &a, err, sizeof(err));
		for (struct ch_rd r = {a.p, a.p + a.n}; !e && r.p < r.end;) {
			uint64_t h;

			e = !ch_rd_u64(&r, &h) ? -EIO : push_hash(f, h) ?: row(f, &r);
		}
		if (e && e != -ENOMEM)
			fprintf(c->opts.log ? c->opts.log : stderr, "hearth: reading %s: %s\n",
				table, *err ? err : "a row cut short");
		ch_buf_fini(&q);
		ch_buf_fini(&a);
	}
	return e;
}

static int row_array(struct fetched *f, struct ch_rd *r)
{
	return push_array(f, r);
}

/* location: mapping, address, [funcs], [lines] */
static int row_location(struct fetched *f, struct ch_rd *r)
{
	uint64_t m, addr;

	if (!ch_rd_u64(r, &m) || !ch_rd_u64(r, &addr))
		return -EIO;
	return push_u(f, m) ?: push_u(f, addr) ?: push_array(f, r) ?: push_array(f, r);
}

static int row_function(struct fetched *f, struct ch_rd *r)
{
	return push_str(f, r) ?: push_str(f, r) ?: push_str(f, r);
}

static int row_mapping(struct fetched *f, struct ch_rd *r)
{
	uint64_t v[3];

	for (int i = 0; i < 3; i++)
		if (!ch_rd_u64(r, &v[i]))
			return -EIO;
	return push_u(f, v[0]) ?: push_u(f, v[1]) ?: push_u(f, v[2]) ?: push_str(f, r)
		?: push_str(f, r);
}

/* Adds h to the list when the cache has no entry of that kind and the list does not. */
static int want(const struct ch_map *ix, struct ch_set *seen, uint64_t **list, size_t *n,
		size_t *cap, uint64_t h)
{
	if (!h || ch_map_get(ix, h) || ch_set_has(seen, h))
		return 0;
	if (ch_set_add(seen, h) || base_grow((void **)list, cap, *n + 1, sizeof(**list)))
		return -ENOMEM;
	(*list)[(*n)++] = h;
	return 0;
}

static char *dup_at(const struct fetched *f, size_t i)
{
	return strdup((const char *)f->strs.p + f->soff[i]);
}

/* Cache entries for fetched mappings and functions (under the lock). */
static int add_maps_funcs(struct chstore *c, const struct fetched *fm, const struct fetched *ff)
{
	for (size_t i = 0; i < fm->n; i++) {
		if (ch_map_get(&c->map_ix, fm->hash[i]))
			continue; /* another scan added it meanwhile */
		if (base_grow((void **)&c->maps, &c->cap_maps, c->n_maps + 1, sizeof(*c->maps)))
			return -ENOMEM;
		struct ch_mapping *m = &c->maps[c->n_maps];

		*m = (struct ch_mapping){fm->u[3 * i], fm->u[3 * i + 1], fm->u[3 * i + 2],
					 dup_at(fm, 2 * i), dup_at(fm, 2 * i + 1)};
		if (!m->file || !m->build_id ||
		    ch_map_put(&c->map_ix, fm->hash[i], (uint32_t)++c->n_maps)) {
			free(m->file);
			free(m->build_id);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < ff->n; i++) {
		if (ch_map_get(&c->func_ix, ff->hash[i]))
			continue;
		if (base_grow((void **)&c->funcs, &c->cap_funcs, c->n_funcs + 1, sizeof(*c->funcs)))
			return -ENOMEM;
		struct ch_func *fn = &c->funcs[c->n_funcs];

		*fn = (struct ch_func){dup_at(ff, 3 * i), dup_at(ff, 3 * i + 1),
				       dup_at(ff, 3 * i + 2)};
		if (!fn->name || !fn->system_name || !fn->filename ||
		    ch_map_put(&c->func_ix, ff->hash[i], (uint32_t)++c->n_funcs)) {
			free(fn->name);
			free(fn->system_name);
			free(fn->filename);
			return -ENOMEM;
		}
	}
	return 0;
}

/* An unknown function (its row lost: a hash collision or a dropped day) has this name. */
static uint32_t unknown_func(struct chstore *c)
{
	static const uint64_t h = 1; /* never a content hash of a stored function with a name */
	uint32_t id = ch_map_get(&c->func_ix, h);

	if (id || base_grow((void **)&c->funcs, &c->cap_funcs, c->n_funcs + 1, sizeof(*c->funcs)))
		return id;
	c->funcs[c->n_funcs] = (struct ch_func){strdup("[missing]"), strdup(""), strdup("")};
	if (!c->funcs[c->n_funcs].name || !c->funcs[c->n_funcs].system_name ||
	    !c->funcs[c->n_funcs].filename ||
	    ch_map_put(&c->func_ix, h, (uint32_t)(c->n_funcs + 1))) {
		free(c->funcs[c->n_funcs].name);
		free(c->funcs[c->n_funcs].system_name);
		free(c->funcs[c->n_funcs].filename);
		return 0;
	}
	return (uint32_t)++c->n_funcs;
}

/* Cache entries for fetched locations: u holds mapping, address, n, funcs, n, lines. */
static int add_locs(struct chstore *c, const struct fetched *fl)
{
	size_t at = 0;

	for (size_t i = 0; i < fl->n; i++) {
		uint64_t map = fl->u[at], addr = fl->u[at + 1], nf = fl->u[at + 2];
		const uint64_t *funcs = &fl->u[at + 3], *lines = &fl->u[at + 4 + nf];

		at += 4 + 2 * nf;
		if (ch_map_get(&c->loc_ix, fl->hash[i]))
			continue;
		if (base_grow((void **)&c->locs, &c->cap_locs, c->n_locs + 1, sizeof(*c->locs)) ||
		    base_grow((void **)&c->lines, &c->cap_lines, c->n_lines + nf + 1,
			      sizeof(*c->lines)))
			return -ENOMEM;
		c->locs[c->n_locs] = (struct ch_loc){map ? ch_map_get(&c->map_ix, map) : 0, addr,
						     c->n_lines, (uint32_t)nf};
		for (uint64_t k = 0; k < nf; k++) {
			uint32_t fid = ch_map_get(&c->func_ix, funcs[k]);

			if (!fid && !(fid = unknown_func(c)))
				return -ENOMEM;
			c->lines[c->n_lines++] = (struct ch_line){fid, (int64_t)lines[k]};
		}
		if (ch_map_put(&c->loc_ix, fl->hash[i], (uint32_t)++c->n_locs))
			return -ENOMEM;
	}
	return 0;
}

/* Cache entries for fetched stacks (u: n, loc hashes); a location never found is left out. */
static int add_stacks(struct chstore *c, const struct fetched *fs)
{
	size_t at = 0;

	for (size_t i = 0; i < fs->n; i++) {
		uint64_t n = fs->u[at];
		const uint64_t *lh = &fs->u[at + 1];

		at += 1 + n;
		if (ch_map_get(&c->stack_ix, fs->hash[i]))
			continue;
		if (base_grow((void **)&c->stacks, &c->cap_stacks, c->n_stacks + 1,
			      sizeof(*c->stacks)) ||
		    base_grow((void **)&c->stack_locs, &c->cap_stack_locs, c->n_stack_locs + n + 1,
			      sizeof(*c->stack_locs)))
			return -ENOMEM;
		struct ch_stack *st = &c->stacks[c->n_stacks];

		*st = (struct ch_stack){c->n_stack_locs, 0};
		for (uint64_t k = 0; k < n; k++) {
			uint32_t lid = ch_map_get(&c->loc_ix, lh[k]);

			if (lid) {
				c->stack_locs[c->n_stack_locs++] = lid;
				st->n++;
			}
		}
		if (ch_map_put(&c->stack_ix, fs->hash[i], (uint32_t)++c->n_stacks))
			return -ENOMEM;
	}
	return 0;
}

/* A stack hash no stacks row answers for (a collision's loser, a dropped day) is an empty stack. */
static int add_missing_stacks(struct chstore *c, const uint64_t *hashes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (ch_map_get(&c->stack_ix, hashes[i]))
			continue;
		if (base_grow((void **)&c->stacks, &c->cap_stacks, c->n_stacks + 1,
			      sizeof(*c->stacks)))
			return -ENOMEM;
		c->stacks[c->n_stacks] = (struct ch_stack){c->n_stack_locs, 0};
		if (ch_map_put(&c->stack_ix, hashes[i], (uint32_t)++c->n_stacks))
			return -ENOMEM;
	}
	return 0;
}

/* Expands every stack hash of rows[] not yet cached: stacks, then locations, then
 * functions and mappings, one batch of IN queries each, outside the lock. */
static int resolve(struct chstore *c, const struct store_row *rows, size_t n)
{
	struct fetched fs = {0}, fl = {0}, ff = {0}, fm = {0};
	struct ch_set seen = {0};
	uint64_t *want_s = NULL, *want_l = NULL, *want_f = NULL, *want_m = NULL;
	size_t ns = 0, cs = 0, nl = 0, cl = 0, nf = 0, cf = 0, nm = 0, cm = 0;
	int e = 0;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n && !e; i++)
		e = want(&c->stack_ix, &seen, &want_s, &ns, &cs, rows[i].stack_id);
	pthread_mutex_unlock(&c->lock);
	if (e || !ns)
		goto cleanup;
	e = fetch_in(c, "any(locs)", "stacks", want_s, ns, row_array, &fs);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0, at = 0; i < fs.n && !e; i++) {
		for (uint64_t k = 0; k < fs.u[at] && !e; k++)
			e = want(&c->loc_ix, &seen, &want_l, &nl, &cl, fs.u[at + 1 + k]);
		at += 1 + fs.u[at];
	}
	pthread_mutex_unlock(&c->lock);
	e = e
		?: fetch_in(c, "any(mapping), any(address), any(funcs), any(lines)", "locations",
			    want_l, nl, row_location, &fl);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0, at = 0; i < fl.n && !e; i++) {
		uint64_t nfn = fl.u[at + 2];

		e = want(&c->map_ix, &seen, &want_m, &nm, &cm, fl.u[at]);
		for (uint64_t k = 0; k < nfn && !e; k++)
			e = want(&c->func_ix, &seen, &want_f, &nf, &cf, fl.u[at + 3 + k]);
		at += 4 + 2 * nfn;
	}
	pthread_mutex_unlock(&c->lock);
	e = e
		?: fetch_in(c, "any(name), any(system_name), any(filename)", "functions", want_f,
			    nf, row_function, &ff);
	e = e
		?: fetch_in(c,
			    "any(map_start), any(map_limit), any(map_offset), any(file), "
			    "any(build_id)",
			    "mappings", want_m, nm, row_mapping, &fm);
	if (!e) {
		pthread_mutex_lock(&c->lock);
		e = add_maps_funcs(c, &fm, &ff) ?: add_locs(c, &fl) ?: add_stacks(c, &fs)
			?: add_missing_stacks(c, want_s, ns);
		pthread_mutex_unlock(&c->lock);
	}
cleanup:
	fetched_fini(&fs);
	fetched_fini(&fl);
	fetched_fini(&ff);
	fetched_fini(&fm);
	ch_set_fini(&seen);
	free(want_s);
	free(want_l);
	free(want_f);
	free(want_m);
	return e;
}

/* ---- scans ---- */

/* The SQL of a scan: what to group by follows from the flags (store.h). */
static int scan_sql(struct chstore *c, const struct store_scan_query *q, struct ch_buf *sql)
{
	int64_t from = q->from_ns > 0 ? q->from_ns : 0, last = q->until_ns - 1;
	const char *cols, *group;
	char d0[11], d1[11];
	int e;

	if (last < from)
		last = from;
	if ((q->flags & STORE_SCAN_TOTALS) && q->max_window_ns > 0) {
		cols = "series_id, intDiv(time_ns - %lld, %lld) AS b, sum(v0), sum(v1)";
		group = "series_id, b";
	} else if (q->flags & STORE_SCAN_TOTALS) {
		cols = "series_id, sum(v0), sum(v1)";
		group = "series_id";
	} else if (q->flags & STORE_SCAN_MERGE_SERIES) {
		cols = "stack, sum(v0), sum(v1)";
		group = "stack";
	} else if (q->flags & STORE_SCAN_MERGE_TIME) {
		cols = "series_id, stack, sum(v0), sum(v1)";
		group = "series_id, stack";
	} else {
		cols = "series_id, stack, time_ns, any(duration_ns), sum(v0), sum(v1)";
		group = "series_id, stack, time_ns";
	}
	ch_day_str(from, d0);
	ch_day_str(last, d1);
	e = ch_buf_printf(sql, "SELECT ");
	e = e ?: ch_buf_printf(sql, cols, (long long)q->from_ns, (long long)q->max_window_ns);
	e = e
		?: ch_buf_printf(
		       sql,
		       " FROM %s.samples WHERE day >= '%s' AND day <= '%s' AND hour >= %lld "
		       "AND hour <= %lld AND time_ns >= %lld AND time_ns < %lld AND "
		       "series_id IN (",
		       c->db, d0, d1, (long long)(from / CH_HOUR_NS),
		       (long long)(last / CH_HOUR_NS), (long long)q->from_ns,
		       (long long)q->until_ns);
	for (size_t i = 0; i < q->n_ids && !e; i++)
		e = ch_buf_printf(sql, i ? ",%llu" : "%llu", (unsigned long long)q->ids[i]);
	return e ?: ch_buf_printf(sql, ") GROUP BY %s FORMAT RowBinary", group);
}

/* Parses the answer of scan_sql into rows (stack ids still hashes). */
static int scan_rows(const struct store_scan_query *q, const struct ch_buf *a,
		     struct store_row **rows, size_t *n)
{
	size_t cap = 0;
	bool totals = q->flags & STORE_SCAN_TOTALS, steps = totals && q->max_window_ns > 0;
	bool by_stack = !totals && (q->flags & STORE_SCAN_MERGE_SERIES);
	bool pairs = !totals && !by_stack && (q->flags & STORE_SCAN_MERGE_TIME);

	for (struct ch_rd r = {a->p, a->p + a->n}; r.p < r.end;) {
		struct store_row w = {0, 0, q->from_ns, q->until_ns - q->from_ns, {0, 0}};
		uint64_t v[2], b, t, d;
		bool ok = true;

		if (!by_stack)
			ok = ch_rd_u64(&r, &w.series_id);
		if (ok && steps && (ok = ch_rd_u64(&r, &b))) {
			w.time_ns = q->from_ns + (int64_t)b * q->max_window_ns;
			w.duration_ns = q->max_window_ns;
		}
		if (ok && !totals)
			ok = ch_rd_u64(&r, &w.stack_id);
		if (ok && !totals && !by_stack && !pairs &&
		    (ok = ch_rd_u64(&r, &t) && ch_rd_u64(&r, &d))) {
			w.time_ns = (int64_t)t;
			w.duration_ns = (int64_t)d;
		}
		if (!ok || !ch_rd_u64(&r, &v[0]) || !ch_rd_u64(&r, &v[1]))
			return -EIO;
		w.values[0] = (int64_t)v[0];
		w.values[1] = (int64_t)v[1];
		if (base_grow((void **)rows, &cap, *n + 1, sizeof(**rows)))
			return -ENOMEM;
		(*rows)[(*n)++] = w;
	}
	return 0;
}

int chstore_scan(struct store *s, const struct store_scan_query *q, store_rows_fn fn, void *ctx)
{
	struct chstore *c = ch_of(s);
	struct ch_buf sql = {0}, a = {0};
	struct store_row *rows = NULL;
	size_t n = 0;
	char err[512] = "";
	int e;

	if (!q->n_ids)
		return 0;
	if (q->from_ns > q->until_ns)
		return -EINVAL;
	e = scan_sql(c, q, &sql) ?: ch_http(c, NULL, sql.p, sql.n, &a, err, sizeof(err));
	if (e && *err)
		fprintf(c->opts.log ? c->opts.log : stderr, "hearth: scan: %s\n", err);
	e = e ?: scan_rows(q, &a, &rows, &n);
	ch_buf_fini(&a);
	if (!e && !(q->flags & STORE_SCAN_TOTALS)) {
		e = resolve(c, rows, n);
		pthread_mutex_lock(&c->lock);
		for (size_t i = 0; i < n && !e; i++)
			rows[i].stack_id = ch_map_get(&c->stack_ix, rows[i].stack_id);
		pthread_mutex_unlock(&c->lock);
	}
	for (size_t i = 0; i < n && !e; i += CH_SCAN_BATCH)
		e = fn(ctx, rows + i, n - i < CH_SCAN_BATCH ? n - i : CH_SCAN_BATCH);
	ch_buf_fini(&sql);
	free(rows);
	return e;
}

/* ---- label names and values ---- */

struct id_list {
	uint64_t *v;
	size_t n, cap;
};

static int keep_ids(void *ctx, const struct store_row *rows, size_t n)
{
	struct id_list *l = ctx;

	if (base_grow((void **)&l->v, &l->cap, l->n + n, sizeof(*l->v)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		l->v[l->n++] = rows[i].series_id;
	return 0;
}

/* Whether name can be a stored label name (and so goes into SQL unquoted). */
static bool label_name_ok(const char *name)
{
	return *name && strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "0123456789_.") == strlen(name);
}

/*
 * Two round trips: a totals scan names the series with data in the range (one
 * row per series), then one DISTINCT over their rows of the series table. Not
 * one query with a subquery: over a cluster's Distributed tables a subquery
 * inside IN is refused (distributed_product_mode).
 */
int chstore_labels(struct store *s, const char *name, const struct store_scan_query *q,
		   int (*fn)(void *ctx, const char *str), void *ctx)
{
	struct chstore *c = ch_of(s);
	struct id_list ids = {0};
	struct ch_buf sql = {0}, a = {0}, scratch = {0};
	char err[512] = "";
	int e = chstore_scan(&c->store,
			     &(struct store_scan_query){q->ids, q->n_ids, q->from_ns, q->until_ns,
							0, STORE_SCAN_TOTALS},
			     keep_ids, &ids);

	if (e || !ids.n || (name && strcmp(name, STORE_PROFILE_TYPE_LABEL) && !label_name_ok(name)))
		goto cleanup;
	if (!name)
		e = fn(ctx, STORE_PROFILE_TYPE_LABEL)
			?: ch_buf_printf(&sql, "SELECT DISTINCT arrayJoin(names)");
	else if (!strcmp(name, STORE_PROFILE_TYPE_LABEL))
		e = ch_buf_printf(&sql, "SELECT DISTINCT type");
	else
		e = ch_buf_printf(&sql, "SELECT DISTINCT vals[indexOf(names, '%s')]", name);
	e = e ?: ch_buf_printf(&sql, " FROM %s.series WHERE id IN (", c->db);
	for (size_t i = 0; i < ids.n && !e; i++)
		e = ch_buf_printf(&sql, i ? ",%llu" : "%llu", (unsigned long long)ids.v[i]);
	/* a label's values only from the series that carry it; the type is a column */
	bool label = name && strcmp(name, STORE_PROFILE_TYPE_LABEL);
	e = e
		?: ch_buf_printf(&sql, ")%s%s%s FORMAT RowBinary", label ? " AND has(names, '" : "",
				 label ? name : "", label ? "')" : "");
	e = e ?: ch_http(c, NULL, sql.p, sql.n, &a, err, sizeof(err));
	if (e && *err)
		fprintf(c->opts.log ? c->opts.log : stderr, "hearth: listing labels: %s\n", err);
	for (struct ch_rd r = {a.p, a.p + a.n}; !e && r.p < r.end;) {
		const char *v;
		size_t len;

		scratch.n = 0;
		e = !ch_rd_str(&r, &v, &len) ? -EIO
					      : ch_buf_put(&scratch, v, len) ?: fn(ctx, (char *)scratch.p);
	}
cleanup:
	free(ids.v);
	ch_buf_fini(&sql);
	ch_buf_fini(&a);
	ch_buf_fini(&scratch);
	return e;
}

/* ---- expanding stacks (store__stack_locations, store_builder) ---- */

uint64_t chstore_max_stack_id(struct store *s)
{
	struct chstore *c = ch_of(s);
	uint64_t n;

	pthread_mutex_lock(&c->lock);
	n = c->n_stacks;
	pthread_mutex_unlock(&c->lock);
	return n;
}

int chstore_stack_locations(struct store *s, const uint64_t *stack_ids, size_t n, size_t *off,
			    uint64_t **locs, size_t *cap)
{
	struct chstore *c = ch_of(s);
	int e = 0;

	off[0] = 0;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n && !e; i++) {
		const struct ch_stack *st;

		if (!stack_ids[i] || stack_ids[i] > c->n_stacks) {
			e = -ENOENT;
			break;
		}
		st = &c->stacks[stack_ids[i] - 1];
		if (base_grow((void **)locs, cap, off[i] + st->n + 1, sizeof(**locs))) {
			e = -ENOMEM;
			break;
		}
		memcpy(*locs + off[i], c->stack_locs + st->off, st->n * sizeof(**locs));
		off[i + 1] = off[i] + st->n;
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

#define CH_MAX_LINES 64

/* Adds cached location loc_id to p (under the lock). */
static int add_location(struct chstore *c, struct profile *p, uint64_t loc_id, uint64_t *out)
{
	struct profile_line lines[CH_MAX_LINES];
	const struct ch_loc *l;
	uint64_t map = 0;
	size_t n;

	if (!loc_id || loc_id > c->n_locs)
		return -ENOENT;
	l = &c->locs[loc_id - 1];
	n = l->n_lines < CH_MAX_LINES ? l->n_lines : CH_MAX_LINES;
	if (l->map) {
		const struct ch_mapping *m = &c->maps[l->map - 1];

		if (!(map =
			  profile__mapping(p, m->start, m->limit, m->offset, m->file, m->build_id)))
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ch_line *ln = &c->lines[l->line_off + i];
		const struct ch_func *f = &c->funcs[ln->func - 1];

		lines[i].line = ln->line;
		if (!(lines[i].function_id =
			  profile__function(p, f->name, f->system_name, f->filename)))
			return -ENOMEM;
	}
	*out = profile__location_exact(p, map, l->address, lines, n);
	return *out ? 0 : -ENOMEM;
}

/* ---- the builder: cached locations into a profile ---- */

void chstore_builder_fini(struct store_builder *b)
{
	free(((struct ch_builder *)b)->xl); /* its first member */
}

int chstore_builder_location(struct store_builder *sb, uint64_t loc_id, uint64_t *out)
{
	struct ch_builder *b = (struct ch_builder *)sb;
	struct chstore *c = ch_of(sb->s);
	int e;

	if (loc_id < b->xl_cap && b->xl[loc_id]) {
		*out = b->xl[loc_id];
		return 0;
	}
	pthread_mutex_lock(&c->lock);
	e = add_location(c, sb->p, loc_id, out);
	pthread_mutex_unlock(&c->lock);
	if (!e && base_grow_zeroed((void **)&b->xl, &b->xl_cap, (size_t)loc_id + 1, sizeof(*b->xl)))
		e = -ENOMEM;
	if (!e)
		b->xl[loc_id] = (uint32_t)*out;
	return e;
}

int chstore_builder_add(struct store_builder *sb, uint64_t stack_id,
			const int64_t values[PROFILE_N_VALUES], const struct profile_label *labels,
			size_t n_labels)
{
	size_t off[2], cap = 0;
	uint64_t *locs = NULL;
	int e = chstore_stack_locations(sb->s, &stack_id, 1, off, &locs, &cap);

	for (size_t i = 0; !e && i < off[1]; i++)
		e = chstore_builder_location(sb, locs[i], &locs[i]);
	e = e ?: profile__add_sample(sb->p, locs, off[1], values, labels, n_labels);
	free(locs);
	return e;
}

/* One sample at a time: the cache is in memory already, there is no read to
 * start early as the embedded store does, and *distinct is not used. */
int chstore_builder_append(struct store_builder *b, const struct store_builder_sample *sm, size_t n,
			   bool *distinct)
{
	int e = 0;

	for (size_t i = 0; !e && i < n; i++)
		e = chstore_builder_add(b, sm[i].stack_id, sm[i].values, sm[i].labels,
					sm[i].n_labels);
	*distinct = false;
	return e;
}
