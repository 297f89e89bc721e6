/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ABI of the CRuby frame walker, shared by bpf/ruby.bpf.h and src/ruby/.
 *
 * User space recognises a CRuby process (a mapped libruby-3.X.so), works out where
 * each thread's rb_execution_context_t pointer (the `ruby_current_ec` thread-local)
 * is and the structure offsets of its version, and writes one struct hearth_rb_proc
 * per process into the `rb_procs` hash map. On each sample of such a process the
 * program finds the thread's block of libruby's thread-locals through glibc's dtv
 * (fs base -> tcbhead_t.dtv -> dtv[module id]), reads the ec there, and walks the
 * control frames from ec->cfp toward the end of the VM stack. Per Ruby frame it
 * records the iseq's address and the frame's pc (HEARTH_RT_WORD1(HEARTH_RT_RUBY,
 * pc)); a method's frame records its method entry instead (ep[-2], the
 * rb_callable_method_entry_t: user space reads the class and the iseq from it),
 * with HEARTH_RB_POS_CME in the position; frames of C functions (VM_FRAME_FLAG_CFRAME) are not recorded: their
 * native frames stay in the stack. The frame that opened a vm_exec call
 * (VM_FRAME_FLAG_FINISH) carries HEARTH_RT_FRAME_ENTRY. docs/ruby.md.
 */
#ifndef HEARTH_BPF_RUBY_ABI_H
#define HEARTH_BPF_RUBY_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "runtime_abi.h"

/* Control frames visited per sample (bpf_loop iterations), recorded or not. */
#define HEARTH_RB_MAX_STEPS 256
/* Ruby frames a sample carries at most. */
#define HEARTH_RB_MAX_FRAMES 128
/* CRuby processes described at once. */
#define HEARTH_RB_MAX_PROCS 4096
/* Bytes of a control frame read at once: every field offset is below this. */
#define HEARTH_RB_CFP_READ 64

/* rb_control_frame_t flags (ep[0]) the walk looks at (vm_core.h, 2.6 to 3.3). */
#define HEARTH_RB_FRAME_FINISH 0x0020
#define HEARTH_RB_FRAME_CFRAME 0x0080

/* The frame's type (ep[0] & MAGIC_MASK) of a method's frame: ep[-2] is its
 * method entry. */
#define HEARTH_RB_FRAME_MAGIC_MASK   0x7fff0001
#define HEARTH_RB_FRAME_MAGIC_METHOD 0x11110001
/* In a Ruby frame's position (bits 0-55 of word 1, above any user address):
 * word 0 is the frame's method entry, not its iseq. */
#define HEARTH_RB_POS_CME (1ull << 55)

/* glibc: a dtv slot of a module whose block is not allocated yet. */
#define HEARTH_RB_TLS_UNALLOCATED (~0ull)

/* One CRuby process: value of `rb_procs`, keyed by pid (tgid). Offsets in bytes. */
struct hearth_rb_proc {
	__u64 pstart;	   /* process start (ns since boot) this is for */
	__u64 tls_modid;   /* libruby's TLS module id (its dtv slot) */
	__u64 tls_offset;  /* ruby_current_ec's offset in libruby's TLS block */
	__u32 version;	   /* major << 16 | minor << 8 | teeny, e.g. 0x030102 */
	__u16 dtv_off;	   /* tcbhead_t.dtv from the thread pointer (8) */
	__u16 dtv_stride;  /* sizeof(dtv_t) (16) */
	__u16 ec_vm_stack; /* rb_execution_context_t: vm_stack (VALUE *) */
	__u16 ec_vm_stack_size; /* vm_stack_size (size_t, in VALUEs) */
	__u16 ec_cfp;	   /* cfp */
	__u16 cfp_size;	   /* sizeof(rb_control_frame_t) */
	__u16 cfp_pc, cfp_iseq, cfp_ep;
	__u16 pad;
};
_Static_assert(sizeof(struct hearth_rb_proc) == 48, "rb proc ABI");

/* Per-CPU counters of the walk (`rb_stats`). */
enum hearth_rb_stat {
	HEARTH_RB_SAMPLES = 0, /* samples of described processes */
	HEARTH_RB_WALKED,      /* of those, with at least one Ruby frame */
	HEARTH_RB_NO_EC,       /* the thread has no execution context (not a Ruby thread) */
	HEARTH_RB_NO_FRAME,    /* an ec with no Ruby frame (only C frames, or none) */
	HEARTH_RB_READ_FAIL,   /* a read of interpreter memory failed */
	HEARTH_RB_BAD_STACK,   /* cfp outside the ec's VM stack: walk not started */
	HEARTH_RB_TRUNCATED,   /* more than HEARTH_RB_MAX_FRAMES / _STEPS frames */
	HEARTH_RB_FRAMES,      /* Ruby frames recorded */
	HEARTH_RB_STAT_MAX,
};

#endif /* HEARTH_BPF_RUBY_ABI_H */
