/*
 * libFuzzer target for unwind/cfi.c: arbitrary bytes as an .eh_frame (first
 * byte even) or .debug_frame (odd) section. Whatever the input, parsing stays
 * in bounds, and the finished rows are sorted by pc with valid rule kinds.
 */
#include <stdint.h>
#include <stdlib.h>

#include "unwind/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_rows r = {0};
	bool is_eh;

	if (size < 1)
		return 0;
	is_eh = !(data[0] & 1);
	cfi_parse(data + 1, size - 1, 0x10000, is_eh, &r);
	cfi_rows__finish(&r);
	for (size_t i = 0; i < r.n; i++) {
		if ((i && r.rows[i - 1].pc >= r.rows[i].pc) ||
		    r.rows[i].cfa_kind > HEARTH_CFA_SIGNAL ||
		    r.rows[i].rbp_kind > HEARTH_RBP_UNKNOWN)
			abort();
	}
	cfi_rows__fini(&r);
	return 0;
}
