/* control_stats.c: the figures `profctl stats` answers with, collected
 * under the state lock (all of one moment) or, when ingest holds it past
 * a short wait, from the snapshot a tick published; and that snapshot,
 * taken every 10 s, and every tick while requests have needed it. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "buf.h"
#include "daemon.h"
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
	proto_stats_add(s, "cpus_sampled", (uint64_t)sampler_ncpus(d->sampler));
	add_throttle_stats(d, s);
}

static void add_ingest_stats(struct daemon *d, struct proto_stats *s)
{
	const struct ingest_counters *c = &d->in.c;
	uint64_t files, uprobes;

	proto_stats_add(s, "samples_received", c->samples);
	proto_stats_add(s, "samples_aggregated", c->aggregated);
	proto_stats_add(s, "samples_dropped_nomem", c->dropped_nomem);
	proto_stats_add(s, "samples_dropped_proc_table_full", c->dropped_noproc);
	proto_stats_add(s, "stacks_lost", c->stack_lost);
	proto_stats_add(s, "memory_events_received", c->memory_events);
	proto_stats_add(s, "memory_bytes_counted", c->memory_bytes);
	proto_stats_add(s, "mmap_events_received", c->mmap_events);
	proto_stats_add(s, "mmap_bytes_mapped", c->mmap_bytes_mapped);
	proto_stats_add(s, "mmap_bytes_unmapped", c->mmap_bytes_unmapped);
	proto_stats_add(s, "stack_records_received", c->stack_records);
	proto_stats_add(s, "stack_generations_dropped", c->stack_gens);
	proto_stats_add(s, "samples_deferred", c->deferred);
	proto_stats_add(s, "samples_pending", ingest_samples_pending(&d->in));
	proto_stats_add(s, "samples_counted_by_memo", c->memo_hits);
	proto_stats_add(s, "samples_symbolized", c->symbolized);
	proto_stats_add(s, "proc_exits_repaired", c->proc_exits_repaired);
	proto_stats_add(s, "bad_events", c->bad_events);
	proto_stats_add(s, "proc_execs", c->proc_execs);
	proto_stats_add(s, "proc_exits", c->proc_exits);
	proto_stats_add(s, "proc_forks", c->proc_forks);
	proto_stats_add(s, "proc_forks_inherited", c->forks_inherited);
	proto_stats_add(s, "maps_reloads", c->maps_reloads);
	proto_stats_add(s, "user_frames_symbolized", c->user_frames);
	proto_stats_add(s, "user_frames_unknown", c->user_frames_unknown);
	proto_stats_add(s, "user_frames_by_file", c->user_frames_by_file);
	proto_stats_add(s, "file_frames_cached", d->in.file_frames.entries);
	proto_stats_add(s, "file_frames_resets", d->in.file_frames.resets);
	proto_stats_add(s, "python_processes", c->py_processes);
	proto_stats_add(s, "python_samples", c->py_samples);
	proto_stats_add(s, "python_frames_unreadable", c->py_frames_unreadable);
	proto_stats_add(s, "python_frames_named_after_exit", c->py_frames_named_after_exit);
	proto_stats_add(s, "python_names_asked", c->py_names_asked);
	proto_stats_add(s, "python_uprobes", (uint64_t)sampler_py_uprobes(d->sampler));
	sampler_mmap_counts(d->sampler, &files, &uprobes);
	proto_stats_add(s, "mmap_uprobe_files", files);
	proto_stats_add(s, "mmap_uprobes", uprobes);
	proto_stats_add(s, "offcpu_events_received", c->offcpu_events);
	proto_stats_add(s, "offcpu_events_aggregated", c->offcpu_aggregated);
	proto_stats_add(s, "offcpu_gil_waits", c->offcpu_gil_waits);
}

static void add_unwind_stats(struct daemon *d, struct proto_stats *s)
{
	struct unwinder *u = sampler_unwinder(d->sampler);
	uint64_t cnt[PROFD_UNWIND_CNT_MAX];
	struct unwinder_stats us;
	struct worker_stats ws;
	char name[64];
	int i;

	/* As the worker last saw them: it may be building a table now. */
	worker_stats(d->worker, &ws, &us);
	proto_stats_add(s, "worker_jobs_queued", ws.queued);
	proto_stats_add(s, "worker_jobs_done", ws.done);
	proto_stats_add(s, "worker_jobs_dropped", ws.dropped);
	proto_stats_add(s, "worker_jobs_waiting", ws.waiting);
	proto_stats_add(s, "unwind_tables_yields", ws.tables_yields);
	proto_stats_add(s, "worker_busy_ns", ws.busy_ns);
	proto_stats_add(s, "unwind_table_bytes_used", us.table_bytes_used);
	proto_stats_add(s, "unwind_table_bytes_limit", us.table_bytes_limit);
	proto_stats_add(s, "unwind_processes", us.procs);
	proto_stats_add(s, "unwind_files", us.files);
	proto_stats_add(s, "unwind_files_with_table", us.files_loaded);
	proto_stats_add(s, "unwind_files_without_cfi", us.files_no_cfi);
	proto_stats_add(s, "unwind_files_failed", us.files_failed);
	proto_stats_add(s, "unwind_rows", us.rows_loaded);
	proto_stats_add(s, "unwind_tables_built", us.tables_built);
	proto_stats_add(s, "unwind_build_ns_total", us.build_ns_total);
	proto_stats_add(s, "unwind_build_ns_max", us.build_ns_max);
	proto_stats_add(s, "unwind_tables_evicted", us.evictions);
	proto_stats_add(s, "unwind_tables_refused", us.refusals);
	proto_stats_add(s, "unwind_tables_given_way", us.given_way);
	proto_stats_add(s, "unwind_tables_pending", unwinder_tables_pending(u)); /* live */
	proto_stats_add(s, "bpf_unwind_rule_cache_hits", unwinder_rule_cache_hits(u));
	proto_stats_add(s, "unwind_refreshes", d->in.c.unwind_refreshes);
	proto_stats_add(s, "user_stacks_by_frame_pointers", d->in.c.ustack_fp);
	if (unwinder_counters(u, cnt) == 0) {
		for (i = 0; i < PROFD_UNWIND_CNT_MAX; i++) {
			snprintf(name, sizeof(name), "bpf_%s", unwinder_counter_name(i));
			proto_stats_add(s, name, cnt[i]);
		}
	}
}

