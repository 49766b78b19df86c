/* ingest_gpu.c: GPU driver calls, CUDA entry points and the blocking
 * calls of communication libraries (MPI, c10d, NCCL).  Each event
 * becomes the caller's symbolized stack (native and Python, as for a CPU
 * sample) plus leaf frames naming the call: the driver command
 * ("NV_ESC_RM_CONTROL", "ioctl 0x2b on /dev/foo", "poll on nvidia") or
 * the CUDA entry point, and for kernel launches the kernel
 * ("kernel vectorAdd(float*, int)", ingest_kernels.c).
 * It is counted twice: its time in gpu-driver/cuda, once in the *-calls
 * type. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "gpu.h"
#include "ingest.h"
#include "ingest_int.h"
#include "pyproc.h"
#include "symbolize.h"

#define LEAF_FRAMES 2

/* The sample the stack code expects: same IDs and flags.  Not
 * ingest_sample_of, which clears the NEW flags: a GPU event's stacks are
 * walked with it, their records possibly still in the sample ring. */
static void as_sample(const struct profd_gpu_event *e, struct profd_sample *s)
{
	memset(s, 0, sizeof(*s));
	s->type = PROFD_EV_SAMPLE;
	s->pid = e->pid;
	s->tid = e->tid;
	s->time_ns = e->time_ns + e->duration_ns;
	s->kstack_id = e->kstack_id;
	s->ustack_id = e->ustack_id;
	s->pystack_id = e->pystack_id;
	s->flags = e->flags;
	memcpy(s->comm, e->comm, sizeof(s->comm));
}

static int add_leaves(struct ingest *in, struct proc *p, const struct profd_gpu_event *e,
		      const struct raw_stack *u, uint32_t *ids, uint32_t *n, bool final)
{
	char text[256];
	int64_t id;

	gpu_call_frame(in->gpu, e, text, sizeof(text));
	id = aggregate_frame(in->agg, FRAME_GPU, text);
	if (id < 0)
		return (int)id;
	ids[(*n)++] = (uint32_t)id;
	if (e->source == PROFD_GPU_SRC_CUDA) {
		id = ingest_launch_kernel(in, p, e, u, final);
		if (id == -EAGAIN)
			return -EAGAIN;
		if (id >= 0)
			ids[(*n)++] = (uint32_t)id;
	}
	return 0;
}

static int on_call(struct ingest *in, const struct profd_gpu_event *e, struct gpu_stats *st,
		   bool final)
{
	const struct raw_stack *u, *k, *py;
	char comm[PROFD_COMM_LEN + 1];
	uint32_t ids[INGEST_MAX_FRAMES + LEAF_FRAMES], n; /* GPU calls are few: no memo */
	struct profd_sample s;
	int err;
	struct proc *p;
	int64_t idx;
	bool cuda = e->source == PROFD_GPU_SRC_CUDA, net = e->source == PROFD_GPU_SRC_COMM;
	int type = cuda ? AGG_CUDA : net ? AGG_COMM : AGG_GPU_DRIVER;
	int calls = cuda ? AGG_CUDA_CALLS : net ? AGG_COMM_CALLS : AGG_GPU_DRIVER_CALLS;
	uint64_t when;

	as_sample(e, &s);
	if (!ingest_sample_stacks(in, &s, &k, &u, &py) && !final)
		return -EAGAIN; /* its record is in the other ring: later */
	memcpy(comm, e->comm, PROFD_COMM_LEN);
	comm[PROFD_COMM_LEN] = '\0';
	p = proctable_get(in->pt, e->pid, comm);
	if (!p)
		goto nomem;
	if (!p->ing->py->checked)
		ingest_detect_python(in, p, s.time_ns);
	/* Its maps or a library's symbols still being read: the batch end. */
	err = ingest_event_frames(in, p, &s, final, ids, INGEST_MAX_FRAMES, &n);
	if (err == -EAGAIN)
		return err;
	if (!err)
		err = add_leaves(in, p, e, u, ids, &n, final);
	if (err == -EAGAIN)
		return err;
	if (err)
		goto nomem;
	idx = aggregate_stack(in->agg, p, ids, n);
	when = ingest_realtime(in, e->time_ns);
	if (idx < 0 ||
	    aggregate_add(in->agg, p, type, (uint32_t)idx, e->tid, comm, when, e->duration_ns) ||
	    aggregate_add(in->agg, p, calls, (uint32_t)idx, e->tid, comm, when, 1))
		goto nomem;
	if (st)
		st->aggregated++;
	return 0;
nomem:
	if (st)
		st->dropped_nomem++;
	return 0;
}

int ingest_gpu_event(struct ingest *in, const void *data, size_t len, bool final)
{
	struct gpu_stats *st = in->gpu ? gpu_stats_mut(in->gpu) : NULL;
	struct profd_gpu_event e;

	if (len < sizeof(e)) {
		in->c.bad_events++;
		return 0;
	}
	memcpy(&e, data, sizeof(e));
	switch (e.source) {
	case PROFD_GPU_SRC_LIBMAP:
		if (st)
			st->libmaps++;
		gpu_scan_process(in->gpu, e.pid);
		return 0;
	case PROFD_GPU_SRC_IOCTL:
	case PROFD_GPU_SRC_POLL:
	case PROFD_GPU_SRC_CUDA:
	case PROFD_GPU_SRC_COMM:
		if (on_call(in, &e, st, final) == -EAGAIN)
			return -EAGAIN; /* counted when it is taken again */
		if (st)
			st->events++;
		return 0;
	default:
		in->c.bad_events++;
		if (st)
			st->bad_events++;
		return 0;
	}
}
