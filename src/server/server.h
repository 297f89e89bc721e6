/*
 * server: hearth's HTTP front end (libmicrohttpd). Pyroscope-compatible ingest
 * (POST /ingest), the query API (/api/...), pprof's /debug/pprof/profile, /metrics
 * (Prometheus text) and /healthz, over an embedded store.
 *
 * The same listener serves the agent's own endpoints (/metrics, /debug/pprof)
 * when it is opened without a store.
 *
 * With a store it also serves the web UI at / (embedded at build time from web/).
 *
 * Every error is a 4xx/5xx with a JSON body {"error": "..."} naming the problem;
 * a rejected request stores nothing. Listens on 127.0.0.1 unless told otherwise.
 */
#ifndef HEARTH_SERVER_H
#define HEARTH_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ingest/ingest.h"
#include "profile/profile.h"
#include "scrape/scrape.h"

/* Largest request body /ingest accepts (a gzipped pprof of a busy host is ~1 MiB). */
#define SERVER_DEFAULT_MAX_BODY (64u << 20)
/* Most labels a pushed series may carry (name=APP{...}): ingest's limit. */
#define SERVER_MAX_LABELS      INGEST_MAX_LABELS
#define SERVER_MAX_LABEL_NAME  128
#define SERVER_MAX_LABEL_VALUE 1024

/* Longest /debug/pprof/profile?seconds= */
#define SERVER_MAX_PROFILE_SECONDS 600

/*
 * Limits against clients that would crash, stall or fill the server (docs/api.md,
 * "Limits"; every route's own limits are declared in server_routes.c).
 *
 * Connections cost no thread: one event thread (epoll) moves bytes and answers what
 * cannot block; handlers run on the workers of their class with the connection
 * suspended. At most SERVER_MAX_CONNECTIONS are open; past SERVER_MAX_CONNECTIONS -
 * SERVER_CONN_SPARE, each new one closes the oldest connection that is idle or still
 * sending its headers, so a new client (from any address, the attacker's too, or a
 * load balancer's) always gets in. Headers must be complete within
 * SERVER_HEADER_DEADLINE_S of the connection's start (or of the end of its previous
 * request), a body within SERVER_BODY_DEADLINE_S of its headers; a connection silent
 * for SERVER_IDLE_TIMEOUT_S is closed. Headers take at most SERVER_CONN_MEMORY.
 */
#define SERVER_MAX_CONNECTIONS	 1024
#define SERVER_CONN_SPARE	 64
#define SERVER_IDLE_TIMEOUT_S	 10
#define SERVER_HEADER_DEADLINE_S 10
#define SERVER_BODY_DEADLINE_S	 120
#define SERVER_CONN_MEMORY	 (32u << 10)
/* /debug/pprof/profile waits `seconds` with its connection suspended (no thread); at
 * most this many at once (429 beyond). */
#define SERVER_MAX_PROFILES_IN_FLIGHT 4
/* Decoding a request body (/ingest, OTLP): SERVER_MAX_DECODES workers; a request
 * waits up to SERVER_DECODE_WAIT_S for one (503 after). */
#define SERVER_MAX_DECODES   2
#define SERVER_DECODE_WAIT_S 10
/* Store queries (/api, Connect, /pyroscope): SERVER_MAX_QUERIES workers, the same
 * wait. Small work (/metrics, web files): SERVER_LIGHT_WORKERS. */
#define SERVER_MAX_QUERIES   2
#define SERVER_QUERY_WAIT_S  10
#define SERVER_LIGHT_WORKERS 1
/* Body cap of the query routes that take a body (Connect): their messages are a
 * few matchers and a time range. */
#define SERVER_QUERY_MAX_BODY (1u << 20)
/* Memory one decode may use: SERVER_MEM_BASE + SERVER_MEM_PER_BODY_BYTE bytes per body
 * byte, at most SERVER_MEM_MAX (server_memory_budget). */
#define SERVER_MEM_BASE		 (64u << 20)
#define SERVER_MEM_PER_BODY_BYTE 128u
#define SERVER_MEM_MAX		 (1024u << 20)
/* Largest --tls-cert / --tls-key file (a certificate chain is a few KiB). */
#define SERVER_TLS_MAX_FILE (1u << 20)
/* Longest bearer token (cli_read_token's buffer); compared in constant time. */
#define SERVER_MAX_TOKEN 1024

struct store;

/*
 * Profile of the next `seconds` of the machine, for /debug/pprof/profile when the
 * process samples itself (agent, run). Blocks for that long. 0 or -errno; *out owned
 * by the caller.
 */
