/* control_stats.c: the figures `profctl stats` answers with, collected
 * under the state lock (all of one moment) or, when ingest holds it past
 * a short wait, from the snapshot a tick published; and that snapshot,
 * taken every 10 s, and every tick while requests have needed it. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "buf.h"
#include "daemon.h"
#include "control.h"
#include "memread.h"
#include "statelock.h"
#include "worker.h"
#include "gpu.h"
#include "protocol.h"
#include "throttle.h"
#include "unwinder.h"

/* The daemon's own RSS, read every tick: the file stays open (a pread
 * from 0 reads it afresh), an open per tick being a good part of an idle
 * daemon's CPU. */
static uint64_t rss_bytes(void)
{
	static _Atomic int shared_fd = -1;
	int fd = atomic_load(&shared_fd), none = -1;
	unsigned long size, resident;
	char buf[128];
	ssize_t len;

	if (fd < 0) { /* the first call; two at once keep one descriptor */
		if ((fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)) < 0)
			return 0;
		if (!atomic_compare_exchange_strong(&shared_fd, &none, fd)) {
			close(fd);
			fd = none;
		}
	}
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	return sscanf(buf, "%lu %lu", &size, &resident) == 2
		       ? (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE)
		       : 0;
}

/* The kernel's throttling of the sampling events: time when a CPU was
 * not sampled at all, so every rate and split read from the profile is
 * off by that much. */
static void add_throttle_stats(struct daemon *d, struct proto_stats *s)
{
	struct throttle_counts t;

	sampler_throttle_counts(d->sampler, &t);
	proto_stats_add(s, "perf_throttle_episodes", t.episodes);
	proto_stats_add(s, "perf_throttled_ns", t.throttled_ns);
	proto_stats_add(s, "perf_samples_missed_throttled",
			t.throttled_ns / 1000 * (uint64_t)d->cfg.rate_hz / 1000000);
	proto_stats_add(s, "perf_throttle_records_lost", t.lost);
	proto_stats_add(s, "perf_throttle_cpus_unwatched", t.unwatched);
}

static void add_bpf_stats(struct daemon *d, struct proto_stats *s)
{
	uint64_t cnt[PROFD_CNT_MAX];
	int i;

	if (sampler_counters(d->sampler, cnt))
		return;
	for (i = 0; i < PROFD_CNT_MAX; i++)
		proto_stats_add(s, sampler_counter_name(i), cnt[i]);
	proto_stats_add(s, "bpf_map_bytes", sampler_map_bytes(d->sampler));
	proto_stats_add(s, "ring_bytes", sampler_ring_bytes_of(d->sampler, false));
	proto_stats_add(s, "lifecycle_ring_bytes", sampler_ring_bytes_of(d->sampler, true));
	proto_stats_add(s, "cpus_sampled", (uint64_t)sampler_ncpus(d->sampler));
	add_throttle_stats(d, s);
}

/* ---- counters: one table, each row a name and where its value is ----
 *
 * Every plain counter `stats` reports is a row here, read from the
 * struct its stage fills (one copy each per collection, taken under the
 * state lock).  Figures computed at collection time follow in code. */
enum stat_source {
	SRC_INGEST,  /* struct ingest_counters */
	SRC_WORKER,  /* struct worker_stats */
	SRC_UNWIND,  /* struct unwinder_stats, as the worker last saw them */
	SRC_SYMBOLS, /* struct symbolizer_counters */
	SRC_PROCS,   /* struct proctable */
	SRC_AGG,     /* struct aggregate */
	SRC_DAEMON,  /* struct daemon: the threads' own figures */
	SRC_HISTORY, /* struct history_stats, as of the last flush or prune */
	SRC_FLUSH,   /* struct daemon's flush figures, with SRC_HISTORY only */
	SRC_GPU,     /* struct gpu_stats */
	SRC_PUSH,    /* struct push_stats, with --push only */
	SRC_MAX
};

struct stat_row {
	const char *name;
	uint32_t source; /* enum stat_source */
	uint32_t size;	 /* of the field: 4 or 8 */
	size_t offset;
};

