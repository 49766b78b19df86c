/* daemon.h: state shared by profd's threads, and the rule they keep.
 *
 * Three kinds of thread, so nothing slow sits between a sample and its
 * counter or in front of a client:
 *   ingest  (main.c)    the ring buffers, signals, the 1 s housekeeping tick;
 *   worker  (worker.c)  three lanes: processes' uid, exe and maps, Python
 *                       detection; unwind-table builds; files' symbols;
 *   control (control_server.c) the socket: every client non-blocking, with
 *                        deadlines and caps.
 *
 * The threading contract (statelock.c keeps it; DAEMON_CHECK asserts it
 * in Debug and sanitizer builds):
 *   - ingest alone changes the profile state: the process table, the
 *     aggregator, ingest's and the symbolizer's caches.  It holds `lock`
 *     while it does, and hands it over between two events (daemon_yield).
 *   - other threads take `lock` (daemon_lock_other) only to read.  What
 *     needs the state changed (a process's entry made, frames named, a
 *     stack stored) is a job they hand to ingest (daemon_on_ingest), run
 *     there under `lock` while they wait, without `lock` held.
 *   - `hist_lock` guards the history database and is taken before `lock`.
 *     Ingest only tries it (a flush waits for no query), so a thread that
 *     holds it may wait for a job.
 *   - the worker's answers come back through queues ingest reads
 *     (worker_publish); figures read without `lock` are atomics or copies
 *     under their own mutex (stats_mu, cu_mu, job_mu). */
#ifndef PROFD_DAEMON_H
#define PROFD_DAEMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "aggregate.h"
#include "history.h"
#include "config.h"
#include "ingest.h"
#include "proctable.h"
#include "push.h"
#include "sampler.h"
#include "symbolize.h"
#include "protocol.h"
#include <sys/types.h>

#define PROFD_DEFAULT_SOCKET "/run/profd/profd.sock"

struct daemon_config {
	uint32_t rate_hz;
	uint32_t *pids;
	size_t npids;
	const char *socket_path;
	uint64_t retention_ns;
	uint64_t bucket_ns;
	uint64_t duration_ns; /* 0 = run until signalled */
	size_t max_procs;
	uint32_t ringbuf_bytes;
	uint32_t stack_map_entries;
	int verbose;
	bool python_uprobe;
	uint64_t unwind_table_bytes;
	uint64_t max_stacks;
	const char *state_dir;     /* history database; NULL with no_history */
	bool no_history;
	uint64_t history_max_bytes;
	uint64_t flush_interval_ns;
	int gpu_mode;              /* enum gpu_mode */
	int gpu_hook;              /* enum gpu_hook: AUTO or TRACEPOINT */
	const char **gpu_devices;  /* --gpu-device PATH[=CLASS] */
	size_t ngpu_devices;
	const char *push_url;      /* NULL: no push */
	enum push_protocol push_protocol; /* --push-protocol; AUTO: from the URL */
	uint64_t push_interval_ns;
	const char *push_name;     /* --push-name template; NULL: PUSH_DEFAULT_NAME */
	bool offcpu;               /* --off-cpu / --no-off-cpu (default) */
	uint64_t offcpu_min_ns;    /* --off-cpu-threshold */
	bool memory;               /* --memory / --no-memory (default) */
	uint64_t memory_sample_kib; /* --memory-sample-kib */
	bool mmap;                 /* --mmap / --no-mmap (default) */
	int bpf_build;             /* --bpf-build: enum bpfload_variant */
	bool cuda_launches;        /* --cuda-launches */
	bool comm;                 /* --collectives / --no-collectives (default) */
	bool check;                /* --check: probe the kernel, report, exit */
};

/* What the ingest thread spends its CPU on (struct daemon.cpu_ns). */
enum daemon_cpu {
	DAEMON_CPU_RINGS,   /* samples and events read, jobs for clients */
	DAEMON_CPU_ANSWERS, /* the worker's answers taken in */
	DAEMON_CPU_HISTORY, /* history flushes and pruning */
	DAEMON_CPU_PUSH,    /* push windows sent */
	DAEMON_CPU_EXPIRE,  /* processes past their retention forgotten */
	DAEMON_CPU_SWEEP,   /* exits found in /proc, RSS points */
	DAEMON_CPU_TICK,    /* the rest of the tick: clock, tables tick, CPUs, stats */
	DAEMON_CPU_MAX
};

