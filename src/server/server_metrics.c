/*
 * /metrics in the Prometheus text exposition format (version 0.0.4): requests,
 * ingested profiles/samples/bytes, rejected requests by reason, a query
 * latency histogram, and the store's series/bytes. Counters are updated with
 * relaxed atomics from the connection threads.
 */
#include "server_impl.h"
#include "base/base.h"
#include "store/store.h"

#include <string.h>

static const char *const reject_names[SERVER_REJ_MAX] = {
    [SERVER_REJ_TOO_LARGE] = "body_too_large",
    [SERVER_REJ_UNAUTHORIZED] = "unauthorized",
    [SERVER_REJ_NOT_FOUND] = "not_found",
    [SERVER_REJ_METHOD] = "method",
    [SERVER_REJ_BAD_PROFILE] = "bad_profile",
    [SERVER_REJ_BOMB] = "decompression_bomb",
    [SERVER_REJ_BAD_FORMAT] = "bad_format",
    [SERVER_REJ_BAD_LABELS] = "bad_labels",
    [SERVER_REJ_BAD_TIME] = "bad_time",
    [SERVER_REJ_BAD_QUERY] = "bad_query",
    [SERVER_REJ_TOO_MANY_SERIES] = "too_many_series",
    [SERVER_REJ_BAD_PARAM] = "bad_param",
    [SERVER_REJ_INTERNAL] = "internal",
    [SERVER_REJ_BUSY] = "busy",
    [SERVER_REJ_DISK_FULL] = "disk_full",
};

/* Upper bounds (seconds) of the query latency buckets. */
static const double lat_bounds[SERVER_LAT_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
						      0.5,   1,	   2.5,	  5,	10};

#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
#define GET(p)	  __atomic_load_n((p), __ATOMIC_RELAXED)

void server_metrics__init(struct server_metrics *m)
{
	memset(m, 0, sizeof(*m));
}

void server_metrics__reject(struct server_metrics *m, enum server_reject why)
{
	ADD(&m->rejected[why], 1);
}

void server_metrics__request(struct server_metrics *m, unsigned status, int64_t dur_ns,
			     bool is_query)
{
	(void)status;
	ADD(&m->requests, 1);
	if (!is_query)
		return;
	for (int i = 0; i < SERVER_LAT_BUCKETS; i++)
		if ((double)dur_ns / 1e9 <= lat_bounds[i]) {
			ADD(&m->lat_buckets[i], 1);
			break;
		}
	ADD(&m->lat_count, 1);
	ADD(&m->lat_sum_us, (uint64_t)(dur_ns / 1000));
}

/* *p += v, stuck at UINT64_MAX rather than wrapping: a crafted profile may say
 * INT64_MAX samples, and a counter that wraps looks like a restart. */
static void add_saturating(uint64_t *p, uint64_t v)
{
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED), sum;
	bool done;

	do {
		sum = base_sat_addu(old, v);
		done = __atomic_compare_exchange_n(p, &old, sum, true, __ATOMIC_RELAXED,
						   __ATOMIC_RELAXED);
	} while (!done);
}

void server_metrics__ingest(struct server_metrics *m, uint64_t samples, uint64_t bytes)
{
	ADD(&m->ingested_profiles, 1);
	add_saturating(&m->ingested_samples, samples);
	ADD(&m->ingested_bytes, bytes);
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
		(unsigned long long)v);
}

static void write_histogram(FILE *f, struct server_metrics *m)
{
	uint64_t cum = 0;

	fputs("# HELP hearth_query_duration_seconds Latency of /api queries.\n"
	      "# TYPE hearth_query_duration_seconds histogram\n",
	      f);
	for (int i = 0; i < SERVER_LAT_BUCKETS; i++) {
		cum += GET(&m->lat_buckets[i]);
		fprintf(f, "hearth_query_duration_seconds_bucket{le=\"%g\"} %llu\n", lat_bounds[i],
			(unsigned long long)cum);
	}
	fprintf(f, "hearth_query_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
		(unsigned long long)GET(&m->lat_count));
	fprintf(f, "hearth_query_duration_seconds_sum %.6f\n", (double)GET(&m->lat_sum_us) / 1e6);
	fprintf(f, "hearth_query_duration_seconds_count %llu\n",
		(unsigned long long)GET(&m->lat_count));
}

