/*
 * bench/store: a synthetic day of one host through the store, as issue 4 asks.
 *
 * 64 CPUs at 99 Hz, 500 processes, one profile per 10 s (63,360 raw samples),
 * stacks drawn from a Zipf distribution (s = 1) over 60,000 distinct stacks of
 * depth 10-60, each stack owned by one process (pid, comm, process, exe labels).
 *
 * What is generated, and how: building and encoding a 63,360-sample pprof costs
 * more than ingesting it, so the benchmark builds a pool of POOL distinct host
 * profiles once (each its own Zipf draw, gzipped pprof as the agent sends it,
 * ~2 MB each; not timed) and replays them in turn, one every 10 s of simulated
 * time. That is what a host does: the same processes send similar profiles
 * every interval. Each replay goes through pprof_decode_flat, then gets its
 * time set from the replay's slot (as /ingest does with from= and until=), then
 * store__append_flat: the timed path of a pprof pushed to /ingest (and of
 * hearth run's agent). Then: bytes on disk, and the latency
 * over the last 1 h and the whole day of the merge by stack (query_stacks,
 * what the flame tree, top JSON and diff are built from) and of the merged
 * profile with sample labels (query_profile, for pprof and folded), a day's
 * timeline and the web UI's flame tree answer over 1 h and the day (the request
 * web/js/app.js makes: /api/profile?format=tree&maxNodes=20000&topRows=100000,
 * the tree and the top table from one merge), and Grafana's flame graph query
 * over 1 h: Connect's SelectMergeStacktraces (binary protobuf, maxNodes 16384)
 * POSTed to a server on the store in this process, through the whole server
 * path (HTTP, decode, engine, FlameGraph message, encode).
 * Times are wall clock and, beside it, the CPU time of the benchmark's thread
 * (what one core spent: on a shared machine wall time also counts waiting).
 *
 *   store_bench [--hours H] [--dir DIR] [--no-fsync] [--seed N] [--queries-only]
 *               [--only QUERY] [--default-malloc] [--store clickhouse://HOST:PORT/DB]
 *
 * --store runs the same day through the ClickHouse backend instead of the
 * embedded store in DIR (bench/store runs both and prints them side by side).
 *
 * --queries-only reopens DIR as a run with the same --hours left it and times
 * the queries again (several runs of them on a noisy machine, one ingest).
 * --only QUERY times that query alone (the others print "-"), 20 runs instead
 * of 3, so that `perf record` sees one path: stacks1, stacks24, profile1,
 * profile24, timeline24, tree1, tree24, connect1 (its CPU time is the process's:
 * the server answers on its own threads), diff1 (the web UI's /api/diff of the
 * previous hour against the last one), diffhalf (the last hour's first half
 * against its second: the UI's default diff when the previous hour is empty).
 * The benchmark sets malloc up as the server does (server_keep_freed_memory:
 * memory a query frees is kept for the next); --default-malloc keeps glibc's
 * default, under which every query faults its memory in afresh.
 */
#include "ingest/ingest.h"
#include "query/query.h"
#include "server/server.h"
#include "store/store.h"
#include "querier.pb-c.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S	   1000000000LL
#define CPUS	   64
#define HZ	   99
#define PROCS	   500
#define STACKS	   60000
#define FUNCS	   40000
#define INTERVAL_S 10
#define POOL	   30 /* distinct profiles replayed in turn (5 min of a host) */

struct stack {
	int proc, depth;
	uint32_t frames[60]; /* function index, root first */
};

static struct stack *stacks;
static double *cdf;
static uint64_t rng = 88172645463325252ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of this thread: on a shared machine, what one core spent on the work
 * (wall time also counts waiting for the CPU and for fsync). */
