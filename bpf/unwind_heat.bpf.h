/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Unwind tables on demand (issue 29; bpf/unwind_abi.h, docs/unwind.md): the
 * per-object heat counters every table walk feeds, and the request a frame in
 * an object without a loaded table makes. Included by bpf/profile.bpf.c after
 * its maps (events, unwind_stats, unwind_pending, scratch).
 */
#ifndef HEARTH_UNWIND_HEAT_BPF_H
#define HEARTH_UNWIND_HEAT_BPF_H

_Static_assert((HEARTH_UNWIND_MAX_OBJECTS & (HEARTH_UNWIND_MAX_OBJECTS - 1)) == 0,
	       "object slot is masked, so the count is a power of two");

/* Frames walked per object slot (struct hearth_unwind_mapping.obj), read by user
 * space through a mapping of the array (no syscall per object). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HEARTH_UNWIND_MAX_OBJECTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} unwind_heat SEC(".maps");

/* Object slot -> when its table was last asked for (HEARTH_UNWIND_WANT_NS apart). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HEARTH_UNWIND_MAX_OBJECTS);
	__type(key, __u32);
	__type(value, __u64);
} unwind_want_ns SEC(".maps");

/* Asks user space for the table of object slot obj (rate-limited per object). */
static __always_inline void unwind_want(struct hearth_scratch *st, __u32 obj)
{
	__u64 now = bpf_ktime_get_ns(), *last = bpf_map_lookup_elem(&unwind_want_ns, &obj);
	struct hearth_event *ev;

	if (!last || now - *last < HEARTH_UNWIND_WANT_NS)
		return;
	*last = now;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		bump(&drops, HEARTH_DROP_EVENT_LOST);
		return;
	}
	ev->kind = HEARTH_EV_UNWIND_WANT;
	ev->pid = st->s.pid;
	ev->pstart = st->s.pstart;
	__builtin_memcpy(ev->comm, st->s.pcomm, sizeof(ev->comm));
	bpf_ringbuf_submit(ev, 0);
}

/* A frame landed in mapping m: heat for its object (once per run of frames in
 * it: a sample adds about one per object it crosses, and a 200-deep recursion
 * costs one atomic add, not 200); without a loaded table, a request (the walk
 * goes on with frame pointers, and the sample is sent with a stack copy when it
 * can: st->no_table). */
static __always_inline void unwind_heat_hit(struct hearth_scratch *st,
					    const struct hearth_unwind_mapping *m)
{
	__u32 obj = m->obj & (HEARTH_UNWIND_MAX_OBJECTS - 1);
	__u64 *hits;

	if (!obj || obj == st->heat_obj)
		return; /* a run of frames in one object counts once (deep recursion) */
	st->heat_obj = obj;
	hits = bpf_map_lookup_elem(&unwind_heat, &obj);
	if (hits)
		__sync_fetch_and_add(hits, 1);
	if (m->row_count)
		return;
	bump(&unwind_stats, HEARTH_UW_NO_TABLE);
	st->no_table = 1;
	unwind_want(st, obj);
}

/* Partial tables: (object slot, vaddr) -> when its FDE was last asked for
 * (HEARTH_UNWIND_WANT_NS apart). An LRU: a pc asked for long ago is forgotten. */
struct hearth_pc_want_key {
	__u32 obj;
	__u32 vaddr;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct hearth_pc_want_key);
	__type(value, __u64);
} unwind_pc_want SEC(".maps");

/* A frame at vaddr in mapping m, whose table is partial, found no loaded FDE:
 * ask user space for the FDE of that pc (rate-limited per pc). The walk goes on
 * with frame pointers meanwhile and the sample may carry a stack copy, as for
 * an object without its table (st->no_table). */
static __always_inline void unwind_partial_miss(struct hearth_scratch *st,
						const struct hearth_unwind_mapping *m, __u64 vaddr)
{
	struct hearth_pc_want_key k = {m->obj & (HEARTH_UNWIND_MAX_OBJECTS - 1), (__u32)vaddr};
	__u64 now = bpf_ktime_get_ns(), *last;
	struct hearth_event *ev;

	bump(&unwind_stats, HEARTH_UW_PARTIAL_MISS);
	st->no_table = 1;
	if (!k.obj || vaddr >> 32)
		return;
	last = bpf_map_lookup_elem(&unwind_pc_want, &k);
	if (last && now - *last < HEARTH_UNWIND_WANT_NS)
		return;
	bpf_map_update_elem(&unwind_pc_want, &k, &now, BPF_ANY);
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		bump(&drops, HEARTH_DROP_EVENT_LOST);
		return;
	}
	ev->kind = HEARTH_EV_UNWIND_PC;
	ev->pid = st->s.pid;
	ev->pstart = st->s.pstart;
	ev->want.vaddr = vaddr;
	ev->want.obj = k.obj;
	ev->want.pad = 0;
	bpf_ringbuf_submit(ev, 0);
}

/* A walk crossed an object without its table: until user space loads it and
 * re-publishes the view (which ends the gap), the process's samples may carry a
 * stack copy (HEARTH_RAW_PER_WANT of them), walked in user space with the table. */
static __always_inline void unwind_heat_gap(struct hearth_count_key *key)
{
	struct hearth_unwind_pending p = {key->pstart, HEARTH_RAW_PER_WANT, 0};

	bpf_map_update_elem(&unwind_pending, &key->pid, &p, BPF_NOEXIST);
}

#endif /* HEARTH_UNWIND_HEAT_BPF_H */
