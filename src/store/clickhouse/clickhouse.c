/*
 * The ClickHouse backend: a struct store whose data lives in a ClickHouse
 * database (Debian's clickhouse-server 18.16), reached through its HTTP
 * interface with libcurl. This file: the store URL, the connection, the schema
 * (created when missing, refused when of another version) and ingest; reads
 * are in clickhouse_read.c. docs/clickhouse.md gives the schema's reasons.
 *
 * Stateless: what a server keeps in memory is only a cache (which dictionary
 * rows it already inserted today; the stacks it already read), so any number
 * of servers can share one database. Every dictionary row (stack, location,
 * function, mapping, series) is keyed by a 64-bit hash of its content that
 * every server computes the same way (ch_hash, below: part of the schema), so
 * two servers inserting one stack insert the same row, which the
 * ReplacingMergeTree tables fold into one.
 *
 * An append inserts the dictionaries first and the samples last, one INSERT
 * each: the samples' INSERT answering 200 is the acknowledgement (a sample is
 * never stored before what it refers to). A failure anywhere is -EHOSTDOWN
 * and nothing is acknowledged; rows of the dictionaries inserted before the
 * failure are harmless (inserted again by the retry, folded by the merge).
 */
#include "clickhouse.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CH_DEFAULT_TIMEOUT_MS 10000
#define CH_MAX_ANSWER	      (1ull << 30) /* bytes of one answer */
/* A day's "already inserted" keys: over this many, forget them (re-inserting is harmless). */
#define CH_MAX_WRITTEN (8u << 20)

/* ---- byte buffers ---- */

int ch_buf_put(struct ch_buf *b, const void *p, size_t n)
{
	if (n > SIZE_MAX - b->n - 1 || base_grow((void **)&b->p, &b->cap, b->n + n + 1, 1))
		return -ENOMEM;
	memcpy(b->p + b->n, p, n);
	b->n += n;
	b->p[b->n] = 0; /* text answers are read as strings */
	return 0;
}

int ch_buf_printf(struct ch_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || base_grow((void **)&b->p, &b->cap, b->n + (size_t)n + 1, 1))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf((char *)b->p + b->n, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)n;
	return 0;
}

void ch_buf_fini(struct ch_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- sets and maps of 64-bit keys, on base's hash index ---- */

static bool key_eq(const void *ctx, size_t idx, const void *key)
{
	return ((const uint64_t *)ctx)[idx] == *(const uint64_t *)key;
}

/* The index of k in s->k, or SIZE_MAX. */
static size_t ch_set_find(const struct ch_set *s, uint64_t k)
{
	return base_hmap__find(&s->ix, base_hash_u64(BASE_HASH_SEED, k), key_eq, s->k, &k);
}

bool ch_set_has(const struct ch_set *s, uint64_t k)
{
	return ch_set_find(s, k) != SIZE_MAX;
}

int ch_set_add(struct ch_set *s, uint64_t k)
{
	if (ch_set_has(s, k))
		return 0;
	if (base_grow((void **)&s->k, &s->cap, s->n + 1, sizeof(*s->k)) ||
	    base_hmap__insert(&s->ix, base_hash_u64(BASE_HASH_SEED, k), s->n))
		return -ENOMEM;
	s->k[s->n++] = k;
	return 0;
}

void ch_set_fini(struct ch_set *s)
{
	free(s->k);
	base_hmap__fini(&s->ix);
	memset(s, 0, sizeof(*s));
}

uint32_t ch_map_get(const struct ch_map *m, uint64_t k)
{
	size_t i = ch_set_find(&m->keys, k);

	return i == SIZE_MAX ? 0 : m->v[i];
}

int ch_map_put(struct ch_map *m, uint64_t k, uint32_t v)
{
	size_t i = ch_set_find(&m->keys, k);

	if (i == SIZE_MAX) {
		i = m->keys.n;
		if (base_grow((void **)&m->v, &m->cap, i + 1, sizeof(*m->v)) ||
		    ch_set_add(&m->keys, k))
			return -ENOMEM;
	}
	m->v[i] = v;
	return 0;
}

void ch_map_fini(struct ch_map *m)
{
	ch_set_fini(&m->keys);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

bool ch_rd_u64(struct ch_rd *r, uint64_t *v)
{
	if (r->end - r->p < 8)
		return false;
	memcpy(v, r->p, 8); /* RowBinary is little-endian, as x86 */
	r->p += 8;
	return true;
}

bool ch_rd_varint(struct ch_rd *r, uint64_t *v)
{
	return base_varint_get(&r->p, r->end, v) == 0;
}

bool ch_rd_str(struct ch_rd *r, const char **s, size_t *len)
{
	uint64_t n;

	if (!ch_rd_varint(r, &n) || n > (uint64_t)(r->end - r->p))
		return false;
	*s = (const char *)r->p;
	*len = (size_t)n;
	r->p += n;
	return true;
}

void ch_day_str(int64_t t_ns, char out[11])
{
	time_t t = (time_t)(t_ns / 1000000000ll);
	struct tm tm;

	if (t < 0)
		t = 0;
	gmtime_r(&t, &tm);
	strftime(out, 11, "%Y-%m-%d", &tm);
}

/* ---- HTTP ---- */

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct ch_buf *b = ctx;

	if (b->n + size * n > CH_MAX_ANSWER || ch_buf_put(b, p, size * n))
		return 0; /* curl fails the transfer */
	return size * n;
}

/* The first line of ClickHouse's error answer, for a message. */
static void first_line(const struct ch_buf *b, char *out, size_t len)
{
	size_t n = 0;

	for (; b->p && n < b->n && n + 1 < len && b->p[n] != '\n'; n++)
		out[n] = (char)b->p[n];
	out[n] = 0;
}

int ch_http(struct chstore *c, const char *sql_in_url, const void *body, size_t len,
	    struct ch_buf *out, char *err, size_t errlen)
{
	struct ch_buf url = {0}, ans = {0};
	struct curl_slist *hdr = NULL;
	CURL *h = curl_easy_init();
	char msg[512];
	long code = 0;
	CURLcode rc;
	int e = h ? 0 : -ENOMEM;

	/* a scan's IN list of series or stack hashes is long: a large query, one
	 * AST element per hash. In a cluster, an INSERT answers once the shards
	 * have the rows, not when they are queued on this server. */
	e = e
		?: ch_buf_printf(&url,
				 "%s?max_query_size=1073741824&max_ast_elements=100000000&"
				 "max_expanded_ast_elements=100000000%s",
				 c->base, c->cluster ? "&insert_distributed_sync=1" : "");
	if (!e && sql_in_url) {
		char *q = curl_easy_escape(h, sql_in_url, 0);

		e = q ? ch_buf_printf(&url, "&query=%s", q) : -ENOMEM;
		curl_free(q);
	}
	hdr = e ? NULL : curl_slist_append(NULL, "Expect:"); /* no 100-continue round trip */
	if (!e && !hdr)
		e = -ENOMEM;
	if (e)
		goto cleanup;
	curl_easy_setopt(h, CURLOPT_URL, (char *)url.p);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &ans);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 c->timeout_ms < 5000 ? c->timeout_ms : 5000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(h);
	if (rc != CURLE_OK) {
		e = -EHOSTDOWN;
		if (rc == CURLE_OPERATION_TIMEDOUT)
			snprintf(err, errlen, "ClickHouse at %s did not answer within %ld ms",
				 c->where, c->timeout_ms);
		else
			snprintf(err, errlen, "ClickHouse at %s cannot be reached: %s", c->where,
				 curl_easy_strerror(rc));
		goto cleanup;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		first_line(&ans, msg, sizeof(msg));
		/* a failed INSERT is worth retrying (an agent's spool does): 503 */
		e = sql_in_url ? -EHOSTDOWN : -EIO;
		snprintf(err, errlen, "ClickHouse at %s answered %ld%s: %s", c->where, code,
			 sql_in_url ? " to an insert" : "", msg);
		goto cleanup;
	}
	if (out) {
		*out = ans;
		memset(&ans, 0, sizeof(ans));
	}
cleanup:
	if (e == -ENOMEM)
		snprintf(err, errlen, "out of memory talking to ClickHouse");
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	ch_buf_fini(&url);
	ch_buf_fini(&ans);
	return e;
}

