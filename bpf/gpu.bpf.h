/* gpu.bpf.h: GPU driver calls and CUDA entry points.
 *
 * NVIDIA launches and default-mode synchronizations make no system call,
 * so two sources together:
 *  - ioctl, poll and ppoll on accelerator device files: fentry/fexit on
 *    the per-call syscall functions (PROFD_SYSCALL_FN, arch.bpf.h), so
 *    no other system call pays anything; where BPF trampolines cannot
 *    attach, uprobes on the C library's ioctl/poll/ppoll (only their
 *    callers pay); the raw sys_enter/sys_exit tracepoints (which run for
 *    every system call) only when asked for (userspace picks, gpu.c).
 *    The fd is resolved to its device number here
 *    (files->fdt->fd[fd]->f_inode->i_rdev) and looked up in gpu_devs;
 *    an fd that is not a watched character device returns at once.
 *  - uprobes on the named CUDA API functions (entry and return); only
 *    the outermost API call of a thread counts, so cudaLaunchKernel ->
 *    cuLaunchKernel is one call.
 * Each timed call is sent, when it returns, as a profd_gpu_event with the
 * caller's user and Python stacks, on a ringbuf of its own so a burst of
 * driver calls never crowds out CPU samples. */
#ifndef PROFD_GPU_BPF_H
#define PROFD_GPU_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "common.bpf.h"
#include "kcompat.bpf.h"
#include "profd_abi.h"
#include "python.bpf.h"
#include "stackcap.bpf.h"
#include "unwind.bpf.h"

#define GPU_S_IFMT 0170000
#define GPU_S_IFCHR 0020000
#define GPU_PROT_EXEC 0x4
#define GPU_MINORMASK ((1u << PROFD_GPU_MINORBITS) - 1)

/* Watched syscalls in flight anywhere: while 0, sys_exit needs no
 * lookup.  Approximate on purpose (an entry lost to LRU eviction keeps
 * it up, which only costs lookups). */
__u64 gpu_sys_inflight = 0;

/* Set by userspace before load (gpu.c). */
const volatile __u32 gpu_watch_devices = 0;   /* trace ioctl/poll on gpu_devs */
const volatile __u32 gpu_watch_cuda_libs = 0; /* report mmaps of the libraries below */
const volatile __u32 gpu_watch_cuda = 0;      /* libcuda*: CUDA */
const volatile __u32 gpu_watch_comm = 0;      /* libmpi*, libnccl*, libtorch_cpu*: collectives */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} gpu_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32); /* kernel dev_t, or major with PROFD_GPU_ALL_MINORS */
	__type(value, struct profd_gpu_dev);
} gpu_devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROFD_GPU_CMD_FILTER_ENTRIES);
	__type(key, __u32);
	__type(value, __u8);
} gpu_cmd_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFD_GPU_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} gpu_counters SEC(".maps");

/* GPU programs build stacks here, never in the sampler's slots: a
 * cpu-clock sample may interrupt them mid-capture. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct profd_stack);
} gpu_scratch SEC(".maps");

/* A call between entry and return. */
struct gpu_call {
	__u64 start_ns;
	__u64 sp;  /* CUDA: user sp at entry, tells nested and stale calls apart */
	__u64 ra;  /* CUDA: the return address at entry */
	__u64 arg;
	__u32 source, cls, rdev, nr, cmd;
	__u32 early; /* the stacks below were taken at entry (uprobe hook) */
	__u64 ustack_id, pystack_id;
	__u32 flags, _pad;
};

/* Syscalls and CUDA calls apart: a CUDA call makes ioctls inside. LRU:
 * a call whose return was never seen (longjmp, exit) ages out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct gpu_call);
} gpu_sys_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct gpu_call);
} gpu_cuda_calls SEC(".maps");

/* Communication calls apart from CUDA's: NCCL calls CUDA inside. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct gpu_call);
} gpu_comm_calls SEC(".maps");

static __always_inline void gpu_count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&gpu_counters, &which);

	if (c)
		(*c)++;
}

static __always_inline struct profd_stack *gpu_scratch_slot(__u32 kind)
{
	__u32 slot = kind - 1;

	return bpf_map_lookup_elem(&gpu_scratch, &slot);
}

/* The open file behind fd in the current task, or NULL. */
static __always_inline struct file *gpu_fd_file(int fd)
{
	struct files_struct *files = BPF_CORE_READ(profd_current_task(), files);
	struct fdtable *fdt;
	struct file **fds, *f = NULL;

	if (fd < 0 || !files)
		return NULL;
	fdt = BPF_CORE_READ(files, fdt);
	if (!fdt || (__u32)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (!fds || bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]))
		return NULL;
	return f;
}

