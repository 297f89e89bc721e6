/*
 * Intern tables of the store: byte keys (a string, an encoded mapping, function,
 * location, stack or series) to dense ids 1..n, the same ids the SQLite tables
 * hold. Everything interned is loaded at open, so an append looks up symbols and
 * stacks in memory and writes only what is new.
 *
 * Entries added during an append stay "pending" until commit; a failed append
 * rolls them back so memory and database never disagree (ids are reused).
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

/* A 64-bit hash, 8 bytes at a time (keys are short: tens of bytes). */
uint64_t store_hash(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	uint64_t w;

	while (n >= 8) {
		memcpy(&w, b, 8);
		h = (h ^ (w * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
		h ^= h >> 29;
		b += 8;
		n -= 8;
	}
	w = 0;
	memcpy(&w, b, n);
	h = (h ^ (w * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 32;
	return h;
}

/* Grows an array of elem-sized elements to hold need, doubling; 0 or -ENOMEM. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 16;
	void *n;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (c > SIZE_MAX / elem)
		return -ENOMEM;
	n = realloc(*arr, c * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = c;
	return 0;
}

void store_itab__fini(struct store_itab *t)
{
	free(t->buf);
	free(t->off);
	free(t->hashes);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static bool key_eq(const struct store_itab *t, uint32_t id, const void *key, size_t len)
{
	size_t o = t->off[id - 1], l = t->off[id] - o;

	return l == len && memcmp(t->buf + o, key, len) == 0;
}

/* A slot holds the id in its low 32 bits and the hash's high 32 bits above, so a
 * probe rejects other keys without touching their hashes or bytes (each of which
 * is a cache miss in a table of 100,000 keys). */
#define SLOT_ID(v)  ((uint32_t)(v))
#define SLOT_TAG(h) ((h)&0xffffffff00000000ull)

static void slot_insert(struct store_itab *t, uint64_t h, uint32_t id)
{
	size_t mask = t->nslots - 1, i = h & mask;

	while (t->slots[i])
		i = (i + 1) & mask;
	t->slots[i] = SLOT_TAG(h) | id;
}

/* Rebuilds the index with room for twice the entries. */
static int reindex(struct store_itab *t, size_t want)
{
	size_t ns = 64;
	uint64_t *s;

	while (ns < want * 2)
		ns *= 2;
	s = calloc(ns, sizeof(*s));
	if (!s)
		return -ENOMEM;
	free(t->slots);
	t->slots = s;
	t->nslots = ns;
	for (size_t i = 0; i < t->n; i++)
		slot_insert(t, t->hashes[i], (uint32_t)(i + 1));
	return 0;
}

static uint64_t find_hashed(const struct store_itab *t, uint64_t h, const void *key, size_t len)
{
	size_t mask, i;

	if (!t->nslots)
		return 0;
	mask = t->nslots - 1;
	for (i = h & mask; t->slots[i]; i = (i + 1) & mask)
		if (SLOT_TAG(t->slots[i]) == SLOT_TAG(h) &&
		    key_eq(t, SLOT_ID(t->slots[i]), key, len))
			return SLOT_ID(t->slots[i]);
	return 0;
}

uint64_t store_itab__find(const struct store_itab *t, const void *key, size_t len)
{
	return find_hashed(t, store_hash(key, len), key, len);
}

int store_itab__intern(struct store_itab *t, const void *key, size_t len, uint64_t *id, bool *added)
{
	uint64_t h = store_hash(key, len);
	uint64_t found = find_hashed(t, h, key, len);

	if (added)
		*added = !found;
	if (found) {
		*id = found;
		return 0;
	}
	if (t->n >= UINT32_MAX - 1)
		return -ENOSPC;
	size_t old_cap = t->cap_n;

	if (grow((void **)&t->buf, &t->cap, t->len + len, 1) ||
	    grow((void **)&t->off, &t->cap_n, t->n + 2, sizeof(*t->off)))
		return -ENOMEM;
	if (t->cap_n != old_cap) { /* hashes shares cap_n with off */
		uint64_t *hs = realloc(t->hashes, t->cap_n * sizeof(*hs));

		if (!hs) {
			t->cap_n = old_cap; /* off is merely larger than it says */
			return -ENOMEM;
		}
		t->hashes = hs;
	}
	if ((t->n + 1) * 2 > t->nslots && reindex(t, t->n + 1))
		return -ENOMEM;
	if (t->n == 0)
		t->off[0] = 0;
	if (len) /* an empty key (the empty stack) may come first, with buf still NULL */
		memcpy(t->buf + t->len, key, len);
	t->len += len;
	t->hashes[t->n] = h;
	t->n++;
	t->off[t->n] = t->len;
	slot_insert(t, h, (uint32_t)t->n);
	*id = t->n;
	return 0;
}

const uint8_t *store_itab__key(const struct store_itab *t, uint64_t id, size_t *len)
{
	if (id == 0 || id > t->n)
		return NULL;
	*len = t->off[id] - t->off[id - 1];
	return t->buf + t->off[id - 1];
}

void store_itab__commit(struct store_itab *t)
{
	t->committed = t->n;
}

int store_itab__rollback(struct store_itab *t)
{
	if (t->n == t->committed)
		return 0;
	t->n = t->committed;
	t->len = t->n ? t->off[t->n] : 0;
	return reindex(t, t->n);
}
