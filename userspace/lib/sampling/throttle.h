/* throttle: the kernel's word that it throttled a sampling event.
 *
 * When sampling interrupts take more than kernel.perf_cpu_time_max_percent
 * of a CPU, or an event fires more often than perf_event_max_sample_rate
 * allows per tick, the kernel stops the event until the next tick and says
 * so with PERF_RECORD_THROTTLE / UNTHROTTLE records in the event's own
 * ring.  A BPF perf_event program never sees that ring, so profd maps a
 * small one per CPU event for these records alone (the BPF program returns
 * 0, so no sample is ever written into it) and counts the episodes and the
 * time the CPU went unsampled. */
#ifndef PROFD_THROTTLE_H
#define PROFD_THROTTLE_H

#include <stddef.h>
#include <stdint.h>

struct throttle_counts {
	uint64_t episodes;     /* PERF_RECORD_THROTTLE seen */
	uint64_t throttled_ns; /* time between a THROTTLE and its UNTHROTTLE */
	uint64_t lost;         /* records the kernel could not write (ring full) */
	uint64_t unwatched;    /* events whose ring could not be mapped */
};

struct throttle_ring {
	void *base;    /* NULL: not mapped */
	size_t bytes;  /* metadata page + data pages */
	uint64_t since; /* time of an open THROTTLE, 0 if none */
};

/* Map the ring of perf event fd (1 metadata + 4 data pages): 0 or -errno;
 * on failure r stays unmapped and reads count nothing. */
int throttle_ring_map(struct throttle_ring *r, int perf_fd);
void throttle_ring_unmap(struct throttle_ring *r);
/* Read every record written since the last call into c; cheap when there
 * is none (two loads).  One reader per ring. */
void throttle_ring_read(struct throttle_ring *r, struct throttle_counts *c);
/* The records themselves, for tests: data is the ring's data area of
 * size bytes (a power of two), [tail, head) what to read. */
void throttle_parse(struct throttle_ring *r, const unsigned char *data, uint64_t size,
		    uint64_t tail, uint64_t head, struct throttle_counts *c);

#endif
