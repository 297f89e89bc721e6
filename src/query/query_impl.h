/*
 * Private to src/query/: a hash map of (u64, u64) keys to dense indexes, shared
 * by the merge (series, stack), the flame tree (parent, name) and the name
 * interner (two independent 64-bit hashes of the name).
 */
#ifndef HEARTH_QUERY_IMPL_H
#define HEARTH_QUERY_IMPL_H

#include "query.h"

#include <stdint.h>

struct query_map {
	struct query_map_slot {
		uint64_t a, b;
		size_t idx1; /* index + 1; 0 = empty */
	} * slots;
	size_t cap, n; /* cap: power of two or 0 */
};

/* Index of key (a, b), or, when absent, records it as index `next` and sets
 * *added. 0 or -ENOMEM. */
int query_map__get(struct query_map *m, uint64_t a, uint64_t b, size_t next, size_t *idx,
		   bool *added);
void query_map__fini(struct query_map *m);

/* Grows *arr to hold need elements of elem bytes (doubling). 0 or -ENOMEM. */
int query_grow(void **arr, size_t *cap, size_t need, size_t elem);

/* a + b clamped to [INT64_MIN, INT64_MAX]: every sum of sample values in the
 * merge, tree, top and timeline saturates (a crafted profile may hold
 * INT64_MAX samples) instead of wrapping, which UBSan would abort on. */
static inline int64_t query_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* Writes one message into err (may be NULL); returns code. */
int query_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* HEARTH_QUERY_IMPL_H */
