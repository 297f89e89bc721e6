/*
 * Tests of the memory ledger (src/base/membudget.c) and of the agent's spool
 * charging MEM_SPOOL: reclaim by budget and by bytes, evictor order, counters.
 */
#include "unit.h"

#include "agent/agent.h"
#include "agent/agent_impl.h"
#include "base/membudget.h"

#include <stdlib.h>
#include <string.h>

struct fake_cache {
	enum mem_kind kind;
	uint64_t held, asked;
	int order, *clock;
};

static uint64_t fake_evict(void *ctx, uint64_t want)
{
	struct fake_cache *c = ctx;
	uint64_t n = want < c->held ? want : c->held;

	c->asked = want;
	c->order = ++*c->clock;
	c->held -= n;
	mem_budget__charge(c->kind, -(int64_t)n);
	if (n)
		mem_budget__evicted(c->kind, 1, n);
	return n;
}

TEST(reclaim_by_budget_and_bytes)
{
	int clock = 0;
	struct fake_cache names = {MEM_PYTHON, 4000, 0, 0, &clock};
	struct fake_cache syms = {MEM_SYMBOLS, 6000, 0, 0, &clock};

	mem_budget__reset();
	mem_budget__charge(MEM_PYTHON, 4000);
	mem_budget__charge(MEM_SYMBOLS, 6000);
	CHECK(!mem_budget__over()); /* no limit */
	CHECK(mem_budget__reclaim() == 0);
	CHECK(mem_budget__register(MEM_SYMBOLS, 2, fake_evict, &syms) == 0);
	CHECK(mem_budget__register(MEM_PYTHON, 1, fake_evict, &names) == 0);
	mem_budget__set_limit(16000, 50); /* caches: 8000 */
	CHECK(mem_budget__cache_budget() == 8000);
	CHECK(mem_budget__over() && mem_budget__would_pass(0));
	/* excess 2000 + margin 1000: names (priority 1) first, and enough */
	CHECK(mem_budget__reclaim() == 3000);
	CHECK(names.order == 1 && syms.order == 0 && names.held == 1000);
	CHECK(mem_budget__used_total() == 7000 && !mem_budget__over());
	CHECK(mem_budget__evictions(MEM_PYTHON) == 1 &&
	      mem_budget__evicted_bytes(MEM_PYTHON) == 3000);
	CHECK(mem_budget__reclaim() == 0); /* under budget: nothing asked */
	/* by bytes, whatever the budget: names give their last 1000, then symbols */
	CHECK(mem_budget__reclaim_bytes(2500) == 2500);
	CHECK(names.held == 0 && syms.held == 4500 && syms.order == 3);
	CHECK(mem_budget__reclaims() == 2);
	mem_budget__unregister(fake_evict, &names);
	CHECK(mem_budget__reclaim_bytes(100) == 100 && names.order == 2);
cleanup:
	mem_budget__reset();
}

/* A cache whose entries are of two kinds: what the pass MEM_PASS_LIVE may take
 * (a live process's) and what only MEM_PASS_ALL may (an exited one's, not yet
 * built), each evicted only in its pass. */
struct passed_cache {
	uint64_t live, awaiting;
	int passes[MEM_PASS_MAX];
};

static uint64_t passed_evict(void *ctx, uint64_t want)
{
	struct passed_cache *c = ctx;
	enum mem_pass pass = mem_budget__reclaim_pass();
	uint64_t n = 0, *from = pass >= MEM_PASS_ALL && !c->live ? &c->awaiting : &c->live;

	c->passes[pass]++;
	if (pass >= MEM_PASS_LIVE) {
		n = want < *from ? want : *from;
		*from -= n;
		mem_budget__charge(MEM_PROCS, -(int64_t)n);
	}
	return n;
}

/* A reclaim takes what can be had again without loss from every cache (tables
 * too, though they go after names by priority) before a live process's entries,
 * and those before an exited one's that are still to be built. */