int ch_sql(struct chstore *c, struct ch_buf *out, char *err, size_t errlen, const char *fmt, ...)
{
	struct ch_buf q = {0};
	va_list ap;
	int n, e;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || base_grow((void **)&q.p, &q.cap, (size_t)n + 1, 1))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf((char *)q.p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	e = ch_http(c, NULL, q.p, (size_t)n, out, err, errlen);
	ch_buf_fini(&q);
	return e;
}

/* ---- the URL and the schema ---- */

/* A table of the schema. In a cluster, NAME_local holds a shard's rows and NAME is
 * the Distributed table over them, sharded by `shard`. */
struct ch_table {
	const char *name, *cols, *engine, *order, *shard;
};
enum {
	CH_T_MAPPINGS,
	CH_T_FUNCTIONS,
	CH_T_LOCATIONS,
	CH_T_STACKS,
	CH_T_SERIES,
	CH_T_SAMPLES,
	CH_N_T
};
static const struct ch_table ch_tables[CH_N_T] = {
    [CH_T_MAPPINGS] = {"mappings",
		       "day Date, hash UInt64, map_start UInt64, map_limit UInt64, "
		       "map_offset UInt64, file String, build_id String",
		       "ReplacingMergeTree", "hash", "intHash64(hash)"},
    [CH_T_FUNCTIONS] = {"functions",
			"day Date, hash UInt64, name String, system_name String, filename String",
			"ReplacingMergeTree", "hash", "intHash64(hash)"},
    [CH_T_LOCATIONS] = {"locations",
			"day Date, hash UInt64, mapping UInt64, address UInt64, "
			"funcs Array(UInt64), lines Array(Int64)",
			"ReplacingMergeTree", "hash", "intHash64(hash)"},
    [CH_T_STACKS] = {"stacks", "day Date, hash UInt64, locs Array(UInt64)", "ReplacingMergeTree",
		     "hash", "intHash64(hash)"},
    [CH_T_SERIES] = {"series",
		     "day Date, id UInt64, type String, names Array(String), vals Array(String)",
		     "ReplacingMergeTree", "id", "intHash64(id)"},
    [CH_T_SAMPLES] = {"samples",
		      "day Date, hour UInt32, time_ns Int64, duration_ns Int64, series_id UInt64, "
		      "stack UInt64, v0 Int64, v1 Int64",
		      "MergeTree", "(hour, series_id, time_ns, stack)", "intHash64(series_id)"},
};

static int bad_url(const char *url, const char *why, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "store URL \"%.200s\": %s (expected clickhouse://HOST:PORT/DATABASE, optionally "
		 "?cluster=NAME&replicated=1&timeout=SECONDS)",
		 url, why);
	return -EINVAL;
}

