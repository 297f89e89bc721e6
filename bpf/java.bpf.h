/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HotSpot frames (bpf/java_abi.h, docs/java.md), included by profile.bpf.c
 * after the table walker's helpers. java_begin looks the sampled process up in
 * `java_procs`; the table walker (unwind_step) hands each pc outside every
 * file mapping to java_step, which records one Java frame for a pc in the code
 * cache and steps to its caller; java_finish copies the frames after the
 * native ones. Every stop is counted in `java_stats`.
 */
#include "java_abi.h"

/* Walk HotSpot frames of processes described in java_procs (table-unwound samples). */
const volatile bool use_java = false;

/* pid -> how to walk its HotSpot frames (src/java/ writes it). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HEARTH_JAVA_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct hearth_java_proc);
} java_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HEARTH_JAVA_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} java_stats SEC(".maps");

#define JAVA_WORDS (2 * HEARTH_JAVA_MAX_FRAMES)
/* Interpreter frame slots read at once: rbp - JAVA_SLOTS_BELOW .. rbp + 16. */
#define JAVA_SLOTS_BELOW 12
#define JAVA_BLOB_READ 64

/* Per-CPU state of one sample's Java walk. */
struct hearth_java_state {
	struct hearth_java_proc p; /* copy of the process's description */
	__u32 valid;		   /* the sampled process is a described JVM */
	__u32 n;		   /* Java frames recorded */
	__u64 segmap;		   /* segment-map search: map, index, result */
	__u64 idx;
	__s32 found;		   /* 1 block start found, -1 free or too far */
	__u32 leaf;		   /* the frame being stepped is the interrupted one */
	__u64 slots[JAVA_SLOTS_BELOW + 2];
	__u8 blob[JAVA_BLOB_READ];
	__u64 words[JAVA_WORDS];
};
_Static_assert(HEARTH_JAVA_MAX_FRAMES <= HEARTH_PY_MAX_FRAMES, "Java frames use the runtime slots");
_Static_assert((JAVA_WORDS & (JAVA_WORDS - 1)) == 0, "frame index is masked");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hearth_java_state);
} java_state SEC(".maps");

static __always_inline struct hearth_java_state *java_st(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&java_state, &zero);
}

/* Before a table walk: is the sampled process a described JVM? */
static __always_inline void java_begin(__u32 pid, __u64 pstart)
{
	struct hearth_java_state *js = java_st();
	struct hearth_java_proc *p;

	if (!js)
		return;
	js->valid = 0;
	js->n = 0;
	if (!use_java)
		return;
	p = bpf_map_lookup_elem(&java_procs, &pid);
	if (!p || p->pstart != pstart)
		return;
	if (bpf_probe_read_kernel(&js->p, sizeof(js->p), p))
		return;
	js->valid = 1;
	bump(&java_stats, HEARTH_JAVA_SAMPLES);
}

static __always_inline void java_emit(struct hearth_java_state *js, __u64 w0, __u32 type, __u64 addr)
{
	__u32 n = js->n;
	__u64 leaf = js->leaf ? HEARTH_JAVA_LEAF : 0;

	js->words[(2 * n) & (JAVA_WORDS - 1)] = w0;
	js->words[(2 * n + 1) & (JAVA_WORDS - 1)] =
		HEARTH_RT_WORD1(HEARTH_RT_JAVA, HEARTH_JAVA_POS(type, addr) | leaf) |
		HEARTH_RT_FRAME_ENTRY;
	js->n = n + 1;
}

/* bpf_loop callback: one hop back through a code heap's segment map (HotSpot's
 * CodeHeap::find_start: 0xff a free segment, 0 a block's first, else how many
 * segments back to go). */
static long java_segmap_step(__u32 i, void *ctx)
{
	struct hearth_java_state *js = java_st();
	__u8 b;

	if (!js)
		return 1;
	if (bpf_probe_read_user(&b, 1, (void *)(js->segmap + js->idx))) {
		js->found = -2;
		return 1;
	}
	if (b == 0xff) {
		js->found = -1;
		return 1;
	}
	if (b == 0) {
		js->found = 1;
		return 1;
	}
	if (js->idx < b) {
		js->found = -1;
		return 1;
	}
	js->idx -= b;
	return 0;
}

static __always_inline __s32 java_int(struct hearth_java_state *js, __u16 off)
{
	if (off > JAVA_BLOB_READ - 4)
		return 0;
	return *(__s32 *)&js->blob[off];
}

static __always_inline __u64 java_slot(struct hearth_java_state *js, __s16 off)
{
	__s32 b = off + 8 * JAVA_SLOTS_BELOW;
	__u32 i;

	if (b < 0 || (b & 7))
		return 0;
	i = (__u32)b >> 3;
	if (i >= JAVA_SLOTS_BELOW + 2)
		return 0;
	return js->slots[i & 15];
}

/* An interpreter frame: Method*, bcp, the caller's sp, rbp and pc from the
 * frame's fixed slots around rbp. 1 = stop. */
static __always_inline long java_interp_step(struct hearth_scratch *st,
					     struct hearth_java_state *js, __u64 pc)
{
	__u64 bp = st->bp, sender_sp;

