/*
 * Tests of the policy of unwind tables on demand (src/unwind/heat.c): heat
 * decay, placement in free chunks, eviction of the coldest tables only when
 * the candidate is clearly hotter (hysteresis) and not of tables loaded moments
 * ago, eviction of no more than the room needs, and a simulation in which two
 * objects of the same heat do not take each other's place while a clearly
 * hotter one does, once. Deterministic: no clock, no BPF. Then the manager
 * over real BPF maps (root): the hot object's table replaces a cold one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/membudget.h"
#include "unit.h"
#include "unwind/unwind.h"

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

TEST(heat_decays_by_half_life)
{
	CHECK(near(unwind_heat_decay(100, 0, 1000, 1000), 50));
	CHECK(near(unwind_heat_decay(100, 7, 2000, 1000), 32));
	CHECK(near(unwind_heat_decay(100, 5, 0, 1000), 105));
	CHECK(near(unwind_heat_decay(100, 5, -3, 1000), 105)); /* a clock step back: no growth */
cleanup:;
}

TEST(heat_hysteresis)
{
	/* 100 * 1.5 + 1 = 151 */
	CHECK(!unwind_heat_may_evict(100, 140));
	CHECK(!unwind_heat_may_evict(100, 151));
	CHECK(unwind_heat_may_evict(100, 152));
	CHECK(!unwind_heat_may_evict(0, 1)); /* the margin: one stray sample evicts nothing */
	CHECK(unwind_heat_may_evict(0, 2));
cleanup:;
}

TEST(heat_place_free_room_first)
{
	uint8_t used[8] = {1, 1, 0, 1, 0, 0, 0, 1};
	struct uheat_table tabs[] = {{0, 0, 2, false}, {0, 3, 1, false}, {0, 7, 1, false}};
	size_t victims[3], n = 9;

	/* three free chunks at 4: no eviction, even of cold tables */
	CHECK(unwind_heat_place(used, 8, tabs, 3, 3, 1000, victims, &n) == 4 && n == 0);
	/* one free at 2 (first fit) */
	CHECK(unwind_heat_place(used, 8, tabs, 3, 1, 1000, victims, &n) == 2 && n == 0);
	/* larger than the map: nowhere */
	CHECK(unwind_heat_place(used, 8, tabs, 3, 9, 1000, victims, &n) == -1 && n == 0);
cleanup:;
}

TEST(heat_place_evicts_coldest_only)
{
	/* four one-chunk tables, full map: heats 50, 5, 900, 20 */
	uint8_t used[4] = {1, 1, 1, 1};
	struct uheat_table tabs[] = {
	    {50, 0, 1, false}, {5, 1, 1, false}, {900, 2, 1, false}, {20, 3, 1, false}};
	size_t victims[4], n = 0;

	/* a candidate of 100: the coldest (5) goes, nothing else */
	CHECK(unwind_heat_place(used, 4, tabs, 4, 1, 100, victims, &n) == 1 && n == 1 &&
	      victims[0] == 1);
	/* a candidate of 8: 5 * 1.5 + 1 = 8.5 > 8, no room made */
	CHECK(unwind_heat_place(used, 4, tabs, 4, 1, 8, victims, &n) == -1 && n == 0);
	/* the hottest is never evicted for a colder candidate, whatever it needs */
	CHECK(unwind_heat_place(used, 4, tabs, 4, 4, 500, victims, &n) == -1 && n == 0);
	/* a pinned (just loaded) table is not evicted, however cold */
	tabs[1].pinned = true;
	CHECK(unwind_heat_place(used, 4, tabs, 4, 1, 100, victims, &n) == 3 && n == 1 &&
	      victims[0] == 3);
cleanup:;
}

TEST(heat_place_contiguous_run)
{
	/* [A 2][B 900][C 1][D 3]: two chunks needed; C then A do not make a run (B
	 * between), D does with C: C and D go, A stays. */
	uint8_t used[4] = {1, 1, 1, 1};
	struct uheat_table tabs[] = {
	    {2, 0, 1, false}, {900, 1, 1, false}, {1, 2, 1, false}, {3, 3, 1, false}};
	size_t victims[4], n = 0;

	CHECK(unwind_heat_place(used, 4, tabs, 4, 2, 100, victims, &n) == 2 && n == 2);
	CHECK((victims[0] == 2 && victims[1] == 3) || (victims[0] == 3 && victims[1] == 2));
	/* a table over two chunks, partly free around: [free][E 2 chunks][free] */
	{
		uint8_t u2[4] = {0, 1, 1, 0};
		struct uheat_table t2[] = {{1, 1, 2, false}};

		CHECK(unwind_heat_place(u2, 4, t2, 1, 3, 100, victims, &n) == 0 && n == 1 &&
		      victims[0] == 0);
	}
cleanup:;
}

