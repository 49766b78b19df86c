/* ingest_memory.c: memory made resident.  A memory event names the native
 * and Python stacks of a thread whose page fault crossed its CPU's
 * sampling threshold, weighted by the bytes of all faults counted on that
 * CPU since the last event (memory.bpf.h).  It becomes a stack like a CPU
 * sample's, counted in the memory profile in bytes. */
#include <errno.h>
#include <string.h>

#include "ingest.h"

#define MAX_FRAMES (2 * PROFD_MAX_STACK_DEPTH + PROFD_MAX_PY_FRAMES + 8)

/* The frames of the faulting thread, or -EAGAIN while its maps or a
 * file's symbols are still being read (named at the batch end then). */
static int memory_frames(struct ingest *in, struct proc *p, const struct profd_sample *s,
			 bool final, uint32_t *ids, uint32_t *n)
{
	const struct raw_stack *u, *k, *py;
	bool stable = true, lost;
	int err;

	in->frames_wait = false;
	lost = !ingest_sample_stacks(in, s, &k, &u, &py);
	if (lost && !final)
		return -EAGAIN; /* its record may be in this batch still */
	ingest_keep_unwind_tables(in, p, s);
	err = ingest_build_frames(in, p, s, u, k, py, ids, MAX_FRAMES, n, &stable);
	if (err)
		return err;
	if (!stable && !final && (in->frames_wait || ingest_waits_for_maps(p, s)))
		return -EAGAIN;
	if (lost)
		in->c.stack_lost++;
	return 0;
}

int ingest_memory_event(struct ingest *in, const void *data, size_t len, bool final)
{
	char comm[PROFD_COMM_LEN + 1];
	uint32_t ids[MAX_FRAMES], n = 0;
	struct profd_memory_event e;
	struct profd_sample s;
	struct proc *p;
	int64_t idx;
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
	memcpy(comm, e.comm, PROFD_COMM_LEN);
	comm[PROFD_COMM_LEN] = '\0';
	p = ingest_sample_proc(in, &s, comm);
	if (!p) {
		in->c.memory_events++;
		in->c.dropped_noproc++;
		return 0;
	}
	if (!p->py_checked)
		ingest_detect_python(in, p, s.time_ns);
	err = memory_frames(in, p, &s, final, ids, &n);
	if (err == -EAGAIN)
		return err; /* counted when it is taken again */
	in->c.memory_events++;
	idx = err ? -1 : aggregate_stack(in->agg, p, ids, n);
	if (idx < 0 || aggregate_add(in->agg, p, AGG_MEMORY, (uint32_t)idx, e.tid, comm,
				     ingest_realtime(in, e.time_ns), e.bytes)) {
		in->c.dropped_nomem++;
		return 0;
	}
	in->c.memory_bytes += e.bytes;
	return 0;
}
