/* common.bpf.h: what every profd BPF program shares: the counters map.
 * Counters are per-CPU so counting never contends; userspace sums them
 * for `profctl stats`.  All of a CPU's counters sit in one map value, a
 * few adjacent cache lines, rather than one value (and allocation) per
 * counter: a sample touches several, and at 99 Hz each separate one
 * would be a cache miss of its own. */
#ifndef PROFD_COMMON_BPF_H
#define PROFD_COMMON_BPF_H

#include "profd_abi.h"

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

#endif