static double cpu_s(void)
{
	return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* Stacks share a per-process prefix (main, runtime frames) then diverge. */
static int make_universe(void)
{
	double sum = 0;

	stacks = calloc(STACKS, sizeof(*stacks));
	cdf = calloc(STACKS, sizeof(*cdf));
	if (!stacks || !cdf)
		return -ENOMEM;
	for (int k = 0; k < STACKS; k++) {
		struct stack *s = &stacks[k];

		s->proc = (int)(xorshift() % PROCS);
		s->depth = 10 + (int)(xorshift() % 51);
		for (int d = 0; d < s->depth; d++)
			s->frames[d] = d < 4 ? (uint32_t)(s->proc * 4 + d) % FUNCS
					     : (uint32_t)(xorshift() % FUNCS);
		sum += 1.0 / (k + 1);
		cdf[k] = sum;
	}
	for (int k = 0; k < STACKS; k++)
		cdf[k] /= sum;
	return 0;
}

static int draw(void)
{
	double u = (double)(xorshift() >> 11) / (double)(1ull << 53);
	int lo = 0, hi = STACKS - 1;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* One 10 s profile of the host at time t. */
static struct profile *make_profile(int64_t t, uint32_t *counts)
{
	struct profile *p = profile__new(S / HZ);
	uint64_t map, locs[60];
	char name[64], proc[32], exe[64], pid[16];

	if (!p)
		return NULL;
	profile__set_time(p, t, INTERVAL_S * S);
	map = profile__mapping(p, 0x400000, 0x4000000, 0, "/usr/bin/app", "");
	memset(counts, 0, STACKS * sizeof(*counts));
	for (int i = 0; i < CPUS * HZ * INTERVAL_S; i++)
		counts[draw()]++;
	for (int k = 0; k < STACKS; k++) {
		const struct stack *s = &stacks[k];

		if (!counts[k])
			continue;
		for (int d = 0; d < s->depth; d++) {
			snprintf(name, sizeof(name), "pkg%u::module::function_%u",
				 s->frames[d] % 97, s->frames[d]);
			struct profile_line l = {profile__function(p, name, name, "src/x.c"), 1};
			locs[s->depth - 1 - d] =
			    profile__location(p, map, 0x400000 + s->frames[d] * 64ull, &l, 1);
		}
		snprintf(proc, sizeof(proc), "proc%d", s->proc);
		snprintf(exe, sizeof(exe), "/usr/bin/proc%d", s->proc);
		snprintf(pid, sizeof(pid), "%d", 1000 + s->proc);
		struct profile_label lab[] = {
		    {"pid", pid, 0}, {"comm", proc, 0}, {"process", proc, 0}, {"exe", exe, 0}};
		int64_t v[2] = {counts[k], (int64_t)counts[k] * (S / HZ)};
		if (profile__add_sample(p, locs, (size_t)s->depth, v, lab, 4)) {
			profile__free(p);
			return NULL;
		}
	}
	return p;
}

/* What the web UI asks a flame tree with (web/js/app.js: state.maxNodes' default
 * and TOP_ROWS). */
#define UI_MAX_NODES 20000
#define UI_TOP_ROWS  100000

/* --store: the ClickHouse backend's URL (NULL: the embedded store in --dir). */
static const char *store_url;

static int open_store(const char *dir, const struct store_opts *o, struct store **st, char *err,
		      size_t errlen)
{
	if (store_url)
		return store__open_clickhouse(store_url, o, st, err, errlen);
	return store__open(dir, o, st, err, errlen);
}

/* The query --only names (NULL: all of them). */
static const char *only;

static bool query_known(const char *name)
{
	static const char *const names[] = {"profile1", "profile24", "timeline24", "tree1",
					    "tree24",	"stacks1",   "stacks24",   "connect1",
					    "diff1", "diffhalf"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* Grafana's flame graph request: what the Connect query below POSTs. */
#define CONNECT_TYPE	  "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
#define CONNECT_MAX_NODES 16384

static size_t count_bytes(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	*(size_t *)ctx += size * n;
	return size * n;
}

/* One SelectMergeStacktraces over [from, until) POSTed to the server at url.
 * 0 or -EIO (not a 200 with a body). */
static int connect_query(CURL *c, const char *url, int64_t from, int64_t until, char *err,
			 size_t errlen)
{
	Querier__V1__SelectMergeStacktracesRequest req =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
	uint8_t body[256];
	size_t n, got = 0;
	long code = 0;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/proto");
	CURLcode cr;

	req.profile_typeid = CONNECT_TYPE;
	req.label_selector = "{}";
	req.start = from / 1000000;
	req.end = until / 1000000;
	req.max_nodes = CONNECT_MAX_NODES;
	req.format = QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_FLAMEGRAPH;
	if (protobuf_c_message_get_packed_size(&req.base) > sizeof(body)) {
		curl_slist_free_all(h);
		return -E2BIG;
	}
	n = protobuf_c_message_pack(&req.base, body);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)n);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, count_bytes);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &got);
	cr = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	if (cr != CURLE_OK || code != 200 || got < 16) {
		snprintf(err, errlen, "SelectMergeStacktraces: %s, HTTP %ld, %zu bytes",
			 curl_easy_strerror(cr), code, got);
		return -EIO;
	}
	return 0;
}

