/*
 * agent internals shared by the files of src/agent/ (not a public header).
 */
#ifndef HEARTH_AGENT_IMPL_H
#define HEARTH_AGENT_IMPL_H

#include <pthread.h>

#include "agent.h"
#include "collect/collect.h"
#include "proc/proc.h"

/*
 * How long the agent's symbolizer keeps an object no live process maps (its tables,
 * DWARF and cached addresses, still under the byte budget): the next short process of
 * the same binary (a cron job, a shell's ls) finds libc's DWARF loaded instead of
 * inflating its debug file again.
 */
#define AGENT_SYM_GRACE_NS (600 * 1000000000ULL)

/* A copy of src with tid dropped and exe/container/unit added per sample. NULL on ENOMEM. */
struct profile *agent_relabel(struct proc_table *pt, const struct profile *src);

/* fsync(2) as the spool calls it: a seam for tests, which count or fail the calls. */
extern int (*agent_spool_fsync)(int fd);

/* The sender thread (agent_send.c). labels (borrowed, outliving the sender)
 * are the series labels of every profile handed to a sink. */
struct agent_sender;
int agent_sender__start(const struct agent_opts *opts, struct agent_spool *sp,
			const struct store_label *labels, size_t n_labels,
			struct agent_sender **out);
/* Sink mode: queues flat profile f (taken over) of [from_ns, until_ns) for the
 * sink, dropping the oldest queued one when AGENT_SINK_QUEUE are waiting. type:
 * its profile type, sent as __profile_type__ (NULL: CPU); a string that lives as
 * long as the sender (the off-CPU types are literals). 0. */
int agent_sender__push_flat(struct agent_sender *snd, struct profile_flat *f, const char *type,
			    int64_t from_ns, int64_t until_ns);
/* Sink mode: what the queue did, in the spool's terms (no bytes, no disk). */
void agent_sender__sink_stats(struct agent_sender *snd, struct agent_spool_stats *out);
/* Wakes the sender (something was queued). */
void agent_sender__kick(struct agent_sender *snd);
/* Waits up to flush_s seconds for the spool to empty, then stops the thread (once). */
void agent_sender__stop(struct agent_sender *snd, double flush_s);
/* Stops (without waiting) if still running, and frees. NULL is a no-op. */
void agent_sender__free(struct agent_sender *snd);
/* Why a delivery attempt failed (each is retried with backoff). */
enum agent_send_fail {
	AGENT_FAIL_CONNECT, /* no connection, timeout */
	AGENT_FAIL_AUTH,    /* 401/403: a token the server may fix */
	AGENT_FAIL_SERVER,  /* 5xx, 408, 429 and other statuses */
	AGENT_FAIL_SINK,    /* the local sink said retry */
	AGENT_FAIL_MAX
};
/* The `reason` label value of a failure kind. */
const char *agent_send_fail_name(enum agent_send_fail f);
/* Failed attempts so far, per reason. */
void agent_sender__failures(struct agent_sender *snd, uint64_t out[AGENT_FAIL_MAX]);

/* The spool's MEM_SPOOL evictor (registered by agent_spool__new). */
uint64_t agent_spool_evict(void *ctx, uint64_t want);

/* ---- the memory ceiling (agent_mem.c, docs/memory.md) ---- */
/* Bytes of the spool kept in memory under a limit (the rest waits on disk). */
size_t agent_mem_spool_bytes(uint64_t limit);
/* The bound of first samples' stack copies held under a limit (0: default). */
size_t agent_mem_raw_bytes(uint64_t limit);
/* sampler_opts.ring_bytes_max for a --memory-limit (0: none). */
size_t agent_mem_ring_bytes(uint64_t limit);
/* The symbolizer's own byte budget under a limit (0: its default). */
uint64_t agent_mem_sym_bytes(uint64_t limit);
/* Sets the ledger's limit (mem_budget__set_limit with AGENT_CACHE_PCT) and the
 * RSS that is not the agent's (hearth run's store); with process_policy (the
 * agent's trim_memory), also malloc's thresholds. */
void agent_mem_setup(uint64_t limit, uint64_t other, bool process_policy);
/* Unmaps the resident pages of the process's read-only file mappings that hold
 * no copied page (libraries' code and read-only data: they come back from the
 * page cache when used again); returns the bytes dropped. */
uint64_t agent_mem_drop_file_pages(void);
/* Sizes the caches' share from what is left of 7/8 of limit once the process
 * holds `fixed` bytes (its RSS once started: program, libraries, BPF maps) and
 * AGENT_TRANSIENT_BYTES are kept for transients: at most AGENT_CACHE_PCT of the
 * limit, at least AGENT_MIN_CACHE_BYTES. Returns it (0 without a limit). */
uint64_t agent_mem_size_caches(uint64_t limit, uint64_t fixed);
/* Once the agent is open (BPF loaded, libraries initialised), under a limit:
 * drops the file pages start-up touched (with process_policy) and sizes the
 * caches' share from the RSS then. */
void agent_mem_started(uint64_t limit, bool process_policy);
/* Once a second and after each profile, on the sampling thread: reclaims when
 * the caches pass their share, and harder when resident memory nears the limit
 * (the RSS watch). */
struct symbolizer;
void agent_mem_tick(struct proc_table *pt, struct symbolizer *sym);
/* After each wake of the sampling thread: a tick when a cache has grown past
 * the caches' budget since (cheap otherwise: the ledger's atomic counters). */
void agent_mem_poll(struct proc_table *pt, struct symbolizer *sym);
/* The memory health lines of /metrics: limit, RSS and its peak, cache bytes and
 * evictions by kind, and the table unwinder's counters. */
void agent_mem_write_metrics(FILE *f, const struct sampler *s);

#endif
