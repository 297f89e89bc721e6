// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU recorder: time threads spend off the CPU, split by reason, with the
 * stack they waited in (docs/offcpu.md). Included at the end of
 * bpf/profile.bpf.c: it reuses its scratch, key, unwinder and samples ring.
 *
 * The constraint is cost per context switch (hundreds of thousands a second on
 * a pipe ping-pong), so the per-switch work is a task-storage record and no
 * stack at all:
 *
 *   switch-out (prev == current)  t_out (the run queue's clock), a reason from
 *                                 the state (throttled, runnable, D) or "by
 *                                 syscall"; no registers read
 *   switch-in (next)              runqueue = rq clock - next's sched_info.last_queued
 *                                 (wakeup or preemption: schedstat's run_delay),
 *                                 blocked = the rest since t_out; both added to
 *                                 the thread's per-reason sums (the syscall
 *                                 reason from next's user registers, unchanged
 *                                 since it left). A sum that reaches
 *                                 offcpu_min_ns is sent with this block's
 *                                 stack: the kernel stack now
 *                                 (bpf_get_task_stack) and, if it blocked in a
 *                                 syscall, `pending` for the user stack
 *   task work (the task itself)   queued at switch-in for a block sent
 *                                 (bpf_task_work_schedule_resume, 6.18): runs
 *                                 on its way back to user space, the user
 *                                 registers still the blocking syscall's:
 *                                 walk the user stack (tables, fp, Python)
 *                                 and send the record(s). Without the kfunc:
 *   rseq_update (the task itself) on its way back to user space (rseq's
 *                                 notify-resume work, set by every switch-out
 *                                 of a thread with rseq registered): its user
 *                                 registers are still the blocking syscall's:
 *                                 walk the user stack (tables, fp, Python) and
 *                                 send the record(s)
 *   sys_exit                      the same for threads without rseq; attached
 *                                 only once one needs it (offcpu_want_exit)
 *   sched_wakeup_new              a new thread's wait for its first run
 *
 * next's user memory cannot be read at switch-in (another mm is loaded), hence
 * the lazy user walk. A block not in a syscall (preempted in user mode, a page
 * fault) is sent at switch-in with its user leaf pc only (counted LEAF_ONLY).
 * A thread blocked for an hour is one record of one hour, sent when it runs
 * again.
 */
#ifndef HEARTH_BPF_OFFCPU_BPF_H
#define HEARTH_BPF_OFFCPU_BPF_H

/* A thread's off-CPU time is sent (with a stack) per this much of one reason. */
const volatile __u64 offcpu_min_ns = HEARTH_OFFCPU_DEFAULT_MIN_NS;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct hearth_offcpu_task);
} offcpu_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HEARTH_OFFCPU_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} offcpu_stats SEC(".maps");

/* Set by user space when the kernel has bpf_task_work_schedule_resume (6.18):
 * a block sent with a stack gets a task work that walks its user stack on the
 * thread's way back to user space; rseq_update is then not attached. */
const volatile bool offcpu_use_tw = false;

extern void bpf_preempt_disable(void) __ksym __weak;
extern void bpf_preempt_enable(void) __ksym __weak;
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map, bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;

/* The task works, one per tid modulo the size: a collision (the slot's work
 * not run yet) falls back to the per-CPU pending tid (rseq_update/sys_exit). */
struct offcpu_tw_slot {
	struct bpf_task_work tw;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct offcpu_tw_slot);
} offcpu_tw SEC(".maps");

/* Set when a thread without rseq (Go, static musl, glibc.pthread.rseq=0) has a
 * block pending: user space then attaches sys_exit, which puts every syscall of
 * the machine on the tracepoint path (docs/offcpu.md, "Cost"). */
__u32 offcpu_want_exit = 0;

