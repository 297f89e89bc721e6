/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ABI of the table-driven (DWARF CFI) user-stack unwinder, shared by
 * bpf/profile.bpf.c and src/unwind/.
 *
 * User space turns each object's .eh_frame into rows sorted by pc (ELF vaddr)
 * and writes them into one big array map, `unwind_rows`, allocated in chunks of
 * HEARTH_UNWIND_CHUNK_ROWS rows. Per process, `unwind_procs` maps the executable
 * address ranges to (first row, row count, load bias). x86-64 only: the rule
 * kinds name RSP/RBP and the PLT expression of the x86-64 psABI.
 */
#ifndef HEARTH_BPF_UNWIND_ABI_H
#define HEARTH_BPF_UNWIND_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* User frames of a table-unwound stack (bpf_loop iterations, one per frame). */
#define HEARTH_UNWIND_MAX_FRAMES 512
/* Rows per allocation chunk of unwind_rows. */
#define HEARTH_UNWIND_CHUNK_ROWS 4096
/* Most chunks unwind_rows may have (its size is set before load: by default
 * HEARTH_UNWIND_DEFAULT_CHUNKS, i.e. 16 MiB of rows). */
#define HEARTH_UNWIND_CHUNKS 1024
#define HEARTH_UNWIND_DEFAULT_CHUNKS 256
/* Binary-search steps over rows: enough for the largest row map (2^22 rows). */
#define HEARTH_UNWIND_ROW_STEPS 22
/* Executable mappings with a table per process, and the steps to search them. */
#define HEARTH_UNWIND_MAX_MAPPINGS 64
#define HEARTH_UNWIND_MAP_STEPS 7
/* Processes with tables at once. */
#define HEARTH_UNWIND_MAX_PROCS 1024

_Static_assert((1ull << HEARTH_UNWIND_ROW_STEPS) >=
		       (unsigned long long)HEARTH_UNWIND_CHUNKS * HEARTH_UNWIND_CHUNK_ROWS,
	       "row search covers the row map");
_Static_assert(HEARTH_UNWIND_DEFAULT_CHUNKS <= HEARTH_UNWIND_CHUNKS, "default fits the maximum");
_Static_assert((1u << HEARTH_UNWIND_MAP_STEPS) >= HEARTH_UNWIND_MAX_MAPPINGS,
	       "mapping search covers a process");

/* How the CFA (canonical frame address) of a row is computed. */
enum hearth_cfa_kind {
	HEARTH_CFA_NONE = 0,	/* no CFI covers this pc: stop */
	HEARTH_CFA_RSP = 1,	/* CFA = rsp + cfa_off */
	HEARTH_CFA_RBP = 2,	/* CFA = rbp + cfa_off */
	HEARTH_CFA_PLT = 3,	/* CFA = rsp + cfa_off + ((rip & 15) >= plt_thr ? 8 : 0) */
	HEARTH_CFA_END = 4,	/* return address undefined: outermost frame, done */
	HEARTH_CFA_UNSUPPORTED = 5, /* a rule hearth does not evaluate: stop cleanly */
	HEARTH_CFA_SIGNAL = 6,	    /* a signal return trampoline: the caller's rip, rsp and
				     * rbp are in the kernel's signal frame at rsp */
};

/* x86-64 Linux signal frame, as the handler's return leaves it (the kernel's
 * struct rt_sigframe after its return address, `pretcode`, was popped): rsp
 * points at struct ucontext, whose uc_mcontext (struct sigcontext) follows
 * uc_flags, uc_link and uc_stack (8 + 8 + 24 bytes). */
#define HEARTH_SIGFRAME_RBP (40 + 80)
#define HEARTH_SIGFRAME_RSP (40 + 120)
#define HEARTH_SIGFRAME_RIP (40 + 128)

/* Where the caller's RBP is. */
enum hearth_rbp_kind {
	HEARTH_RBP_SAME = 0,	/* unchanged (same value or never saved) */
	HEARTH_RBP_OFFSET = 1,	/* saved at CFA + rbp_off */
	HEARTH_RBP_UNKNOWN = 2, /* some other rule: RBP is lost from here on */
};

/* One row: the rule for pcs in [pc, next row's pc). The return address is
 * always at CFA - 8 on x86-64 (other RA rules become HEARTH_CFA_UNSUPPORTED). */
struct hearth_unwind_row {
	__u32 pc;	/* ELF vaddr of the object (objects above 4 GiB get no table) */
	__u8 cfa_kind;	/* enum hearth_cfa_kind */
	__u8 rbp_kind;	/* enum hearth_rbp_kind */
	__u16 plt_thr;	/* HEARTH_CFA_PLT only */
	__s32 cfa_off;
	__s32 rbp_off;
};
_Static_assert(sizeof(struct hearth_unwind_row) == 16, "unwind row ABI");

struct hearth_unwind_mapping {
	__u64 start, end; /* process addresses [start, end) */
	__u64 bias;	  /* vaddr = addr - bias */
	__u32 row_start;  /* first row in unwind_rows; row_count 0 = no table (use fp) */
	__u32 row_count;
	__u32 obj;	  /* the object's slot in unwind_heat (0: none, never gets a table) */
	__u32 flags;	  /* HEARTH_UNWIND_MAP_* */
};
/* The mapping's table is partial (an object whose whole table is over the
 * per-object cap): it holds the rows of the FDEs samples were seen in, so a pc
 * that no loaded FDE covers asks for its FDE (HEARTH_EV_UNWIND_PC). */
#define HEARTH_UNWIND_MAP_PARTIAL 1u
_Static_assert(sizeof(struct hearth_unwind_mapping) == 40, "unwind mapping ABI");

