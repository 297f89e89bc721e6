/*
 * rbiseq: the per-version offsets of CRuby and the decoders of the interpreter
 * objects hearth reads from a process (strings, arrays, the line index of an
 * iseq). The decoders take bytes already read and bound every length and index
 * by what was read: the bytes come from another process (fuzzed by
 * tests/fuzz/fuzz_ruby.c).
 *
 * Layouts (x86-64, from vm_core.h, iseq.h, iseq.c and include/ruby/internal/core/
 * of each version; checked against a live Debian 3.1.2 process, docs/ruby.md).
 * Debian ships no debug info for libruby in its main archive, so the offsets are
 * this table's, and the probe checks them on live data before use.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ruby/ruby_impl.h"

#define T_MASK	   0x1f
#define T_STRING   0x05
#define T_ARRAY	   0x07
#define FL_USER(n) (1ull << (12 + (n)))

#define RSTRING_NOEMBED		FL_USER(1)
#define RSTRING_EMBED_LEN_SHIFT 14
#define RSTRING_EMBED_LEN_MASK	0x1f
#define RSTRING_EMBED_MAX	23
#define RARRAY_EMBED		FL_USER(1)
#define RARRAY_EMBED_LEN_SHIFT	15
#define RARRAY_EMBED_LEN_MASK	0x3

/* 3.1's succinct index table (iseq.c) */
#define SUCC_IMM_SIZE	54 /* IMMEDIATE_TABLE_SIZE */
#define SUCC_IMM_WORDS	(SUCC_IMM_SIZE / 9)
#define SUCC_BLOCK_BITS 512
#define SUCC_BLOCK_SIZE 80 /* {unsigned rank; uint64_t small_block_ranks; uint64_t bits[8];} */

static const struct rb_offsets offsets_31 = {
    .version = 0x030100,
    .ec_vm_stack = 0,
    .ec_vm_stack_size = 8,
    .ec_cfp = 16,
    .cfp_size = 64, /* pc sp iseq self ep block_code __bp__ jit_return */
    .cfp_pc = 0,
    .cfp_iseq = 16,
    .cfp_ep = 32,
    .iseq_body = 16,
    .body_iseq_size = 4,
    .body_iseq_encoded = 8,
    .body_pathobj = 64,
    .body_label = 80,
    .body_first_lineno = 88,
    .body_insns_body = 120,
    .body_insns_size = 136,
    .body_succ_table = 144,
    .body_type = 0,
    .body_parent_iseq = 168, /* after local_table, catch_table */
    .insn_entry_size = 12,   /* line_no, node_id, events */
    .me_def = 16,	     /* flags defined_class def called_id owner */
    .me_owner = 32,
    .def_iseq = 8,   /* after the bit fields: body.iseq.iseqptr */
    .klass_ext = 24, /* RBasic, super, ptr */
    .ext_iv_tbl = 8, /* iv_index_tbl, iv_tbl */
    .st_entries_start = 32,
    .st_entries_bound = 40,
    .st_entries = 48,
};

int rb_offsets_for_version(uint32_t version, struct rb_offsets *out)
{
	if ((version & 0xffff00) != 0x030100)
		return -RUBY_E_UNSUPPORTED;
	*out = offsets_31;
	out->version = version;
	return 0;
}

uint32_t rb_parse_version(const char *s, size_t len)
{
	unsigned v[3] = {0, 0, 0};
	size_t i = 0;
	int part = 0, digits = 0;

	for (; i < len && s[i]; i++) {
		if (s[i] >= '0' && s[i] <= '9') {
			if (++digits > 3)
				return 0;
			v[part] = v[part] * 10 + (unsigned)(s[i] - '0');
		} else if (s[i] == '.' && digits && part < 2) {
			part++;
			digits = 0;
		} else {
			break;
		}
	}
	if (part != 2 || !digits || v[0] > 255 || v[1] > 255 || v[2] > 255)
		return 0;
	return v[0] << 16 | v[1] << 8 | v[2];
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

long rb_decode_string(const uint8_t *obj, size_t obj_len, char *out, size_t out_len,
		      uint64_t *heap_ptr)
{
	uint64_t flags, n;

	*heap_ptr = 0;
	if (out_len)
		out[0] = 0;
	if (obj_len < 40)
		return -1;
	flags = le64(obj);
	if ((flags & T_MASK) != T_STRING)
		return -1;
	if (flags & RSTRING_NOEMBED) {
		n = le64(obj + 16);
		if (n > RB_READ_MAX)
			return -1;
		*heap_ptr = le64(obj + 24);
		return (long)n;
	}
	n = (flags >> RSTRING_EMBED_LEN_SHIFT) & RSTRING_EMBED_LEN_MASK;
	if (n > RSTRING_EMBED_MAX || 16 + n > obj_len)
		return -1;
	if (out_len) {
		size_t k = n < out_len - 1 ? n : out_len - 1;

		memcpy(out, obj + 16, k);
		out[k] = 0;
	}
	return (long)n;
}

int rb_decode_array_first(const uint8_t *obj, size_t obj_len, uint64_t *first, uint64_t *at)
{
	uint64_t flags;

	*first = 0;
	*at = 0;
	if (obj_len < 40)
		return -1;
	flags = le64(obj);
	if ((flags & T_MASK) != T_ARRAY)
		return -1;
	if (flags & RARRAY_EMBED) {
		if (!((flags >> RARRAY_EMBED_LEN_SHIFT) & RARRAY_EMBED_LEN_MASK))
			return -1;
		*first = le64(obj + 16);
		return 0;
	}
	if (!le64(obj + 16) || !le64(obj + 32))
		return -1;
	*at = le64(obj + 32);
	return 0;
}

size_t rb_succ_table_size(uint32_t iseq_size)
{
	size_t imm, succ;

	if (iseq_size < SUCC_IMM_SIZE) {
		imm = ((size_t)iseq_size + 8) / 9;
		succ = 0;
	} else {
		imm = SUCC_IMM_WORDS;
		succ = ((size_t)iseq_size - SUCC_IMM_SIZE + 511) / SUCC_BLOCK_BITS;
	}
	return imm * 8 + succ * SUCC_BLOCK_SIZE;
}

long rb_succ_entry(const uint8_t *table, size_t table_len, size_t n_entries, uint32_t pos)
{
	long rank;

	if (n_entries == 0)
		return -1;
	if (n_entries == 1)
		return 0;
	if (pos < SUCC_IMM_SIZE) {
		size_t w = pos / 9;

		if ((w + 1) * 8 > table_len)
			return -1;
		rank = (long)((le64(table + 8 * w) >> ((pos % 9) * 7)) & 0x7f);
	} else {
		size_t b = (pos - SUCC_IMM_SIZE) / SUCC_BLOCK_BITS;
		unsigned bit = (pos - SUCC_IMM_SIZE) % SUCC_BLOCK_BITS, small = bit / 64;
		size_t at = SUCC_IMM_WORDS * 8 + b * SUCC_BLOCK_SIZE;
		uint32_t brank;
		uint64_t ranks, bits;
		long small_rank;

		if (at + SUCC_BLOCK_SIZE > table_len)
			return -1;
		memcpy(&brank, table + at, 4);
		ranks = le64(table + at + 8);
		bits = le64(table + at + 16 + 8 * small);
		small_rank = small == 0 ? 0 : (long)((ranks >> ((small - 1) * 9)) & 0x1ff);
		rank = (long)brank + small_rank + __builtin_popcountll(bits << (63 - bit % 64));
	}
	if (rank < 1 || (size_t)rank > n_entries)
		return -1;
	return rank - 1;
}
