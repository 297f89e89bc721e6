/*
 * jvmstructs: reads HotSpot's description of itself (gHotSpotVMStructs,
 * gHotSpotVMTypes, gHotSpotVMIntConstants) from a target's memory.
 *
 * Each table is an array of entries ended by one whose type (or name) pointer is
 * NULL; the entries' layout is itself exported (gHotSpotVMStructEntry*Offset,
 * *ArrayStride). Everything is read from the target, an untrusted input: strides
 * and offsets are bounded, names are read with a bound and compared, a table
 * stops after JVM_ENTRIES_MAX entries.
 */
#include <errno.h>
#include <string.h>

#include "java/java_impl.h"

const char *const jvm_sym_names[JS_MAX] = {
    [JS_STRUCTS] = "gHotSpotVMStructs",
    [JS_S_TYPE_NAME] = "gHotSpotVMStructEntryTypeNameOffset",
    [JS_S_FIELD_NAME] = "gHotSpotVMStructEntryFieldNameOffset",
    [JS_S_IS_STATIC] = "gHotSpotVMStructEntryIsStaticOffset",
    [JS_S_OFFSET] = "gHotSpotVMStructEntryOffsetOffset",
    [JS_S_ADDRESS] = "gHotSpotVMStructEntryAddressOffset",
    [JS_S_STRIDE] = "gHotSpotVMStructEntryArrayStride",
    [JS_TYPES] = "gHotSpotVMTypes",
    [JS_T_TYPE_NAME] = "gHotSpotVMTypeEntryTypeNameOffset",
    [JS_T_SIZE] = "gHotSpotVMTypeEntrySizeOffset",
    [JS_T_STRIDE] = "gHotSpotVMTypeEntryArrayStride",
    [JS_INTS] = "gHotSpotVMIntConstants",
    [JS_I_NAME] = "gHotSpotVMIntConstantEntryNameOffset",
    [JS_I_VALUE] = "gHotSpotVMIntConstantEntryValueOffset",
    [JS_I_STRIDE] = "gHotSpotVMIntConstantEntryArrayStride",
};

enum want_kind { W_FIELD, W_STATIC, W_TYPE, W_INT };

struct want {
	enum want_kind kind;
	const char *type, *name; /* name NULL for W_TYPE; type the constant for W_INT */
	size_t off;		 /* of the int64_t/uint64_t in struct jvm_layout */
};

