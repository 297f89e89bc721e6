/*
 * The location cache: content hash of a profile's location -> store location
 * id, kept for the life of the store so that an append of the same processes
 * (which send nearly the same locations every 10 s) translates a location with
 * one probe instead of interning its mapping, its functions' strings and its
 * key (4-8 hash lookups that miss the CPU caches).
 *
 * The key is 128 bits: two independent 64-bit hashes of everything the stored
 * location key is made of (mapping start, limit, offset, file, build-id;
 * address; each line's function name, system name, file name and line), so two
 * different locations share a key with a probability of about n^2 / 2^129: not
 * a practical concern for the millions of locations a store holds.
 *
 * Entries point at ids that may belong to an uncommitted transaction: a
 * rollback empties the cache (store_loccache_clear), since a rolled-back id is
 * given again to another location. There is at most one entry per stored
 * location, so the cache is bounded by the locations table it mirrors.
 */
#include "store_impl.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void store_loccache_clear(struct store_loccache *c)
{
	if (c->slots)
		memset(c->slots, 0, c->cap * sizeof(*c->slots));
	c->n = 0;
}

void store_loccache_fini(struct store_loccache *c)
{
	free(c->slots);
	memset(c, 0, sizeof(*c));
}

uint64_t store_loccache_find(const struct store_loccache *c, const uint64_t h[2])
{
	if (!c->cap)
		return 0;
	for (size_t i = h[0] & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) { /* layers: slots hold the 128-bit key, prefetched by hash */
		const struct store_loccache_slot *sl = &c->slots[i];

		if (!sl->id)
			return 0;
		if (sl->h[0] == h[0] && sl->h[1] == h[1])
			return sl->id;
	}
}

/* A slot of a 128-bit-keyed table: the key, then a word that is 0 when empty. */
struct fp_slot {
	uint64_t h[2];
	uint64_t used;
};
_Static_assert(offsetof(struct store_loccache_slot, id) == offsetof(struct fp_slot, used),
	       "a location cache slot is a 128-bit-keyed slot");
_Static_assert(offsetof(struct store_stackmemo_slot, stack) == offsetof(struct fp_slot, used),
	       "a stack memo slot is a 128-bit-keyed slot");

int store_fp_grow(void **slots, size_t *cap, size_t size)
{
	size_t ncap = *cap ? *cap * 2 : 4096, bytes;
	char *s, *old = *slots;

	if (__builtin_mul_overflow(ncap, size, &bytes) || !(s = calloc(ncap, size)))
		return -ENOMEM;
	for (size_t i = 0; i < *cap; i++) {
		const struct fp_slot *o = (const void *)(old + i * size);

		if (!o->used)
			continue;
		size_t j = o->h[0] & (ncap - 1);
		while (((const struct fp_slot *)(const void *)(s + j * size))->used)
			j = (j + 1) & (ncap - 1); /* layers: slots hold the 128-bit key, prefetched by hash */
		memcpy(s + j * size, o, size);
	}
	free(old);
	*slots = s;
	*cap = ncap;
	return 0;
}

int store_loccache_put(struct store_loccache *c, const uint64_t h[2], uint64_t id)
{
	size_t i;

	if ((c->n + 1) * 2 > c->cap &&
	    store_fp_grow((void **)&c->slots, &c->cap, sizeof(*c->slots)))
		return -ENOMEM;
	for (i = h[0] & (c->cap - 1); c->slots[i].id; i = (i + 1) & (c->cap - 1)) /* layers: slots hold the 128-bit key, prefetched by hash */
		if (c->slots[i].h[0] == h[0] && c->slots[i].h[1] == h[1]) {
			c->slots[i].id = id;
			return 0;
		}
	c->slots[i] = (struct store_loccache_slot){{h[0], h[1]}, id};
	c->n++;
	return 0;
}

/* Two independent 64-bit hashes of the bytes, folded into h. */
void store_loccache_mix(uint64_t h[2], const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t a = h[0] ^ (n * 0x9e3779b97f4a7c15ull), z = h[1] ^ (n * 0xd6e8feb86659fd93ull), w;

	for (;; b += 8, n -= 8) {
		w = 0;
		if (n >= 8)
			memcpy(&w, b, 8); /* a constant size: one load, not a call */
		else if (n)		  /* n == 0: p may be NULL (an empty stack) */
			memcpy(&w, b, n);
		a = (a ^ w) * 0xff51afd7ed558ccdull;
		a ^= a >> 32;
		z = (z + w) * 0xc4ceb9fe1a85ec53ull;
		z ^= z >> 29;
		if (n <= 8)
			break;
	}
	h[0] = a;
	h[1] = z;
}
