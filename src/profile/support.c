/*
 * Building blocks of the profile module: geometric growth with overflow checks,
 * FNV-1a hashing, an open-addressing hash index over the caller's arrays, the
 * string interner (a pprof string table), a bump arena and a growing string.
 *
 * The hash index stores (hash, element index) pairs, never keys: the arrays it
 * indexes own the data, so the same index type serves strings, mappings,
 * functions, locations and samples.
 */
#include "profile_impl.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

/* Smallest table; load is kept under 3/4 so a probe always ends at an empty slot. */
#define HIDX_MIN_CAP	16
#define ARENA_BLOCK	65536
#define ARENA_BLOCK_MAX (1u << 20)
#define SBUF_MIN	256

int profile_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 8, bytes;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (__builtin_mul_overflow(ncap, 2, &ncap))
			return -ENOMEM;
	}
	if (__builtin_mul_overflow(ncap, elem, &bytes))
		return -ENOMEM;
	n = realloc(*arr, bytes);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

uint64_t profile_hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 0x100000001b3ull; /* FNV-1a 64-bit prime */
	}
	return h;
}

uint64_t profile_hash_u64(uint64_t h, uint64_t v)
{
	/* splitmix64 finaliser of (h ^ v): every input bit reaches every output bit */
	uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- hash index ---- */

size_t profile_hidx__find(const struct profile_hidx *h, uint64_t hash, profile_eq_fn eq,
			  const void *ctx, const void *key)
{
	if (!h->cap)
		return SIZE_MAX;
	for (size_t i = hash & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
		const struct profile_hslot *s = &h->slots[i];

		if (!s->idx1)
			return SIZE_MAX;
		if (s->hash == hash && eq(ctx, s->idx1 - 1, key))
			return s->idx1 - 1;
	}
}

static void hidx_place(struct profile_hslot *slots, size_t cap, uint64_t hash, size_t idx1)
{
	size_t i = hash & (cap - 1);

	while (slots[i].idx1)
		i = (i + 1) & (cap - 1);
	slots[i].hash = hash;
	slots[i].idx1 = idx1;
}

static int hidx_rehash(struct profile_hidx *h)
{
	size_t ncap = h->cap ? h->cap : HIDX_MIN_CAP / 2;
	struct profile_hslot *ns;

	if (__builtin_mul_overflow(ncap, 2, &ncap))
		return -ENOMEM;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap; i++)
		if (h->slots[i].idx1)
			hidx_place(ns, ncap, h->slots[i].hash, h->slots[i].idx1);
	free(h->slots);
	h->slots = ns;
	h->cap = ncap;
	return 0;
}

int profile_hidx__insert(struct profile_hidx *h, uint64_t hash, size_t idx)
{
	int err;

	if ((h->n + 1) * 4 > h->cap * 3) {
		err = hidx_rehash(h);
		if (err)
			return err;
	}
	hidx_place(h->slots, h->cap, hash, idx + 1);
	h->n++;
	return 0;
}

void profile_hidx__fini(struct profile_hidx *h)
{
	free(h->slots);
	memset(h, 0, sizeof(*h));
}

/* ---- string interner ---- */

static bool str_eq(const void *ctx, size_t idx, const void *key)
{
	const struct profile_strtab *st = ctx;

	return strcmp(st->strs[idx], key) == 0;
}

static uint64_t str_hash(const char *s)
{
	return profile_hash_bytes(PROFILE_HASH_SEED, s, strlen(s));
}

int profile_strtab__init(struct profile_strtab *st)
{
	memset(st, 0, sizeof(*st));
	return profile_strtab__intern(st, "") == 0 ? 0 : -ENOMEM;
}

void profile_strtab__fini(struct profile_strtab *st)
{
	profile_arena__fini(&st->arena);
	free(st->strs);
	profile_hidx__fini(&st->idx);
	memset(st, 0, sizeof(*st));
}

int64_t profile_strtab__find(const struct profile_strtab *st, const char *s)
{
	size_t i = profile_hidx__find(&st->idx, str_hash(s ? s : ""), str_eq, st, s ? s : "");

	return i == SIZE_MAX ? -ENOENT : (int64_t)i;
}

