#include "sampler.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "bpfcount.h"
#include "bpfload.h"
#include "clock.h"
#include "gfpbits.h"
#include "gpu.h"
#include "hashmap.h"
#include "kfeatures.h"
#include "log.h"
#include "mmap_probe.h"
#include "rootfs.h"
#include "sample.skel.h"
#include "throttle.h"
#include "unwinder.h"

struct sampler {
	struct sample_bpf *skel;
	enum bpfload_variant variant;
	struct sampler_opts loaded; /* what the kernel took of what was asked */
	struct sampler_refusal refused[SAMPLER_MAX_REFUSALS];
	size_t nrefused;
	struct ring_buffer *rb;      /* samples, stack records, GPU events */
	struct ring_buffer *rb_proc; /* exec and exit */
	unsigned since_proc;         /* events read since rb_proc was */
	struct bpf_link **links; /* one per sampled CPU */
	int *perf_fds;
	struct throttle_ring *throttle; /* one per sampled CPU (throttle.h) */
	struct throttle_counts throttled; /* written by the reader of the rings */
	/* --memory: a page-fault counting event per CPU (memory.bpf.h), its
	 * period (faults per event) redrawn around memory_pages each second. */
	struct bpf_link **mem_links;
	int *mem_fds;
	uint64_t memory_pages;
	uint64_t memory_redraw_ns;
	struct mmap_probe *mmap; /* --mmap: uprobes on the C libraries */
	int ncpus;               /* entries in links/perf_fds */
	int nsampled;            /* CPUs actually attached */
	int npossible;
	sampler_event_fn fn;
	void *ctx;
	uint64_t map_bytes;
	bool python_uprobe;
	struct gpu *gpu;         /* NULL: GPU tracing off */
	uint32_t rate_hz;
	struct unwinder *unwinder;
	struct unwinder_opts uopts;
	struct hashmap uprobed;  /* hash(dev, ino) of files with the uprobe */
	struct bpf_link **uprobes;
	size_t nuprobes;
};

static const char *const counter_names[PROFD_CNT_MAX] = {
	[PROFD_CNT_SEEN] = "bpf_samples_seen",
	[PROFD_CNT_FILTERED] = "bpf_samples_filtered",
	[PROFD_CNT_SENT] = "bpf_samples_sent",
	[PROFD_CNT_RB_FULL] = "bpf_samples_dropped_ringbuf_full",
	[PROFD_CNT_KSTACK_FAIL] = "bpf_kernel_stack_failed",
	[PROFD_CNT_USTACK_FAIL] = "bpf_user_stack_failed",
	[PROFD_CNT_KSTACK_TRUNC] = "bpf_kernel_stack_truncated",
	[PROFD_CNT_USTACK_TRUNC] = "bpf_user_stack_truncated",
	[PROFD_CNT_STACKMAP_FULL] = "bpf_stack_records_dropped_ringbuf_full",
	[PROFD_CNT_PROC_SENT] = "bpf_proc_events_sent",
	[PROFD_CNT_PROC_RB_FULL] = "bpf_proc_events_dropped_ringbuf_full",
	[PROFD_CNT_PY_SAMPLES] = "bpf_python_samples",
	[PROFD_CNT_PY_NO_TSTATE] = "bpf_python_thread_without_tstate",
	[PROFD_CNT_PY_TRUNC] = "bpf_python_stack_truncated",
	[PROFD_CNT_PY_READ_FAIL] = "bpf_python_read_failed",
	[PROFD_CNT_PY_TSTATE_WALKS] = "bpf_python_thread_list_searches",
	[PROFD_CNT_PY_UPROBE_HITS] = "bpf_python_uprobe_hits",
	[PROFD_CNT_STACKS_SENT] = "bpf_stack_records_sent",
	[PROFD_CNT_MEMORY_WALKS] = "bpf_memory_walks",
	[PROFD_CNT_MEMORY_SENT] = "bpf_memory_events_sent",
	[PROFD_CNT_MEMORY_RB_FULL] = "bpf_memory_events_dropped_ringbuf_full",
	[PROFD_CNT_MEMORY_LARGE_PAGES] = "bpf_memory_huge_pages",
	[PROFD_CNT_MEMORY_LARGE_WALKS] = "bpf_memory_huge_page_walks",
	[PROFD_CNT_MMAP_CALLS] = "bpf_mmap_calls",
	[PROFD_CNT_MMAP_SENT] = "bpf_mmap_events_sent",
	[PROFD_CNT_MMAP_RATE_LIMITED] = "bpf_mmap_events_dropped_budget",
	[PROFD_CNT_MMAP_RB_FULL] = "bpf_mmap_events_dropped_ringbuf_full",
	[PROFD_CNT_OFFCPU_BLOCKS] = "bpf_offcpu_blocks",
	[PROFD_CNT_OFFCPU_CAPTURES] = "bpf_offcpu_stack_walks",
	[PROFD_CNT_OFFCPU_CAPTURE_LIMITED] = "bpf_offcpu_walks_skipped_budget",
	[PROFD_CNT_OFFCPU_SHORT] = "bpf_offcpu_blocks_under_threshold",
	[PROFD_CNT_OFFCPU_SENT] = "bpf_offcpu_events_sent",
	[PROFD_CNT_OFFCPU_UNCAPTURED] = "bpf_offcpu_events_without_stacks",
	[PROFD_CNT_OFFCPU_RATE_LIMITED] = "bpf_offcpu_events_dropped_budget",
	[PROFD_CNT_OFFCPU_RB_FULL] = "bpf_offcpu_events_dropped_ringbuf_full",
	[PROFD_CNT_OFFCPU_NO_STORAGE] = "bpf_offcpu_thread_state_failed",
	[PROFD_CNT_OFFCPU_WALK_UNUSED] = "bpf_offcpu_walks_unused",
	[PROFD_CNT_OFFCPU_END_ESTIMATED] = "bpf_offcpu_blocks_end_estimated",
	[PROFD_CNT_OFFCPU_END_LOST] = "bpf_offcpu_blocks_end_lost",
	[PROFD_CNT_OFFCPU_END_RECALIBRATED] = "bpf_offcpu_blocks_end_recalibrated",
};

