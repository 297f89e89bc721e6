/*
 * The process-wide memory ledger (membudget.h): atomic counters per kind and a
 * short list of evictors, asked in priority order when the caches pass their
 * share of the limit.
 */
#include "base/membudget.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define MAX_EVICTORS 32

struct evictor {
	enum mem_kind kind;
	int priority;
	mem_evict_fn fn;
	void *ctx;
	bool by_pass; /* asked in every pass (mem_budget__register_by_pass) */
};

static _Atomic uint64_t limit_bytes, cache_budget;
static _Atomic int64_t used[MEM_KIND_MAX];
static _Atomic uint64_t evictions[MEM_KIND_MAX], evicted_bytes[MEM_KIND_MAX];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Held while evictors run: one reclaim at a time, never nested. */
static pthread_mutex_t reclaim_lock = PTHREAD_MUTEX_INITIALIZER;
static struct evictor evictors[MAX_EVICTORS];
static size_t n_evictors;

static const char *const kind_names[MEM_KIND_MAX] = {
	[MEM_SYMBOLS] = "symbols", [MEM_DWARF] = "dwarf",   [MEM_ADDRS] = "addresses",
	[MEM_PROCS] = "processes", [MEM_UNWIND] = "unwind", [MEM_PYTHON] = "python",
	[MEM_JAVA] = "java",	   [MEM_NODE] = "node",	    [MEM_RUBY] = "ruby",
	[MEM_SPOOL] = "spool",	   [MEM_OFFCPU] = "offcpu", [MEM_OTHER] = "other",
};

const char *mem_kind_name(enum mem_kind k)
{
	return (unsigned)k < MEM_KIND_MAX ? kind_names[k] : "other";
}

void mem_budget__set_limit(uint64_t limit, unsigned cache_pct)
{
	if (cache_pct > 100)
		cache_pct = 100;
	atomic_store(&limit_bytes, limit);
	atomic_store(&cache_budget, limit / 100 * cache_pct);
}

void mem_budget__set_cache_budget(uint64_t bytes)
{
	atomic_store(&cache_budget, bytes);
}

uint64_t mem_budget__limit(void)
{
	return atomic_load(&limit_bytes);
}

uint64_t mem_budget__cache_budget(void)
{
	return atomic_load(&cache_budget);
}

void mem_budget__charge(enum mem_kind k, int64_t delta)
{
	if ((unsigned)k >= MEM_KIND_MAX)
		k = MEM_OTHER;
	atomic_fetch_add(&used[k], delta);
}

uint64_t mem_budget__used(enum mem_kind k)
{
	int64_t v = (unsigned)k < MEM_KIND_MAX ? atomic_load(&used[k]) : 0;

	return v > 0 ? (uint64_t)v : 0;
}

uint64_t mem_budget__used_total(void)
{
	uint64_t t = 0;

	for (int k = 0; k < MEM_KIND_MAX; k++)
		t += mem_budget__used(k);
	return t;
}

bool mem_budget__over(void)
{
	uint64_t b = mem_budget__cache_budget();

	return b && mem_budget__used_total() > b;
}

bool mem_budget__would_pass(uint64_t bytes)
{
	uint64_t b = mem_budget__cache_budget();

	return b && mem_budget__used_total() + bytes > b;
}

void mem_budget__evicted(enum mem_kind k, uint64_t n, uint64_t bytes)
{
	if ((unsigned)k >= MEM_KIND_MAX)
		k = MEM_OTHER;
	atomic_fetch_add(&evictions[k], n);
	atomic_fetch_add(&evicted_bytes[k], bytes);
}

uint64_t mem_budget__evictions(enum mem_kind k)
{
	return (unsigned)k < MEM_KIND_MAX ? atomic_load(&evictions[k]) : 0;
}

uint64_t mem_budget__evicted_bytes(enum mem_kind k)
{
	return (unsigned)k < MEM_KIND_MAX ? atomic_load(&evicted_bytes[k]) : 0;
}

static int add_evictor(enum mem_kind k, int priority, mem_evict_fn fn, void *ctx, bool by_pass)
{
	size_t i;

	pthread_mutex_lock(&lock);
	if (n_evictors == MAX_EVICTORS) {
		pthread_mutex_unlock(&lock);
		return -ENOMEM;
	}
	/* Kept sorted by priority (stable: registration order within one). */
	for (i = n_evictors; i > 0 && evictors[i - 1].priority > priority; i--)
		evictors[i] = evictors[i - 1];
	evictors[i] = (struct evictor){
		.kind = k, .priority = priority, .fn = fn, .ctx = ctx, .by_pass = by_pass};
	n_evictors++;
	pthread_mutex_unlock(&lock);
	return 0;
}

