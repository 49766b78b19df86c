/* common.bpf.h: what every profd BPF program shares: the counters map.
 * Counters are per-CPU so counting never contends; userspace sums them
 * for `profctl stats`. */
#ifndef PROFD_COMMON_BPF_H
#define PROFD_COMMON_BPF_H

#include "profd_abi.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFD_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		(*c)++;
}

#endif