/* Best of 3 runs (20 with --only connect1) of connect_query against a server
 * started on st for them, in ms (wall); *cpu_ms the process's CPU time. */
static double time_connect(struct store *st, int64_t from, int64_t until, double *cpu_ms)
{
	struct server_opts so = {.listen = "127.0.0.1:0", .store = st};
	struct server *srv = NULL;
	CURL *c = NULL;
	char err[256] = "", url[128];
	double best = 1e9;
	int runs = only ? 20 : 3;

	*cpu_ms = 0;
	if (only && strcmp(only, "connect1"))
		return 0;
	if (server__start(&so, &srv, err, sizeof(err)) || !(c = curl_easy_init())) {
		fprintf(stderr, "server: %s\n", err);
		server__stop(srv);
		return -1;
	}
	snprintf(url, sizeof(url),
		 "http://127.0.0.1:%d/querier.v1.QuerierService/SelectMergeStacktraces",
		 server__port(srv));
	for (int r = 0; r < runs && best >= 0; r++) {
		double t0 = now_s(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);

		if (connect_query(c, url, from, until, err, sizeof(err))) {
			fprintf(stderr, "query failed: %s\n", err);
			best = -1;
			break;
		}
		double dt = now_s() - t0;
		if (dt < best)
			*cpu_ms = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) * 1000;
		best = dt < best ? dt : best;
	}
	curl_easy_cleanup(c);
	server__stop(srv);
	return best < 0 ? -1 : best * 1000;
}

/* Best of 3 runs in ms (wall); *cpu_ms gets the CPU time of that run. With --only:
 * 20 runs of the query so named, 0 ms for the others (printed as "-"). */