/* The field's size, which must be 4 or 8 (row_value reads those): any
 * other fails to compile (an array of size -1). */
#define FIELD_SIZE(type, field)                 \
	(sizeof(((type *)0)->field) +            \
	 0 * sizeof(char[sizeof(((type *)0)->field) == 4 || sizeof(((type *)0)->field) == 8 ? 1 : -1]))
#define ROW(src, type, field, name) { name, src, FIELD_SIZE(type, field), offsetof(type, field) }
#define INGEST(f, n) ROW(SRC_INGEST, struct ingest_counters, f, n)
#define WORKER(f, n) ROW(SRC_WORKER, struct worker_stats, f, n)
#define UNWIND(f, n) ROW(SRC_UNWIND, struct unwinder_stats, f, n)
#define SYMBOLS(f, n) ROW(SRC_SYMBOLS, struct symbolizer_counters, f, n)
#define PROCS(f, n) ROW(SRC_PROCS, struct proctable, f, n)
#define AGG(f, n) ROW(SRC_AGG, struct aggregate, f, n)
#define DAEMON(f, n) ROW(SRC_DAEMON, struct daemon, f, n)
#define HISTORY(f, n) ROW(SRC_HISTORY, struct history_stats, f, n)
#define FLUSH(f, n) ROW(SRC_FLUSH, struct daemon, f, n)
#define GPU(f, n) ROW(SRC_GPU, struct gpu_stats, f, n)
#define PUSH(f, n) ROW(SRC_PUSH, struct push_stats, f, n)

