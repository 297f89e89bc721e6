/* SPDX-License-Identifier: GPL-2.0 */
/*
 * V8 (Node.js) frames: included by bpf/profile.bpf.c after the CPython walk (it
 * uses the sample scratch). See bpf/v8_abi.h and docs/node.md.
 */
#include "v8_abi.h"

/* Walk the JavaScript frames of processes described in v8_procs. */
const volatile bool use_v8 = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HEARTH_V8_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct hearth_v8_proc);
} v8_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HEARTH_V8_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} v8_stats SEC(".maps");

struct v8_walk {
	struct hearth_v8_proc p;
	__u64 fp, pc;
	__u32 n;
	__u32 pad;
	__u64 words[2 * HEARTH_V8_MAX_FRAMES];
	__u8 buf[HEARTH_V8_READ];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct v8_walk);
} v8_scratch SEC(".maps");

_Static_assert(2 * HEARTH_V8_MAX_FRAMES <= PY_WORDS, "V8 frames fit the runtime slots");

/* The word at fp + off, from the frame read into buf (fp + HEARTH_V8_READ_LO). */
static __always_inline __u64 v8_slot(struct v8_walk *w, __s16 off)
{
	__s32 at = (__s32)off - HEARTH_V8_READ_LO;

	if (at < 0 || at > HEARTH_V8_READ - 8)
		return 0;
	return *(__u64 *)&w->buf[at & 127];
}

/* The instance type of the heap object at tagged address obj; 0 when not one. */
static __always_inline __u32 v8_type(struct v8_walk *w, __u64 obj)
{
	__u64 map = 0;
	__u16 type = 0;

	if ((obj & w->p.heap_tag_mask) != w->p.heap_tag)
		return 0;
	if (bpf_probe_read_user(&map, sizeof(map), (void *)(obj - w->p.heap_tag + w->p.heap_map)))
		return 0;
	if ((map & w->p.heap_tag_mask) != w->p.heap_tag)
		return 0;
	if (bpf_probe_read_user(&type, sizeof(type),
				(void *)(map - w->p.heap_tag + w->p.map_instance_type)))
		return 0;
	return type;
}

/* bpf_loop callback: one frame of the fp chain; records it when it is JS. */
static long v8_step(__u32 i, void *ctx)
{
	__u32 zero = 0, n, ft = HEARTH_V8_FT_COMPILED, bcoff = 0;
	__u64 fp, next, ra, context, fn, sfi = 0, bca, raw;
	struct v8_walk *w = bpf_map_lookup_elem(&v8_scratch, &zero);

	if (!w || !w->fp)
		return 1;
	if (i >= HEARTH_V8_MAX_STEPS - 1) {
		bump(&v8_stats, HEARTH_V8_TRUNCATED);
		return 1;
	}
	fp = w->fp;
	if (bpf_probe_read_user(w->buf, sizeof(w->buf), (void *)(fp + HEARTH_V8_READ_LO))) {
		bump(&v8_stats, HEARTH_V8_READ_FAIL);
		return 1;
	}
	next = v8_slot(w, 0);
	ra = v8_slot(w, 8);
	context = v8_slot(w, w->p.fp_context);
	if ((context & w->p.heap_tag_mask) != w->p.heap_tag) {
		bump(&v8_stats, HEARTH_V8_MARKER); /* a type marker: stub, entry, exit... */
		goto up;
	}
	fn = v8_slot(w, w->p.fp_function);
	if ((fn & w->p.heap_tag_mask) != w->p.heap_tag ||
	    bpf_probe_read_user(&sfi, sizeof(sfi),
				(void *)(fn - w->p.heap_tag + w->p.jsfunction_shared)) ||
	    v8_type(w, sfi) != w->p.type_sfi) {
		bump(&v8_stats, HEARTH_V8_NOT_JS);
		goto up;
	}
	bca = v8_slot(w, w->p.fp_bytecode_array);
	raw = v8_slot(w, w->p.fp_bytecode_offset);
	if (v8_type(w, bca) == w->p.type_bytecode) {
		/* The interpreter keeps the offset as a Smi; baseline code keeps its
		 * feedback there instead. */
		ft = HEARTH_V8_FT_BASELINE;
		if ((raw & 1) == 0) {
			ft = HEARTH_V8_FT_INTERPRETED;
			bcoff = (__u32)((__s64)raw >> (w->p.smi_shift & 63)) - w->p.bytecode_bias;
		}
	}
	n = w->n;
	if (n >= HEARTH_V8_MAX_FRAMES)
		return 1;
	w->words[(2 * n) & (2 * HEARTH_V8_MAX_FRAMES - 1)] = sfi;
	w->words[(2 * n + 1) & (2 * HEARTH_V8_MAX_FRAMES - 1)] =
		HEARTH_RT_WORD1(HEARTH_RT_V8, HEARTH_V8_POS(w->pc, bcoff, ft)) |
		HEARTH_RT_FRAME_ENTRY;
	w->n = n + 1;
up:
	/* Callers' frames lie above: a chain that does not climb has ended. */
	if (!next || next <= fp || (next & 7) || next - fp > (8ull << 20)) {
		bump(&v8_stats, HEARTH_V8_BAD_FP);
		return 1;
	}
	w->fp = next;
	w->pc = ra;
	return 0;
}

/* The JavaScript frames of the current thread, when its process is a described
 * node, appended to the scratch's sample after its native frames. */
static __always_inline void v8_frames(struct hearth_scratch *st, __u32 pid, __u64 pstart)
{
	struct hearth_v8_proc *p = bpf_map_lookup_elem(&v8_procs, &pid);
	struct pt_regs *regs;
	struct v8_walk *w;
	__u32 zero = 0, off;
	__u64 bytes;

	if (!p || p->pstart != pstart || st->s.plen)
		return;
	w = bpf_map_lookup_elem(&v8_scratch, &zero);
	if (!w)
		return;
	bump(&v8_stats, HEARTH_V8_SAMPLES);
	w->p = *p;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	w->fp = BPF_CORE_READ(regs, bp);
	w->pc = BPF_CORE_READ(regs, ip);
	w->n = 0;
	bpf_loop(HEARTH_V8_MAX_STEPS, v8_step, NULL, 0);
	if (!w->n)
		return;
	bump(&v8_stats, HEARTH_V8_WALKED);
	off = (__u32)st->s.ulen + st->s.klen;
	bytes = (__u64)w->n * 16;
	if (off > NATIVE_FRAMES || bytes > sizeof(w->words))
		return;
	if (bpf_probe_read_kernel(&st->frames[off], bytes, w->words))
		return;
	st->s.plen = w->n;
	add(&v8_stats, HEARTH_V8_FRAMES, w->n);
}