/* The watched device fd refers to, or NULL (the common case, so cheap:
 * a few reads and one or two hash lookups). */
static __always_inline struct profd_gpu_dev *gpu_watched(int fd, __u32 *rdev)
{
	struct file *f = gpu_fd_file(fd);
	struct profd_gpu_dev *d;
	struct inode *ino;
	__u32 dev, key, minor;

	if (!f)
		return NULL;
	ino = BPF_CORE_READ(f, f_inode);
	if (!ino || (BPF_CORE_READ(ino, i_mode) & GPU_S_IFMT) != GPU_S_IFCHR)
		return NULL;
	dev = BPF_CORE_READ(ino, i_rdev);
	*rdev = dev;
	d = bpf_map_lookup_elem(&gpu_devs, &dev);
	if (d)
		return d;
	key = dev | GPU_MINORMASK;
	d = bpf_map_lookup_elem(&gpu_devs, &key);
	minor = dev & GPU_MINORMASK;
	if (!d || minor < d->minor_min || minor > d->minor_max)
		return NULL;
	return d;
}

/* Is this command of this device class traced?  By _IOC_TYPE and
 * _IOC_NR only: the size bits change between driver versions. */
static __always_inline int gpu_cmd_traced(const struct profd_gpu_dev *d, __u32 cmd)
{
	__u32 idx = d->cls * 256 + (cmd & 0xff);
	__u8 *on;

	if (d->ioc_type != PROFD_GPU_ANY_TYPE && ((cmd >> 8) & 0xff) != d->ioc_type)
		return 0;
	on = bpf_map_lookup_elem(&gpu_cmd_filter, &idx);
	return on && *on;
}

/* The caller's user and Python stacks into *ustack / *pystack. */
static __always_inline void gpu_stacks(void *ctx, const struct unwind_regs *regs, int have_regs,
				       __u64 now, __u64 *ustack, __u64 *pystack, __u32 *flags)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32;
	struct profd_py_proc *py = bpf_map_lookup_elem(&py_procs, &pid);

	*ustack = stackcap_user(ctx, gpu_scratch_slot(PROFD_STACK_USER), regs, have_regs, pid,
				flags, PYROT_SLOT_GPU);
	*pystack = py ? py_capture_into(py, (__u32)id, gpu_scratch_slot(PROFD_STACK_PYTHON), flags,
					now, PYROT_SLOT_GPU)
		      : 0;
}

/* A watched call begins.  entry: the user registers at the C library
 * function's first instruction (uprobe hook), where the stacks are taken
 * at once: at its return the return address is gone.  NULL: the stacks
 * are taken from the syscall's saved registers when it returns. */
static __always_inline void gpu_begin_sys(void *ctx, __u32 source, const struct profd_gpu_dev *d,
					  __u32 rdev, __u32 cmd, const struct unwind_regs *entry)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct gpu_call c = {
		.start_ns = bpf_ktime_get_ns(),
		.source = source,
		.cls = d->cls,
		.rdev = rdev,
		.nr = cmd & 0xff,
		.cmd = cmd,
	};

	if (entry) { /* the call starts after the walk, not before */
		c.early = 1;
		gpu_stacks(ctx, entry, 1, c.start_ns, &c.ustack_id, &c.pystack_id, &c.flags);
		c.start_ns = bpf_ktime_get_ns();
	}
	if (bpf_map_update_elem(&gpu_sys_calls, &tid, &c, BPF_ANY))
		gpu_count(PROFD_GPU_CNT_INFLIGHT_FULL);
	else
		__sync_fetch_and_add(&gpu_sys_inflight, 1);
}