#define L(f) offsetof(struct jvm_layout, f)
static const struct want wants[] = {
    {W_STATIC, "CodeCache", "_heaps", L(codecache_heaps)},
    {W_STATIC, "CodeCache", "_low_bound", L(codecache_low)},
    {W_STATIC, "CodeCache", "_high_bound", L(codecache_high)},
    {W_STATIC, "AbstractInterpreter", "_code", L(interp_code)},
    {W_FIELD, "CodeHeap", "_memory", L(heap_memory)},
    {W_FIELD, "CodeHeap", "_segmap", L(heap_segmap)},
    {W_FIELD, "CodeHeap", "_log2_segment_size", L(heap_log2_seg)},
    {W_FIELD, "VirtualSpace", "_low_boundary", L(vs_low)},
    {W_FIELD, "VirtualSpace", "_high_boundary", L(vs_high)},
    {W_FIELD, "GrowableArrayBase", "_len", L(ga_len)},
    {W_FIELD, "GrowableArray<int>", "_data", L(ga_data)},
    {W_FIELD, "CodeBlob", "_name", L(blob_name)},
    {W_FIELD, "CodeBlob", "_size", L(blob_size)},
    {W_FIELD, "CodeBlob", "_frame_size", L(blob_frame_size)},
    {W_FIELD, "CodeBlob", "_frame_complete_offset", L(blob_frame_complete)},
    {W_FIELD, "CodeBlob", "_code_begin", L(blob_code_begin)},
    {W_FIELD, "CompiledMethod", "_method", L(nm_method)},
    {W_FIELD, "CompiledMethod", "_scopes_data_begin", L(nm_scopes_data)},
    {W_FIELD, "nmethod", "_compile_id", L(nm_compile_id)},
    {W_FIELD, "nmethod", "_metadata_offset", L(nm_metadata_off)},
    {W_FIELD, "nmethod", "_scopes_pcs_offset", L(nm_pcs_off)},
    {W_FIELD, "nmethod", "_dependencies_offset", L(nm_deps_off)},
    {W_FIELD, "PcDesc", "_pc_offset", L(pc_pc_offset)},
    {W_FIELD, "PcDesc", "_scope_decode_offset", L(pc_scope_offset)},
    {W_FIELD, "Method", "_constMethod", L(method_const)},
    {W_FIELD, "ConstMethod", "_constants", L(cm_constants)},
    {W_FIELD, "ConstMethod", "_name_index", L(cm_name_index)},
    {W_FIELD, "ConstMethod", "_signature_index", L(cm_sig_index)},
    {W_FIELD, "ConstMethod", "_code_size", L(cm_code_size)},
    {W_FIELD, "ConstMethod", "_flags", L(cm_flags)},
    {W_FIELD, "ConstantPool", "_pool_holder", L(cp_holder)},
    {W_FIELD, "Klass", "_name", L(klass_name)},
    {W_FIELD, "Symbol", "_length", L(sym_length)},
    {W_FIELD, "Symbol", "_body", L(sym_body)},
    {W_FIELD, "StubQueue", "_stub_buffer", L(sq_stub_buffer)},
    {W_FIELD, "StubQueue", "_buffer_limit", L(sq_buffer_limit)},
    {W_TYPE, "HeapBlock", NULL, L(size_heap_block)},
    {W_TYPE, "ConstMethod", NULL, L(size_const_method)},
    {W_TYPE, "ConstantPool", NULL, L(size_constant_pool)},
    {W_TYPE, "nmethod", NULL, L(size_nmethod)},
    {W_TYPE, "PcDesc", NULL, L(size_pcdesc)},
    {W_INT, "frame::interpreter_frame_sender_sp_offset", NULL, L(interp_sender_sp)},
    {W_INT, "frame::interpreter_frame_last_sp_offset", NULL, L(interp_last_sp)},
    {W_INT, "ConstMethod::_has_linenumber_table", NULL, L(has_linenumber_table)},
};
#undef L
#define N_WANTS (sizeof(wants) / sizeof(wants[0]))
_Static_assert(N_WANTS <= 64, "missing is a 64-bit mask");

static int rd(const struct jvm_reader *r, uint64_t addr, void *buf, size_t len)
{
	if (!addr)
		return -EIO;
	return r->read(r->ctx, addr, buf, len) ? -EIO : 0;
}

static int rd_u64(const struct jvm_reader *r, uint64_t addr, uint64_t *v)
{
	return rd(r, addr, v, sizeof(*v));
}

/* A NUL-terminated name of at most JVM_NAME_MAX - 1 bytes at addr; reads shrink
 * near the end of readable memory. 0, -EIO. */
static int rd_name(const struct jvm_reader *r, uint64_t addr, char out[JVM_NAME_MAX])
{
	for (size_t len = JVM_NAME_MAX - 1; len >= 8; len /= 2) {
		if (rd(r, addr, out, len) == 0) {
			out[len] = 0;
			return 0;
		}
	}
	return -EIO;
}

static void set(struct jvm_layout *out, size_t i, int64_t v)
{
	memcpy((char *)out + wants[i].off, &v, sizeof(v));
	out->missing &= ~(1ull << i);
}

/* The entry layout variables: offsets within an entry, the stride. */
static int layout(const struct jvm_reader *r, const uint64_t syms[JS_MAX], int first, int n,
		  uint64_t *vals)
{
	for (int i = 0; i < n; i++) {
		if (rd_u64(r, syms[first + i], &vals[i]))
			return -EIO;
	}
	/* the stride is last: every offset leaves room for a word in it */
	if (vals[n - 1] < 8 || vals[n - 1] > 256)
		return -EINVAL;
	for (int i = 0; i < n - 1; i++)
		if (vals[i] > vals[n - 1] - 8)
			return -EINVAL;
	return 0;
}

static int parse_structs(const struct jvm_reader *r, const uint64_t syms[JS_MAX],
			 struct jvm_layout *out)
{
	uint64_t v[6], base, e[32];
	char type[JVM_NAME_MAX], field[JVM_NAME_MAX];
	int err = layout(r, syms, JS_S_TYPE_NAME, 6, v);

