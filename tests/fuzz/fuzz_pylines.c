/*
 * libFuzzer target for python/pycode.c's line-table decoders: arbitrary bytes as a
 * 3.10 co_linetable (first byte even) or a 3.11+ location table (odd), decoded at
 * every instruction offset and a few outside it, and the rest as a file name for
 * py_frame_name. Whatever the input, decoding stays in bounds and ends; a line the
 * decoder gives is never below -1 for 3.10 tables, whose deltas cannot go below the
 * start when all are positive (checked on inputs without negative deltas).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python/python_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char file[64], name[PYTHON_NAME_MAX];
	bool is_310;
	size_t n;

	if (size < 1)
		return 0;
	is_310 = !(data[0] & 1);
	data++;
	size--;
	for (int64_t off = -4; off < (int64_t)(2 * size + 8); off += 2) {
		int64_t line =
		    is_310 ? py_line_310(data, size, 1, off) : py_line_311(data, size, 1, off);
		bool no_negative = true;

		for (size_t i = 1; is_310 && i < size; i += 2)
			no_negative = no_negative && (int8_t)data[i] >= 0;
		if (is_310 && no_negative && line < -1)
			abort();
	}
	n = size < sizeof(file) - 1 ? size : sizeof(file) - 1;
	memcpy(file, data, n);
	file[n] = '\0';
	py_frame_name(file, "f", name, sizeof(name));
	if (strlen(name) >= sizeof(name))
		abort();
	return 0;
}
