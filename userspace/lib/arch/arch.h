/* arch.h: the facts of the architecture profd is built for, one header
 * per architecture with the same names (bpf/arch/ is the BPF side).
 * Common code uses only these names and never tests the architecture. */
#ifndef PROFD_ARCH_H
#define PROFD_ARCH_H

#if defined(__x86_64__)
#include "arch_x86_64.h"
#elif defined(__aarch64__)
#include "arch_arm64.h"
#else
#error "profd: no userspace/lib/arch header for this architecture"
#endif

#endif
