// SPDX-License-Identifier: GPL-2.0
/*
 * hearth's sampling program: runs on a per-CPU cpu-clock perf event, filters
 * (idle, pids, cgroup), and records the user and kernel stacks of whatever ran.
 *
 * Two transfer modes, chosen before load (`use_ringbuf`; hearth's commands choose
 * ringbuf unless told --transfer map):
 *  - counts: stack ids from the kernel's stack-trace maps, counts
 *    aggregated in a hash map keyed by (pid, tid, pstart, stacks, comm). The maps
 *    come in two sets; user space flips `active_set` and drains the idle set
 *    with batched lookup-and-delete, so nothing the program writes is raced by
 *    the drain.
 *  - ringbuf: every sample, frames included, goes through a ring buffer.
 *
 * Nothing is lost silently: every failure bumps a per-CPU counter in `drops`.
 * Process lifecycle (first sample, exec, exit) is sent through `events` so user
 * space reads /proc/PID/maps while the process is still alive.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profile_abi.h"
#include "python_abi.h"
#include "runtime_abi.h"
#include "offcpu_abi.h"
#include "unwind_abi.h"

#define EEXIST 17
#define EFAULT 14
#define E2BIG 7

/* Maps sized here are defaults; user space resizes them before load. The counts
 * and stack maps take their sizes from the ABI header (HEARTH_*_ENTRIES). */
#define KNOWN_ENTRIES 65536
#define FILTER_PIDS_ENTRIES 1024

const volatile bool filter_pid = false;
const volatile bool filter_cgroup = false;
const volatile bool keep_idle = false;
const volatile bool use_ringbuf = false;
/* Walk user stacks with the CFI tables of unwind_procs/unwind_rows where a
 * process has them (--unwind dwarf|auto); otherwise the kernel's fp walker. */
const volatile bool use_unwind = false;
/* Walk the Python frames of processes described in py_procs (ring-buffer samples). */
const volatile bool use_python = false;
/* Samples ring buffer size, for the wake-up threshold (set before load). */
const volatile __u64 samples_rb_size = 4096;

/* Which map set the program writes to; flipped by user space through the mmap'ed .bss. */
__u32 active_set = 0;
/* Bumped when a known process exits: invalidates every CPU's note_process cache. */
__u32 exit_gen = 0;

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HEARTH_COUNTS_ENTRIES);
	__type(key, struct hearth_count_key);
	__type(value, __u64);
};
struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");

struct stacks_map {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, HEARTH_STACKS_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, HEARTH_MAX_STACK * sizeof(__u64));
};
struct stacks_map stacks0 SEC(".maps");
struct stacks_map stacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FILTER_PIDS_ENTRIES);
	__type(key, __u32);
	__type(value, __u8);
} filter_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} filter_cgroups SEC(".maps");

/* pid -> start time of the process we last announced under that pid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, KNOWN_ENTRIES);
	__type(key, __u32);
	__type(value, __u64);
} known SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HEARTH_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* ---- table-driven unwinder (see bpf/unwind_abi.h, docs/unwind.md) ---- */

/* bpf_loop runs the per-frame step at most BPF_MAX_LOOPS (1 << 23) times. */
_Static_assert(HEARTH_UNWIND_MAX_FRAMES <= (1 << 23), "frames fit bpf_loop's bound");
_Static_assert((HEARTH_UNWIND_MAX_FRAMES & (HEARTH_UNWIND_MAX_FRAMES - 1)) == 0,
	       "frame index is masked, so the depth is a power of two");
_Static_assert((HEARTH_UNWIND_MAX_MAPPINGS & (HEARTH_UNWIND_MAX_MAPPINGS - 1)) == 0,
	       "mapping index is masked, so the count is a power of two");
_Static_assert(HEARTH_RB_MAX_USER == HEARTH_UNWIND_MAX_FRAMES,
	       "a ring-buffer record holds a table-unwound stack");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HEARTH_UNWIND_DEFAULT_CHUNKS * HEARTH_UNWIND_CHUNK_ROWS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct hearth_unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HEARTH_UNWIND_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct hearth_unwind_proc);
} unwind_procs SEC(".maps");

/* Frames a sample can carry: user (table-unwound: up to 512), kernel, then two
 * words per Python frame. */
#define NATIVE_FRAMES (HEARTH_RB_MAX_USER + HEARTH_MAX_STACK)
#define PY_WORDS      (2 * HEARTH_PY_MAX_FRAMES)
#define SAMPLE_FRAMES (NATIVE_FRAMES + PY_WORDS)
/* User frames asked for first by send_sample (see there). */
#define USTACK_FIRST 32
/* Slots of the per-CPU row cache (find_row): a power of two. */
#define ROW_CACHE_SLOTS 1024
_Static_assert((ROW_CACHE_SLOTS & (ROW_CACHE_SLOTS - 1)) == 0, "row cache slot is masked");

/* Per-CPU scratch, too big for the 512-byte BPF stack: the sample being built
 * (sent as one block, header and the frames used), the table walker's state and
 * the last process announced from this CPU. */
struct hearth_scratch {
	struct hearth_cpu_stats stats; /* first: user space reads it (bpf/profile_abi.h) */
	__u64 last_pstart; /* note_process: (last_pid, last_pstart, last_gen) was */
	__u32 last_pid;	   /* found in `known` on this CPU, while exit_gen was last_gen */
	__u32 last_gen;
	struct hearth_rb_sample s;
	/* directly after s: user frames, then kernel frames; one more slot for an
	 * off-CPU record's trailing nanoseconds (bpf/offcpu_abi.h) */
	__u64 frames[SAMPLE_FRAMES + 1];
	__u64 pc, sp, bp;
	__u32 pid;
	__u32 bp_valid;
	__u32 remap;	/* a caller's pc was outside every mapping */
	__u64 remap_pc; /* the first such pc (request_remap) */
	__u32 via_jit;	/* the current pc was reached by a mixed-mode (fp) step */
	__u32 exact_pc; /* the current pc is an interrupted one, not a return address */
	__u32 leaf_unmapped;		/* the leaf pc was outside every mapping */
	__u32 no_table; /* a frame was in an object whose table is not loaded */
	__u32 heat_obj; /* object slot of the previous frame (heat counts runs of frames) */
	/* The off-CPU recorder's sys_exit walk is using this scratch: a CPU sample
	 * (a timer interrupt, the only program that can run inside it) must not
	 * (bpf/offcpu.bpf.h). */
	__u32 offcpu_busy;
	/* CPU samples that stepped aside so, and whose thread they were: the
	 * walk's own thread (it runs with preemption off), whose on-CPU time they
	 * are; sent with the walked stack at the walk's end (offcpu_send_missed). */
	__u32 offcpu_missed;
	__u32 offcpu_missed_tid;
	/* Row cache (find_row): a slot per hash of (table, vaddr), the row index
	 * found last time. Every entry is checked against the rows before use. */
	__u32 rcache[ROW_CACHE_SLOTS];
	struct hearth_unwind_proc proc; /* copy of the process view, taken per sample */
	/* Python walk (python_frames): the process's description, the frame to
	 * read next, the frames found (copied after the native ones), the
	 * frame's bytes. */
	struct hearth_py_proc py;
	__u64 py_frame;
	__u32 py_n;
	__u32 py_read; /* bytes of a frame read at once */
	__u64 py_words[PY_WORDS];
	__u8 py_buf[HEARTH_PY_FRAME_READ];
};
_Static_assert(__builtin_offsetof(struct hearth_scratch, stats) == 0, "stats open the scratch");
_Static_assert(__builtin_offsetof(struct hearth_scratch, frames) ==
		       __builtin_offsetof(struct hearth_scratch, s) + sizeof(struct hearth_rb_sample),
	       "frames follow the header");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hearth_scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HEARTH_UW_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} unwind_stats SEC(".maps");

