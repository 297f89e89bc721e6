/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ABI of the V8 (Node.js) frame walker, shared by bpf/v8.bpf.h and src/v8/.
 *
 * User space recognises a node process (its executable exports V8's post-mortem
 * metadata, the v8dbg_* symbols), reads the frame layout and object offsets from
 * them and writes one struct hearth_v8_proc per process into `v8_procs`. On each
 * sample of such a process the program follows the frame-pointer chain from the
 * interrupted rbp; a frame whose context slot holds a tagged pointer (not a
 * frame-type marker) and whose function slot holds a JSFunction with a
 * SharedFunctionInfo is a JavaScript frame: it is recorded as two words
 * (bpf/runtime_abi.h, kind HEARTH_RT_V8):
 *  - word 0: the SharedFunctionInfo's tagged address;
 *  - word 1: HEARTH_RT_WORD1(HEARTH_RT_V8, pos) | HEARTH_RT_FRAME_ENTRY, pos:
 *    bits 0-31 the low 32 bits of the frame's pc (the interrupted pc for the
 *    innermost frame, else the return address into it) — user space replaces
 *    the native frame with that pc; bits 32-51 the bytecode offset of an
 *    interpreted frame; bits 52-55 the frame type (HEARTH_V8_FT_*).
 * See docs/node.md.
 */
#ifndef HEARTH_BPF_V8_ABI_H
#define HEARTH_BPF_V8_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "runtime_abi.h"

/* Frame-pointer steps per sample (bpf_loop iterations), and JS frames kept. */
#define HEARTH_V8_MAX_STEPS  96
#define HEARTH_V8_MAX_FRAMES 64
#define HEARTH_V8_MAX_PROCS  1024
/* A frame is read from fp + HEARTH_V8_READ_LO, HEARTH_V8_READ bytes: every fp
 * offset given must lie in [HEARTH_V8_READ_LO, 8]. */
#define HEARTH_V8_READ_LO (-64)
#define HEARTH_V8_READ	  80

enum hearth_v8_ft {
	HEARTH_V8_FT_INTERPRETED = 1, /* bytecode array and offset in the frame */
	HEARTH_V8_FT_COMPILED = 2,    /* optimised code: Maglev or TurboFan */
	HEARTH_V8_FT_BASELINE = 3,    /* Sparkplug: a bytecode array, no Smi offset */
};

#define HEARTH_V8_POS_PC(pos)	  ((__u32)(pos))
#define HEARTH_V8_POS_BCOFF(pos)  ((__u32)(((pos) >> 32) & 0xfffff))
#define HEARTH_V8_POS_TYPE(pos)	  ((__u32)(((pos) >> 52) & 0xf))
#define HEARTH_V8_POS(pc, bcoff, type) \
	(((__u64)(__u32)(pc)) | (((__u64)(bcoff) & 0xfffff) << 32) | (((__u64)(type) & 0xf) << 52))

/* One node process: value of `v8_procs`, keyed by pid (tgid). */
struct hearth_v8_proc {
	__u64 pstart;		  /* process start (ns since boot) this is for */
	__s16 fp_function;	  /* v8dbg_off_fp_function (-16) */
	__s16 fp_context;	  /* v8dbg_off_fp_context_or_frame_type (-8) */
	__s16 fp_bytecode_array;  /* v8dbg_off_fp_bytecode_array (-32) */
	__s16 fp_bytecode_offset; /* v8dbg_off_fp_bytecode_offset (-40) */
	__u16 heap_map;		  /* HeapObject::map (0) */
	__u16 map_instance_type;  /* Map::instance_type, a u16 (12) */
	__u16 jsfunction_shared;  /* JSFunction::shared (24) */
	__u16 type_sfi;		  /* SHARED_FUNCTION_INFO_TYPE */
	__u16 type_bytecode;	  /* BYTECODE_ARRAY_TYPE */
	__u8 smi_shift;		  /* SmiShiftSize + SmiTagSize (32) */
	__u8 heap_tag;		  /* HeapObjectTag (1) */
	__u8 heap_tag_mask;	  /* HeapObjectTagMask (3) */
	__u8 pad[3];
	__u32 bytecode_bias;	  /* raw offset - bias = bytecode index (header - tag) */
	__u32 pad2;
};
_Static_assert(sizeof(struct hearth_v8_proc) == 40, "v8 proc ABI");

/* Per-CPU counters of the walk (`v8_stats`). */
enum hearth_v8_stat {
	HEARTH_V8_SAMPLES = 0, /* samples of described processes */
	HEARTH_V8_WALKED,      /* of those, with at least one JS frame */
	HEARTH_V8_READ_FAIL,   /* a read of a frame or object failed: walk stopped */
	HEARTH_V8_BAD_FP,      /* the next fp is not above the last one: walk ended */
	HEARTH_V8_MARKER,      /* frames with a type marker (stub, entry, exit...) */
	HEARTH_V8_NOT_JS,      /* frames whose function slot is no JSFunction (native) */
	HEARTH_V8_TRUNCATED,   /* more than HEARTH_V8_MAX_STEPS frames */
	HEARTH_V8_FRAMES,      /* JS frames recorded */
	HEARTH_V8_STAT_MAX,
};

#endif /* HEARTH_BPF_V8_ABI_H */
