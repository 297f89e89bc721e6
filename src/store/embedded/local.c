/*
 * Series-local stack ids (see struct estore in store_impl.h): a chunk's stack
 * column stores, for each row, the index of its stack in the series' own list,
 * in the order the series first used them. A process touches a few hundred
 * stacks out of tens of thousands in the store, so its local ids — and the
 * deltas between sorted ones — stay within a byte.
 *
 * The pairs live in the STORE_T_PAIRS intern table (key: series, stack) and so
 * commit and roll back with the append that created them.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

/* Records pair id (series, stack) as the next local id of series. */
static int push(struct estore *s, uint64_t pair, uint64_t series, uint64_t stack)
{
	struct store_local *l;

	if (series > UINT32_MAX ||
	    base_grow_zeroed((void **)&s->local, &s->local_cap, series + 1, sizeof(*s->local)) ||
	    base_grow_zeroed((void **)&s->pair_local, &s->pair_local_cap, pair + 1,
			     sizeof(*s->pair_local)))
		return -ENOMEM;
	l = &s->local[series];
	if (l->n == l->cap && base_grow((void **)&l->stacks, &l->cap, l->n + 1, sizeof(*l->stacks)))
		return -ENOMEM;
	s->pair_local[pair] = (uint32_t)l->n;
	l->stacks[l->n++] = stack;
	return 0;
}

static int pair_key(const struct estore *s, uint64_t id, uint64_t *series, uint64_t *stack)
{
	size_t len;
	const uint8_t *k = store_itab__key(&s->tabs[STORE_T_PAIRS], id, &len);
	const uint8_t *end = k + len;

	if (!k || base_varint_get(&k, end, series) || base_varint_get(&k, end, stack))
		return -EINVAL;
	return 0;
}

int store_local_id(struct estore *s, uint64_t series, uint64_t stack, uint64_t *local)
{
	uint8_t key[20], *e = base_varint_put(base_varint_put(key, series), stack);
	uint64_t pair;
	bool added;
	int err =
	    store_itab__intern(&s->tabs[STORE_T_PAIRS], key, (size_t)(e - key), &pair, &added);

	if (!err && added)
		err = push(s, pair, series, stack);
	if (!err)
		*local = s->pair_local[pair];
	return err;
}

/* After loading the pairs table at open. */
int store_local_load(struct estore *s)
{
	uint64_t series, stack;

	for (uint64_t id = 1; id <= s->tabs[STORE_T_PAIRS].n; id++) {
		if (!store_itab__live(&s->tabs[STORE_T_PAIRS], id))
			continue; /* freed with its series */
		int err = pair_key(s, id, &series, &stack) ?: push(s, id, series, stack);

		if (err)
			return err;
	}
	return 0;
}

void store_local_rollback(struct estore *s)
{
	const struct store_itab *t = &s->tabs[STORE_T_PAIRS];
	uint64_t series, stack;

	for (size_t i = t->npend; i-- > 0;)
		if (!pair_key(s, t->pend[i], &series, &stack) && series < s->local_cap &&
		    s->local[series].n)
			s->local[series].n--;
}

void store_local_fini(struct estore *s)
{
	for (size_t i = 0; i < s->local_cap; i++)
		free(s->local[i].stacks);
	free(s->local);
	free(s->pair_local);
	s->local = NULL;
	s->pair_local = NULL;
	s->local_cap = s->pair_local_cap = 0;
}
