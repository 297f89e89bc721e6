/*
 * server internals shared by the files of src/server/ (not a public header).
 */
#ifndef HEARTH_SERVER_IMPL_H
#define HEARTH_SERVER_IMPL_H

#include <microhttpd.h>
#include <pthread.h>
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

/*
 * Where a route's handler runs (server_pool.c). The event thread only moves bytes
 * and answers what cannot block; everything else is handed to a class's workers
 * with its connection suspended, so an idle or slow socket holds no thread and a
 * long query holds one worker of its class, never the event loop.
 */
enum server_class {
	SERVER_CLASS_INLINE, /* on the event thread: answers that cannot block (/healthz) */
	SERVER_CLASS_LIGHT,  /* small work: /metrics, /api/targets, web UI files */
	SERVER_CLASS_QUERY,  /* store queries: the query slots */
	SERVER_CLASS_DECODE, /* request bodies decoded and stored: the decode slots */
	SERVER_CLASS_MAX,
};

#define SERVER_M_GET  1u
#define SERVER_M_HEAD 2u
#define SERVER_M_POST 4u
/* max_body of a route that takes the server's --max-body (ingest). */
#define SERVER_BODY_OPT SIZE_MAX

struct server;
struct server_req;
typedef enum MHD_Result (*server_handler_fn)(struct server *s, struct server_req *r);

/*
 * One route, declared in server_routes.c: everything the pipeline checks before
 * the handler runs. Auth (unless open) and the method are checked on the headers,
 * before any body byte is read; so is an announced Content-Length over max_body.
 */
struct server_route {
	const char *path; /* exact, or a prefix when it ends in '/' */
	unsigned methods; /* SERVER_M_*; HEAD is answered wherever GET is */
	bool open;	  /* no token needed (/healthz, the web UI's files) */
	bool store;	  /* needs a store: 404 from the headers on a listener without one */
	size_t max_body;  /* bytes; 0: no body at all; SERVER_BODY_OPT: --max-body */
	enum server_class cls;
	/* memory the route's decoder may use for a body of n bytes (r->budget); NULL when
	 * it decodes nothing bigger than its body */
	size_t (*budget)(size_t n);
	const char *limits; /* one line for docs/api.md's "Limits", checked by a test */
	server_handler_fn handler;
	/* the route's own error shape (Connect's); NULL: {"error": "..."} */
	enum MHD_Result (*reject)(struct server_req *r, unsigned status, enum server_reject why,
				  const char *msg);
};

/* The route for a path, or NULL (server_routes.c). */
const struct server_route *server_route_find(const struct server *s, const char *url);
/* Every route (for the tests that attack each one). */
const struct server_route *server_routes(size_t *n);
/* The routes' limits as the Markdown table of docs/api.md's "Limits". */
void server_limits_write(FILE *f);

struct server_pool;

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
	bool stopping;		   /* set by server__stop: long waits end (atomic) */
	char *web_root;		   /* realpath of opts.web_dir, or NULL */
	struct server_metrics metrics;
	struct symbolizer *otlp_sym; /* owned, made on first use (server_otlp.c) */
	struct server_pool *pool;    /* owned: workers, deferred requests, connections */
	/* TLS (opts.tls_cert_file): the PEM texts, owned, kept while the daemon runs */
	char *tls_cert, *tls_key;
	/* libmicrohttpd's own words while MHD_start_daemon runs (a bad certificate),
	 * for the error line; its messages after the start are dropped */
	char start_err[256];
	bool started;
};

