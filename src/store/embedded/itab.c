/*
 * Intern tables of the store: byte keys (a string, an encoded mapping, function,
 * location, stack or series) to dense ids 1..n, the same ids the SQLite tables
 * hold. Everything interned is loaded at open, so an append looks up symbols and
 * stacks in memory and writes only what is new.
 *
 * Entries added during an append stay "pending" until commit; a failed append
 * rolls them back so memory and database never disagree (ids are reused).
 *
 * The store's garbage collection frees ids no stored chunk needs any more:
 * retired (store_itab__retire), they can no longer be found and their keys
 * leave the buffer, which is compacted; once their rows are deleted from the
 * database (store_itab__release) the ids are given again, lowest first, so that ids stay dense and
 * the arrays indexed by id (here, in the builder, in queries) stay as small as the peak of live
 * entries, not as the store's lifetime. Trailing free ids are dropped.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

/* The hash of a key: in memory only (the index), never stored, so it may change. */
static uint64_t key_hash(const void *key, size_t len)
{
	return base_hash_bytes(BASE_HASH_SEED, key, len);
}

void store_itab__fini(struct store_itab *t)
{
	free(t->buf);
	free(t->off);
	free(t->klen);
	free(t->hashes);
	free(t->slots);
	free(t->free);
	free(t->pend);
	memset(t, 0, sizeof(*t));
}

static bool key_eq(const struct store_itab *t, uint32_t id, const void *key, size_t len)
{
	/* a free or lost id's length (STORE_ITAB_FREE, _LOST) equals no key's */
	return t->klen[id - 1] == len && memcmp(t->buf + t->off[id - 1], key, len) == 0;
}

/* A slot holds the id in its low 32 bits and the hash's high 32 bits above, so a
 * probe rejects other keys without touching their hashes or bytes (each of which
 * is a cache miss in a table of 100,000 keys). Not a base_hmap for that reason:
 * its 16-byte (hash, index) slots would double the index of the store's largest
 * in-memory structure and halve the probes per cache line. */
#define SLOT_ID(v)  ((uint32_t)(v))
#define SLOT_TAG(h) ((h)&0xffffffff00000000ull)

static void slot_insert(struct store_itab *t, uint64_t h, uint32_t id)
{
	size_t mask = t->nslots - 1, i = h & mask;

	while (t->slots[i])
		i = (i + 1) & mask; /* layers: keys live in the slots (ids into buf), not in a base_hmap */
	t->slots[i] = SLOT_TAG(h) | id;
}

/*
 * Rebuilds the index of the live ids with room for twice want. The table is
 * sized by n (ids given, free ones included), not by the live count: if a
 * rebuild after a GC fails, the old index keeps slots of freed ids (harmless:
 * they match no key), and n still bounds the slots in use.
 */
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
		if (t->klen[i] < STORE_ITAB_LOST)
			slot_insert(t, t->hashes[i], (uint32_t)(i + 1));
	return 0;
}

static uint64_t find_hashed(const struct store_itab *t, uint64_t h, const void *key, size_t len)
{
	size_t mask, i;

	if (!t->nslots)
		return 0;
	mask = t->nslots - 1;
	for (i = h & mask; t->slots[i]; i = (i + 1) & mask) /* layers: keys live in the slots (ids into buf), not in a base_hmap */
		if (SLOT_TAG(t->slots[i]) == SLOT_TAG(h) &&
		    key_eq(t, SLOT_ID(t->slots[i]), key, len))
			return SLOT_ID(t->slots[i]);
	return 0;
}

uint64_t store_itab__find(const struct store_itab *t, const void *key, size_t len)
{
	return find_hashed(t, key_hash(key, len), key, len);
}

/* Room for one more id (n + 1) in the arrays indexed by id. */
static int room_for_id(struct store_itab *t)
{
	size_t old_cap = t->cap_n, c = t->cap_n;

	if (base_grow((void **)&t->off, &c, t->n + 1, sizeof(*t->off)))
		return -ENOMEM;
	if (c != old_cap) { /* klen and hashes share cap_n with off */
		uint32_t *kl = realloc(t->klen, c * sizeof(*kl)); /* layers: parallel arrays sharing one capacity, and shrinks */

		if (kl)
			t->klen = kl;
		uint64_t *hs = kl ? realloc(t->hashes, c * sizeof(*hs)) : NULL; /* layers: parallel arrays sharing one capacity, and shrinks */

		if (!hs)
			return -ENOMEM; /* off is merely larger than cap_n says */
		t->hashes = hs;
		t->cap_n = c;
	}
	return 0;
}