/* (pid, kind) -> the earliest time (bpf_ktime_get_ns) a REMAP of that kind may
 * be asked for: set UNWIND_REMAP_NS ahead at each request, and further by user
 * space while its re-reads find the maps unchanged. The kind is the pc's memory
 * (struct hearth_remap_key): a JIT's leaves, the vdso's or a wrong step's pcs
 * back off their own kind only, so a library dlopened meanwhile, whose pc is in
 * an executable file mapping, is asked for at once. */
#define UNWIND_REMAP_NS (500ull * 1000 * 1000)
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 2 * HEARTH_UNWIND_MAX_PROCS);
	__type(key, struct hearth_remap_key);
	__type(value, __u64);
} unwind_remap SEC(".maps");

/* Processes announced, without a view yet: their samples carry a stack copy. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, HEARTH_UNWIND_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct hearth_unwind_pending);
} unwind_pending SEC(".maps");

/* pid -> how to walk its CPython frames (src/python/ writes it). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HEARTH_PY_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct hearth_py_proc);
} py_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HEARTH_PY_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} py_stats SEC(".maps");

/* Records of struct hearth_raw_sample; sized before load (tiny when not unwinding). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rawstacks SEC(".maps");

#ifdef HEARTH_COST_STAGES
/* Diagnostic build only (`make build/hearth CLANG="clang -DHEARTH_COST_STAGES"`;
 * bench/bpf_cost_stages reads it): ns spent per stage of hearth_sample, summed
 * per CPU, from bpf_ktime_get_ns at each COST_MARK(stage) (the time since the
 * previous mark). Stages: 1 filters, key and note_process; 2 the view's lookup
 * and copy; 3 the table walk; 4 the raw-copy decision and kernel stack; 5 the
 * runtime walks; 6 output; 7 the fp path (send_sample); 8 a raw copy after a
 * walk; 9 a raw copy without a view. Counts: 10 frames walked, 11 walks, 12 raw
 * copies after a walk, 13 fp-path samples. Within the walk (part of 3): 14 the
 * mapping search, 15 the row lookup (COST_ADD of COST_NOW differences). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} cost_stages SEC(".maps");
static __u64 cost_t[4096];
#define COST_MARK(i)                                                                   \
	do {                                                                           \
		__u32 _cpu = bpf_get_smp_processor_id() & 4095, _k = (i);              \
		__u64 _now = bpf_ktime_get_ns(), *_v = bpf_map_lookup_elem(&cost_stages, &_k); \
		if (_v && _k)                                                          \
			*_v += _now - cost_t[_cpu];                                    \
		cost_t[_cpu] = _now;                                                   \
	} while (0)
#define COST_ADD(i, n)                                                                 \
	do {                                                                           \
		__u32 _k = (i);                                                        \
		__u64 *_v = bpf_map_lookup_elem(&cost_stages, &_k);                    \
		if (_v)                                                                \
			*_v += (n);                                                    \
	} while (0)
#define COST_NOW() bpf_ktime_get_ns()
#else
#define COST_MARK(i) do { } while (0)
#define COST_ADD(i, n) do { (void)(n); } while (0)
#define COST_NOW() 0
#endif

static __always_inline void add(void *map, __u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &idx);

	if (v)
		*v += n; /* per-CPU slot: no other writer */
}

static __always_inline void bump(void *map, __u32 idx)
{
	add(map, idx, 1);
}

/* Classifies a stack helper error into a drop counter. */
static __always_inline void count_stack_error(long err, bool user)
{
	if (err == -EEXIST)
		bump(&drops, user ? HEARTH_DROP_USTACK_COLLISION : HEARTH_DROP_KSTACK_COLLISION);
	else if (err == -EFAULT)
		bump(&drops, user ? HEARTH_DROP_USTACK_MISSING : HEARTH_DROP_KSTACK_MISSING);
	else
		bump(&drops, HEARTH_DROP_STACK_OTHER);
}

struct map_search {
	__u64 addr;
	__u32 lo, hi; /* mappings [lo, hi) still candidates */
};

/* bpf_loop callback: one binary-search step over the sample's copy of the
 * process view. As a callback it is verified once; an unrolled loop of
 * branches would be verified once per path (loading took 0.4 s). */
static long map_search_step(__u32 i, void *ctx)
{
	struct map_search *ms = ctx;
	struct hearth_scratch *st;
	__u32 zero = 0, mid;

	st = bpf_map_lookup_elem(&scratch, &zero);
	if (!st || ms->lo >= ms->hi)
		return 1;
	mid = ms->lo + (ms->hi - ms->lo) / 2;
	if (st->proc.m[mid & (HEARTH_UNWIND_MAX_MAPPINGS - 1)].start <= ms->addr)
		ms->lo = mid + 1;
	else
		ms->hi = mid;
	return 0;
}

/* Copies the mapping holding addr into *out; false when none. */
static __always_inline bool find_mapping(struct hearth_scratch *st, __u64 addr,
					 struct hearth_unwind_mapping *out)
{
	struct map_search ms = { addr, 0, st->proc.n };

	if (ms.hi > HEARTH_UNWIND_MAX_MAPPINGS)
		ms.hi = HEARTH_UNWIND_MAX_MAPPINGS;
	bpf_loop(HEARTH_UNWIND_MAP_STEPS + 1, map_search_step, &ms, 0);
	if (ms.lo == 0)
		return false;
	*out = st->proc.m[(ms.lo - 1) & (HEARTH_UNWIND_MAX_MAPPINGS - 1)];
	return addr < out->end;
}

