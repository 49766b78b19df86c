/* ingest_kernels.c: the kernel a CUDA launch runs, as a leaf frame
 * "kernel NAME", from what the process itself holds:
 *  - CUDA 13 runtime launches pass a handle (a heap object of libcudart),
 *    but are made from the kernel's host stub __device_stub__<kernel>
 *    (through __cudaLaunchKernel, a tail jump to cudaLaunchKernel): the
 *    stub is the caller, and its symbol carries the kernel's;
 *  - driver launches (cuLaunchKernel(f), cuLaunchKernelEx(cfg, f)) pass a
 *    CUfunction/CUkernel, named where it was made (cuModuleGetFunction,
 *    cuLibraryGetKernel, cuKernelGetFunction: ingest_cuda_name_event);
 *  - older nvcc, or __NV_LEGACY_LAUNCH, pass the host stub itself.
 * A handle made before profd started (or dropped at a table's cap) is
 * "kernel [made before profd]": never a heap address. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "demangle.h"
#include "gpu.h"
#include "ingest.h"
#include "ingest_int.h"
#include "symbolize.h"

/* Per-process handle table cap: a process loading more kernels than
 * this (Triton autotuning makes thousands) keeps the first ones. */
#define KTAB_CAP 65536
/* Frames from the launch up looked at for a stub: the stub, or the
 * launch helper (not inlined at -O0) and then the stub. */
#define STUB_DEPTH 3
/* user_frames keys (user_frame() uses bit 63, the legacy stubs bit 62):
 * bit 61 marks "is the frame at this return address a stub?", with the
 * answer's frame id + 1, or 0 for no. */
#define CALLER_KEY_BIT (1ull << 61)
#define STUB_KEY_BIT (1ull << 62)
#define CALLER_NOT_STUB 0

static int64_t label_frame(struct ingest *in, const char *name)
{
	char *readable = demangle(name);
	struct buf label;
	int64_t id = -1;

	buf_init(&label);
	buf_printf(&label, "kernel %s", readable ? readable : name);
	if (buf_cstr(&label))
		id = aggregate_frame(in->agg, FRAME_GPU, label.data);
	buf_free(&label);
	free(readable);
	return id;
}

/* The frame at return address ra: the kernel's frame id when it is a
 * host stub, -ENOENT when it is not, -EBUSY for the launch helper (look
 * one frame up), -EAGAIN while its file's symbols load. */
static int64_t caller_kernel(struct ingest *in, struct proc *p, uint64_t ra, bool final)
{
	uint64_t key = ra ^ CALLER_KEY_BIT, v;
	uint32_t kind = FRAME_UNKNOWN;
	char mangled[512];
	struct buf name;
	int64_t id = -ENOENT;

	if (hashmap_get(&p->ing->user_frames, key, &v))
		return v == CALLER_NOT_STUB ? -ENOENT : (int64_t)v - 1;
	buf_init(&name);
	if (symbolizer_user(in->sym, (int)p->pid, &p->maps, ra, true, &name, &kind, NULL) ||
	    !buf_cstr(&name)) {
		buf_free(&name);
		return -ENOENT;
	}
	in->frames_wait = symbolizer_waiting(in->sym);
	if (kind == FRAME_UNKNOWN && !final && (in->frames_wait || p->maps_pending)) {
		buf_free(&name);
		return -EAGAIN;
	}
	if (kind == FRAME_NATIVE && gpu_is_launch_helper(name.data))
		id = -EBUSY;
	else if (kind == FRAME_NATIVE && gpu_stub_kernel(name.data, mangled, sizeof(mangled)))
		id = label_frame(in, mangled);
	buf_free(&name);
	/* Cached, an unnamed frame too (a stripped library's: PyTorch launches
	 * from there by the ten thousand a second), unless its name is still
	 * on the way. */
	if (id != -EBUSY && (kind != FRAME_UNKNOWN || (!in->frames_wait && !p->maps_pending)))
		hashmap_put(&p->ing->user_frames, key,
			    id >= 0 ? (uint64_t)id + 1 : CALLER_NOT_STUB);
	return id;
}

/* The stub among the first frames of the caller's stack u (leaf first:
 * return addresses, the uretprobe's ip being one too). */