const char *sampler_counter_name(int which)
{
	return which >= 0 && which < PROFD_CNT_MAX ? counter_names[which] : "?";
}

/* Lifecycle events go first: read between every PROC_EVERY other events,
 * so a long backlog of samples never lets the exec/exit ring overflow. */
#define PROC_EVERY 256

static int on_proc_record(void *ctx, void *data, size_t len)
{
	struct sampler *s = ctx;

	if (len >= sizeof(__u32))
		s->fn(s->ctx, data, len);
	return 0;
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct sampler *s = ctx;

	if (++s->since_proc >= PROC_EVERY) {
		s->since_proc = 0;
		ring_buffer__consume(s->rb_proc);
	}
	return on_proc_record(ctx, data, len);
}

/* Online CPUs from sysfs ("0-3,5"); falls back to all possible CPUs. */
static bool *online_cpus(int npossible)
{
	bool *online = calloc((size_t)npossible, sizeof(bool));
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int a, b, i;
	char sep;

	if (!online)
		return NULL;
	if (!f) {
		for (i = 0; i < npossible; i++)
			online[i] = true;
		return online;
	}
	while (fscanf(f, "%d", &a) == 1) {
		b = a;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			if (fscanf(f, "%c", &sep) != 1)
				sep = '\n';
		}
		for (i = a; i <= b && i < npossible; i++)
			if (i >= 0)
				online[i] = true;
		if (sep != ',')
			break;
	}
	fclose(f);
	return online;
}

/* A software event on cpu for every task: config PERF_COUNT_SW_*, with
 * hz samples a second (freq) or one every period counts. */
