/*
 * The one protobuf wire reader (protobuf.dev/programming-guides/encoding): tags,
 * varints, fixed-width values, length-delimited fields and packed repeated
 * scalars, for every decoder that reads protobuf by hand (pprof's profile.proto,
 * OTLP's profiles). Its input comes from outside: every read is checked against
 * the end of its enclosing message, and a length never reaches past it. What a
 * field means, and the limits on how much a message may hold, are the decoders'.
 */
#include "base.h"


int base_pb__fixed64(struct base_pb *b, uint64_t *v)
{
	if (b->end - b->p < 8)
		return -EINVAL;
	*v = 0;
	for (int i = 7; i >= 0; i--)
		*v = *v << 8 | b->p[i];
	b->p += 8;
	return 0;
}

int base_pb__fixed32(struct base_pb *b, uint32_t *v)
{
	if (b->end - b->p < 4)
		return -EINVAL;
	*v = (uint32_t)b->p[0] | (uint32_t)b->p[1] << 8 | (uint32_t)b->p[2] << 16 |
	     (uint32_t)b->p[3] << 24;
	b->p += 4;
	return 0;
}

int base_pb__skip(struct base_pb *b, unsigned wt)
{
	struct base_pb sub;
	uint64_t v;
	uint32_t v32;

	switch (wt) {
	case BASE_PB_VARINT:
		return base_pb__varint(b, &v);
	case BASE_PB_I64:
		return base_pb__fixed64(b, &v);
	case BASE_PB_LEN:
		return base_pb__len(b, &sub);
	case BASE_PB_I32:
		return base_pb__fixed32(b, &v32);
	default: /* groups (3, 4): deprecated, and in no message hearth reads */
		return -EINVAL;
	}
}

int base_pb__repeated(struct base_pb *b, unsigned wt, unsigned elem_wt, struct base_pb *vals,
		      size_t *n)
{
	size_t size = elem_wt == BASE_PB_I64 ? 8 : 4, len;
	const uint8_t *start = b->p;

	*n = 0;
	if (wt == elem_wt) { /* one element, not packed */
		if (base_pb__skip(b, wt))
			return -EINVAL;
		vals->p = start;
		vals->end = b->p;
		*n = 1;
		return 0;
	}
	if (wt != BASE_PB_LEN)
		return -EPROTO;
	if (base_pb__len(b, vals))
		return -EINVAL;
	len = (size_t)(vals->end - vals->p);
	if (elem_wt == BASE_PB_VARINT) {
		/* a trailing unfinished varint is not an element */
		if (len && (vals->end[-1] & 0x80))
			return -EINVAL;
		*n = base_varint_count(vals->p, vals->end);
		return 0;
	}
	if (len % size)
		return -EINVAL;
	*n = len / size;
	return 0;
}
