/* stackcap.bpf.h: capture the current thread's kernel or user stack into
 * the content-hashed stacks map, from any program type.  The caller gives
 * the scratch slot to build the stack in, so programs that may interrupt
 * each other on one CPU (the perf_event sampler in NMI/IRQ context, a
 * syscall or uprobe program below it) never share one.  Flags are
 * PROFD_SAMPLE_* bits, the same for every event that carries stacks. */
#ifndef PROFD_STACKCAP_BPF_H
#define PROFD_STACKCAP_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "common.bpf.h"
#include "kcompat.bpf.h"
#include "stackhash.bpf.h"
#include "unwind.bpf.h"

/* bpf_get_stack into st; returns the stack ID (0: none). */
static __always_inline __u64 stackcap_get_stack(void *ctx, struct profd_stack *st, __u32 kind,
						__u32 *flags)
{
	int user = kind == PROFD_STACK_USER;
	long n;

	if (!st)
		return 0;
	/* Native stacks use only the first PROFD_MAX_STACK_DEPTH words. */
	n = bpf_get_stack(ctx, st->ips, PROFD_MAX_STACK_DEPTH * sizeof(__u64),
			  user ? BPF_F_USER_STACK : 0);
	if (n < 0) {
		count(user ? PROFD_CNT_USTACK_FAIL : PROFD_CNT_KSTACK_FAIL);
		return 0;
	}
	st->kind = kind;
	st->nr = (__u32)n / sizeof(__u64);
	if (!st->nr && !user)
		return 0; /* user mode: nothing to store, nothing to send */
	if (st->nr >= PROFD_MAX_STACK_DEPTH) {
		count(user ? PROFD_CNT_USTACK_TRUNC : PROFD_CNT_KSTACK_TRUNC);
		*flags |= user ? PROFD_SAMPLE_USTACK_TRUNC : PROFD_SAMPLE_KSTACK_TRUNC;
	}
	return stackhash_store(st, flags, user ? PROFD_SAMPLE_USTACK_NEW : PROFD_SAMPLE_KSTACK_NEW,
			       PROFD_CNT_STACKMAP_FULL);
}

/* The user stack from regs (have_regs 0: none known), walked with the
 * .eh_frame tables userspace loaded for tgid, so code without frame
 * pointers unwinds too; frame pointers (bpf_get_stack) when the process
 * has no tables (yet). */
static __always_inline __u64 stackcap_user(void *ctx, struct profd_stack *st,
					   const struct unwind_regs *regs, int have_regs, __u32 tgid,
					   __u32 *flags, __u32 slot)
{
	__u32 uf = 0;
	int n;

	if (!st || !have_regs)
		goto fp;
	n = unwind_user(regs, tgid, st->ips, PROFD_MAX_STACK_DEPTH, &uf, slot);
	if (uf & (PROFD_UNWIND_F_NO_PROC | PROFD_UNWIND_F_STALE))
		goto fp;
	st->kind = PROFD_STACK_USER;
	st->nr = (__u32)n;
	if (!(uf & PROFD_UNWIND_F_END)) {
		count(PROFD_CNT_USTACK_TRUNC);
		*flags |= PROFD_SAMPLE_USTACK_TRUNC;
	}
	if (uf & (PROFD_UNWIND_F_TRUNC_UNKNOWN | PROFD_UNWIND_F_WANTED))
		*flags |= PROFD_SAMPLE_USTACK_UNKNOWN;
	if (!st->nr)
		return 0;
	return stackhash_store(st, flags, PROFD_SAMPLE_USTACK_NEW, PROFD_CNT_STACKMAP_FULL);
fp:
	*flags |= PROFD_SAMPLE_USTACK_FP;
	return stackcap_get_stack(ctx, st, PROFD_STACK_USER, flags);
}

/* The user registers saved on kernel entry: where a syscall or an
 * exception left user mode.  0, or -1 for a kernel thread. */
static __always_inline int stackcap_entry_regs(struct unwind_regs *r)
{
	struct pt_regs *u;

	if (!BPF_CORE_READ(profd_current_task(), mm))
		return -1;
	u = profd_current_pt_regs();
	if (!u || profd_pt_regs_read(u, &r->ip, &r->sp, &r->bp, &r->lr))
		return -1;
	return 0;
}

#endif
