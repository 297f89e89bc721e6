/*
 * ruby internals: recognising a CRuby process (rbprobe.c), the per-version offsets
 * and the readers of interpreter objects (rbiseq.c), each usable alone by tests and
 * the fuzz target.
 */
#ifndef HEARTH_RUBY_IMPL_H
#define HEARTH_RUBY_IMPL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruby/ruby.h"

#define RUBY_E_NOT_RUBY	   4401 /* no libruby mapped */
#define RUBY_E_UNSUPPORTED 4402 /* CRuby of a version without offsets here */
#define RUBY_E_NOT_READY   4403 /* libruby not relocated yet (module id 0) */

#define RB_READ_MAX (256 * 1024) /* bounds every read of a process */

/* Offsets (bytes) of one CRuby minor version, x86-64. */
struct rb_offsets {
	uint32_t version;
	/* rb_execution_context_t, rb_control_frame_t: the BPF walk's */
	uint16_t ec_vm_stack, ec_vm_stack_size, ec_cfp, cfp_size, cfp_pc, cfp_iseq, cfp_ep;
	/* rb_iseq_t, rb_iseq_constant_body */
	uint16_t iseq_body, body_iseq_size, body_iseq_encoded, body_pathobj, body_label,
	    body_first_lineno, body_insns_body, body_insns_size, body_succ_table;
	uint16_t insn_entry_size; /* sizeof(struct iseq_insn_info_entry); line_no first */
	uint16_t body_type, body_parent_iseq; /* enum iseq_type; a block's enclosing iseq */
	/* rb_callable_method_entry_t, rb_method_definition_t (iseq methods) */
	uint16_t me_def, me_owner, def_iseq;
	/* a class's ivars: RClass.ptr -> rb_classext_t.iv_tbl, an st_table */
	uint16_t klass_ext, ext_iv_tbl, st_entries_start, st_entries_bound, st_entries;
};

/* The table for version (major << 16 | minor << 8 | teeny). 0 or -RUBY_E_UNSUPPORTED. */
int rb_offsets_for_version(uint32_t version, struct rb_offsets *out);

struct rb_target {
	uint32_t pid;
	uint32_t version;
	uint64_t tls_modid, tls_offset;
	uint64_t vm_start, vm_end; /* vm_exec_core, runtime addresses; 0 if not found */
	uint64_t object_var;	   /* address of rb_cObject (a VALUE), 0 if not exported */
	char path[PATH_MAX];
	bool loading;
};

int rb_read(uint32_t pid, uint64_t addr, void *buf, size_t len);
/* Finds libruby in pid and what the walk needs of it. 0, -ESRCH, -RUBY_E_NOT_RUBY,
 * -RUBY_E_UNSUPPORTED, -RUBY_E_NOT_READY, -errno. */
int rb_probe_target(uint32_t pid, struct rb_target *out);
/* "3.1.2" -> 0x030102, 0 when not a version. */
uint32_t rb_parse_version(const char *s, size_t len);

/* ---- pure decoders of bytes read from a process (fuzzed: tests/fuzz/fuzz_ruby.c) ---- */

/* RString: flags word and the 24 bytes after RBasic; embedded bytes are `obj`
 * (the object's first 40 bytes). Copies the string (bounded, NUL-terminated)
 * or says where its heap bytes are: returns the length, with *heap_ptr set when
 * the bytes are elsewhere (0 otherwise); -1 when not a String. */
long rb_decode_string(const uint8_t *obj, size_t obj_len, char *out, size_t out_len,
		      uint64_t *heap_ptr);
/* RArray: the first element's VALUE, or where to read it (*at), from the object's
 * first 40 bytes. 0 with first and at set, -1 when not a non-empty Array. */
int rb_decode_array_first(const uint8_t *obj, size_t obj_len, uint64_t *first, uint64_t *at);
/* The insns_info entry index of instruction position pos from 3.1's succinct index
 * table (iseq.c succ_index_lookup) of `table` (table_len bytes) for n_entries
 * entries; -1 when outside the table. */
long rb_succ_entry(const uint8_t *table, size_t table_len, size_t n_entries, uint32_t pos);
/* Bytes of the succinct table for an iseq of iseq_size instructions. */
size_t rb_succ_table_size(uint32_t iseq_size);

#endif /* HEARTH_RUBY_IMPL_H */
