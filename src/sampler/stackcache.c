/*
 * The stacks of one drain by stack-map id: a dense array in insertion order
 * indexed by the base hash index. Bounded by the stack map's size (the number of
 * distinct ids one drain can see).
 */
#include "stackcache.h"

#include <stdlib.h>
#include <string.h>

void stack_cache__init(struct stack_cache *c)
{
	memset(c, 0, sizeof(*c));
}

void stack_cache__reset(struct stack_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->entries[i].frames);
	c->n = 0;
	base_hmap__clear(&c->idx);
}

void stack_cache__fini(struct stack_cache *c)
{
	stack_cache__reset(c);
	free(c->entries);
	base_hmap__fini(&c->idx);
	memset(c, 0, sizeof(*c));
}

static uint64_t id_hash(uint32_t id)
{
	return base_hash_u64(BASE_HASH_SEED, id);
}

static bool id_eq(const void *ctx, size_t idx, const void *key)
{
	const struct stack_cache *c = ctx;

	return c->entries[idx].id == *(const uint32_t *)key;
}

const struct stack_cache_entry *stack_cache__get(const struct stack_cache *c, uint32_t id)
{
	size_t i = base_hmap__find(&c->idx, id_hash(id), id_eq, c, &id);

	return i == SIZE_MAX ? NULL : &c->entries[i];
}

const struct stack_cache_entry *stack_cache__put(struct stack_cache *c, uint32_t id,
						 const uint64_t *frames, size_t max)
{
	struct stack_cache_entry *e;
	uint64_t *copy;
	size_t n = 0;

	while (n < max && frames[n])
		n++;
	if (base_grow((void **)&c->entries, &c->cap, c->n + 1, sizeof(*c->entries)))
		return NULL;
	copy = malloc((n ? n : 1) * sizeof(*frames));
	if (!copy)
		return NULL;
	if (base_hmap__insert(&c->idx, id_hash(id), c->n)) {
		free(copy);
		return NULL;
	}
	memcpy(copy, frames, n * sizeof(*frames));
	e = &c->entries[c->n++];
	*e = (struct stack_cache_entry){.id = id, .n = (uint32_t)n, .frames = copy};
	return e;
}
