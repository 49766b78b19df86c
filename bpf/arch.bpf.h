/* arch.bpf.h: the architecture's facts, chosen by the __TARGET_ARCH_*
 * the BPF objects are compiled with (cmake/BpfSkeleton.cmake).  Each
 * bpf/arch/<arch>.bpf.h defines the same names; the rest of bpf/ uses
 * only those and never tests the architecture itself.
 *
 * Include after vmlinux.h. */
#ifndef PROFD_ARCH_BPF_H
#define PROFD_ARCH_BPF_H

#if defined(__TARGET_ARCH_x86)
#include "arch/x86.bpf.h"
#elif defined(__TARGET_ARCH_arm64)
#include "arch/arm64.bpf.h"
#else
#error "profd: no bpf/arch header for this __TARGET_ARCH"
#endif

#endif