TEST(reclaim_passes_spare_names_of_the_exited)
{
	int clock = 0;
	struct fake_cache syms = {MEM_SYMBOLS, 6000, 0, 0, &clock};
	struct passed_cache procs = {1000, 1000, {0}};

	mem_budget__reset();
	CHECK(mem_budget__reclaim_pass() == MEM_PASS_ALL); /* outside a reclaim */
	mem_budget__charge(MEM_SYMBOLS, 6000);
	mem_budget__charge(MEM_PROCS, 2000);
	CHECK(mem_budget__register(MEM_SYMBOLS, 2, fake_evict, &syms) == 0);
	CHECK(mem_budget__register_by_pass(MEM_PROCS, 1, passed_evict, &procs) == 0);
	/* 5000 from symbols alone: the process entries are asked, give nothing */
	CHECK(mem_budget__reclaim_bytes(5000) == 5000);
	CHECK(syms.held == 1000 && procs.live == 1000 && procs.awaiting == 1000);
	CHECK(procs.passes[MEM_PASS_SPARE] == 1 && procs.passes[MEM_PASS_LIVE] == 0);
	/* 1500: symbols' last 1000, then the live entries' 500 */
	CHECK(mem_budget__reclaim_bytes(1500) == 1500);
	CHECK(syms.held == 0 && procs.live == 500 && procs.awaiting == 1000);
	CHECK(procs.passes[MEM_PASS_LIVE] == 1 && procs.passes[MEM_PASS_ALL] == 0);
	CHECK(syms.order == 2); /* asked in the first pass only, once a reclaim */
	/* 1000: the live 500, and only then 500 of the exited one's */
	CHECK(mem_budget__reclaim_bytes(1000) == 1000);
	CHECK(procs.live == 0 && procs.awaiting == 500 && procs.passes[MEM_PASS_ALL] == 1);
	CHECK(syms.order == 3);
	CHECK(mem_budget__reclaim_pass() == MEM_PASS_ALL);
cleanup:
	mem_budget__reset();
}

TEST(spool_charges_and_evicts)
{
	struct agent_spool *sp = NULL;
	struct agent_spool_stats st;
	uint8_t data[1000];
	uint64_t id;
	char *q = NULL;
	uint8_t *d = NULL;
	size_t len;

	memset(data, 7, sizeof(data));
	mem_budget__reset();
	CHECK(agent_spool__new(NULL, 10000, 0, &sp) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(agent_spool__push(sp, "q", data, sizeof(data)) == 0);
	CHECK(mem_budget__used(MEM_SPOOL) == 4000);
	CHECK(agent_spool__peek(sp, &id, &q, &d, &len) == 0);
	CHECK(agent_spool__pop(sp, id, true) == 0);
	CHECK(mem_budget__used(MEM_SPOOL) == 3000);
	/* no disk: the oldest are dropped, and counted */
	CHECK(mem_budget__reclaim_bytes(1500) == 2000);
	CHECK(mem_budget__used(MEM_SPOOL) == 1000);
	agent_spool__stats(sp, &st);
	CHECK(st.dropped == 2 && st.queued == 1);
	CHECK(mem_budget__evictions(MEM_SPOOL) > 0);
	agent_spool__free(sp);
	sp = NULL;
	CHECK(mem_budget__used(MEM_SPOOL) == 0);
cleanup:
	free(q);
	free(d);
	agent_spool__free(sp);
	mem_budget__reset();
}

TEST(sizes_from_the_limit)
{
	CHECK(agent_mem_spool_bytes(0) == AGENT_SPOOL_MEM_BYTES);
	CHECK(agent_mem_spool_bytes(32ull << 20) == (2u << 20));
	CHECK(agent_mem_spool_bytes(1ull << 30) == AGENT_SPOOL_MEM_BYTES);
	CHECK(agent_mem_sym_bytes(0) == 0);
	CHECK(agent_mem_sym_bytes(64ull << 20) == (64ull << 20) / 100 * AGENT_CACHE_PCT);
cleanup:;
}

TEST(caches_share_from_what_is_left)
{
	const uint64_t mib = 1ull << 20;

	CHECK(agent_mem_size_caches(0, 10 * mib) == 0);
	/* at the floor: 42 - 11 - 24 < 8: the minimum */
	CHECK(agent_mem_size_caches(AGENT_MIN_MEMORY_LIMIT, 11 * mib) == AGENT_MIN_CACHE_BYTES);
	CHECK(mem_budget__cache_budget() == AGENT_MIN_CACHE_BYTES);
	/* 64M: 56 - 11 - 24 = 21 MiB */
	CHECK(agent_mem_size_caches(64 * mib, 11 * mib) == 21 * mib);
	/* a big limit: at most AGENT_CACHE_PCT */
	CHECK(agent_mem_size_caches(1024 * mib, 11 * mib) == 1024 * mib / 100 * AGENT_CACHE_PCT);
	/* a fixed part past the limit: the minimum, not an underflow */
	CHECK(agent_mem_size_caches(64 * mib, 100 * mib) == AGENT_MIN_CACHE_BYTES);
cleanup:
	mem_budget__reset();
}