static double time_query(struct store *st, const char *name, int64_t from, int64_t until, int what,
			 double *cpu_ms)
{
	/* The web UI's flame tree request (web/js/app.js: maxNodes, TOP_ROWS); the
	 * other queries ignore both. */
	struct query_request q = {
	    .from_ns = from, .until_ns = until, .max_nodes = UI_MAX_NODES, .top_rows = UI_TOP_ROWS};
	struct profile *p = NULL;
	char err[256], *buf = NULL;
	size_t len;
	double best = 1e9;
	int runs = 3;

	if (only) {
		if (strcmp(only, name)) {
			*cpu_ms = 0;
			return 0;
		}
		runs = 20;
	}
	for (int r = 0; r < runs; r++) {
		double t0 = now_s(), c0 = cpu_s();
		int e;

		if (what == 3) { /* merge by stack, the input of tree/top/diff */
			struct query_stacks qs;

			e = query_stacks(st, &q, &qs, err, sizeof(err));
			query_stacks__fini(&qs);
		} else if (what == 4) { /* the web UI's diff: the previous 1 h vs the last */
			struct query_request l = q;
			FILE *f = open_memstream(&buf, &len);

			l.from_ns = from - (until - from);
			l.until_ns = from;
			e = !f ? -ENOMEM : query_diff_json(st, &l, &q, f, err, sizeof(err));
			if (f)
				fclose(f);
			free(buf);
			buf = NULL;
		} else if (what) { /* 1: timeline, 2: flame tree JSON */
			FILE *f = open_memstream(&buf, &len);
			e = !f		? -ENOMEM
			    : what == 1 ? query_timeline_json(st, &q, f, err, sizeof(err))
					: query_tree_json(st, &q, f, err, sizeof(err));
			if (f)
				fclose(f);
			free(buf);
			buf = NULL;
		} else {
			e = query_profile(st, &q, &p, err, sizeof(err));
			profile__free(p);
			p = NULL;
		}
		if (e) {
			fprintf(stderr, "query failed: %s\n", err);
			return -1;
		}
		double dt = now_s() - t0;
		if (dt < best)
			*cpu_ms = (cpu_s() - c0) * 1000;
		best = dt < best ? dt : best;
	}
	return best * 1000;
}

struct totals {
	double ingest_s, decode_s, ingest_cpu;
	uint64_t rows, samples, profiles, bytes_pb;
};

/* Gzipped pprof bodies of POOL distinct host profiles. */
struct pool {
	uint8_t *body[POOL];
	size_t len[POOL];
};

static void pool_free(struct pool *pl)
{
	for (int i = 0; i < POOL; i++)
		free(pl->body[i]);
}

static int make_pool(struct pool *pl, int64_t start)
{
	uint32_t *counts = calloc(STACKS, sizeof(*counts));
	int e = counts ? 0 : -ENOMEM;

	for (int i = 0; i < POOL && !e; i++) {
		struct profile *p = make_profile(start + (int64_t)i * INTERVAL_S * S, counts);

		e = p ? pprof_encode(p, &pl->body[i], &pl->len[i]) : -ENOMEM;
		profile__free(p);
	}
	free(counts);
	return e;
}

static int ingest(struct store *st, const struct pool *pl, int64_t start, int n, struct totals *t)
{
	struct store_label extra[] = {{"host", "bench-host"}, {"kernel", "6.1.0"}};
	char err[256];

	for (int i = 0; i < n; i++) {
		struct profile_flat *d = NULL;
		struct store_append_result res;
		size_t len = pl->len[i % POOL];
		double t0 = now_s(), c0 = cpu_s();
		int e = pprof_decode_flat(pl->body[i % POOL], len, &d, err, sizeof(err));

		t->decode_s += now_s() - t0;
		if (!e) {
			d->time_ns = start + (int64_t)i * INTERVAL_S * S;
			d->duration_ns = INTERVAL_S * S;
		}
		e = e ?: store__append_flat(st, d, NULL, extra, 2, &res, err, sizeof(err));
		t->ingest_s += now_s() - t0;
		t->ingest_cpu += cpu_s() - c0;
		profile_flat__free(d);
		if (e) {
			fprintf(stderr, "profile %d: %s\n", i, err);
			return e;
		}
		t->rows += res.rows;
		t->samples += (uint64_t)res.samples;
		t->bytes_pb += len;
		t->profiles++;
		if (i % 360 == 359)
			fprintf(stderr, "  %d h ingested\n", (i + 1) / 360);
	}
	return 0;
}

struct query_times {
	double q1, q24, tl, tr1, tr24, s1, s24, cn1, df1, dfh;	  /* wall ms */
	double c1, c24, ctl, ctr1, ctr24, cs1, cs24, ccn1, cdf1, cdfh; /* CPU ms */
};

