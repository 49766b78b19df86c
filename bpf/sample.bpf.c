// SPDX-License-Identifier: GPL-2.0
/* sample.bpf.c: CPU sampling.  One perf_event program per online CPU
 * (software cpu-clock, frequency mode) captures the kernel and user stack
 * of whatever runs there, stores each stack once in a content-hashed map
 * and sends a small fixed-size event with the stack IDs to the ringbuf.
 * For Python processes it also walks the interpreter's frames
 * (python.bpf.h).
 * Three BTF tracepoints report fork, exec and exit so userspace can keep
 * its process table right. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "profd_abi.h"
#include "kcompat.bpf.h"
#include "common.bpf.h"
#include "stackhash.bpf.h"
#include "python.bpf.h"
#include "unwind.bpf.h"
#include "stackcap.bpf.h"
#include "gpu.bpf.h" /* GPU driver and CUDA tracing, sharing the stack capture */
#include "offcpu.bpf.h" /* off-CPU time: sched_switch */
#include "memory.bpf.h" /* resident memory: user page faults */
#include "mmap.bpf.h" /* mapped memory: the C library's mmap, munmap, mremap, brk */

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 abi_version = PROFD_ABI_VERSION;

/* exec and exit: a ring of their own, so samples cannot crowd them out. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* resized by userspace: by CPUs (sampler.c) */
} proc_events SEC(".maps");

/* The sample is built here, not on the stack: the verifier does not
 * track values in map memory, so the paths that set different flags
 * (kernel or user mode, new or known stacks, truncations) meet again
 * instead of each taking the rest of the program with it (on 5.10 the
 * legacy object went past the million instructions for that alone). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_sample);
} sample_scratch SEC(".maps");

/* Capture one stack (kernel or user) into the stacks map and return its
 * ID, setting the NEW / TRUNC flags on the event (stackcap.bpf.h). */
static __always_inline __u64 capture(void *ctx, __u32 kind, struct profd_sample *e)
{
	return stackcap_get_stack(ctx, stackhash_scratch(kind), kind, &e->flags);
}

/* A process in its first young_ns: its samples wake userspace at once
 * (at most once per young_gap_ns on a CPU) instead of waiting for the
 * next batch, so its maps, symbols and Python code objects are read
 * while it still runs.  A build step, a CLI or a test runner's child is
 * over before the batch (up to a second) is read, and /proc then has
 * nothing of it: its frames were "[unknown]" and "[python frame
 * unreadable]". */
const volatile __u64 young_ns = 300 * 1000000ull;
const volatile __u64 young_gap_ns = 5 * 1000000ull;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} young_woken SEC(".maps"); /* when this CPU last woke userspace for one */

static __always_inline __u64 sample_wakeup_flag(__u64 start_boot_ns)
{
	__u64 now = bpf_ktime_get_boot_ns(), *last;
	__u32 zero = 0;

	if (now - start_boot_ns > young_ns)
		return events_wakeup_flag();
	last = bpf_map_lookup_elem(&young_woken, &zero);
	if (!last || now - *last < young_gap_ns)
		return events_wakeup_flag();
	*last = now;
	return BPF_RB_FORCE_WAKEUP;
}

/* Did the sample interrupt user mode? */
static __always_inline int sample_in_user_mode(struct bpf_perf_event_data *ctx)
{
	return PROFD_UREGS_USER_MODE(profd_perf_regs(ctx));
}

/* The user stack: walked with the .eh_frame tables userspace loaded for
 * this process (unwind.bpf.h), so binaries without frame pointers unwind
 * too; frame pointers when the process has no tables (yet). */
static __always_inline __u64 capture_user(struct bpf_perf_event_data *ctx, __u32 tgid,
					  struct profd_sample *e)
{
	struct unwind_regs regs;
	int have_regs = unwind_regs_from_perf(ctx, &regs) >= 0;

	return stackcap_user(ctx, stackhash_scratch(PROFD_STACK_USER), &regs, have_regs, tgid,
			     &e->flags, PYROT_SLOT_SAMPLE);
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct profd_py_proc *py;
	struct task_struct *task;
	struct profd_sample *e;
	__u32 zero = 0;

