/* gpu: GPU driver and CUDA tracing, userspace side.
 *  - which devices to watch: accelerator drivers from /proc/devices
 *    (NVIDIA major 195, nvidia-uvm, kfd, DRM render nodes) and any
 *    character device named with --gpu-device PATH[=CLASS];
 *  - the command-name tables (NV_ESC_*, UVM_*, AMDKFD_IOC_*, DRM_IOCTL_*)
 *    and the CUDA entry points (gpu_names.c);
 *  - the BPF side's configuration, and the CUDA uprobes, attached once
 *    per library file when a process maps libcuda/libcudart
 *    (gpu_uprobe.c);
 *  - counters for profctl stats.
 * The BPF programs live in bpf/gpu.bpf.h, inside the sampler's object. */
#ifndef PROFD_GPU_H
#define PROFD_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profd_abi.h"

struct gpu;
struct procmaps;
struct sample_bpf;

enum gpu_mode {
	GPU_MODE_AUTO = 0, /* devices when a driver is loaded; CUDA when NVIDIA's is */
	GPU_MODE_ON,       /* also CUDA uprobes without an NVIDIA driver */
	GPU_MODE_OFF,      /* nothing loaded, nothing attached */
};

/* How ioctl/poll/ppoll (and mmap, for CUDA) are hooked. */
enum gpu_hook {
	GPU_HOOK_AUTO = 0,   /* fentry/fexit where trampolines attach, else uprobes */
	GPU_HOOK_TRACEPOINT, /* always the raw sys_enter/sys_exit tracepoints */
	GPU_HOOK_FENTRY,     /* in use: fentry/fexit on the syscall functions */
	GPU_HOOK_NONE,       /* in use: nothing attached */
	GPU_HOOK_UPROBE,     /* uprobes on the C library's ioctl/poll/ppoll */
};

struct gpu_opts {
	enum gpu_mode mode;
	enum gpu_hook hook;         /* GPU_HOOK_AUTO, _UPROBE or _TRACEPOINT */
	const char *const *devices; /* --gpu-device PATH[=CLASS] */
	size_t ndevices;
	const char *proc_root;    /* NULL: "/proc" */
	const char *proc_devices; /* NULL: "<proc_root>/devices" */
	bool cuda_launches;       /* also probe kernel and graph launches (--cuda-launches) */
	bool comm;                /* collectives of MPI, c10d and NCCL (--comm), any --gpu mode */
};

/* One watched device (or range of minors) as the BPF map keys it. */
struct gpu_device {
	uint32_t key; /* kernel dev_t, or major << 20 | PROFD_GPU_ALL_MINORS */
	struct profd_gpu_dev dev;
	char *path;   /* --gpu-device path, NULL for drivers found by major */
};

struct gpu_stats {
	uint64_t devices;         /* device entries watched */
	uint64_t events;          /* call events received */
	uint64_t aggregated;
	uint64_t dropped_nomem;
	uint64_t bad_events;
	uint64_t libmaps;         /* "a process mapped libcuda*" reports */
	uint64_t uprobe_files;    /* library files with uprobes */
	uint64_t uprobes;         /* uprobes attached (entry + return) */
	uint64_t uprobe_failures; /* attach failures */
	uint64_t comm_files;      /* communication library files with uprobes */
	uint64_t libc_files;      /* uprobe hook: C library and loader files probed */
	uint64_t libc_uprobes;    /* uprobe hook: probes attached (entry + return) */
	uint64_t libc_failures;   /* uprobe hook: attach failures */
	uint64_t name_events;     /* kernel handles made or dropped, received */
	uint64_t kernel_handles;  /* kernel handles known, all processes together */
	uint64_t kernel_handles_over_cap; /* not kept: the process's table was full */
	uint64_t kernel_names_from_stub;  /* runtime launches named by the stub calling */
	uint64_t kernel_names_unknown;    /* launches of a handle made before profd */
	enum gpu_hook hook;       /* syscall hooks in use: FENTRY, UPROBE, TRACEPOINT, NONE */
	uint64_t bpf[PROFD_GPU_CNT_MAX]; /* the BPF counters, summed over CPUs */
};

/* NULL + errno: EINVAL for a bad --gpu-device (logged). */
struct gpu *gpu_new(const struct gpu_opts *o);
void gpu_free(struct gpu *g);
bool gpu_enabled(const struct gpu *g);

/* The sampler calls these around loading its object; g may be NULL
 * (then the GPU programs are neither loaded nor attached). */
void gpu_bpf_prepare(struct gpu *g, struct sample_bpf *skel);
/* The kernel refused GPU program prog: give up what needs it and keep
 * the rest next time (open the object again and prepare it): CUDA
 * entry points (their uprobes need attach cookies, 5.15+), or a syscall
 * hook for the next one (fentry, then uprobes, then the raw syscall
 * tracepoints).  false when nothing is left to try. */
bool gpu_bpf_refused(struct gpu *g, const char *prog);
int gpu_bpf_loaded(struct gpu *g, struct sample_bpf *skel);
/* Attach the syscall hooks and the uprobes on CUDA libraries that
 * running processes map.  0 or -errno (GPU tracing then stays off). */
int gpu_attach(struct gpu *g);

/* A process mapped (or may have mapped) a CUDA library: attach the
 * uprobes to each such file not seen before. */
int gpu_scan_process(struct gpu *g, uint32_t pid);
int gpu_scan_maps(struct gpu *g, uint32_t pid, const struct procmaps *m);

