/*
 * agent: continuous whole-machine sampling. Every interval the samples drained
 * from the kernel become one profile of the host, labelled per sample with pid,
 * comm, process, exe, container and unit, and per profile with host and kernel;
 * it is encoded as gzipped pprof and handed to a spool that a sender thread
 * empties by HTTP POST to a server's /ingest — or, with a local sink (hearth
 * run), handed as a flat profile to a queue that the sender thread empties
 * into the sink (ingest__store), never becoming text or pprof.
 *
 * Sampling never waits for the network: the spool is bounded (memory, then disk
 * up to spool_mb), drops the oldest profile when full and counts every drop.
 */
#ifndef HEARTH_AGENT_H
#define HEARTH_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#include "ingest/ingest.h"
#include "profile/profile.h"
#include "sampler/sampler.h"

#define AGENT_DEFAULT_INTERVAL_S 10.0
#define AGENT_DEFAULT_SPOOL_MB	 64
/* Profiles kept in memory before they go to the disk spool. */
#define AGENT_SPOOL_MEM_BYTES (8u << 20)
/* Retry backoff: doubles from the minimum up to the maximum, with jitter. */
#define AGENT_BACKOFF_MIN_MS 250
#define AGENT_BACKOFF_MAX_MS 5000

/* Profiles waiting for a local sink (hearth run): 80 s at the default interval. */
#define AGENT_SINK_QUEUE 8

/*
 * Local delivery instead of HTTP (hearth run): stores one profile, as it is —
 * a flat profile with its series labels (__name__, host, kernel) and time
 * range, no query string and no pprof — typically with ingest__store. Called
 * from the sender thread; req and its profile are borrowed for the call.
 * 0 on success; -EAGAIN and other errors are retried, -EINVAL drops the profile.
 */
typedef int (*agent_sink_fn)(void *ctx, struct ingest_request *req);

struct agent_opts {
	struct sampler_opts so;
	double interval_s;	/* profile length, default AGENT_DEFAULT_INTERVAL_S */
	const char *server_url; /* base URL ("http://host:port"); NULL with a sink */
	const char *auth_token; /* bearer token for the server; NULL = none */
	const char *tls_ca;	/* PEM CA file that an https:// server_url's certificate
				 * must chain to, instead of the system's; NULL = system's */
	agent_sink_fn sink;	/* local delivery (hearth run); NULL = HTTP */
	void *sink_ctx;
	const char *spool_dir; /* disk spool; NULL = memory only */
	size_t spool_mb;       /* disk spool bound; 0 = AGENT_DEFAULT_SPOOL_MB */
	const char *host;      /* `host` label; NULL = gethostname() */
	FILE *log;	       /* log lines; NULL = stderr */
	/* Process policy, the CLI's to choose: malloc_trim(0) after each interval, so
	 * what building, encoding and storing a profile (and, in hearth run, the
	 * queries of the UI, in any arena) freed goes back to the kernel instead of
	 * staying in hearth's RSS until the next peak. */
	bool trim_memory;
	/* --memory-limit: the ceiling on this process's resident memory in bytes
	 * (docs/memory.md); 0 = none. The caches get AGENT_CACHE_PCT of it. */
	uint64_t memory_limit;
	/* Resident memory of the process that is not the agent's (hearth run: its
	 * store and queries, RUN_STORE_MEMORY): the RSS watch allows this much more. */
	uint64_t memory_other;
};

/* Default --memory-limit of agent and run, and the caches' share of it. */
#define AGENT_DEFAULT_MEMORY_LIMIT (64ull << 20)
/* The floor of --memory-limit for agent and run, measured with
 * tests/integration/test_memory_limit.sh (docs/memory.md, "The floor"): ~11 MiB
 * of RSS once started (program and libraries' pages in use, BPF maps), the
 * kernel's symbols (3.8 MB), the smallest caches' share (AGENT_MIN_CACHE_BYTES)
 * and a profile built and symbolized on a busy host (the profile's strings, the
 * DWARF pages read, dropped as libdw reads on: sym_dwarf.c) and an unwind table
 * built: at 40M the agent's whole-life peak was 31-33 MiB on a busy host; at 32M
 * median 30 MiB but over 32 MiB in 2 of 6 runs at the highest load (an unwind
 * table's rows pushed for a big object: docs/memory.md, "What binds at 32M"). */
