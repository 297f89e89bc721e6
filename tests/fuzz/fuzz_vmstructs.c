/*
 * libFuzzer target for java/jvmstructs.c: arbitrary bytes as a JVM's memory.
 * The input is mapped at BASE; the gHotSpot* variables are its first JS_MAX
 * words (the table pointers and the entry layouts), everything they point to is
 * wherever the input says, reads outside it fail. Whatever the input, parsing
 * stays in bounds, ends, and reports in its result code. The same bytes then go
 * through the line number table and scope descriptor decoders.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "java/java_impl.h"

#define BASE 0x100000ull /* as tests/unit/test_java.c, whose image seeds the corpus */

struct mem {
	const uint8_t *p;
	size_t n;
};

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct mem *m = ctx;

	if (addr < BASE || addr - BASE > m->n || len > m->n - (addr - BASE))
		return -EIO;
	memcpy(buf, m->p + (addr - BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = {data, size};
	struct jvm_reader r = {rd, &m};
	uint64_t syms[JS_MAX], methods[8];
	int64_t bcis[8];
	struct jvm_layout L;
	int err, n;

	for (int i = 0; i < JS_MAX; i++)
		syms[i] = BASE + 8 * (uint64_t)i;
	err = jvm_parse_vmstructs(&r, syms, &L);
	if (err != 0 && err != -ENOENT && err != -EIO && err != -EINVAL)
		abort();
	for (int64_t bci = -1; bci < 64; bci += 7)
		(void)jvm_line_for_bci(data, size, bci);
	for (int64_t pc = -1; pc < 128; pc += 13) {
		n = jvm_scopes_at(data, size, 16, 0, 4, data, size, data, size, pc, pc & 1, methods,
				  bcis, 8);
		if (n < 0 || n > 8)
			abort();
	}
	return 0;
}