static int time_queries(struct store *st, int64_t end, struct query_times *t)
{
	t->q1 = time_query(st, "profile1", end - 3600 * S, end, 0, &t->c1);
	t->q24 = time_query(st, "profile24", end - 24 * 3600 * S, end, 0, &t->c24);
	t->tl = time_query(st, "timeline24", end - 24 * 3600 * S, end, 1, &t->ctl);
	t->tr1 = time_query(st, "tree1", end - 3600 * S, end, 2, &t->ctr1);
	t->tr24 = time_query(st, "tree24", end - 24 * 3600 * S, end, 2, &t->ctr24);
	t->s1 = time_query(st, "stacks1", end - 3600 * S, end, 3, &t->cs1);
	t->s24 = time_query(st, "stacks24", end - 24 * 3600 * S, end, 3, &t->cs24);
	t->cn1 = time_connect(st, end - 3600 * S, end, &t->ccn1);
	t->df1 = time_query(st, "diff1", end - 3600 * S, end, 4, &t->cdf1);
	/* the UI's default diff when the previous hour is empty: the last hour's halves */
	t->dfh = time_query(st, "diffhalf", end - 1800 * S, end, 4, &t->cdfh);
	return t->df1 < 0 || t->dfh < 0 || t->q1 < 0 || t->q24 < 0 || t->tl < 0 || t->tr1 < 0 || t->tr24 < 0 || t->s1 < 0 ||
		       t->s24 < 0 || t->cn1 < 0
		   ? -EIO
		   : 0;
}

/* One row of the query table; "-" for a query --only left out. */
static void print_time(const char *what, double ms, double cpu, const char *target)
{
	if (only && ms == 0)
		printf("| %s | - | %s |\n", what, target);
	else
		printf("| %s | %.1f ms; CPU %.1f ms | %s |\n", what, ms, cpu, target);
}

static void print_times(const struct query_times *t)
{
	print_time("merge by stack (query_stacks: tree/top/diff input), last 1 h", t->s1, t->cs1,
		   "<= 50 ms");
	print_time("merge by stack, last 24 h (whole run when shorter)", t->s24, t->cs24,
		   "<= 500 ms");
	print_time("merged profile with sample labels (query_profile: pprof/folded), last 1 h",
		   t->q1, t->c1, "");
	print_time("merged profile with sample labels, last 24 h", t->q24, t->c24, "");
	print_time("timeline, last 24 h (auto step)", t->tl, t->ctl, "");
	print_time("the web UI's flame tree JSON (merge + tree + top table; maxNodes 20000, "
		   "topRows 100000), last 1 h",
		   t->tr1, t->ctr1, "<= 150 ms");
	print_time("the web UI's diff JSON (/api/diff with intervals: tree, function table, "
		   "significance), the previous 1 h vs the last 1 h",
		   t->df1, t->cdf1, "<= 150 ms");
	print_time("the web UI's diff JSON when the previous hour is empty: the last 1 h's halves "
		   "(now-1h..now-30m vs now-30m..now)",
		   t->dfh, t->cdfh, "<= 150 ms");
	print_time("the web UI's flame tree JSON, last 24 h", t->tr24, t->ctr24, "<= 400 ms");
	print_time("Connect SelectMergeStacktraces (binary, maxNodes 16384) through the server, "
		   "last 1 h (CPU: the process's)",
		   t->cn1, t->ccn1, "");
}

/* ---- one function over time (issue 31): /api/function-series, /metrics/functions ---- */

struct fseries_times {
	char function[256];  /* the last hour's top function by self */
	double fs1, top60;   /* wall ms */
	double cfs1, ctop60; /* CPU ms */
};

/* /metrics/functions' query: the top k = 10 by self over the 60 s before end,
 * CPU nanoseconds (what a scrape of the defaults merges). */
static int top60(struct store *st, int64_t end, struct query_top *t, char *err, size_t errlen)
{
	struct query_request q = {
	    .from_ns = end - 60 * S, .until_ns = end, .max_nodes = 10, .value_index = 1};

	return query_top(st, &q, t, err, errlen);
}

