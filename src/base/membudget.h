/*
 * membudget: one process-wide ledger of what hearth's caches hold, against the
 * agent's memory limit (--memory-limit, docs/memory.md).
 *
 * Every cache that grows with what runs on the host (symbol tables, DWARF,
 * address caches, the process table, unwind tables built in user space, the
 * runtimes' name caches, the spool) charges what it holds to its kind and
 * registers an evictor. When the charged total passes the caches' share of the
 * limit, mem_budget__reclaim asks the evictors for bytes back, the kinds least
 * useful per byte first; each cache drops its least recently used entries and
 * counts them (mem_budget__evicted). The counters are exported in /metrics.
 *
 * Thread-safe: counters are atomic; the evictor list is guarded by a mutex and
 * evictors run one at a time, outside any cache's own lock held by the caller
 * (a cache must not call reclaim while holding the lock its evictor takes).
 */
#ifndef HEARTH_BASE_MEMBUDGET_H
#define HEARTH_BASE_MEMBUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mem_kind {
	MEM_SYMBOLS = 0, /* ELF symbol tables and their indexes */
	MEM_DWARF,	 /* DWARF line and inline data */
	MEM_ADDRS,	 /* address -> name caches */
	MEM_PROCS,	 /* process table: mappings, views */
	MEM_UNWIND,	 /* unwind tables built in user space */
	MEM_PYTHON,	 /* CPython name cache */
	MEM_JAVA,	 /* HotSpot name cache */
	MEM_NODE,	 /* V8 name cache */
	MEM_RUBY,	 /* CRuby name cache */
	MEM_SPOOL,	 /* agent spool held in memory */
	MEM_OFFCPU,	 /* off-CPU aggregation */
	MEM_OTHER,
	MEM_KIND_MAX,
};

/* The kind's name in /metrics ("symbols", "dwarf", ...). */
const char *mem_kind_name(enum mem_kind k);

/* Sets the limit on resident memory in bytes (0: no limit, the default) and the
 * share of it the caches may hold (the rest is the program, its buffers and the
 * BPF maps mapped into it): the caches' budget is limit * cache_pct / 100. */
void mem_budget__set_limit(uint64_t limit, unsigned cache_pct);
/* Sets the caches' share in bytes (after mem_budget__set_limit: sized from what
 * the process holds once started, agent_mem.c). */
void mem_budget__set_cache_budget(uint64_t bytes);
uint64_t mem_budget__limit(void);
/* Bytes the caches may hold together (0: no limit). */
uint64_t mem_budget__cache_budget(void);

/* A cache of kind k grew (delta > 0) or shrank (delta < 0) by delta bytes. */
void mem_budget__charge(enum mem_kind k, int64_t delta);
uint64_t mem_budget__used(enum mem_kind k);
uint64_t mem_budget__used_total(void);
/* Whether the caches hold more than their budget (always false without limit). */
bool mem_budget__over(void);
/* Whether adding bytes more would pass the budget. */
bool mem_budget__would_pass(uint64_t bytes);

/* n entries of kind k (bytes in all) were evicted to stay under the budget. */
void mem_budget__evicted(enum mem_kind k, uint64_t n, uint64_t bytes);
uint64_t mem_budget__evictions(enum mem_kind k);
uint64_t mem_budget__evicted_bytes(enum mem_kind k);

/* An evictor frees up to `want` bytes of its cache's least recently used entries
 * (calling mem_budget__charge and mem_budget__evicted for what it frees) and
 * returns the bytes freed. It is called from whichever thread reclaims: once a
 * reclaim, or once a pass (mem_budget__reclaim_pass) until enough is freed when
 * registered with mem_budget__register_by_pass. */
typedef uint64_t (*mem_evict_fn)(void *ctx, uint64_t want);
/* A reclaim asks every evictor, in priority order, for what it may give in the
 * first pass; only when that falls short, the evictors registered with
 * mem_budget__register_by_pass again, in the next. Any other evictor's entries
 * are all of the first kind: it is asked in the first pass only. */
enum mem_pass {
	/* what can be had again without loss: tables of files, address caches,
	 * entries of exited processes whose samples are built */
	MEM_PASS_SPARE = 0,
	/* and what a live process can give again (a /proc read, its memory) */
	MEM_PASS_LIVE,
	/* and what an exited process held before its last samples were built:
	 * those samples lose their names */
	MEM_PASS_ALL,
	MEM_PASS_MAX,
};
/* The pass of the reclaim calling the evictor on this thread; MEM_PASS_ALL
 * outside a reclaim (an evictor called directly). */
enum mem_pass mem_budget__reclaim_pass(void);
/* Registers an evictor for kind k; priority: lower goes first (cold caches that
 * are cheap to rebuild: address caches 0, names 1, tables 2). 0 or -ENOMEM. */
int mem_budget__register(enum mem_kind k, int priority, mem_evict_fn fn, void *ctx);
/* The same for an evictor that reads mem_budget__reclaim_pass: it is asked in
 * every pass, for what that pass allows. */
int mem_budget__register_by_pass(enum mem_kind k, int priority, mem_evict_fn fn, void *ctx);
void mem_budget__unregister(mem_evict_fn fn, void *ctx);
/* When over budget, asks the evictors for the excess plus a margin (an eighth of
 * the budget); returns the bytes freed. Cheap when under budget. */
uint64_t mem_budget__reclaim(void);
/* Asks the evictors for want bytes whatever the budget says (the agent's RSS
 * watch: resident memory nears the limit while the caches are under their
 * share). Returns the bytes freed; 0 when another thread is reclaiming. */
uint64_t mem_budget__reclaim_bytes(uint64_t want);
/* Reclaims run and bytes they freed, for /metrics. */
uint64_t mem_budget__reclaims(void);

/* Resident set size and its peak (VmRSS, VmHWM) of this process in bytes, from
 * /proc/self/status; 0 when unreadable. */
uint64_t mem_budget__rss(void);
uint64_t mem_budget__peak_rss(void);

/* For tests: forgets the limit, counters and evictors. */
void mem_budget__reset(void);

#endif /* HEARTH_BASE_MEMBUDGET_H */