static bool all_of(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return n > 0;
}

#define CH_NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"

/* ?cluster=NAME&timeout=SECONDS */
static int parse_params(struct chstore *c, const char *url, const char *p, char *err, size_t errlen)
{
	while (p && *p) {
		const char *amp = strchr(p, '&'), *eq = strchr(p, '=');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);

		if (!eq || eq > p + n)
			return bad_url(url, "a parameter without a value", err, errlen);
		const char *v = eq + 1;
		size_t vn = n - (size_t)(v - p);

		if ((size_t)(eq - p) == 7 && !strncmp(p, "cluster", 7)) {
			if (!all_of(v, vn, CH_NAME_CHARS))
				return bad_url(url, "the cluster name is not [A-Za-z0-9_]+", err,
					       errlen);
			free(c->cluster);
			if (!(c->cluster = strndup(v, vn)))
				return -ENOMEM;
		} else if ((size_t)(eq - p) == 7 && !strncmp(p, "timeout", 7)) {
			char *end;
			double s = strtod(v, &end);

			if (end != v + vn || !(s > 0 && s <= 3600))
				return bad_url(url,
					       "timeout is not a number of seconds in (0, 3600]",
					       err, errlen);
			c->timeout_ms = (long)(s * 1000 + 0.5) ?: 1;
		} else if ((size_t)(eq - p) == 10 && !strncmp(p, "replicated", 10)) {
			if (vn != 1 || (*v != '0' && *v != '1'))
				return bad_url(url, "replicated is not 0 or 1", err, errlen);
			c->replicated = *v == '1';
		} else {
			return bad_url(
			    url, "unknown parameter (cluster, replicated and timeout are known)",
			    err, errlen);
		}
		p = amp ? amp + 1 : NULL;
	}
	return 0;
}

static int parse_url(struct chstore *c, const char *url, char *err, size_t errlen)
{
	const char *p = url + strlen(STORE_CLICKHOUSE_SCHEME), *colon, *slash, *q;
	size_t dbn;

	colon = strchr(p, ':');
	slash = strchr(p, '/');
	if (!colon || !slash || colon > slash ||
	    !all_of(p, (size_t)(colon - p), CH_NAME_CHARS "-."))
		return bad_url(url, "no HOST:PORT", err, errlen);
	if (!all_of(colon + 1, (size_t)(slash - colon - 1), "0123456789") || slash - colon - 1 > 5)
		return bad_url(url, "the port is not a number", err, errlen);
	q = strchr(slash, '?');
	dbn = q ? (size_t)(q - slash - 1) : strlen(slash + 1);
	if (!all_of(slash + 1, dbn, CH_NAME_CHARS))
		return bad_url(url, "the database name is not [A-Za-z0-9_]+", err, errlen);
	c->timeout_ms = CH_DEFAULT_TIMEOUT_MS;
	if (asprintf(&c->base, "http://%.*s/", (int)(slash - p), p) < 0 ||
	    !(c->db = strndup(slash + 1, dbn)) ||
	    asprintf(&c->where, "%.*s/%s", (int)(slash - p), p, c->db) < 0)
		return -ENOMEM;
	return parse_params(c, url, q ? q + 1 : NULL, err, errlen);
}

static int create_tables(struct chstore *c, char *err, size_t errlen)
{
	int e = 0;

	for (int t = 0; t < CH_N_T && !e; t++) {
		const struct ch_table *tb = &ch_tables[t];
		const char *local = c->cluster ? "_local" : "";
		char engine[256];

		/* replicas of one table share its ZooKeeper path; {shard} and {replica}
		 * are the macros of each ClickHouse server's config */
		if (c->replicated)
			snprintf(engine, sizeof(engine),
				 "Replicated%s('/clickhouse/tables/{shard}/%s/%s%s', '{replica}')",
				 tb->engine, c->db, tb->name, local);
		else
			snprintf(engine, sizeof(engine), "%s", tb->engine);
		e = ch_sql(c, NULL, err, errlen,
			   "CREATE TABLE IF NOT EXISTS %s.%s%s (%s) ENGINE = %s PARTITION BY day "
			   "ORDER BY %s",
			   c->db, tb->name, local, tb->cols, engine, tb->order);
		if (!e && c->cluster)
			e = ch_sql(c, NULL, err, errlen,
				   "CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s_local ENGINE = "
				   "Distributed(%s, %s, %s_local, %s)",
				   c->db, tb->name, c->db, tb->name, c->cluster, c->db, tb->name,
				   tb->shard);
	}
	return e;
}

/*
 * Creates the database and tables when missing; refuses a database whose
 * hearth_schema names another version. Two servers starting at once both
 * create (IF NOT EXISTS) and both record the version: harmless.
 */