/* The function series (kind total, the UI's; auto step: 360 steps of 10 s) of
 * function over the hour before end. */
static int fseries1(struct store *st, int64_t end, const char *function, char *err, size_t errlen)
{
	struct query_request q = {.from_ns = end - 3600 * S, .until_ns = end, .value_index = 1};
	struct query_fseries_request fr = {.function = function};
	struct query_fseries fs;
	int e = query_fseries(st, &q, &fr, &fs, err, errlen);

	query_fseries__fini(&fs);
	return e;
}

/* Best of 3 of each; with --only, nothing (the rows print "-"). */
static int time_fseries(struct store *st, int64_t end, struct fseries_times *ft)
{
	struct query_top t = {0};
	char err[512] = "";
	int e = 0;

	memset(ft, 0, sizeof(*ft));
	if (only)
		return 0;
	ft->fs1 = ft->top60 = 1e9;
	for (int r = 0; r < 3 && !e; r++) {
		double t0 = now_s(), c0 = cpu_s(), dt;

		query_top__fini(&t);
		e = top60(st, end, &t, err, sizeof(err));
		if (!e && (dt = (now_s() - t0) * 1000) < ft->top60) {
			ft->top60 = dt;
			ft->ctop60 = (cpu_s() - c0) * 1000;
		}
	}
	if (!e && t.n)
		snprintf(ft->function, sizeof(ft->function), "%s", t.rows[0].name);
	query_top__fini(&t);
	for (int r = 0; r < 3 && !e; r++) {
		double t0 = now_s(), c0 = cpu_s(), dt;

		e = fseries1(st, end, ft->function, err, sizeof(err));
		if (!e && (dt = (now_s() - t0) * 1000) < ft->fs1) {
			ft->fs1 = dt;
			ft->cfs1 = (cpu_s() - c0) * 1000;
		}
	}
	if (e)
		fprintf(stderr, "function series query failed: %s\n", err);
	return e ? -EIO : 0;
}

static void print_fseries(const struct fseries_times *ft)
{
	char what[400];

	snprintf(what, sizeof(what),
		 "one function's series (query_fseries: /api/function-series, kind total, "
		 "360 steps; `%.200s`), last 1 h",
		 ft->function);
	print_time(what, ft->fs1 < 1e9 ? ft->fs1 : 0, ft->cfs1, "");
	print_time("/metrics/functions' query (query_top: k 10, CPU, window 60 s)",
		   ft->top60 < 1e9 ? ft->top60 : 0, ft->ctop60, "");
}

/* --queries-only: the query rows of the table on an existing store. */
static int print_queries(struct store *st, int64_t end)
{
	struct query_times qt;
	struct fseries_times ft;

	if (time_queries(st, end, &qt) || time_fseries(st, end, &ft))
		return -EIO;
	printf("| metric | value (wall; CPU time of the thread) | target |\n| --- | --- | --- |\n");
	print_times(&qt);
	print_fseries(&ft);
	return 0;
}

