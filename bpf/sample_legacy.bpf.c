// SPDX-License-Identifier: GPL-2.0
/* sample_legacy.bpf.c: sample.bpf.c for kernels 5.10 to 5.16, without
 * bpf_loop, bpf_task_pt_regs, BTF pointers to the current task or task
 * storage (kcompat.bpf.h says what changes). */
#define PROFD_LEGACY 1
#include "sample.bpf.c"