int mem_budget__register(enum mem_kind k, int priority, mem_evict_fn fn, void *ctx)
{
	return add_evictor(k, priority, fn, ctx, false);
}

int mem_budget__register_by_pass(enum mem_kind k, int priority, mem_evict_fn fn, void *ctx)
{
	return add_evictor(k, priority, fn, ctx, true);
}

void mem_budget__unregister(mem_evict_fn fn, void *ctx)
{
	/* Not while a reclaim may be calling it. */
	pthread_mutex_lock(&reclaim_lock);
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_evictors; i++) {
		if (evictors[i].fn == fn && evictors[i].ctx == ctx) {
			memmove(&evictors[i], &evictors[i + 1],
				(n_evictors - i - 1) * sizeof(evictors[0]));
			n_evictors--;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	pthread_mutex_unlock(&reclaim_lock);
}

static _Atomic uint64_t n_reclaims;
static _Thread_local enum mem_pass cur_pass = MEM_PASS_ALL;

enum mem_pass mem_budget__reclaim_pass(void)
{
	return cur_pass;
}

/* Asks the evictors, pass by pass and in priority order within one, for
 * want_arg bytes, or (by_budget) for the excess over the budget plus a margin,
 * measured under the reclaim lock. */
static uint64_t reclaim_locked(uint64_t want_arg, bool by_budget)
{
	uint64_t budget = mem_budget__cache_budget(), total, want, freed = 0;
	struct evictor list[MAX_EVICTORS];
	size_t n;

	if (pthread_mutex_trylock(&reclaim_lock))
		return 0; /* another thread is reclaiming */
	pthread_mutex_lock(&lock);
	n = n_evictors;
	memcpy(list, evictors, n * sizeof(list[0]));
	pthread_mutex_unlock(&lock);
	if (by_budget) {
		total = mem_budget__used_total();
		want = total > budget ? total - budget + budget / 8 : 0;
	} else {
		want = want_arg;
	}
	if (want)
		atomic_fetch_add(&n_reclaims, 1);
	for (int pass = 0; pass < MEM_PASS_MAX && freed < want; pass++) {
		cur_pass = (enum mem_pass)pass;
		for (size_t i = 0; i < n && freed < want; i++)
			if (pass == MEM_PASS_SPARE || list[i].by_pass)
				freed += list[i].fn(list[i].ctx, want - freed);
	}
	cur_pass = MEM_PASS_ALL;
	pthread_mutex_unlock(&reclaim_lock);
	return freed;
}

uint64_t mem_budget__reclaim(void)
{
	uint64_t budget = mem_budget__cache_budget();

	if (!budget || mem_budget__used_total() <= budget)
		return 0;
	return reclaim_locked(0, true);
}

uint64_t mem_budget__reclaim_bytes(uint64_t want)
{
	return want ? reclaim_locked(want, false) : 0;
}

uint64_t mem_budget__reclaims(void)
{
	return atomic_load(&n_reclaims);
}

static uint64_t status_kb(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	uint64_t kb = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			if (sscanf(line + klen + 1, "%" SCNu64, &kb) != 1)
				kb = 0;
			break;
		}
	}
	fclose(f);
	return kb * 1024;
}

uint64_t mem_budget__rss(void)
{
	return status_kb("VmRSS");
}

uint64_t mem_budget__peak_rss(void)
{
	return status_kb("VmHWM");
}

void mem_budget__reset(void)
{
	pthread_mutex_lock(&reclaim_lock);
	pthread_mutex_lock(&lock);
	n_evictors = 0;
	pthread_mutex_unlock(&lock);
	pthread_mutex_unlock(&reclaim_lock);
	atomic_store(&limit_bytes, 0);
	atomic_store(&cache_budget, 0);
	atomic_store(&n_reclaims, 0);
	for (int k = 0; k < MEM_KIND_MAX; k++) {
		atomic_store(&used[k], 0);
		atomic_store(&evictions[k], 0);
		atomic_store(&evicted_bytes[k], 0);
	}
}