/* Fill in the caller's user and Python stacks and send e. */
static __always_inline void gpu_send(void *ctx, struct profd_gpu_event *e,
				     const struct unwind_regs *regs, int have_regs)
{
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->kstack_id = 0;
	gpu_stacks(ctx, regs, have_regs, e->time_ns + e->duration_ns, &e->ustack_id,
		   &e->pystack_id, &e->flags);
	bpf_ringbuf_submit(e, 0);
	gpu_count(PROFD_GPU_CNT_SENT);
}

static __always_inline struct profd_gpu_event *gpu_reserve(const struct gpu_call *c, __u64 now,
							   long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct profd_gpu_event *e = bpf_ringbuf_reserve(&gpu_events, sizeof(*e), 0);

	if (!e) {
		gpu_count(PROFD_GPU_CNT_RB_FULL);
		return NULL;
	}
	e->type = PROFD_EV_GPU;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->source = c->source;
	e->time_ns = c->start_ns;
	e->duration_ns = now - c->start_ns;
	e->arg = c->arg;
	e->flags = 0;
	e->cls = c->cls;
	e->rdev = c->rdev;
	e->nr = c->nr;
	e->cmd = c->cmd;
	e->ret = (__s32)ret;
	return e;
}

/* A watched syscall returned: send it with the caller's stacks. */
static __always_inline int gpu_end_sys(void *ctx, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct profd_gpu_event *e;
	struct unwind_regs regs;
	struct gpu_call *cp, c;
	__u64 now;

	if (!gpu_sys_inflight)
		return 0;
	cp = bpf_map_lookup_elem(&gpu_sys_calls, &tid);
	if (!cp)
		return 0;
	now = bpf_ktime_get_ns();
	c = *cp;
	if (bpf_map_delete_elem(&gpu_sys_calls, &tid) == 0)
		__sync_fetch_and_add(&gpu_sys_inflight, -1);
	e = gpu_reserve(&c, now, ret);
	if (!e)
		return 0;
	if (!c.early) {
		gpu_send(ctx, e, &regs, stackcap_entry_regs(&regs) == 0);
		return 0;
	}
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->kstack_id = 0;
	e->ustack_id = c.ustack_id;
	e->pystack_id = c.pystack_id;
	e->flags = c.flags;
	bpf_ringbuf_submit(e, 0);
	gpu_count(PROFD_GPU_CNT_SENT);
	return 0;
}

/* ioctl(fd, cmd, argp) on a watched device with a traced command; entry
 * as for gpu_begin_sys(). */
static __always_inline int gpu_ioctl_begin(void *ctx, int fd, __u32 cmd, __u64 argp,
					   const struct unwind_regs *entry)
{
	__u32 rdev = 0, inner;
	struct profd_gpu_dev *d = gpu_watched(fd, &rdev);

	if (!d || !selected(bpf_get_current_pid_tgid() >> 32))
		return 0;
	/* NV_ESC_IOCTL_XFER_CMD carries the real escape in its argument
	 * (struct nv_ioctl_xfer: u32 cmd first). */
	if (d->cls == PROFD_GPU_CLASS_NVIDIA && (cmd & 0xff) == PROFD_GPU_NV_XFER_NR &&
	    bpf_probe_read_user(&inner, sizeof(inner), (void *)argp) == 0)
		cmd = (cmd & ~0xffu) | (inner & 0xff);
	if (!gpu_cmd_traced(d, cmd))
		return 0;
	gpu_count(PROFD_GPU_CNT_IOCTL_SEEN);
	gpu_begin_sys(ctx, PROFD_GPU_SRC_IOCTL, d, rdev, cmd, entry);
	return 0;
}

/* poll/ppoll(fds, nfds, ...): the first watched fd among the first few. */
static __always_inline int gpu_poll_begin(void *ctx, __u64 ufds, __u32 nfds,
					  const struct unwind_regs *entry)
{
	__u32 i, rdev = 0;
	struct profd_gpu_dev *d;
	struct pollfd pfd;

	for (i = 0; i < PROFD_GPU_MAX_POLL_FDS && i < nfds; i++) {
		if (bpf_probe_read_user(&pfd, sizeof(pfd), (void *)(ufds + i * sizeof(pfd))))
			return 0;
		d = gpu_watched(pfd.fd, &rdev);
		if (!d)
			continue;
		if (!selected(bpf_get_current_pid_tgid() >> 32))
			return 0;
		gpu_count(PROFD_GPU_CNT_POLL_SEEN);
		gpu_begin_sys(ctx, PROFD_GPU_SRC_POLL, d, rdev, 0, entry);
		return 0;
	}
	return 0;
}

