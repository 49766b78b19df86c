/* memory.bpf.h: which code makes memory resident.  The x86 tracepoint
 * exceptions:page_fault_user (tp_btf: no kprobes, no tracefs, no
 * trampoline) fires for every fault a thread takes in user mode, in that
 * thread's context.  A fault on a page that is not present (first touch
 * of anonymous memory, a file page mapped in) or a write to a present
 * read-only page (copy on write) is what makes a page resident; each
 * counts PAGE_SIZE bytes.
 *
 * Sampled by bytes: a per-CPU counter adds the bytes of each fault, and
 * the fault that crosses the CPU's next threshold walks the thread's
 * native and Python stacks and sends one event weighted by the bytes
 * counted since the last one.  The threshold is drawn anew each time,
 * uniformly in [N/2, 3N/2), so a program that touches memory in a period
 * cannot line up with it.  Every other fault costs one map lookup.
 *
 * Included by sample.bpf.c after python.bpf.h and stackcap.bpf.h. */
#ifndef PROFD_MEMORY_BPF_H
#define PROFD_MEMORY_BPF_H

#include "stackcap.bpf.h"

#define MEMORY_PYROT_SLOT 3 /* py_rotate slot of this program */
#define X86_PF_PROT 0x1     /* the page was present: a protection fault */
#define X86_PF_WRITE 0x2

/* Set by userspace before load. */
const volatile __u32 memory_enabled = 0;
const volatile __u64 memory_sample_bytes = 512 * 1024; /* mean bytes per event */

struct memory_cpu {
	__u64 bytes; /* counted since the last event */
	__u64 next;  /* the threshold that sends the next event */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct memory_cpu);
} memory_cpus SEC(".maps");

/* The walks build stacks here: a sample's perf interrupt may come while
 * this program runs and uses the sampler's slots. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct profd_stack);
} memory_scratch SEC(".maps");

static __always_inline __u64 memory_threshold(void)
{
	__u64 n = memory_sample_bytes;

	return n / 2 + (n > 1 ? bpf_get_prandom_u32() % n : 0);
}

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

SEC("tp_btf/page_fault_user")
int BPF_PROG(on_page_fault_user, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct memory_cpu *c;
	__u32 zero = 0;
	__u64 bytes;

	if (!memory_enabled)
		return 0;
	/* Present and not a write: a spurious or access fault, nothing new. */
	if ((error_code & X86_PF_PROT) && !(error_code & X86_PF_WRITE))
		return 0;
	if (!selected(t->tgid))
		return 0;
	c = bpf_map_lookup_elem(&memory_cpus, &zero);
	if (!c)
		return 0;
	c->bytes += 4096;
	if (!c->next)
		c->next = memory_threshold();
	if (c->bytes < c->next)
		return 0;
	bytes = c->bytes;
	c->bytes = 0;
	c->next = memory_threshold();
	count(PROFD_CNT_MEMORY_WALKS);
	memory_send(ctx, t, bytes, address);
	return 0;
}

#endif