/*
 * Tables on demand (issue 29, docs/unwind.md "Tables by heat"). Every run of
 * frames of a table walk in one mapped object adds one to the object's counter in
 * `unwind_heat` (an mmapable array indexed by struct hearth_unwind_mapping.obj);
 * user space reads the counters, decays them into a heat per object, and keeps
 * the hottest objects' tables in unwind_rows. A frame in an object whose table
 * is not loaded (row_count 0, obj set) is walked with frame pointers meanwhile,
 * and asks for its table: an HEARTH_EV_UNWIND_WANT event (at most one per
 * object per HEARTH_UNWIND_WANT_NS) wakes user space, and the sample goes out
 * with a copy of its stack (struct hearth_raw_sample, up to HEARTH_RAW_PER_WANT
 * per process and gap), walked in user space once the table is in.
 */
#define HEARTH_UNWIND_MAX_OBJECTS 4096
#define HEARTH_UNWIND_WANT_NS	  (1000ull * 1000 * 1000)
#define HEARTH_RAW_PER_WANT	  32

/* Value of unwind_procs (key: pid), mappings sorted by start. */
struct hearth_unwind_proc {
	__u64 pstart; /* process start: a reused pid does not use stale tables */
	__u32 n;
	__u32 pad;
	struct hearth_unwind_mapping m[HEARTH_UNWIND_MAX_MAPPINGS];
};
_Static_assert(sizeof(struct hearth_unwind_proc) == 16 + 40 * HEARTH_UNWIND_MAX_MAPPINGS,
	       "unwind proc ABI");

/* Table-unwound samples go through the ring buffer as struct hearth_rb_sample
 * (bpf/profile_abi.h): its HEARTH_RB_MAX_USER is this depth. */

/* How table unwinding went: why walks stopped, and the frames crossed without a
 * table (per-CPU counters in unwind_stats). */
enum hearth_unwind_stat {
	HEARTH_UW_SAMPLES = 0, /* samples unwound with tables */
	HEARTH_UW_END,	       /* reached the outermost frame (RA undefined) */
	HEARTH_UW_NO_ROW,      /* pc in a table's object but no CFI row (then fp is tried) */
	HEARTH_UW_UNSUPPORTED, /* a rule marked unsupported */
	HEARTH_UW_NO_MAPPING,  /* pc outside every known mapping (then fp is tried) */
	HEARTH_UW_READ_FAIL,   /* stack memory unreadable */
	HEARTH_UW_BAD_FP,     /* mixed mode: rbp not a frame above sp (misaligned, below sp, far) */
	HEARTH_UW_TRUNCATED,  /* HEARTH_UNWIND_MAX_FRAMES reached */
	HEARTH_UW_FP_FRAMES,  /* frames taken with frame pointers (object without table) */
	HEARTH_UW_JIT_FRAMES, /* mixed mode: frames crossed with frame pointers where no
			       * table applies (outside every mapping: JIT code; or no row) */
	HEARTH_UW_SIGNAL,     /* signal frames crossed (to the interrupted code) */
	HEARTH_UW_RAW,	      /* samples sent with a copy of the stack (no view yet) */
	HEARTH_UW_RAW_LOST,   /* ... that found the raw ring full (walked with fp instead) */
	HEARTH_UW_NO_TABLE,   /* frames in an object whose table is not loaded (a request) */
	HEARTH_UW_ROW_CACHE_HITS, /* rows found in the per-CPU row cache (no search) */
	HEARTH_UW_PARTIAL_MISS, /* frames in a partial table's object no loaded FDE covers */
	HEARTH_UW_STAT_MAX,
};

/*
 * A new process's first samples (issue 14). Until user space has published its
 * view, a process announced by a NEW or EXEC event is "pending" (unwind_pending:
 * pid -> struct hearth_unwind_pending) and up to HEARTH_RAW_PER_PROC of its
 * samples go through the `rawstacks` ring buffer with the user registers and a
 * copy of the user stack from rsp up (as perf --call-graph dwarf does); user
 * space walks them with the same tables once the view exists.
 */
#define HEARTH_RAW_STACK_BYTES 16384
#define HEARTH_RAW_PER_PROC    512
#define HEARTH_RAW_MAX_KERNEL  127 /* HEARTH_MAX_STACK (profile_abi.h) */

struct hearth_unwind_pending {
	__u64 pstart;
	__u32 left; /* raw samples this process may still send */
	__u32 pad;
};
_Static_assert(sizeof(struct hearth_unwind_pending) == 16, "pending ABI");

struct hearth_raw_sample {
	__u32 pid, tid;
	__u64 pstart;
	char comm[16], pcomm[16];
	__u64 ip, sp, bp; /* user registers at the sample */
	__u32 stack_len;  /* bytes of stack copied from sp (0: unreadable) */
	__u32 klen;	  /* kernel frames used */
	__u64 kernel[HEARTH_RAW_MAX_KERNEL];
	__u64 pad;
	__u8 stack[HEARTH_RAW_STACK_BYTES];
};
_Static_assert(sizeof(struct hearth_raw_sample) == 80 + 128 * 8 + HEARTH_RAW_STACK_BYTES,
	       "raw sample ABI");

/* The memory of a REMAP's pc, each held back on its own (profile.bpf.c's
 * unwind_remap, keyed by struct hearth_remap_key). */
enum hearth_remap_kind {
	HEARTH_REMAP_FILE = 0,	/* an executable file mapping: a library the view lacks */
	HEARTH_REMAP_OTHER = 1, /* anything else: JIT code, the vdso, no mapping */
	HEARTH_REMAP_KINDS = 2,
};

struct hearth_remap_key {
	__u32 pid;
	__u32 kind; /* enum hearth_remap_kind */
};

#endif /* HEARTH_BPF_UNWIND_ABI_H */
