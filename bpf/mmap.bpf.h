/* mmap.bpf.h: which code maps and unmaps memory.  Uprobes on the C
 * library's mmap, munmap, mremap and brk (sbrk calls brk), attached once
 * per library file by userspace (mmap_probe.c), run in the calling
 * thread; each call becomes one event carrying the signed change in
 * mapped bytes (page-rounded, frees negative) and the thread's native and
 * Python stacks.  Uprobes cost only the threads that make these calls,
 * which are system calls anyway; the raw sys_enter/sys_exit tracepoints
 * would slow every system call on the machine.
 *
 * The change is what the call asks for, read on entry: a call that fails
 * counts all the same; mmap with MAP_FIXED over a mapping counts its new
 * bytes without the replaced ones; direct system calls (Go, static
 * binaries, the dynamic loader's own mmap of libraries) are not seen.
 *
 * An event costs its thread the walk of its stacks, so events are bounded
 * per CPU by a token bucket: 2000 a second with bursts of 256 (a program's
 * start-up, a burst of large buffers); the rest are counted, not sent.
 * The uprobe's trap itself (~20 us a call on a VM) is paid by every call. */
#ifndef PROFD_MMAP_BPF_H
#define PROFD_MMAP_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "common.bpf.h"
#include "kcompat.bpf.h"
#include "memory.bpf.h" /* the event and its sending, shared with page faults */
#include "profd_abi.h"

#define MMAP_PAGE page_size /* kcompat.bpf.h */

const volatile __u64 mmap_event_ns = 500000; /* credit an event takes: 2000/s per CPU */
const volatile __u64 mmap_burst = 256;       /* events the credit may add up to */

/* Stacks are built here: a page fault while this program reads user
 * memory may run the memory program, which has its own slots. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct profd_stack);
} mmap_scratch SEC(".maps");

struct mmap_budget {
	__u64 last_ns; /* when credit was last added */
	__u64 credit;  /* ns of credit, at most mmap_burst events' worth */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mmap_budget);
} mmap_budgets SEC(".maps");

/* One event from this CPU's budget: 1 if it may be sent. */
static __always_inline int mmap_take(__u64 now)
{
	__u32 zero = 0;
	struct mmap_budget *b = bpf_map_lookup_elem(&mmap_budgets, &zero);
	__u64 cap = mmap_burst * mmap_event_ns;

	if (!b)
		return 0;
	/* The first call finds last_ns 0: a full bucket. */
	b->credit = now - b->last_ns > cap - b->credit ? cap : b->credit + (now - b->last_ns);
	b->last_ns = now;
	if (b->credit < mmap_event_ns)
		return 0;
	b->credit -= mmap_event_ns;
	return 1;
}

static __always_inline __s64 mmap_pages(__u64 len)
{
	return (__s64)((len + MMAP_PAGE - 1) & ~(MMAP_PAGE - 1));
}

/* The signed change in mapped bytes the call asks for; 0: nothing. */
static __always_inline __s64 mmap_delta(struct pt_regs *ctx, __u64 fn, struct task_struct *t)
{
	__u64 a0 = PT_REGS_PARM1(ctx), a1 = PT_REGS_PARM2(ctx), a2 = PT_REGS_PARM3(ctx);
	__u64 cur, start;

	switch (fn) {
	case PROFD_MMAP_FN_MMAP: return mmap_pages(a1);
	case PROFD_MMAP_FN_MUNMAP: return -mmap_pages(a1);
	case PROFD_MMAP_FN_MREMAP: return mmap_pages(a2) - mmap_pages(a1);
	case PROFD_MMAP_FN_BRK:
		/* brk(0) and anything below the heap's start only ask. */
		cur = BPF_CORE_READ(t, mm, brk);
		start = BPF_CORE_READ(t, mm, start_brk);
		if (a0 < start || !cur)
			return 0;
		return mmap_pages(a0) - mmap_pages(cur);
	}
	return 0;
}

/* Entry of mmap/munmap/mremap/brk; the cookie is the enum profd_mmap_fn. */
SEC("uprobe")
int on_libc_mmap(struct pt_regs *ctx)
{
	struct task_struct *t = profd_current_task();
	__u64 fn = bpf_get_attach_cookie(ctx);
	struct memory_send_args a = {
		.type = PROFD_EV_MMAP, .pyrot_slot = PYROT_SLOT_MMAP,
		.cnt_sent = PROFD_CNT_MMAP_SENT, .cnt_rb_full = PROFD_CNT_MMAP_RB_FULL,
	};
	__s64 bytes;

	if (!BPF_CORE_READ(t, mm) || !selected(BPF_CORE_READ(t, tgid)))
		return 0;
	count(PROFD_CNT_MMAP_CALLS);
	bytes = mmap_delta(ctx, fn, t);
	if (!bytes)
		return 0;
	a.now = bpf_ktime_get_ns();
	if (!mmap_take(a.now)) {
		count(PROFD_CNT_MMAP_RATE_LIMITED);
		return 0;
	}
	a.bytes = (__u64)bytes;
	a.addr = PT_REGS_PARM1(ctx);
	memory_event_send(ctx, t, &mmap_scratch, &a);
	return 0;
}

#endif