static int check_schema(struct chstore *c, char *err, size_t errlen)
{
	struct ch_buf a = {0};
	int e =
	    ch_sql(c, NULL, err, errlen, "CREATE DATABASE IF NOT EXISTS %s", c->db)
		?: ch_sql(c, &a, err, errlen, "EXISTS TABLE %s.hearth_schema FORMAT TSV", c->db);
	bool known = !e && a.p && a.p[0] == '1';

	ch_buf_fini(&a);
	if (!e && known)
		e = ch_sql(c, &a, err, errlen,
			   "SELECT DISTINCT version FROM %s.hearth_schema FORMAT TSV", c->db);
	for (char *l = known && !e ? (char *)a.p : NULL; l && *l; l = strchr(l, '\n')) {
		l += *l == '\n';
		if (*l && atol(l) != CH_SCHEMA_VERSION) {
			snprintf(err, errlen,
				 "ClickHouse database %s holds hearth schema version %ld; this "
				 "hearth knows version %d only (docs/clickhouse.md, \"Schema "
				 "versions\")",
				 c->where, atol(l), CH_SCHEMA_VERSION);
			e = -EIO;
		}
	}
	if (!e && (!known || !a.n)) {
		e = create_tables(c, err, errlen)
			?: ch_sql(c, NULL, err, errlen,
				  "CREATE TABLE IF NOT EXISTS %s.hearth_schema (version UInt32) ENGINE "
				  "= TinyLog",
				  c->db)
			?: ch_sql(c, NULL, err, errlen, "INSERT INTO %s.hearth_schema VALUES (%d)",
				  c->db, CH_SCHEMA_VERSION);
	} else if (!e) {
		e = create_tables(c, err, errlen); /* a cluster's Distributed tables, if new */
	}
	ch_buf_fini(&a);
	return e;
}

/* The store of url, its schema checked (created when new). */
static int ch_open(const char *url, const struct store_opts *opts, struct chstore **out, char *err,
		   size_t errlen)
{
	struct chstore *c = calloc(1, sizeof(*c));
	int e;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	if (opts)
		c->opts = *opts;
	while (c->opts.sample_labels && c->opts.sample_labels[c->n_sample_labels] &&
	       c->n_sample_labels < STORE_MAX_SAMPLE_LABELS)
		c->n_sample_labels++;
	if (!c->opts.retention_ns)
		c->opts.retention_ns = STORE_DEFAULT_RETENTION_NS;
	if (!c->opts.max_labels_per_series)
		c->opts.max_labels_per_series = STORE_DEFAULT_MAX_LABELS;
	base_curl_init(); /* libcurl's global init, once per process (base/curl_once.c) */
	e = parse_url(c, url, err, errlen) ?: check_schema(c, err, errlen);
	if (e) {
		chstore_close(&c->store);
		return e;
	}
	*out = c;
	return 0;
}

void chstore_close(struct store *s)
{
	struct chstore *c = ch_of(s);

	for (size_t i = 0; i < c->n_funcs; i++) {
		free(c->funcs[i].name);
		free(c->funcs[i].system_name);
		free(c->funcs[i].filename);
	}
	for (size_t i = 0; i < c->n_maps; i++) {
		free(c->maps[i].file);
		free(c->maps[i].build_id);
	}
	free(c->funcs);
	free(c->maps);
	free(c->stacks);
	free(c->stack_locs);
	free(c->locs);
	free(c->lines);
	ch_set_fini(&c->written);
	ch_map_fini(&c->stack_ix);
	ch_map_fini(&c->loc_ix);
	ch_map_fini(&c->func_ix);
	ch_map_fini(&c->map_ix);
	pthread_mutex_destroy(&c->lock);
	free(c->base);
	free(c->db);
	free(c->cluster);
	free(c->where);
	free(c);
}

/* ---- ingest ---- */

/*
 * The content hash of every dictionary row (FNV-1a, 64 bits, over the bytes
 * docs/clickhouse.md lists): stable across servers and versions, as it is
 * stored. 0 is never a hash (it means "none").
 */
#define CH_FNV_BASIS 0xcbf29ce484222325ull
#define CH_FNV_PRIME 0x100000001b3ull

static uint64_t ch_hash(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * CH_FNV_PRIME;
	return h;
}

static uint64_t ch_hash_u64(uint64_t h, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return ch_hash(h, b, 8);
}

static uint64_t nonzero(uint64_t h)
{
	return h ? h : 1;
}

/*
 * A finished content hash: FNV-1a's low bits are weak (the lowest is the XOR of
 * the bytes' lowest bits), and Distributed tables shard by key modulo the
 * shards, so every stored hash goes through MurmurHash3's 64-bit finalizer.
 */
static uint64_t finish(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb53a7ed34e3ull;
	h ^= h >> 33;
	return nonzero(h);
}

/* What one append builds: RowBinary rows per table, and hashes per flat index. */
struct ch_append {
	struct chstore *c;
	const struct profile_flat *f;
	const char *type;
	const struct store_label *extra;
	size_t n_extra;
	uint16_t day;
	uint64_t *map_h, *func_h, *loc_h; /* per flat index (+1 for mappings); 0: not yet */
	struct ch_buf t[CH_N_T];
	struct ch_set seen; /* keys (see wkey) of rows this append writes */
	size_t new_series;
	struct ch_pair {
		uint64_t series, stack;
		int64_t v[PROFILE_N_VALUES];
	} * rows;
	size_t n_rows, cap_rows;
};

/* The "inserted already" key of a row of table t on day d (in memory only). */
static uint64_t wkey(int t, uint16_t d, uint64_t h)
{
	return base_hash_u64(base_hash_u64(BASE_HASH_SEED, (uint64_t)d << 8 | (uint64_t)t), h);
}

/* Whether the row of hash h in table t must be written (first sight today). */
static bool need(struct ch_append *a, int t, uint64_t h, int *e)
{
	uint64_t k = wkey(t, a->day, h);

	if (ch_set_has(&a->c->written, k) || ch_set_has(&a->seen, k))
		return false;
	*e = ch_set_add(&a->seen, k);
	return !*e;
}