/* A one-slot map, two objects: each tick, the one not loaded asks with its
 * heat; the policy says whether it takes the slot. Returns the swaps. */
static int simulate(double rate_a, double rate_b, int ticks, int *final_loaded)
{
	double heat[2] = {0, 0}, tick_ms = UNWIND_HEAT_TICK_MS;
	int loaded = 0, swaps = 0, since_load = 1000;

	for (int t = 0; t < ticks; t++, since_load++) {
		uint8_t used[1] = {1};
		struct uheat_table tab;
		size_t victims[1], n = 0;
		int other = !loaded;

		/* sample counts per tick, as walks would add them */
		heat[0] =
		    unwind_heat_decay(heat[0], (uint64_t)rate_a, tick_ms, UNWIND_HEAT_HALF_LIFE_MS);
		heat[1] =
		    unwind_heat_decay(heat[1], (uint64_t)rate_b, tick_ms, UNWIND_HEAT_HALF_LIFE_MS);
		tab = (struct uheat_table){heat[loaded], 0, 1,
					   since_load * tick_ms < UNWIND_HEAT_PIN_MS};
		if (unwind_heat_place(used, 1, &tab, 1, 1, heat[other], victims, &n) == 0 &&
		    n == 1) {
			loaded = other;
			swaps++;
			since_load = 0;
		}
	}
	*final_loaded = loaded;
	return swaps;
}

TEST(heat_no_thrash)
{
	int loaded;

	/* the same rate: the loaded one stays */
	CHECK(simulate(40, 40, 600, &loaded) == 0 && loaded == 0);
	/* 20% hotter: within the hysteresis, no swap */
	CHECK(simulate(40, 48, 600, &loaded) == 0 && loaded == 0);
	/* twice as hot: one swap, and it stays */
	CHECKF(simulate(40, 80, 600, &loaded) == 1 && loaded == 1, "loaded %d", loaded);
	/* a cold loaded table gives way at once to a warm one */
	CHECK(simulate(0, 10, 600, &loaded) == 1 && loaded == 1);
cleanup:;
}

/* The manager over real maps (needs root): a row map of 4 chunks full of this
 * binary's objects; one object without a table gets heat, and once the loaded
 * tables are no longer pinned it takes the place of a cold one: evicted (parked,
 * charged to MEM_UNWIND; with tight, a caches' share with no room for it: not
 * parked, dropped and counted as an eviction of MEM_UNWIND), then loaded after
 * the chunks cooled, and the view re-published with its rows. */