struct row_search {
	__u32 lo, hi; /* rows [lo, hi) still candidates */
	__u32 vaddr;
	__u32 pad;
};

/* bpf_loop callback: one binary-search step. A callback is verified once, where
 * an unrolled loop of HEARTH_UNWIND_ROW_STEPS branches made loading 4x slower. */
static long row_search_step(__u32 i, void *ctx)
{
	struct row_search *rs = ctx;
	struct hearth_unwind_row *r;
	__u32 mid;

	if (rs->lo >= rs->hi)
		return 1;
	mid = rs->lo + (rs->hi - rs->lo) / 2;
	r = bpf_map_lookup_elem(&unwind_rows, &mid);
	if (!r)
		return 1;
	if (r->pc <= rs->vaddr)
		rs->lo = mid + 1;
	else
		rs->hi = mid;
	return 0;
}

/* The last row with row.pc <= vaddr among the mapping's rows, or NULL.
 *
 * At 99 Hz nothing is cached between runs, so a binary search costs one cold
 * line per step (about 17 for a 100k-row table, a few hundred ns each), per
 * frame. Hot code's pcs come back sample after sample, so the index found is
 * kept in a per-CPU slot hashed from (row_start, vaddr), and tried first: it
 * is used only when the rows say it is the answer (row_start <= idx < end,
 * rows[idx].pc <= vaddr, and idx is the last row or rows[idx + 1].pc >
 * vaddr), so a stale slot (a table moved or evicted, another pc) costs a miss,
 * never a wrong row. A hit touches the slot and one or two rows. */
static __always_inline struct hearth_unwind_row *find_row(struct hearth_scratch *st,
							   const struct hearth_unwind_mapping *m,
							   __u64 vaddr)
{
	struct row_search rs = { m->row_start, m->row_start + m->row_count, (__u32)vaddr, 0 };
	struct hearth_unwind_row *r, *next;
	__u32 idx, slot, end = m->row_start + m->row_count;

	if (vaddr >> 32)
		return NULL;
	slot = (((__u32)vaddr ^ (m->row_start << 7)) * 2654435761u) >> 22;
	slot &= ROW_CACHE_SLOTS - 1;
	idx = st->rcache[slot];
	if (idx >= m->row_start && idx < end) {
		r = bpf_map_lookup_elem(&unwind_rows, &idx);
		if (r && r->pc <= (__u32)vaddr) {
			if (idx + 1 == end) {
				bump(&unwind_stats, HEARTH_UW_ROW_CACHE_HITS);
				return r;
			}
			idx++;
			next = bpf_map_lookup_elem(&unwind_rows, &idx);
			if (next && next->pc > (__u32)vaddr) {
				bump(&unwind_stats, HEARTH_UW_ROW_CACHE_HITS);
				return r;
			}
		}
	}
	bpf_loop(HEARTH_UNWIND_ROW_STEPS + 1, row_search_step, &rs, 0);
	if (rs.lo == m->row_start)
		return NULL;
	idx = rs.lo - 1;
	st->rcache[slot] = idx;
	return bpf_map_lookup_elem(&unwind_rows, &idx);
}

/* One frame with frame pointers (objects without a table): 1 = stop. */
static __always_inline long fp_step(struct hearth_scratch *st)
{
	__u64 frame[2]; /* saved rbp, return address */

	if (!st->bp_valid || !st->bp)
		return 1;
	if (bpf_probe_read_user(frame, sizeof(frame), (void *)st->bp)) {
		bump(&unwind_stats, HEARTH_UW_READ_FAIL);
		return 1;
	}
	bump(&unwind_stats, HEARTH_UW_FP_FRAMES);
	st->sp = st->bp + 16;
	st->bp = frame[0];
	st->pc = frame[1];
	/* A frame-pointer step in an object without a table (one too big, or
	 * built without frame pointers) may land anywhere: a caller outside the
	 * view is no sign of a library mapped since (no REMAP: on bench/fleet,
	 * libLLVM's llvmbusy asked for one every 0.5 s, a maps read each). */
	st->via_jit = 1;
	return st->pc == 0;
}

/* Most one frame may span in mixed mode: rbp further than this above sp is not a
 * frame pointer (8 MiB: the default stack limit). */
#define MIXED_MAX_FRAME (8ull << 20)

/* Mixed mode: one frame with frame pointers where no table applies (JIT code in
 * anonymous memory, or code without a CFI row), as a JIT's frames are laid out:
 * CFA = rbp + 16, RA = [rbp + 8], caller's rbp = [rbp]. rbp must look like a frame
 * (8-aligned, at or above sp, within MIXED_MAX_FRAME of it): sp then grows at every
 * step, so a walk cannot loop. 1 = stop. */
static __always_inline long mixed_step(struct hearth_scratch *st)
{
	__u64 frame[2]; /* saved rbp, return address */

	if (!st->bp_valid || (st->bp & 7) || st->bp < st->sp || st->bp - st->sp > MIXED_MAX_FRAME) {
		bump(&unwind_stats, HEARTH_UW_BAD_FP);
		return 1;
	}
	if (bpf_probe_read_user(frame, sizeof(frame), (void *)st->bp)) {
		bump(&unwind_stats, HEARTH_UW_READ_FAIL);
		return 1;
	}
	bump(&unwind_stats, HEARTH_UW_JIT_FRAMES);
	st->sp = st->bp + 16;
	st->bp = frame[0];
	st->pc = frame[1];
	st->via_jit = 1;
	return st->pc == 0;
}

/* The CFA of a row, or 0 when the row says stop (counted). */
static __always_inline __u64 row_cfa(struct hearth_scratch *st, struct hearth_unwind_row *r)
{
	switch (r->cfa_kind) {
	case HEARTH_CFA_RSP:
		return st->sp + r->cfa_off;
	case HEARTH_CFA_RBP:
		if (st->bp_valid)
			return st->bp + r->cfa_off;
		bump(&unwind_stats, HEARTH_UW_UNSUPPORTED);
		return 0;
	case HEARTH_CFA_PLT:
		return st->sp + r->cfa_off + ((st->pc & 15) >= r->plt_thr ? 8 : 0);
	case HEARTH_CFA_END:
		bump(&unwind_stats, HEARTH_UW_END);
		return 0;
	case HEARTH_CFA_NONE:
		bump(&unwind_stats, HEARTH_UW_NO_ROW);
		return 0;
	default:
		bump(&unwind_stats, HEARTH_UW_UNSUPPORTED);
		return 0;
	}
}