static int64_t stub_kernel(struct ingest *in, struct proc *p, const struct raw_stack *u, bool final)
{
	uint32_t i;
	int64_t id;

	for (i = 0; u && i < u->nr && i < STUB_DEPTH; i++) {
		id = caller_kernel(in, p, u->ips[i], final);
		if (id != -EBUSY)
			return id;
	}
	return -ENOENT;
}

/* Legacy launches: the first argument is the host stub, a function of
 * the process named like the kernel.  -ENOENT when arg is no function
 * of a file (a handle); cached per process and stub once named. */
static int64_t host_stub_kernel(struct ingest *in, struct proc *p, uint64_t stub, uint64_t start,
				bool final)
{
	uint64_t key = stub ^ STUB_KEY_BIT, v;
	const struct procmap *pm;
	uint32_t kind = FRAME_UNKNOWN;
	struct buf name;
	int64_t id = -1;

	if (hashmap_get(&p->ing->user_frames, key, &v))
		return (int64_t)v - 1;
	/* Maps read before the call began may predate the library (dlopen):
	 * have them read (on the worker); named by a later call. */
	pm = p->maps_loaded ? procmaps_find(&p->maps, stub) : NULL;
	if (!pm) {
		if (p->maps_mono_ns < start)
			ingest_request_maps(in, p, stub, start);
		if (!final && (p->maps_pending || p->maps_mono_ns < start))
			return -EAGAIN; /* maps being read: wait for them */
		return -ENOENT;
	}
	if (!(pm->prot & 4 /* PROT_EXEC */) || !pm->path[0] || pm->path[0] == '[')
		return -ENOENT; /* heap, anonymous: a handle */
	buf_init(&name);
	if (symbolizer_user(in->sym, (int)p->pid, &p->maps, stub, false, &name, &kind, NULL) == 0 &&
	    buf_cstr(&name)) {
		in->frames_wait = symbolizer_waiting(in->sym);
		if (final || (kind != FRAME_UNKNOWN && !in->frames_wait))
			id = label_frame(in, name.data); /* already demangled: kept as it is */
	}
	if (id >= 0 && kind != FRAME_UNKNOWN)
		hashmap_put(&p->ing->user_frames, key, (uint64_t)id + 1);
	buf_free(&name);
	if (id < 0 && !final && (kind == FRAME_UNKNOWN || in->frames_wait || p->maps_pending))
		return -EAGAIN; /* its maps or its file's symbols are on the way */
	return id;
}

static int64_t unknown_kernel(struct ingest *in)
{
	if (in->gpu)
		gpu_stats_mut(in->gpu)->kernel_names_unknown++;
	return aggregate_frame(in->agg, FRAME_GPU, "kernel [made before profd]");
}

int64_t ingest_launch_kernel(struct ingest *in, struct proc *p, const struct profd_gpu_event *e,
			     const struct raw_stack *u, bool final)
{
	uint64_t v;
	int64_t id;

	if (gpu_cuda_fn_has_stub(e->nr)) {
		id = stub_kernel(in, p, u, final);
		if (id >= 0 && in->gpu)
			gpu_stats_mut(in->gpu)->kernel_names_from_stub++;
		if (id != -ENOENT)
			return id;
	} else if (!gpu_cuda_fn_driver_launch(e->nr)) {
		return -ENOENT; /* graphs: no kernel of their own */
	}
	if (gpu_ktab_get(p->ing->kernels, e->arg, &v, NULL))
		return (int64_t)v;
	if (gpu_cuda_fn_has_stub(e->nr) && e->arg) {
		id = host_stub_kernel(in, p, e->arg, e->time_ns, final);
		if (id != -ENOENT)
			return id;
	}
	return unknown_kernel(in);
}

static struct gpu_ktab *kernels_of(struct ingest *in, struct proc *p)
{
	struct gpu_stats *st = in->gpu ? gpu_stats_mut(in->gpu) : NULL;
	struct gpu_ktab_counts c = {
	    .live = st ? &st->kernel_handles : NULL,
	    .over_cap = st ? &st->kernel_handles_over_cap : NULL,
	};