/* Stores key as id (a free id being reused, or n + 1), hashed h. */
static int put(struct store_itab *t, uint32_t id, uint64_t h, const void *key, size_t len)
{
	if (base_grow((void **)&t->buf, &t->cap, t->len + len, 1))
		return -ENOMEM;
	if (len) /* an empty key (the empty stack) may come first, with buf still NULL */
		memcpy(t->buf + t->len, key, len);
	t->off[id - 1] = t->len;
	t->klen[id - 1] = (uint32_t)len;
	t->hashes[id - 1] = h;
	t->len += len;
	t->live++;
	slot_insert(t, h, id);
	return 0;
}

int store_itab__intern(struct store_itab *t, const void *key, size_t len, uint64_t *id, bool *added)
{
	uint64_t h = key_hash(key, len);
	uint64_t found = find_hashed(t, h, key, len);
	uint32_t nid;

	if (added)
		*added = !found;
	if (found) {
		*id = found;
		return 0;
	}
	if (t->n >= UINT32_MAX - 1 || len >= STORE_ITAB_LOST)
		return -ENOSPC;
	if (base_grow((void **)&t->pend, &t->cap_pend, t->npend + 1, sizeof(*t->pend)) ||
	    base_grow((void **)&t->buf, &t->cap, t->len + len, 1))
		return -ENOMEM;
	if (t->nfree) {
		nid = t->free[t->nfree - 1];
	} else {
		if (room_for_id(t))
			return -ENOMEM;
		nid = (uint32_t)t->n + 1;
	}
	if ((t->n + 1) * 2 > t->nslots && reindex(t, t->n + 1))
		return -ENOMEM;
	/* nothing can fail past this point */
	if (t->nfree)
		t->nfree--;
	else
		t->n++;
	put(t, nid, h, key, len);
	t->pend[t->npend++] = nid;
	*id = nid;
	return 0;
}

const uint8_t *store_itab__key(const struct store_itab *t, uint64_t id, size_t *len)
{
	if (!store_itab__live(t, id))
		return NULL;
	*len = t->klen[id - 1];
	return t->buf + t->off[id - 1];
}

void store_itab__commit(struct store_itab *t)
{
	t->npend = t->nflushed = 0;
	t->committed = t->n;
	t->committed_len = t->len;
}

int store_itab__rollback(struct store_itab *t)
{
	if (!t->npend)
		return 0;
	/* in reverse: a reused id goes back on top of the free list, where it came from */
	for (size_t i = t->npend; i-- > 0;) {
		uint32_t id = t->pend[i];

		t->klen[id - 1] = STORE_ITAB_FREE;
		t->live--;
		if (id <= t->committed)
			t->free[t->nfree++] = id; /* the array held it before */
	}
	t->npend = t->nflushed = 0;
	t->n = t->committed;
	t->len = t->committed_len;
	return reindex(t, t->n);
}

/* The free list from scratch: every free id, highest first (the lowest is
 * given first). 0 or -ENOMEM. */
static int rebuild_free(struct store_itab *t)
{
	size_t nf = t->n - t->live;

	t->nfree = 0;
	if (t->cap_free > 64 && t->cap_free >= 4 * nf) { /* give back what a GC left */
		size_t c = nf > 16 ? nf : 16;
		uint32_t *f = realloc(t->free, c * sizeof(*f)); /* layers: parallel arrays sharing one capacity, and shrinks */

		if (f) {
			t->free = f;
			t->cap_free = c;
		}
	}
	if (base_grow((void **)&t->free, &t->cap_free, nf, sizeof(*t->free)))
		return -ENOMEM;
	for (size_t id = t->n; id > 0; id--)
		if (t->klen[id - 1] == STORE_ITAB_FREE)
			t->free[t->nfree++] = (uint32_t)id;
	return 0;
}

int store_itab__load(struct store_itab *t, uint64_t id, const void *key, size_t len)
{
	uint64_t h = key_hash(key, len);

	if (id <= t->n || id >= UINT32_MAX - 1 || len >= STORE_ITAB_LOST ||
	    find_hashed(t, h, key, len))
		return -EINVAL;
	while (t->n < id) { /* ids missing from the table were freed */
		if (room_for_id(t))
			return -ENOMEM;
		t->klen[t->n++] = STORE_ITAB_FREE;
	}
	if ((t->n + 1) * 2 > t->nslots && reindex(t, t->n + 1))
		return -ENOMEM;
	return put(t, (uint32_t)id, h, key, len);
}