/* One frame with a CFI row: CFA, then RA at CFA-8 and RBP per the row. 1 = stop. */
static __always_inline long cfi_step(struct hearth_scratch *st, struct hearth_unwind_row *r)
{
	__u64 cfa = row_cfa(st, r), ra, bp;

	if (!cfa)
		return 1;
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)))
		goto read_fail;
	if (r->rbp_kind == HEARTH_RBP_OFFSET) {
		if (bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + r->rbp_off)))
			goto read_fail;
		st->bp = bp;
		st->bp_valid = 1;
	} else if (r->rbp_kind != HEARTH_RBP_SAME) {
		st->bp_valid = 0;
	}
	st->sp = cfa;
	st->pc = ra;
	return ra == 0;
read_fail:
	bump(&unwind_stats, HEARTH_UW_READ_FAIL);
	return 1;
}

/* A signal return trampoline: the interrupted code's rip, rsp and rbp are in the
 * kernel's signal frame at sp (HEARTH_SIGFRAME_*). Reached as a return address
 * (from the handler), the trampoline's frame is dropped: it is no call site, and
 * its address looked up one byte early names the function before it. The
 * interrupted rip is no return address either: it is looked up as is. 1 = stop. */
static __always_inline long signal_step(struct hearth_scratch *st, __u32 n)
{
	__u64 regs[(HEARTH_SIGFRAME_RIP - HEARTH_SIGFRAME_RBP) / 8 + 1]; /* rbp .. rip */

	if (bpf_probe_read_user(regs, sizeof(regs), (void *)(st->sp + HEARTH_SIGFRAME_RBP))) {
		bump(&unwind_stats, HEARTH_UW_READ_FAIL);
		return 1;
	}
	bump(&unwind_stats, HEARTH_UW_SIGNAL);
	if (n)
		st->s.ulen = n;
	st->bp = regs[0];
	st->bp_valid = 1;
	st->sp = regs[(HEARTH_SIGFRAME_RSP - HEARTH_SIGFRAME_RBP) / 8];
	st->pc = regs[(HEARTH_SIGFRAME_RIP - HEARTH_SIGFRAME_RBP) / 8];
	st->exact_pc = 1;
	return st->pc == 0;
}

#include "unwind_heat.bpf.h" /* tables on demand: heat and requests */
#include "java.bpf.h" /* HotSpot frames: java_begin, java_step, java_finish */

/* bpf_loop callback: records the current pc, then steps to the caller. */
static long unwind_step(__u32 i, void *ctx)
{
	struct hearth_unwind_mapping m;
	struct hearth_unwind_row *r;
	struct hearth_scratch *st;
	__u32 zero = 0, n;
	__u64 addr, t0;
	bool found;

	st = bpf_map_lookup_elem(&scratch, &zero);
	if (!st)
		return 1;
	n = st->s.ulen;
	if (n >= HEARTH_UNWIND_MAX_FRAMES) {
		bump(&unwind_stats, HEARTH_UW_TRUNCATED);
		return 1;
	}
	/* Callers' pcs are return addresses: the call is the byte before. User space
	 * takes a caller's frame as one too (src/collect, "addr - 1"), so the pc a
	 * signal interrupted, exact, is recorded one byte on: a signal at a
	 * function's first byte is then named as that function, not its padding. */
	st->frames[n & (HEARTH_UNWIND_MAX_FRAMES - 1)] = st->pc + (n && st->exact_pc);
	st->s.ulen = n + 1;
	addr = n && !st->exact_pc ? st->pc - 1 : st->pc;
	st->exact_pc = 0;
	t0 = COST_NOW();
	found = find_mapping(st, addr, &m);
	COST_ADD(14, COST_NOW() - t0);
	if (!found) {
		long jr = java_step(st, addr, n == 0);

		if (jr >= 0)
			return jr;
		bump(&unwind_stats, HEARTH_UW_NO_MAPPING);
		/* A leaf outside the view, or a caller a table step led to, may be in
		 * a library loaded (dlopen) since the view was read: ask for a re-read.
		 * A leaf in JIT code asks too; user space backs off while re-reads find
		 * nothing new (unwind_remap). A caller reached from JIT code is no sign. */
		if (!st->via_jit && !st->remap) {
			st->remap = 1;
			st->remap_pc = addr;
		}
		if (n == 0)
			st->leaf_unmapped = 1;
		return mixed_step(st);
	}
	st->via_jit = 0;
	unwind_heat_hit(st, &m);
	if (!m.row_count)
		return fp_step(st);
	t0 = COST_NOW();
	r = find_row(st, &m, addr - m.bias);
	COST_ADD(15, COST_NOW() - t0);
	if (r && r->cfa_kind == HEARTH_CFA_SIGNAL)
		return signal_step(st, n);
	if (!r || r->cfa_kind == HEARTH_CFA_NONE) {
		/* A partial table (docs/unwind.md "Partial tables"): ask for the FDE. */
		if (m.flags & HEARTH_UNWIND_MAP_PARTIAL)
			unwind_partial_miss(st, &m, addr - m.bias);
		/* Code without CFI in an object with a table (a JIT's builtins, hand-
		 * written assembly): frame pointers, as for JIT code. */
		bump(&unwind_stats, HEARTH_UW_NO_ROW);
		return mixed_step(st);
	}
	return cfi_step(st, r);
}

/* Until user space publishes the view of (pid, pstart), its samples carry a
 * stack copy (see send_raw_sample). */
static __always_inline void mark_pending(__u32 pid, __u64 pstart)
{
	struct hearth_unwind_pending p = {pstart, HEARTH_RAW_PER_PROC, 0};

	if (use_unwind)
		bpf_map_update_elem(&unwind_pending, &pid, &p, BPF_ANY);
}

/* Announces a process the first time one of its samples is seen (or after pid
 * reuse). The CPU's last answer is kept in its scratch: a CPU mostly samples the
 * same process again, and the `known` LRU lookup (hash, bucket and element: cold
 * lines at 99 Hz) cost more than a third of the fp program (see
 * docs/overhead.md, "BPF cost per sample"). An exit of a known process bumps exit_gen, so a cached
 * answer never outlives the `known` entry it stands for. */
static __always_inline void note_process(struct hearth_scratch *st, __u32 pid, __u64 pstart,
					 struct task_struct *task)
{
	struct hearth_event *ev;
	__u32 gen = exit_gen;
	__u64 *seen;

	if (st->last_pid == pid && st->last_pstart == pstart && st->last_gen == gen)
		return;
	seen = bpf_map_lookup_elem(&known, &pid);
	if (seen && *seen == pstart)
		goto cache;
	bpf_map_update_elem(&known, &pid, &pstart, BPF_ANY);
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		bump(&drops, HEARTH_DROP_EVENT_LOST);
		bpf_map_delete_elem(&known, &pid); /* try again on the next sample */
		return;
	}
	ev->kind = HEARTH_EV_NEW;
	ev->pid = pid;
	ev->pstart = pstart;
	BPF_CORE_READ_STR_INTO(&ev->comm, task, group_leader, comm);
	bpf_ringbuf_submit(ev, 0);
	mark_pending(pid, pstart);