/* The thread last switched in on this CPU with a block pending: every syscall
 * exit of the machine passes sys_exit, which compares its tid with this one
 * before it looks at task storage (61 -> ~25 ns a syscall, docs/offcpu.md). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} offcpu_pending_tid SEC(".maps");

#define OFFCPU_TASK_RUNNING	    0
#define OFFCPU_TASK_UNINTERRUPTIBLE 2
#define OFFCPU_PF_KTHREAD	    0x00200000
/* FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME off the op: the command. */
#define OFFCPU_FUTEX_CMD(op) ((op) & ~(128 | 256))

/* x86-64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl). */
static __always_inline __u32 offcpu_syscall_reason(long nr, __u64 arg1)
{
	switch (nr) {
	case 202: /* futex */
		switch (OFFCPU_FUTEX_CMD(arg1)) {
		case 0:	 /* FUTEX_WAIT: glibc's mutex slow path (lll_lock_wait) */
		case 6:	 /* FUTEX_LOCK_PI */
		case 13: /* FUTEX_LOCK_PI2 */
			return HEARTH_OFFCPU_LOCK;
		default: /* WAIT_BITSET (condition variables, semaphores), WAIT_REQUEUE_PI */
			return HEARTH_OFFCPU_SLEEP;
		}
	case 449: /* futex_waitv */
		return HEARTH_OFFCPU_LOCK;
	case 7: case 271: case 23: case 270: /* poll ppoll select pselect6 */
	case 232: case 281: case 441:	     /* epoll_wait epoll_pwait epoll_pwait2 */
	case 35: case 230: case 34:	     /* nanosleep clock_nanosleep pause */
	case 61: case 247: case 130: case 128: /* wait4 waitid rt_sigsuspend rt_sigtimedwait */
		return HEARTH_OFFCPU_SLEEP;
	case 0: case 1: case 17: case 18:    /* read write pread64 pwrite64 */
	case 19: case 20: case 295: case 296: /* readv writev preadv pwritev */
	case 44: case 45: case 46: case 47:  /* sendto recvfrom sendmsg recvmsg */
	case 299: case 307: case 43: case 288: /* recvmmsg sendmmsg accept accept4 */
	case 42: case 74: case 75: case 40:  /* connect fsync fdatasync sendfile */
	case 275: case 426: case 208:	     /* splice io_uring_enter io_getevents */
		return HEARTH_OFFCPU_IO;
	}
	return HEARTH_OFFCPU_OTHER;
}

/* Whether the task's CPU quota is spent: 6.18 throttles per task (task->throttled,
 * set when it is dequeued on its way back to user space); older kernels by
 * cfs_rq (throttle_count > 0 when it or an ancestor is throttled). */
static __always_inline bool offcpu_throttled(struct task_struct *p)
{
	struct cfs_rq *cfs;

	if (bpf_core_field_exists(p->throttled) && p->throttled)
		return true;
	cfs = p->se.cfs_rq;
	return cfs && cfs->throttle_count > 0;
}

/* The aggregation key (identity, names) of task p, as hearth_sample makes it. */
static __always_inline void offcpu_key(struct hearth_count_key *key, struct task_struct *p)
{
	struct task_struct *leader = p->group_leader;

	key->pid = p->tgid;
	key->tid = p->pid;
	key->pstart = leader->start_boottime;
	__builtin_memcpy(key->comm, p->comm, sizeof(key->comm));
	__builtin_memcpy(key->pcomm, leader->comm, sizeof(key->pcomm));
	key->ustack_id = -1;
	key->kstack_id = -1;
}

/* Appends the block's kernel frames (captured at switch-in) after the user ones. */
static __always_inline void offcpu_kframes(struct hearth_scratch *st, struct hearth_offcpu_task *t)
{
	__u32 off = st->s.ulen, n = t->klen;

	if (n > HEARTH_OFFCPU_KFRAMES)
		n = HEARTH_OFFCPU_KFRAMES;
	if (off > HEARTH_RB_MAX_USER || !n)
		return;
	if (!bpf_probe_read_kernel(&st->frames[off], n * sizeof(__u64), t->kframes))
		st->s.klen = n;
}

