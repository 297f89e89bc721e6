/*
 * scrape: hearth pulls profiles, as Parca and Prometheus do. A YAML file in
 * their shape (docs/scrape.md) names jobs of targets; every target is fetched
 * over HTTP(S) each scrape_interval on Go's net/http/pprof paths — a CPU profile
 * of the interval (/debug/pprof/profile?seconds=N), memory, goroutines, mutex
 * and block profiles — and each profile is stored through ingest__store, one
 * series per sample type, with labels job, instance, service_name,
 * __profile_type__ and the config's own.
 *
 * One thread per target, asleep between scrapes (a condition variable: no
 * polling); a target's health, last scrape and last error are kept for
 * GET /api/targets, and failures are counted by reason for /metrics.
 *
 * Return contract: 0 on success, -errno on failure with one sentence in err.
 * Config errors are -EINVAL and name the file and line.
 */
#ifndef HEARTH_SCRAPE_H
#define HEARTH_SCRAPE_H

#include "ingest/ingest.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Defaults, as Parca's: scrape every 10 s, each request given at most 10 s
 * (never more than the interval). */
#define SCRAPE_DEFAULT_INTERVAL_NS (10ll * 1000000000)
#define SCRAPE_DEFAULT_TIMEOUT_NS  (10ll * 1000000000)
/* Bounds of a config: intervals from 1 s to 1 h; jobs, targets per job and
 * labels per target; a larger body is a failed scrape (reason "too_large"). */
#define SCRAPE_MIN_INTERVAL_NS (1ll * 1000000000)
#define SCRAPE_MAX_INTERVAL_NS (3600ll * 1000000000)
#define SCRAPE_MAX_JOBS	       256
#define SCRAPE_MAX_TARGETS     1024
#define SCRAPE_MAX_LABELS      16
#define SCRAPE_MAX_BODY	       (64u << 20)
#define SCRAPE_MAX_CONFIG      (1u << 20)
/* Sample types stored of one fetched profile: the first ones, in the profile's
 * order (Go's memory profile has 4, the most of any Go profile). Each is a series and
 * a decode of the whole body, so a target sending 3,000 would make 3,000 series
 * per scrape; the rest are counted (hearth_scrape_dropped_sample_types_total) and
 * logged once per target and profile. */
#define SCRAPE_MAX_SAMPLE_TYPES 16
/* A decode of a fetched body may use SCRAPE_MEM_BASE + SCRAPE_MEM_PER_BODY_BYTE
 * bytes per body byte, at most SCRAPE_MEM_MAX: /ingest's budget (SERVER_MEM_*),
 * through the same pprof_decode_flat_value budget. At most SCRAPE_MAX_DECODES
 * decodes run at once in the process, whatever the number of targets (each has
 * its own thread). */
#define SCRAPE_MEM_BASE		 (64u << 20)
#define SCRAPE_MEM_PER_BODY_BYTE 128u
#define SCRAPE_MEM_MAX		 (1024u << 20)
#define SCRAPE_MAX_DECODES	 2
/* Deepest nesting of lists and maps a config may have (a real one has 7: libyaml's
 * time grows with the square of the depth, scrape_config.c's check_depth). */
#define SCRAPE_MAX_DEPTH 32

/* The profiles of a target (pprof_config's keys, Parca's names). */
enum scrape_kind {
	SCRAPE_CPU,	  /* process_cpu: /debug/pprof/profile?seconds=N */
	SCRAPE_MEMORY,	  /* memory: /debug/pprof/allocs (inuse and alloc, 4 types) */
	SCRAPE_GOROUTINE, /* goroutine */
	SCRAPE_MUTEX,	  /* mutex */
	SCRAPE_BLOCK,	  /* block */
	SCRAPE_N_KINDS,
};
/* The config key and profile-type NAME of a kind ("process_cpu", "memory"...). */
const char *scrape_kind_name(enum scrape_kind k);

struct scrape_label {
	char *name, *value; /* owned */
};

struct scrape_profile_cfg {
	bool enabled;
	char *path; /* owned, starts with '/' */
};

struct scrape_target_cfg {
	char *address; /* owned, "host:port" (the instance label) */
	size_t n_labels;
	struct scrape_label labels[SCRAPE_MAX_LABELS]; /* the static_config's labels */
};

struct scrape_job_cfg {
	char *name;   /* owned: job_name */
	char *scheme; /* owned: "http" or "https" */
	int64_t interval_ns, timeout_ns;
	struct scrape_profile_cfg prof[SCRAPE_N_KINDS];
	size_t n_targets;
	struct scrape_target_cfg *targets; /* owned */
	int line;			   /* of the job in the file */
};

struct scrape_config {
	size_t n_jobs;
	struct scrape_job_cfg *jobs; /* owned */
};

/*
 * Parses a config (YAML, docs/scrape.md) from buf; `name` (the file's path)
 * starts every error: "NAME:LINE: what is wrong". 0, -EINVAL, -E2BIG (over a
 * limit above), -ENOMEM. *out is freed with scrape_config__free.
 */
int scrape_config__parse(const char *name, const char *buf, size_t len, struct scrape_config **out,
			 char *err, size_t errlen);
/* Reads and parses the file at path (at most SCRAPE_MAX_CONFIG bytes). */
int scrape_config__load(const char *path, struct scrape_config **out, char *err, size_t errlen);
/* NULL is a no-op. */
void scrape_config__free(struct scrape_config *c);
/* Total targets over all jobs. */
size_t scrape_config__n_targets(const struct scrape_config *c);

struct scrape;

/*
 * A scraper of cfg (taken: freed with the scraper) storing into st (borrowed,
 * must outlive the scraper). No thread runs until scrape__start. 0, -ENOMEM.
 */
int scrape__new(struct scrape_config *cfg, struct store *st, struct scrape **out, char *err,
		size_t errlen);
/* Starts one thread per target; each scrapes at once, then every interval.
 * 0 or -errno (err says why; threads started so far are stopped by __free). */
int scrape__start(struct scrape *s, char *err, size_t errlen);
/* Targets scraped. */
size_t scrape__n_targets(const struct scrape *s);
/* Stops the threads (a scrape in flight is aborted within ~1 s) and frees. NULL: no-op. */
void scrape__free(struct scrape *s);

/*
 * GET /api/targets: {"activeTargets":[{"job","instance","scrapeUrl","labels":{},
 * "health":"up"|"down"|"unknown","lastScrape":RFC3339|null,"lastScrapeDurationMs",
 * "lastError","scrapes","failures"}]} in config order (docs/api.md).
 */
void scrape__targets_json(struct scrape *s, FILE *out);
/* Prometheus text for /metrics: hearth_scrapes_total{job,instance} and
 * hearth_scrape_failures_total{job,instance,reason}. */
void scrape__metrics(struct scrape *s, FILE *out);

#endif /* HEARTH_SCRAPE_H */
