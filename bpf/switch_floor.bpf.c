// SPDX-License-Identifier: GPL-2.0
/* switch_floor.bpf.c: a sched_switch program that does nothing, for
 * bench/switch_floor.  What it costs a context switch is the floor under
 * any sched_switch hook (tracepoint call, BPF dispatch), the part of
 * profd's off-CPU cost that no change to offcpu.bpf.h can remove. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_floor, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return 0;
}
