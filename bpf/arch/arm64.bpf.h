/* arch/arm64.bpf.h: arm64 (AArch64) facts (see arch.bpf.h; x86.bpf.h
 * has the same names).  Include through arch.bpf.h, after vmlinux.h. */
#ifndef PROFD_ARCH_ARM64_BPF_H
#define PROFD_ARCH_ARM64_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

/* The perf_event context's registers: the user ABI's user_pt_regs
 * (ptrace, perf), fixed since the first arm64 kernel. */
struct profd_user_regs {
	__u64 regs[31]; /* x29 is the frame pointer, x30 the link register */
	__u64 sp, pc, pstate;
};

/* PSR_MODE_MASK and PSR_MODE_EL0t: user mode, AArch64 or AArch32. */
#define PROFD_PSR_MODE_MASK 0xfull
#define PROFD_UREGS_USER_MODE(r) (((r)->pstate & PROFD_PSR_MODE_MASK) == 0)
#define PROFD_UREGS_IP(r) ((r)->pc)
#define PROFD_UREGS_SP(r) ((r)->sp)
#define PROFD_UREGS_FP(r) ((r)->regs[29])
/* The return address of a leaf that has not saved it yet (nor set up
 * its frame record): x30, the link register.  The .eh_frame rows say
 * when it is still there (PROFD_UNWIND_RA_LR). */
#define PROFD_UREGS_LR(r) ((r)->regs[30])
/* The same in a uprobe's context (a struct pt_regs). */
#define PROFD_PT_REGS_LR(ctx) (((const struct user_pt_regs *)(ctx))->regs[30])

/* A uprobe at a function's first instruction: the return address is in
 * x30 (bl put it there; nothing is on the stack yet), and ret leaves sp
 * where the entry found it. */
static __always_inline __u64 profd_entry_ra(__u64 lr, __u64 sp)
{
	(void)sp;
	return lr;
}
#define PROFD_SP_AFTER_RET(entry_sp) (entry_sp)

/* The user registers saved on kernel entry (vmlinux.h's pt_regs, whose
 * first member is a union with user_pt_regs). */
static __always_inline long profd_pt_regs_read(const struct pt_regs *u, __u64 *ip, __u64 *sp,
					       __u64 *fp, __u64 *lr)
{
	return BPF_CORE_READ_INTO(ip, u, pc) || BPF_CORE_READ_INTO(sp, u, sp) ||
	       BPF_CORE_READ_INTO(fp, u, regs[29]) || BPF_CORE_READ_INTO(lr, u, regs[30]);
}

/* System calls: __arm64_sys_* take the user registers as their one
 * argument.  The generic table: there is no poll, only ppoll. */
#define PROFD_SYSCALL_FN(name) "__arm64_sys_" #name
#define PROFD_NR_POLL (-1)
#define PROFD_NR_MMAP 222
#define PROFD_NR_IOCTL 29
#define PROFD_NR_PPOLL 73
/* x0 holds the first argument until the call returns into it: ARG0 is
 * read at entry only (sys_exit uses the others). */
#define PROFD_SYSCALL_ARG0(regs) BPF_CORE_READ(regs, regs[0])
#define PROFD_SYSCALL_ARG1(regs) BPF_CORE_READ(regs, regs[1])
#define PROFD_SYSCALL_ARG2(regs) BPF_CORE_READ(regs, regs[2])
#define PROFD_SYSCALL_ARG4(regs) BPF_CORE_READ(regs, regs[4])
#define PROFD_SYSCALL_NR(regs) BPF_CORE_READ(regs, syscallno)
/* PSR_MODE32_BIT: an AArch32 (compat) task, other numbers. */
#define PROFD_SYSCALL_COMPAT(regs) ((BPF_CORE_READ(regs, pstate) & 0x10) != 0)

/* The thread pointer (TPIDR_EL0) of a task.  glibc puts struct pthread
 * right below it (TLS_DTV_AT_TP): pthread_self() is tp minus sizeof(struct
 * pthread), which differs between glibc releases: userspace reads it from
 * the process's C library (profd_pyoffsets.pthread_below_tp; 0, unknown:
 * ~0, which matches no thread). */
#define PROFD_TASK_TP(task) BPF_CORE_READ(task, thread.uw.tp_value)
#define PROFD_PTHREAD_FROM_TP(tp, below) ((below) ? (tp) - (below) : ~0ull)

/* THREAD_SIZE for the kernel's page size: 16 KiB (MIN_THREAD_SHIFT 14)
 * or one page when pages are bigger (64 KiB kernels); the entry pt_regs
 * are at the top of the kernel stack, as on x86-64.  Pages are 4, 16 or
 * 64 KiB: the size is userspace's (page_size, kcompat.bpf.h). */
#define PROFD_THREAD_SIZE(page) ((page) > 16384 ? (page) : 16384)

/* No prologue decoding on arm64 yet: a leaf of anonymous code is walked
 * by its frame record alone. */
enum { PROFD_LEAF_ENTRY = 1, PROFD_LEAF_SAVED_FP = 2, PROFD_LEAF_RET = 3 };
static __always_inline int profd_leaf_insn(__u64 ip)
{
	(void)ip;
	return 0;
}

#endif
