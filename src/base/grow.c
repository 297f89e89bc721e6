/*
 * Geometric array growth and the byte hash: the two helpers every module's
 * tables are built on (and the hex digit table the text parsers share). Growth checks each
 * multiplication for overflow, so a hostile count turns into -ENOMEM, never into a short buffer,
 * and stops at the caller's ceiling: the one realloc of growing arrays outside the store.
 */
#include "base.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int base_grow_max(void **arr, size_t *cap, size_t need, size_t elem, size_t max)
{
	size_t ncap = *cap ? *cap : BASE_GROW_MIN, bytes;
	void *n;

	if (need <= *cap)
		return 0;
	if (need > max)
		return -E2BIG;
	if (ncap > max) /* a ceiling under BASE_GROW_MIN */
		ncap = max;
	while (ncap < need) /* the last doubling stops at the ceiling */
		ncap = ncap > max / 2 ? max : ncap * 2;
	/* no object may pass PTRDIFF_MAX bytes (malloc refuses, pointer differences wrap) */
	if (__builtin_mul_overflow(ncap, elem, &bytes) || bytes > PTRDIFF_MAX)
		return -ENOMEM;
	n = realloc(*arr, bytes);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

int base_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	return base_grow_max(arr, cap, need, elem, SIZE_MAX);
}

int base_grow_zeroed(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t old = *cap;
	int err = base_grow(arr, cap, need, elem);

	if (!err && *cap > old)
		memset((char *)*arr + old * elem, 0, (*cap - old) * elem);
	return err;
}

uint64_t base_hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t w;

	h ^= n * 0xff51afd7ed558ccdull;
	while (n >= 8) {
		memcpy(&w, b, 8);
		h = (h ^ (w * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
		h ^= h >> 29;
		b += 8;
		n -= 8;
	}
	w = 0;
	memcpy(&w, b, n);
	return base_hash_u64(h, w);
}

const unsigned char base_hex_table[256] = {
    ['0'] = 1,	['1'] = 2,  ['2'] = 3,	['3'] = 4,  ['4'] = 5,	['5'] = 6,  ['6'] = 7,	['7'] = 8,
    ['8'] = 9,	['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};
