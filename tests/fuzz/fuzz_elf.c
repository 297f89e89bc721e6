/*
 * libFuzzer target for the ELF and DWARF readers (and, with the same bytes, the kallsyms
 * reader): the input is written to a temporary file, opened as an object by a fresh
 * symbolizer (no debug directories, no debuginfod: only the input is read) and a spread
 * of file offsets and ELF virtual addresses is resolved, through DWARF when the input
 * has any (seed: tests/fuzz/corpus/fuzz_elf, a small -O2 -g program with inlines). Corrupt input must resolve nothing or
 * something, never crash, leak, hang or allocate what the file does not hold.
 */
#include "symbolize/symbolize.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp_path[64];
static int tmp_fd = -1;

static void remove_tmp(void)
{
	unlink(tmp_path);
}

/* One file for the whole run, rewritten per input. */
static int write_input(const uint8_t *data, size_t size)
{
	if (tmp_fd < 0) {
		snprintf(tmp_path, sizeof(tmp_path), "/tmp/hearth-fuzz-elf-XXXXXX");
		tmp_fd = mkstemp(tmp_path);
		if (tmp_fd < 0)
			return -1;
		atexit(remove_tmp);
	}
	if (ftruncate(tmp_fd, 0) != 0)
		return -1;
	return pwrite(tmp_fd, data, size, 0) == (ssize_t)size ? 0 : -1;
}

/* Checks what every answer promises: a result, and names for each frame. */
static void check(int err, const struct sym_result *r)
{
	if (err == 0 && (!r || r->n > SYM_MAX_FRAMES))
		__builtin_trap();
	for (size_t i = 0; err == 0 && i < r->n; i++)
		if (!r->frames[i].name || !r->frames[i].system_name)
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_opts opts = { .kallsyms_path = tmp_path,
				 .debug_root = "/nonexistent",
				 .no_debuginfod = true,
				 .cache_bytes = 1 << 20 };
	const struct sym_result *r = NULL;
	struct symbolizer *s;
	struct sym_object *o;
	uint64_t off = 0;

	if (write_input(data, size) != 0)
		return 0;
	s = symbolizer__new(&opts);
	if (!s)
		return 0;
	o = symbolizer__object(s, tmp_path, "fuzz", 0, 0);
	if (!o)
		__builtin_trap();
	if (size >= sizeof(off))
		memcpy(&off, data + size - sizeof(off), sizeof(off));
	for (uint64_t i = 0; i <= 16; i++)
		check(symbolizer__resolve(s, o, i * (size / 16 + 1), &r), r);
	check(symbolizer__resolve(s, o, off, &r), r);
	check(symbolizer__resolve(s, o, off, &r), r); /* from the cache */
	for (uint64_t i = 0; i < 16; i++) /* typical text addresses of small programs */
		check(symbolizer__resolve_vaddr(s, o, 0x1000 + i * 0x40 + off % 64, &r), r);
	check(symbolizer__resolve_vaddr(s, o, off, &r), r);
	check(symbolizer__resolve_kernel(s, off, &r), r);
	check(symbolizer__resolve_kernel(s, 0xffffffff81000000ULL + off % 4096, &r), r);
	symbolizer__free(s);
	return 0;
}
