/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Runtime frames in a sample, shared by every interpreter/JIT walk (CPython,
 * HotSpot, V8, CRuby) and user space.
 *
 * A sample carries, after its native user and kernel frames, `plen` runtime
 * frames of two words each (struct hearth_rb_sample in profile_abi.h):
 *  - word 0: the runtime's object for the frame (CPython code object, HotSpot
 *    Method*, V8 SharedFunctionInfo/JSFunction, CRuby iseq or method entry);
 *  - word 1: bit 63 HEARTH_RT_FRAME_ENTRY (as HEARTH_PY_FRAME_ENTRY: the last
 *    runtime frame standing for one native frame, counted from the leaf), bits
 *    56-62 the runtime (enum hearth_rt_kind), bits 0-55 where the frame is in
 *    its object (instruction pointer, bytecode index, pc offset...; the walk's
 *    own ABI header says which).
 * CPython frames have kind 0, so records from before the kinds existed read the
 * same. The frames, from the leaf up to an ENTRY one, replace the next native
 * frame the runtime's manager recognises as its own (interpreter loop, JIT or
 * stub code); user space splices them in place.
 */
#ifndef HEARTH_BPF_RUNTIME_ABI_H
#define HEARTH_BPF_RUNTIME_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum hearth_rt_kind {
	HEARTH_RT_PYTHON = 0,
	HEARTH_RT_JAVA = 1,
	HEARTH_RT_V8 = 2,
	HEARTH_RT_RUBY = 3,
};

#define HEARTH_RT_FRAME_ENTRY (1ull << 63)
#define HEARTH_RT_KIND_SHIFT 56
#define HEARTH_RT_KIND_MASK (0x7full << HEARTH_RT_KIND_SHIFT)
#define HEARTH_RT_POS_MASK ((1ull << HEARTH_RT_KIND_SHIFT) - 1)

#define HEARTH_RT_WORD1(kind, pos) \
	((((__u64)(kind)) << HEARTH_RT_KIND_SHIFT) | ((__u64)(pos) & HEARTH_RT_POS_MASK))
#define HEARTH_RT_KIND(word1) ((unsigned)(((word1) & HEARTH_RT_KIND_MASK) >> HEARTH_RT_KIND_SHIFT))

#endif /* HEARTH_BPF_RUNTIME_ABI_H */
