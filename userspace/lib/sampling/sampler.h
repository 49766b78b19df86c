/* sampler: loads the CPU-sampling BPF programs, attaches one perf_event
 * per online CPU plus the exec/exit tracepoints, and hands ringbuf events
 * (lifecycle events, samples, stack records) to a callback.  It also
 * gives access to the per-CPU counters. */
#ifndef PROFD_SAMPLER_H
#define PROFD_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profd_abi.h"

struct sampler;

/* Called for every ringbuf record; data starts with a __u32 type. */
typedef void (*sampler_event_fn)(void *ctx, const void *data, size_t len);

struct sampler_opts {
	uint32_t rate_hz;           /* cpu-clock frequency; default 99 */
	const uint32_t *pids;       /* restrict to these tgids (in-kernel) */
	size_t npids;
	uint32_t ringbuf_bytes;     /* power of two; default by CPUs and rate (sampler.c) */
	uint32_t stack_map_entries; /* slots of the table of stack IDs BPF remembers as sent
				      * (a power of two >= 65536); 0: 262144 */
	bool python_uprobe;         /* also attach the eval-loop uprobe */
	uint64_t unwind_table_bytes; /* cap on .eh_frame tables; default 64 MiB */
	struct gpu *gpu;            /* GPU tracing (gpu.h); NULL: off */
	bool offcpu;                /* off-CPU time through sched_switch */
	uint64_t offcpu_min_ns;     /* shortest block sent; default 1 ms */
	bool memory;                /* resident memory through user page faults */
	uint64_t memory_sample_bytes; /* mean bytes per memory event; default 2 MiB (options.c) */
	bool memory_no_huge;        /* set by the sampler when the kernel refuses the huge-page
				     * program: memory goes on, its THP faults weigh a page */
	bool mmap;                  /* mapping calls through C library uprobes (mmap.bpf.h) */
	int bpf_build;              /* enum bpfload_variant to load (0: the kernel's pick) */
};

struct unwinder;
struct gpu;

/* An optional feature the kernel refused at load, and its reason. */
#define SAMPLER_MAX_REFUSALS 8
struct sampler_refusal {
	const char *feature;
	char why[240];
};

/* Load the programs and create the maps, attaching nothing yet, so maps
 * such as py_procs can be filled before the first sample.  NULL + errno;
 * logs what failed (privileges, load). */
struct sampler *sampler_open(const struct sampler_opts *opts, sampler_event_fn fn, void *ctx);
/* Attach the perf events on every online CPU and the tracepoints. */
int sampler_start(struct sampler *s);
void sampler_close(struct sampler *s);
/* Sample the CPUs that came online since (hotplug, a VM given more);
 * returns how many.  For a timer: it reads sysfs. */
int sampler_attach_new_cpus(struct sampler *s);

/* fds to poll for readability (samples; exec and exit), then call
 * sampler_consume(). */
int sampler_fd(const struct sampler *s);
int sampler_proc_fd(const struct sampler *s);
/* Consume all available records; returns the number or -errno. */
int sampler_consume(struct sampler *s);

/* Userspace dropped the stacks it kept from before generation gen: BPF
 * sends every stack again the next time it sees it (stackhash.bpf.h). */
void sampler_set_stack_gen(struct sampler *s, uint32_t gen);
/* Walk Python frames of pid from now on.  module is the file holding the
 * interpreter as the process's maps name it; with python_uprobe the
 * eval-loop uprobe is attached to it once (by file identity). */
int sampler_py_add(struct sampler *s, uint32_t pid, const struct profd_py_proc *pp,
		   const char *module);
void sampler_py_del(struct sampler *s, uint32_t pid);
/* The native unwinder feeding the BPF tables (never NULL once open). */
struct unwinder *sampler_unwinder(const struct sampler *s);

/* --mmap: probe the C libraries pid maps (m: its maps) not probed yet. */
struct procmaps;
int sampler_mmap_scan(struct sampler *s, uint32_t pid, const struct procmaps *m);
/* --mmap: C library files probed and their uprobes (0 when off). */
void sampler_mmap_counts(const struct sampler *s, uint64_t *files, uint64_t *uprobes);

/* Number of eval-loop uprobes attached. */
int sampler_py_uprobes(const struct sampler *s);

/* Sum of every CPU's counters. */
int sampler_counters(struct sampler *s, uint64_t out[PROFD_CNT_MAX]);
/* Throttling the kernel reported on the sampling events (throttle.h). */
struct throttle_counts;
void sampler_throttle_counts(const struct sampler *s, struct throttle_counts *out);
/* Lifecycle events BPF could not send (PROFD_CNT_PROC_RB_FULL), read from
 * the program's global: no system call, for every tick. */
uint64_t sampler_proc_events_lost(const struct sampler *s);
/* Number of CPUs sampled. */
int sampler_ncpus(const struct sampler *s);
/* Bytes the BPF maps take (ringbuf + stacks + scratch), for stats. */
uint64_t sampler_map_bytes(const struct sampler *s);
/* The sample ring's size, or the lifecycle ring's (as sized at load). */
uint32_t sampler_ring_bytes_of(const struct sampler *s, bool lifecycle);

const char *sampler_counter_name(int which);

/* The thread state BPF keeps for tid (offcpu.bpf.h), read through a
 * pidfd of the thread.  0, -ENOENT (none: never blocked nor sampled under
 * profd, or off-CPU is off) or -errno. */
/* What the kernel took of the options asked (offcpu, memory, mmap,
 * python_uprobe turned off where it refused their programs), which
 * build of the object it runs, and what it refused. */
const struct sampler_opts *sampler_loaded(const struct sampler *s);
const char *sampler_variant(const struct sampler *s);
size_t sampler_refusals(const struct sampler *s, const struct sampler_refusal **out);

int sampler_thread_state(const struct sampler *s, uint32_t tid, struct profd_thread_state *out);

#endif
