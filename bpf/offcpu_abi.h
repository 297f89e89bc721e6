/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ABI of the off-CPU recorder (bpf/offcpu.bpf.h) shared with user space
 * (src/offcpu/, src/sampler/). docs/offcpu.md explains the events.
 *
 * An off-CPU block travels as an ordinary samples-ring record (struct
 * hearth_rb_sample, bpf/profile_abi.h) whose `kind` is HEARTH_RB_KIND_OFFCPU
 * and whose frames are followed by one more __u64: the blocked nanoseconds.
 * The reason sits in bits 8-15 of `kind`.
 */
#ifndef HEARTH_BPF_OFFCPU_ABI_H
#define HEARTH_BPF_OFFCPU_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Why a thread was off the CPU (series label `reason`, pseudo-frame "[off-cpu: REASON]"). */
enum hearth_offcpu_reason {
	HEARTH_OFFCPU_RUNQUEUE = 0, /* runnable, waiting for a CPU (wakeup or preemption -> switch-in) */
	HEARTH_OFFCPU_IO,	    /* uninterruptible (D) sleep, or a read/write-like syscall */
	HEARTH_OFFCPU_LOCK,	    /* futex lock wait (FUTEX_WAIT, LOCK_PI, futex_waitv) */
	HEARTH_OFFCPU_SLEEP,	    /* nanosleep, poll/epoll/select, condition waits (WAIT_BITSET) */
	HEARTH_OFFCPU_THROTTLED,    /* its cgroup's CPU quota (cpu.max) was spent */
	HEARTH_OFFCPU_OTHER,	    /* any other interruptible sleep */
	HEARTH_OFFCPU_REASON_MAX,
};

/* hearth_rb_sample.kind: 0 is an on-CPU sample. */
#define HEARTH_RB_KIND_OFFCPU	      1u
/* An on-CPU sample counted in the wall-clock view: made by user space of each
 * CPU sample, and sent by BPF for the CPU samples of a thread taken inside its
 * own off-CPU walk (the record's trailing word is their count, not ns). */
#define HEARTH_RB_KIND_RUNNING	      2u
#define HEARTH_RB_KIND_TYPE(kind)     ((kind) & 0xffu)
#define HEARTH_RB_KIND_REASON(kind)   (((kind) >> 8) & 0xffu)
#define HEARTH_RB_KIND_MAKE(type, rs) ((__u16)((type) | ((rs) << 8)))

/* Default minimum duration of a block that gets a stack (--off-cpu-min). */
#define HEARTH_OFFCPU_DEFAULT_MIN_NS (1000ull * 1000)
/* Kernel frames kept of a block, captured at switch-in (bpf_get_task_stack). */
#define HEARTH_OFFCPU_KFRAMES 48

/* Per-CPU counters of the off-CPU recorder (map offcpu_stats). */
enum hearth_offcpu_stat {
	HEARTH_OFFCPU_SWITCHES = 0, /* switch-outs of tracked threads seen */
	HEARTH_OFFCPU_BLOCKS,	    /* blocks that completed a minimum of time: sent with a stack */
	HEARTH_OFFCPU_SHORT,	    /* blocks that did not: their time waits in acc[] */
	HEARTH_OFFCPU_SHORT_NS,	    /* their nanoseconds */
	HEARTH_OFFCPU_SENT_NS,	    /* nanoseconds of the blocks sent */
	/* Drops and degradations, each by reason: */
	HEARTH_OFFCPU_NO_STORAGE,   /* task storage could not be created (memory) */
	HEARTH_OFFCPU_RINGBUF_FULL, /* the samples ring had no room: block lost */
	HEARTH_OFFCPU_LEAF_ONLY,    /* not in a syscall (preempted, fault): user leaf pc only */
	HEARTH_OFFCPU_STACK_LOST,   /* the syscall it blocked in was not the one that
				     * returned (a fault): user leaf pc only */
	HEARTH_OFFCPU_FP_FALLBACK,  /* no unwind tables for the process: frame pointers */
	HEARTH_OFFCPU_MERGED,	    /* a block added to a pending one (same syscall) */
	HEARTH_OFFCPU_WALK_SAMPLES, /* CPU samples taken inside the thread's own walk:
				     * sent as its on-CPU time with the walked stack */
	HEARTH_OFFCPU_STAT_MAX,
};

/* Per-thread state (BPF task storage), for user-space tests of its size. */
struct hearth_offcpu_task {
	__u64 t_out;	 /* switch-out, ns since boot; 0 = on CPU / untracked */
	__u64 user_sp;	 /* user sp and ip at switch-out (validates the sys_exit) */
	__u64 user_ip;
	__s64 sysnr;	 /* syscall at switch-out, -1 when none */
	__u32 reason;	 /* of the block in progress */
	__u32 pending;	 /* a block waits for its user stack (sys_exit) */
	__u64 pend_ns;	 /* blocked time of the pending block (its reason: pend_reason) */
	__u64 pend_rq_ns; /* run-queue wait after it */
	__u32 pend_reason;
	__u32 klen;
	/* Off-CPU time not sent yet, by reason: blocks add to it; once a reason's
	 * sum reaches the minimum it is sent with the stack of the block that
	 * completed it (time-proportional sampling of stacks, no time lost). */
	__u64 acc[HEARTH_OFFCPU_REASON_MAX];
	__u64 kframes[HEARTH_OFFCPU_KFRAMES];
};
_Static_assert(sizeof(struct hearth_offcpu_task) ==
		       64 + 8 * HEARTH_OFFCPU_REASON_MAX + 8 * HEARTH_OFFCPU_KFRAMES,
	       "offcpu task ABI");

#endif /* HEARTH_BPF_OFFCPU_ABI_H */
