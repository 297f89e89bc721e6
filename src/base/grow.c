/*
 * Geometric array growth and the byte hash: the two helpers every module's
 * tables are built on. Growth checks each multiplication for overflow, so a
 * hostile count turns into -ENOMEM, never into a short buffer.
 */
#include "base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int base_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : BASE_GROW_MIN, bytes;
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
