/*
 * v8: names the JavaScript frames of running Node.js processes (V8, docs/node.md).
 *
 * The manager recognises node processes (an executable that exports V8's
 * post-mortem metadata, the v8dbg_* symbols), reads the frame layout, object
 * offsets and type tags from those symbols' values in the file and publishes one
 * struct hearth_v8_proc per process into the `v8_procs` map. It turns the
 * (SharedFunctionInfo, position) pairs the walk records into
 * `function file.js:line:col` names by reading the objects from the process
 * (process_vm_readv), cached per (process, SharedFunctionInfo) and checked again
 * on each use, so a moved or collected object gives a counted unknown frame.
 *
 * Thread-safe: one mutex guards the manager.
 */
#ifndef HEARTH_V8_H
#define HEARTH_V8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "v8_abi.h" /* bpf/ */

#define V8_NAME_MAX 512

/* What is read of V8's self-description (v8dbg_* symbol values). */
struct v8_meta {
	int32_t fp_function, fp_context, fp_bytecode_array, fp_bytecode_offset;
	int32_t heap_tag, heap_tag_mask, smi_shift_size, smi_tag_mask, tagged_size;
	int32_t heap_map, map_instance_type, jsfunction_shared;
	int32_t sfi_name_or_scope_info, sfi_script_or_debug_info, sfi_function_data;
	int32_t script_name, script_source, script_line_ends;
	int32_t string_length, seq_one_chars, seq_two_chars, cons_first, cons_second;
	int32_t thin_actual, sliced_parent, sliced_offset;
	int32_t fixed_array_length, fixed_array_data, bytecode_data;
	int32_t uncompiled_start;
	int32_t first_nonstring_type, string_repr_mask, string_enc_mask;
	int32_t seq_tag, cons_tag, sliced_tag, thin_tag, external_tag, one_byte_tag;
	int32_t type_sfi, type_bytecode, type_script, type_scope_info, type_fixed_array;
	int32_t type_uncompiled_first, type_uncompiled_last;
	int32_t type_byte_array, type_code, code_bytecode;
	int32_t scopeinfo_first_vars;
	unsigned found; /* symbols found */
};

/* Parses the v8dbg_* values out of an ELF image in memory (the executable's file
 * bytes). 0, -ENOENT (no v8dbg_ symbols: not V8), -EINVAL (malformed, or metadata
 * missing a field the walk needs), -ENOTSUP (a layout the walk cannot read:
 * pointer compression, a 32-bit build). Bounds-checked: any bytes are safe. */
int v8_meta_parse(const uint8_t *elf, size_t len, struct v8_meta *out);
/* The BPF description of a process from its metadata. */
void v8_meta_describe(const struct v8_meta *m, uint64_t pstart, struct hearth_v8_proc *out);

struct v8_mgr;

int v8_mgr__new(int procs_fd, struct v8_mgr **out);
void v8_mgr__free(struct v8_mgr *m);
void v8_mgr__note(struct v8_mgr *m, uint32_t pid, uint64_t pstart);
void v8_mgr__exec(struct v8_mgr *m, uint32_t pid, uint64_t pstart);
void v8_mgr__exit(struct v8_mgr *m, uint32_t pid);
void v8_mgr__forget(struct v8_mgr *m, uint32_t pid, uint64_t pstart);
int v8_mgr__work(struct v8_mgr *m, int budget_ms);
int v8_mgr__next_due_ms(const struct v8_mgr *m);

/* Names one recorded frame: "function file.js:line:col" (as --perf-basic-prof).
 * 0, -ENOENT (process not described), -EIO (the object cannot be read or is no
 * SharedFunctionInfo any more: moved or collected). */
int v8_mgr__resolve(struct v8_mgr *m, uint32_t pid, uint64_t pstart, uint64_t sfi, uint64_t pos,
		    char *out, size_t len);

/* The line (1-based) of the statement an interpreted frame is at: its bytecode
 * offset (pos) looked up in the function's source position table. 0 when not
 * known (not interpreted, no table, unreadable). */
int64_t v8_mgr__line(struct v8_mgr *m, uint32_t pid, uint64_t pstart, uint64_t sfi, uint64_t pos);
/* The script offset of bytecode offset bcoff from a source position table (V8's
 * encoding: zig-zag VLQ deltas of (code offset + 1 with the statement flag in its
 * sign, SourcePosition raw)); -1 when none. Bounds-checked on any bytes. */
int64_t v8_position_at(const uint8_t *table, size_t len, int64_t bcoff);

/* Names and caches an SFI not cached yet (no read when it is): the collector
 * calls it for each new stack's frames while the process lives. */
void v8_mgr__warm(struct v8_mgr *m, uint32_t pid, uint64_t pstart, uint64_t sfi);

struct v8_mgr_stats {
	uint64_t processes;   /* described now */
	uint64_t probed;      /* probes run */
	uint64_t unsupported; /* V8 found but not walkable (pointer compression...) */
	uint64_t cached;      /* SharedFunctionInfos named and cached */
	uint64_t failed;      /* resolves that gave an unknown frame (moved, collected) */
	uint64_t evicted;     /* cache entries dropped for the memory budget */
};
void v8_mgr__stats(struct v8_mgr *m, struct v8_mgr_stats *out);

#include <stdio.h>
/* The walk's counters (sampler__v8_stats) and the manager's, as Prometheus text. */
void v8_write_metrics(FILE *f, const uint64_t st[HEARTH_V8_STAT_MAX],
		      const struct v8_mgr_stats *ms);

#endif /* HEARTH_V8_H */
