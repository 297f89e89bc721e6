/*
 * Unit tests of src/ruby/: the decoders of CRuby objects (strings, arrays, 3.1's
 * succinct line index, checked against a table built the way iseq.c builds it),
 * the version parser, and the probe on a live Debian ruby (skipped without one).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ruby/ruby_impl.h"
#include "unit.h"

/* iseq.c's succ_index_table_create for positions pos[0..n) (sorted, pos[0] = 0). */
static uint8_t *build_succ(const uint32_t *pos, size_t n, uint32_t max_pos, size_t *len)
{
	size_t imm = (max_pos < 54 ? max_pos + 8 : 54) / 9;
	size_t succ = (max_pos < 54 ? 0 : (max_pos - 54 + 511)) / 512;
	uint8_t *t;
	size_t r = 0;

	*len = imm * 8 + succ * 80;
	t = calloc(1, *len ? *len : 1);
	if (!t)
		return NULL;
	for (size_t j = 0; j < imm; j++) {
		uint64_t w = 0;

		for (size_t i = 0; i < 9; i++) {
			if (r < n && pos[r] == j * 9 + i)
				r++;
			w |= (uint64_t)r << (i * 7);
		}
		memcpy(t + 8 * j, &w, 8);
	}
	for (size_t k = 0; k < succ; k++) {
		uint8_t *b = t + imm * 8 + k * 80;
		uint32_t rank = (uint32_t)r;
		uint64_t ranks = 0, small = 0;

		memcpy(b, &rank, 4);
		for (size_t j = 0; j < 8; j++) {
			uint64_t bits = 0;

			if (j)
				ranks |= small << ((j - 1) * 9);
			for (size_t i = 0; i < 64; i++)
				if (r < n && pos[r] == k * 512 + j * 64 + i + 54) {
					bits |= 1ull << i;
					r++;
				}
			memcpy(b + 16 + 8 * j, &bits, 8);
			small += (uint64_t)__builtin_popcountll(bits);
		}
		memcpy(b + 8, &ranks, 8);
	}
	return t;
}

TEST(ruby_succ_index_matches_a_linear_search)
{
	uint32_t pos[700];
	uint8_t *t = NULL;
	size_t n = 0, len;
	uint32_t size = 1500;

	/* entries at irregular positions, dense at first, sparse later */
	for (uint32_t p = 0; p < size && n < 700; p += 1 + (p % 7) + (p > 600 ? p % 5 : 0))
		pos[n++] = p;
	t = build_succ(pos, n, size, &len);
	CHECK(t);
	CHECK(len == rb_succ_table_size(size));
	for (uint32_t p = 0; p < size; p++) {
		long want = -1;

		for (size_t i = 0; i < n && pos[i] <= p; i++)
			want = (long)i;
		CHECKF(rb_succ_entry(t, len, n, p) == want, "pos %u: got %ld, want %ld", p,
		       rb_succ_entry(t, len, n, p), want);
	}
	/* a table cut short: outside what was read is -1, not a read past it */
	CHECK(rb_succ_entry(t, 48, n, 1000) == -1);
	CHECK(rb_succ_entry(t, len, 1, 1000) == 0);
	CHECK(rb_succ_entry(t, len, 0, 0) == -1);
cleanup:
	free(t);
}

TEST(ruby_small_iseq_index)
{
	uint32_t pos[] = {0, 2, 5, 11, 12};
	uint8_t *t = NULL;
	size_t len;

	t = build_succ(pos, 5, 20, &len);
	CHECK(t);
	CHECK(len == rb_succ_table_size(20));
	CHECK(rb_succ_entry(t, len, 5, 0) == 0);
	CHECK(rb_succ_entry(t, len, 5, 1) == 0);
	CHECK(rb_succ_entry(t, len, 5, 4) == 1);
	CHECK(rb_succ_entry(t, len, 5, 11) == 3);
	CHECK(rb_succ_entry(t, len, 5, 19) == 4);
cleanup:
	free(t);
}

