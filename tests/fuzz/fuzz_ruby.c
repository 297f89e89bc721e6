/*
 * libFuzzer target for ruby/rbiseq.c's decoders of bytes read from a CRuby
 * process: the input's first 40 bytes as a String and an Array object, the rest
 * as 3.1's succinct line index of an iseq (its size from the input's first bytes),
 * looked up at every instruction position and a few past it; and the input as a
 * version string. Whatever the input, decoding stays in bounds and ends; a string
 * is NUL-terminated within its buffer; an entry index is within the entries.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ruby/ruby_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[32];
	uint64_t heap, first, at;
	uint32_t iseq_size = 0;
	size_t entries, tl;

	if (size < 44)
		return 0;
	rb_decode_string(data, 40, out, sizeof(out), &heap);
	if (strnlen(out, sizeof(out)) >= sizeof(out))
		abort();
	rb_decode_array_first(data, 40, &first, &at);
	rb_parse_version((const char *)data, size);
	memcpy(&iseq_size, data + 40, 4);
	iseq_size %= 4096;
	entries = (size_t)(data[41] | (data[42] << 8)) % 2048;
	data += 44;
	size -= 44;
	tl = rb_succ_table_size(iseq_size);
	if (tl > size)
		tl = size;
	for (uint32_t pos = 0; pos < iseq_size + 8; pos++) {
		long e = rb_succ_entry(data, tl, entries, pos);

		if (e < -1 || (e >= 0 && (size_t)e >= entries))
			abort();
	}
	return 0;
}