/* The syscall hooks' view: the user registers as the syscall saw them. */
static __always_inline int gpu_sys_ioctl(void *ctx, const struct pt_regs *regs)
{
	return gpu_ioctl_begin(ctx, (int)PROFD_SYSCALL_ARG0(regs), (__u32)PROFD_SYSCALL_ARG1(regs),
			       PROFD_SYSCALL_ARG2(regs), NULL);
}

static __always_inline int gpu_sys_poll(void *ctx, const struct pt_regs *regs)
{
	return gpu_poll_begin(ctx, PROFD_SYSCALL_ARG0(regs), (__u32)PROFD_SYSCALL_ARG1(regs), NULL);
}

/* Is the file a library whose entry points we probe: libcuda* (CUDA),
 * libmpi* / libmpich* (MPI), libnccl* (NCCL), libtorch_cpu* (c10d)? */
static __always_inline int gpu_is_probed_lib(struct file *f)
{
	const unsigned char *name = BPF_CORE_READ(f, f_path.dentry, d_name.name);
	char b[13] = {};

	if (bpf_probe_read_kernel(b, 12, name) || b[0] != 'l' || b[1] != 'i' || b[2] != 'b')
		return 0;
	if (gpu_watch_cuda && b[3] == 'c' && b[4] == 'u' && b[5] == 'd' && b[6] == 'a')
		return 1;
	if (!gpu_watch_comm)
		return 0;
	if (b[3] == 'm' && b[4] == 'p' && b[5] == 'i')
		return 1;
	if (b[3] == 'n' && b[4] == 'c' && b[5] == 'c' && b[6] == 'l')
		return 1;
	return b[3] == 't' && b[4] == 'o' && b[5] == 'r' && b[6] == 'c' && b[7] == 'h' &&
	       b[8] == '_' && b[9] == 'c' && b[10] == 'p' && b[11] == 'u';
}

/* Tell userspace to look at this process's mappings for CUDA libraries
 * (and, under the uprobe hook, C libraries) to probe. */