static int put_u16(struct ch_buf *b, uint16_t v)
{
	return ch_buf_put(b, &v, 2);
}
static int put_u32(struct ch_buf *b, uint32_t v)
{
	return ch_buf_put(b, &v, 4);
}
static int put_u64(struct ch_buf *b, uint64_t v)
{
	return ch_buf_put(b, &v, 8);
}
static int put_varint(struct ch_buf *b, uint64_t v)
{
	uint8_t x[BASE_VARINT_MAX];

	return ch_buf_put(b, x, (size_t)(base_varint_put(x, v) - x));
}
static int put_str(struct ch_buf *b, const char *s, size_t n)
{
	return put_varint(b, n) ?: ch_buf_put(b, s, n);
}

static const char *fstr(const struct ch_append *a, uint32_t i, size_t *len)
{
	return profile_flat__str(a->f, i, len);
}

static uint64_t hash_fstr(const struct ch_append *a, uint64_t h, uint32_t i)
{
	size_t n;
	const char *s = fstr(a, i, &n);

	return ch_hash(h, s, n + 1); /* with its NUL: "ab","c" differs from "a","bc" */
}

/* Hash of flat mapping m1 (index + 1; 0: none, hash 0), its row written once. */
static int map_hash(struct ch_append *a, uint32_t m1, uint64_t *out)
{
	const struct profile_flat_mapping *m;
	uint64_t h;
	size_t fl, bl;
	const char *file, *build;
	int e = 0;

	if (!m1 || a->map_h[m1]) {
		*out = m1 ? a->map_h[m1] : 0;
		return 0;
	}
	m = &a->f->mappings[m1 - 1];
	h = ch_hash_u64(ch_hash_u64(ch_hash_u64(CH_FNV_BASIS ^ 'M', m->start), m->limit),
			m->offset);
	h = finish(hash_fstr(a, hash_fstr(a, h, m->file), m->build_id));
	*out = a->map_h[m1] = h;
	if (need(a, CH_T_MAPPINGS, h, &e)) {
		struct ch_buf *b = &a->t[CH_T_MAPPINGS];

		file = fstr(a, m->file, &fl);
		build = fstr(a, m->build_id, &bl);
		e = put_u16(b, a->day) ?: put_u64(b, h) ?: put_u64(b, m->start) ?: put_u64(b, m->limit)
			?: put_u64(b, m->offset) ?: put_str(b, file, fl) ?: put_str(b, build, bl);
	}
	return e;
}

static int func_hash(struct ch_append *a, uint32_t fi, uint64_t *out)
{
	const struct profile_flat_function *fn = &a->f->functions[fi];
	uint64_t h;
	int e = 0;

	if (a->func_h[fi]) {
		*out = a->func_h[fi];
		return 0;
	}
	h = finish(
	    hash_fstr(a, hash_fstr(a, hash_fstr(a, CH_FNV_BASIS ^ 'F', fn->name), fn->system_name),
		      fn->filename));
	*out = a->func_h[fi] = h;
	if (need(a, CH_T_FUNCTIONS, h, &e)) {
		struct ch_buf *b = &a->t[CH_T_FUNCTIONS];
		size_t n1, n2, n3;
		const char *s1 = fstr(a, fn->name, &n1), *s2 = fstr(a, fn->system_name, &n2),
			   *s3 = fstr(a, fn->filename, &n3);

		e = put_u16(b, a->day) ?: put_u64(b, h) ?: put_str(b, s1, n1) ?: put_str(b, s2, n2)
			?: put_str(b, s3, n3);
	}
	return e;
}

static int loc_hash(struct ch_append *a, uint32_t li, uint64_t *out)
{
	const struct profile_flat_location *l = &a->f->locations[li];
	uint64_t h, mh, fh;
	int e;

	if (a->loc_h[li]) {
		*out = a->loc_h[li];
		return 0;
	}
	if ((e = map_hash(a, l->mapping, &mh)))
		return e;
	h = ch_hash_u64(ch_hash_u64(ch_hash_u64(CH_FNV_BASIS ^ 'L', mh), l->address), l->n_lines);
	for (uint32_t i = 0; i < l->n_lines; i++) {
		const struct profile_flat_line *ln = &a->f->lines[l->line_off + i];

		if ((e = func_hash(a, ln->function, &fh)))
			return e;
		h = ch_hash_u64(ch_hash_u64(h, fh), (uint64_t)ln->line);
	}
	h = finish(h);
	*out = a->loc_h[li] = h;
	if (need(a, CH_T_LOCATIONS, h, &e)) {
		struct ch_buf *b = &a->t[CH_T_LOCATIONS];

		e = put_u16(b, a->day) ?: put_u64(b, h) ?: put_u64(b, mh) ?: put_u64(b, l->address)
			?: put_varint(b, l->n_lines);
		for (uint32_t i = 0; !e && i < l->n_lines; i++)
			e = put_u64(b, a->func_h[a->f->lines[l->line_off + i].function]);
		e = e ?: put_varint(b, l->n_lines);
		for (uint32_t i = 0; !e && i < l->n_lines; i++)
			e = put_u64(b, (uint64_t)a->f->lines[l->line_off + i].line);
	}
	return e;
}

static int stack_hash(struct ch_append *a, const struct profile_flat_sample *sm, uint64_t *out)
{
	uint64_t h = CH_FNV_BASIS ^ 'S', lh;
	int e = 0;

	for (uint32_t i = 0; i < sm->n_locs; i++) {
		if ((e = loc_hash(a, a->f->locs[sm->loc_off + i], &lh)))
			return e;
		h = ch_hash_u64(h, lh);
	}
	*out = h = finish(h);
	if (need(a, CH_T_STACKS, h, &e)) {
		struct ch_buf *b = &a->t[CH_T_STACKS];

		e = put_u16(b, a->day) ?: put_u64(b, h) ?: put_varint(b, sm->n_locs);
		for (uint32_t i = 0; !e && i < sm->n_locs; i++)
			e = put_u64(b, a->loc_h[a->f->locs[sm->loc_off + i]]);
	}
	return e;
}

