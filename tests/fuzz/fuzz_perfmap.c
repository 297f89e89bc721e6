/*
 * libFuzzer target for the perf map reader (/tmp/perf-PID.map format): the input is
 * written as a map in a private directory, read in two steps (a prefix, then the
 * whole file, as a JIT appends) and looked up at a spread of addresses. Malformed lines
 * must be skipped and counted, never crash, leak or hang.
 */
#include "symbolize/symbolize.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64], map_path[96];

static void remove_dir(void)
{
	unlink(map_path);
	rmdir(dir);
}

static int write_map(const uint8_t *data, size_t size)
{
	FILE *f;
	size_t n;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/hearth-fuzz-pm-XXXXXX");
		if (!mkdtemp(dir))
			return -1;
		snprintf(map_path, sizeof(map_path), "%s/perf-77.map", dir);
		atexit(remove_dir);
	}
	if (!(f = fopen(map_path, "w")))
		return -1;
	n = fwrite(data, 1, size, f);
	return fclose(f) == 0 && n == size ? 0 : -1;
}

static void check(int err, const struct sym_result *r)
{
	if (err || !r || r->n > 1 || (r->n && !r->frames[0].name))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct sym_result *r = NULL;
	struct symbolizer *s;
	uint64_t a = 0;

	if (write_map(data, size / 2) != 0)
		return 0;
	s = symbolizer__new(&(struct sym_opts){.perfmap_dir = dir, .no_debuginfod = true});
	if (!s)
		return 0;
	check(symbolizer__resolve_jit(s, 77, 0x1000, &r), r);
	symbolizer__forget_pid(s, 77); /* the next call reads the whole file afresh */
	if (write_map(data, size) == 0) {
		if (size >= sizeof(a))
			memcpy(&a, data, sizeof(a));
		for (uint64_t i = 0; i < 16; i++)
			check(symbolizer__resolve_jit(s, 77, 0x1000 * i + a % 4096, &r), r);
		check(symbolizer__resolve_jit(s, 77, a, &r), r);
	}
	symbolizer__free(s);
	return 0;
}