/* One request; body accumulated before dispatch. */
struct server_req {
	struct server *srv;
	struct MHD_Connection *conn;
	const char *url, *method;	  /* borrowed from MHD */
	const struct server_route *route; /* NULL: no such route (404 queued) */
	uint8_t *body;			  /* owned */
	size_t len, cap;
	size_t max_body; /* the route's cap */
	size_t budget;	 /* route->budget(len) once the body is read, else 0 */
	bool too_large;
	bool is_query; /* counted in the query latency histogram */
	unsigned status;
	size_t bytes_out;
	int64_t t0;
	char error[256];
	/* The answer, made by server_reply on any thread and queued by the access
	 * handler on the event thread (MHD queues only from there). */
	struct MHD_Response *resp;
	bool close; /* the handler asked to drop the connection (MHD_NO) */
	bool dispatched, deferred;
	bool profile_slot; /* holds one of SERVER_MAX_PROFILES_IN_FLIGHT (released at the end) */
	double seconds;	   /* /debug/pprof/profile's window */
	int64_t from_ns;   /* its start (CLOCK_REALTIME) */
	/* server_pool.c: a deferred request */
	server_handler_fn job;
	enum server_class job_cls;
	int64_t job_due_ns, job_queued_ns; /* CLOCK_MONOTONIC */
	bool job_gone;			   /* the client closed while it waited */
	struct server_req *job_next;
	struct server_conn *sc; /* the connection's entry in the pool's table, or NULL */
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
/* Queues a ready-made response (the reply of server_reply, for handlers that build
 * their own MHD_Response). Takes resp over. */
enum MHD_Result server_queue(struct server_req *r, unsigned status, struct MHD_Response *resp);

/* ---- server_pool.c ---- */
int server_pool__start(struct server *s);
/* Ends every deferred request (503, or dropped when its client left), joins the
 * workers. Before MHD_stop_daemon: a suspended connection left there panics it. */
void server_pool__drain(struct server *s);
void server_pool__free(struct server *s);
/*
 * Hands r to a worker of cls, to run fn not before due_ns (CLOCK_MONOTONIC; 0 = now),
 * with r's connection suspended meanwhile. Called from the access handler only.
 * 0, or -ECANCELED when the server is stopping (nothing was suspended).
 */
int server_defer(struct server_req *r, enum server_class cls, int64_t due_ns, server_handler_fn fn);
/* Runs fn on a thread of its own (a live profile that samples for seconds), with r's
 * connection suspended. 0 or -errno (nothing suspended). */
int server_spawn(struct server_req *r, server_handler_fn fn);
/* MHD_OPTION_NOTIFY_CONNECTION: the table of open connections, header deadlines and
 * eviction of the oldest idle connection when the table is nearly full. */
void server_pool__notify(void *cls, struct MHD_Connection *c, void **socket_context,
			 enum MHD_ConnectionNotificationCode code);
/* r's connection: headers read, body coming (busy); handler running (dispatched);
 * request over, idle until the next one's headers (idle). */
void server_conn__busy(struct server_req *r);
void server_conn__dispatched(struct server_req *r);
void server_conn__idle(struct server_req *r);
/* The connection counters of /metrics. */
void server_pool__metrics(struct server *s, FILE *f);
/* Seconds a deferred request waited for its worker before it gave up with 503. */
int server_class_wait_s(enum server_class cls);

/* Replies; buf is malloc'd and taken over. */
enum MHD_Result server_reply(struct server_req *r, unsigned status, const char *ctype, char *buf,
			     size_t len);
/* Closes m and replies with its contents. */
enum MHD_Result server_reply_mem(struct server_req *r, unsigned status, const char *ctype,
				 struct server_mem *m);
/* {"error": "..."} with status, counted under why. */
enum MHD_Result server_error(struct server_req *r, unsigned status, enum server_reject why,
			     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

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
/* Maps an ingest__store error to a reply. */
enum MHD_Result server_store_failed(struct server_req *r, int ret, const char *err);

/* Metrics (server_metrics.c). */
void server_metrics__init(struct server_metrics *m);
void server_metrics__reject(struct server_metrics *m, enum server_reject why);
void server_metrics__request(struct server_metrics *m, unsigned status, int64_t dur_ns,
			     bool is_query);
void server_metrics__ingest(struct server_metrics *m, uint64_t samples, uint64_t bytes);

/* GET /api/function-series and /metrics/functions (server_fseries.c). */
enum MHD_Result server_h_fseries(struct server *s, struct server_req *r);
enum MHD_Result server_h_metrics_functions(struct server *s, struct server_req *r);

#endif