cache:
	st->last_pid = pid;
	st->last_pstart = pstart;
	st->last_gen = gen;
}

/* ---- CPython frames (bpf/python_abi.h, docs/python.md) ---- */

/* A word of the frame read into py_buf, at an offset user space gave. */
static __always_inline __u64 py_word(struct hearth_scratch *st, __u16 off)
{
	if (off > HEARTH_PY_FRAME_READ - 8)
		return 0;
	return *(__u64 *)&st->py_buf[off];
}

static __always_inline __u8 py_byte(struct hearth_scratch *st, __u16 off)
{
	if (off > HEARTH_PY_FRAME_READ - 1)
		return 0;
	return st->py_buf[off];
}

/* Marks the last frame recorded as the outermost of its evaluation loop. */
static __always_inline void py_mark_entry(struct hearth_scratch *st)
{
	__u32 n = st->py_n;

	if (n > 0 && n <= HEARTH_PY_MAX_FRAMES)
		st->py_words[(2 * (n - 1) + 1) & (PY_WORDS - 1)] |= HEARTH_PY_FRAME_ENTRY;
}

/* bpf_loop callback: reads one interpreter frame, records it, moves to its caller. */
static long py_step(__u32 i, void *ctx)
{
	struct hearth_scratch *st;
	__u32 zero = 0, n, layout, size;
	__u64 code, type, instr;

	st = bpf_map_lookup_elem(&scratch, &zero);
	if (!st || !st->py_frame)
		return 1;
	n = st->py_n;
	if (n >= HEARTH_PY_MAX_FRAMES) {
		bump(&py_stats, HEARTH_PY_TRUNCATED);
		return 1;
	}
	size = st->py_read;
	if (!size || size > HEARTH_PY_FRAME_READ)
		return 1;
	if (bpf_probe_read_user(st->py_buf, size, (void *)st->py_frame)) {
		bump(&py_stats, HEARTH_PY_READ_FAIL);
		return 1;
	}
	layout = st->py.layout;
	st->py_frame = py_word(st, st->py.f_previous);
	/* 3.12+: a shim frame owned by the C stack closes each evaluation loop's run. */
	if (layout >= HEARTH_PY_LAYOUT_312 &&
	    py_byte(st, st->py.f_owner) == HEARTH_PY_OWNED_BY_CSTACK) {
		py_mark_entry(st);
		return 0;
	}
	code = py_word(st, st->py.f_code);
	if (!code || bpf_probe_read_user(&type, sizeof(type), (void *)(code + st->py.ob_type)) ||
	    type != st->py.code_type) {
		bump(&py_stats, HEARTH_PY_NOT_CODE);
		return 1;
	}
	if (layout == HEARTH_PY_LAYOUT_310)
		instr = (__u32)py_word(st, st->py.f_instr) | HEARTH_PY_FRAME_ENTRY;
	else
		instr = py_word(st, st->py.f_instr) & HEARTH_PY_FRAME_INSTR;
	if (layout == HEARTH_PY_LAYOUT_311 && py_byte(st, st->py.f_is_entry))
		instr |= HEARTH_PY_FRAME_ENTRY;
	st->py_words[(2 * n) & (PY_WORDS - 1)] = code;
	st->py_words[(2 * n + 1) & (PY_WORDS - 1)] = instr;
	st->py_n = n + 1;
	return 0;
}

/* The Python frames of the current thread, when its process is a described
 * CPython, appended to the scratch's sample after its native frames. */
static __always_inline void python_frames(struct hearth_scratch *st, __u32 pid, __u64 pstart)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct hearth_py_proc *p = bpf_map_lookup_elem(&py_procs, &pid);
	__u64 tstate = 0, frame = 0, at, bytes;
	__u32 off, maxoff;

	if (!p || p->pstart != pstart)
		return;
	bump(&py_stats, HEARTH_PY_SAMPLES);
	st->py = *p;
	at = task->thread.fsbase + st->py.tss_slot;
	if (bpf_probe_read_user(&tstate, sizeof(tstate), (void *)at))
		goto read_fail;
	if (!tstate) {
		bump(&py_stats, HEARTH_PY_NO_TSTATE);
		return;
	}
	if (bpf_probe_read_user(&frame, sizeof(frame), (void *)(tstate + st->py.ts_frame)))
		goto read_fail;
	if (frame && (st->py.layout == HEARTH_PY_LAYOUT_311 || st->py.layout == HEARTH_PY_LAYOUT_312) &&
	    bpf_probe_read_user(&frame, sizeof(frame), (void *)(frame + st->py.cframe_frame)))
		goto read_fail;
	if (!frame) {
		bump(&py_stats, HEARTH_PY_NO_FRAME);
		return;
	}
	/* Read as little of each frame as its fields need. */
	maxoff = st->py.f_previous;
	if (st->py.f_code > maxoff)
		maxoff = st->py.f_code;
	if (st->py.f_instr > maxoff)
		maxoff = st->py.f_instr;
	if (st->py.f_owner != HEARTH_PY_NO_OFFSET && st->py.f_owner > maxoff)
		maxoff = st->py.f_owner;
	if (st->py.f_is_entry != HEARTH_PY_NO_OFFSET && st->py.f_is_entry > maxoff)
		maxoff = st->py.f_is_entry;
	if (maxoff > HEARTH_PY_FRAME_READ - 8) {
		bump(&py_stats, HEARTH_PY_READ_FAIL);
		return;
	}
	st->py_read = maxoff + 8;
	st->py_frame = frame;
	st->py_n = 0;
	bpf_loop(HEARTH_PY_MAX_FRAMES + 1, py_step, NULL, 0);
	if (!st->py_n)
		return;
	bump(&py_stats, HEARTH_PY_WALKED);
	/* After the native frames: at most 639 of them, and PY_WORDS of room. */
	off = (__u32)st->s.ulen + st->s.klen;
	bytes = (__u64)st->py_n * 16;
	if (off > NATIVE_FRAMES || bytes > sizeof(st->py_words))
		return;
	if (bpf_probe_read_kernel(&st->frames[off], bytes, st->py_words))
		return;
	st->s.plen = st->py_n;
	add(&py_stats, HEARTH_PY_FRAMES, st->py_n);
	return;
read_fail:
	bump(&py_stats, HEARTH_PY_READ_FAIL);
}

#include "v8.bpf.h"
#include "ruby.bpf.h"

