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
	uint64_t push_interval_ns;
	bool offcpu;               /* --off-cpu / --no-off-cpu (default) */
	uint64_t offcpu_min_ns;    /* --off-cpu-threshold */
	bool memory;               /* --memory / --no-memory (default) */
	uint64_t memory_sample_kib; /* --memory-sample-kib */
	bool mmap;                 /* --mmap / --no-mmap (default) */
	int bpf_build;             /* --bpf-build: enum bpfload_variant */
	bool cuda_launches;        /* --cuda-launches */
	bool check;                /* --check: probe the kernel, report, exit */
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

/* statelock.c: the profile-state lock (the contract at the top). */
int daemon_statelock_init(struct daemon *d); /* on the ingest thread */
void daemon_lock_ingest(struct daemon *d);
/* Other threads: to read.  Ingest lets them in at its next yield. */
void daemon_lock_other(struct daemon *d);
/* daemon_lock_other for at most wait_ns: 0, or -ETIMEDOUT. */
int daemon_lock_other_within(struct daemon *d, uint64_t wait_ns);
void daemon_unlock(struct daemon *d);
/* Ingest, between two events: run the jobs asked for, let waiters in. */
void daemon_yield(struct daemon *d);
bool daemon_holds_lock(const struct daemon *d);
bool daemon_on_ingest_thread(const struct daemon *d);
/* Run fn(d, arg) on the ingest thread under the lock, and wait for it:
 * its return value, or -ESHUTDOWN once ingest has stopped.  Call without
 * the lock (hist_lock may be held). */
typedef int (*daemon_job_fn)(struct daemon *d, void *arg);
int daemon_on_ingest(struct daemon *d, daemon_job_fn fn, void *arg);
/* Ingest, under the lock: the jobs waiting; at the end, refuse new ones. */
void daemon_run_jobs(struct daemon *d);
void daemon_close_jobs(struct daemon *d);
/* A consume pass numbered for daemon_catch_up's waiters. */
void daemon_consume_started(struct daemon *d, uint64_t *seq);
void daemon_consume_done(struct daemon *d, uint64_t seq);
void daemon_thread_check_failed(const char *what, const char *file, int line);
#ifdef PROFD_THREAD_CHECKS
#define DAEMON_CHECK(cond, what) \
	((cond) ? (void)0 : daemon_thread_check_failed(what, __FILE__, __LINE__))
#else
#define DAEMON_CHECK(cond, what) ((void)0)
#endif
#define DAEMON_CHECK_LOCKED(d) DAEMON_CHECK(daemon_holds_lock(d), "the state lock is not held")
#define DAEMON_CHECK_INGEST(d) \
	DAEMON_CHECK(daemon_on_ingest_thread(d) && daemon_holds_lock(d), \
		     "a state change off the ingest thread or without the lock")
/* Under d->lock (the tick): keep the stats figures for daemon_lock_other_within's timeouts. */
void control_publish_stats(struct daemon *d);
/* options.c: one getopt pass over the config file's options, then the
 * command line's; 0 to run, 1 to exit successfully (--help), -1 on a
 * usage error (said). */
int daemon_parse_args(const struct config_argv *ca, struct daemon_config *c);
/* config_find_path and config_to_argv with profd's option table. */
int daemon_find_config(int argc, char **argv, const char **path);
int daemon_config_argv(const char *path, unsigned flags, int argc, char **argv, struct config_argv *out);
/* The stats answer's payload (control_stats.c). */
int control_stats_payload(struct daemon *d, struct buf *payload);
/* Have ingest read the rings and wait (at most timeout_ms) until it has:
 * what was sampled before the call is then in the profiles.  Call with
 * no lock held. */
void daemon_catch_up(struct daemon *d, unsigned timeout_ms);

/* worker.c: the slow path, on its own thread */
struct worker_stats {
	uint64_t queued, done, dropped, busy_ns, waiting;
	uint64_t tables_yields; /* a process's builds paused for another's */
};
struct unwinder;
struct unwinder_stats;
/* Starts the lanes: 0 and *out, or -errno (a thread not started). */
int worker_new(struct unwinder *u, struct worker **out);
void worker_free(struct worker *w);
void worker_py_detect(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req);
void worker_identify(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req);
void worker_rss(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req);
void worker_maps(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req);
struct procmap;
void worker_symbols(struct worker *w, uint32_t pid, const struct procmap *m);
void worker_kallsyms(struct worker *w, const char *path);
/* A Python name read on the worker's Python lane (rt copied); a
 * process's code objects forgotten there when it ends. */