static int open_sw_event(int cpu, uint64_t config, uint32_t hz, uint64_t period)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = config;
	attr.freq = hz != 0;
	attr.sample_period = hz ? hz : period; /* a union with sample_freq */
	return (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* A period drawn uniformly from [N/2, 3N/2): no program's own rhythm of
 * touching memory can line up with the sampling. */
static uint64_t memory_period(const struct sampler *s)
{
	uint64_t n = s->memory_pages;

	return n / 2 + (n > 1 ? (uint64_t)random() % n : 0) + (n < 2);
}

/* --memory on one CPU; trouble there only leaves that CPU's faults out. */
static void attach_memory(struct sampler *s, int cpu)
{
	int fd;

	if (!s->memory_pages)
		return;
	/* Every Nth page fault on cpu overflows: the kernel only counts the rest. */
	fd = open_sw_event(cpu, PERF_COUNT_SW_PAGE_FAULTS, 0, memory_period(s));
	if (fd < 0) {
		log_warn("sampler: page-fault event on cpu %d: %s", cpu, strerror(errno));
		return;
	}
	s->mem_links[cpu] = bpf_program__attach_perf_event(s->skel->progs.on_page_faults, fd);
	if (!s->mem_links[cpu]) {
		log_warn("sampler: attaching the memory program on cpu %d: %s", cpu, strerror(errno));
		close(fd);
		return;
	}
	s->mem_fds[cpu] = fd;
}

/* Once a second: every CPU's page-fault event gets a new period. */
static void redraw_memory_periods(struct sampler *s)
{
	uint64_t now, period;
	int cpu;

	if (!s->memory_pages)
		return;
	now = clock_mono_ns();
	if (now < s->memory_redraw_ns)
		return;
	s->memory_redraw_ns = now + 1000000000ull;
	for (cpu = 0; cpu < s->ncpus; cpu++) {
		period = memory_period(s);
		if (s->mem_fds[cpu] >= 0)
			ioctl(s->mem_fds[cpu], PERF_EVENT_IOC_PERIOD, &period);
	}
}

/* The kernel reports throttling only into the event's own ring. */
static void watch_throttle(struct sampler *s, int cpu, int fd)
{
	int err = throttle_ring_map(&s->throttle[cpu], fd);

	if (err) {
		__atomic_add_fetch(&s->throttled.unwatched, 1, __ATOMIC_RELAXED);
		log_warn("sampler: cpu %d: throttling will not be counted (mmap: %s)", cpu,
			 strerror(-err));
	}
}

/* Sample one CPU: 0, -ENODEV when it went offline meanwhile, or -errno. */
static int attach_cpu(struct sampler *s, int cpu, uint32_t rate_hz)
{
	int fd = open_sw_event(cpu, PERF_COUNT_SW_CPU_CLOCK, rate_hz, 0);

	if (fd < 0) {
		if (errno != ENODEV)
			log_error("sampler: perf_event_open(cpu-clock, cpu %d) failed: %s%s", cpu,
				  strerror(errno),
				  errno == EACCES || errno == EPERM
					  ? " (needs root or CAP_PERFMON; check kernel.perf_event_paranoid)"
					  : "");
		return -errno;
	}
	s->perf_fds[cpu] = fd;
	s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.on_cpu_sample, fd);
	if (!s->links[cpu]) {
		log_error("sampler: attaching to cpu %d failed: %s", cpu, strerror(errno));
		close(fd);
		s->perf_fds[cpu] = -1;
		return -errno ? -errno : -EINVAL;
	}
	watch_throttle(s, cpu, fd);
	attach_memory(s, cpu);
	s->nsampled++;
	return 0;
}

static int attach_cpus(struct sampler *s, uint32_t rate_hz)
{
	bool *online = online_cpus(s->npossible);
	int cpu, err = 0;

	if (!online)
		return -ENOMEM;
	for (cpu = 0; cpu < s->npossible && (!err || err == -ENODEV); cpu++)
		err = online[cpu] ? attach_cpu(s, cpu, rate_hz) : 0;
	if (!err || err == -ENODEV)
		err = s->nsampled ? 0 : -ENODEV;
	free(online);
	return err;
}

int sampler_attach_new_cpus(struct sampler *s)
{
	bool *online = online_cpus(s->npossible);
	int cpu, n = 0;

	if (!online)
		return -ENOMEM;
	for (cpu = 0; cpu < s->npossible; cpu++)
		if (online[cpu] && !s->links[cpu] && attach_cpu(s, cpu, s->rate_hz) == 0)
			n++;
	free(online);
	if (n)
		log_info("sampler: %d CPU(s) came online, sampled from now on", n);
	return n;
}

static int fill_pid_filter(struct sampler *s, const struct sampler_opts *o)
{
	__u8 one = 1;
	size_t i;

	for (i = 0; i < o->npids; i++) {
		__u32 pid = o->pids[i];

		if (bpf_map__update_elem(s->skel->maps.pid_filter, &pid, sizeof(pid), &one,
					 sizeof(one), BPF_ANY))
			return -errno;
	}
	return 0;
}

static struct unwinder_maps unwind_maps(const struct sampler *s)
{
	struct unwinder_maps m = {
		.rows = s->skel->maps.unwind_rows,
		.mappings = s->skel->maps.unwind_mappings,
		.procs = s->skel->maps.unwind_procs,
		.counters = s->skel->maps.unwind_counters,
		.rule_cache = s->skel->maps.unwind_rule_cache,
		.epoch = s->skel->data ? &s->skel->data->unwind_epoch : NULL,
	};

	return m;
}


/* Slots of stacks_known (stackhash.bpf.h): a power of two, at least 2^16
 * (its tags leave out the ID's low 16 bits); 2^18 words (2 MiB) unless
 * asked otherwise, as many stacks as a steady state has and then some. */
static uint32_t sampler_known_slots(uint32_t asked)
{
	uint32_t n = 1u << 16;

	if (!asked)
		return 1u << 18;
	while (n < asked && n < (1u << 22))
		n <<= 1;
	return n;
}

