// SPDX-License-Identifier: GPL-2.0
/*
 * Empty programs on the hooks the off-CPU recorder uses, for bench/offcpu/run's
 * floor rows (empty-switch, empty-exit, empty-rseq): what attaching a BTF
 * tracepoint costs before any work is done in it. Loaded by empty_load.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(empty_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(empty_exit, struct pt_regs *regs, long ret)
{
	return 0;
}

SEC("tp_btf/rseq_update")
int BPF_PROG(empty_rseq, struct task_struct *t)
{
	return 0;
}
