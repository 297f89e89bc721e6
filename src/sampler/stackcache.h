/*
 * Private to sampler/: the distinct stacks read during one drain, by stack id,
 * so each id costs one bpf() lookup however many count keys refer to it.
 */
#ifndef HEARTH_SAMPLER_STACKCACHE_H
#define HEARTH_SAMPLER_STACKCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

struct stack_cache_entry {
	uint32_t id;
	uint32_t n;	  /* frames used */
	uint64_t *frames; /* owned, leaf first */
};

struct stack_cache {
	struct stack_cache_entry *entries; /* owned, in insertion order: the order in
					    * which the drain frees the ids in the map */
	size_t n, cap;
	struct base_hmap idx; /* hash of id -> index in entries */
};

void stack_cache__init(struct stack_cache *c);
void stack_cache__fini(struct stack_cache *c);
/* Forgets every entry, keeps the memory. */
void stack_cache__reset(struct stack_cache *c);
/* Entry for id, or NULL. Valid until the next put or reset (its frames until reset). */
const struct stack_cache_entry *stack_cache__get(const struct stack_cache *c, uint32_t id);
/* Copies the non-zero prefix of frames[0..max) under id, which must be new. NULL on
 * ENOMEM. */
const struct stack_cache_entry *stack_cache__put(struct stack_cache *c, uint32_t id,
						 const uint64_t *frames, size_t max);

#endif