	if (err)
		return err;
	if (rd_u64(r, syms[JS_STRUCTS], &base))
		return -EIO;
	for (int n = 0; n < JVM_ENTRIES_MAX; n++, base += v[5]) {
		uint64_t tp, fp, addr = 0, off = 0;
		int32_t is_static;

		if (rd(r, base, e, v[5]))
			return -EIO;
		memcpy(&tp, (char *)e + v[0], 8);
		if (!tp)
			return 0;
		memcpy(&fp, (char *)e + v[1], 8);
		memcpy(&is_static, (char *)e + v[2], 4);
		memcpy(&off, (char *)e + v[3], 8);
		memcpy(&addr, (char *)e + v[4], 8);
		if (!fp || rd_name(r, tp, type) || rd_name(r, fp, field))
			continue;
		for (size_t i = 0; i < N_WANTS; i++) {
			if ((wants[i].kind != W_FIELD && wants[i].kind != W_STATIC) ||
			    (wants[i].kind == W_STATIC) != (is_static != 0) ||
			    strcmp(wants[i].type, type) || strcmp(wants[i].name, field))
				continue;
			if (wants[i].kind == W_FIELD && off > 65536)
				return -EINVAL;
			set(out, i, wants[i].kind == W_STATIC ? (int64_t)addr : (int64_t)off);
		}
	}
	return -EINVAL;
}

static int parse_types(const struct jvm_reader *r, const uint64_t syms[JS_MAX],
		       struct jvm_layout *out)
{
	uint64_t v[3], base, e[32];
	char type[JVM_NAME_MAX];
	int err = layout(r, syms, JS_T_TYPE_NAME, 3, v);

	if (err)
		return err;
	if (rd_u64(r, syms[JS_TYPES], &base))
		return -EIO;
	for (int n = 0; n < JVM_ENTRIES_MAX; n++, base += v[2]) {
		uint64_t tp, size;

		if (rd(r, base, e, v[2]))
			return -EIO;
		memcpy(&tp, (char *)e + v[0], 8);
		if (!tp)
			return 0;
		memcpy(&size, (char *)e + v[1], 8);
		if (rd_name(r, tp, type))
			continue;
		for (size_t i = 0; i < N_WANTS; i++)
			if (wants[i].kind == W_TYPE && !strcmp(wants[i].type, type) &&
			    size <= 65536)
				set(out, i, (int64_t)size);
	}
	return -EINVAL;
}

static int parse_ints(const struct jvm_reader *r, const uint64_t syms[JS_MAX],
		      struct jvm_layout *out)
{
	uint64_t v[3], base, e[32];
	char name[JVM_NAME_MAX];
	int err = layout(r, syms, JS_I_NAME, 3, v);

	if (err)
		return err;
	if (v[1] > v[2] - 4)
		return -EINVAL;
	if (rd_u64(r, syms[JS_INTS], &base))
		return -EIO;
	for (int n = 0; n < JVM_ENTRIES_MAX; n++, base += v[2]) {
		uint64_t np;
		int32_t val;

		if (rd(r, base, e, v[2]))
			return -EIO;
		memcpy(&np, (char *)e + v[0], 8);
		if (!np)
			return 0;
		memcpy(&val, (char *)e + v[1], 4);
		if (rd_name(r, np, name))
			continue;
		for (size_t i = 0; i < N_WANTS; i++)
			if (wants[i].kind == W_INT && !strcmp(wants[i].type, name))
				set(out, i, val);
	}
	return -EINVAL;
}

int jvm_parse_vmstructs(const struct jvm_reader *r, const uint64_t syms[JS_MAX],
			struct jvm_layout *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	out->missing = N_WANTS == 64 ? ~0ull : (1ull << N_WANTS) - 1;
	for (int i = 0; i < JS_MAX; i++)
		if (!syms[i])
			return -ENOENT;
	if ((err = parse_structs(r, syms, out)) || (err = parse_types(r, syms, out)) ||
	    (err = parse_ints(r, syms, out)))
		return err;
	return out->missing ? -ENOENT : 0;
}

