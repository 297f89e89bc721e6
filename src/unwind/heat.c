/*
 * heat: the policy of unwind tables on demand (issue 29, docs/unwind.md
 * "Tables by heat"), pure functions over plain arrays so that it is tested
 * deterministically (tests/unit/test_unwind_heat.c); unwind.c applies it to
 * the row map.
 *
 * Each object's heat is the number of walked frames that landed in it, decayed
 * exponentially (half-life UNWIND_HEAT_HALF_LIFE_MS). A table is loaded into
 * free chunks when there are some; when the map is full, the coldest loaded
 * tables make room for a hotter object, but only when each is clearly colder
 * (heat * UNWIND_HEAT_HYST + UNWIND_HEAT_MARGIN below the candidate's) and was
 * not loaded moments ago (pinned): two objects of about the same heat do not
 * take each other's place at every tick.
 */
#include "unwind.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double unwind_heat_decay(double heat, uint64_t hits, double dt_ms, double half_life_ms)
{
	if (dt_ms < 0)
		dt_ms = 0;
	if (half_life_ms <= 0)
		return (double)hits;
	return heat * exp2(-dt_ms / half_life_ms) + (double)hits;
}

bool unwind_heat_may_evict(double victim_heat, double cand_heat)
{
	return victim_heat * UNWIND_HEAT_HYST + UNWIND_HEAT_MARGIN < cand_heat;
}

/* First run of need chunks whose avail[] are all set; index or -1. */
static long first_run(const uint8_t *avail, uint32_t n_chunks, uint32_t need)
{
	for (uint32_t i = 0, run = 0; i < n_chunks; i++) {
		run = avail[i] ? run + 1 : 0;
		if (run == need)
			return (long)(i + 1 - need);
	}
	return -1;
}

static const struct uheat_table *sort_tabs;

static int by_heat(const void *a, const void *b)
{
	const struct uheat_table *x = &sort_tabs[*(const size_t *)a];
	const struct uheat_table *y = &sort_tabs[*(const size_t *)b];

	if (x->heat != y->heat)
		return x->heat < y->heat ? -1 : 1;
	/* equal heat: the lower index (older) first, for a stable answer */
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

long unwind_heat_place(const uint8_t *used, uint32_t n_chunks, const struct uheat_table *tabs,
		       size_t n_tabs, uint32_t need, double cand_heat, size_t *victims,
		       size_t *n_victims)
{
	uint8_t avail[HEARTH_UNWIND_CHUNKS];
	size_t *order = NULL, n_order = 0;
	long first;

	*n_victims = 0;
	if (need == 0 || need > n_chunks || n_chunks > HEARTH_UNWIND_CHUNKS)
		return -1;
	for (uint32_t i = 0; i < n_chunks; i++)
		avail[i] = !used[i];
	first = first_run(avail, n_chunks, need);
	if (first >= 0)
		return first;
	order = malloc((n_tabs ? n_tabs : 1) * sizeof(*order));
	if (!order)
		return -1;
	for (size_t i = 0; i < n_tabs; i++)
		if (!tabs[i].pinned && tabs[i].chunks &&
		    (uint64_t)tabs[i].first + tabs[i].chunks <= n_chunks &&
		    unwind_heat_may_evict(tabs[i].heat, cand_heat))
			order[n_order++] = i;
	sort_tabs = tabs;
	qsort(order, n_order, sizeof(*order), by_heat);
	/* Coldest first, until a run fits; nothing is evicted when none would. */
	for (size_t k = 0; k < n_order && first < 0; k++) {
		const struct uheat_table *t = &tabs[order[k]];

		memset(avail + t->first, 1, t->chunks);
		first = first_run(avail, n_chunks, need);
	}
	if (first < 0) {
		free(order);
		return -1;
	}
	/* Only the victims inside the run found: the others keep their place. */
	for (size_t k = 0; k < n_order; k++) {
		const struct uheat_table *t = &tabs[order[k]];

		if (t->first < (uint64_t)first + need &&
		    (uint64_t)t->first + t->chunks > (uint64_t)first)
			victims[(*n_victims)++] = order[k];
	}
	free(order);
	return first;
}