TEST(ruby_strings_and_arrays)
{
	uint8_t obj[40] = {0};
	uint64_t flags, heap, first, at, v;
	char out[16];

	/* embedded "hot_a": T_STRING, length 5 in bits 14-18 */
	flags = 0x05 | (5ull << 14);
	memcpy(obj, &flags, 8);
	memcpy(obj + 16, "hot_a", 5);
	CHECK(rb_decode_string(obj, sizeof(obj), out, sizeof(out), &heap) == 5);
	CHECK(heap == 0);
	CHECK(strcmp(out, "hot_a") == 0);
	/* an embedded length beyond the embedded room is refused */
	flags = 0x05 | (30ull << 14);
	memcpy(obj, &flags, 8);
	CHECK(rb_decode_string(obj, sizeof(obj), out, sizeof(out), &heap) == -1);
	/* heap string: NOEMBED (bit 13), len, ptr */
	flags = 0x05 | (1ull << 13);
	memcpy(obj, &flags, 8);
	v = 300;
	memcpy(obj + 16, &v, 8);
	v = 0x1234000;
	memcpy(obj + 24, &v, 8);
	CHECK(rb_decode_string(obj, sizeof(obj), out, sizeof(out), &heap) == 300);
	CHECK(heap == 0x1234000);
	/* not a string */
	flags = 0x07;
	memcpy(obj, &flags, 8);
	CHECK(rb_decode_string(obj, sizeof(obj), out, sizeof(out), &heap) == -1);
	/* embedded array of 2: first element inline */
	flags = 0x07 | (1ull << 13) | (2ull << 15);
	memcpy(obj, &flags, 8);
	v = 0xabc0;
	memcpy(obj + 16, &v, 8);
	CHECK(rb_decode_array_first(obj, sizeof(obj), &first, &at) == 0);
	CHECK(first == 0xabc0 && at == 0);
	/* heap array: len at 16, ptr at 32 */
	flags = 0x07;
	memcpy(obj, &flags, 8);
	v = 2;
	memcpy(obj + 16, &v, 8);
	v = 0x5550;
	memcpy(obj + 32, &v, 8);
	CHECK(rb_decode_array_first(obj, sizeof(obj), &first, &at) == 0);
	CHECK(at == 0x5550);
	/* empty embedded array */
	flags = 0x07 | (1ull << 13);
	memcpy(obj, &flags, 8);
	CHECK(rb_decode_array_first(obj, sizeof(obj), &first, &at) == -1);
cleanup:;
}

TEST(ruby_versions)
{
	struct rb_offsets o;

	CHECK(rb_parse_version("3.1.2", 5) == 0x030102);
	CHECK(rb_parse_version("3.1.2\0junk", 10) == 0x030102);
	CHECK(rb_parse_version("3.1", 3) == 0);
	CHECK(rb_parse_version("3..1", 4) == 0);
	CHECK(rb_parse_version("1000.1.1", 8) == 0);
	CHECK(rb_offsets_for_version(0x030102, &o) == 0 && o.cfp_size == 64);
	CHECK(rb_offsets_for_version(0x030207, &o) == -RUBY_E_UNSUPPORTED);
cleanup:;
}

/* The probe on a live ruby: libruby found, its TLS module id read, the
 * interpreter loop found and kilobytes long. */
TEST(ruby_probe_live)
{
	struct rb_target t;
	int fds[2] = {-1, -1}, err = -1;
	pid_t pid = -1;
	char c;

	if (access("/usr/bin/ruby", X_OK) != 0) {
		printf("  (no /usr/bin/ruby: skipped)\n");
		return;
	}
	CHECK(pipe(fds) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		execl("/usr/bin/ruby", "ruby", "-e", "STDOUT.sync = true; puts 1; sleep 30", NULL);
		_exit(127);
	}
	close(fds[1]);
	fds[1] = -1;
	CHECK(read(fds[0], &c, 1) == 1); /* ruby runs its script: libruby relocated */
	err = rb_probe_target((uint32_t)pid, &t);
	CHECKF(err == 0, "probe: %d", err);
	CHECKF((t.version & 0xffff00) == 0x030100, "version %#x", t.version);
	CHECK(t.tls_modid >= 1 && t.tls_modid < 64);
	CHECK(t.tls_offset < 4096);
	CHECKF(t.vm_start && t.vm_end - t.vm_start >= 4096, "vm_exec_core [%#llx, %#llx)",
	       (unsigned long long)t.vm_start, (unsigned long long)t.vm_end);
	CHECK(strstr(t.path, "libruby"));
	/* not a ruby */
	CHECK(rb_probe_target((uint32_t)getpid(), &t) == -RUBY_E_NOT_RUBY);
cleanup:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
}
