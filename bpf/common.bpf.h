/* common.bpf.h: what the parts of profd's BPF programs share, here rather
 * than in whichever header a program happens to include first, so that
 * every header compiles on its own (tests/bpf_headers.sh): the counters,
 * the --pid filter, the caller slots and the task flags.
 *
 * Counters are per-CPU so counting never contends; userspace sums them
 * for `profctl stats`.  All of a CPU's counters sit in one map value, a
 * few adjacent cache lines, rather than one value (and allocation) per
 * counter: a sample touches several, and at 99 Hz each separate one
 * would be a cache miss of its own.
 *
 * Include after vmlinux.h. */
#ifndef PROFD_COMMON_BPF_H
#define PROFD_COMMON_BPF_H

#include <bpf/bpf_helpers.h>

#include "profd_abi.h"

#define PF_KTHREAD 0x00200000
#define PF_EXITING 0x00000004 /* include/linux/sched.h: getting shut down */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_counters);
} counters SEC(".maps");

/* This CPU's counters (NULL only if the map were broken). */
static __always_inline struct profd_counters *counters_here(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

static __always_inline void count_in(struct profd_counters *c, __u32 which)
{
	if (c && which < PROFD_CNT_MAX)
		c->c[which]++;
}

static __always_inline void count(__u32 which)
{
	count_in(counters_here(), which);
}

/* Set by userspace before load: 1, only tgids in pid_filter (--pid). */
const volatile __u32 filter_by_pid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROFD_MAX_PID_FILTER);
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

/* Is process tgid profiled (--pid)? */
static __always_inline int selected(__u32 tgid)
{
	return !filter_by_pid || bpf_map_lookup_elem(&pid_filter, &tgid);
}

/* The programs that may interrupt one another on a CPU (a cpu-clock
 * sample lands in a uprobe, a page fault in a uprobe reading user memory)
 * each keep their working state in a slot of their own of the per-CPU
 * maps that hold it: py_rotate (python.bpf.h) and the legacy object's
 * loop state (py_legacy_state, unwind_legacy_state; kcompat.bpf.h).
 * Callers pass theirs down as the walks' slot argument. */
enum pyrot_slot {
	PYROT_SLOT_SAMPLE, /* the CPU sampler (sample.bpf.c) */
	PYROT_SLOT_GPU,    /* GPU driver calls and CUDA entry points (gpu.bpf.h) */
	PYROT_SLOT_OFFCPU, /* off-CPU walks (offcpu.bpf.h) */
	PYROT_SLOT_MEMORY, /* page faults (memory.bpf.h) */
	PYROT_SLOT_MMAP,   /* the C library's mmap and friends (mmap.bpf.h) */
	PYROT_SLOTS,       /* max_entries of the maps above */
};

#endif