static const struct stat_row stat_rows[] = {
	HISTORY(file_bytes, "history_file_bytes"),
	HISTORY(samples, "history_samples"),
	HISTORY(sample_rows, "history_rows"),
	HISTORY(stacks, "history_stacks"),
	HISTORY(procs, "history_processes"),
	FLUSH(flushes, "history_flushes"),
	FLUSH(flush_errors, "history_flush_errors"),
	FLUSH(flush_rows, "history_rows_written"),
	FLUSH(flush_refused, "history_rows_refused"),
	HISTORY(stack_memo_hits, "history_stack_memo_hits"),
	FLUSH(flush_ns_last, "history_last_flush_ns"),
	HISTORY(rows_pruned, "history_rows_pruned"),
	HISTORY(bytes_pruned, "history_bytes_pruned"),
	HISTORY(errors, "history_errors"),
	HISTORY(resets, "history_files_reset"),

	INGEST(samples, "samples_received"),
	INGEST(aggregated, "samples_aggregated"),
	INGEST(dropped_nomem, "samples_dropped_nomem"),
	INGEST(dropped_noproc, "samples_dropped_proc_table_full"),
	INGEST(stack_lost, "stacks_lost"),
	INGEST(memory_events, "memory_events_received"),
	INGEST(memory_bytes, "memory_bytes_counted"),
	INGEST(mmap_events, "mmap_events_received"),
	INGEST(mmap_bytes_mapped, "mmap_bytes_mapped"),
	INGEST(mmap_bytes_unmapped, "mmap_bytes_unmapped"),
	INGEST(stack_records, "stack_records_received"),
	INGEST(stack_gens, "stack_generations_dropped"),
	INGEST(deferred, "samples_deferred"),
	INGEST(memo_hits, "samples_counted_by_memo"),
	INGEST(symbolized, "samples_symbolized"),
	INGEST(proc_exits_repaired, "proc_exits_repaired"),
	INGEST(bad_events, "bad_events"),
	INGEST(proc_execs, "proc_execs"),
	INGEST(proc_exits, "proc_exits"),
	INGEST(proc_forks, "proc_forks"),
	INGEST(forks_inherited, "proc_forks_inherited"),
	INGEST(workloads, "proc_workloads_read"),
	INGEST(maps_reloads, "maps_reloads"),
	INGEST(user_frames, "user_frames_symbolized"),
	INGEST(user_frames_unknown, "user_frames_unknown"),
	INGEST(user_frames_by_file, "user_frames_by_file"),
	INGEST(anon_frames_named, "jit_frames_named_late"),
	INGEST(py_processes, "python_processes"),
	INGEST(py_samples, "python_samples"),
	INGEST(py_frames_unreadable, "python_frames_unreadable"),
	INGEST(py_frames_named_after_exit, "python_frames_named_after_exit"),
	INGEST(py_names_asked, "python_names_asked"),
	INGEST(offcpu_events, "offcpu_events_received"),
	INGEST(offcpu_aggregated, "offcpu_events_aggregated"),
	INGEST(offcpu_gil_waits, "offcpu_gil_waits"),

	WORKER(queued, "worker_jobs_queued"),
	WORKER(done, "worker_jobs_done"),
	WORKER(dropped, "worker_jobs_dropped"),
	WORKER(waiting, "worker_jobs_waiting"),
	WORKER(tables_yields, "unwind_tables_yields"),
	WORKER(debuginfod_fetched, "debuginfod_fetched"),
	WORKER(debuginfod_not_found, "debuginfod_not_found"),
	WORKER(debuginfod_failed, "debuginfod_failed"),
	WORKER(busy_ns, "worker_busy_ns"),
	UNWIND(table_bytes_used, "unwind_table_bytes_used"),
	UNWIND(table_bytes_limit, "unwind_table_bytes_limit"),
	UNWIND(table_bytes_allocated, "unwind_table_bytes_allocated"),
	UNWIND(mapping_bytes_allocated, "unwind_mapping_bytes_allocated"),
	UNWIND(chunks_made, "unwind_chunks_made"),
	UNWIND(expired, "unwind_tables_expired"),
	UNWIND(procs, "unwind_processes"),
	UNWIND(files, "unwind_files"),
	UNWIND(files_loaded, "unwind_files_with_table"),
	UNWIND(files_no_cfi, "unwind_files_without_cfi"),
	UNWIND(files_failed, "unwind_files_failed"),
	UNWIND(rows_loaded, "unwind_rows"),
	UNWIND(tables_built, "unwind_tables_built"),
	UNWIND(build_ns_total, "unwind_build_ns_total"),
	UNWIND(build_ns_max, "unwind_build_ns_max"),
	UNWIND(evictions, "unwind_tables_evicted"),
	UNWIND(refusals, "unwind_tables_refused"),
	UNWIND(given_way, "unwind_tables_given_way"),
	INGEST(unwind_refreshes, "unwind_refreshes"),
	INGEST(ustack_fp, "user_stacks_by_frame_pointers"),

	PROCS(n, "processes_tracked"),
	PROCS(evicted, "processes_evicted"),
	PROCS(expired, "processes_expired"),
	AGG(stacks, "stacks_stored"),
	AGG(cells, "cells_stored"),
	AGG(stacks_overflow, "samples_in_stack_overflow"),
	AGG(timeline.events, "timeline_events"),
	AGG(timeline.evicted, "timeline_events_evicted"),
	AGG(timeline.lost, "timeline_events_lost"),
	AGG(timeline.reclaimed, "timeline_events_reclaimed"),
	AGG(timeline.bytes, "timeline_bytes"),
	AGG(timeline.max_bytes, "timeline_bytes_max"),
	AGG(timeline.per_proc_max, "timeline_events_per_process_max"),
	SYMBOLS(files_cached, "symbol_files_cached"),
	SYMBOLS(evictions, "symbol_files_evicted"),
	SYMBOLS(files_failed, "symbol_file_failures"),
	SYMBOLS(kallsyms_symbols, "kernel_symbols"),
	SYMBOLS(perfmap_loads, "perf_maps_loaded"),
	SYMBOLS(perfmap_refused, "perf_maps_refused"),
	SYMBOLS(files_too_big, "files_too_big"),
	SYMBOLS(names_left_mangled, "names_left_mangled"),
	DAEMON(lock_wait_ns_max, "state_lock_wait_ns_max"),
	DAEMON(event_ns_max, "ingest_event_ns_max"),
	DAEMON(persist_ns_max, "ingest_history_tick_ns_max"),
	DAEMON(tick_ns_max, "ingest_tick_ns_max"),
	DAEMON(publish_ns_max, "ingest_publish_ns_max"),
	DAEMON(cpu_ns[DAEMON_CPU_RINGS], "ingest_cpu_ns_rings"),
	DAEMON(cpu_ns[DAEMON_CPU_ANSWERS], "ingest_cpu_ns_worker_answers"),
	DAEMON(cpu_ns[DAEMON_CPU_HISTORY], "ingest_cpu_ns_history"),
	DAEMON(cpu_ns[DAEMON_CPU_PUSH], "ingest_cpu_ns_push"),
	DAEMON(cpu_ns[DAEMON_CPU_EXPIRE], "ingest_cpu_ns_expire"),
	DAEMON(cpu_ns[DAEMON_CPU_SWEEP], "ingest_cpu_ns_sweep_rss"),
	DAEMON(cpu_ns[DAEMON_CPU_TICK], "ingest_cpu_ns_tick_other"),

	GPU(devices, "gpu_devices_watched"),
	GPU(events, "gpu_events_received"),
	GPU(aggregated, "gpu_events_aggregated"),
	GPU(dropped_nomem, "gpu_events_dropped_nomem"),
	GPU(bad_events, "gpu_bad_events"),
	GPU(libmaps, "cuda_library_reports"),
	GPU(uprobe_files, "cuda_uprobe_files"),
	GPU(uprobes, "cuda_uprobes"),
	GPU(uprobe_failures, "cuda_uprobe_failures"),
	GPU(comm_files, "comm_uprobe_files"),
	GPU(name_events, "cuda_kernel_handle_events"),
	GPU(kernel_handles, "cuda_kernel_handles"),
	GPU(kernel_handles_over_cap, "cuda_kernel_handles_over_cap"),
	GPU(kernel_names_from_stub, "cuda_kernel_names_from_stub"),
	GPU(kernel_names_unknown, "cuda_kernel_names_unknown"),
	GPU(libc_files, "gpu_libc_uprobe_files"),
	GPU(libc_uprobes, "gpu_libc_uprobes"),
	GPU(libc_failures, "gpu_libc_uprobe_failures"),

	PUSH(enqueued, "push_windows_enqueued"),
	PUSH(sent, "push_windows_sent"),
	PUSH(bytes_sent, "push_bytes_sent"),
	PUSH(failed_attempts, "push_failed_attempts"),
	PUSH(retried, "push_retried"),
	PUSH(dropped_queue_full, "push_dropped_queue_full"),
	PUSH(dropped_after_retries, "push_dropped_after_retries"),
	PUSH(dropped_rejected, "push_dropped_rejected"),
	PUSH(render_errors, "push_render_errors"),
	PUSH(queue_len, "push_queue_len"),
	PUSH(queue_bytes, "push_queue_bytes"),
};