static uint32_t pow2_at_least(uint64_t n, uint32_t lo, uint32_t hi)
{
	uint32_t r = lo;

	while (r < n && r < hi)
		r <<= 1;
	return r;
}

/* The sample ring, unless --ringbuf-size says: two seconds of this
 * machine's samples at 256 bytes each (an 80-byte sample and its share
 * of new stacks' records), so ingest may fall behind that long before a
 * sample is dropped; 1 MiB at least (a start-up's burst of new stacks),
 * 64 MiB at most.  Off-CPU and memory events come as fast as the
 * workload blocks or faults, not at the clock: with them on, 4 MiB at
 * least.  2 CPUs at 99 Hz: 1 MiB; 96 at 99 Hz: 8 MiB. */
static uint32_t sampler_ring_bytes(const struct sampler_opts *o, int ncpus)
{
	uint64_t hz = o->rate_hz ? o->rate_hz : 99;
	uint32_t lo = o->offcpu || o->memory || o->mmap ? 4u << 20 : 1u << 20;

	if (o->ringbuf_bytes)
		return o->ringbuf_bytes;
	return pow2_at_least((uint64_t)ncpus * hz * 2 * 256, lo, 64u << 20);
}

/* The lifecycle ring (sample.bpf.c): exec, fork and exit come at the
 * rate processes start, which grows with the CPUs that start them; 32
 * KiB (about 580 events) per CPU, 256 KiB (an exec storm of 400
 * processes a second for 3 s on 2 CPUs) to 4 MiB.  A full ring loses
 * nothing for good: the lost count starts a /proc sweep. */
static uint32_t sampler_proc_ring_bytes(int ncpus)
{
	return pow2_at_least((uint64_t)ncpus * (32u << 10), 256u << 10, 4u << 20);
}

/* --memory on huge pages: on_huge_page (memory.bpf.h) counts the pages a
 * THP fault maps past its first, told by the GFP bits this kernel gives
 * such a page, and sends them in samples of the faults' size. */
static void configure_huge_pages(struct sampler *s, bool on)
{
	struct btf *btf = on ? btf__load_vmlinux_btf() : NULL;
	struct gfpbits g;

	bpf_program__set_autoload(s->skel->progs.on_huge_page, on);
	if (!on)
		return;
	if (libbpf_get_error(btf))
		btf = NULL;
	gfpbits_find(btf, &g);
	btf__free(btf);
	s->skel->rodata->huge_gfp_mask = gfpbits_huge_mask(&g);
	s->skel->rodata->huge_sample_bytes = s->memory_pages * s->skel->rodata->page_size;
}

static int configure(struct sampler *s, const struct sampler_opts *o)
{
	struct unwinder_maps um = unwind_maps(s);

	uint32_t rb = sampler_ring_bytes(o, s->npossible);
	uint32_t known = sampler_known_slots(o->stack_map_entries);
	long page = sysconf(_SC_PAGESIZE);

	if (o->npids > PROFD_MAX_PID_FILTER) {
		log_error("sampler: at most %d --pid values", PROFD_MAX_PID_FILTER);
		return -E2BIG;
	}
	/* A ring is a power of two of at least a page: a smaller --ringbuf-size
	 * grows to one page of a 16 or 64 KiB kernel. */
	if (page > 0 && rb < (uint64_t)page)
		rb = (uint32_t)page;
	s->skel->rodata->page_size = page > 0 ? (uint64_t)page : 4096;
	s->skel->rodata->filter_by_pid = o->npids > 0;
	s->skel->rodata->offcpu_enabled = o->offcpu;
	/* As the kernel numbers it where profd runs in the host's pid
	 * namespace (in another one, profd's threads are traced too). */
	s->skel->rodata->offcpu_self_tgid = (uint32_t)getpid();
	if (o->offcpu_min_ns)
		s->skel->rodata->offcpu_min_ns = o->offcpu_min_ns;
	bpf_program__set_autoload(s->skel->progs.on_sched_switch, o->offcpu);
	s->memory_pages =
	    o->memory
		? (o->memory_sample_bytes ? o->memory_sample_bytes : 512 << 10) /
		      s->skel->rodata->page_size
		: 0;
	if (o->memory && !s->memory_pages)
		s->memory_pages = 1;
	bpf_program__set_autoload(s->skel->progs.on_libc_mmap, o->mmap);
	bpf_program__set_autoload(s->skel->progs.on_page_faults, o->memory);
	configure_huge_pages(s, o->memory && !o->memory_no_huge);
	bpf_program__set_autoload(s->skel->progs.on_py_eval, o->python_uprobe);
	/* Woken per batch, a quarter of the ring at most (stackhash.bpf.h). */
	s->skel->rodata->wakeup_bytes = rb / 4 < 64 * 1024 ? rb / 4 : 64 * 1024;
	s->uopts.table_bytes = o->unwind_table_bytes;
	if (unwinder_size_maps(&um, &s->uopts))
		return -EINVAL;
	if (bpf_map__set_max_entries(s->skel->maps.events, rb) ||
	    bpf_map__set_max_entries(s->skel->maps.proc_events,
				     sampler_proc_ring_bytes(s->npossible)) ||
	    bpf_map__set_max_entries(s->skel->maps.stacks_known, known))
		return -EINVAL;
	s->skel->rodata->stacks_known_mask = known - 1;
	/* Rings, the sent-stack table (a word per slot) and the per-CPU
	 * scratch stacks. */
	s->map_bytes = rb + bpf_map__max_entries(s->skel->maps.proc_events) +
		       (uint64_t)known * 8 +
		       (o->offcpu ? 6ull : 3ull) * sizeof(struct profd_stack) * (uint64_t)s->npossible +
		       /* memory_scratch and mmap_scratch: created either way */
		       4ull * sizeof(struct profd_stack) * (uint64_t)s->npossible;
	return 0;
}

