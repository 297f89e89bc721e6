/*
 * Open-addressing table of stacks keyed by stack-map id, for one drain.
 * Bounded by the stack map's size (the number of distinct ids one drain can see).
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
	for (size_t i = 0; i < c->cap; i++) {
		free(c->slots[i].frames);
		c->slots[i].frames = NULL;
	}
	c->used = 0;
	c->n_ids = 0;
}

void stack_cache__fini(struct stack_cache *c)
{
	stack_cache__reset(c);
	free(c->slots);
	free(c->ids);
	memset(c, 0, sizeof(*c));
}

static size_t slot_of(const struct stack_cache *c, uint32_t id)
{
	size_t i = (id * 2654435761u) & (c->cap - 1);

	while (c->slots[i].frames && c->slots[i].id != id)
		i = (i + 1) & (c->cap - 1);
	return i;
}

const struct stack_cache_entry *stack_cache__get(const struct stack_cache *c, uint32_t id)
{
	size_t i;

	if (!c->cap)
		return NULL;
	i = slot_of(c, id);
	return c->slots[i].frames ? &c->slots[i] : NULL;
}

static int grow(struct stack_cache *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 256;
	struct stack_cache_entry *old = c->slots;
	size_t ocap = c->cap;
	uint32_t *ids = realloc(c->ids, ncap / 2 * sizeof(*ids));

	if (!ids)
		return -1;
	c->ids = ids;
	c->slots = calloc(ncap, sizeof(*c->slots));
	if (!c->slots) {
		c->slots = old;
		return -1;
	}
	c->cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].frames)
			c->slots[slot_of(c, old[i].id)] = old[i];
	free(old);
	return 0;
}

const struct stack_cache_entry *stack_cache__put(struct stack_cache *c, uint32_t id,
						 const uint64_t *frames, size_t max)
{
	struct stack_cache_entry *e;
	size_t n = 0;

	if ((c->used + 1) * 2 > c->cap && grow(c))
		return NULL;
	while (n < max && frames[n])
		n++;
	e = &c->slots[slot_of(c, id)];
	e->frames = malloc((n ? n : 1) * sizeof(*frames));
	if (!e->frames)
		return NULL;
	memcpy(e->frames, frames, n * sizeof(*frames));
	e->id = id;
	e->n = (uint32_t)n;
	c->used++;
	c->ids[c->n_ids++] = id;
	return e;
}