/* Sends the scratch's frames as one record of kind with word trailing them, and adds
 * word to counter `stat` once sent. */
static __always_inline void offcpu_record(struct hearth_scratch *st, __u16 kind, __u64 word,
					  __u32 stat)
{
	__u32 idx = (__u32)st->s.ulen + st->s.klen + 2 * (__u32)st->s.plen;

	if (idx > SAMPLE_FRAMES)
		return; /* cannot happen: the lengths are bounded; tells the verifier */
	st->frames[idx] = word;
	st->s.kind = kind;
	if (bpf_ringbuf_output(&samples, &st->s,
			       sizeof(st->s) + sizeof(__u64) * ((__u64)idx + 1), 0)) {
		bump(&offcpu_stats, HEARTH_OFFCPU_RINGBUF_FULL);
		return;
	}
	add(&offcpu_stats, stat, word);
}

/* Sends the scratch's frames as one off-CPU record of ns nanoseconds. */
static __always_inline void offcpu_output(struct hearth_scratch *st, __u32 reason, __u64 ns)
{
	if (ns)
		offcpu_record(st, HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_OFFCPU, reason), ns,
			      HEARTH_OFFCPU_SENT_NS);
}

/* Sends a pending block: the blocked part under its reason, then the run-queue
 * wait after it, both with the frames now in the scratch. */
static __always_inline void offcpu_send(struct hearth_scratch *st, struct hearth_offcpu_task *t)
{
	__u16 ulen = st->s.ulen, klen = st->s.klen, plen = st->s.plen;

	bump(&offcpu_stats, HEARTH_OFFCPU_BLOCKS);
	offcpu_output(st, t->pend_reason, t->pend_ns);
	st->s.ulen = ulen; /* the verifier forgets them across the helper call */
	st->s.klen = klen;
	st->s.plen = plen;
	offcpu_output(st, HEARTH_OFFCPU_RUNQUEUE, t->pend_rq_ns);
}

/*
 * The CPU samples that stepped aside during this walk (offcpu_busy) are on-CPU
 * time of the walked thread: a tick inside the walk interrupts that thread on
 * its way back to user space, the stack just walked its user stack. Sent as one
 * "running" record of that many samples with the walked frames (no kernel
 * frames: the block's are where it waited), for the wall-clock view; user space
 * times them by the sample period. They stay counted as CPU-sample drops.
 */
static __always_inline void offcpu_send_missed(struct hearth_scratch *st, __u32 tid)
{
	__u32 n = st->offcpu_missed;

	st->offcpu_missed = 0;
	if (!n || st->offcpu_missed_tid != tid || st->s.tid != tid)
		return;
	if (!st->s.plen) /* the Python words follow the kernel frames: kept then */
		st->s.klen = 0;
	offcpu_record(st, HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_RUNNING, 0), n,
		      HEARTH_OFFCPU_WALK_SAMPLES);
}

/* A block whose user stack cannot be walked: its user leaf pc and kernel frames. */
static __always_inline void offcpu_send_leaf(struct hearth_scratch *st, struct task_struct *p,
					     struct hearth_offcpu_task *t)
{
	struct hearth_count_key key = {};

	offcpu_key(&key, p);
	note_process(st, key.pid, key.pstart, p);
	sample_header(st, &key);
	if (t->user_ip) {
		st->frames[0] = t->user_ip;
		st->s.ulen = 1;
	}
	offcpu_kframes(st, t);
	offcpu_send(st, t);
}

static __always_inline struct hearth_scratch *offcpu_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* t->reason at switch-out: a reason, or OFFCPU_BY_SYSCALL (an interruptible
 * sleep: decided at switch-in from the syscall it sleeps in), and
 * OFFCPU_F_USER when it left runnable and not preempted. */
#define OFFCPU_BY_SYSCALL 0xffu
#define OFFCPU_F_USER	  0x100u