/* ---- series ---- */

/* A label of a series being built; src orders a sample label before an extra one. */
struct ch_label {
	const char *name, *value;
	size_t nl, vl;
	int src;
};

static int label_cmp(const void *x, const void *y)
{
	const struct ch_label *a = x, *b = y;
	size_t n = a->nl < b->nl ? a->nl : b->nl;
	int c = memcmp(a->name, b->name, n);

	if (c)
		return c;
	if (a->nl != b->nl)
		return a->nl < b->nl ? -1 : 1;
	return a->src - b->src;
}

static bool valid_label_name(const char *s, size_t n)
{
	static const char first[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";

	return n > 0 && strchr(first, s[0]) && s[0] && all_of(s, n, CH_NAME_CHARS ".");
}

static bool kept_sample_label(const struct chstore *c, const char *k, size_t n)
{
	for (size_t i = 0; i < c->n_sample_labels; i++)
		if (strlen(c->opts.sample_labels[i]) == n &&
		    !memcmp(c->opts.sample_labels[i], k, n))
			return true;
	return false;
}

#define CH_MAX_SERIES_LABELS (STORE_MAX_SAMPLE_LABELS + 64)

/* The series id of a sample's labels plus the extra ones; its row written once. */
static int series_of(struct ch_append *a, const struct profile_flat_sample *sm, uint64_t *out,
		     char *err, size_t errlen)
{
	struct ch_label l[CH_MAX_SERIES_LABELS];
	char num[STORE_MAX_SAMPLE_LABELS][24];
	size_t n = 0, k = 0, nn = 0;
	uint64_t h;
	int e = 0;

	for (uint32_t i = 0; i < sm->n_labels && n < STORE_MAX_SAMPLE_LABELS; i++) {
		const struct profile_flat_label *fl = &a->f->labels[sm->label_off + i];
		size_t kl, vl;
		const char *key = fstr(a, fl->key, &kl), *val = fstr(a, fl->str, &vl);

		if (!kept_sample_label(a->c, key, kl))
			continue;
		if (!vl) { /* numeric, printed in decimal */
			vl = (size_t)snprintf(num[nn], sizeof(num[nn]), "%lld", (long long)fl->num);
			val = num[nn++];
		}
		l[n++] = (struct ch_label){key, val, kl, vl, 0};
	}
	for (size_t i = 0; i < a->n_extra && n < CH_MAX_SERIES_LABELS; i++)
		l[n++] = (struct ch_label){a->extra[i].name, a->extra[i].value,
					   strlen(a->extra[i].name), strlen(a->extra[i].value), 1};
	qsort(l, n, sizeof(*l), label_cmp);
	/* sorted by name, a sample label before an extra one: the first of a name wins
	 * (a sample label overrides an extra one); an empty value is no label */
	for (size_t i = 0; i < n; i++)
		if (!(i && l[i].nl == l[i - 1].nl && !memcmp(l[i].name, l[i - 1].name, l[i].nl)) &&
		    l[i].vl)
			l[k++] = l[i];
	for (size_t i = 0; i < k; i++) {
		if (!valid_label_name(l[i].name, l[i].nl)) {
			snprintf(err, errlen, "invalid label name \"%.*s\"",
				 (int)(l[i].nl > 64 ? 64 : l[i].nl), l[i].name);
			return -EINVAL;
		}
		if (l[i].nl > STORE_MAX_LABEL_LEN || l[i].vl > STORE_MAX_LABEL_LEN) {
			snprintf(err, errlen, "label %.64s is longer than %d bytes", l[i].name,
				 STORE_MAX_LABEL_LEN);
			return -E2BIG;
		}
	}
	if (k > a->c->opts.max_labels_per_series) {
		snprintf(err, errlen, "a series of %zu labels, over the limit of %zu", k,
			 a->c->opts.max_labels_per_series);
		return -E2BIG;
	}
	h = ch_hash(CH_FNV_BASIS ^ 'R', a->type, strlen(a->type) + 1);
	for (size_t i = 0; i < k; i++)
		h = ch_hash(ch_hash(ch_hash(h, l[i].name, l[i].nl), "", 1), l[i].value,
			    l[i].vl + 1);
	*out = h = finish(h);
	if (need(a, CH_T_SERIES, h, &e)) {
		struct ch_buf *b = &a->t[CH_T_SERIES];

		a->new_series++;
		e = put_u16(b, a->day) ?: put_u64(b, h) ?: put_str(b, a->type, strlen(a->type))
			?: put_varint(b, k);
		for (size_t i = 0; !e && i < k; i++)
			e = put_str(b, l[i].name, l[i].nl);
		e = e ?: put_varint(b, k);
		for (size_t i = 0; !e && i < k; i++)
			e = put_str(b, l[i].value, l[i].vl);
	}
	return e;
}

static int pair_cmp(const void *x, const void *y)
{
	const struct ch_pair *a = x, *b = y;

	if (a->series != b->series)
		return a->series < b->series ? -1 : 1;
	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	return 0;
}

/* Hashes every sample into (series, stack) rows, summed per pair. */
static int collect_rows(struct ch_append *a, char *err, size_t errlen)
{
	const struct profile_flat *f = a->f;
	uint64_t series = 0;
	int e = 0;

	for (size_t i = 0; i < f->n_samples && !e; i++) {
		const struct profile_flat_sample *sm = &f->samples[i], *prev = i ? sm - 1 : NULL;
		uint64_t stack;

		/* samples of one process carry the same label indices: one series lookup */
		if (!prev || prev->n_labels != sm->n_labels ||
		    memcmp(&f->labels[prev->label_off], &f->labels[sm->label_off],
			   sm->n_labels * sizeof(*f->labels)))
			e = series_of(a, sm, &series, err, errlen);
		e = e ?: stack_hash(a, sm, &stack);
		if (!e &&
		    base_grow((void **)&a->rows, &a->cap_rows, a->n_rows + 1, sizeof(*a->rows)))
			e = -ENOMEM;
		if (!e)
			a->rows[a->n_rows++] =
			    (struct ch_pair){series, stack, {sm->values[0], sm->values[1]}};
	}
	if (e || !a->n_rows)
		return e;
	qsort(a->rows, a->n_rows, sizeof(*a->rows), pair_cmp);
	size_t w = 0;

	for (size_t i = 1; i < a->n_rows; i++) {
		if (!pair_cmp(&a->rows[w], &a->rows[i])) {
			for (int k = 0; k < PROFILE_N_VALUES; k++)
				a->rows[w].v[k] = base_sat_add(a->rows[w].v[k], a->rows[i].v[k]);
		} else {
			a->rows[++w] = a->rows[i];
		}
	}
	a->n_rows = w + 1;
	return 0;
}

static int encode_samples(struct ch_append *a)
{
	struct ch_buf *b = &a->t[CH_T_SAMPLES];
	uint32_t hour = (uint32_t)(a->f->time_ns / CH_HOUR_NS);
	int e = 0;

	for (size_t i = 0; i < a->n_rows && !e; i++)
		e = put_u16(b, a->day) ?: put_u32(b, hour) ?: put_u64(b, (uint64_t)a->f->time_ns)
			?: put_u64(b, (uint64_t)a->f->duration_ns) ?: put_u64(b, a->rows[i].series)
			?: put_u64(b, a->rows[i].stack) ?: put_u64(b, (uint64_t)a->rows[i].v[0])
			?: put_u64(b, (uint64_t)a->rows[i].v[1]);
	return e;
}

/* The INSERTs, dictionaries first, samples last (the acknowledgement). */
static int send_tables(struct ch_append *a, char *err, size_t errlen)
{
	char sql[160];
	int e = 0;

	for (int t = 0; t < CH_N_T && !e; t++) {
		if (!a->t[t].n)
			continue;
		snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT RowBinary", a->c->db,
			 ch_tables[t].name);
		e = ch_http(a->c, sql, a->t[t].p, a->t[t].n, NULL, err, errlen);
	}
	return e;
}

