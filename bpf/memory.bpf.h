/* memory.bpf.h: which code makes memory resident.  The kernel counts
 * every page fault in a per-CPU software perf event (PERF_COUNT_SW_PAGE_
 * FAULTS: a counter increment, no program run); every Nth fault on a CPU
 * runs this program, in the faulting thread's context, which walks that
 * thread's native and Python stacks and sends one event weighted by the N
 * pages it stands for.  A fault makes a page resident (first touch of
 * anonymous memory, a file page mapped in, copy on write), so the weights
 * add up to the memory made resident, by the stacks that touched it;
 * faults taken inside a system call on user memory (read() into a fresh
 * buffer) count too, with the user stack that made the call.  Userspace
 * sets N from --memory-sample-kib and redraws it every second, uniformly
 * in [N/2, 3N/2), so a program that touches memory with a period cannot
 * line up with the sampling.
 *
 * Included by sample.bpf.c after python.bpf.h and stackcap.bpf.h. */
#ifndef PROFD_MEMORY_BPF_H
#define PROFD_MEMORY_BPF_H

#include "stackcap.bpf.h"

#define MEMORY_PYROT_SLOT 3 /* py_rotate slot of this program */

/* The walks build stacks here: a sample's perf interrupt may come while
 * this program runs and uses the sampler's slots. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct profd_stack);
} memory_scratch SEC(".maps");

/* The faulting thread's native and Python stacks, sent with weight bytes. */
static __always_inline void memory_send(void *ctx, struct task_struct *t, __u64 bytes,
					__u64 addr)
{
	__u32 tgid = t->tgid, tid = t->pid, flags = 0, slot_u = 0, slot_py = 1;
	struct profd_py_proc *py = bpf_map_lookup_elem(&py_procs, &tgid);
	struct profd_memory_event e;
	struct unwind_regs regs;
	int have_regs = stackcap_entry_regs(&regs) == 0;

	e.type = PROFD_EV_MEMORY;
	e.pid = tgid;
	e.tid = tid;
	e.time_ns = bpf_ktime_get_ns();
	e.bytes = bytes;
	e.addr = addr;
	e.kstack_id = 0; /* always the fault path: nothing to learn */
	e.ustack_id = stackcap_user(ctx, bpf_map_lookup_elem(&memory_scratch, &slot_u), &regs,
				    have_regs, tgid, &flags);
	e.pystack_id = py ? py_capture_into(py, tid, bpf_map_lookup_elem(&memory_scratch, &slot_py),
					    &flags, e.time_ns, MEMORY_PYROT_SLOT)
			  : 0;
	e.flags = flags;
	e._pad = 0;
	e.start_ns = t->group_leader->start_boottime;
	__builtin_memcpy(e.comm, t->comm, sizeof(e.comm));
	/* Sent last: the records of new stacks precede it (stackhash.bpf.h). */
	if (bpf_ringbuf_output(&events, &e, sizeof(e), events_wakeup_flag())) {
		count(PROFD_CNT_MEMORY_RB_FULL);
		return;
	}
	count(PROFD_CNT_MEMORY_SENT);
}

SEC("perf_event")
int on_page_faults(struct bpf_perf_event_data *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();

	count(PROFD_CNT_MEMORY_WALKS);
	if (!t->mm || (t->flags & PF_KTHREAD) || !selected(t->tgid))
		return 0;
	memory_send(ctx, t, ctx->sample_period * 4096, ctx->addr);
	return 0;
}

#endif
