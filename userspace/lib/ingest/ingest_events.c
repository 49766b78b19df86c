/* ingest_events.c: what events other than CPU samples (off-CPU, memory,
 * GPU) share: their process, their frames, their weight counted. */
#include <errno.h>
#include <string.h>

#include "ingest.h"
#include "ingest_int.h"
#include "pyproc.h"

int ingest_event_frames(struct ingest *in, struct proc *p, const struct profd_sample *s,
			bool final, uint32_t *ids, uint32_t max, uint32_t *n)
{
	const struct raw_stack *u, *k, *py;
	bool lost = !ingest_sample_stacks(in, s, &k, &u, &py);

	return ingest_event_frames_from(in, p, s, u, k, py, lost, final, ids, max, n);
}

int ingest_event_frames_from(struct ingest *in, struct proc *p, const struct profd_sample *s,
			     const struct raw_stack *u, const struct raw_stack *k,
			     const struct raw_stack *py, bool lost, bool final, uint32_t *ids,
			     uint32_t max, uint32_t *n)
{
	bool stable = true;
	int err;

	in->frames_wait = false;
	ingest_keep_unwind_tables(in, p, s);
	err = ingest_build_frames(in, p, s, u, k, py, ids, max, n, &stable);
	if (err)
		return err;
	/* As for samples: maps or a file's symbols still being read on the
	 * worker are waited for until the batch end, not named by offset. */
	if (!stable && !final && (in->frames_wait || ingest_waits_for_maps(p, s)))
		return -EAGAIN;
	if (lost)
		in->c.stack_lost++;
	return 0;
}

struct proc *ingest_event_proc(struct ingest *in, const struct profd_sample *s, char *comm,
			       const char raw_comm[PROFD_COMM_LEN])
{
	struct proc *p;

	memcpy(comm, raw_comm, PROFD_COMM_LEN);
	comm[PROFD_COMM_LEN] = '\0';
	p = ingest_sample_proc(in, s, comm);
	if (!p) {
		in->c.dropped_noproc++;
		return NULL;
	}
	if (!p->ing->py->checked)
		ingest_detect_python(in, p, s->time_ns);
	return p;
}

int64_t ingest_count_weight(struct ingest *in, struct proc *p, int type, const uint32_t *ids,
			    uint32_t n, const struct profd_sample *s, const char *comm,
			    uint64_t weight)
{
	int64_t idx = aggregate_stack(in->agg, p, ids, n);

	if (idx < 0 || aggregate_add(in->agg, p, type, (uint32_t)idx, s->tid, comm,
				     ingest_realtime(in, s->time_ns), weight)) {
		in->c.dropped_nomem++;
		return -ENOMEM;
	}
	return idx;
}
