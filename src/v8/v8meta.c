/*
 * v8meta: V8's self-description, read from the node executable's file.
 *
 * V8 builds export its post-mortem metadata as v8dbg_* symbols: int constants in
 * .data (or .bss when zero) giving the frame layout, object field offsets and
 * type tags (tools/gen-postmortem-metadata.py in V8). They are read from the
 * file, not the process: they are constants. Everything read from the image is
 * bounds-checked (tests/fuzz/fuzz_v8meta.c).
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "v8/v8.h"

struct field {
	const char *name;
	size_t off; /* in struct v8_meta */
	bool required;
};

#define F(n, f, r)                                                                                 \
	{                                                                                          \
		n, offsetof(struct v8_meta, f), r                                                  \
	}
static const struct field fields[] = {
    F("off_fp_function", fp_function, true),
    F("off_fp_context_or_frame_type", fp_context, true),
    F("off_fp_bytecode_array", fp_bytecode_array, true),
    F("off_fp_bytecode_offset", fp_bytecode_offset, true),
    F("HeapObjectTag", heap_tag, true),
    F("HeapObjectTagMask", heap_tag_mask, true),
    F("SmiShiftSize", smi_shift_size, true),
    F("SmiTagMask", smi_tag_mask, true),
    F("TaggedSize", tagged_size, false),
    F("class_HeapObject__map__Map", heap_map, true),
    F("class_Map__instance_type__uint16_t", map_instance_type, true),
    F("class_JSFunction__shared__SharedFunctionInfo", jsfunction_shared, true),
    F("class_SharedFunctionInfo__name_or_scope_info__Object", sfi_name_or_scope_info, true),
    F("class_SharedFunctionInfo__script_or_debug_info__HeapObject", sfi_script_or_debug_info, true),
    F("class_SharedFunctionInfo__function_data__Object", sfi_function_data, false),
    F("class_Script__name__Object", script_name, true),
    F("class_Script__source__Object", script_source, false),
    F("class_Script__line_ends__Object", script_line_ends, false),
    F("class_String__length__int32_t", string_length, true),
    F("class_SeqOneByteString__chars__char", seq_one_chars, true),
    F("class_SeqTwoByteString__chars__char", seq_two_chars, true),
    F("class_ConsString__first__String", cons_first, false),
    F("class_ConsString__second__String", cons_second, false),
    F("class_ThinString__actual__String", thin_actual, false),
    F("class_SlicedString__parent__String", sliced_parent, false),
    F("class_SlicedString__offset__SMI", sliced_offset, false),
    F("class_FixedArrayBase__length__SMI", fixed_array_length, false),
    F("class_FixedArray__data__uintptr_t", fixed_array_data, false),
    F("class_BytecodeArray__data__uintptr_t", bytecode_data, false),
    F("class_UncompiledData__start_position__int32_t", uncompiled_start, false),
    F("FirstNonstringType", first_nonstring_type, true),
    F("StringRepresentationMask", string_repr_mask, true),
    F("StringEncodingMask", string_enc_mask, true),
    F("SeqStringTag", seq_tag, false),
    F("ConsStringTag", cons_tag, false),
    F("SlicedStringTag", sliced_tag, false),
    F("ThinStringTag", thin_tag, false),
    F("ExternalStringTag", external_tag, false),
    F("OneByteStringTag", one_byte_tag, true),
    F("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", type_sfi, true),
    F("type_BytecodeArray__BYTECODE_ARRAY_TYPE", type_bytecode, true),
    F("type_Script__SCRIPT_TYPE", type_script, true),
    F("type_ScopeInfo__SCOPE_INFO_TYPE", type_scope_info, false),
    F("type_FixedArray__FIXED_ARRAY_TYPE", type_fixed_array, false),
    F("type_UncompiledDataWithoutPreparseData__UNCOMPILED_DATA_WITHOUT_PREPARSE_DATA_TYPE",
      type_uncompiled_first, false),
    F("type_UncompiledDataWithPreparseData__UNCOMPILED_DATA_WITH_PREPARSE_DATA_TYPE",
      type_uncompiled_last, false),
    F("scopeinfo_idx_first_vars", scopeinfo_first_vars, false),
    F("type_ByteArray__BYTE_ARRAY_TYPE", type_byte_array, false),
    F("type_Code__CODE_TYPE", type_code, false),
    F("class_Code__bytecode_or_interpreter_data__HeapObject", code_bytecode, false),
};
#undef F
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

static bool in(size_t len, uint64_t off, uint64_t size)
{
	return off <= len && size <= len - off;
}

/* The int32 at virtual address addr: from the allocated section holding it (0
 * in a NOBITS one). */
static int value_at(const uint8_t *elf, size_t len, const Elf64_Shdr *sh, unsigned nsh,
		    uint64_t addr, int32_t *out)
{
	for (unsigned i = 0; i < nsh; i++) {
		const Elf64_Shdr *s = &sh[i];

		if (!(s->sh_flags & SHF_ALLOC) || addr < s->sh_addr ||
		    addr - s->sh_addr > s->sh_size || s->sh_size - (addr - s->sh_addr) < 4)
			continue;
		if (s->sh_type == SHT_NOBITS) {
			*out = 0;
			return 0;
		}
		if (!in(len, s->sh_offset, s->sh_size))
			return -EINVAL;
		memcpy(out, elf + s->sh_offset + (addr - s->sh_addr), 4);
		return 0;
	}
	return -EINVAL;
}

