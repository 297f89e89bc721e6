/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The CRuby frame walk (bpf/ruby_abi.h, docs/ruby.md), included by profile.bpf.c
 * after its scratch and helpers: ruby_frames() appends a thread's Ruby frames to
 * the sample being built, in the runtime slots (`plen`) as CPython's are.
 */
#include "ruby_abi.h"

/* Walk the Ruby frames of processes described in rb_procs (ring-buffer samples). */
const volatile bool use_ruby = false;

/* pid -> how to walk its CRuby frames (src/ruby/ writes it). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HEARTH_RB_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct hearth_rb_proc);
} rb_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HEARTH_RB_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} rb_stats SEC(".maps");

#define RB_WORDS (2 * HEARTH_RB_MAX_FRAMES)
_Static_assert(RB_WORDS <= PY_WORDS, "Ruby frames fit the sample's runtime slots");

/* The walk's state, per CPU (too big for the BPF stack). */
struct hearth_rb_scratch {
	struct hearth_rb_proc p;
	__u64 cfp, end; /* next control frame, end of the VM stack */
	__u32 n;	/* frames recorded */
	__u32 read;	/* bytes of a control frame read */
	__u64 words[RB_WORDS];
	__u8 buf[HEARTH_RB_CFP_READ];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hearth_rb_scratch);
} rb_scratch SEC(".maps");

static __always_inline __u64 rb_word(struct hearth_rb_scratch *r, __u16 off)
{
	if (off > HEARTH_RB_CFP_READ - 8)
		return 0;
	return *(__u64 *)&r->buf[off];
}

/* bpf_loop callback: reads one control frame, records it when it runs Ruby code,
 * moves to its caller (the next frame up the VM stack). */
static long rb_step(__u32 i, void *ctx)
{
	struct hearth_rb_scratch *r;
	__u32 zero = 0, n, size;
	__u64 pc, iseq, ep, env[3] = {0}, flags, w1; /* env: ep[-2], ep[-1], ep[0] */

	r = bpf_map_lookup_elem(&rb_scratch, &zero);
	if (!r || r->cfp >= r->end)
		return 1;
	n = r->n;
	if (n >= HEARTH_RB_MAX_FRAMES) {
		bump(&rb_stats, HEARTH_RB_TRUNCATED);
		return 1;
	}
	size = r->read;
	if (!size || size > HEARTH_RB_CFP_READ)
		return 1;
	if (bpf_probe_read_user(r->buf, size, (void *)r->cfp)) {
		bump(&rb_stats, HEARTH_RB_READ_FAIL);
		return 1;
	}
	r->cfp += r->p.cfp_size;
	pc = rb_word(r, r->p.cfp_pc);
	iseq = rb_word(r, r->p.cfp_iseq);
	ep = rb_word(r, r->p.cfp_ep);
	if (!ep || bpf_probe_read_user(env, sizeof(env), (void *)(ep - 16))) {
		bump(&rb_stats, HEARTH_RB_READ_FAIL);
		return 1;
	}
	flags = env[2];
	if ((flags & HEARTH_RB_FRAME_CFRAME) || !iseq || !pc)
		return 0; /* a C function's frame (its native frame stays) or a dummy */
	w1 = HEARTH_RT_WORD1(HEARTH_RT_RUBY, pc);
	if ((flags & HEARTH_RB_FRAME_MAGIC_MASK) == HEARTH_RB_FRAME_MAGIC_METHOD && env[0]) {
		iseq = env[0]; /* the method entry: its class names the frame */
		w1 |= HEARTH_RB_POS_CME;
	}
	if (flags & HEARTH_RB_FRAME_FINISH)
		w1 |= HEARTH_RT_FRAME_ENTRY;
	r->words[(2 * n) & (RB_WORDS - 1)] = iseq;
	r->words[(2 * n + 1) & (RB_WORDS - 1)] = w1;
	r->n = n + 1;
	return 0;
}

/* The Ruby frames of the current thread, when its process is a described CRuby,
 * appended to the scratch's sample after its native frames. */
static __always_inline void ruby_frames(struct hearth_scratch *st, __u32 pid, __u64 pstart)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct hearth_rb_proc *p = bpf_map_lookup_elem(&rb_procs, &pid);
	struct hearth_rb_scratch *r;
	__u64 dtv = 0, block = 0, ec = 0, ecw[3] = {0}, bytes, maxoff;
	__u32 zero = 0, off;

	if (!p || p->pstart != pstart || st->s.plen)
		return;
	r = bpf_map_lookup_elem(&rb_scratch, &zero);
	if (!r)
		return;
	bump(&rb_stats, HEARTH_RB_SAMPLES);
	r->p = *p;
	if (bpf_probe_read_user(&dtv, sizeof(dtv), (void *)(task->thread.fsbase + r->p.dtv_off)) ||
	    !dtv ||
	    bpf_probe_read_user(&block, sizeof(block),
				(void *)(dtv + r->p.tls_modid * r->p.dtv_stride)))
		goto read_fail;
	if (!block || block == HEARTH_RB_TLS_UNALLOCATED)
		goto no_ec;
	if (bpf_probe_read_user(&ec, sizeof(ec), (void *)(block + r->p.tls_offset)))
		goto read_fail;
	if (!ec)
		goto no_ec;
	if (bpf_probe_read_user(&ecw[0], 8, (void *)(ec + r->p.ec_vm_stack)) ||
	    bpf_probe_read_user(&ecw[1], 8, (void *)(ec + r->p.ec_vm_stack_size)) ||
	    bpf_probe_read_user(&ecw[2], 8, (void *)(ec + r->p.ec_cfp)))
		goto read_fail;
	/* The control frames grow down from the end of the VM stack. */
	r->end = ecw[0] + 8 * ecw[1];
	r->cfp = ecw[2];
	if (!ecw[0] || ecw[1] > (1ull << 28) || r->cfp < ecw[0] || r->cfp > r->end ||
	    !r->p.cfp_size) {
		bump(&rb_stats, HEARTH_RB_BAD_STACK);
		return;
	}
	maxoff = r->p.cfp_pc;
	if (r->p.cfp_iseq > maxoff)
		maxoff = r->p.cfp_iseq;
	if (r->p.cfp_ep > maxoff)
		maxoff = r->p.cfp_ep;
	if (maxoff > HEARTH_RB_CFP_READ - 8)
		goto read_fail;
	r->read = maxoff + 8;
	r->n = 0;
	bpf_loop(HEARTH_RB_MAX_STEPS, rb_step, NULL, 0);
	if (r->cfp < r->end && r->n < HEARTH_RB_MAX_FRAMES)
		bump(&rb_stats, HEARTH_RB_TRUNCATED); /* steps ran out first */
	if (!r->n) {
		bump(&rb_stats, HEARTH_RB_NO_FRAME);
		return;
	}
	bump(&rb_stats, HEARTH_RB_WALKED);
	off = (__u32)st->s.ulen + st->s.klen;
	bytes = (__u64)r->n * 16;
	if (off > NATIVE_FRAMES || bytes > sizeof(r->words))
		return;
	if (bpf_probe_read_kernel(&st->frames[off], bytes, r->words))
		return;
	st->s.plen = r->n;
	add(&rb_stats, HEARTH_RB_FRAMES, r->n);
	return;
no_ec:
	bump(&rb_stats, HEARTH_RB_NO_EC);
	return;
read_fail:
	bump(&rb_stats, HEARTH_RB_READ_FAIL);
}
