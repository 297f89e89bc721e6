/*
 * The bump arena (many small blocks freed at once: an encoder run, a profile's
 * records, a string table), the growing string and the string interner.
 * Arena blocks double up to 1 MiB, so a large profile costs tens of mallocs,
 * not hundreds.
 */
#include "base.h"

#include <errno.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK	65536
#define ARENA_BLOCK_MAX (1u << 20)
#define SBUF_MIN	256
/* ---- arena ---- */

struct base_arena_block {
	struct base_arena_block *next;
	size_t used, size;
	alignas(max_align_t) unsigned char data[];
};

/* n * size bytes of the arena, not zeroed; *bytes gets the size. NULL on ENOMEM. */
static void *arena_take(struct base_arena *a, size_t n, size_t size, size_t *bytes)
{
	struct base_arena_block *b = a->head;
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

void *base_arena__alloc(struct base_arena *a, size_t n, size_t size)
{
	size_t bytes;
	void *p = arena_take(a, n, size, &bytes);

	return p ? memset(p, 0, bytes) : NULL;
}

void *base_arena__copy(struct base_arena *a, const void *src, size_t n, size_t size)
{
	size_t bytes;
	void *p = arena_take(a, n, size, &bytes);

	if (p && bytes)
		memcpy(p, src, n * size);
	return p;
}

void *base_arena__room(struct base_arena *a, size_t n, size_t size)
{
	size_t bytes;
	void *p = arena_take(a, n, size, &bytes);

	if (p)
		a->head->used -= bytes;
	return p;
}

void *base_arena__take(struct base_arena *a, size_t n, size_t size)
{
	size_t bytes;

	return arena_take(a, n, size, &bytes);
}

size_t base_arena__bytes(const struct base_arena *a)
{
	size_t n = 0;

	for (const struct base_arena_block *b = a->head; b; b = b->next)
		n += sizeof(*b) + b->size;
	return n;
}

void base_arena__fini(struct base_arena *a)
{
	while (a->head) {
		struct base_arena_block *next = a->head->next;

		free(a->head);
		a->head = next;
	}
}

/* ---- growing string ---- */

static bool sbuf_reserve(struct base_sbuf *b, size_t extra)
{
	size_t need;

	if (b->err)
		return false;
	if (__builtin_add_overflow(b->len, extra + 1, &need) ||
	    base_grow((void **)&b->s, &b->cap, need < SBUF_MIN ? SBUF_MIN : need, 1)) {
		b->err = -ENOMEM;
		return false;
	}
	return true;
}

void base_sbuf__append(struct base_sbuf *b, const char *s, size_t n)
{
	if (!sbuf_reserve(b, n))
		return;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void base_sbuf__puts(struct base_sbuf *b, const char *s)
{
	base_sbuf__append(b, s, strlen(s));
}

void base_sbuf__printf(struct base_sbuf *b, const char *fmt, ...)
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

void base_sbuf__fini(struct base_sbuf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}

/* ---- string interner ---- */

static bool str_eq(const void *ctx, size_t idx, const void *key)
{
	const struct base_strtab *st = ctx;

	return strcmp(st->strs[idx], key) == 0;
}

static uint64_t str_hash(const char *s)
{
	return base_hash_bytes(BASE_HASH_SEED, s, strlen(s));
}

int base_strtab__init(struct base_strtab *st)
{
	memset(st, 0, sizeof(*st));
	return base_strtab__intern(st, "") == 0 ? 0 : -ENOMEM;
}

void base_strtab__fini(struct base_strtab *st)
{
	base_arena__fini(&st->arena);
	free(st->strs);
	base_hmap__fini(&st->idx);
	memset(st, 0, sizeof(*st));
}

int64_t base_strtab__find(const struct base_strtab *st, const char *s)
{
	size_t i = base_hmap__find(&st->idx, str_hash(s ? s : ""), str_eq, st, s ? s : "");

	return i == SIZE_MAX ? -ENOENT : (int64_t)i;
}

int64_t base_strtab__intern(struct base_strtab *st, const char *s)
{
	uint64_t hash;
	size_t i;
	char *copy;

	s = s ? s : "";
	hash = str_hash(s);
	i = base_hmap__find(&st->idx, hash, str_eq, st, s);
	if (i != SIZE_MAX)
		return (int64_t)i;
	if (base_grow((void **)&st->strs, &st->cap, st->n + 1, sizeof(*st->strs)))
		return -ENOMEM;
	copy = base_arena__copy(&st->arena, s, strlen(s) + 1, 1);
	if (!copy || base_hmap__insert(&st->idx, hash, st->n))
		return -ENOMEM; /* the copy's arena memory goes with the table */
	st->strs[st->n] = copy;
	return (int64_t)st->n++;
}
