/*
 * server internals shared by the files of src/server/ (not a public header).
 */
#ifndef HEARTH_SERVER_IMPL_H
#define HEARTH_SERVER_IMPL_H

#include <microhttpd.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "server.h"

/* Why a request was rejected: one /metrics counter each. */
enum server_reject {
	SERVER_REJ_TOO_LARGE,
	SERVER_REJ_UNAUTHORIZED,
	SERVER_REJ_NOT_FOUND,
	SERVER_REJ_METHOD,
	SERVER_REJ_BAD_PROFILE,
	SERVER_REJ_BOMB,
	SERVER_REJ_BAD_FORMAT,
	SERVER_REJ_BAD_LABELS,
	SERVER_REJ_BAD_TIME,
	SERVER_REJ_BAD_QUERY,
	SERVER_REJ_TOO_MANY_SERIES,
	SERVER_REJ_BAD_PARAM,
	SERVER_REJ_INTERNAL,
	SERVER_REJ_BUSY,
	SERVER_REJ_DISK_FULL,
	SERVER_REJ_MAX,
};

#define SERVER_LAT_BUCKETS 11

struct server_metrics {
	uint64_t requests;
	uint64_t ingested_profiles;
	uint64_t ingested_samples;
	uint64_t ingested_bytes;
	uint64_t rejected[SERVER_REJ_MAX];
	uint64_t lat_buckets[SERVER_LAT_BUCKETS]; /* query latency, cumulative at export */
	uint64_t lat_count;
	uint64_t lat_sum_us;
};

struct server {
	struct server_opts opts;
	struct MHD_Daemon *d;
	struct store *store; /* borrowed, may be NULL */
	const char *token;   /* borrowed */
	size_t max_body;
	FILE *log;
	int port;
	pthread_mutex_t live_lock; /* one live profile at a time */
	int profiles_in_flight;	   /* /debug/pprof/profile requests running (atomic) */
	sem_t decodes;		   /* SERVER_MAX_DECODES slots */
	bool stopping;		   /* set by server__stop: long waits end (atomic) */
	char *web_root;		   /* realpath of opts.web_dir, or NULL */
	struct server_metrics metrics;
	struct symbolizer *otlp_sym; /* owned, made on first use (server_otlp.c) */
};

/* One request; body accumulated before dispatch. */
struct server_req {
	struct server *srv;
	struct MHD_Connection *conn;
	const char *url, *method; /* borrowed from MHD */
	uint8_t *body;		  /* owned */
	size_t len, cap;
	bool too_large;
	bool is_query; /* counted in the query latency histogram */
	unsigned status;
	size_t bytes_out;
	int64_t t0;
	char error[256];
};

/* A growing memory buffer behind a FILE* (open_memstream). */
struct server_mem {
	FILE *f;
	char *buf;
	size_t len;
};
int server_mem__open(struct server_mem *m);
void server_mem__discard(struct server_mem *m);

int64_t server_now_ns(void);
void server_log(struct server *s, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *server_arg(struct server_req *r, const char *name);
/* Waits `seconds` unless the server stops or the client hangs up first: 0, -ECANCELED
 * (stopping) or -EPIPE (client gone). */
int server_wait(struct server_req *r, double seconds);

/* Replies; buf is malloc'd and taken over. */
enum MHD_Result server_reply(struct server_req *r, unsigned status, const char *ctype, char *buf,
			     size_t len);
/* Closes m and replies with its contents. */
enum MHD_Result server_reply_mem(struct server_req *r, unsigned status, const char *ctype,
				 struct server_mem *m);
/* {"error": "..."} with status, counted under why. */
enum MHD_Result server_error(struct server_req *r, unsigned status, enum server_reject why,
			     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Routes a fully read request (server_routes.c). */
enum MHD_Result server_route(struct server *s, struct server_req *r);

/* Handlers. */
enum MHD_Result server_h_ingest(struct server *s, struct server_req *r);
enum MHD_Result server_h_api(struct server *s, struct server_req *r);
enum MHD_Result server_h_pprof(struct server *s, struct server_req *r);
enum MHD_Result server_h_metrics(struct server *s, struct server_req *r);
/* GET /api/targets: the scrape targets' state (server_targets.c). */
enum MHD_Result server_h_targets(struct server *s, struct server_req *r);
/* Static files of the web UI: embedded, or from opts.web_dir (server_web.c). */
enum MHD_Result server_h_web(struct server *s, struct server_req *r);

/* POST /v1development/profiles (server_otlp.c), and what it frees at stop. */
enum MHD_Result server_h_otlp(struct server *s, struct server_req *r);
void server_otlp__stop(struct server *s);
/* Waits up to SERVER_DECODE_WAIT_S for one of the SERVER_MAX_DECODES slots (sem_post
 * s->decodes after). 0 or -EBUSY. */
int server_decode_slot(struct server *s);
/* Maps an ingest__store error to a reply. */
enum MHD_Result server_store_failed(struct server_req *r, int ret, const char *err);

/* Metrics (server_metrics.c). */
void server_metrics__init(struct server_metrics *m);
void server_metrics__reject(struct server_metrics *m, enum server_reject why);
void server_metrics__request(struct server_metrics *m, unsigned status, int64_t dur_ns,
			     bool is_query);
void server_metrics__ingest(struct server_metrics *m, uint64_t samples, uint64_t bytes);

#endif