static void add_push_stats(struct daemon *d, struct proto_stats *s)
{
	struct push_stats ps;

	if (!d->pusher)
		return;
	push_stats(d->pusher, &ps);
	proto_stats_add(s, "push_windows_enqueued", ps.enqueued);
	proto_stats_add(s, "push_windows_sent", ps.sent);
	proto_stats_add(s, "push_bytes_sent", ps.bytes_sent);
	proto_stats_add(s, "push_failed_attempts", ps.failed_attempts);
	proto_stats_add(s, "push_retried", ps.retried);
	proto_stats_add(s, "push_dropped_queue_full", ps.dropped_queue_full);
	proto_stats_add(s, "push_dropped_after_retries", ps.dropped_after_retries);
	proto_stats_add(s, "push_dropped_rejected", ps.dropped_rejected);
	proto_stats_add(s, "push_render_errors", ps.render_errors);
	proto_stats_add(s, "push_queue_len", ps.queue_len);
	proto_stats_add(s, "push_queue_bytes", ps.queue_bytes);
}

static void add_gpu_stats(struct daemon *d, struct proto_stats *s)
{
	struct gpu_stats gs;
	int i;

	gpu_get_stats(d->gpu, &gs);
	proto_stats_add(s, "gpu_devices_watched", gs.devices);
	proto_stats_add(s, "gpu_events_received", gs.events);
	proto_stats_add(s, "gpu_events_aggregated", gs.aggregated);
	proto_stats_add(s, "gpu_events_dropped_nomem", gs.dropped_nomem);
	proto_stats_add(s, "gpu_bad_events", gs.bad_events);
	proto_stats_add(s, "cuda_library_reports", gs.libmaps);
	proto_stats_add(s, "cuda_uprobe_files", gs.uprobe_files);
	proto_stats_add(s, "cuda_uprobes", gs.uprobes);
	proto_stats_add(s, "cuda_uprobe_failures", gs.uprobe_failures);
	/* which syscall hooks GPU tracing runs on (all 0: none attached) */
	proto_stats_add(s, "gpu_syscall_hook_fentry", gs.hook == GPU_HOOK_FENTRY);
	proto_stats_add(s, "gpu_syscall_hook_uprobe", gs.hook == GPU_HOOK_UPROBE);
	proto_stats_add(s, "gpu_syscall_hook_tracepoint", gs.hook == GPU_HOOK_TRACEPOINT);
	proto_stats_add(s, "gpu_libc_uprobe_files", gs.libc_files);
	proto_stats_add(s, "gpu_libc_uprobes", gs.libc_uprobes);
	proto_stats_add(s, "gpu_libc_uprobe_failures", gs.libc_failures);
	for (i = 0; i < PROFD_GPU_CNT_MAX; i++)
		proto_stats_add(s, gpu_counter_name(i), gs.bpf[i]);
}

