/* arch_arm64.h: arm64 (AArch64) facts (through arch.h; arch_x86_64.h has
 * the same names). */
#ifndef PROFD_ARCH_ARM64_H
#define PROFD_ARCH_ARM64_H

#include <elf.h>

#define ARCH_NAME "arm64"
#define ARCH_ELF_MACHINE EM_AARCH64

/* DWARF register numbers (AArch64 DWARF ABI): x29 (frame pointer), sp,
 * x30 (the link register, the return address column). */
#define ARCH_DWARF_REG_FP 29
#define ARCH_DWARF_REG_SP 31
#define ARCH_DWARF_REG_RA 30

/* The rows unwind_cfi.c compiles assume x86-64's return address at a CFA
 * offset; on arm64 it starts in x30 and may be signed (PAC).  Until the
 * rows can say so, no tables: native stacks come from frame pointers. */
#define ARCH_HAS_UNWIND_TABLES 0

/* The page size the BPF objects weigh page faults by (bpf/arch's
 * PROFD_PAGE_SIZE): Debian's 4 KiB; 16 and 64 KiB kernels need it from
 * sysconf at load (later work). */
#define ARCH_BPF_PAGE_SIZE 4096

#define ARCH_SYSCALL_FN(name) "__arm64_sys_" name
/* The generic syscall table has ppoll only. */
#define ARCH_HAS_SYS_POLL 0

#endif