void gpu_get_stats(const struct gpu *g, struct gpu_stats *out);
struct gpu_stats *gpu_stats_mut(struct gpu *g); /* ingest counts here */
const char *gpu_counter_name(int which);
/* "fentry", "uprobe", "tracepoint", "none". */
const char *gpu_hook_name(enum gpu_hook h);

/* ---- Devices (gpu.c) ---- */

/* Parse /proc/devices text into watched devices (character section only:
 * nvidia* on 195, nvidia-uvm, kfd, drm render minors).  Returns the number
 * stored in out (at most max), or -EINVAL for text that is not
 * /proc/devices at all. */
int gpu_parse_proc_devices(const char *text, size_t len, struct gpu_device *out, size_t max);
/* "nvidia", "uvm", "kfd", "drm", "generic" -> enum profd_gpu_class; -1. */
int gpu_class_from_name(const char *name);
const char *gpu_class_name(uint32_t cls);
/* The _IOC_TYPE every command of the class has (PROFD_GPU_ANY_TYPE). */
uint32_t gpu_class_ioc_type(uint32_t cls);
/* Userspace twin of the BPF filter: is cmd traced on d, given the
 * per-class command-number filter (PROFD_GPU_CMD_FILTER_ENTRIES bytes)? */
bool gpu_cmd_traced(const struct profd_gpu_dev *d, const uint8_t *filter, uint32_t cmd);

/* ---- Names (gpu_names.c) ---- */

/* The driver command's name, e.g. "NV_ESC_RM_CONTROL", or NULL when the
 * class has no name for it.  Decoded from _IOC_NR(cmd) (UVM: the plain
 * command number). */
const char *gpu_cmd_name(uint32_t cls, uint32_t cmd);
/* The leaf frame for a driver call: the name, else "NV_ESC 0x2f",
 * "ioctl 0x2b on /dev/foo", "poll on /dev/foo" ... */
void gpu_call_frame(const struct gpu *g, const struct profd_gpu_event *e, char *buf, size_t len);
/* CUDA entry point name by enum profd_cuda_fn, or NULL. */
const char *gpu_cuda_fn_name(uint32_t fn);
/* Communication calls (comm_names.c): the symbol probed for an enum
 * profd_comm_fn ("MPI_Allreduce", a mangled C++ name), or NULL; and the
 * name frames show ("MPI_Allreduce", "c10d::Work::wait"). */
const char *gpu_comm_fn_symbol(uint32_t fn);
const char *gpu_comm_fn_label(uint32_t fn);
/* The call a native frame's name is (PMPI_Allreduce as MPI_Allreduce,
 * "c10d::Work::wait(...)" as c10d_Work_wait); PROFD_COMM_NONE if none. */
uint32_t gpu_comm_fn_of_frame(const char *name);
/* 1 for libcudart functions, 0 for libcuda. */
int gpu_cuda_fn_runtime(uint32_t fn);
/* Whether fn launches kernels or graphs (probed only with --cuda-launches). */
bool gpu_cuda_fn_launch(uint32_t fn);
/* Does fn take a kernel to launch as its first argument (a host stub
 * for the runtime API)? */
bool gpu_cuda_fn_has_stub(uint32_t fn);
/* Does fn make or drop kernel handles (cuModuleGetFunction ...)? */
bool gpu_cuda_fn_names(uint32_t fn);
/* Does fn launch a driver handle (CUfunction/CUkernel) given in arg? */
bool gpu_cuda_fn_driver_launch(uint32_t fn);
/* The kernel's mangled name inside a host stub's name as the demangler
 * gives it ("__device_stub__Z6vecAddPfi(float*, int)" -> "_Z6vecAddPfi",
 * "__device_stub__Z5scaleIfEvPT_S0_(float*, float)" ->
 * "_Z5scaleIfEvPT_S0_"), into buf; false when sym is no such stub. */
bool gpu_stub_kernel(const char *sym, char *buf, size_t len);
/* Is sym the launch helper CUDA 13's stubs call (not inlined at -O0)? */
bool gpu_is_launch_helper(const char *sym);
/* The watched device entry for rdev (exact, then by major), or NULL. */
const struct gpu_device *gpu_find_device(const struct gpu *g, uint32_t rdev);

/* ---- Kernel handles of one process (gpu_ktab.c) ----
 * What each CUfunction/CUkernel handle (or CUDA 13 runtime handle) it
 * made names, and under which module or library: launches are named by
 * their kernel, unloads forget.  Bounded: at cap a new handle is not
 * kept (counted).  Owned by one thread (ingest). */
struct gpu_ktab;
struct gpu_ktab_counts {
	uint64_t *live;     /* handles kept, summed over every table */
	uint64_t *over_cap; /* handles not kept: a table was full */
};

/* NULL + errno. counts may hold NULLs. */
struct gpu_ktab *gpu_ktab_new(size_t cap, struct gpu_ktab_counts counts);
void gpu_ktab_free(struct gpu_ktab *t);
/* handle now names value (the caller's: a frame id), made under owner.
 * An address met again (freed, then reused for another kernel) takes
 * the new value.  0, -ENOSPC at the cap, -ENOMEM. */
int gpu_ktab_put(struct gpu_ktab *t, uint64_t handle, uint64_t owner, uint64_t value);
/* false when handle is unknown; owner may be NULL. */
bool gpu_ktab_get(const struct gpu_ktab *t, uint64_t handle, uint64_t *value, uint64_t *owner);
/* Forget every handle made under owner (its module or library was
 * unloaded); the number forgotten. */
size_t gpu_ktab_drop_owner(struct gpu_ktab *t, uint64_t owner);
size_t gpu_ktab_len(const struct gpu_ktab *t);

#endif