/* After a stored append: its rows count as inserted today. */
static void remember(struct ch_append *a)
{
	struct chstore *c = a->c;

	pthread_mutex_lock(&c->lock);
	if (c->written.n + a->seen.n > CH_MAX_WRITTEN)
		ch_set_fini(&c->written);
	for (size_t i = 0; i < a->seen.n; i++)
		if (ch_set_add(&c->written, a->seen.k[i]))
			break; /* out of memory: rows are inserted again, harmless */
	pthread_mutex_unlock(&c->lock);
}

int chstore_append_flat(struct store *s, const struct profile_flat *f, const char *profile_type,
			const struct store_label *extra, size_t n_extra,
			struct store_append_result *res, char *err, size_t errlen)
{
	struct chstore *c = ch_of(s);
	struct ch_append a = {.c = c, .f = f, .extra = extra, .n_extra = n_extra};
	int64_t samples = 0;
	size_t series = 0;
	int e = 0;

	a.type = profile_type && *profile_type ? profile_type : STORE_CPU_PROFILE_TYPE;
	if (!f || f->time_ns <= 0) {
		snprintf(err, errlen, "a profile without a time");
		return -EINVAL;
	}
	a.day = (uint16_t)(f->time_ns / CH_DAY_NS);
	a.map_h = calloc(f->n_mappings + 1, sizeof(*a.map_h));
	a.func_h = calloc(f->n_functions + 1, sizeof(*a.func_h));
	a.loc_h = calloc(f->n_locations + 1, sizeof(*a.loc_h));
	if (!a.map_h || !a.func_h || !a.loc_h) {
		e = -ENOMEM;
		goto cleanup;
	}
	pthread_mutex_lock(&c->lock); /* need() reads c->written */
	e = collect_rows(&a, err, errlen);
	pthread_mutex_unlock(&c->lock);
	e = e ?: encode_samples(&a);
	e = e ?: send_tables(&a, err, errlen);
	if (e)
		goto cleanup;
	remember(&a);
	for (size_t i = 0; i < a.n_rows; i++) {
		samples = base_sat_add(samples, a.rows[i].v[0]);
		series += !i || a.rows[i].series != a.rows[i - 1].series;
	}
	if (res)
		*res = (struct store_append_result){series, a.new_series, a.n_rows, samples};
cleanup:
	if (e == -ENOMEM && err && errlen && !*err)
		snprintf(err, errlen, "out of memory");
	for (int t = 0; t < CH_N_T; t++)
		ch_buf_fini(&a.t[t]);
	ch_set_fini(&a.seen);
	free(a.rows);
	free(a.map_h);
	free(a.func_h);
	free(a.loc_h);
	return e;
}

