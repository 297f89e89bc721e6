/*
 * The open-addressing hash index (see base.h): linear probing over (hash,
 * index + 1) slots, doubled when 3/4 full, removal by backward shift so that
 * probes never meet tombstones and a table that churns does not degrade.
 */
#include "base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HMAP_MIN_CAP 16

static void place(struct base_hmap_slot *slots, size_t cap, uint64_t hash, size_t idx1)
{
	size_t i = hash & (cap - 1);

	while (slots[i].idx1)
		i = (i + 1) & (cap - 1);
	slots[i].hash = hash;
	slots[i].idx1 = idx1;
}

static int rehash(struct base_hmap *h)
{
	size_t ncap = h->cap ? h->cap : HMAP_MIN_CAP / 2;
	struct base_hmap_slot *ns;

	if (__builtin_mul_overflow(ncap, 2, &ncap))
		return -ENOMEM;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap; i++)
		if (h->slots[i].idx1)
			place(ns, ncap, h->slots[i].hash, h->slots[i].idx1);
	free(h->slots);
	h->slots = ns;
	h->cap = ncap;
	return 0;
}

int base_hmap__insert(struct base_hmap *h, uint64_t hash, size_t idx)
{
	int err;

	if ((h->n + 1) * 4 > h->cap * 3) {
		err = rehash(h);
		if (err)
			return err;
	}
	place(h->slots, h->cap, hash, idx + 1);
	h->n++;
	return 0;
}

/* Slot holding (hash, idx), or SIZE_MAX. */
static size_t slot_of(const struct base_hmap *h, uint64_t hash, size_t idx)
{
	if (!h->cap)
		return SIZE_MAX;
	for (size_t i = hash & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
		if (!h->slots[i].idx1)
			return SIZE_MAX;
		if (h->slots[i].hash == hash && h->slots[i].idx1 == idx + 1)
			return i;
	}
}

int base_hmap__remove(struct base_hmap *h, uint64_t hash, size_t idx)
{
	size_t mask = h->cap - 1, hole = slot_of(h, hash, idx);

	if (hole == SIZE_MAX)
		return -ENOENT;
	/* Backward shift: move later members of the run into the hole when their
	 * home slot is not in (hole, j], i.e. when the hole lies on their probe path. */
	for (size_t j = (hole + 1) & mask; h->slots[j].idx1; j = (j + 1) & mask) {
		size_t home = h->slots[j].hash & mask;

		if (((j - home) & mask) >= ((j - hole) & mask)) {
			h->slots[hole] = h->slots[j];
			hole = j;
		}
	}
	h->slots[hole].idx1 = 0;
	h->n--;
	return 0;
}

int base_hmap__renumber(struct base_hmap *h, uint64_t hash, size_t from, size_t to)
{
	size_t i = slot_of(h, hash, from);

	if (i == SIZE_MAX)
		return -ENOENT;
	h->slots[i].idx1 = to + 1;
	return 0;
}

void base_hmap__clear(struct base_hmap *h)
{
	if (h->cap)
		memset(h->slots, 0, h->cap * sizeof(*h->slots));
	h->n = 0;
}

void base_hmap__fini(struct base_hmap *h)
{
	free(h->slots);
	memset(h, 0, sizeof(*h));
}
