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

#endif
