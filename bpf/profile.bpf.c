// SPDX-License-Identifier: GPL-2.0
/*
 * hearth's sampling program: runs on a per-CPU cpu-clock perf event, filters
 * (idle, pids, cgroup), and records the user and kernel stacks of whatever ran.
 *
 * Two transfer modes, chosen before load:
 *  - counts (default): stack ids from the kernel's stack-trace maps, counts
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

#define EEXIST 17
#define EFAULT 14
#define E2BIG 7

/* Maps sized here are defaults; user space resizes them before load. */
#define COUNTS_ENTRIES 16384
#define STACKS_ENTRIES 16384
#define KNOWN_ENTRIES 65536
#define FILTER_PIDS_ENTRIES 1024

const volatile bool filter_pid = false;
const volatile bool filter_cgroup = false;
const volatile bool keep_idle = false;
const volatile bool use_ringbuf = false;
/* Samples ring buffer size, for the wake-up threshold (set before load). */
const volatile __u64 samples_rb_size = 4096;

/* Which map set the program writes to; flipped by user space through the mmap'ed .bss. */
__u32 active_set = 0;

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COUNTS_ENTRIES);
	__type(key, struct hearth_count_key);
	__type(value, __u64);
};
struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");

struct stacks_map {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, STACKS_ENTRIES);
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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HEARTH_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void bump(void *map, __u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(map, &idx);

	if (v)
		*v += 1; /* per-CPU slot: no other writer */
}

/* Announces a process the first time one of its samples is seen (or after pid reuse). */
static __always_inline void note_process(__u32 pid, __u64 pstart, struct task_struct *task)
{
	struct hearth_event *ev;
	__u64 *seen = bpf_map_lookup_elem(&known, &pid);

	if (seen && *seen == pstart)
		return;
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

static __always_inline int send_sample(struct bpf_perf_event_data *ctx,
				       struct hearth_count_key *key, bool want_user,
				       bool want_kernel)
{
	struct hearth_rb_sample *s;
	long n = 0, flags;

	s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
	if (!s) {
		bump(&drops, HEARTH_DROP_RINGBUF_FULL);
		return 0;
	}
	s->pid = key->pid;
	s->tid = key->tid;
	s->pstart = key->pstart;
	__builtin_memcpy(s->comm, key->comm, sizeof(s->comm));
	__builtin_memcpy(s->pcomm, key->pcomm, sizeof(s->pcomm));
	s->ulen = 0;
	s->klen = 0;
	if (want_user) {
		n = bpf_get_stack(ctx, s->ustack, sizeof(s->ustack), BPF_F_USER_STACK);
		if (n < 0)
			goto fail;
		s->ulen = n / sizeof(__u64);
	}
	if (want_kernel) {
		n = bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0);
		if (n < 0) {
			want_user = false;
			goto fail;
		}
		s->klen = n / sizeof(__u64);
	}
	/* Wake the reader only when the buffer is half full; it also polls on a timer. */
	flags = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > samples_rb_size / 2 ?
			BPF_RB_FORCE_WAKEUP :
			BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(s, flags);
	return 0;
fail:
	count_stack_error(n, want_user);
	bpf_ringbuf_discard(s, BPF_RB_NO_WAKEUP);
	return 0;
}

static __always_inline int count_sample(struct bpf_perf_event_data *ctx, void *counts,
					void *stacks, struct hearth_count_key *key, bool want_user,
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
		return send_sample(ctx, key, want_user, want_kernel);
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
	struct task_struct *task;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;
	bool want_user, want_kernel;

	if (pid == 0 && !keep_idle) {
		bump(&stats, HEARTH_STAT_IDLE);
		return 0;
	}
	if (filter_pid && !bpf_map_lookup_elem(&filter_pids, &pid))
		return 0;
	if (filter_cgroup && bpf_current_task_under_cgroup(&filter_cgroups, 0) != 1)
		return 0;
	bump(&stats, HEARTH_STAT_SAMPLES);

	task = (struct task_struct *)bpf_get_current_task();
	key.pid = pid;
	key.tid = tid;
	key.pstart = BPF_CORE_READ(task, group_leader, start_boottime);
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	/* The process name now, not at drain time: samples taken before an exec keep
	 * the name they ran under. */
	BPF_CORE_READ_STR_INTO(&key.pcomm, task, group_leader, comm);
	if (pid != 0)
		note_process(pid, key.pstart, task);

	/* Kernel threads have no user stack; a sample taken in user mode has no
	 * kernel stack. Neither is a loss. (x86-64: CPL is the low 2 bits of CS.) */
	want_user = BPF_CORE_READ(task, mm) != NULL;
	want_kernel = (user_cs(ctx) & 3) == 0;

	if (use_ringbuf)
		return send_sample(ctx, &key, want_user, want_kernel);
	if (active_set)
		return count_sample(ctx, &counts1, &stacks1, &key, want_user, want_kernel);
	return count_sample(ctx, &counts0, &stacks0, &key, want_user, want_kernel);
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
	if (kind == HEARTH_EV_EXIT)
		bpf_map_delete_elem(&known, &pid);
	bpf_ringbuf_submit(ev, 0);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(hearth_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
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

char LICENSE[] SEC("license") = "GPL";
