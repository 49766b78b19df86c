/* arch_arm64.h: arm64 (AArch64) facts (through arch.h; arch_x86_64.h has
 * the same names). */
#ifndef PROFD_ARCH_ARM64_H
#define PROFD_ARCH_ARM64_H

#include <elf.h>

#define ARCH_NAME "arm64"
#define ARCH_ELF_MACHINE EM_AARCH64

/* The bits of a user code address (the BPF walker's unwind_code_mask).
 * With pointer authentication a saved return address carries a signature
 * in the bits above the virtual address size, whatever the process's
 * keys; those bits are never part of a user address.  The size: the
 * bits that hold our own stack's top (48 with 4-level tables, 39 with
 * 3-level ones; a 52-bit kernel still maps below 2^48 unless asked). */
#include <stdint.h>

static inline unsigned long long arch_code_addr_mask(void)
{
	uintptr_t top = (uintptr_t)__builtin_frame_address(0);
	unsigned int bits = 64 - (unsigned int)__builtin_clzll((unsigned long long)top | 1);

	if (bits < 36)
		bits = 48; /* not a plausible stack: the common size */
	return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

#define ARCH_SYSCALL_FN(name) "__arm64_sys_" name
/* The generic syscall table has ppoll only. */
#define ARCH_HAS_SYS_POLL 0
/* glibc's struct pthread lies below the thread pointer (TLS_DTV_AT_TP):
 * pthread_self() is tp minus its size, which BPF needs from userspace. */
#define ARCH_PTHREAD_BELOW_TP 1

/* CPython's perf trampoline (Python/asm_trampoline.S, -X perf), 3.12
 * and 3.13: stp x29,x30,[sp,#-16]!; mov x29,sp; blr x3; ldp
 * x29,x30,[sp],#16; ret.  A frame record, which the frame-pointer walk
 * of anonymous code crosses too, but for a sample on its first
 * instruction or its ret.  n: how many. */
static inline const struct arch_stub *arch_py_trampolines(unsigned int *n)
{
	static const unsigned char frame_record[] = {
	    0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0x60, 0x00,
	    0x3f, 0xd6, 0xfd, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6,
	};
	static const struct arch_stub stubs[] = {
	    {frame_record, sizeof(frame_record), 4, 16, 16, -2}, /* after the stp, to the ret */
	};

	*n = sizeof(stubs) / sizeof(stubs[0]);
	return stubs;
}

#endif
