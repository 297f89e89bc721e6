/*
 * Tests of the policy of unwind tables on demand (src/unwind/heat.c): heat
 * decay, placement in free chunks, eviction of the coldest tables only when
 * the candidate is clearly hotter (hysteresis) and not of tables loaded moments
 * ago, eviction of no more than the room needs, and a simulation in which two
 * objects of the same heat do not take each other's place while a clearly
 * hotter one does, once. Deterministic: no clock, no BPF.
 */
#include <math.h>
#include <string.h>

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
	/* 100 * 1.5 + 4 = 154 */
	CHECK(!unwind_heat_may_evict(100, 140));
	CHECK(!unwind_heat_may_evict(100, 154));
	CHECK(unwind_heat_may_evict(100, 155));
	CHECK(!unwind_heat_may_evict(0, 3)); /* the margin: a stray sample evicts nothing */
	CHECK(unwind_heat_may_evict(0, 5));
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
	/* a candidate of 10: 5 * 1.5 + 4 = 11.5 > 10, no room made */
	CHECK(unwind_heat_place(used, 4, tabs, 4, 1, 10, victims, &n) == -1 && n == 0);
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
		heat[0] = unwind_heat_decay(heat[0], (uint64_t)rate_a, tick_ms,
					    UNWIND_HEAT_HALF_LIFE_MS);
		heat[1] = unwind_heat_decay(heat[1], (uint64_t)rate_b, tick_ms,
					    UNWIND_HEAT_HALF_LIFE_MS);
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