	count(PROFD_CNT_SEEN);
	/* tid 0 is the idle task: nothing to attribute. */
	if (tid == 0 || !selected(tgid)) {
		count(PROFD_CNT_FILTERED);
		return 0;
	}
	e = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!e)
		return 0;
	/* Sent last: the records of new stacks must precede the sample in
	 * the ring (stackhash.bpf.h). */
	e->type = PROFD_EV_SAMPLE;
	e->pid = tgid;
	e->tid = tid;
	e->cpu = bpf_get_smp_processor_id();
	e->time_ns = bpf_ktime_get_ns();
	e->flags = 0;
	e->_pad = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	/* A sample that interrupted user mode has no kernel stack: not even
	 * asking for one saves setting up a callchain on most samples. */
	e->kstack_id = sample_in_user_mode(ctx) ? 0 : capture(ctx, PROFD_STACK_KERNEL, e);

	task = (struct task_struct *)bpf_get_current_task();
	e->start_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	if (BPF_CORE_READ(task, flags) & PF_KTHREAD) {
		e->flags |= PROFD_SAMPLE_KERNEL_THREAD;
		e->ustack_id = 0;
	} else {
		e->ustack_id = capture_user(ctx, tgid, e);
	}
	py = bpf_map_lookup_elem(&py_procs, &tgid);
	e->pystack_id = py ? py_capture(py, tid, e) : 0;
	offcpu_note_sample(e);
	if (bpf_ringbuf_output(&events, e, sizeof(*e), sample_wakeup_flag(e->start_ns))) {
		count(PROFD_CNT_RB_FULL);
		return 0;
	}
	count(PROFD_CNT_SENT);
	return 0;
}

/* Lifecycle events lost (the counter above, again): a global userspace
 * reads from its mapping every tick with no system call, to start a sweep
 * of /proc at once.  Rare, so one atomic add costs nothing. */
volatile __u64 proc_events_lost = 0;

static __always_inline int send_proc_event(struct task_struct *p, __u32 type)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct profd_proc_event *e;

	if (!selected(tgid))
		return 0;
	e = bpf_ringbuf_reserve(&proc_events, sizeof(*e), 0);
	if (!e) {
		count(PROFD_CNT_PROC_RB_FULL);
		__sync_fetch_and_add(&proc_events_lost, 1);
		return 0;
	}
	e->type = type;
	e->pid = tgid;
	e->tid = BPF_CORE_READ(p, pid);
	e->exit_code = type == PROFD_EV_EXIT ? BPF_CORE_READ(p, exit_code) : 0;
	e->time_ns = bpf_ktime_get_ns();
	e->start_ns = BPF_CORE_READ(p, group_leader, start_boottime);
	e->ppid = BPF_CORE_READ(p, real_parent, tgid);
	e->_pad2 = 0;
	e->parent_start_ns = BPF_CORE_READ(p, real_parent, group_leader, start_boottime);
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	bpf_ringbuf_submit(e, 0);
	count(PROFD_CNT_PROC_SENT);
	return 0;
}

/* A new program: the Python walker must not read it with the old one's
 * layout (a fork's inherited entry, or an exec'ed interpreter) until
 * userspace has looked at it again. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);

	bpf_map_delete_elem(&py_procs, &tgid);
	return send_proc_event(p, PROFD_EV_EXEC);
}

/* A new process (not a thread) has its parent's memory: a forked Python
 * (multiprocessing and DataLoader workers, gunicorn and uWSGI workers)
 * gets Python frames from its first sample, before userspace has seen it,
 * and userspace copies the parent's maps instead of reading them. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 tgid = BPF_CORE_READ(child, tgid), ptgid = BPF_CORE_READ(parent, tgid);
	struct profd_py_proc *py;

	if (BPF_CORE_READ(child, pid) != tgid || tgid == ptgid)
		return 0;
	py = bpf_map_lookup_elem(&py_procs, &ptgid);
	if (py && selected(tgid))
		bpf_map_update_elem(&py_procs, &tgid, py, BPF_ANY);
	return send_proc_event(child, PROFD_EV_FORK);
}

/* Fires for every thread; only the leader's exit ends the process as far
 * as the process table is concerned. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	offcpu_note_exit(p);
	if (BPF_CORE_READ(p, pid) != BPF_CORE_READ(p, tgid))
		return 0;
	return send_proc_event(p, PROFD_EV_EXIT);
}
