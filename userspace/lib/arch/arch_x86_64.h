/* arch_x86_64.h: x86-64 facts (through arch.h; arch_arm64.h has the same
 * names). */
#ifndef PROFD_ARCH_X86_64_H
#define PROFD_ARCH_X86_64_H

#include <elf.h>

#define ARCH_NAME "x86_64"
/* The ELF machine of the executables profd builds unwind tables for. */
#define ARCH_ELF_MACHINE EM_X86_64

/* The bits of a user code address: all of them (no pointer
 * authentication on x86-64; the BPF walker's unwind_code_mask). */
static inline unsigned long long arch_code_addr_mask(void)
{
	return ~0ull;
}

/* The kernel's per-call syscall functions (fentry targets, probes). */
#define ARCH_SYSCALL_FN(name) "__x64_sys_" name
/* Does poll(2) exist as its own call (else only ppoll)? */
#define ARCH_HAS_SYS_POLL 1
/* pthread_self() is the thread pointer itself (the TCB starts there). */
#define ARCH_PTHREAD_BELOW_TP 0

/* CPython's perf trampoline (Python/asm_trampoline.S, -X perf): every
 * eval call runs through a copy of it, one per code object, in anonymous
 * memory.  3.12 and 3.13: sub $8,%rsp; call *%rcx; add $8,%rsp; ret, no
 * frame pointer.  3.14 on: push %rbp; mov %rsp,%rbp; call *%rcx; pop
 * %rbp; ret, after an endbr64 in CET builds (Debian's).  n: how many. */
static inline const struct arch_stub *arch_py_trampolines(unsigned int *n)
{
	static const unsigned char sub8[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
					     0x48, 0x83, 0xc4, 0x08, 0xc3};
	static const unsigned char fp_cet[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48,
					       0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3};
	static const struct arch_stub stubs[] = {
	    {sub8, sizeof(sub8), 4, 10, 16, 0},		 /* after the sub, to the ret */
	    {fp_cet, sizeof(fp_cet), 5, 11, 16, -2},	 /* after the push, to the ret */
	    {fp_cet + 4, sizeof(fp_cet) - 4, 1, 7, 16, -2}, /* the same without endbr64 */
	};

	*n = sizeof(stubs) / sizeof(stubs[0]);
	return stubs;
}

#endif