static __always_inline int gpu_report_libmap(void)
{
	struct gpu_call c = { .source = PROFD_GPU_SRC_LIBMAP };
	struct profd_gpu_event *e;

	gpu_count(PROFD_GPU_CNT_LIBMAP);
	c.start_ns = bpf_ktime_get_ns();
	e = gpu_reserve(&c, c.start_ns, 0);
	if (!e)
		return 0;
	e->kstack_id = e->ustack_id = e->pystack_id = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* mmap(addr, len, prot, flags, fd, off) made an executable mapping of a
 * CUDA library: tell userspace to attach the uprobes (once per file),
 * usually long before the first API call. */
static __always_inline int gpu_mmap_end(const struct pt_regs *regs, long ret)
{
	int fd = (int)PROFD_SYSCALL_ARG4(regs);
	struct file *f;

	if (fd < 0 || ret < 0 || !(PROFD_SYSCALL_ARG2(regs) & GPU_PROT_EXEC))
		return 0;
	f = gpu_fd_file(fd);
	if (!f || !gpu_is_probed_lib(f) || !selected(bpf_get_current_pid_tgid() >> 32))
		return 0;
	return gpu_report_libmap();
}

/* A 32-bit process's syscall: other numbers, other registers. */
static __always_inline int gpu_compat(const struct pt_regs *regs)
{
	return PROFD_SYSCALL_COMPAT(regs);
}

/* fentry/fexit on the syscall functions: they run only for these calls.
 * They take the user registers as their one argument, as the raw
 * tracepoint does, and serve native callers only (compat ones go through
 * other functions, which the tracepoints below skip too).  Where a call
 * does not exist (poll on arm64) userspace leaves its programs out. */
SEC("fentry/" PROFD_SYSCALL_FN(ioctl))
int BPF_PROG(on_gpu_ioctl_enter, const struct pt_regs *regs)
{
	return gpu_watch_devices ? gpu_sys_ioctl(ctx, regs) : 0;
}

SEC("fexit/" PROFD_SYSCALL_FN(ioctl))
int BPF_PROG(on_gpu_ioctl_exit, const struct pt_regs *regs, long ret)
{
	return gpu_watch_devices ? gpu_end_sys(ctx, ret) : 0;
}

SEC("fentry/" PROFD_SYSCALL_FN(poll))
int BPF_PROG(on_gpu_poll_enter, const struct pt_regs *regs)
{
	return gpu_watch_devices ? gpu_sys_poll(ctx, regs) : 0;
}

SEC("fexit/" PROFD_SYSCALL_FN(poll))
int BPF_PROG(on_gpu_poll_exit, const struct pt_regs *regs, long ret)
{
	return gpu_watch_devices ? gpu_end_sys(ctx, ret) : 0;
}

SEC("fentry/" PROFD_SYSCALL_FN(ppoll))
int BPF_PROG(on_gpu_ppoll_enter, const struct pt_regs *regs)
{
	return gpu_watch_devices ? gpu_sys_poll(ctx, regs) : 0;
}

SEC("fexit/" PROFD_SYSCALL_FN(ppoll))
int BPF_PROG(on_gpu_ppoll_exit, const struct pt_regs *regs, long ret)
{
	return gpu_watch_devices ? gpu_end_sys(ctx, ret) : 0;
}

SEC("fexit/" PROFD_SYSCALL_FN(mmap))
int BPF_PROG(on_gpu_mmap_exit, const struct pt_regs *regs, long ret)
{
	return gpu_watch_cuda_libs ? gpu_mmap_end(regs, ret) : 0;
}

/* The fallback: raw syscall tracepoints need neither kprobes, tracefs
 * nor trampolines, but run for every system call on the machine; every
 * other one returns after a compare or two. */
SEC("tp_btf/sys_enter")
int BPF_PROG(on_gpu_sys_enter, struct pt_regs *regs, long id)
{
	if (!gpu_watch_devices ||
	    (id != PROFD_NR_IOCTL && id != PROFD_NR_POLL && id != PROFD_NR_PPOLL) ||
	    gpu_compat(regs))
		return 0;
	return id == PROFD_NR_IOCTL ? gpu_sys_ioctl(ctx, regs) : gpu_sys_poll(ctx, regs);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_gpu_sys_exit, struct pt_regs *regs, long ret)
{
	long id;

	/* Nearly every exit: no watched call in flight (and no CUDA
	 * mmaps to look for): one load, no read of the registers. */
	if (!gpu_watch_cuda_libs && !gpu_sys_inflight)
		return 0;
	id = PROFD_SYSCALL_NR(regs);
	if (id == PROFD_NR_MMAP && gpu_watch_cuda_libs && !gpu_compat(regs))
		return gpu_mmap_end(regs, ret);
	if ((id == PROFD_NR_IOCTL || id == PROFD_NR_POLL || id == PROFD_NR_PPOLL) &&
	    gpu_watch_devices)
		return gpu_end_sys(ctx, ret);
	return 0;
}

/* The uprobe hook, where trampolines are refused: uprobes on the C
 * library's ioctl, poll and ppoll (gpu_libc.c attaches them per libc
 * file), so only threads that call those functions trap, and no other
 * system call pays anything.  The cookie is PROFD_GPU_SRC_IOCTL or
 * PROFD_GPU_SRC_POLL (poll and ppoll take the fds the same way).  The
 * stacks are taken here, at the function's first instruction: the ioctl
 * frame is the leaf, as when the syscall's registers are used. */
SEC("uprobe")
int BPF_KPROBE(on_gpu_libc_enter)
{
	struct unwind_regs entry = {
		.ip = PT_REGS_IP(ctx),
		.sp = PT_REGS_SP(ctx),
		.bp = PT_REGS_FP(ctx),
		.lr = PROFD_PT_REGS_LR(ctx), /* at entry: the caller's return address */
	};

	if (!gpu_watch_devices)
		return 0;
	if (bpf_get_attach_cookie(ctx) == PROFD_GPU_SRC_IOCTL)
		return gpu_ioctl_begin(ctx, (int)PT_REGS_PARM1(ctx), (__u32)PT_REGS_PARM2(ctx),
				       PT_REGS_PARM3(ctx), &entry);
	return gpu_poll_begin(ctx, PT_REGS_PARM1(ctx), (__u32)PT_REGS_PARM2(ctx), &entry);
}

/* Their return: ret is the C library's (-1 and errno on failure). */
SEC("uretprobe")
int BPF_KRETPROBE(on_gpu_libc_return, long ret)
{
	return gpu_watch_devices ? gpu_end_sys(ctx, ret) : 0;
}

/* The dynamic loader's _dl_debug_state (the debuggers' hook: it runs
 * after the loader mapped the program's libraries and around every
 * dlopen/dlclose): under the uprobe hook, the report of a new CUDA
 * library the mmap hooks give elsewhere. */
SEC("uprobe")
int BPF_KPROBE(on_gpu_ldso_state)
{
	if (!gpu_watch_cuda_libs || !selected(bpf_get_current_pid_tgid() >> 32))
		return 0;
	return gpu_report_libmap();
}

/* An API entry (CUDA's or a communication library's): fn, its uprobe's cookie, says
 * which function.  A call made while another of the same family is in
 * flight deeper in the stack (lower sp) is nested: not counted; so is a
 * tail call (same sp, but the return address is already the uretprobe
 * trampoline).  One at a higher sp, or at the same sp with the same
 * return address, means the earlier call returned unseen (longjmp,
 * exception): start over. */
static __always_inline int gpu_api_enter(struct pt_regs *ctx, void *calls, __u32 source,
					 __u32 nested, __u32 fn, __u64 arg)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct gpu_call c = {}, *cur;
	__u64 sp = PT_REGS_SP(ctx), ra;

	if (!selected(id >> 32))
		return 0;
	ra = profd_entry_ra(PROFD_PT_REGS_LR(ctx), sp);
	cur = bpf_map_lookup_elem(calls, &tid);
	if (cur && (sp < cur->sp || (sp == cur->sp && ra != cur->ra))) {
		gpu_count(nested);
		return 0;
	}
	c.start_ns = bpf_ktime_get_ns();
	c.sp = sp;
	c.ra = ra;
	c.source = source;
	c.nr = fn;
	c.arg = arg;
	if (bpf_map_update_elem(calls, &tid, &c, BPF_ANY))
		gpu_count(PROFD_GPU_CNT_INFLIGHT_FULL);
	return 0;
}

