/*
 * java_impl.h: internals of src/java/ shared by its files and its tests.
 */
#ifndef HEARTH_JAVA_IMPL_H
#define HEARTH_JAVA_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads len bytes at addr of the target (a process, or a buffer in tests). */
struct jvm_reader {
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
};

/* Where libjvm.so's exported description lives in the target: the address of
 * each exported variable (symbol value + load bias), 0 when absent. */
enum jvm_sym {
	JS_STRUCTS = 0, /* gHotSpotVMStructs: VMStructEntry* */
	JS_S_TYPE_NAME, /* gHotSpotVMStructEntryTypeNameOffset ... (uint64_t each) */
	JS_S_FIELD_NAME,
	JS_S_IS_STATIC,
	JS_S_OFFSET,
	JS_S_ADDRESS,
	JS_S_STRIDE,
	JS_TYPES, /* gHotSpotVMTypes */
	JS_T_TYPE_NAME,
	JS_T_SIZE,
	JS_T_STRIDE,
	JS_INTS, /* gHotSpotVMIntConstants */
	JS_I_NAME,
	JS_I_VALUE,
	JS_I_STRIDE,
	JS_MAX,
};
extern const char *const jvm_sym_names[JS_MAX];

/* What the walk and the naming need, from the tables (docs/java.md). Offsets in
 * bytes, addresses in the target. Field names in the comments are HotSpot's. */
struct jvm_layout {
	/* statics: addresses of the variables */
	uint64_t codecache_heaps; /* CodeCache::_heaps (GrowableArray<CodeHeap*>*) */
	uint64_t codecache_low;	  /* CodeCache::_low_bound */
	uint64_t codecache_high;  /* CodeCache::_high_bound */
	uint64_t interp_code;	  /* AbstractInterpreter::_code (StubQueue*) */
	/* fields */
	int64_t heap_memory, heap_segmap, heap_log2_seg; /* CodeHeap */
	int64_t vs_low, vs_high; /* VirtualSpace::_low_boundary, _high_boundary */
	int64_t ga_len, ga_data; /* GrowableArrayBase::_len, GrowableArray<int>::_data */
	int64_t blob_name, blob_size, blob_frame_size, blob_frame_complete, blob_code_begin;
	int64_t nm_method;	/* CompiledMethod::_method */
	int64_t nm_scopes_data; /* CompiledMethod::_scopes_data_begin (address) */
	int64_t nm_compile_id, nm_metadata_off, nm_pcs_off, nm_deps_off; /* nmethod */
	int64_t pc_pc_offset, pc_scope_offset;				 /* PcDesc */
	int64_t method_const;						 /* Method::_constMethod */
	int64_t cm_constants, cm_name_index, cm_sig_index, cm_code_size, cm_flags; /* ConstMethod */
	int64_t cp_holder;			 /* ConstantPool::_pool_holder */
	int64_t klass_name;			 /* Klass::_name */
	int64_t sym_length, sym_body;		 /* Symbol */
	int64_t sq_stub_buffer, sq_buffer_limit; /* StubQueue */
	/* types */
	int64_t size_heap_block, size_const_method, size_constant_pool, size_nmethod, size_pcdesc;
	/* int constants */
	int64_t interp_sender_sp, interp_last_sp; /* frame::interpreter_frame_*_offset (words) */
	int64_t has_linenumber_table;		  /* ConstMethod::_has_linenumber_table */
	uint64_t missing;			  /* bit i: want[i] of jvmstructs.c was not found */
};

#define JVM_ENTRIES_MAX 20000 /* entries of one table read at most */
#define JVM_NAME_MAX	96    /* longest type or field name compared */

/* Reads the three tables. 0; -ENOENT a value the walk needs is missing (out's
 * `missing` says which); -EIO a read failed; -EINVAL the tables are malformed. */
int jvm_parse_vmstructs(const struct jvm_reader *r, const uint64_t syms[JS_MAX],
			struct jvm_layout *out);

/* Line of bci in a ConstMethod's compressed line number table (the bytes after
 * the bytecodes), -1 when the table has none. */
int64_t jvm_line_for_bci(const uint8_t *table, size_t len, int64_t bci);

/* The scopes of an nmethod at pc offset pc_off (ScopeDesc chain of the PcDesc
 * at pc_off when exact, else of the first PcDesc after it), innermost
 * first: Method* and bci (-1: none) each, from copies of the nmethod's PcDescs
 * (pcdesc_size bytes each, pc and scope offset fields at pc_field, scope_field),
 * scopes data and metadata. Count (<= max), 0 when none. */
int jvm_scopes_at(const uint8_t *pcs, size_t n_pcs, size_t pcdesc_size, int64_t pc_field,
		  int64_t scope_field, const uint8_t *scopes, size_t n_scopes, const uint8_t *meta,
		  size_t n_meta, int64_t pc_off, bool exact, uint64_t *methods, int64_t *bcis,
		  int max);

struct java_mgr;
/* Tests: describes (pid, pstart) as a probe of a JVM with layout L and code
 * cache [code_low, code_high) would, without libjvm.so or BPF. 0, -ENOMEM. */
int java_mgr__describe_for_test(struct java_mgr *m, uint32_t pid, uint64_t pstart,
				const struct jvm_layout *L, uint64_t code_low, uint64_t code_high);

#endif /* HEARTH_JAVA_IMPL_H */
