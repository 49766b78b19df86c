/* bpfcount: read a BPF program's counters, a per-CPU array of u64 (one
 * slot per counter, or one value holding them all), summed over the
 * CPUs. */
#ifndef PROFD_BPFCOUNT_H
#define PROFD_BPFCOUNT_H

#include <stdint.h>

/* out[0..n) = the sums.  One system call for the whole array where the
 * kernel has batch lookups (stats read every counter each tick: a call
 * per counter was most of an idle daemon's CPU), else one per counter.
 * 0 or -errno (out holds what was read). */
int bpfcount_sum(int map_fd, uint32_t n, uint64_t *out);

/* The same for a per-CPU array whose one value (key 0) holds all n
 * counters: one lookup.  0 or -errno (out zeroed). */
int bpfcount_sum_value(int map_fd, uint32_t n, uint64_t *out);

#endif
