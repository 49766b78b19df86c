/* ingest_comm.c: time in collectives read from samples, where profd does
 * not trace them (--collectives): a CPU sample, or an off-CPU block,
 * whose native frames pass through a communication library's blocking
 * call (MPI_Allreduce, ncclAllReduce, c10d::Work::wait) counts in the
 * comm profile too, under the frames above the outermost such call with
 * the call as its leaf: the stack tracing gives, at no cost per call.
 * A CPU sample stands for the sampling period.  Waits that spin (Open
 * MPI's default) are on CPU; those that sleep (gloo, a blocking NCCL
 * wait) are seen with --off-cpu.  Call counts (comm-calls) need tracing.
 *
 * A stack with a comm stack is looked at once, when it is first
 * symbolized (a CPU sample's) or counted (an off-CPU block's): its comm
 * stack is kept by its index (profiles only ever append stacks). */
#include <errno.h>

#include "gpu.h"
#include "ingest.h"
#include "ingest_int.h"

/* The comm stack of ids (root first), or -1 when it passes through no
 * call; -ENOMEM. */
static int64_t comm_stack(struct ingest *in, struct proc *p, const uint32_t *ids, uint32_t n)
{
	const struct stackset *dict = in->agg->dict;
	uint32_t cut[INGEST_MAX_FRAMES + 1], i, fn = PROFD_COMM_NONE;
	int64_t leaf;

	for (i = 0; i < n && i < INGEST_MAX_FRAMES; i++) {
		const struct ss_frame *f = &dict->frames[ids[i]];

		if (f->kind == FRAME_NATIVE && (fn = gpu_comm_fn_of_frame(f->name)) != PROFD_COMM_NONE)
			break;
		cut[i] = ids[i];
	}
	if (fn == PROFD_COMM_NONE)
		return -1;
	leaf = aggregate_frame(in->agg, FRAME_GPU, gpu_comm_fn_label(fn));
	if (leaf < 0)
		return leaf;
	cut[i] = (uint32_t)leaf;
	return aggregate_stack(in->agg, p, cut, i + 1);
}

void ingest_comm_note(struct ingest *in, struct proc *p, uint32_t idx, const uint32_t *ids,
		      uint32_t n)
{
	int64_t c;

	if (!in->comm_sample_ns || hashmap_get(&p->ing->comm_of, idx, &(uint64_t){ 0 }))
		return;
	c = comm_stack(in, p, ids, n);
	if (c >= 0 && !hashmap_put(&p->ing->comm_of, idx, (uint64_t)c + 1))
		return;
	if (c != -1)
		in->c.dropped_nomem++;
}

void ingest_comm_count(struct ingest *in, struct proc *p, uint32_t idx, uint32_t tid,
		       const char *comm, uint64_t realtime_ns, uint64_t ns)
{
	uint64_t v;

	/* Most processes have no comm stack: one load. */
	if (!p->ing->comm_of.len || !hashmap_get(&p->ing->comm_of, idx, &v))
		return;
	if (aggregate_add(in->agg, p, AGG_COMM, (uint32_t)(v - 1), tid, comm, realtime_ns, ns))
		in->c.dropped_nomem++;
}