static void hot_object_loads(int *unit_failed, bool tight)
{
	LIBBPF_OPTS(bpf_map_create_opts, mm, .map_flags = BPF_F_MMAPABLE);
	struct hearth_unwind_proc *val = calloc(1, sizeof(*val));
	struct unwind_mgr_stats st, st2;
	struct unwind_mgr *m = NULL;
	uint32_t self = (uint32_t)getpid(), slot = 0, idx = 0;
	int rows_fd = -1, procs_fd = -1, heat_fd = -1;
	uint64_t hits;

	CHECK(val);
	if (geteuid() != 0) {
		printf("  (skipped: needs root for BPF maps)\n");
		goto cleanup;
	}
	mem_budget__reset();
	if (tight) { /* a share with room for no table */
		mem_budget__set_limit(32ull << 20, 40);
		mem_budget__set_cache_budget(1);
	}
	rows_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_rows", 4, sizeof(struct hearth_unwind_row),
				 4 * HEARTH_UNWIND_CHUNK_ROWS, &mm);
	procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "uw_procs", 4, sizeof(*val), 64, NULL);
	heat_fd =
	    bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_heat", 4, 8, HEARTH_UNWIND_MAX_OBJECTS, &mm);
	CHECK(rows_fd >= 0 && procs_fd >= 0 && heat_fd >= 0);
	CHECK(unwind_mgr__new(rows_fd, procs_fd, 4, &m) == 0);
	CHECK(unwind_mgr__set_heat(m, heat_fd) == 0);
	unwind_mgr__note(m, self, 1);
	CHECK(unwind_mgr__work(m, 5000) >= 1);
	unwind_mgr__stats(m, &st);
	CHECKF(st.chunks_used == 4 && st.tables_loaded >= 1, "%llu chunks used",
	       (unsigned long long)st.chunks_used);
	/* An object that fits (slot set) and has no table loaded: the last one
	 * mapped (the dynamic loader, small), as tables of a full map are built
	 * on demand only. */
	CHECK(bpf_map_lookup_elem(procs_fd, &self, val) == 0);
	for (uint32_t i = 0; i < val->n; i++)
		if (val->m[i].obj && !val->m[i].row_count) {
			slot = val->m[i].obj;
			idx = i;
		}
	CHECK(slot);
	/* A stray sample: under the margin, nothing moves. */
	hits = 1;
	CHECK(bpf_map_update_elem(heat_fd, &slot, &hits, BPF_ANY) == 0);
	usleep((UNWIND_HEAT_PIN_MS + 100) * 1000);
	unwind_mgr__want(m);
	unwind_mgr__work(m, 5000);
	unwind_mgr__stats(m, &st2);
	CHECKF(st2.tables_evicted == 0 && st2.waiting_objects >= 1 && st2.requests == 1,
	       "%llu evicted %llu waiting %llu requests", (unsigned long long)st2.tables_evicted,
	       (unsigned long long)st2.waiting_objects, (unsigned long long)st2.requests);
	/* Hot now: a cold table is evicted and parked; the chunks cool, then it loads. */
	hits = 1002;
	CHECK(bpf_map_update_elem(heat_fd, &slot, &hits, BPF_ANY) == 0);
	usleep(30 * 1000); /* requests bring ticks forward, 20 ms apart at least */
	unwind_mgr__want(m);
	unwind_mgr__work(m, 5000);
	unwind_mgr__stats(m, &st2);
	/* parked: the victim's rows, or (tight) only the candidate's, built and
	 * waiting for the chunks to cool; tight: the victim's dropped, counted */
	CHECKF(st2.tables_evicted >= 1 && st2.parked_tables >= 1 &&
		   mem_budget__used(MEM_UNWIND) == st2.parked_bytes && st2.parked_bytes > 0 &&
		   (mem_budget__evictions(MEM_UNWIND) >= 1) == tight,
	       "%llu evicted, %llu parked (%llu bytes, %llu charged), %llu dropped",
	       (unsigned long long)st2.tables_evicted, (unsigned long long)st2.parked_tables,
	       (unsigned long long)st2.parked_bytes,
	       (unsigned long long)mem_budget__used(MEM_UNWIND),
	       (unsigned long long)mem_budget__evictions(MEM_UNWIND));
	CHECK(unwind_mgr__next_due_ms(m) >= 0); /* a tick is due once the chunks cooled */
	usleep(20 * 1000);
	unwind_mgr__work(m, 5000);
	unwind_mgr__stats(m, &st2);
	CHECK(bpf_map_lookup_elem(procs_fd, &self, val) == 0);
	CHECKF(val->m[idx].obj == slot && val->m[idx].row_count > 0 &&
		   st2.tables_loaded > st.tables_loaded && st2.chunks_used <= 4,
	       "row_count %u, %llu loads", val->m[idx].row_count,
	       (unsigned long long)st2.tables_loaded);
	printf("  %llu loads, %llu evicted, %llu parked (%llu KiB), %llu waiting, %llu ticks\n",
	       (unsigned long long)st2.tables_loaded, (unsigned long long)st2.tables_evicted,
	       (unsigned long long)st2.parked_tables, (unsigned long long)(st2.parked_bytes >> 10),
	       (unsigned long long)st2.waiting_objects, (unsigned long long)st2.heat_ticks);
cleanup:
	unwind_mgr__free(m);
	CHECK(mem_budget__used(MEM_UNWIND) == 0);
	if (rows_fd >= 0)
		close(rows_fd);
	if (procs_fd >= 0)
		close(procs_fd);
	if (heat_fd >= 0)
		close(heat_fd);
	free(val);
	mem_budget__reset();
}

TEST(mgr_loads_the_hot_object)
{
	hot_object_loads(unit_failed, false);
}

/* Under a --memory-limit whose caches' share has no room for the evicted
 * table's rows, they are not copied out of the map (docs/memory.md). */
TEST(mgr_evicts_without_parking_when_no_room)
{
	hot_object_loads(unit_failed, true);
}