/* Sends the scratch's sample: the header and only the frames used. */
static __always_inline void output_sample(struct hearth_scratch *st)
{
	__u64 size = sizeof(st->s) +
		     sizeof(__u64) * ((__u64)st->s.ulen + st->s.klen + 2 * (__u64)st->s.plen +
				      (st->s.kind ? 1 : 0));
	long flags;

	if (size > sizeof(st->s) + sizeof(st->frames))
		return; /* cannot happen (lengths are bounded); tells the verifier */
	/* Wake the reader only when the buffer is half full; it also polls on a timer. */
	flags = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > samples_rb_size / 2 ?
			BPF_RB_FORCE_WAKEUP :
			BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&samples, &st->s, size, flags))
		bump(&drops, HEARTH_DROP_RINGBUF_FULL);
}

/* Fills the scratch's sample header from the aggregation key. */
static __always_inline void sample_header(struct hearth_scratch *st, struct hearth_count_key *key)
{
	st->s.pid = key->pid;
	st->s.tid = key->tid;
	st->s.pstart = key->pstart;
	__builtin_memcpy(st->s.comm, key->comm, sizeof(st->s.comm));
	__builtin_memcpy(st->s.pcomm, key->pcomm, sizeof(st->s.pcomm));
	st->s.ulen = 0;
	st->s.klen = 0;
	st->s.plen = 0;
	st->s.kind = 0;
}

#define HEARTH_VM_EXEC 0x4 /* include/linux/mm.h */

/* bpf_find_vma's callback: the kind of memory the pc is in. */
static long remap_vma_kind(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	__u32 *kind = data;

	if (vma->vm_file && (vma->vm_flags & HEARTH_VM_EXEC))
		*kind = HEARTH_REMAP_FILE;
	return 0;
}

/* Asks user space to re-read a process's maps (rate-limited per pid and kind:
 * unwind_remap). pc: the first pc the walk found outside the view. Its kind is
 * looked up only when one of the pid's kinds is not held back. */
static __always_inline void request_remap(struct hearth_count_key *key, __u64 pc)
{
	struct hearth_remap_key rk = {.pid = key->pid, .kind = HEARTH_REMAP_FILE};
	__u64 now = bpf_ktime_get_ns(), next_ns, *next;
	struct hearth_event *ev;
	long err;

	next = bpf_map_lookup_elem(&unwind_remap, &rk);
	if (next && now < *next) {
		rk.kind = HEARTH_REMAP_OTHER;
		next = bpf_map_lookup_elem(&unwind_remap, &rk);
		if (next && now < *next)
			return;
	}
	/* Memory not mapped from an executable file (JIT code, the vdso, a wrong
	 * step's pc) is OTHER. The mmap lock taken (-EBUSY: the process maps or
	 * unmaps right now, a dlopen perhaps) counts as FILE. */
	rk.kind = HEARTH_REMAP_OTHER;
	err = bpf_find_vma(bpf_get_current_task_btf(), pc, remap_vma_kind, &rk.kind, 0);
	if (err == -16 /* -EBUSY */)
		rk.kind = HEARTH_REMAP_FILE;
	next = bpf_map_lookup_elem(&unwind_remap, &rk);
	if (next && now < *next)
		return;
	next_ns = now + UNWIND_REMAP_NS;
	bpf_map_update_elem(&unwind_remap, &rk, &next_ns, BPF_ANY);
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		bump(&drops, HEARTH_DROP_EVENT_LOST);
		return;
	}
	ev->kind = HEARTH_EV_REMAP;
	ev->pid = key->pid;
	ev->pstart = key->pstart;
	ev->remap.pc = pc;
	ev->remap.kind = rk.kind;
	ev->remap.pad = 0;
	bpf_ringbuf_submit(ev, 0);
}

static __always_inline bool send_raw_sample(struct bpf_perf_event_data *ctx,
					    struct hearth_count_key *key, bool want_kernel);

/* Table-unwinds the current task's user stack into the scratch's sample (its
 * header from key). False when the process has no tables. Also the off-CPU
 * recorder's user walk (bpf/offcpu.bpf.h), from the blocked task's context. */
static __always_inline bool unwind_user(struct hearth_scratch *st, struct hearth_count_key *key)
{
	struct hearth_unwind_proc *p;
	struct pt_regs *regs;
	__u32 nmap;

	p = bpf_map_lookup_elem(&unwind_procs, &key->pid);
	if (!p || p->pstart != key->pstart)
		return false;
	/* A copy: user space may replace the view (exec) while we walk. Only the
	 * mappings in use: the whole view is 2 KB of cold lines per sample. */
	nmap = p->n;
	if (nmap > HEARTH_UNWIND_MAX_MAPPINGS)
		nmap = HEARTH_UNWIND_MAX_MAPPINGS;
	if (bpf_probe_read_kernel(&st->proc,
				  __builtin_offsetof(struct hearth_unwind_proc, m) +
					  nmap * sizeof(struct hearth_unwind_mapping),
				  p))
		return false;
	st->proc.n = nmap; /* what was copied, even if the view changed meanwhile */
	COST_MARK(2);
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	st->pc = BPF_CORE_READ(regs, ip);
	st->sp = BPF_CORE_READ(regs, sp);
	st->bp = BPF_CORE_READ(regs, bp);
	st->bp_valid = 1;
	st->pid = key->pid;
	sample_header(st, key);
	st->remap = 0;
	st->remap_pc = 0;
	st->via_jit = 0;
	st->exact_pc = 0;
	st->leaf_unmapped = 0;
	st->no_table = 0;
	st->heat_obj = 0;
	java_begin(key->pid, key->pstart);
	bpf_loop(HEARTH_UNWIND_MAX_FRAMES + 1, unwind_step, NULL, 0);
	COST_MARK(3);
	COST_ADD(10, st->s.ulen);
	COST_ADD(11, 1);
	if (st->remap)
		request_remap(key, st->remap_pc);
	if (st->no_table)
		unwind_heat_gap(key);
	return true;
}

/* Table-unwinds the current task's user stack and sends the sample. Returns
 * false when the process has no tables (the caller takes the fp path). */
static __always_inline bool send_dwarf_sample(struct bpf_perf_event_data *ctx,
					      struct hearth_scratch *st,
					      struct hearth_count_key *key, bool want_kernel)
{
	__u32 ulen;
	long n;

