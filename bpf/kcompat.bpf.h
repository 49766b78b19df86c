/* kcompat.bpf.h: what differs between the kernels profd runs on.
 *
 * sample.bpf.c is built twice from the same source: as is, for kernels
 * with bpf_loop (5.17+), bpf_task_pt_regs (5.15+), BTF pointers to the
 * current task and task storage (5.11+); and with PROFD_LEGACY defined
 * (sample_legacy.bpf.c) for 5.10 to 5.16.  Both objects have the same
 * maps, programs and globals, so one skeleton drives either
 * (userspace/lib/sampling/sampler_variant.c picks one by probing the
 * kernel).  Everything variant-specific is here; the rest of bpf/ reads
 * the current task through BPF_CORE_READ, which works in both.
 *
 * Include after vmlinux.h. */
#ifndef PROFD_KCOMPAT_BPF_H
#define PROFD_KCOMPAT_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "arch.bpf.h"

static __always_inline const volatile struct profd_user_regs *
profd_perf_regs(struct bpf_perf_event_data *ctx)
{
	/* regs is the context's first member; each field is loaded whole
	 * (volatile: no narrowed loads, which the context refuses). */
	return (const volatile struct profd_user_regs *)ctx;
}

/* The current task.  5.11+: a BTF pointer; before, a plain address that
 * only BPF_CORE_READ may follow (so every reader of the current task
 * uses BPF_CORE_READ). */
static __always_inline struct task_struct *profd_current_task(void)
{
#ifdef PROFD_LEGACY
	return (struct task_struct *)bpf_get_current_task();
#else
	return bpf_get_current_task_btf();
#endif
}

/* The running kernel's page size (sysconf in userspace, before load):
 * arm64 kernels use 4, 16 or 64 KiB. */
const volatile __u64 page_size = 4096;

/* The user registers the current task saved on kernel entry, or NULL.
 * Before bpf_task_pt_regs (5.15) they are found where the kernel puts
 * them: at the top of the task's kernel stack (PROFD_THREAD_SIZE,
 * arch.bpf.h). */
static __always_inline struct pt_regs *profd_current_pt_regs(void)
{
#ifdef PROFD_LEGACY
	struct task_struct *task = profd_current_task();
	void *stack = BPF_CORE_READ(task, stack);

	return stack ? (struct pt_regs *)(stack + PROFD_THREAD_SIZE(page_size)) - 1 : NULL;
#else
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
#endif
}

/* Loops.  bpf_loop (5.17+) verifies its callback once, whatever the
 * count.  Older verifiers walk a bounded loop once per iteration, with
 * everything the body inlines: there each loop's step is a global
 * function (verified once, on its own) over state kept in a per-CPU map,
 * a slot per caller that may interrupt another on one CPU, so an
 * iteration costs the verifier a few instructions (unwind_loop,
 * py_walk_loop, py_search_loop).
 *
 * Every way out of a loop is a state the verifier takes through all the
 * code after it, and 5.10's keeps the loop counter in each: a break after
 * any step cost ~8,600 instructions a step there (a 128-frame Python walk
 * alone went past the million).  So the loop leaves only between chunks
 * of PROFD_LEGACY_CHUNK steps, and a step after the walk stopped (*stop,
 * in the map) returns at once (up to 31 such calls, ~0.5 us a loop). */
/* The modern build's bpf_loop callbacks: 5.17 to 6.7 check a callback
 * once, with the values the caller's state holds before the first call,
 * and remove the code those values make unreachable (6.8 checks it as
 * called any number of times).  A field known to be 0 there (nothing
 * found yet, no interpreter visited) took out the paths the later
 * iterations need: on 6.1 the thread-list search never found a thread.
 * Copying a state's scalar fields onto themselves through a helper
 * leaves their values as they are and unknown to the verifier. */
#define PROFD_OPAQUE(from, to) bpf_probe_read_kernel((void *)(from), (void *)(to) - (void *)(from), (from))

#define PROFD_LEGACY_CHUNK 32
#define PROFD_LEGACY_LOOP(n, step, slot, stop)                                                    \
	do {                                                                                       \
		__u32 __j, __k;                                                                    \
		_Pragma("clang loop unroll(disable)")                                              \
		for (__j = 0; __j < ((n) + PROFD_LEGACY_CHUNK - 1) / PROFD_LEGACY_CHUNK; __j++) {  \
			_Pragma("clang loop unroll(disable)")                                      \
			for (__k = 0; __k < PROFD_LEGACY_CHUNK; __k++)                             \
				step(slot, __j * PROFD_LEGACY_CHUNK + __k);                        \
			if (*(volatile __u32 *)(stop))                                             \
				break;                                                             \
		}                                                                                  \
	} while (0)

#endif