/* As of the last flush or prune (persist.c): a query of the database here
 * would wait for a flush in progress. */
static void add_history_stats(struct daemon *d, struct proto_stats *s)
{
	const struct history_stats hs = d->hist_snap;

	proto_stats_add(s, "history_enabled", d->hist != NULL);
	if (!d->hist || !d->hist_snap_ok)
		return;
	proto_stats_add(s, "history_file_bytes", hs.file_bytes);
	proto_stats_add(s, "history_samples", hs.samples);
	proto_stats_add(s, "history_rows", hs.sample_rows);
	proto_stats_add(s, "history_stacks", hs.stacks);
	proto_stats_add(s, "history_processes", hs.procs);
	proto_stats_add(s, "history_flushes", d->flushes);
	proto_stats_add(s, "history_flush_errors", d->flush_errors);
	proto_stats_add(s, "history_rows_written", d->flush_rows);
	proto_stats_add(s, "history_rows_refused", d->flush_refused);
	proto_stats_add(s, "history_stack_memo_hits", hs.stack_memo_hits);
	proto_stats_add(s, "history_last_flush_ns", d->flush_ns_last);
	proto_stats_add(s, "history_rows_pruned", hs.rows_pruned);
	proto_stats_add(s, "history_bytes_pruned", hs.bytes_pruned);
	proto_stats_add(s, "history_errors", hs.errors);
	proto_stats_add(s, "history_files_reset", hs.resets);
}

static void add_daemon_stats(struct daemon *d, struct proto_stats *s)
{
	struct symbolizer_counters sc;
	struct rusage ru;
	size_t live = d->pt.live.len;

	proto_stats_add(s, "rate_hz", d->cfg.rate_hz);
	proto_stats_add(s, "uptime_ns", clock_mono_ns() - d->start_mono_ns);
	proto_stats_add(s, "startup_ns", d->ready_mono_ns - d->start_mono_ns);
	if (d->in.c.first_sample_mono_ns > d->start_mono_ns)
		proto_stats_add(s, "first_sample_after_ns",
				d->in.c.first_sample_mono_ns - d->start_mono_ns);
	proto_stats_add(s, "processes_tracked", d->pt.n);
	proto_stats_add(s, "processes_live", live);
	proto_stats_add(s, "processes_evicted", d->pt.evicted);
	proto_stats_add(s, "processes_expired", d->pt.expired);
	proto_stats_add(s, "stacks_stored", d->agg.stacks);
	proto_stats_add(s, "cells_stored", d->agg.cells);
	proto_stats_add(s, "samples_in_stack_overflow", d->agg.stacks_overflow);
	proto_stats_add(s, "frames_interned", d->agg.dict->nframes);
	symbolizer_stats(d->sym, &sc);
	proto_stats_add(s, "symbol_files_cached", sc.files_cached);
	proto_stats_add(s, "symbol_files_evicted", sc.evictions);
	proto_stats_add(s, "symbol_file_failures", sc.files_failed);
	proto_stats_add(s, "kernel_symbols", sc.kallsyms_symbols);
	proto_stats_add(s, "perf_maps_loaded", sc.perfmap_loads);
	proto_stats_add(s, "perf_maps_refused", sc.perfmap_refused);
	proto_stats_add(s, "files_too_big", sc.files_too_big);
	proto_stats_add(s, "names_left_mangled", sc.names_left_mangled);
	proto_stats_add(s, "rss_bytes", rss_bytes());
	proto_stats_add(s, "state_lock_wait_ns_max", d->lock_wait_ns_max);
	proto_stats_add(s, "ingest_event_ns_max", d->event_ns_max);
	proto_stats_add(s, "ingest_history_tick_ns_max", d->persist_ns_max);
	proto_stats_add(s, "ingest_tick_ns_max", d->tick_ns_max);
	proto_stats_add(s, "ingest_publish_ns_max", d->publish_ns_max);
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
	add_history_stats(d, s);
	add_bpf_stats(d, s);
	add_ingest_stats(d, s);
	add_unwind_stats(d, s);
	add_daemon_stats(d, s);
	add_gpu_stats(d, s);
	add_push_stats(d, s);
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
	err = proto_encode_stats(payload, &s);
	proto_stats_free(&s);
	return err;
}

