/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ABI of the HotSpot (OpenJDK) frame walker, shared by bpf/java.bpf.h and
 * src/java/ (docs/java.md).
 *
 * User space recognises a JVM by its mapped libjvm.so, reads the JVM's own
 * description of itself (gHotSpotVMStructs, gHotSpotVMTypes and the int
 * constants) and writes one struct hearth_java_proc per JVM into `java_procs`.
 * The table walker (unwind_step in profile.bpf.c) hands every pc that lies in
 * the JVM's code cache to java_step: interpreter frames give the Method* and
 * the bytecode pointer from their fixed frame slots, compiled code (nmethods)
 * and stubs the CodeBlob found through the code heap's segment map, whose frame
 * size steps to the caller. Each such native frame gets exactly one runtime
 * frame (bpf/runtime_abi.h, kind HEARTH_RT_JAVA, HEARTH_RT_FRAME_ENTRY set), in
 * order; user space puts them in place of the code-cache frames.
 */
#ifndef HEARTH_BPF_JAVA_ABI_H
#define HEARTH_BPF_JAVA_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Java frames a sample carries (at most HEARTH_PY_MAX_FRAMES: the same slots). */
#define HEARTH_JAVA_MAX_FRAMES 128
#define HEARTH_JAVA_MAX_PROCS 1024
#define HEARTH_JAVA_MAX_HEAPS 4
/* Segment-map hops to a block's start (254 segments each: 64-byte segments
 * give 16 KB a hop, 1 MB in all). */
#define HEARTH_JAVA_SEGMAP_HOPS 64
/* Words a compiled frame may span (1 MiB). */
#define HEARTH_JAVA_MAX_FRAME_WORDS (1u << 17)

struct hearth_java_heap {
	__u64 low, high; /* the heap's code: [low, high) */
	__u64 segmap;	 /* its segment map: one byte per segment */
	__u32 log2_seg;	 /* log2 of the segment size */
	__u32 pad;
};

/* One JVM: value of `java_procs`, keyed by pid (tgid). Offsets in bytes. */
struct hearth_java_proc {
	__u64 pstart;		/* process start (ns since boot) this is for */
	__u64 code_low, code_high; /* CodeCache::_low_bound, _high_bound */
	__u64 interp_low, interp_high; /* the template interpreter's code */
	struct hearth_java_heap heaps[HEARTH_JAVA_MAX_HEAPS];
	__u32 n_heaps;
	__u16 block_header;	/* sizeof(HeapBlock): the CodeBlob follows */
	__u16 blob_frame_size;	/* CodeBlob::_frame_size (int, words) */
	__u16 blob_type;	/* CodeBlob::_type (int: compiler_none = 0): not published */
	__u16 blob_frame_complete; /* CodeBlob::_frame_complete_offset (int) */
	__u16 blob_code_begin;	/* CodeBlob::_code_begin */
	__u16 nm_method;	/* CompiledMethod::_method */
	__s16 interp_method;	/* Method* slot from rbp (bytes; negative) */
	__s16 interp_bcp;	/* bytecode pointer slot from rbp */
	__s16 interp_sender_sp; /* caller's sp slot from rbp */
	__u16 pad;
};
_Static_assert(sizeof(struct hearth_java_proc) == 192, "java proc ABI");

/*
 * A Java frame's second word, bits 0-55 (HEARTH_RT_POS_MASK): bits 54-55 the
 * frame's type, bits 0-47 an address:
 *  - INTERP: word 0 the Method*, the address its bytecode pointer (bcp);
 *  - COMPILED: word 0 the nmethod (its CodeBlob), the address the pc (user
 *    space finds the method and the methods inlined at that pc);
 *  - STUB: word 0 the CodeBlob (adapter, runtime stub, call stub...), the pc;
 *  - UNKNOWN: word 0 0 or the CodeBlob when known, the pc (the walk could not
 *    tell the frame; it stops there).
 */
#define HEARTH_JAVA_TYPE_SHIFT 54
/* Bit 53: the frame is the interrupted one (its pc is no return address). */
#define HEARTH_JAVA_LEAF (1ull << 53)
#define HEARTH_JAVA_ADDR_MASK ((1ull << 48) - 1)
enum hearth_java_frame_type {
	HEARTH_JAVA_INTERP = 0,
	HEARTH_JAVA_COMPILED = 1,
	HEARTH_JAVA_STUB = 2,
	HEARTH_JAVA_UNKNOWN = 3,
};
#define HEARTH_JAVA_POS(type, addr) \
	((((__u64)(type)) << HEARTH_JAVA_TYPE_SHIFT) | ((__u64)(addr) & HEARTH_JAVA_ADDR_MASK))
#define HEARTH_JAVA_POS_TYPE(pos) ((unsigned)(((pos) >> HEARTH_JAVA_TYPE_SHIFT) & 3))

/* Per-CPU counters of the Java walk (`java_stats`). */
enum hearth_java_stat {
	HEARTH_JAVA_SAMPLES = 0,   /* samples of described JVMs */
	HEARTH_JAVA_WALKED,	   /* of those, with at least one Java frame */
	HEARTH_JAVA_F_INTERP,	   /* interpreted frames */
	HEARTH_JAVA_F_COMPILED,	   /* compiled (nmethod) frames */
	HEARTH_JAVA_F_STUB,	   /* stub/adapter frames */
	HEARTH_JAVA_STUB_FP,	   /* a stub without a frame size: stepped with rbp */
	HEARTH_JAVA_PROLOGUE,	   /* leaf before its frame was built: RA at sp */
	HEARTH_JAVA_NO_BLOB,	   /* stop: the pc is in no allocated block */
	HEARTH_JAVA_BAD_FRAME,	   /* stop: a frame size or frame pointer out of bounds */
	HEARTH_JAVA_READ_FAIL,	   /* stop: a read of JVM memory failed */
	HEARTH_JAVA_TRUNCATED,	   /* more than HEARTH_JAVA_MAX_FRAMES Java frames */
	HEARTH_JAVA_STAT_MAX,
};

#endif /* HEARTH_BPF_JAVA_ABI_H */