int main(int argc, char **argv)
{
	double hours = 24;
	const char *dir = "/tmp/hearth-bench-store";
	struct store_opts o = {.sample_labels = ingest_sample_labels};
	struct totals t = {0};
	struct store *st = NULL;
	struct store_stats ss;
	struct pool pl = {0};
	char err[256], cmd[512];
	bool queries_only = false, default_malloc = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--hours") && i + 1 < argc)
			hours = atof(argv[++i]);
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--no-fsync"))
			o.no_fsync = true;
		else if (!strcmp(argv[i], "--queries-only"))
			queries_only = true;
		else if (!strcmp(argv[i], "--only") && i + 1 < argc && query_known(argv[i + 1]))
			only = argv[++i];
		else if (!strcmp(argv[i], "--store") && i + 1 < argc)
			store_url = argv[++i];
		else if (!strcmp(argv[i], "--default-malloc"))
			default_malloc = true;
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			rng = strtoull(argv[++i], NULL, 10) | 1;
		else {
			fprintf(stderr,
				"usage: store_bench [--hours H] [--dir DIR] [--no-fsync] "
				"[--seed N] [--queries-only] [--only profile1|profile24|timeline24|"
				"tree1|tree24|stacks1|stacks24|connect1|diff1|diffhalf] [--default-malloc] [--store URL]\n");
			return 2;
		}
	}
	if (!default_malloc)
		server_keep_freed_memory(); /* as the server does */
	int n = (int)(hours * 3600 / INTERVAL_S);
	int64_t start = 1700000123LL * S; /* not aligned to any rollup window */
	int64_t end = start + (int64_t)n * INTERVAL_S * S;

	if (queries_only) {
		if (open_store(dir, &o, &st, err, sizeof(err))) {
			fprintf(stderr, "open: %s\n", err);
			return 1;
		}
		return print_queries(st, end) ? 1 : (store__close(st), 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0 || make_universe())
		return 1;
	fprintf(stderr, "encoding %d distinct host profiles...\n", POOL);
	if (make_pool(&pl, start))
		return 1;
	if (open_store(dir, &o, &st, err, sizeof(err))) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	fprintf(stderr, "ingesting %d profiles (%.1f h)...\n", n, hours);
	if (ingest(st, &pl, start, n, &t) || store__maintain(st, end + 3600 * S, NULL))
		return 1;
	struct query_times qt;
	if (time_queries(st, end, &qt))
		return 1;
	struct fseries_times ft;
	if (time_fseries(st, end, &ft))
		return 1;
	store__stats(st, &ss);
	store__close(st); /* checkpoints the WAL: what stays on disk */
	st = NULL;
	if (open_store(dir, &o, &st, err, sizeof(err)))
		return 1;
	store__stats(st, &ss);
	store__close(st);
	pool_free(&pl);

	printf("store bench (%s): %.1f h, 1 host, %d CPUs at %d Hz, %d processes, %d stacks "
	       "(Zipf s=1, depth 10-60)%s\n",
	       store_url ? store_url : "embedded", hours, CPUS, HZ, PROCS, STACKS,
	       store_url ? "" : o.no_fsync ? ", no fsync" : ", fsync per append");
	printf("| metric | value (wall; CPU time of the thread) | target |\n| --- | --- | --- |\n");
	printf("| profiles ingested | %llu (%.1f MB of gzipped pprof; %d distinct, replayed) | |\n",
	       (unsigned long long)t.profiles, t.bytes_pb / 1e6, POOL);
	printf("| raw samples / stored rows | %llu / %llu | |\n", (unsigned long long)t.samples,
	       (unsigned long long)t.rows);
	printf("| distinct stacks stored | %llu | >= 50,000 |\n", (unsigned long long)ss.stacks);
	printf("| ingest (pprof_decode_flat + store__append_flat) | %.0f rows/s, %.1f profiles/s; "
	       "CPU: %.0f "
	       "rows/s | >= 500,000 rows/s |\n",
	       t.rows / t.ingest_s, t.profiles / t.ingest_s, t.rows / t.ingest_cpu);
	printf("| of which decode / append | %.0f%% / %.0f%% (append alone: %.0f "
	       "rows/s) | |\n",
	       100 * t.decode_s / t.ingest_s, 100 * (t.ingest_s - t.decode_s) / t.ingest_s,
	       t.rows / (t.ingest_s - t.decode_s));
	printf("| bytes on disk | %.1f MB | |\n", ss.bytes_on_disk / 1e6);
	printf("| bytes per raw sample | %.3f | <= 0.5 |\n", (double)ss.bytes_on_disk / t.samples);
	printf("| bytes per stored row | %.2f | |\n", (double)ss.bytes_on_disk / t.rows);
	print_times(&qt);
	print_fseries(&ft);
	return 0;
}
