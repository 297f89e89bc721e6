/*
 * The stack memo: (series, store location ids of a stack) -> (global stack id,
 * series-local id), kept across appends. The same processes send the same
 * stacks every 10 s; without the memo each sample costs two intern-table
 * lookups (the stack's varint key, then the (series, stack) pair), each
 * encoding a key, hashing it and comparing it with a stored key that is rarely
 * in the CPU caches. With it, a stack seen before costs one 128-bit hash of its
 * location ids and one probe of a compact table.
 *
 * The key is a 128-bit hash (two independent 64-bit hashes, as the location
 * cache's) of the series id and the location ids; the series id is also kept in
 * the slot and compared. Two different stacks of one series share a key with a
 * probability of about n^2 / 2^129.
 *
 * Entries may point at ids of an uncommitted transaction: a rollback empties
 * the memo (store_stackmemo_clear), since rolled-back ids are given again.
 * Memory: 32 bytes a slot, at most half the slots used; past STORE_STACKMEMO_MAX
 * entries (a 64 MiB table) the memo starts over empty and refills from the
 * intern tables, which stay the truth: it only remembers their answers.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

void store_stackmemo_hash(uint64_t series, const uint64_t *locs, size_t n, uint64_t h[2])
{
	h[0] = 0x737461636b ^ series;
	h[1] = 0x6d656d6f + series * 0x9e3779b97f4a7c15ull;
	store_loccache_mix(h, locs, n * sizeof(*locs));
}

const struct store_stackmemo_slot *store_stackmemo_find(const struct store_stackmemo *m,
							const uint64_t h[2], uint64_t series)
{
	if (!m->cap)
		return NULL;
	for (size_t i = h[0] & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) { /* layers: slots hold the key, prefetched by hash */
		const struct store_stackmemo_slot *sl = &m->slots[i];

		if (!sl->stack)
			return NULL;
		if (sl->h[0] == h[0] && sl->h[1] == h[1] && sl->series == series)
			return sl;
	}
}

int store_stackmemo_put(struct store_stackmemo *m, const uint64_t h[2], uint64_t series,
			uint64_t stack, uint64_t local)
{
	size_t i;

	if (series > UINT32_MAX || local > UINT32_MAX || !stack)
		return 0; /* not representable: simply not remembered */
	if (m->n >= STORE_STACKMEMO_MAX)
		store_stackmemo_clear(m);
	if ((m->n + 1) * 2 > m->cap &&
	    store_fp_grow((void **)&m->slots, &m->cap, sizeof(*m->slots)))
		return -ENOMEM;
	for (i = h[0] & (m->cap - 1); m->slots[i].stack; i = (i + 1) & (m->cap - 1)) /* layers: slots hold the key, prefetched by hash */
		if (m->slots[i].h[0] == h[0] && m->slots[i].h[1] == h[1] &&
		    m->slots[i].series == series)
			break;
	m->n += !m->slots[i].stack;
	m->slots[i] =
	    (struct store_stackmemo_slot){{h[0], h[1]}, stack, (uint32_t)series, (uint32_t)local};
	return 0;
}

void store_stackmemo_clear(struct store_stackmemo *m)
{
	if (m->slots)
		memset(m->slots, 0, m->cap * sizeof(*m->slots));
	m->n = 0;
}

void store_stackmemo_fini(struct store_stackmemo *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