/* One copy of each source, taken at once. */
struct stat_sources {
	struct worker_stats ws;
	struct unwinder_stats us;
	struct symbolizer_counters sc;
	struct gpu_stats gs;
	struct push_stats ps;
	const void *base[SRC_MAX]; /* NULL: the source is off, its rows left out */
};

static void take_sources(struct daemon *d, struct stat_sources *src)
{
	memset(src, 0, sizeof(*src));
	worker_stats(d->worker, &src->ws, &src->us);
	symbolizer_stats(d->sym, &src->sc);
	gpu_get_stats(d->gpu, &src->gs);
	src->base[SRC_INGEST] = &d->in.c;
	src->base[SRC_WORKER] = &src->ws;
	src->base[SRC_UNWIND] = &src->us;
	src->base[SRC_SYMBOLS] = &src->sc;
	src->base[SRC_PROCS] = &d->pt;
	src->base[SRC_AGG] = &d->agg;
	src->base[SRC_DAEMON] = d;
	src->base[SRC_GPU] = &src->gs;
	if (d->hist && d->hist_snap_ok) {
		src->base[SRC_HISTORY] = &d->hist_snap; /* a copy already, under lock */
		src->base[SRC_FLUSH] = d;
	}
	if (d->pusher) {
		push_stats(d->pusher, &src->ps);
		src->base[SRC_PUSH] = &src->ps;
	}
}