	if (!st->bp_valid || (bp & 7) || bp < st->sp || bp - st->sp > MIXED_MAX_FRAME) {
		java_emit(js, 0, HEARTH_JAVA_UNKNOWN, pc);
		bump(&java_stats, HEARTH_JAVA_BAD_FRAME);
		return 1;
	}
	if (bpf_probe_read_user(js->slots, sizeof(js->slots), (void *)(bp - 8 * JAVA_SLOTS_BELOW))) {
		java_emit(js, 0, HEARTH_JAVA_UNKNOWN, pc);
		bump(&java_stats, HEARTH_JAVA_READ_FAIL);
		return 1;
	}
	java_emit(js, java_slot(js, js->p.interp_method), HEARTH_JAVA_INTERP,
		  java_slot(js, js->p.interp_bcp));
	bump(&java_stats, HEARTH_JAVA_F_INTERP);
	sender_sp = java_slot(js, js->p.interp_sender_sp);
	/* The caller's own sp (its frame size counts from there when it is
	 * compiled); rbp + 16 when the slot does not look like one. */
	st->sp = sender_sp >= bp + 16 && sender_sp - bp < MIXED_MAX_FRAME ? sender_sp : bp + 16;
	st->bp = js->slots[JAVA_SLOTS_BELOW];
	st->pc = js->slots[JAVA_SLOTS_BELOW + 1];
	st->bp_valid = 1;
	return st->pc == 0;
}

/* One frame whose pc (addr: pc - 1 for return addresses) may lie in a JVM's code
 * cache. -1: not Java code (the caller steps as before); else 1 = stop, as the
 * other steps. leaf: the frame is the interrupted one. */
static __always_inline long java_step(struct hearth_scratch *st, __u64 addr, bool leaf)
{
	struct hearth_java_state *js = java_st();
	struct hearth_java_heap *h = NULL;
	__u64 pc = st->pc, blob, top, frame[2];
	__s32 fs, fc;
	__u32 type;

	if (!js || !js->valid || addr < js->p.code_low || addr >= js->p.code_high)
		return -1;
	if (js->n >= HEARTH_JAVA_MAX_FRAMES) {
		bump(&java_stats, HEARTH_JAVA_TRUNCATED);
		return 1;
	}
	st->via_jit = 1;
	js->leaf = leaf;
	if (addr >= js->p.interp_low && addr < js->p.interp_high)
		return java_interp_step(st, js, pc);
	for (int i = 0; i < HEARTH_JAVA_MAX_HEAPS; i++) {
		if (i < js->p.n_heaps && addr >= js->p.heaps[i].low && addr < js->p.heaps[i].high) {
			h = &js->p.heaps[i];
			break;
		}
	}
	if (!h || h->log2_seg > 16)
		goto no_blob;
	js->segmap = h->segmap;
	js->idx = (addr - h->low) >> h->log2_seg;
	js->found = 0;
	bpf_loop(HEARTH_JAVA_SEGMAP_HOPS, java_segmap_step, NULL, 0);
	if (js->found != 1)
		goto no_blob;
	blob = h->low + (js->idx << h->log2_seg) + js->p.block_header;
	if (bpf_probe_read_user(js->blob, sizeof(js->blob), (void *)blob))
		goto read_fail;
	type = java_int(js, js->p.blob_type);
	fs = java_int(js, js->p.blob_frame_size);
	fc = java_int(js, js->p.blob_frame_complete);
	if (type) {
		/* The nmethod, not its Method*: user space reads the method and the
		 * inlined scopes at this pc from it. */
		java_emit(js, blob, HEARTH_JAVA_COMPILED, pc);
		bump(&java_stats, HEARTH_JAVA_F_COMPILED);
	} else {
		java_emit(js, blob, HEARTH_JAVA_STUB, pc);
		bump(&java_stats, HEARTH_JAVA_F_STUB);
	}
	if (fs <= 0) {
		/* Buffer blobs (the call stub, method handle adapters) keep rbp frames. */
		bump(&java_stats, HEARTH_JAVA_STUB_FP);
		return mixed_step(st);
	}
	if (fs > HEARTH_JAVA_MAX_FRAME_WORDS) {
		bump(&java_stats, HEARTH_JAVA_BAD_FRAME);
		return 1;
	}
	if (leaf && fc > 0 && pc < *(__u64 *)&js->blob[js->p.blob_code_begin & 0x38] + fc) {
		/* Interrupted before its frame was built: the return address is at
		 * sp (a pushed rbp, if any, is missed). */
		bump(&java_stats, HEARTH_JAVA_PROLOGUE);
		top = st->sp + 8;
	} else {
		top = st->sp + 8 * (__u64)fs;
	}
	if (bpf_probe_read_user(frame, sizeof(frame), (void *)(top - 16))) {
		bump(&java_stats, HEARTH_JAVA_READ_FAIL);
		return 1;
	}
	/* Compiled code saves the caller's rbp just below the return address. */
	if (top != st->sp + 8)
		st->bp = frame[0];
	st->bp_valid = 1;
	st->sp = top;
	st->pc = frame[1];
	return st->pc == 0;
no_blob:
	java_emit(js, 0, HEARTH_JAVA_UNKNOWN, pc);
	bump(&java_stats, HEARTH_JAVA_NO_BLOB);
	return 1;
read_fail:
	java_emit(js, 0, HEARTH_JAVA_UNKNOWN, pc);
	bump(&java_stats, HEARTH_JAVA_READ_FAIL);
	return 1;
}

/* After the walk and the kernel frames: the Java frames after the native ones. */
static __always_inline void java_finish(struct hearth_scratch *st)
{
	struct hearth_java_state *js = java_st();
	__u64 off, bytes;
	__u32 n;

	if (!js || !js->valid)
		return;
	n = js->n;
	if (!n)
		return;
	bump(&java_stats, HEARTH_JAVA_WALKED);
	off = (__u64)st->s.ulen + st->s.klen;
	bytes = (__u64)n * 16;
	if (off > NATIVE_FRAMES || bytes > sizeof(js->words) || n > HEARTH_JAVA_MAX_FRAMES)
		return;
	if (bpf_probe_read_kernel(&st->frames[off], bytes, js->words))
		return;
	st->s.plen = n;
}
