#include "throttle.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Four data pages hold 512 of the 32-byte records: a second of an event
 * throttled at every tick of a 250 Hz kernel, between two reads of the
 * rings (at least once a second).  More is counted as lost by the kernel. */
#define DATA_PAGES 4

/* PERF_RECORD_THROTTLE/UNTHROTTLE: header, time, id, stream_id.
 * PERF_RECORD_LOST: header, id, lost.  No sample_id_all: nothing follows. */
struct rec {
	struct perf_event_header h;
	uint64_t a, b, c;
};

int throttle_ring_map(struct throttle_ring *r, int perf_fd)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t bytes = (size_t)page * (1 + DATA_PAGES);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, perf_fd, 0);

	memset(r, 0, sizeof(*r));
	if (p == MAP_FAILED)
		return -errno;
	r->base = p;
	r->bytes = bytes;
	return 0;
}

void throttle_ring_unmap(struct throttle_ring *r)
{
	if (r->base)
		munmap(r->base, r->bytes);
	memset(r, 0, sizeof(*r));
}

static void count(struct throttle_ring *r, const struct rec *x, struct throttle_counts *c)
{
	switch (x->h.type) {
	case PERF_RECORD_THROTTLE:
		c->episodes++;
		r->since = x->a;
		break;
	case PERF_RECORD_UNTHROTTLE:
		if (r->since && x->a > r->since)
			c->throttled_ns += x->a - r->since;
		r->since = 0;
		break;
	case PERF_RECORD_LOST:
		c->lost += x->b;
		break;
	}
}

void throttle_parse(struct throttle_ring *r, const unsigned char *data, uint64_t size,
		    uint64_t tail, uint64_t head, struct throttle_counts *c)
{
	struct rec x;
	uint64_t i;

	while (head - tail >= sizeof(x.h)) {
		unsigned char *dst = (unsigned char *)&x;

		/* A record may wrap around the end of the data area. */
		for (i = 0; i < sizeof(x.h); i++)
			dst[i] = data[(tail + i) & (size - 1)];
		/* A size the kernel would never write: skip what is left
		 * rather than walk garbage. */
		if (x.h.size < sizeof(x.h) || x.h.size > head - tail)
			return;
		memset(dst + sizeof(x.h), 0, sizeof(x) - sizeof(x.h));
		for (i = sizeof(x.h); i < x.h.size && i < sizeof(x); i++)
			dst[i] = data[(tail + i) & (size - 1)];
		count(r, &x, c);
		tail += x.h.size;
	}
}

void throttle_ring_read(struct throttle_ring *r, struct throttle_counts *c)
{
	struct perf_event_mmap_page *meta = r->base;
	uint64_t head, tail;

	if (!meta || !meta->data_size || (meta->data_size & (meta->data_size - 1)))
		return;
	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	tail = meta->data_tail;
	if (head == tail)
		return;
	throttle_parse(r, (const unsigned char *)meta + meta->data_offset, meta->data_size, tail,
		       head, c);
	__atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
}
