/* arch_x86_64.h: x86-64 facts (through arch.h; arch_arm64.h has the same
 * names). */
#ifndef PROFD_ARCH_X86_64_H
#define PROFD_ARCH_X86_64_H

#include <elf.h>

#define ARCH_NAME "x86_64"
/* The ELF machine of the executables profd builds unwind tables for. */
#define ARCH_ELF_MACHINE EM_X86_64

/* DWARF register numbers (System V x86-64 psABI): frame pointer (rbp),
 * stack pointer (rsp), return address column (rip). */
#define ARCH_DWARF_REG_FP 6
#define ARCH_DWARF_REG_SP 7
#define ARCH_DWARF_REG_RA 16

/* .eh_frame rows (unwind_cfi.c) express this architecture's frames: the
 * return address at a CFA offset, the CFA from sp or the frame pointer. */
#define ARCH_HAS_UNWIND_TABLES 1

/* The page size the BPF objects weigh page faults by (bpf/arch's
 * PROFD_PAGE_SIZE): x86-64's only size. */
#define ARCH_BPF_PAGE_SIZE 4096

/* The kernel's per-call syscall functions (fentry targets, probes). */
#define ARCH_SYSCALL_FN(name) "__x64_sys_" name
/* Does poll(2) exist as its own call (else only ppoll)? */
#define ARCH_HAS_SYS_POLL 1

#endif