int v8_meta_parse(const uint8_t *elf, size_t len, struct v8_meta *out)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
	const Elf64_Shdr *sh;
	unsigned nsh, any = 0;
	bool seen[N_FIELDS] = {false};

	memset(out, 0, sizeof(*out));
	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return -EINVAL;
	if (eh->e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOTSUP;
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || (uintptr_t)elf % 8)
		return -EINVAL;
	nsh = eh->e_shnum;
	if (!in(len, eh->e_shoff, (uint64_t)nsh * sizeof(Elf64_Shdr)) || eh->e_shoff % 8)
		return -EINVAL;
	sh = (const Elf64_Shdr *)(elf + eh->e_shoff);
	for (unsigned i = 0; i < nsh; i++) {
		const Elf64_Shdr *sym = &sh[i], *str;
		uint64_t n;

		if (sym->sh_type != SHT_DYNSYM && sym->sh_type != SHT_SYMTAB)
			continue;
		if (sym->sh_link >= nsh || sym->sh_entsize != sizeof(Elf64_Sym) ||
		    !in(len, sym->sh_offset, sym->sh_size) || sym->sh_offset % 8)
			continue;
		str = &sh[sym->sh_link];
		if (!in(len, str->sh_offset, str->sh_size))
			continue;
		n = sym->sh_size / sizeof(Elf64_Sym);
		for (uint64_t k = 0; k < n; k++) {
			const Elf64_Sym *s = (const Elf64_Sym *)(elf + sym->sh_offset) + k;
			const char *name;
			size_t max;

			if (s->st_name >= str->sh_size)
				continue;
			name = (const char *)elf + str->sh_offset + s->st_name;
			max = str->sh_size - s->st_name;
			if (max < 7 || strncmp(name, "v8dbg_", 6))
				continue;
			name += 6;
			max -= 6;
			any++;
			for (size_t f = 0; f < N_FIELDS; f++) {
				size_t fl = strlen(fields[f].name);
				int32_t v;

				if (seen[f] || fl >= max || memcmp(name, fields[f].name, fl + 1))
					continue;
				if (value_at(elf, len, sh, nsh, s->st_value, &v))
					break;
				memcpy((char *)out + fields[f].off, &v, sizeof(v));
				seen[f] = true;
				out->found++;
				break;
			}
		}
		if (any)
			break; /* the dynamic table had them: the static one repeats them */
	}
	if (!any)
		return -ENOENT;
	for (size_t f = 0; f < N_FIELDS; f++)
		if (fields[f].required && !seen[f])
			return -EINVAL;
	for (size_t f = 0; f < N_FIELDS; f++)
		if (!seen[f] && fields[f].off == offsetof(struct v8_meta, tagged_size))
			out->tagged_size = 8; /* older V8: no pointer compression yet */
	if (out->tagged_size != 8)
		return -ENOTSUP; /* pointer compression: 32-bit tagged fields */
	if (out->fp_function < HEARTH_V8_READ_LO || out->fp_function > 8 ||
	    out->fp_context < HEARTH_V8_READ_LO || out->fp_context > 8 ||
	    out->fp_bytecode_array < HEARTH_V8_READ_LO || out->fp_bytecode_array > 8 ||
	    out->fp_bytecode_offset < HEARTH_V8_READ_LO || out->fp_bytecode_offset > 8 ||
	    out->heap_tag < 0 || out->heap_tag > 7 || out->heap_tag_mask < 0 ||
	    out->heap_tag_mask > 7 || out->smi_shift_size < 0 || out->smi_shift_size > 62 ||
	    out->heap_map < 0 || out->heap_map > 4096 || out->map_instance_type < 0 ||
	    out->map_instance_type > 4096 || out->jsfunction_shared < 0 ||
	    out->jsfunction_shared > 4096 || out->type_sfi <= 0 || out->type_sfi > 0xffff ||
	    out->type_bytecode <= 0 || out->type_bytecode > 0xffff)
		return -EINVAL;
	return 0;
}

void v8_meta_describe(const struct v8_meta *m, uint64_t pstart, struct hearth_v8_proc *out)
{
	memset(out, 0, sizeof(*out));
	out->pstart = pstart;
	out->fp_function = (int16_t)m->fp_function;
	out->fp_context = (int16_t)m->fp_context;
	out->fp_bytecode_array = (int16_t)m->fp_bytecode_array;
	out->fp_bytecode_offset = (int16_t)m->fp_bytecode_offset;
	out->heap_map = (uint16_t)m->heap_map;
	out->map_instance_type = (uint16_t)m->map_instance_type;
	out->jsfunction_shared = (uint16_t)m->jsfunction_shared;
	out->type_sfi = (uint16_t)m->type_sfi;
	out->type_bytecode = (uint16_t)m->type_bytecode;
	out->smi_shift = (uint8_t)(m->smi_shift_size + 1);
	out->heap_tag = (uint8_t)m->heap_tag;
	out->heap_tag_mask = (uint8_t)m->heap_tag_mask;
	/* The frame holds the offset from the tagged array: header size - tag. */
	out->bytecode_bias =
	    m->bytecode_data > m->heap_tag ? (uint32_t)(m->bytecode_data - m->heap_tag) : 0;
}