#define AGENT_MIN_MEMORY_LIMIT	   (40ull << 20)
#define AGENT_CACHE_PCT		   40
/* What the sampling thread may hold for a moment beyond the caches and the
 * program: a profile built and symbolized (the mapped pages of a big object's
 * symbol table, 6 MiB for libpython or node, the profile's strings), an unwind
 * table built for a big object (its rows, at most an eighth over, and a 1 MiB
 * sort scratch), and what the caches do not charge (code pages coming back,
 * malloc's slack): 24 MiB (docs/memory.md). */
#define AGENT_TRANSIENT_BYTES (24ull << 20)
/* The caches' share is never less: the kernel's symbols alone are ~5 MB. */
#define AGENT_MIN_CACHE_BYTES (8ull << 20)

struct agent;

/* Loads BPF and starts the sender thread. -errno and one sentence in err on failure. */
int agent__open(const struct agent_opts *opts, struct agent **out, char *err, size_t errlen);
/* Samples until *stop becomes non-zero (checked at least every second); flushes the last
 * interval into the spool and gives the sender up to flush_s seconds. 0 or -errno. */
int agent__run(struct agent *a, volatile sig_atomic_t *stop, double flush_s);
/* Stops the sender and frees; what is still spooled on disk stays for next time. */
void agent__close(struct agent *a);

/* Profile of the next `seconds` (blocks; called from HTTP threads while agent__run runs). */
int agent__live_profile(void *agent, double seconds, struct profile **out);
/* The agent's counters in Prometheus text (a server_metrics_fn). */
void agent__write_metrics(void *agent, FILE *f);

/* ---- pieces, exposed for unit tests ---- */

/* Container id (docker, containerd, cri-o, podman) in a cgroup path; "" if none. */
void agent_cgroup_container(const char *cgroup, char *out, size_t len);
/* systemd unit (last *.service, else a non-container *.scope) in a cgroup path; "" if none. */
void agent_cgroup_unit(const char *cgroup, char *out, size_t len);

struct agent_spool;
struct agent_spool_stats {
	uint64_t queued, queued_bytes; /* now, memory + disk */
	uint64_t on_disk;	       /* of which on disk */
	uint64_t dropped;	       /* dropped because the spool was full (or its disk failed) */
	uint64_t disk_errors;	       /* spool file writes that failed (entry dropped) */
	uint64_t rejected;	       /* refused by the server as a bad profile, not retried */
	uint64_t sent;
};
/* dir may be NULL (memory only, mem_bytes bound). Reloads files left in dir. */
int agent_spool__new(const char *dir, size_t mem_bytes, size_t disk_bytes,
		     struct agent_spool **out);
void agent_spool__free(struct agent_spool *sp);
/* -EPROTO with err naming the file and its version when dir holds a spool file of
 * another format version than this build writes ("hearth-spool N"): such files are
 * neither sent nor dropped. 0 otherwise (no dir, or files this build reads). */
int agent_spool_check_format(const char *dir, char *err, size_t errlen);
/* Queues a copy; drops the oldest when over the bounds (memory stays within
 * mem_bytes even when disk writes fail). 0 or -ENOMEM. */
int agent_spool__push(struct agent_spool *sp, const char *query, const uint8_t *data, size_t len);
/* The oldest entry (copies, malloc'd) and its id. 0, -ENOENT when empty, -errno. */
int agent_spool__peek(struct agent_spool *sp, uint64_t *id, char **query, uint8_t **data,
		      size_t *len);
/* Removes the entry `id` (from peek) and counts it sent (delivered) or rejected.
 * 0, or -ENOENT when a push dropped it meanwhile (nothing else is removed). */
int agent_spool__pop(struct agent_spool *sp, uint64_t id, bool sent);
void agent_spool__stats(struct agent_spool *sp, struct agent_spool_stats *out);

#endif /* HEARTH_AGENT_H */
