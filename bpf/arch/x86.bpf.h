/* arch/x86.bpf.h: x86-64 facts (see arch.bpf.h; arm64.bpf.h has the
 * same names).  Include through arch.bpf.h, after vmlinux.h. */
#ifndef PROFD_ARCH_X86_BPF_H
#define PROFD_ARCH_X86_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

/* pt_regs as the user ABI lays it out (ptrace, perf): fixed since the
 * first 64-bit kernel.  The perf_event context is read through this
 * rather than through vmlinux.h's struct pt_regs, whose cs became a
 * 16-bit field in a union with FRED (6.9+): a CO-RE access to it cannot
 * be relocated to the older kernels' 64-bit cs. */
struct profd_user_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	__u64 ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

/* Did the sample interrupt user mode?  (Ring 3 in the saved cs.) */
#define PROFD_UREGS_USER_MODE(r) (((r)->cs & 3) == 3)
#define PROFD_UREGS_IP(r) ((r)->ip)
#define PROFD_UREGS_SP(r) ((r)->sp)
#define PROFD_UREGS_FP(r) ((r)->bp)
/* No link register: the return address is always on the stack. */
#define PROFD_UREGS_LR(r) (0)
#define PROFD_PT_REGS_LR(ctx) (0)

/* A uprobe at a function's first instruction: the return address is
 * the word at sp (the call pushed it).  After the ret the caller's sp
 * is 8 above the entry's.  (lr and sp: PROFD_PT_REGS_LR and PT_REGS_SP
 * of the uprobe's context, read by the caller: the verifier refuses a
 * context pointer passed on.) */
static __always_inline __u64 profd_entry_ra(__u64 lr, __u64 sp)
{
	__u64 ra = 0;

	(void)lr;
	bpf_probe_read_user(&ra, sizeof(ra), (void *)sp);
	return ra;
}
#define PROFD_SP_AFTER_RET(entry_sp) ((entry_sp) + 8)

/* The user registers saved on kernel entry (vmlinux.h's pt_regs): pc,
 * sp and frame pointer, by CO-RE reads (lr: none).  0, or nonzero on a
 * failed read. */
static __always_inline long profd_pt_regs_read(const struct pt_regs *u, __u64 *ip, __u64 *sp,
					       __u64 *fp, __u64 *lr)
{
	*lr = 0;
	return BPF_CORE_READ_INTO(ip, u, ip) || BPF_CORE_READ_INTO(sp, u, sp) ||
	       BPF_CORE_READ_INTO(fp, u, bp);
}

/* System calls.  The per-call functions (fentry targets) take the user
 * registers as their one argument, as the raw tracepoint does, and serve
 * 64-bit callers only (32-bit ones go through __ia32_*). */
#define PROFD_SYSCALL_FN(name) "__x64_sys_" #name
#define PROFD_NR_POLL 7 /* -1 where the call does not exist */
#define PROFD_NR_MMAP 9
#define PROFD_NR_IOCTL 16
#define PROFD_NR_PPOLL 271
#define PROFD_SYSCALL_ARG0(regs) BPF_CORE_READ(regs, di)
#define PROFD_SYSCALL_ARG1(regs) BPF_CORE_READ(regs, si)
#define PROFD_SYSCALL_ARG2(regs) BPF_CORE_READ(regs, dx)
#define PROFD_SYSCALL_ARG4(regs) BPF_CORE_READ(regs, r8)
/* The call's number at sys_exit (the return value is in ax by then). */
#define PROFD_SYSCALL_NR(regs) BPF_CORE_READ(regs, orig_ax)
/* A 32-bit process's call: other numbers, other registers. */
#define PROFD_USER32_CS 0x23
#define PROFD_SYSCALL_COMPAT(regs) (BPF_CORE_READ(regs, cs) == PROFD_USER32_CS)

/* The thread pointer (TLS base) of a task, and what glibc's
 * pthread_self() is from it: on x86-64 the same address (the TCB is at
 * the thread pointer, struct pthread starts there). */
#define PROFD_TASK_TP(task) BPF_CORE_READ(task, thread.fsbase)
#define PROFD_PTHREAD_FROM_TP(tp, below) ((void)(below), (tp))

/* The kernel stack (THREAD_SIZE 16 KiB whatever the page size, always
 * 4 KiB here) holds the entry pt_regs at its top, no padding above them
 * before FRED (6.9). */
#define PROFD_THREAD_SIZE(page) (16384)

/* In a leaf without unwind data: is the pc on a prologue's endbr64 or
 * push %rbp (PROFD_LEAF_ENTRY), its mov %rsp,%rbp (PROFD_LEAF_SAVED_FP),
 * or a ret (PROFD_LEAF_RET)?  There the frame pointer is still the
 * caller's.  0 otherwise or unreadable. */
enum { PROFD_LEAF_ENTRY = 1, PROFD_LEAF_SAVED_FP = 2, PROFD_LEAF_RET = 3 };
static __always_inline int profd_leaf_insn(__u64 ip)
{
	__u8 op[4] = {};

	if (bpf_probe_read_user(op, sizeof(op), (void *)ip))
		return 0;
	if (op[0] == 0x55 || (op[0] == 0xf3 && op[1] == 0x0f && op[2] == 0x1e && op[3] == 0xfa))
		return PROFD_LEAF_ENTRY;
	if (op[0] == 0x48 && ((op[1] == 0x89 && op[2] == 0xe5) || (op[1] == 0x8b && op[2] == 0xec)))
		return PROFD_LEAF_SAVED_FP;
	return op[0] == 0xc3 ? PROFD_LEAF_RET : 0;
}

#endif
