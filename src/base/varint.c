/*
 * Base-128 integers off untrusted bytes: counting protobuf varints ahead of a
 * packed field, and DWARF's LEB128 (DWARF 5 §7.6), which has the same 7-bit groups
 * but no length limit (producers may pad) and a sign-extended signed form. The
 * bounded protobuf varint itself is inline in base.h (the decoders' hot path).
 */
#include "base.h"

#include <string.h>

size_t base_varint_count(const uint8_t *p, const uint8_t *end)
{
	size_t n = 0;
	uint64_t w;

	for (; end - p >= 8; p += 8) {
		memcpy(&w, p, 8);
		n += (size_t)__builtin_popcountll(~w & 0x8080808080808080ull);
	}
	for (; p < end; p++)
		n += !(*p & 0x80);
	return n;
}

/* The groups of one LEB128 into *out (bits past 64 dropped); *shift the bits read,
 * *last its last byte. 0 or -EINVAL when [*p, end) ends inside it. */
static int leb128_get(const uint8_t **p, const uint8_t *end, uint64_t *out, unsigned *shift,
		      uint8_t *last)
{
	const uint8_t *q = *p;
	uint64_t v = 0;
	uint8_t b;

	*shift = 0;
	do {
		if (q >= end)
			return -EINVAL;
		b = *q++;
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += *shift < 64 ? 7 : 0; /* past 64 bits: only the length matters */
	} while (b & 0x80);
	*p = q;
	*out = v;
	*last = b;
	return 0;
}

int base_uleb128_get(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	unsigned shift;
	uint8_t last;

	return leb128_get(p, end, out, &shift, &last);
}

int base_sleb128_get(const uint8_t **p, const uint8_t *end, int64_t *out)
{
	unsigned shift;
	uint8_t last;
	uint64_t v;
	int err = leb128_get(p, end, &v, &shift, &last);

	if (err)
		return err;
	if (shift < 64 && (last & 0x40)) /* the sign bit is the last group's 0x40 */
		v |= ~0ull << shift;
	*out = (int64_t)v;
	return 0;
}
