/* arch.h: the facts of the architecture profd is built for, one header
 * per architecture with the same names (bpf/arch/ is the BPF side).
 * Common code uses only these names and never tests the architecture. */
#ifndef PROFD_ARCH_H
#define PROFD_ARCH_H

/* A stub of known code that JIT runtimes copy into anonymous memory,
 * and the frame it sets up (for the BPF walker's PROFD_UNWIND_MAP_STUB):
 * at the copy's offsets [frame_lo, frame_hi) the CFA is sp + cfa, the
 * return address at CFA - 8 and the caller's frame pointer at
 * CFA + 8 * fp_off (0: not saved); elsewhere the frame is not set up. */
struct arch_stub {
	const unsigned char *code;
	unsigned char len;
	unsigned char frame_lo, frame_hi, cfa;
	signed char fp_off;
};

#if defined(__x86_64__)
#include "arch_x86_64.h"
#elif defined(__aarch64__)
#include "arch_arm64.h"
#else
#error "profd: no userspace/lib/arch header for this architecture"
#endif

#endif