/* The syscall the task's user registers say, -1 for none: runnable and not
 * preempted is schedule() on the way back to user space (after a syscall's
 * exit, or an interrupt, whose vector x86 keeps in orig_ax), the user
 * registers final; only sched_yield schedules so inside a syscall. */
static __always_inline long offcpu_sysnr(struct pt_regs *regs, __u32 mark)
{
	long nr = regs->orig_ax;

	return (mark & OFFCPU_F_USER) && nr != 24 /* sched_yield */ ? -1 : nr;
}

/* The scheduler's clock of the task's run queue, updated by __schedule (and
 * by wake_up_new_task) just before the tracepoints: a plain load where
 * bpf_ktime_get_ns is a clock read per switch. sched_info.last_queued comes
 * from the same clock. 0 when there is none. */
static __always_inline __u64 offcpu_clock(struct task_struct *p)
{
	struct cfs_rq *cfs = p->se.cfs_rq;

	return cfs ? cfs->rq->clock : 0;
}

/* Switch-out: as little as can be, most blocks are short and only summed.
 * The blocked task's user registers do not change until it runs again, so
 * the syscall (reason, stack validation) is read at switch-in. */
static __always_inline void offcpu_switch_out(struct task_struct *prev, bool preempt,
					      unsigned int state, __u64 now)
{
	struct hearth_offcpu_task *t;
	struct hearth_scratch *st;
	struct pt_regs *regs;
	__u32 pid = prev->tgid, mark;

	if (prev->flags & OFFCPU_PF_KTHREAD)
		return; /* kernel threads and the idle tasks: no user stack, noise */
	if (filter_pid && !bpf_map_lookup_elem(&filter_pids, &pid))
		return;
	if (filter_cgroup && bpf_current_task_under_cgroup(&filter_cgroups, 0) != 1)
		return; /* current is still prev in the sched_switch tracepoint */
	t = bpf_task_storage_get(&offcpu_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		bump(&offcpu_stats, HEARTH_OFFCPU_NO_STORAGE);
		return;
	}
	mark = (state & 0xff) == OFFCPU_TASK_RUNNING && !preempt ? OFFCPU_F_USER : 0;
	/* A pending block from a fault, now a different syscall: the registers
	 * will not be its own on the way back. Send it with what it has. */
	if (t->pending) {
		regs = (struct pt_regs *)bpf_task_pt_regs(prev);
		if (offcpu_sysnr(regs, mark) != t->sysnr || regs->sp != t->user_sp) {
			t->pending = 0;
			bump(&offcpu_stats, HEARTH_OFFCPU_STACK_LOST);
			st = offcpu_scratch();
			if (st)
				offcpu_send_leaf(st, prev, t);
		}
	}
	t->t_out = now;
	if (offcpu_throttled(prev))
		mark |= HEARTH_OFFCPU_THROTTLED;
	else if ((state & 0xff) == OFFCPU_TASK_RUNNING)
		mark |= HEARTH_OFFCPU_RUNQUEUE; /* preempted or yielded: still runnable */
	else if (state & OFFCPU_TASK_UNINTERRUPTIBLE)
		mark |= HEARTH_OFFCPU_IO;
	else
		mark |= OFFCPU_BY_SYSCALL;
	t->reason = mark;
	bump(&offcpu_stats, HEARTH_OFFCPU_SWITCHES);
}

static int offcpu_tw_run(struct bpf_map *map, void *key, void *value);

/* Schedules the user walk of next's pending block as a task work: true if
 * scheduled. */
static __always_inline bool offcpu_schedule_tw(struct task_struct *next)
{
	__u32 k = next->pid & 4095;
	struct offcpu_tw_slot *slot;

	if (!bpf_task_work_schedule_resume_impl) /* __weak: absent before 6.18 */
		return false;
	slot = bpf_map_lookup_elem(&offcpu_tw, &k);
	if (!slot)
		return false;
	return bpf_task_work_schedule_resume_impl(next, &slot->tw, &offcpu_tw, offcpu_tw_run,
						  NULL) == 0;
}

