/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ABI shared by bpf/profile.bpf.c and user space (src/sampler/).
 *
 * Plain fixed-size structs only, explicit padding, sizes proven with
 * _Static_assert so both compilers (clang -target bpf, gcc) agree.
 */
#ifndef HEARTH_BPF_PROFILE_ABI_H
#define HEARTH_BPF_PROFILE_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Depth of each of the user and kernel stacks (kernel.perf_event_max_stack). */
#define HEARTH_MAX_STACK 127
#define HEARTH_COMM_LEN 16

/* Entries of each counts map and each stack-trace map (per set, map mode). The
 * BPF object is built with these and user space sets them again before load
 * (1 in ring-buffer mode, where the maps go unused). */
#define HEARTH_COUNTS_ENTRIES 16384
#define HEARTH_STACKS_ENTRIES 16384

/* Aggregation key of the counts map: one entry per (process, thread, stacks). */
struct hearth_count_key {
	__u32 pid;	 /* process id (tgid) */
	__u32 tid;	 /* thread id */
	__u64 pstart;	 /* process start, ns since boot (group_leader->start_boottime) */
	__s32 ustack_id; /* stack-map id, or -1 when the sample has no user stack */
	__s32 kstack_id; /* stack-map id, or -1 when the sample has no kernel stack */
	char comm[HEARTH_COMM_LEN];  /* thread name */
	char pcomm[HEARTH_COMM_LEN]; /* process (group leader) name at sample time */
};
_Static_assert(sizeof(struct hearth_count_key) == 56, "count key ABI");

/*
 * One sample as sent through the samples ring buffer (--transfer ringbuf, --unwind
 * dwarf, and map-mode collisions): this header, then ulen user frames, then klen
 * kernel frames (__u64 each), then plen Python frames of two words each
 * (bpf/python_abi.h). Only the frames used are sent: a record is
 * sizeof(header) + 8 * (ulen + klen + 2 * plen) bytes, where a fixed 2 KB record
 * cost the program a cold cache line per unused slot (docs/overhead.md, "BPF
 * cost per sample").
 */
struct hearth_rb_sample {
	__u32 pid;
	__u32 tid;
	__u64 pstart;
	__u16 ulen; /* user frames, first (at most HEARTH_RB_MAX_USER) */
	__u16 klen; /* kernel frames, after the user ones (at most HEARTH_MAX_STACK) */
	__u16 plen; /* Python frames, after the kernel ones (at most HEARTH_PY_MAX_FRAMES) */
	__u16 kind; /* 0: an on-CPU sample; else an off-CPU block (bpf/offcpu_abi.h) */
	char comm[HEARTH_COMM_LEN];
	char pcomm[HEARTH_COMM_LEN];
};
_Static_assert(sizeof(struct hearth_rb_sample) == 56, "rb sample ABI");
/* Most user frames of a record: the table unwinder's depth (HEARTH_UNWIND_MAX_FRAMES). */
#define HEARTH_RB_MAX_USER 512

/* Process events, sent through the events ring buffer. */
enum hearth_event_kind {
	HEARTH_EV_NEW = 1,  /* first sample of a process: read its mappings now */
	HEARTH_EV_EXEC = 2, /* a known process called exec: its mappings changed */
	HEARTH_EV_EXIT = 3, /* a known process exited: keep what we know of it */
	/* A table walk met a return address outside the process view (libraries
	 * mapped after the view was read, e.g. by ld.so or dlopen): re-read its maps.
	 * Consumed by the sampler; never handed to the event callback. */
	HEARTH_EV_REMAP = 4,
	/* A walk crossed an object whose unwind table is not loaded (bpf/unwind_abi.h,
	 * tables on demand): weigh the objects' heat now. Consumed by the sampler. */
	HEARTH_EV_UNWIND_WANT = 5,
	/* A walk met a pc in an object with a partial table (bpf/unwind_abi.h,
	 * HEARTH_UNWIND_MAP_PARTIAL) that no loaded FDE covers: `want` says which
	 * object and vaddr, so user space loads that FDE. Consumed by the sampler. */
	HEARTH_EV_UNWIND_PC = 6,
};

struct hearth_event {
	__u32 kind;
	__u32 pid;
	__u64 pstart;
	union {
		char comm[HEARTH_COMM_LEN]; /* process (group leader) name */
		struct {
			__u64 vaddr; /* HEARTH_EV_UNWIND_PC: the pc (ELF vaddr) */
			__u32 obj;   /* its object's slot (struct hearth_unwind_mapping.obj) */
			__u32 pad;
		} want;
		struct {
			__u64 pc;   /* HEARTH_EV_REMAP: the first pc outside the view */
			__u32 kind; /* enum hearth_remap_kind (unwind_abi.h) */
			__u32 pad;
		} remap;
	};
};
_Static_assert(sizeof(struct hearth_event) == 32, "event ABI");

/* Per-CPU counters of everything that did not become a sample. Collisions are the
 * exception: the sample is recovered through the ring buffer (a RINGBUF_FULL drop
 * if that fails), so they are counted but not lost. */
enum hearth_drop {
	HEARTH_DROP_MAP_FULL = 0,	/* counts map had no room for a new key */
	HEARTH_DROP_USTACK_COLLISION,	/* user stack hash collided (-EEXIST); resent via ring buffer */
	HEARTH_DROP_KSTACK_COLLISION,	/* kernel stack hash collided (-EEXIST); resent via ring buffer */
	HEARTH_DROP_USTACK_MISSING,	/* user stack could not be read (-EFAULT) */
	HEARTH_DROP_KSTACK_MISSING,	/* kernel stack could not be read (-EFAULT) */
	HEARTH_DROP_STACK_OTHER,	/* any other stack helper error */
	HEARTH_DROP_RINGBUF_FULL,	/* samples ring buffer had no room */
	HEARTH_DROP_EVENT_LOST,		/* events ring buffer had no room (not a sample) */
	HEARTH_DROP_IN_OFFCPU_WALK,	/* the tick came inside the off-CPU recorder's
					 * sys_exit walk, whose scratch it would reuse */
	HEARTH_DROP_MAX,
};

/* Per-CPU counters of what was seen (for the summary and metrics). They open the
 * program's per-CPU scratch (map `scratch`, whose value is larger): the program
 * touches that memory on every sample anyway, where a map of their own cost a
 * cold page per sample. */
struct hearth_cpu_stats {
	__u64 samples; /* samples that passed the filters */
	__u64 idle;    /* idle (pid 0) samples skipped */
};
_Static_assert(sizeof(struct hearth_cpu_stats) == 16, "cpu stats ABI");

#endif /* HEARTH_BPF_PROFILE_ABI_H */