int store_itab__loaded(struct store_itab *t)
{
	store_itab__commit(t);
	return rebuild_free(t);
}

/* Gives memory back: the arrays indexed by id shrink to n (after trimming). */
static void shrink_arrays(struct store_itab *t)
{
	size_t c = 16;

	while (c < t->n + 1)
		c *= 2;
	if (c * 2 > t->cap_n)
		return; /* less than half unused: keep it */
	size_t *o = realloc(t->off, c * sizeof(*o)); /* layers: parallel arrays sharing one capacity, and shrinks */
	uint32_t *k = realloc(t->klen, c * sizeof(*k)); /* layers: parallel arrays sharing one capacity, and shrinks */
	uint64_t *h = realloc(t->hashes, c * sizeof(*h)); /* layers: parallel arrays sharing one capacity, and shrinks */

	/* a shrink that fails leaves that array larger: every one holds >= c */
	if (o)
		t->off = o;
	if (k)
		t->klen = k;
	if (h)
		t->hashes = h;
	t->cap_n = c;
}

/* Moves the live keys to a buffer of their size, in id order. */
static void compact_buf(struct store_itab *t)
{
	size_t need = 0, at = 0;
	uint8_t *nb;

	for (size_t i = 0; i < t->n; i++)
		if (t->klen[i] < STORE_ITAB_LOST)
			need += t->klen[i];
	if (need == t->len)
		return;
	nb = malloc(need ? need : 1);
	if (!nb)
		return; /* the keys stay where they are: still correct, just larger */
	for (size_t i = 0; i < t->n; i++)
		if (t->klen[i] < STORE_ITAB_LOST) {
			memcpy(nb + at, t->buf + t->off[i], t->klen[i]);
			t->off[i] = at;
			at += t->klen[i];
		}
	free(t->buf);
	t->buf = nb;
	t->len = at;
	t->cap = need ? need : 1;
}

int store_itab__retire(struct store_itab *t, const uint8_t *dead, size_t n_dead)
{
	size_t n = 0;

	if (t->npend)
		return -EBUSY; /* only between transactions */
	for (size_t id = 1; id <= t->n && id < n_dead; id++)
		if (dead[id] && t->klen[id - 1] < STORE_ITAB_LOST) {
			t->klen[id - 1] = STORE_ITAB_LOST;
			t->live--;
			n++;
		}
	if (!n)
		return 0;
	compact_buf(t);
	return reindex(t, t->n) ?: (int)(n > INT32_MAX ? INT32_MAX : n);
}

int store_itab__release(struct store_itab *t, const uint32_t *ids, size_t n)
{
	if (t->npend)
		return -EBUSY;
	for (size_t i = 0; i < n; i++)
		if (ids[i] && ids[i] <= t->n && t->klen[ids[i] - 1] == STORE_ITAB_LOST)
			t->klen[ids[i] - 1] = STORE_ITAB_FREE;
	while (t->n && t->klen[t->n - 1] == STORE_ITAB_FREE)
		t->n--;
	shrink_arrays(t);
	store_itab__commit(t);
	int e = rebuild_free(t);

	/* the index is sized by n: rebuilt smaller once n has fallen to a quarter
	 * (if that fails, the larger one stays: still correct) */
	if (!e && t->nslots > 64 && t->nslots >= 8 * (t->n + 1))
		e = reindex(t, t->n);
	return e;
}

int store_itab__keep_lost(struct store_itab *t, const uint8_t *ref, size_t n_ref)
{
	int n = 0;

	for (size_t id = 1; id < n_ref; id++) {
		if (!ref[id] || store_itab__live(t, id))
			continue;
		while (t->n < id) { /* named past the last id: ids up to it are taken */
			if (room_for_id(t))
				return -ENOMEM;
			t->klen[t->n++] = STORE_ITAB_FREE;
		}
		if (t->klen[id - 1] == STORE_ITAB_FREE) {
			t->klen[id - 1] = STORE_ITAB_LOST;
			n++;
		}
	}
	store_itab__commit(t);
	return rebuild_free(t) ?: n;
}

size_t store_itab__bytes(const struct store_itab *t)
{
	return t->cap + t->cap_n * (sizeof(*t->off) + sizeof(*t->klen) + sizeof(*t->hashes)) +
	       t->nslots * sizeof(*t->slots) + t->cap_free * sizeof(*t->free) +
	       t->cap_pend * sizeof(*t->pend);
}