static __always_inline void offcpu_switch_in(struct task_struct *next, __u64 now)
{
	struct hearth_offcpu_task *t;
	struct hearth_scratch *st;
	__u64 blocked = 0, rq = 0, total, queued;
	struct pt_regs *regs;
	__u32 reason, mark, zero = 0, *slot;
	long n;

	if (next->flags & OFFCPU_PF_KTHREAD)
		return;
	t = bpf_task_storage_get(&offcpu_tasks, next, 0, 0);
	if (!t || !t->t_out || now < t->t_out)
		return;
	total = now - t->t_out;
	queued = next->sched_info.last_queued;
	mark = t->reason;
	reason = mark & 0xff;
	if (reason == HEARTH_OFFCPU_RUNQUEUE) {
		rq = total;
	} else if (reason == HEARTH_OFFCPU_THROTTLED) {
		/* Dequeued by the fair class alone: last_queued still says the
		 * switch-out (sched_info thought it runnable), not the unthrottle. */
		blocked = total;
	} else if (queued && now > queued) {
		rq = now - queued; /* woken (or unthrottled) -> now, one clock */
		if (rq > total)
			rq = total;
		blocked = total - rq;
	} else {
		blocked = total; /* no schedstat clock: all of it blocked */
	}
	t->t_out = 0;
	if (t->pending) { /* blocked again before its syscall returned */
		t->pend_ns += blocked;
		t->pend_rq_ns += rq;
		bump(&offcpu_stats, HEARTH_OFFCPU_MERGED);
		goto mark_cpu;
	}
	if (reason == OFFCPU_BY_SYSCALL) {
		regs = (struct pt_regs *)bpf_task_pt_regs(next);
		reason = offcpu_syscall_reason(regs->orig_ax, regs->si);
	}
	if (reason >= HEARTH_OFFCPU_REASON_MAX)
		reason = HEARTH_OFFCPU_OTHER;
	t->acc[reason] += blocked;
	t->acc[HEARTH_OFFCPU_RUNQUEUE] += rq;
	if (t->acc[reason] < offcpu_min_ns && t->acc[HEARTH_OFFCPU_RUNQUEUE] < offcpu_min_ns) {
		bump(&offcpu_stats, HEARTH_OFFCPU_SHORT);
		add(&offcpu_stats, HEARTH_OFFCPU_SHORT_NS, blocked + rq);
		return;
	}
	/* Each reason's sum is sent once it reaches the minimum, with this stack. */
	t->pend_reason = reason;
	t->pend_ns = 0;
	t->pend_rq_ns = 0;
	if (t->acc[reason] >= offcpu_min_ns) {
		t->pend_ns = t->acc[reason];
		t->acc[reason] = 0;
	}
	if (t->acc[HEARTH_OFFCPU_RUNQUEUE] >= offcpu_min_ns) {
		t->pend_rq_ns = t->acc[HEARTH_OFFCPU_RUNQUEUE];
		t->acc[HEARTH_OFFCPU_RUNQUEUE] = 0;
	}
	/* Its registers as at switch-out: it has not run since. */
	regs = (struct pt_regs *)bpf_task_pt_regs(next);
	t->sysnr = offcpu_sysnr(regs, mark);
	t->user_sp = regs->sp;
	t->user_ip = regs->ip;
	n = bpf_get_task_stack(next, t->kframes, sizeof(t->kframes), 0);
	t->klen = n > 0 ? n / sizeof(__u64) : 0;
	if (t->sysnr < 0) {
		bump(&offcpu_stats, HEARTH_OFFCPU_LEAF_ONLY);
		st = offcpu_scratch();
		if (st)
			offcpu_send_leaf(st, next, t);
		return;
	}
	t->pending = 1; /* the user stack comes on its way back to user space */
	/* rseq_update fires before the thread reaches user space, in a
	 * tracepoint (preemption off), for every thread with rseq registered
	 * (glibc >= 2.35): deterministic. The task work is for the others only:
	 * its slot can still be busy with the last one (the napper of
	 * test_offcpu, a 20 ms sleeper, lost 21% of its stacks so). */
	if (next->rseq)
		goto mark_cpu;
	if (offcpu_use_tw) {
		if (offcpu_schedule_tw(next))
			return;
		t->pending = 0; /* no walk will come: its leaf now */
		bump(&offcpu_stats, HEARTH_OFFCPU_STACK_LOST);
		st = offcpu_scratch();
		if (st)
			offcpu_send_leaf(st, next, t);
		return;
	}
	offcpu_want_exit = 1; /* no rseq_update will come: sys_exit must */
mark_cpu:
	slot = bpf_map_lookup_elem(&offcpu_pending_tid, &zero);
	if (slot)
		*slot = next->pid;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(hearth_offcpu_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u64 now = offcpu_clock(prev);

	if (!now)
		return 0;
	offcpu_switch_out(prev, preempt, prev_state, now);
	offcpu_switch_in(next, now);
	return 0;
}

/* A new task waits for its first run like a woken one. */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(hearth_offcpu_wakeup_new, struct task_struct *p)
{
	struct hearth_offcpu_task *t;
	struct pt_regs *regs;
	__u32 pid = p->tgid;

	if (p->flags & OFFCPU_PF_KTHREAD)
		return 0;
	if (filter_pid && !bpf_map_lookup_elem(&filter_pids, &pid))
		return 0;
	/* current is the parent: a child starts in its cgroup */
	if (filter_cgroup && bpf_current_task_under_cgroup(&filter_cgroups, 0) != 1)
		return 0;
	t = bpf_task_storage_get(&offcpu_tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(p);
	t->t_out = offcpu_clock(p); /* its new run queue's, just updated */
	t->reason = HEARTH_OFFCPU_RUNQUEUE;
	/* Sent at its switch-in with its leaf: a new thread has no rseq yet
	 * (glibc registers it once the thread runs), and its user stack is a
	 * fresh one, nothing to walk. */
	t->sysnr = -1;
	t->user_sp = regs->sp;
	t->user_ip = regs->ip;
	return 0;
}

/* Walks the user stack of a pending block on its way back to user space (its
 * syscall's exit, or rseq's notify-resume work) and sends it. */
static __always_inline void offcpu_exit_send(struct task_struct *task,
					     struct hearth_offcpu_task *t, struct hearth_scratch *st)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct hearth_count_key key = {};
	bool walked;
	long n;

	if (regs->orig_ax != t->sysnr || regs->sp != t->user_sp) {
		bump(&offcpu_stats, HEARTH_OFFCPU_STACK_LOST);
		offcpu_send_leaf(st, task, t);
		return;
	}
	offcpu_key(&key, task);
	note_process(st, key.pid, key.pstart, task);
	walked = use_unwind && unwind_user(st, &key);
	if (!walked) {
		if (use_unwind)
			bump(&offcpu_stats, HEARTH_OFFCPU_FP_FALLBACK);
		sample_header(st, &key);
		n = bpf_get_task_stack(task, st->frames, HEARTH_MAX_STACK * sizeof(__u64),
				       BPF_F_USER_STACK);
		if (n > 0)
			st->s.ulen = n / sizeof(__u64);
	}
	offcpu_kframes(st, t);
	if (use_python) /* after the kernel frames, as in every record */
		python_frames(st, key.pid, key.pstart);
	if (use_v8)
		v8_frames(st, key.pid, key.pstart);
	if (use_ruby)
		ruby_frames(st, key.pid, key.pstart);
	if (walked) /* the Java walk's state is this walk's only when it ran */
		java_finish(st);
	offcpu_send(st, t);
}

/* Sends the pending block of current, if this CPU's last switch-in left one.
 * Runs in the task's own context, its user registers still those of the
 * syscall it blocked in, and with interrupts on: the CPU sample program could
 * run in the middle of the walk and reuse the per-CPU scratch (and the runtime
 * walks' scratch maps) under it; it once turned a record's trailing
 * nanoseconds into a kernel address (~2^64 ns). `offcpu_busy` makes that
 * sample step aside, counted as a drop ("inside an off-CPU walk"). */
static __always_inline void offcpu_resume(struct task_struct *task, bool by_slot)
{
	struct hearth_offcpu_task *t;
	struct hearth_scratch *st;
	__u32 zero = 0, *slot;

	slot = bpf_map_lookup_elem(&offcpu_pending_tid, &zero);
	if (!slot)
		return;
	if (*slot == task->pid)
		*slot = 0;
	else if (by_slot)
		return; /* most syscalls of the machine: nothing pending here */
	t = bpf_task_storage_get(&offcpu_tasks, task, 0, 0);
	if (!t || !t->pending)
		return;
	t->pending = 0;
	st = offcpu_scratch();
	if (!st)
		return;
	st->offcpu_missed = 0;
	st->offcpu_busy = 1;
	offcpu_exit_send(task, t, st);
	offcpu_send_missed(st, task->pid);
	st->offcpu_busy = 0;
}

/* The task work of a pending block: in the thread's own context on its way
 * back to user space, interrupts on (hence offcpu_busy, as above). */
static int offcpu_tw_run(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct hearth_offcpu_task *t;
	struct hearth_scratch *st;

	t = bpf_task_storage_get(&offcpu_tasks, task, 0, 0);
	if (!t || !t->pending)
		return 0;
	/* A task work runs preemptible: another thread on this CPU (its
	 * sched_switch, its own task work) would reuse the per-CPU scratch
	 * under this walk. Without the kfunc, no walk: the leaf only. */
	if (!bpf_preempt_disable) { /* __weak: absent before 6.10 */
		t->pending = 0;
		bump(&offcpu_stats, HEARTH_OFFCPU_STACK_LOST);
		return 0;
	}
	bpf_preempt_disable();
	t->pending = 0;
	st = offcpu_scratch();
	if (st) {
		st->offcpu_missed = 0;
		st->offcpu_busy = 1;
		offcpu_exit_send(task, t, st);
		offcpu_send_missed(st, task->pid);
		st->offcpu_busy = 0;
	}
	bpf_preempt_enable();
	return 0;
}

/* The way back to user space of a thread with rseq registered (glibc >= 2.35
 * registers it for every thread): every switch-out sets its notify-resume
 * work, and rseq_handle_notify_resume fires this before the task reaches user
 * space, after its syscall's sys_exit, the user registers final. Once per
 * switch, not per syscall: the hook that replaces sys_exit (docs/offcpu.md). */
SEC("tp_btf/rseq_update")
int BPF_PROG(hearth_offcpu_rseq, struct task_struct *t)
{
	/* t is current. Its task storage, not the per-CPU slot: another
	 * thread switched in on this CPU (a SCHED_FIFO waker) overwrites the
	 * slot, and a block left pending so lost its time at the end of a
	 * recording (test_offcpu: a sleeper's wall 5.6 s of 6 s). */
	offcpu_resume(t, false);
	return 0;
}

/* The fallback for threads without rseq: the first syscall exit after a long
 * block. Attached by user space only once such a thread had a block pending
 * (offcpu_want_exit): attached, it fires on every syscall exit of the machine. */
SEC("tp_btf/sys_exit")
int BPF_PROG(hearth_offcpu_sys_exit, struct pt_regs *regs, long ret)
{
	offcpu_resume(bpf_get_current_task_btf(), true);
	return 0;
}

#endif /* HEARTH_BPF_OFFCPU_BPF_H */