int64_t profile_strtab__intern(struct profile_strtab *st, const char *s)
{
	uint64_t hash;
	size_t i;
	char *copy;

	s = s ? s : "";
	hash = str_hash(s);
	i = profile_hidx__find(&st->idx, hash, str_eq, st, s);
	if (i != SIZE_MAX)
		return (int64_t)i;
	if (profile_grow((void **)&st->strs, &st->cap, st->n + 1, sizeof(*st->strs)))
		return -ENOMEM;
	copy = profile_arena__copy(&st->arena, s, strlen(s) + 1, 1);
	if (!copy || profile_hidx__insert(&st->idx, hash, st->n))
		return -ENOMEM; /* the copy's arena memory goes with the table */
	st->strs[st->n] = copy;
	return (int64_t)st->n++;
}

/* ---- arena ---- */

struct profile_arena_block {
	struct profile_arena_block *next;
	size_t used, size;
	alignas(max_align_t) unsigned char data[];
};

/* n * size bytes of the arena, not zeroed; *bytes gets the size. NULL on ENOMEM. */
static void *arena_take(struct profile_arena *a, size_t n, size_t size, size_t *bytes)
{
	struct profile_arena_block *b = a->head;
	size_t want;

	if (__builtin_mul_overflow(n, size, bytes) || *bytes > SIZE_MAX / 4)
		return NULL;
	*bytes = (*bytes + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
	if (!b || b->size - b->used < *bytes) {
		/* blocks double up to ARENA_BLOCK_MAX: a profile of 2 million frames takes
		 * ~30 blocks, not 260 (each one a malloc, a brk or mmap, and a free) */
		want = b ? (b->size < ARENA_BLOCK_MAX ? b->size * 2 : b->size) : ARENA_BLOCK;
		want = *bytes > want ? *bytes : want;
		b = malloc(sizeof(*b) + want);
		if (!b)
			return NULL;
		b->size = want;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	b->used += *bytes;
	return b->data + b->used - *bytes;
}

void *profile_arena__alloc(struct profile_arena *a, size_t n, size_t size)
{
	size_t bytes;
	void *p = arena_take(a, n, size, &bytes);

	return p ? memset(p, 0, bytes) : NULL;
}

void *profile_arena__copy(struct profile_arena *a, const void *src, size_t n, size_t size)
{
	size_t bytes;
	void *p = arena_take(a, n, size, &bytes);

	return p ? memcpy(p, src, n * size) : NULL;
}

void *profile_arena__room(struct profile_arena *a, size_t n, size_t size)
{
	size_t bytes;
	void *p = arena_take(a, n, size, &bytes);

	if (p)
		a->head->used -= bytes;
	return p;
}

void *profile_arena__take(struct profile_arena *a, size_t n, size_t size)
{
	size_t bytes;

	return arena_take(a, n, size, &bytes);
}

void profile_arena__fini(struct profile_arena *a)
{
	while (a->head) {
		struct profile_arena_block *next = a->head->next;

		free(a->head);
		a->head = next;
	}
}

/* ---- growing string ---- */

static bool sbuf_reserve(struct profile_sbuf *b, size_t extra)
{
	size_t need;

	if (b->err)
		return false;
	if (__builtin_add_overflow(b->len, extra + 1, &need) ||
	    profile_grow((void **)&b->s, &b->cap, need < SBUF_MIN ? SBUF_MIN : need, 1)) {
		b->err = -ENOMEM;
		return false;
	}
	return true;
}

void profile_sbuf__append(struct profile_sbuf *b, const char *s, size_t n)
{
	if (!sbuf_reserve(b, n))
		return;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void profile_sbuf__puts(struct profile_sbuf *b, const char *s)
{
	profile_sbuf__append(b, s, strlen(s));
}

void profile_sbuf__printf(struct profile_sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = b->err ? b->err : -EINVAL;
		return;
	}
	if (!sbuf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void profile_sbuf__fini(struct profile_sbuf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}