static int start_unwinder(struct sampler *s)
{
	struct unwinder_maps um = unwind_maps(s);

	/* Before any walk: return addresses signed by pointer authentication
	 * are stripped to a user address (arch.h). */
	if (s->skel->data)
		s->skel->data->unwind_code_mask = arch_code_addr_mask();
	s->unwinder = unwinder_new(&s->uopts, &um);
	if (!s->unwinder) {
		log_error("sampler: native unwinder setup failed: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static const char *load_hint(int err)
{
	if (err == -EPERM || err == -EACCES)
		return " (profd needs root, or CAP_BPF + CAP_PERFMON + CAP_SYS_RESOURCE)";
	return "";
}

/* The optional programs, by the feature each serves.  GPU programs
 * (on_gpu_*, on_cuda_*) degrade in gpu.c first. */
static const struct {
	const char *prog, *feature;
	size_t off; /* the bool in struct sampler_opts that asks for it */
} optional_progs[] = {
	{ "on_sched_switch", "off-CPU tracing (--off-cpu)", offsetof(struct sampler_opts, offcpu) },
	{ "on_page_faults", "memory profiling (--memory)", offsetof(struct sampler_opts, memory) },
	{ "on_libc_mmap", "mapped-memory tracing (--mmap)", offsetof(struct sampler_opts, mmap) },
	{ "on_py_eval", "the eval-loop uprobe (--python-uprobe)",
	  offsetof(struct sampler_opts, python_uprobe) },
};

static void note_refusal(struct sampler *s, const char *feature, const struct bpfload_culprit *c)
{
	struct sampler_refusal *r;

	log_warn("sampler: %s is off: this kernel refused its program %s (%s)", feature, c->prog,
		 c->why[0] ? c->why : "no reason given");
	if (s->nrefused == SAMPLER_MAX_REFUSALS)
		return;
	r = &s->refused[s->nrefused++];
	r->feature = feature;
	snprintf(r->why, sizeof(r->why), "%s refused: %s", c->prog, c->why);
}

/* Ask less after a refused load: turn off the optional feature whose
 * program the kernel refused.  false when it was none of them. */
static bool drop_refused(struct sampler *s, struct sampler_opts *o, const struct bpfload_culprit *c)
{
	size_t i;

	if (!c->prog[0])
		return false; /* a map: every feature's maps are created */
	if (!strcmp(c->prog, "on_huge_page") && o->memory && !o->memory_no_huge) {
		o->memory_no_huge = true;
		note_refusal(s, "memory profiling of huge pages (THP faults weigh one page)", c);
		return true;
	}
	for (i = 0; i < sizeof(optional_progs) / sizeof(optional_progs[0]); i++) {
		bool *on = (bool *)((char *)o + optional_progs[i].off);

		if (strcmp(c->prog, optional_progs[i].prog) || !*on)
			continue;
		*on = false;
		note_refusal(s, optional_progs[i].feature, c);
		return true;
	}
	if (strncmp(c->prog, "on_gpu_", 7) && strncmp(c->prog, "on_cuda_", 8))
		return false;
	if (!gpu_bpf_refused(s->gpu, c->prog)) {
		note_refusal(s, "GPU tracing (--gpu)", c);
		s->gpu = NULL;
	}
	return true;
}

/* Open, configure and load the variant of the object this kernel takes,
 * without what it refuses: an optional feature the kernel cannot run
 * never stops CPU sampling.  The legacy object is the last resort for a
 * core program the modern one could not load. */
static int load_programs(struct sampler *s, const struct sampler_opts *asked)
{
	enum bpfload_variant v = asked->bpf_build == BPFLOAD_AUTO
					 ? bpfload_pick()
					 : (enum bpfload_variant)asked->bpf_build;

	/* The modern build keeps thread states in task storage, which
	 * userspace reads through a pidfd: a thread's own pidfd came with
	 * 6.9, so on older kernels `stacks` could not see any thread but a
	 * process's first.  The legacy build keys them by tid. */
	if (asked->bpf_build == BPFLOAD_AUTO && v == BPFLOAD_MODERN && asked->offcpu &&
	    !bpfload_thread_pidfd()) {
		log_info("sampler: off-CPU on a kernel without thread pidfds (6.9+): the legacy build");
		v = BPFLOAD_LEGACY;
	}
	struct bpfload_culprit c;
	int err = -EINVAL, tries;

	s->loaded = *asked;
	for (tries = 0; tries < 16; tries++) {
		sample_bpf__destroy(s->skel);
		s->skel = bpfload_open(v);
		if (!s->skel) {
			log_error("sampler: opening BPF object failed: %s", strerror(errno));
			return -errno;
		}
		err = configure(s, &s->loaded);
		if (err)
			return err;
		gpu_bpf_prepare(s->gpu, s->skel);
		bpfload_watch_begin(&c);
		err = sample_bpf__load(s->skel);
		bpfload_watch_end();
		if (!err) {
			s->variant = v;
			s->python_uprobe = s->loaded.python_uprobe;
			log_info("sampler: BPF programs loaded (%s)", bpfload_variant_name(v));
			return 0;
		}
		if (drop_refused(s, &s->loaded, &c))
			continue;
		if (v == BPFLOAD_LEGACY || err == -EPERM || err == -EACCES)
			break;
		log_warn("sampler: this kernel refused %s %s (%s): trying the %s build",
			 c.prog[0] ? "program" : "map", c.prog[0] ? c.prog : c.map, c.why,
			 bpfload_variant_name(BPFLOAD_LEGACY));
		v = BPFLOAD_LEGACY;
	}
	log_error("sampler: loading BPF programs failed: %s%s", strerror(-err), load_hint(err));
	if (c.prog[0] || c.map[0])
		log_error("sampler: the kernel refused %s %s: %s", c.prog[0] ? "program" : "map",
			  c.prog[0] ? c.prog : c.map, c.why);
	return err;
}

struct sampler *sampler_open(const struct sampler_opts *o, sampler_event_fn fn, void *ctx)
{
	struct sampler *s = calloc(1, sizeof(*s));
	int err = -ENOMEM, i;

	if (!s)
		goto fail;
	s->fn = fn;
	s->ctx = ctx;
	s->python_uprobe = o->python_uprobe;
	s->gpu = o->gpu;
	s->npossible = libbpf_num_possible_cpus();
	if (s->npossible <= 0) {
		err = s->npossible ? s->npossible : -ENODEV;
		goto fail;
	}
	s->links = calloc((size_t)s->npossible, sizeof(*s->links));
	s->perf_fds = malloc((size_t)s->npossible * sizeof(int));
	s->throttle = calloc((size_t)s->npossible, sizeof(*s->throttle));
	s->mem_links = calloc((size_t)s->npossible, sizeof(*s->mem_links));
	s->mem_fds = malloc((size_t)s->npossible * sizeof(int));
	if (!s->links || !s->perf_fds || !s->throttle || !s->mem_links || !s->mem_fds)
		goto fail;
	s->ncpus = s->npossible;
	for (i = 0; i < s->npossible; i++)
		s->perf_fds[i] = s->mem_fds[i] = -1;

	err = load_programs(s, o);
	if (err)
		goto fail;
	err = start_unwinder(s);
	if (err)
		goto fail;
	err = fill_pid_filter(s, o);
	if (err) {
		log_error("sampler: filling the pid filter failed: %s", strerror(-err));
		goto fail;
	}
	s->rate_hz = o->rate_hz ? o->rate_hz : 99;
	/* Lifecycle events first: each consume pass sees an exec or exit
	 * before the samples that follow it. */
	s->rb_proc = ring_buffer__new(bpf_map__fd(s->skel->maps.proc_events), on_proc_record, s,
				      NULL);
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
	if (!s->rb || !s->rb_proc) {
		err = -errno;
		log_error("sampler: ring buffer setup failed: %s", strerror(errno));
		goto fail;
	}
	/* GPU events have a ring of their own; trouble there only turns
	 * GPU tracing off. */
	if (gpu_enabled(s->gpu) &&
	    (gpu_bpf_loaded(s->gpu, s->skel) ||
	     ring_buffer__add(s->rb, bpf_map__fd(s->skel->maps.gpu_events), on_record, s)))
		s->gpu = NULL;
	if (s->loaded.mmap && !(s->mmap = mmap_probe_new(s->skel->progs.on_libc_mmap, "/proc"))) {
		err = -ENOMEM;
		goto fail;
	}
	return s;
fail:
	sampler_close(s);
	errno = -err;
	return NULL;
}

int sampler_start(struct sampler *s)
{
	int err;

	/* Tracepoints first: an exec must not slip between the two. */
	err = sample_bpf__attach(s->skel);
	if (err) {
		log_error("sampler: attaching exec/exit tracepoints failed: %s", strerror(-err));
		return err;
	}
	err = attach_cpus(s, s->rate_hz);
	if (!err)
		gpu_attach(s->gpu); /* GPU tracing is optional: it logs why not */
	if (!err && s->mmap)
		err = mmap_probe_scan_all(s->mmap);
	return err;
}

void sampler_close(struct sampler *s)
{
	int i;

	if (!s)
		return;
	ring_buffer__free(s->rb);
	ring_buffer__free(s->rb_proc);
	mmap_probe_free(s->mmap);
	for (i = 0; i < (int)s->nuprobes; i++)
		bpf_link__destroy(s->uprobes[i]);
	free(s->uprobes);
	hashmap_free(&s->uprobed);
	unwinder_free(s->unwinder);
	for (i = 0; i < s->ncpus; i++) {
		bpf_link__destroy(s->links[i]);
		throttle_ring_unmap(&s->throttle[i]);
		if (s->perf_fds[i] >= 0)
			close(s->perf_fds[i]);
		bpf_link__destroy(s->mem_links[i]);
		if (s->mem_fds[i] >= 0)
			close(s->mem_fds[i]);
	}
	free(s->mem_links);
	free(s->mem_fds);
	free(s->throttle);
	free(s->links);
	free(s->perf_fds);
	sample_bpf__destroy(s->skel);
	free(s);
}

int sampler_fd(const struct sampler *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

int sampler_proc_fd(const struct sampler *s)
{
	return ring_buffer__epoll_fd(s->rb_proc);
}

/* Throttle records since the last pass, added to s->throttled with
 * atomic stores: stats reads them from another thread. */
static void read_throttle(struct sampler *s)
{
	struct throttle_counts c = { 0 };
	int cpu;

	for (cpu = 0; cpu < s->ncpus; cpu++)
		throttle_ring_read(&s->throttle[cpu], &c);
	if (c.episodes)
		__atomic_add_fetch(&s->throttled.episodes, c.episodes, __ATOMIC_RELAXED);
	if (c.throttled_ns)
		__atomic_add_fetch(&s->throttled.throttled_ns, c.throttled_ns, __ATOMIC_RELAXED);
	if (c.lost)
		__atomic_add_fetch(&s->throttled.lost, c.lost, __ATOMIC_RELAXED);
}

int sampler_consume(struct sampler *s)
{
	int n = ring_buffer__consume(s->rb_proc), m;

	m = ring_buffer__consume(s->rb);
	read_throttle(s);
	redraw_memory_periods(s);
	return n < 0 ? n : m < 0 ? m : n + m;
}

void sampler_throttle_counts(const struct sampler *s, struct throttle_counts *out)
{
	out->episodes = __atomic_load_n(&s->throttled.episodes, __ATOMIC_RELAXED);
	out->throttled_ns = __atomic_load_n(&s->throttled.throttled_ns, __ATOMIC_RELAXED);
	out->lost = __atomic_load_n(&s->throttled.lost, __ATOMIC_RELAXED);
	out->unwatched = __atomic_load_n(&s->throttled.unwatched, __ATOMIC_RELAXED);
}

void sampler_set_stack_gen(struct sampler *s, uint32_t gen)
{
	/* A plain store into the mmap'ed .data: the BPF programs read it
	 * with a volatile load. */
	__atomic_store_n(&s->skel->data->stack_gen, gen, __ATOMIC_RELEASE);
}

int sampler_mmap_scan(struct sampler *s, uint32_t pid, const struct procmaps *m)
{
	return s ? mmap_probe_scan_maps(s->mmap, pid, m) : 0;
}

void sampler_mmap_counts(const struct sampler *s, uint64_t *files, uint64_t *uprobes)
{
	mmap_probe_counts(s ? s->mmap : NULL, files, uprobes);
}

int sampler_counters(struct sampler *s, uint64_t out[PROFD_CNT_MAX])
{
	/* One value (struct profd_counters) holds them all (common.bpf.h). */
	return bpfcount_sum_value(bpf_map__fd(s->skel->maps.counters), PROFD_CNT_MAX, out);
}

uint64_t sampler_proc_events_lost(const struct sampler *s)
{
	return s->skel->bss ? __atomic_load_n(&s->skel->bss->proc_events_lost, __ATOMIC_RELAXED)
			    : 0;
}

int sampler_ncpus(const struct sampler *s)
{
	return s->nsampled;
}

uint64_t sampler_map_bytes(const struct sampler *s)
{
	return s->map_bytes;
}

uint32_t sampler_ring_bytes_of(const struct sampler *s, bool lifecycle)
{
	return bpf_map__max_entries(lifecycle ? s->skel->maps.proc_events : s->skel->maps.events);
}

/* The eval loop is reached from C: with --python-uprobe, a uprobe on it
 * records each thread's PyThreadState on entry.  Attached once per file
 * (uprobes are per inode and fire in every process mapping it). */
static int attach_eval_uprobe(struct sampler *s, uint32_t pid, const char *module)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "_PyEval_EvalFrameDefault");
	struct bpf_link *link, **links;
	char fdpath[64];
	struct stat st;
	uint64_t key;
	int fd, err;

	/* The file pid maps, checked by procfile_open_mapped, and the probe
	 * goes on that open file: swapping the path afterwards cannot move
	 * it into another binary. */
	fd = procfile_open_mapped_path("/proc", (int)pid, module);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		close(fd);
		return -EINVAL;
	}
	key = hash64_mix((uint64_t)st.st_dev << 32 ^ st.st_ino);
	if (hashmap_get(&s->uprobed, key, NULL)) {
		close(fd);
		return 0;
	}
	procfile_fd_path(fd, fdpath, sizeof(fdpath));
	link = bpf_program__attach_uprobe_opts(s->skel->progs.on_py_eval, -1, fdpath, 0, &uo);
	err = link ? 0 : -errno;
	close(fd); /* the uprobe holds the inode */
	if (!link) {
		log_warn("sampler: eval-loop uprobe on %s failed: %s", module, strerror(-err));
		return err;
	}
	links = realloc(s->uprobes, (s->nuprobes + 1) * sizeof(*links));
	if (links)
		s->uprobes = links;
	if (!links || hashmap_put(&s->uprobed, key, 1)) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	s->uprobes[s->nuprobes++] = link;
	return 0;
}

int sampler_py_add(struct sampler *s, uint32_t pid, const struct profd_py_proc *pp,
		   const char *module)
{
	if (bpf_map__update_elem(s->skel->maps.py_procs, &pid, sizeof(pid), pp, sizeof(*pp),
				 BPF_ANY))
		return -errno;
	if (s->python_uprobe && module && *module)
		attach_eval_uprobe(s, pid, module);
	return 0;
}

void sampler_py_del(struct sampler *s, uint32_t pid)
{
	bpf_map__delete_elem(s->skel->maps.py_procs, &pid, sizeof(pid), 0);
}

int sampler_py_uprobes(const struct sampler *s)
{
	return (int)s->nuprobes;
}

const struct sampler_opts *sampler_loaded(const struct sampler *s)
{
	return &s->loaded;
}

const char *sampler_variant(const struct sampler *s)
{
	return bpfload_variant_name(s->variant);
}

size_t sampler_refusals(const struct sampler *s, const struct sampler_refusal **out)
{
	*out = s->refused;
	return s->nrefused;
}

struct unwinder *sampler_unwinder(const struct sampler *s)
{
	return s->unwinder;
}


int sampler_thread_state(const struct sampler *s, uint32_t tid, struct profd_thread_state *out)
{
	int fd, err = 0;

	/* The legacy object keys states by tid (bpf/offcpu.bpf.h). */
	if (s->variant == BPFLOAD_LEGACY)
		return bpf_map__lookup_elem(s->skel->maps.thread_states, &tid, sizeof(tid), out,
					    sizeof(*out), 0)
			       ? -errno
			       : 0;
	fd = (int)syscall(SYS_pidfd_open, (pid_t)tid, PIDFD_THREAD);
	if (fd < 0 && errno == EINVAL) /* before 6.9: leaders only (load_programs) */
		fd = (int)syscall(SYS_pidfd_open, (pid_t)tid, 0);
	if (fd < 0)
		return -errno;
	if (bpf_map__lookup_elem(s->skel->maps.thread_states, &fd, sizeof(fd), out, sizeof(*out),
				 0))
		err = -errno;
	close(fd);
	return err;
}
