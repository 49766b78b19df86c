/* ingest_memory.c: memory made resident.  A memory event names the native
 * and Python stacks of a thread whose page fault crossed its CPU's
 * sampling threshold, weighted by the bytes of all faults counted on that
 * CPU since the last event (memory.bpf.h).  It becomes a stack like a CPU
 * sample's, counted in the memory profile in bytes. */
#include <errno.h>
#include <string.h>

#include "ingest.h"

#define MAX_FRAMES (2 * PROFD_MAX_STACK_DEPTH + PROFD_MAX_PY_FRAMES + 8)

int ingest_memory_event(struct ingest *in, const void *data, size_t len, bool final)
{
	char comm[PROFD_COMM_LEN + 1];
	uint32_t ids[MAX_FRAMES], n = 0;
	struct profd_memory_event e;
	struct profd_sample s;
	struct proc *p;
	int err;

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
	if (!p) {
		in->c.memory_events++;
		return 0;
	}
	err = ingest_event_frames(in, p, &s, final, ids, MAX_FRAMES, &n);
	if (err == -EAGAIN)
		return err; /* counted when it is taken again */
	in->c.memory_events++;
	if (err)
		in->c.dropped_nomem++;
	else if (!ingest_count_weight(in, p, AGG_MEMORY, ids, n, &s, comm, e.bytes))
		in->c.memory_bytes += e.bytes;
	return 0;
}