static uint64_t row_value(const struct stat_row *r, const void *base)
{
	const char *field = (const char *)base + r->offset;
	uint32_t v32;
	uint64_t v64;

	if (r->size == sizeof(v32)) {
		memcpy(&v32, field, sizeof(v32));
		return v32;
	}
	memcpy(&v64, field, sizeof(v64));
	return v64;
}

static void add_rows(const struct stat_sources *src, struct proto_stats *s)
{
	size_t i;

	for (i = 0; i < sizeof(stat_rows) / sizeof(stat_rows[0]); i++)
		if (src->base[stat_rows[i].source])
			proto_stats_add(s, stat_rows[i].name,
					row_value(&stat_rows[i], src->base[stat_rows[i].source]));
}

/* ---- figures computed at collection time ---- */

static void add_ingest_figures(struct daemon *d, struct proto_stats *s)
{
	uint64_t files, uprobes;

	proto_stats_add(s, "samples_pending", ingest_samples_pending(&d->in));
	proto_stats_add(s, "file_frames_cached", d->in.file_frames.entries);
	proto_stats_add(s, "file_frames_resets", d->in.file_frames.resets);
	proto_stats_add(s, "python_uprobes", (uint64_t)sampler_py_uprobes(d->sampler));
	sampler_mmap_counts(d->sampler, &files, &uprobes);
	proto_stats_add(s, "mmap_uprobe_files", files);
	proto_stats_add(s, "mmap_uprobes", uprobes);
}

static void add_unwind_figures(struct daemon *d, struct proto_stats *s)
{
	struct unwinder *u = sampler_unwinder(d->sampler);
	uint64_t cnt[PROFD_UNWIND_CNT_MAX];
	char name[64];
	int i;

	proto_stats_add(s, "unwind_tables_pending", unwinder_tables_pending(u)); /* live */
	proto_stats_add(s, "bpf_unwind_rule_cache_hits", unwinder_rule_cache_hits(u));
	if (unwinder_counters(u, cnt) == 0) {
		for (i = 0; i < PROFD_UNWIND_CNT_MAX; i++) {
			snprintf(name, sizeof(name), "bpf_%s", unwinder_counter_name(i));
			proto_stats_add(s, name, cnt[i]);
		}
	}
}

/* Which syscall hooks GPU tracing runs on (all 0: none attached), and
 * the BPF side's counters. */
static void add_gpu_figures(const struct gpu_stats *gs, struct proto_stats *s)
{
	int i;

	proto_stats_add(s, "gpu_syscall_hook_fentry", gs->hook == GPU_HOOK_FENTRY);
	proto_stats_add(s, "gpu_syscall_hook_uprobe", gs->hook == GPU_HOOK_UPROBE);
	proto_stats_add(s, "gpu_syscall_hook_tracepoint", gs->hook == GPU_HOOK_TRACEPOINT);
	for (i = 0; i < PROFD_GPU_CNT_MAX; i++)
		proto_stats_add(s, gpu_counter_name(i), gs->bpf[i]);
}

static void add_daemon_figures(struct daemon *d, struct proto_stats *s)
{
	struct rusage ru;

	proto_stats_add(s, "history_enabled", d->hist != NULL);
	proto_stats_add(s, "rate_hz", d->cfg.rate_hz);
	proto_stats_add(s, "uptime_ns", clock_mono_ns() - d->start_mono_ns);
	proto_stats_add(s, "startup_ns", d->ready_mono_ns - d->start_mono_ns);
	if (d->in.c.first_sample_mono_ns > d->start_mono_ns)
		proto_stats_add(s, "first_sample_after_ns",
				d->in.c.first_sample_mono_ns - d->start_mono_ns);
	proto_stats_add(s, "processes_live", proctable_live_count(&d->pt));
	proto_stats_add(s, "frames_interned", d->agg.dict->nframes);
	proto_stats_add(s, "rss_bytes", rss_bytes());
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		proto_stats_add(s, "cpu_user_us", (uint64_t)ru.ru_utime.tv_sec * 1000000 +
							  (uint64_t)ru.ru_utime.tv_usec);
		proto_stats_add(s, "cpu_system_us", (uint64_t)ru.ru_stime.tv_sec * 1000000 +
							    (uint64_t)ru.ru_stime.tv_usec);
	}
}