/* ---- retention and stats ---- */

/* Drops every day partition that ended before now - retention, on this server's own
 * tables (a cluster: each shard's hearth drops its shard's). */
int chstore_maintain(struct store *s, int64_t now_ns, uint64_t *deleted)
{
	struct chstore *c = ch_of(s);
	struct ch_buf a = {0};
	char err[512], cut[11];
	int e;

	if (deleted)
		*deleted = 0;
	if (c->opts.retention_ns < 0 || now_ns - c->opts.retention_ns < CH_DAY_NS)
		return 0;
	ch_day_str(now_ns - c->opts.retention_ns, cut); /* that day is kept */
	e = ch_sql(c, &a, err, sizeof(err),
		   "SELECT DISTINCT table, partition FROM system.parts WHERE database = '%s' AND "
		   "active AND engine LIKE '%%MergeTree' AND partition < '%s' FORMAT TSV",
		   c->db, cut);
	for (char *l = e ? NULL : (char *)a.p; l && *l && !e;) {
		char *nl = strchr(l, '\n'), *tab = strchr(l, '\t');

		if (!nl || !tab || tab > nl)
			break;
		*nl = *tab = 0;
		e = ch_sql(c, NULL, err, sizeof(err), "ALTER TABLE %s.%s DROP PARTITION '%s'",
			   c->db, l, tab + 1);
		if (!e && deleted)
			(*deleted)++;
		l = nl + 1;
	}
	if (e)
		fprintf(c->opts.log ? c->opts.log : stderr, "hearth: retention: %s\n", err);
	ch_buf_fini(&a);
	return e;
}

int chstore_stats(struct store *s, struct store_stats *out)
{
	struct chstore *c = ch_of(s);
	struct ch_buf a = {0};
	char err[512];
	unsigned long long bytes = 0, rows = 0, stacks = 0, series = 0, profiles = 0;
	long long oldest = 0, newest = 0;
	int e;

	memset(out, 0, sizeof(*out));
	/* bytes and rows of this server's own parts (in a cluster: its shard's);
	 * distinct stacks and series, and the profiles (distinct profile times) and
	 * their span, of the whole database (approximate: uniq). The span and count
	 * are the database's, not this process's appends: a server started on a full
	 * database answers GetProfileStats with its data. */
	e = ch_sql(c, &a, err, sizeof(err),
		   "SELECT sum(bytes_on_disk), sumIf(rows, table LIKE 'samples%%'), "
		   "(SELECT uniq(hash) FROM %s.stacks), (SELECT uniq(id) FROM %s.series), "
		   "(SELECT uniq(time_ns) FROM %s.samples), (SELECT min(time_ns) FROM %s.samples), "
		   "(SELECT max(time_ns) FROM %s.samples) FROM "
		   "system.parts WHERE database = '%s' AND active FORMAT TSV",
		   c->db, c->db, c->db, c->db, c->db, c->db);
	if (!e && a.p &&
	    sscanf((char *)a.p, "%llu\t%llu\t%llu\t%llu\t%llu\t%lld\t%lld", &bytes, &rows, &stacks,
		   &series, &profiles, &oldest, &newest) == 7) {
		out->bytes_on_disk = bytes;
		out->rows = rows;
		out->stacks = stacks;
		out->series = series;
		out->profiles = profiles;
		if (profiles) {
			out->oldest_ns = oldest;
			out->newest_ns = newest;
		}
	}
	pthread_mutex_lock(&c->lock);
	out->locations = c->n_locs;
	pthread_mutex_unlock(&c->lock);
	ch_buf_fini(&a);
	return e;
}

/* ---- the store ---- */

/* One round trip: ClickHouse answers and the database is there. */
int chstore_health(struct store *s, char *err, size_t errlen)
{
	struct chstore *c = ch_of(s);
	struct ch_buf a = {0};
	int e = ch_sql(c, &a, err, errlen, "EXISTS TABLE %s.hearth_schema FORMAT TSV", c->db);

	if (!e && (!a.p || a.p[0] != '1')) {
		snprintf(err, errlen, "%s: the database has no hearth schema", c->where);
		e = -EIO;
	}
	ch_buf_fini(&a);
	return e;
}

/* Each insert is its own (docs/clickhouse.md): a batch has nothing to hold. */
int chstore_batch_begin(struct store *s, char *err, size_t errlen)
{
	(void)s, (void)err, (void)errlen;
	return 0;
}

int chstore_batch_end(struct store *s, bool commit, char *err, size_t errlen)
{
	(void)s, (void)commit, (void)err, (void)errlen;
	return 0;
}

const struct store_ops ch_ops = STORE_OPS(chstore, "clickhouse", struct ch_builder);

bool store__is_clickhouse(const char *spec)
{
	return spec && !strncmp(spec, STORE_CLICKHOUSE_SCHEME, strlen(STORE_CLICKHOUSE_SCHEME));
}

int store__open_clickhouse(const char *url, const struct store_opts *opts, struct store **out,
			   char *err, size_t errlen)
{
	struct chstore *c;
	int e;

	*out = NULL;
	if (err && errlen)
		*err = 0;
	if (!store__is_clickhouse(url))
		return bad_url(url ? url : "", "not a clickhouse:// URL", err, errlen);
	e = ch_open(url, opts, &c, err, errlen);
	if (e)
		return e;
	c->store.ops = &ch_ops; /* a store now: the core calls through its table */
	*out = &c->store;
	return 0;
}