static void write_store(FILE *f, struct store *st)
{
	struct store_stats ss;

	if (!st)
		return;
	/* before the figures, which a store that cannot serve does not give */
	fprintf(f,
		"# HELP hearth_store_up Whether the store can serve (the database answers;"
		" ClickHouse is reachable).\n# TYPE hearth_store_up gauge\n"
		"hearth_store_up{backend=\"%s\"} %d\n",
		store__name(st), store__health(st, NULL, 0) == 0);
	if (store__stats(st, &ss))
		return;
	fprintf(
	    f,
	    "# HELP hearth_store_series Series in the store.\n# TYPE hearth_store_series gauge\n"
	    "hearth_store_series %llu\n",
	    (unsigned long long)ss.series);
	fprintf(f,
		"# HELP hearth_store_bytes Bytes on disk (database and WAL).\n"
		"# TYPE hearth_store_bytes gauge\nhearth_store_bytes %llu\n",
		(unsigned long long)ss.bytes_on_disk);
	fprintf(f,
		"# HELP hearth_store_profiles Profiles stored.\n"
		"# TYPE hearth_store_profiles gauge\nhearth_store_profiles %llu\n",
		(unsigned long long)ss.profiles);
	fprintf(f,
		"# HELP hearth_store_corrupt_chunks_total Chunks quarantined because they did"
		" not decode.\n# TYPE hearth_store_corrupt_chunks_total counter\n"
		"hearth_store_corrupt_chunks_total %llu\n",
		(unsigned long long)ss.corrupt_chunks);
	fprintf(f,
		"# HELP hearth_store_corrupt_series_keys Series whose stored key does not"
		" decode, left out of every query (counted at open).\n"
		"# TYPE hearth_store_corrupt_series_keys gauge\n"
		"hearth_store_corrupt_series_keys %llu\n",
		(unsigned long long)ss.corrupt_series_keys);
	fprintf(f,
		"# HELP hearth_store_gc_freed_total Intern-table entries freed by the store's"
		" garbage collection.\n# TYPE hearth_store_gc_freed_total counter\n"
		"hearth_store_gc_freed_total %llu\n",
		(unsigned long long)ss.gc_freed);
	fprintf(
	    f,
	    "# HELP hearth_store_disk_budget_bytes The store's disk budget, --max-disk (0: none).\n"
	    "# TYPE hearth_store_disk_budget_bytes gauge\nhearth_store_disk_budget_bytes %llu\n",
	    (unsigned long long)ss.disk_budget_bytes);
	fprintf(f,
		"# HELP hearth_store_budget_downsampled_chunks_total Chunks the disk budget deleted"
		" whose data a coarser rollup keeps.\n"
		"# TYPE hearth_store_budget_downsampled_chunks_total counter\n"
		"hearth_store_budget_downsampled_chunks_total %llu\n",
		(unsigned long long)ss.budget_downsampled);
	fprintf(f,
		"# HELP hearth_store_budget_dropped_chunks_total Chunks the disk budget deleted"
		" with their data (the oldest windows).\n"
		"# TYPE hearth_store_budget_dropped_chunks_total counter\n"
		"hearth_store_budget_dropped_chunks_total %llu\n",
		(unsigned long long)ss.budget_dropped);
}

enum MHD_Result server_h_metrics(struct server *s, struct server_req *r)
{
	struct server_metrics *m = &s->metrics;
	struct server_mem mem;

	if (server_mem__open(&mem))
		return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory");
	counter(mem.f, "hearth_http_requests_total", "HTTP requests served.", GET(&m->requests));
	if (s->store) {
		counter(mem.f, "hearth_ingested_profiles_total", "Profiles stored by /ingest.",
			GET(&m->ingested_profiles));
		counter(mem.f, "hearth_ingested_samples_total", "Samples stored by /ingest.",
			GET(&m->ingested_samples));
		counter(mem.f, "hearth_ingested_bytes_total", "Request bytes of stored profiles.",
			GET(&m->ingested_bytes));
	}
	fputs("# HELP hearth_rejected_requests_total Requests answered 4xx/5xx, by reason.\n"
	      "# TYPE hearth_rejected_requests_total counter\n",
	      mem.f);
	for (int i = 0; i < SERVER_REJ_MAX; i++)
		fprintf(mem.f, "hearth_rejected_requests_total{reason=\"%s\"} %llu\n",
			reject_names[i], (unsigned long long)GET(&m->rejected[i]));
	write_histogram(mem.f, m);
	server_pool__metrics(s, mem.f);
	write_store(mem.f, s->store);
	scrape__metrics(s->opts.scrape, mem.f); /* NULL: no scrape config, no lines */
	if (s->opts.metrics)
		s->opts.metrics(s->opts.ctx, mem.f);
	return server_reply_mem(r, 200, "text/plain; version=0.0.4", &mem);
}