	if (!unwind_user(st, key))
		return false;
	/* A table step led to a caller outside the view, or the leaf is outside
	 * it: the view may have been read before ld.so (or dlopen) mapped that
	 * library (or the leaf is JIT code). While the process may still send
	 * stack copies, send one instead: walked in user space once the view is
	 * read again, it reaches the root where this walk stopped. */
	if ((st->remap || st->leaf_unmapped || st->no_table) &&
	    send_raw_sample(ctx, key, want_kernel)) {
		COST_ADD(12, 1);
		COST_MARK(8);
		return true;
	}
	bump(&unwind_stats, HEARTH_UW_SAMPLES);
	if (want_kernel) {
		/* Kernel frames right after the user ones (ulen <= 512: room for 127). */
		ulen = st->s.ulen;
		if (ulen > HEARTH_RB_MAX_USER)
			ulen = HEARTH_RB_MAX_USER;
		n = bpf_get_stack(ctx, &st->frames[ulen], HEARTH_MAX_STACK * sizeof(__u64), 0);
		if (n < 0)
			count_stack_error(n, false);
		else
			st->s.klen = n / sizeof(__u64);
	}
	COST_MARK(4);
	if (use_python)
		python_frames(st, key->pid, key->pstart);
	if (use_v8)
		v8_frames(st, key->pid, key->pstart);
	java_finish(st);
	if (use_ruby)
		ruby_frames(st, key->pid, key->pstart);
	COST_MARK(5);
	output_sample(st);
	COST_MARK(6);
	return true;
}

/* Copies up to HEARTH_RAW_STACK_BYTES of user stack from sp. A copy that would
 * run past the top of the stack mapping fails whole: on the main thread's
 * stack, the copy then ends just above the initial stack pointer
 * (mm->start_stack: argc, above _start's frame), elsewhere smaller copies are
 * tried. Not at argv's strings (mm->arg_start): exec leaves a random gap of up
 * to 8 KiB below them (arch_align_stack) whose pages the process never
 * touches, and a read of a page not present fails whole; a deep main stack
 * then came out as 4 KiB and walked partially. */
static __always_inline __u32 copy_stack(__u8 *dst, __u64 sp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 top = BPF_CORE_READ(task, mm, start_stack) + 16;
	__u32 len;

	if (!bpf_probe_read_user(dst, HEARTH_RAW_STACK_BYTES, (void *)sp))
		return HEARTH_RAW_STACK_BYTES;
	if (top > sp && top - sp < HEARTH_RAW_STACK_BYTES) {
		len = (__u32)(top - sp) & (HEARTH_RAW_STACK_BYTES - 1);
		if (len && !bpf_probe_read_user(dst, len, (void *)sp))
			return len;
	}
	if (!bpf_probe_read_user(dst, HEARTH_RAW_STACK_BYTES / 2, (void *)sp))
		return HEARTH_RAW_STACK_BYTES / 2;
	if (!bpf_probe_read_user(dst, HEARTH_RAW_STACK_BYTES / 4, (void *)sp))
		return HEARTH_RAW_STACK_BYTES / 4;
	if (!bpf_probe_read_user(dst, HEARTH_RAW_STACK_BYTES / 16, (void *)sp))
		return HEARTH_RAW_STACK_BYTES / 16;
	return 0;
}

/* A sample of a process announced but without a view yet: its registers and a
 * copy of its user stack go to user space, which walks them with the tables
 * once the view is published. False when the process is not pending (or has
 * sent its share, or the ring is full): the caller takes the fp path. */
static __always_inline bool send_raw_sample(struct bpf_perf_event_data *ctx,
					    struct hearth_count_key *key, bool want_kernel)
{
	struct hearth_unwind_pending *p = bpf_map_lookup_elem(&unwind_pending, &key->pid);
	struct hearth_raw_sample *r;
	struct pt_regs *regs;
	long n;

	if (!p || p->pstart != key->pstart || !p->left)
		return false;
	r = bpf_ringbuf_reserve(&rawstacks, sizeof(*r), 0);
	if (!r) {
		bump(&unwind_stats, HEARTH_UW_RAW_LOST);
		return false;
	}
	__sync_fetch_and_add(&p->left, -1);
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	r->pid = key->pid;
	r->tid = key->tid;
	r->pstart = key->pstart;
	__builtin_memcpy(r->comm, key->comm, sizeof(r->comm));
	__builtin_memcpy(r->pcomm, key->pcomm, sizeof(r->pcomm));
	r->ip = BPF_CORE_READ(regs, ip);
	r->sp = BPF_CORE_READ(regs, sp);
	r->bp = BPF_CORE_READ(regs, bp);
	r->stack_len = copy_stack(r->stack, r->sp);
	r->klen = 0;
	if (want_kernel) {
		n = bpf_get_stack(ctx, r->kernel, sizeof(r->kernel), 0);
		if (n > 0)
			r->klen = n / sizeof(__u64);
	}
	bump(&unwind_stats, HEARTH_UW_RAW);
	bpf_ringbuf_submit(r, 0);
	return true;
}

/* Sends one sample with the kernel's stack walkers: frames go to the per-CPU
 * scratch, then only the used ones to the ring buffer (bpf_get_stack zero-fills
 * the rest of its buffer; in the ring that was 2 KB of cold lines per sample). */
static __always_inline int send_sample(struct bpf_perf_event_data *ctx, struct hearth_scratch *st,
				       struct hearth_count_key *key, bool want_user,
				       bool want_kernel)
{
	__u32 ulen = 0;
	long n = 0;

	sample_header(st, key);
	if (want_user) {
		/* bpf_get_stack zero-fills what it does not use of its buffer: a short
		 * one first (most stacks fit), the full depth only when it was filled. */
		n = bpf_get_stack(ctx, st->frames, USTACK_FIRST * sizeof(__u64),
				  BPF_F_USER_STACK);
		if (n == USTACK_FIRST * sizeof(__u64))
			n = bpf_get_stack(ctx, st->frames, HEARTH_MAX_STACK * sizeof(__u64),
					  BPF_F_USER_STACK);
		if (n < 0)
			goto fail;
		ulen = n / sizeof(__u64);
		if (ulen > HEARTH_MAX_STACK)
			ulen = HEARTH_MAX_STACK;
		st->s.ulen = ulen;
	}
	if (want_kernel) {
		n = bpf_get_stack(ctx, &st->frames[ulen], HEARTH_MAX_STACK * sizeof(__u64), 0);
		if (n < 0) {
			want_user = false;
			goto fail;
		}
		st->s.klen = n / sizeof(__u64);
	}
	if (use_python && want_user)
		python_frames(st, key->pid, key->pstart);
	if (use_v8 && want_user)
		v8_frames(st, key->pid, key->pstart);
	if (use_ruby && want_user)
		ruby_frames(st, key->pid, key->pstart);
	output_sample(st);
	return 0;
fail:
	count_stack_error(n, want_user);
	return 0;
}