/* API return: after the outermost call's ret the sp is where the
 * caller's is (PROFD_SP_AFTER_RET of the entry's); a nested call
 * returns below it. */
static __always_inline int gpu_api_return(struct pt_regs *ctx, void *calls, __u32 seen, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct gpu_call *cp, c;
	struct profd_gpu_event *e;
	struct unwind_regs regs;
	__u64 now;

	cp = bpf_map_lookup_elem(calls, &tid);
	if (!cp || PT_REGS_SP(ctx) < PROFD_SP_AFTER_RET(cp->sp))
		return 0;
	now = bpf_ktime_get_ns();
	c = *cp;
	bpf_map_delete_elem(calls, &tid);
	gpu_count(seen);
	e = gpu_reserve(&c, now, ret);
	if (!e)
		return 0;
	/* The stack from where the call returns to: the caller is the
	 * leaf, the entry point is added by name in userspace. */
	regs.ip = PT_REGS_IP(ctx);
	regs.sp = PT_REGS_SP(ctx);
	regs.bp = PT_REGS_FP(ctx);
	regs.lr = 0; /* returned: the link register is the callee's */
	gpu_send(ctx, e, &regs, 1);
	return 0;
}

/* CUDA API entry; the cookie is the enum profd_cuda_fn. */
SEC("uprobe")
int BPF_KPROBE(on_cuda_enter, __u64 arg0)
{
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);

	/* cuLaunchKernelEx(config, f, ...): the kernel comes second. */
	return gpu_api_enter(ctx, &gpu_cuda_calls, PROFD_GPU_SRC_CUDA, PROFD_GPU_CNT_CUDA_NESTED, fn,
			     fn == PROFD_CUDA_cuLaunchKernelEx || fn == PROFD_CUDA_cuLaunchKernelEx_ptsz
				     ? PT_REGS_PARM2(ctx)
				     : arg0);
}

SEC("uretprobe")
int BPF_KRETPROBE(on_cuda_return, long ret)
{
	return gpu_api_return(ctx, &gpu_cuda_calls, PROFD_GPU_CNT_CUDA_SEEN, ret);
}

