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
 * line up with the sampling. */
#ifndef PROFD_MEMORY_BPF_H
#define PROFD_MEMORY_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "common.bpf.h"
#include "kcompat.bpf.h"
#include "profd_abi.h"
#include "python.bpf.h"
#include "stackcap.bpf.h"
#include "stackhash.bpf.h"
#include "unwind.bpf.h"

/* The walks build stacks here: a sample's perf interrupt may come while
 * this program runs and uses the sampler's slots. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct profd_stack);
} memory_scratch SEC(".maps");

/* The events themselves, built here rather than on the stack: with the
 * unwinder's frames below it, a stack-built event took the program past
 * the 512 bytes of stack older kernels allow a whole call chain (6.12:
 * "combined stack size of 5 calls is 544").  Slot 0 memory, 1 mmap: one
 * may interrupt the other. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct profd_memory_event);
} memory_events SEC(".maps");

/* What a struct profd_memory_event says besides its stacks, and where
 * its sender builds them: memory events here, mmap events (mmap.bpf.h). */
struct memory_send_args {
	__u32 type;      /* PROFD_EV_MEMORY or PROFD_EV_MMAP */
	__u32 pyrot_slot; /* PYROT_SLOT_MEMORY or PYROT_SLOT_MMAP */
	__u32 cnt_sent, cnt_rb_full;
	__u64 bytes, addr, now;
};

/* The current thread's native and Python stacks (built in scratch's two
 * slots), sent as a memory event with a's weight. */
static __always_inline void memory_event_send(void *ctx, struct task_struct *t, void *scratch,
					      const struct memory_send_args *a)
{
	__u32 tgid = BPF_CORE_READ(t, tgid), tid = BPF_CORE_READ(t, pid), slot_u = 0,
	      slot_py = 1;
	struct profd_py_proc *py = bpf_map_lookup_elem(&py_procs, &tgid);
	__u32 slot_e = a->type == PROFD_EV_MMAP;
	struct profd_memory_event *e = bpf_map_lookup_elem(&memory_events, &slot_e);
	struct unwind_regs regs;
	int have_regs = stackcap_entry_regs(&regs) == 0;

	if (!e)
		return;
	e->type = a->type;
	e->pid = tgid;
	e->tid = tid;
	e->time_ns = a->now;
	e->bytes = a->bytes;
	e->addr = a->addr;
	e->kstack_id = 0; /* the fault path, or user mode (a uprobe): nothing to learn */
	e->flags = 0; /* in map memory: see sample_scratch in sample.bpf.c */
	e->ustack_id = stackcap_user(ctx, bpf_map_lookup_elem(scratch, &slot_u), &regs, have_regs,
				     tgid, &e->flags, a->pyrot_slot);
	e->pystack_id = py ? py_capture_into(py, tid, bpf_map_lookup_elem(scratch, &slot_py),
					     &e->flags, a->now, a->pyrot_slot)
			   : 0;
	e->_pad = 0;
	e->_pad2 = 0;
	e->start_ns = BPF_CORE_READ(t, group_leader, start_boottime);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	/* Sent last: the records of new stacks precede it (stackhash.bpf.h). */
	if (bpf_ringbuf_output(&events, e, sizeof(*e), events_wakeup_flag())) {
		count(a->cnt_rb_full);
		return;
	}
	count(a->cnt_sent);
}

SEC("perf_event")
int on_page_faults(struct bpf_perf_event_data *ctx)
{
	struct task_struct *t = profd_current_task();
	struct memory_send_args a = {
		.type = PROFD_EV_MEMORY, .pyrot_slot = PYROT_SLOT_MEMORY,
		.cnt_sent = PROFD_CNT_MEMORY_SENT, .cnt_rb_full = PROFD_CNT_MEMORY_RB_FULL,
		.bytes = ctx->sample_period * page_size, .addr = ctx->addr,
	};

	count(PROFD_CNT_MEMORY_WALKS);
	if (!BPF_CORE_READ(t, mm) || (BPF_CORE_READ(t, flags) & PF_KTHREAD) ||
	    !selected(BPF_CORE_READ(t, tgid)))
		return 0;
	a.now = bpf_ktime_get_ns();
	memory_event_send(ctx, t, &memory_scratch, &a);
	return 0;
}

/* Huge pages.  A fault on memory the kernel backs with a transparent huge
 * page (THP "always", which Debian's and RHEL's kernels default to, or
 * MADV_HUGEPAGE; 6.8+ also maps smaller multi-page folios) makes 2^order
 * pages resident at once, yet is one fault to the program above: under
 * THP "always" a 300 MiB buffer read as 1 MiB.  The page allocator's
 * tracepoint sees each such folio allocated in the faulting thread: the
 * GFP flags of an anonymous transparent huge page (userspace finds their
 * bits in the kernel's BTF), which the page cache's large folios and the
 * kernel's own allocations do not carry.  Its pages past the first (the
 * fault counts that one) add to a per-CPU byte count; when the count
 * passes a threshold drawn uniformly around the faults' sampling period,
 * the thread's stacks are sent with the bytes counted.  Only large
 * allocations get past the first test, so the many order-0 ones cost the
 * tracepoint's call and a compare. */
const volatile __u32 huge_gfp_mask = 0; /* all of them set; 0: off (userspace sets it) */
const volatile __u64 huge_sample_bytes = 2 << 20;

struct huge_acc {
	__u64 bytes, threshold;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct huge_acc);
} huge_acc SEC(".maps");

static __always_inline __u64 huge_threshold(void)
{
	__u64 n = huge_sample_bytes;

	return n / 2 + (n > 1 ? bpf_get_prandom_u32() % n : 0) + 1;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(on_huge_page, struct page *page, unsigned int order, gfp_t gfp, int migratetype)
{
	struct task_struct *t;
	struct memory_send_args a = {
		.type = PROFD_EV_MEMORY, .pyrot_slot = PYROT_SLOT_MEMORY,
		.cnt_sent = PROFD_CNT_MEMORY_SENT, .cnt_rb_full = PROFD_CNT_MEMORY_RB_FULL,
	};
	__u32 zero = 0;
	struct huge_acc *acc;

	if (!order || order > 20 || !huge_gfp_mask || (gfp & huge_gfp_mask) != huge_gfp_mask)
		return 0;
	t = profd_current_task();
	if (!BPF_CORE_READ(t, mm) || (BPF_CORE_READ(t, flags) & PF_KTHREAD) ||
	    !selected(BPF_CORE_READ(t, tgid)))
		return 0;
	acc = bpf_map_lookup_elem(&huge_acc, &zero);
	if (!acc)
		return 0;
	count(PROFD_CNT_MEMORY_LARGE_PAGES);
	acc->bytes += ((1ull << order) - 1) * page_size;
	if (!acc->threshold)
		acc->threshold = huge_threshold();
	if (acc->bytes < acc->threshold)
		return 0;
	a.bytes = acc->bytes;
	acc->bytes = 0;
	acc->threshold = huge_threshold();
	count(PROFD_CNT_MEMORY_LARGE_WALKS);
	a.now = bpf_ktime_get_ns();
	memory_event_send(ctx, t, &memory_scratch, &a);
	return 0;
}

#endif