static __always_inline int count_sample(struct bpf_perf_event_data *ctx,
					struct hearth_scratch *st, void *counts, void *stacks,
					struct hearth_count_key *key, bool want_user,
					bool want_kernel)
{
	__u64 one = 1, *val;
	bool user_err = true;
	long err;

	key->ustack_id = -1;
	key->kstack_id = -1;
	if (want_user) {
		err = bpf_get_stackid(ctx, stacks, BPF_F_USER_STACK);
		if (err < 0)
			goto stack_error;
		key->ustack_id = err;
	}
	if (want_kernel) {
		err = bpf_get_stackid(ctx, stacks, 0);
		user_err = false;
		if (err < 0)
			goto stack_error;
		key->kstack_id = err;
	}
	val = bpf_map_lookup_elem(counts, key);
	if (val) {
		__sync_fetch_and_add(val, 1);
		return 0;
	}
	err = bpf_map_update_elem(counts, key, &one, BPF_NOEXIST);
	if (err == -EEXIST) { /* another CPU inserted it first */
		val = bpf_map_lookup_elem(counts, key);
		if (val)
			__sync_fetch_and_add(val, 1);
	} else if (err) {
		bump(&drops, HEARTH_DROP_MAP_FULL);
	}
	return 0;
stack_error:
	count_stack_error(err, user_err);
	/* A hash collision in the stack map: the stack is fine, only its slot is
	 * taken. Send this sample whole through the ring buffer instead (counted as
	 * a collision, not lost). */
	if (err == -EEXIST)
		return send_sample(ctx, st, key, want_user, want_kernel);
	return 0;
}

/* The interrupted CS register. The context only allows 8-byte loads of regs, so
 * read the aligned word cs lives in (x86-64: cs is a 2-byte field at an 8-byte
 * aligned offset; its low bits are the privilege level). */
static __always_inline __u64 user_cs(struct bpf_perf_event_data *ctx)
{
	return *(volatile __u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs));
}

SEC("perf_event")
int hearth_sample(struct bpf_perf_event_data *ctx)
{
	struct hearth_count_key key = {};
	struct task_struct *task, *leader;
	struct hearth_scratch *st;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, zero = 0;
	bool want_user, want_kernel;

	COST_MARK(0);
	st = bpf_map_lookup_elem(&scratch, &zero);
	if (!st)
		return 0; /* cannot happen: a one-entry per-CPU array */
	if (st->offcpu_busy) {
		if (!st->offcpu_missed || st->offcpu_missed_tid == tid) {
			st->offcpu_missed_tid = tid;
			st->offcpu_missed++;
		}
		bump(&drops, HEARTH_DROP_IN_OFFCPU_WALK);
		return 0;
	}
	if (pid == 0 && !keep_idle) {
		st->stats.idle++; /* per-CPU: no other writer */
		return 0;
	}
	if (filter_pid && !bpf_map_lookup_elem(&filter_pids, &pid))
		return 0;
	if (filter_cgroup && bpf_current_task_under_cgroup(&filter_cgroups, 0) != 1)
		return 0;
	st->stats.samples++;

	/* Plain loads through the BTF task pointer: no helper call per field. */
	task = bpf_get_current_task_btf();
	leader = task->group_leader;
	key.pid = pid;
	key.tid = tid;
	key.pstart = leader->start_boottime;
	__builtin_memcpy(key.comm, task->comm, sizeof(key.comm));
	/* The process name now, not at drain time: samples taken before an exec keep
	 * the name they ran under. */
	if (pid == tid)
		__builtin_memcpy(key.pcomm, key.comm, sizeof(key.pcomm));
	else
		__builtin_memcpy(key.pcomm, leader->comm, sizeof(key.pcomm));
	if (pid != 0)
		note_process(st, pid, key.pstart, task);

	/* Kernel threads have no user stack; a sample taken in user mode has no
	 * kernel stack. Neither is a loss. (x86-64: CPL is the low 2 bits of CS.) */
	want_user = task->mm != NULL;
	want_kernel = (user_cs(ctx) & 3) == 0;
	COST_MARK(1);

	if (use_unwind && want_user &&
	    (send_dwarf_sample(ctx, st, &key, want_kernel) ||
	     send_raw_sample(ctx, &key, want_kernel))) {
		COST_MARK(9);
		return 0;
	}
	if (use_ringbuf) {
		send_sample(ctx, st, &key, want_user, want_kernel);
		COST_MARK(7);
		COST_ADD(13, 1);
		return 0;
	}
	if (active_set)
		return count_sample(ctx, st, &counts1, &stacks1, &key, want_user, want_kernel);
	return count_sample(ctx, st, &counts0, &stacks0, &key, want_user, want_kernel);
}

static __always_inline void send_event(__u32 kind, struct task_struct *task)
{
	struct hearth_event *ev;
	__u32 pid = BPF_CORE_READ(task, tgid);
	__u64 *seen = bpf_map_lookup_elem(&known, &pid);

	if (!seen)
		return; /* never sampled: nobody cares */
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		bump(&drops, HEARTH_DROP_EVENT_LOST);
		return;
	}
	ev->kind = kind;
	ev->pid = pid;
	ev->pstart = *seen;
	BPF_CORE_READ_STR_INTO(&ev->comm, task, group_leader, comm);
	if (kind == HEARTH_EV_EXIT) {
		bpf_map_delete_elem(&known, &pid);
		__sync_fetch_and_add(&exit_gen, 1); /* CPUs' note_process caches are stale */
	}
	bpf_ringbuf_submit(ev, 0);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(hearth_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = BPF_CORE_READ(p, tgid);
	struct hearth_remap_key rk = {.pid = pid, .kind = HEARTH_REMAP_FILE};

	/* The old image's view would walk the new image with wrong tables: fp
	 * until user space publishes the new view (EXEC event). */
	if (use_unwind) {
		bpf_map_delete_elem(&unwind_procs, &pid);
		/* The new image asks for its own maps re-reads: a REMAP of the old
		 * one (or its hold, for a JIT) must not keep them back 0.5-10 s. */
		bpf_map_delete_elem(&unwind_remap, &rk);
		rk.kind = HEARTH_REMAP_OTHER;
		bpf_map_delete_elem(&unwind_remap, &rk);
		/* A process sampled before its exec: the new image's samples carry a
		 * stack copy until its view is published (the EXEC event asks for
		 * it). One never sampled is announced by its first sample instead:
		 * building views at every exec would cost user space a maps read per
		 * exec on a build machine, for processes mostly never sampled. */
		if (bpf_map_lookup_elem(&known, &pid))
			mark_pending(pid, BPF_CORE_READ(p, group_leader, start_boottime));
	}
	send_event(HEARTH_EV_EXEC, p);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(hearth_exit, struct task_struct *p)
{
	/* Per thread; only the group leader's exit ends the process. */
	if (BPF_CORE_READ(p, pid) == BPF_CORE_READ(p, tgid))
		send_event(HEARTH_EV_EXIT, p);
	return 0;
}

#include "offcpu.bpf.h"

char LICENSE[] SEC("license") = "GPL";