/* A communication library's blocking call; the cookie is the enum
 * profd_comm_fn.  MPI_Allreduce calling MPI_Wait inside is one call. */
SEC("uprobe")
int BPF_KPROBE(on_comm_enter)
{
	return gpu_api_enter(ctx, &gpu_comm_calls, PROFD_GPU_SRC_COMM, PROFD_GPU_CNT_COMM_NESTED,
			     (__u32)bpf_get_attach_cookie(ctx), 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(on_comm_return, long ret)
{
	return gpu_api_return(ctx, &gpu_comm_calls, PROFD_GPU_CNT_COMM_SEEN, ret);
}

/* A call that makes a kernel handle, between entry and return. */
struct cuda_name_call {
	__u64 sp;    /* user sp at entry: nested calls are not the outer one */
	__u64 out;   /* where the handle is written (CUfunction *, CUkernel *) */
	__u64 owner; /* CUmodule, CUlibrary, or the CUkernel asked for a function */
	__u64 name;  /* const char *, 0 for cuKernelGetFunction */
	__u32 fn, _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tid */
	__type(value, struct cuda_name_call);
} gpu_name_calls SEC(".maps");

static __always_inline struct profd_cuda_name_event *cuda_name_reserve(__u32 fn, __u64 owner)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct profd_cuda_name_event *e = bpf_ringbuf_reserve(&gpu_events, sizeof(*e), 0);

	if (!e) {
		gpu_count(PROFD_GPU_CNT_RB_FULL);
		return NULL;
	}
	e->type = PROFD_EV_CUDA_NAME;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->fn = fn;
	e->handle = 0;
	e->owner = owner;
	e->name_len = 0;
	e->_pad = 0;
	e->name[0] = '\0';
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	return e;
}

/* Where kernel handles are made and dropped (the cookie says which,
 * enum profd_cuda_fn): launches of a driver handle (cuLaunchKernel(f))
 * are named from what was asked for when f was made.  An unload is sent
 * at once; a handle when the call returns, with the name it was made
 * from.  These calls come once per kernel, not per launch. */
SEC("uprobe")
int BPF_KPROBE(on_cuda_name_enter, __u64 out, __u64 owner, __u64 name)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx), tid = (__u32)id;
	struct cuda_name_call c = {}, *cur;
	struct profd_cuda_name_event *e;

	if (!selected(id >> 32))
		return 0;
	if (fn == PROFD_CUDA_cuModuleUnload || fn == PROFD_CUDA_cuLibraryUnload) {
		e = cuda_name_reserve(fn, out); /* the first argument is the owner */
		if (e) {
			bpf_ringbuf_submit(e, 0);
			gpu_count(PROFD_GPU_CNT_NAMES);
		}
		return 0;
	}
	c.sp = PT_REGS_SP(ctx);
	cur = bpf_map_lookup_elem(&gpu_name_calls, &tid);
	if (cur && c.sp < cur->sp)
		return 0; /* made inside another such call: the outer one names it */
	c.out = out;
	c.owner = owner;
	c.name = fn == PROFD_CUDA_cuKernelGetFunction ? 0 : name;
	c.fn = fn;
	bpf_map_update_elem(&gpu_name_calls, &tid, &c, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(on_cuda_name_return, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct profd_cuda_name_event *e;
	struct cuda_name_call *cp, c;
	long n;

	cp = bpf_map_lookup_elem(&gpu_name_calls, &tid);
	if (!cp || PT_REGS_SP(ctx) < PROFD_SP_AFTER_RET(cp->sp))
		return 0;
	c = *cp;
	bpf_map_delete_elem(&gpu_name_calls, &tid);
	if ((int)ret != 0) /* CUDA_SUCCESS: a failed call made nothing */
		return 0;
	e = cuda_name_reserve(c.fn, c.owner);
	if (!e)
		return 0;
	if (bpf_probe_read_user(&e->handle, sizeof(e->handle), (void *)c.out))
		e->handle = 0;
	if (c.name) {
		n = bpf_probe_read_user_str(e->name, sizeof(e->name), (void *)c.name);
		e->name_len = n > 0 ? (__u32)n - 1 : 0;
	}
	bpf_ringbuf_submit(e, 0);
	gpu_count(PROFD_GPU_CNT_NAMES);
	return 0;
}

#endif