void worker_py_name(struct worker *w, const struct ingest_py_ask *a, const struct pyruntime *rt);
void worker_py_forget(struct worker *w, uint32_t pid);
struct perfmap_stamp;
void worker_perfmap(struct worker *w, uint32_t pid, uint32_t seq,
		    const struct perfmap_stamp *prev);
void worker_tables(struct worker *w, uint32_t pid);
void worker_tables_forget(struct worker *w, uint32_t pid);
/* Once a second: the tables' worker notes which processes BPF sampled,
 * so the least recently sampled files give way when memory runs out. */
void worker_tables_tick(struct worker *w);
/* Readable when Python answers wait; worker_publish() hands them to
 * ingest (call with d->lock held). */
int worker_fd(const struct worker *w);
void worker_publish(struct worker *w, struct ingest *in);
void worker_stats(struct worker *w, struct worker_stats *st, struct unwinder_stats *us);
void worker_prebuild(struct worker *w, struct daemon *d);

/* backend.c: what ingest asks of the sampler and the worker; the
 * symbolizer's hooks that send its file reads to the worker. */
void daemon_ingest_backend(struct daemon *d, struct ingest_backend *be);
void daemon_symbolizer_hooks(struct daemon *d);

/* persist.c */
void persist_open(struct daemon *d);
void persist_flush(struct daemon *d);
/* Under both locks: the flush, when due. */
void persist_tick(struct daemon *d);
/* Under the history lock only (a prune is slow, and touches no profile):
 * true when one ran, with the database's figures for stats in *hs. */
bool persist_prune_due(struct daemon *d, struct history_stats *hs, bool *hs_ok);
void persist_snap_stats(struct daemon *d);

/* control_threads.c: threads' current stacks (BPF's per-thread state) */
struct agg_query;
struct stackset;
/* Blocks of p's threads still under way, as off-cpu weight up to now
 * (a job on the ingest thread: it names frames and stores stacks). */
int control_ongoing_blocks(struct daemon *d, struct proc *p, const struct agg_query *q,
			   struct stackset *out);
/* Every thread of pid with its current stack into out (PROTO_RESP_STACKS),
 * made by a job on the ingest thread: call without d->lock.  uid: the caller's (0 sees every process); kernel: keep
 * kernel frames.  0, -EACCES, -ESRCH or -errno. */
int control_thread_stacks(struct daemon *d, uint32_t pid, uint32_t uid, bool kernel,
			  struct stackset *out);

/* control_async.c: pid's asyncio tasks into out (PROTO_STACKS_ASYNC);
 * takes d->lock only to check uid.  0, -EACCES, -ESRCH, -ENOENT (no
 * CPython, or asyncio not imported), -EPROTONOSUPPORT (before 3.14). */
int control_async_tasks(struct daemon *d, uint32_t pid, uint32_t uid, struct stackset *out);

/* check.c: profd --check: the kernel's facts and what each feature can
 * do with them, to out.  The exit status: 0 when CPU sampling can work. */
int daemon_check(FILE *out);

/* control_server.c: the control thread */
/* Before the slow start: 0 if path can become the socket, -EADDRINUSE
 * when a daemon answers there already, -ENAMETOOLONG. */
int control_check_free(const char *path);
/* The listening socket at path (replacing a stale one), or -errno. */
int control_listen(const char *path);
struct control *control_start(struct daemon *d, int listen_fd);
void control_stop(struct control *c);
void control_stats(struct control *c, struct proto_stats *s);

/* control.c: one request, answered into out (a whole message: header and
 * payload), taking the locks it needs. */
struct caller {
	uid_t uid;
	pid_t pid;
};
struct buf;
void control_answer(struct daemon *d, const struct caller *c, uint16_t type,
		    const struct buf *payload, struct buf *out);

#define DAEMON_NICE (-5)
void daemon_raise_priority(const char *thread);

#endif