struct daemon {
	struct daemon_config cfg;
	/* The config file's and command line's arguments, parsed into cfg
	 * (whose strings point into them), kept for SIGHUP. */
	struct config_argv args;
	const char *config_path;
	unsigned config_flags;
	int argc;
	char **argv;
	struct sampler *sampler;
	struct gpu *gpu;             /* GPU driver and CUDA tracing (gpu.h) */
	struct symbolizer *sym;
	struct proctable pt;
	struct aggregate agg;
	struct ingest in;
	struct history *hist;     /* NULL: memory only */
	struct worker *worker;       /* the slow path (worker.c) */
	struct control *control;     /* the control thread (control_server.c) */
	pthread_mutex_t lock;        /* profile state: see the top of this file */
	pthread_t lock_holder;       /* who holds it, when lock_held (checks) */
	atomic_bool lock_held;
	pthread_t ingest_thread;     /* the only one that changes the state */
	bool ingest_known;           /* ingest_thread is set */
	atomic_int lock_waiters;     /* threads other than ingest waiting for it */
	/* Jobs handed to ingest (statelock.c): on their askers' stacks. */
	pthread_mutex_t job_mu;
	pthread_cond_t job_cv;       /* a job is done */
	struct ingest_job *jobs;     /* under job_mu */
	bool jobs_closed;            /* under job_mu: ingest stopped, none taken */
	atomic_int jobs_pending;
	uint64_t lock_wait_ns_max;   /* the longest such wait (under lock) */
	/* What `stats` answers when ingest holds the lock longer than a stats
	 * request may wait (a preempted thread on a saturated machine): the
	 * figures as of the last tick, all of one moment (control_stats.c). */
	pthread_mutex_t stats_mu;
	struct proto_stats stats_pub; /* under stats_mu */
	uint64_t stats_pub_mono_ns;
	atomic_ullong stats_from_snapshot;
	atomic_ullong stats_fell_back_mono_ns; /* a request last took the snapshot then */
	uint64_t consumed_mono_ns;   /* the rings were last read then */
	/* A client about to dump asks ingest to read the rings now (the
	 * rings are otherwise read once a second or per 64 KiB of events):
	 * consume passes are numbered as they start and end, under cu_mu. */
	int catchup_fd;
	pthread_mutex_t cu_mu;
	pthread_cond_t cu_cv;
	uint64_t consume_started, consume_done;
	/* Rings read every 100 ms until then (main.c: while things change). */
	uint64_t busy_until_mono_ns, requests_seen;
	uint64_t swept_mono_ns, proc_lost_seen; /* main.c: sweep_if_due */
	uint64_t ticks;              /* housekeeping ticks so far */
	/* The longest time ingest held the lock in one piece, by what for
	 * (all under lock). */
	uint64_t event_ns_max, persist_ns_max, tick_ns_max, publish_ns_max;
	/* The ingest thread's CPU time (its own clock, ns) by what it did
	 * (under lock): where an idle or a busy daemon's time goes. */
	uint64_t cpu_ns[DAEMON_CPU_MAX];
	pthread_mutex_t hist_lock;   /* hist; taken before lock */
	struct history_stats hist_snap; /* as of the last flush or prune (under lock) */
	bool hist_snap_ok;
	uint64_t flush_next_mono_ns, prune_next_mono_ns;
	uint64_t flushes, flush_errors, flush_rows, flush_refused, flush_ns_last;
	int listen_fd;
	uint64_t start_mono_ns;
	uint64_t ready_mono_ns;
	struct pusher *pusher;       /* --push, or NULL */
	struct push_window *push_win;
	uint64_t push_next_mono_ns;
};

/* The sampling rate, and a CPU sample as time (ns): the wall profile's
 * scale, the comm profile's weight from samples.  99 Hz when unset. */
static inline uint32_t daemon_rate_hz(const struct daemon *d)
{
	return d->cfg.rate_hz ? d->cfg.rate_hz : 99;
}

static inline uint64_t daemon_sample_ns(const struct daemon *d)
{
	return 1000000000ull / daemon_rate_hz(d);
}

/* statelock.c: ingest and control run at this nice value. */
#define DAEMON_NICE (-5)
void daemon_raise_priority(const char *thread);

#endif