typedef int (*server_live_fn)(void *ctx, double seconds, struct profile **out);
/* Extra Prometheus text appended to /metrics (the agent's own counters). */
typedef void (*server_metrics_fn)(void *ctx, FILE *f);

struct server_opts {
	const char *listen;	/* "HOST:PORT" (port 0 picks a free one); NULL = 127.0.0.1:4100 */
	const char *auth_token; /* bearer token required on everything but /healthz; NULL = none */
	size_t max_body;	/* 0 = SERVER_DEFAULT_MAX_BODY */
	struct store *store;	/* borrowed; NULL: no /ingest and /api (agent listener) */
	server_live_fn live;	/* optional */
	server_metrics_fn metrics; /* optional */
	void *ctx;		   /* for live and metrics */
	FILE *log;		   /* structured log lines (NULL = stderr) */
	const char *web_dir;	   /* serve the web UI from here, not the embedded copy; NULL */
	struct scrape *scrape;	   /* borrowed; NULL: no scrape config (/api/targets empty) */
	/* HTTPS (libmicrohttpd with GnuTLS): a PEM certificate (chain) and its private key
	 * (unencrypted), both or neither; each file at most SERVER_TLS_MAX_FILE bytes */
	const char *tls_cert_file;
	const char *tls_key_file;
};

struct server;

/*
 * Process policy for a process that answers queries again and again (the server,
 * bench/store): keeps the memory a merge frees for the next one, instead of
 * glibc's default of giving it back to the kernel after each query and faulting
 * every page in again on the next (a 1 h merge with sample labels of the
 * benchmark's day allocates ~30 MB: ~8,000 page faults, a quarter of its time).
 * Fixed malloc thresholds: blocks under 32 MiB come from the heap, and up to
 * 64 MiB of freed heap per malloc arena is kept. Process-wide, so the server's
 * owner calls it once, before serving (src/query never sets it).
 */
void server_keep_freed_memory(void);

/* Binds and starts serving on background threads. On failure -errno and err says why. */
int server__start(const struct server_opts *opts, struct server **out, char *err, size_t errlen);
/* The port actually bound (useful with port 0). */
int server__port(const struct server *s);
/* Stops serving (waits for running requests) and frees. NULL is a no-op. */
void server__stop(struct server *s);

/*
 * Counts a profile stored by a producer in this process (hearth run's agent,
 * through ingest__store) in the ingest counters of /metrics, as /ingest counts
 * its own. samples: store_append_result.samples.
 */
void server__count_ingest(struct server *s, int64_t samples);

/* The memory budget of decoding a body of body_len bytes (see SERVER_MEM_BASE). */
size_t server_memory_budget(size_t body_len);
/* Whether a --listen address ("HOST:PORT") is loopback only (127.0.0.0/8, ::1,
 * localhost); false for every-address binds (":4100", "0.0.0.0:…", "[::]:…") and
 * for anything unparsable. */
bool server_listen_is_loopback(const char *listen);
/* Whether the bearer token in an Authorization header value matches token, in time
 * that depends on neither (both are compared over SERVER_MAX_TOKEN bytes). */
bool server_token_ok(const char *header, const char *token);

/* ---- pieces of request parsing, exposed for unit tests and fuzzing ---- */

struct server_labels {
	size_t n;
	char *keys[SERVER_MAX_LABELS]; /* owned */
	char *vals[SERVER_MAX_LABELS]; /* owned */
};
/* Parses Pyroscope's name "APP{k=v,k2=v2}" (label __name__=APP). 0 or -EINVAL/-E2BIG/-ENOMEM. */
int server_parse_name(const char *name, struct server_labels *out, char *err, size_t errlen);
/* Adds one validated label (replacing a previous value of the key). 0 or -EINVAL/-E2BIG/-ENOMEM. */
int server_labels__add(struct server_labels *l, const char *k, const char *v, char *err,
		       size_t errlen);
void server_labels__fini(struct server_labels *l);
/*
 * Whether a URL path (already %-decoded) may name a web UI file: it starts with
 * '/' and has no empty segment and none starting with '.' (so it cannot leave the
 * UI's directory, nor name a dotfile such as .git/ or .env). "/" itself is fine
 * (it means index.html).
 */
bool server_web_path_ok(const char *path);
/*
 * The part named `field` of a multipart/form-data body (content_type holds the
 * boundary). *part points into body. 0, -ENOENT when absent, -EINVAL if malformed.
 */
int server_multipart_field(const char *content_type, const uint8_t *body, size_t len,
			   const char *field, const uint8_t **part, size_t *part_len);

#endif /* HEARTH_SERVER_H */