/* Every figure under the state lock: all of one moment. */
static void collect_stats(struct daemon *d, struct proto_stats *s)
{
	struct stat_sources src;

	take_sources(d, &src);
	add_rows(&src, s);
	add_bpf_stats(d, s);
	add_ingest_figures(d, s);
	add_unwind_figures(d, s);
	add_gpu_figures(&src.gs, s);
	add_daemon_figures(d, s);
}

/* The snapshot is what a request gets when the state lock is busy for
 * longer than it may wait.  Collected every tick while requests have
 * needed it lately (a minute since one last did: a client watching a
 * saturated machine gets figures at most a tick old after its first
 * answer), else every 10th tick.  Collecting copies every BPF counter map
 * and reads /proc: done each tick for anyone who merely asked, it was a
 * fifth of the daemon's CPU at 99 Hz (perf, bench/steady_state.py). */
#define STATS_CONTENDED_NS (60ull * 1000000000ull)
#define STATS_IDLE_EVERY_NS (10ull * 1000000000ull)

void control_publish_stats(struct daemon *d)
{
	struct proto_stats s = { 0 }, old;
	uint64_t now = clock_mono_ns(), fell_back = atomic_load(&d->stats_fell_back_mono_ns);

	if (d->stats_pub.n && now - d->stats_pub_mono_ns < STATS_IDLE_EVERY_NS &&
	    (!fell_back || now - fell_back > STATS_CONTENDED_NS))
		return;
	collect_stats(d, &s);
	pthread_mutex_lock(&d->stats_mu);
	old = d->stats_pub;
	d->stats_pub = s;
	d->stats_pub_mono_ns = clock_mono_ns();
	pthread_mutex_unlock(&d->stats_mu);
	proto_stats_free(&old);
}

/* The last tick's figures, and how old they are; -EAGAIN before the
 * first tick. */
static int published_stats(struct daemon *d, struct proto_stats *s)
{
	int err = 0;
	size_t i;

	pthread_mutex_lock(&d->stats_mu);
	if (!d->stats_pub.n)
		err = -EAGAIN;
	for (i = 0; !err && i < d->stats_pub.n; i++)
		err = proto_stats_add(s, d->stats_pub.items[i].name, d->stats_pub.items[i].value);
	if (!err)
		err = proto_stats_add(s, "stats_age_ns", clock_mono_ns() - d->stats_pub_mono_ns);
	pthread_mutex_unlock(&d->stats_mu);
	return err;
}

/* A stats request waits this long at most for the state lock, then takes
 * the last tick's figures: a client watching a saturated machine (ingest
 * preempted in the middle of an event) gets its answer at once. */
#define STATS_LOCK_WAIT_NS (20ull * 1000000ull)

int control_stats_payload(struct daemon *d, struct buf *payload)
{
	struct proto_stats s = { 0 };
	int err;

	if (daemon_lock_other_within(d, STATS_LOCK_WAIT_NS) == 0) {
		collect_stats(d, &s);
		daemon_unlock(d);
	} else {
		proto_stats_free(&s);
		if (published_stats(d, &s)) { /* none yet: wait as long as it takes */
			proto_stats_free(&s);
			daemon_lock_other(d);
			collect_stats(d, &s);
			daemon_unlock(d);
		} else {
			atomic_fetch_add(&d->stats_from_snapshot, 1);
			atomic_store(&d->stats_fell_back_mono_ns, clock_mono_ns());
		}
	}
	proto_stats_add(&s, "stats_answered_from_last_tick",
			atomic_load(&d->stats_from_snapshot));
	control_stats(d->control, &s);
	memread_stats(&s);
	err = proto_encode_stats(payload, &s);
	proto_stats_free(&s);
	return err;
}

