/* ingest_memory.c: memory made resident, and memory mapped.  A memory
 * event names the native and Python stacks of a thread whose page fault
 * crossed its CPU's sampling threshold, weighted by the bytes of all
 * faults counted on that CPU since the last event (memory.bpf.h); an mmap
 * event has the same layout and names the stacks of a thread that called
 * mmap, munmap, mremap or brk, weighted by the signed change in mapped
 * bytes (mmap.bpf.h).  Either becomes a stack like a CPU sample's, counted
 * in its profile in bytes; the mmap profile's frees are negative weights,
 * added in two's complement (sums of uint64 cells stay exact as int64). */
#include <errno.h>
#include <string.h>

#include "ingest.h"
#include "ingest_int.h"


static void count_bytes(struct ingest *in, const struct profd_memory_event *e)
{
	if (e->type == PROFD_EV_MEMORY)
		in->c.memory_bytes += e->bytes;
	else if ((int64_t)e->bytes > 0)
		in->c.mmap_bytes_mapped += e->bytes;
	else
		in->c.mmap_bytes_unmapped += (uint64_t)-(int64_t)e->bytes;
}

int ingest_memory_event(struct ingest *in, const void *data, size_t len, bool final)
{
	char comm[PROFD_COMM_LEN + 1];
	uint32_t ids[INGEST_MAX_FRAMES], n = 0;
	struct profd_memory_event e;
	struct profd_sample s;
	struct proc *p;
	int err = 0;

	if (len < sizeof(e)) {
		in->c.bad_events++;
		return 0;
	}
	memcpy(&e, data, sizeof(e));
	ingest_sample_of(&s, e.pid, e.tid, e.time_ns, e.kstack_id, e.ustack_id, e.pystack_id,
			 e.flags);
	s.start_ns = e.start_ns;
	memcpy(s.comm, e.comm, sizeof(s.comm));
	p = ingest_event_proc(in, &s, comm, e.comm);
	if (p)
		err = ingest_event_frames(in, p, &s, final, ids, INGEST_MAX_FRAMES, &n);
	if (p && err == -EAGAIN)
		return err; /* counted when it is taken again */
	if (e.type == PROFD_EV_MMAP)
		in->c.mmap_events++;
	else
		in->c.memory_events++;
	if (!p)
		return 0;
	if (err)
		in->c.dropped_nomem++;
	else if (ingest_count_weight(in, p, e.type == PROFD_EV_MMAP ? AGG_MMAP : AGG_MEMORY, ids,
				     n, &s, comm, e.bytes) >= 0)
		count_bytes(in, &e);
	return 0;
}