/* HotSpot's CompressedReadStream::read_int (UNSIGNED5: bytes >= 192 continue). */
static bool read_u5(const uint8_t *p, size_t len, size_t *pos, uint32_t *out)
{
	uint32_t sum = 0;
	int shift = 0;

	for (int i = 0; i < 5; i++) {
		uint32_t b;

		if (*pos >= len)
			return false;
		b = p[(*pos)++];
		sum += b << shift;
		if (b < 192 || i == 4)
			break;
		shift += 6;
	}
	*out = sum;
	return true;
}

int64_t jvm_line_for_bci(const uint8_t *table, size_t len, int64_t bci)
{
	/* CompressedLineNumberReadStream: a byte (bci delta << 3 | line delta) or
	 * 0xff then two signed UNSIGNED5 deltas; 0 ends the table. The best line is
	 * that of the largest start bci at or below bci (Method::line_number_from_bci). */
	size_t pos = 0;
	int64_t cur_bci = 0, cur_line = 0, best_bci = 0, best_line = -1;

	for (int n = 0; n < 65536 && pos < len; n++) {
		uint8_t b = table[pos++];

		if (b == 0)
			break;
		if (b == 0xff) {
			uint32_t db, dl;

			if (!read_u5(table, len, &pos, &db) || !read_u5(table, len, &pos, &dl))
				break;
			cur_bci += (int32_t)((db >> 1) ^ -(db & 1));
			cur_line += (int32_t)((dl >> 1) ^ -(dl & 1));
		} else {
			cur_bci += b >> 3;
			cur_line += b & 7;
		}
		if (cur_bci == bci)
			return cur_line;
		if (cur_bci < bci && cur_bci >= best_bci) {
			best_bci = cur_bci;
			best_line = cur_line;
		}
	}
	return best_line;
}

int jvm_scopes_at(const uint8_t *pcs, size_t n_pcs, size_t pcdesc_size, int64_t pc_field,
		  int64_t scope_field, const uint8_t *scopes, size_t n_scopes, const uint8_t *meta,
		  size_t n_meta, int64_t pc_off, bool exact, uint64_t *methods, int64_t *bcis,
		  int max)
{
	int64_t best = -1, best_pc = 0, off;
	int n = 0;

	if (!pcs || !scopes || pcdesc_size < 8 || pc_field < 0 || scope_field < 0 ||
	    (uint64_t)pc_field + 4 > pcdesc_size || (uint64_t)scope_field + 4 > pcdesc_size)
		return 0;
	/* PcDescs are sorted by pc; a return address has its own (exact), an
	 * interrupted pc takes the first one after it (pc_desc_near(pc + 1), as
	 * JFR's sampler and AsyncGetCallTrace look a top frame up). */
	if (!exact)
		pc_off++;
	for (size_t i = 0; i + pcdesc_size <= n_pcs; i += pcdesc_size) {
		int32_t pc, so;

		memcpy(&pc, pcs + i + pc_field, 4);
		memcpy(&so, pcs + i + scope_field, 4);
		if (pc < pc_off || so <= 0)
			continue;
		if (exact && pc != pc_off)
			break;
		if (best < 0 || pc < best_pc) {
			best = so;
			best_pc = pc;
		}
		break;
	}
	/* ScopeDesc::decode_body: sender offset, method (metadata index, 1-based),
	 * bci + 1 (InvocationEntryBci is -1); offset 0 is the serialized null. */
	for (off = best; off > 0 && n < max;) {
		size_t pos = (size_t)off;
		uint32_t sender, midx, bci;

		if ((uint64_t)off >= n_scopes || !read_u5(scopes, n_scopes, &pos, &sender) ||
		    !read_u5(scopes, n_scopes, &pos, &midx) ||
		    !read_u5(scopes, n_scopes, &pos, &bci))
			break;
		if (!midx || !meta || (uint64_t)midx * 8 > n_meta)
			break;
		memcpy(&methods[n], meta + 8 * (size_t)(midx - 1), 8);
		bcis[n] = (int64_t)bci - 1;
		n++;
		/* senders come before: a later offset would loop */
		if ((int64_t)sender >= off)
			break;
		off = sender;
	}
	return n;
}