	if (!p->ing->kernels)
		p->ing->kernels = gpu_ktab_new(KTAB_CAP, c);
	return p->ing->kernels;
}

/* cuKernelGetFunction(&f, k): f runs k's kernel, and goes with k's
 * library when it is unloaded. */
static void function_of_kernel(struct gpu_ktab *t, const struct profd_cuda_name_event *e)
{
	uint64_t v, owner = 0;

	if (gpu_ktab_get(t, e->owner, &v, &owner))
		gpu_ktab_put(t, e->handle, owner, v);
}

static void apply_name(struct ingest *in, struct gpu_ktab *t, const struct profd_cuda_name_event *e)
{
	char name[PROFD_CUDA_NAME_LEN + 1];
	size_t n = e->name_len < PROFD_CUDA_NAME_LEN ? e->name_len : PROFD_CUDA_NAME_LEN - 1;
	int64_t id;

	switch (e->fn) {
	case PROFD_CUDA_cuModuleUnload:
	case PROFD_CUDA_cuLibraryUnload:
		gpu_ktab_drop_owner(t, e->owner);
		return;
	case PROFD_CUDA_cuKernelGetFunction:
		function_of_kernel(t, e);
		return;
	default:
		break;
	}
	if (!e->handle)
		return;
	memcpy(name, e->name, n);
	name[n] = '\0';
	/* The name's page not in memory when the call returned: said so,
	 * not "made before profd". */
	id = n ? label_frame(in, name) : label_frame(in, "[name unreadable]");
	if (id >= 0)
		gpu_ktab_put(t, e->handle, e->owner, (uint64_t)id);
}

void ingest_cuda_name_event(struct ingest *in, const void *data, size_t len)
{
	struct profd_cuda_name_event e;
	char comm[PROFD_COMM_LEN + 1];
	struct gpu_ktab *t;
	struct proc *p;

	if (len < sizeof(e)) {
		in->c.bad_events++;
		return;
	}
	memcpy(&e, data, sizeof(e));
	if (in->gpu)
		gpu_stats_mut(in->gpu)->name_events++;
	/* Its comm, as launches give theirs: an event read after the exit
	 * (another ring) goes to the exited process, not to a new entry. */
	memcpy(comm, e.comm, PROFD_COMM_LEN);
	comm[PROFD_COMM_LEN] = '\0';
	p = proctable_get(in->pt, e.pid, comm);
	if (!p || !p->ing || !(t = kernels_of(in, p)))
		return;
	apply_name(in, t, &e);
	/* Its exit came first (another ring): the table goes all the same. */
	if (p->exited)
		ingest_kernels_exit(in, p);
}

static void drop_kernels(struct proc *p)
{
	gpu_ktab_free(p->ing->kernels);
	p->ing->kernels = NULL;
	p->ing->kernels_dropping = false;
}

void ingest_kernels_exit(struct ingest *in, struct proc *p)
{
	struct ingest_ktab_exit *x;

	if (!p->ing || !p->ing->kernels || p->ing->kernels_dropping)
		return;
	p->ing->kernels_dropping = true;
	if (in->nktab_exits == INGEST_KTAB_EXITS) {
		drop_kernels(p); /* an exit storm: memory first */
		return;
	}
	x = &in->ktab_exits[in->nktab_exits++];
	x->pid = p->pid;
	x->start_time = p->start_time;
	x->batches = 0;
}

static bool launches_pending(const struct ingest *in, uint32_t pid)
{
	size_t i;

	for (i = 0; i < in->npending; i++)
		if (in->pending[i].ev.gpu.type == PROFD_EV_GPU && in->pending[i].ev.gpu.pid == pid)
			return true;
	return false;
}

void ingest_kernels_end_batch(struct ingest *in)
{
	size_t i, kept = 0;
	struct proc *p;

	for (i = 0; i < in->nktab_exits; i++) {
		struct ingest_ktab_exit *x = &in->ktab_exits[i];

		if (++x->batches < 2 || launches_pending(in, x->pid)) {
			in->ktab_exits[kept++] = *x;
			continue;
		}
		p = proctable_find_exited(in->pt, x->pid, x->start_time);
		if (p && p->ing)
			drop_kernels(p);
	}
	in->nktab_exits = kept;
}
