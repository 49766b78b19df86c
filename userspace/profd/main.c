/* profd: the system-wide sampling daemon.  Parses options, loads the BPF
 * sampler, starts the worker and control threads (daemon.h), then runs the
 * ingest loop over the ring buffers, the worker's answers, signals and a
 * housekeeping timer. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "backend.h"
#include "check.h"
#include "control.h"
#include "debuginfod.h"
#include "options.h"
#include "persist.h"
#include "statelock.h"
#include "worker.h"
#include "gpu.h"
#include "log.h"
#include "sdnotify.h"
#include "symcache.h"
#include "unwinder.h"

#define SLOW_EVENT_NS (50ull * 1000000ull) /* logged with -v: what held ingest up */

/* Time since t0, kept in *max if the longest so far. */
static uint64_t note_max(uint64_t *max, uint64_t t0)
{
	uint64_t took = clock_mono_ns() - t0;

	if (took > *max)
		*max = took;
	return took;
}

/* This thread's CPU time, ns. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CPU since *since goes to what; *since moves to now. */
static void note_cpu(struct daemon *d, enum daemon_cpu what, uint64_t *since)
{
	uint64_t now = thread_cpu_ns();

	d->cpu_ns[what] += now - *since;
	*since = now;
}

/* Reading a new file's symbols (disk, parsing) happens with the state
 * lock let go: the sample being symbolized is not counted yet and the
 * symbol cache is ingest's alone, so readers see a consistent state. */
static void io_begin(void *ctx)
{
	daemon_unlock(ctx);
}

static void io_end(void *ctx)
{
	daemon_lock_ingest(ctx);
}

/* A flush lets readers in between processes (aggregate.h). */
static void flush_yield(void *ctx)
{
	daemon_yield(ctx);
}

/* ... and during its commit: only ingest changes the profiles, and it is
 * the one committing. */
static void flush_io(void *ctx, bool begin)
{
	if (begin)
		daemon_unlock(ctx);
	else
		daemon_lock_ingest(ctx);
}

static void on_ringbuf_event(void *ctx, const void *data, size_t len)
{
	struct daemon *d = ctx;
	uint64_t t0;

	daemon_yield(d);
	DAEMON_CHECK_INGEST(d);
	t0 = clock_mono_ns();
	ingest_event(&d->in, data, len);
	t0 = note_max(&d->event_ns_max, t0);
	if (t0 > SLOW_EVENT_NS)
		log_info("ingest: one event (type %u) took %llu ms", *(const uint32_t *)data,
			 (unsigned long long)t0 / 1000000);
}

/* BPF wakes ingest only when 64 KiB of events wait (stackhash.bpf.h).
 * Otherwise the rings are read every 100 ms while things change (a pass
 * asked the slow path for something: a new process, new code to unwind,
 * an exec), so new processes get their tables and Python frames soon, and
 * once a second (the tick) when nothing does, or at once before a dump
 * (daemon_catch_up).  A wakeup costs about as much as ingesting tens of
 * samples: at 99 Hz, reading every 100 ms made wakeups most of profd's
 * CPU. */
#define INGEST_BATCH_MS 100
#define INGEST_BUSY_NS (2000ull * 1000000ull)

/* Everything the rings hold now, under the lock, then the samples whose
 * stack record was still on its way. */
static void consume(struct daemon *d)
{
	uint64_t seq, cpu;

	daemon_consume_started(d, &seq);
	d->consumed_mono_ns = clock_mono_ns();
	daemon_lock_ingest(d);
	cpu = thread_cpu_ns();
	sampler_consume(d->sampler);
	ingest_end_batch(&d->in);
	if (d->in.c.requests != d->requests_seen) { /* something new: stay close */
		d->requests_seen = d->in.c.requests;
		d->busy_until_mono_ns = d->consumed_mono_ns + INGEST_BUSY_NS;
	}
	daemon_run_jobs(d); /* after the rings: a job sees what was sampled */
	note_cpu(d, DAEMON_CPU_RINGS, &cpu);
	daemon_unlock(d);
	daemon_consume_done(d, seq);
}

/* Privileges first, so an unprivileged user gets one clear sentence. */
static int check_privileges(void)
{
	if (geteuid() == 0)
		return 0;
	fprintf(stderr, "profd: must run as root: loading BPF programs and opening perf events "
			"need CAP_BPF and CAP_PERFMON, reading other processes' memory and binaries "
			"CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, kernel symbols CAP_SYSLOG\n");
	return -EPERM;
}

/* process_vm_readv of a page held back with userfaultfd waits, killably
 * only, until the process supplies it: a Python read of such a page would
 * hold the reading thread of profd for good.  A default kernel lets no
 * unprivileged user make one that catches such a read (its
 * UFFD_USER_MODE_ONLY handles fail the read at once); say so where this
 * machine does. */
static void warn_userfaultfd(void)
{
	char v[16];
	struct stat st;

	if (proc_read_small_file("/proc/sys/vm/unprivileged_userfaultfd", v, sizeof(v)) > 0 &&
	    v[0] == '1')
		log_warn("profd: vm.unprivileged_userfaultfd is 1: any local user can make one of "
			 "profd's reads of its memory wait for good (docs/security.md); the "
			 "kernel's default is 0");
	if (!stat("/dev/userfaultfd", &st) && (st.st_mode & (S_IRWXG | S_IRWXO)))
		log_warn("profd: /dev/userfaultfd is open to users other than root: they can make "
			 "one of profd's reads of their memory wait for good (docs/security.md)");
}

static int daemon_gpu_new(struct daemon *d)
{
	struct gpu_opts go = {
		.mode = (enum gpu_mode)d->cfg.gpu_mode,
		.hook = (enum gpu_hook)d->cfg.gpu_hook,
		.devices = d->cfg.gpu_devices,
		.ndevices = d->cfg.ngpu_devices,
		.cuda_launches = d->cfg.cuda_launches,
		.comm = d->cfg.comm,
	};

	d->gpu = gpu_new(&go);
	if (!d->gpu)
		return -errno;
	d->in.gpu = d->gpu;
	return 0;
}

static void *preload_kernel_symbols(void *sym)
{
	pthread_setname_np(pthread_self(), "profd-kallsyms");
	symbolizer_preload_kernel(sym);
	return NULL;
}

/* The kernel verifies the sampling program for a few hundred ms: read
 * kallsyms on another thread meanwhile, so the first samples do not wait
 * for it.  Without the thread, the first kernel frame reads it. */
static struct sampler *open_sampler_preloading(struct daemon *d, const struct sampler_opts *so)
{
	struct sampler *s;
	pthread_t t;
	bool threaded = pthread_create(&t, NULL, preload_kernel_symbols, d->sym) == 0;
	int err;

	s = sampler_open(so, on_ringbuf_event, d);
	err = errno;
	if (threaded)
		pthread_join(t, NULL);
	errno = err;
	return s;
}


/* Debug files by build-id where the user set DEBUGINFOD_URLS (one line
 * either way), cached beside the history so they last across restarts. */
static void start_debuginfod(const struct daemon *d)
{
	char cache[4096];
	bool named = d->cfg.state_dir &&
		     snprintf(cache, sizeof(cache), "%s/debuginfod", d->cfg.state_dir) <
			     (int)sizeof(cache);

	if (debuginfod_init(named ? cache : NULL) > 0)
		fprintf(stderr, "profd: debuginfod: stripped files' debug files fetched from %s (cache %s)\n",
			getenv("DEBUGINFOD_URLS"), getenv("DEBUGINFOD_CACHE_PATH") ?: "~/.cache");
}

static int daemon_start(struct daemon *d)
{
	struct sampler_opts so = {
		.rate_hz = d->cfg.rate_hz,
		.pids = d->cfg.pids,
		.npids = d->cfg.npids,
		.ringbuf_bytes = d->cfg.ringbuf_bytes,
		.stack_map_entries = d->cfg.stack_map_entries,
		.python_uprobe = d->cfg.python_uprobe,
		.unwind_table_bytes = d->cfg.unwind_table_bytes,
		.offcpu = d->cfg.offcpu,
		.offcpu_min_ns = d->cfg.offcpu_min_ns,
		.memory = d->cfg.memory,
		.memory_sample_bytes = d->cfg.memory_sample_kib * 1024,
		.mmap = d->cfg.mmap,
		.bpf_build = d->cfg.bpf_build,
	};
	struct symbolizer_opts symo = { 0 };
	struct ingest_backend be;
	int npy, err;

	d->listen_fd = -1;
	pthread_mutex_init(&d->stats_mu, NULL);
	err = daemon_statelock_init(d);
	if (err)
		return err;
	pthread_mutex_init(&d->hist_lock, NULL);
	proctable_init(&d->pt, d->cfg.max_procs, "/proc");
	if (aggregate_own_procs(&d->pt))
		return -ENOMEM;
	if (aggregate_init(&d->agg, d->cfg.bucket_ns))
		return -ENOMEM;
	if (d->cfg.max_stacks)
		d->agg.max_stacks_per_proc = d->cfg.max_stacks;
	d->agg.flush_yield = flush_yield;
	d->agg.flush_yield_ctx = d;
	d->agg.flush_io = flush_io;
	d->sym = symbolizer_new(&symo);
	if (!d->sym)
		return -errno;
	symbolizer_set_io(d->sym, &(struct symcache_io){ io_begin, io_end, d });
	daemon_ingest_backend(d, &be);
	if (ingest_init(&d->in, &be, d->sym, &d->pt, &d->agg))
		return -ENOMEM;
	/* Collectives not traced: read from the samples' stacks. */
	if (!d->cfg.comm)
		d->in.comm_sample_ns = daemon_sample_ns(d);
	if (d->cfg.push_url) {
		struct push_opts po;

		push_opts_init(&po);
		po.url = d->cfg.push_url;
		po.protocol = d->cfg.push_protocol;
		d->pusher = push_new(&po);
		d->push_win = d->pusher ? push_window_new(0) : NULL;
		if (!d->push_win)
			return d->pusher ? -ENOMEM : -errno;
		if (d->cfg.push_name && push_window_set_name(d->push_win, d->cfg.push_name))
			return -EINVAL; /* checked with the options already */
		d->push_next_mono_ns = clock_mono_ns() + d->cfg.push_interval_ns;
	}
	/* Another daemon on the socket is said before the slow BPF load; the
	 * socket itself comes once sampling runs, so a client (or a script
	 * waiting for it) never finds a daemon that is about to fail. */
	err = control_check_free(d->cfg.socket_path);
	if (err)
		return err;
	err = daemon_gpu_new(d);
	if (err)
		return err;
	so.gpu = d->gpu;
	d->sampler = open_sampler_preloading(d, &so);
	if (!d->sampler)
		return -errno;
	/* What this kernel refused is off (the sampler said why). */
	d->cfg.offcpu = sampler_loaded(d->sampler)->offcpu;
	d->cfg.memory = sampler_loaded(d->sampler)->memory;
	d->cfg.mmap = sampler_loaded(d->sampler)->mmap;
	d->cfg.python_uprobe = sampler_loaded(d->sampler)->python_uprobe;
	/* Python processes already running get their frames from the
	 * first sample on. */
	persist_open(d);
	npy = ingest_scan_python(&d->in);
	start_debuginfod(d);
	err = worker_new(sampler_unwinder(d->sampler), &d->worker);
	if (err)
		return err;
	worker_prebuild(d->worker, d);
	daemon_symbolizer_hooks(d);
	err = sampler_start(d->sampler);
	if (err)
		return err;
	d->listen_fd = control_listen(d->cfg.socket_path);
	if (d->listen_fd < 0)
		return d->listen_fd;
	d->control = control_start(d, d->listen_fd);
	if (!d->control)
		return -ENOMEM;
	daemon_raise_priority("ingest");
	d->ready_mono_ns = clock_mono_ns();
	d->busy_until_mono_ns = d->ready_mono_ns + INGEST_BUSY_NS; /* the first tables */
	log_info("profd: %d Python processes found at start", npy);
	log_info("profd: sampling %d CPUs at %u Hz (%s), control socket %s",
		 sampler_ncpus(d->sampler), d->cfg.rate_hz,
		 d->cfg.npids ? "selected processes" : "all processes", d->cfg.socket_path);
	return 0;
}

/* What daemon_config_argv and daemon_parse_args allocated, for the exits before
 * the daemon starts (daemon_stop frees them after). */
static void free_args(struct daemon *d)
{
	free(d->cfg.pids);
	free(d->cfg.gpu_devices);
	config_argv_free(&d->args);
}

static void daemon_stop(struct daemon *d)
{
	/* Clients and the slow path first: both use what follows. */
	control_stop(d->control);
	worker_free(d->worker);
	/* Detach so nothing new arrives while tearing down. */
	sampler_close(d->sampler);
	gpu_free(d->gpu);
	daemon_lock_ingest(d); /* flush_io lets go of it during the commit */
	persist_flush(d); /* what is still in memory: SIGTERM loses nothing */
	daemon_unlock(d);
	history_close(d->hist);
	if (d->pusher) /* the last window, then up to 2 s to send the queue */
		push_window_flush(d->push_win, d->pusher, &d->agg, &d->pt, clock_realtime_ns(),
				  d->cfg.rate_hz);
	push_free(d->pusher);
	push_window_free(d->push_win);
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		control_unlink_socket(d->cfg.socket_path);
	}
	ingest_free(&d->in);
	proctable_free(&d->pt);
	aggregate_free(&d->agg);
	symbolizer_free(d->sym);
	free(d->cfg.pids);
	free(d->cfg.gpu_devices);
	pthread_mutex_destroy(&d->lock);
	proto_stats_free(&d->stats_pub);
	pthread_mutex_destroy(&d->stats_mu);
	pthread_mutex_destroy(&d->hist_lock);
	if (d->catchup_fd > 0)
		close(d->catchup_fd);
	pthread_cond_destroy(&d->cu_cv);
	pthread_mutex_destroy(&d->cu_mu);
}

#define SWEEP_EVERY_NS (60ull * 1000000000ull)
#define SWEEP_STEP 512 /* processes checked per tick: a few ms */

/* Processes whose exit was never seen are ended from /proc: a sweep starts
 * at once (next tick) after BPF lost a lifecycle event, else once a
 * minute, and goes on a step per tick.  The RSS pass likewise. */
static void sweep_if_due(struct daemon *d)
{
	uint64_t lost_cnt = sampler_proc_events_lost(d->sampler), now = clock_mono_ns();
	bool lost = lost_cnt != d->proc_lost_seen;

	if (lost || now - d->swept_mono_ns >= SWEEP_EVERY_NS) {
		if (lost)
			d->proc_lost_seen = lost_cnt;
		d->swept_mono_ns = now;
		ingest_sweep_start(&d->in);
	}
	ingest_sweep_step(&d->in, now, SWEEP_STEP);
	/* A point of RSS per bucket for each running process. */
	ingest_rss_step(&d->in, now, d->cfg.bucket_ns, SWEEP_STEP);
}

/* Once a second.  History first, under its lock (taken before d->lock);
 * a flush waits for no query: while one runs, it is left to the next
 * tick. */
static void housekeeping(struct daemon *d)
{
	uint64_t t0, cpu = thread_cpu_ns();

	if (pthread_mutex_trylock(&d->hist_lock) == 0) {
		struct history_stats hs;
		bool hs_ok;

		daemon_lock_ingest(d);
		t0 = clock_mono_ns();
		persist_tick(d);
		note_max(&d->persist_ns_max, t0);
		daemon_unlock(d);
		if (persist_prune_due(d, &hs, &hs_ok)) {
			daemon_lock_ingest(d); /* stats read the figures under it */
			d->hist_snap = hs;
			d->hist_snap_ok = hs_ok;
			daemon_unlock(d);
		}
		pthread_mutex_unlock(&d->hist_lock);
	}
	daemon_lock_ingest(d);
	note_cpu(d, DAEMON_CPU_HISTORY, &cpu); /* a lock wait is no CPU time */
	t0 = clock_mono_ns();
	ingest_sync_clock(&d->in);
	note_cpu(d, DAEMON_CPU_TICK, &cpu);
	if (d->pusher && clock_mono_ns() >= d->push_next_mono_ns) {
		int n = push_window_flush(d->push_win, d->pusher, &d->agg, &d->pt,
					  clock_realtime_ns(), d->cfg.rate_hz);

		if (n < 0)
			log_warn("profd: push: %s", strerror(-n));
		d->push_next_mono_ns += d->cfg.push_interval_ns;
		if (d->push_next_mono_ns < clock_mono_ns())
			d->push_next_mono_ns = clock_mono_ns() + d->cfg.push_interval_ns;
	}
	note_cpu(d, DAEMON_CPU_PUSH, &cpu);
	/* Before expiry: a process expiring now still gets its last window. */
	proctable_expire(&d->pt, clock_realtime_ns(), d->cfg.retention_ns);
	note_cpu(d, DAEMON_CPU_EXPIRE, &cpu);
	sweep_if_due(d);
	note_cpu(d, DAEMON_CPU_SWEEP, &cpu);
	worker_tables_tick(d->worker);
	if (++d->ticks % 10 == 0) /* CPUs that came online, every 10 s */
		sampler_attach_new_cpus(d->sampler);
	note_cpu(d, DAEMON_CPU_TICK, &cpu);
	control_publish_stats(d);
	note_max(&d->tick_ns_max, t0);
	daemon_unlock(d);
}

static int add_fd(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int make_signalfd(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	signal(SIGPIPE, SIG_IGN); /* a client that hangs up must not kill us */
	return signalfd(-1, &mask, SFD_CLOEXEC);
}

static int make_timer(void)
{
	struct itimerspec its = { .it_interval = { 1, 0 }, .it_value = { 1, 0 } };
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);

	if (fd >= 0 && timerfd_settime(fd, 0, &its, NULL)) {
		close(fd);
		return -1;
	}
	return fd;
}

static enum log_level level_for(int verbose)
{
	return verbose >= 2 ? LOG_DEBUG : verbose ? LOG_INFO : LOG_WARN;
}

static void keep_setting(const char *name, bool changed)
{
	if (changed)
		log_warn("profd: reload: '%s' changed; it takes effect on restart", name);
}

/* SIGHUP: the config file again, with the command line on top.  What
 * can change while running is applied; the rest is said to need a
 * restart.  A rejected file changes nothing. */
static void daemon_reload(struct daemon *d)
{
	struct daemon_config nc = { 0 };
	struct config_argv args;
	const struct daemon_config *c = &d->cfg;
	bool pids_changed;

	sdnotify_send("RELOADING=1");
	if (daemon_config_argv(d->config_path, d->config_flags, d->argc, d->argv, &args) ||
	    daemon_parse_args(&args, &nc) != 0) {
		log_error("profd: reload: configuration rejected; nothing changed");
		sdnotify_send("READY=1\nSTATUS=reload failed: configuration rejected");
		goto out;
	}
	d->cfg.retention_ns = nc.retention_ns;
	d->cfg.verbose = nc.verbose;
	log_set_level(level_for(nc.verbose));
	pids_changed = nc.npids != c->npids ||
		       (nc.npids && memcmp(nc.pids, c->pids, nc.npids * sizeof(*nc.pids)));
	keep_setting("rate", nc.rate_hz != c->rate_hz);
	keep_setting("pid", pids_changed);
	keep_setting("socket", strcmp(nc.socket_path, c->socket_path) != 0);
	keep_setting("bucket", nc.bucket_ns != c->bucket_ns);
	keep_setting("max-procs", nc.max_procs != c->max_procs);
	keep_setting("ringbuf-size", nc.ringbuf_bytes != c->ringbuf_bytes);
	keep_setting("stack-map-entries", nc.stack_map_entries != c->stack_map_entries);
	keep_setting("python-uprobe", nc.python_uprobe != c->python_uprobe);
	keep_setting("unwind-table-bytes", nc.unwind_table_bytes != c->unwind_table_bytes);
	keep_setting("duration", nc.duration_ns != c->duration_ns);
	keep_setting("push", (nc.push_url == NULL) != (c->push_url == NULL) ||
				     (nc.push_url && strcmp(nc.push_url, c->push_url)));
	keep_setting("push-interval", nc.push_interval_ns != c->push_interval_ns);
	keep_setting("push-protocol", nc.push_protocol != c->push_protocol);
	keep_setting("push-name", (nc.push_name == NULL) != (c->push_name == NULL) ||
					  (nc.push_name && strcmp(nc.push_name, c->push_name)));
	keep_setting("gpu-syscall-hook", nc.gpu_hook != c->gpu_hook);
	keep_setting("off-cpu", nc.offcpu != c->offcpu);
	keep_setting("off-cpu-threshold", nc.offcpu_min_ns != c->offcpu_min_ns);
	keep_setting("memory", nc.memory != c->memory);
	keep_setting("memory-sample-kib", nc.memory_sample_kib != c->memory_sample_kib);
	keep_setting("mmap", nc.mmap != c->mmap);
	fprintf(stderr, "profd: reloaded %s\n", args.path ? args.path : "(no config file)");
	sdnotify_send("READY=1\nSTATUS=configuration reloaded");
out:
	free(nc.pids);
	free(nc.gpu_devices);
	config_argv_free(&args);
}

static bool handle_signal(struct daemon *d, int sfd)
{
	struct signalfd_siginfo si;

	if (read(sfd, &si, sizeof(si)) != sizeof(si))
		return false;
	if (si.ssi_signo == SIGHUP) {
		daemon_lock_ingest(d); /* the control thread reads the settings */
		daemon_reload(d);
		daemon_unlock(d);
		return false;
	}
	log_info("profd: signal %u, detaching and exiting", si.ssi_signo);
	return true;
}

static void publish_worker_answers(struct daemon *d)
{
	uint64_t t0, cpu;

	daemon_lock_ingest(d);
	t0 = clock_mono_ns();
	cpu = thread_cpu_ns();
	worker_publish(d->worker, &d->in);
	note_cpu(d, DAEMON_CPU_ANSWERS, &cpu);
	note_max(&d->publish_ns_max, t0);
	daemon_unlock(d);
}

static int run_loop(struct daemon *d, int sfd, int tfd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), rbfd = sampler_fd(d->sampler);
	int pfd = sampler_proc_fd(d->sampler);
	int wfd = worker_fd(d->worker), cfd = d->catchup_fd;
	uint64_t deadline = d->cfg.duration_ns ? clock_mono_ns() + d->cfg.duration_ns : 0;
	bool stop = false;

	if (ep < 0 || add_fd(ep, rbfd) || add_fd(ep, pfd) || add_fd(ep, wfd) || add_fd(ep, sfd) ||
	    add_fd(ep, tfd) || add_fd(ep, cfd)) {
		log_error("profd: epoll setup failed: %s", strerror(errno));
		return -1;
	}
	while (!stop) {
		struct epoll_event evs[8];
		bool busy = clock_mono_ns() < d->busy_until_mono_ns;
		/* Idle: the tick wakes us each second. */
		int n = epoll_wait(ep, evs, 8, busy ? INGEST_BATCH_MS : -1), i;
		bool consumed = false;
		uint64_t v;

		if (n < 0 && errno != EINTR) {
			log_error("profd: epoll_wait: %s", strerror(errno));
			break;
		}
		for (i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == cfd && read(cfd, &v, sizeof(v)) < 0)
				continue;
			if ((fd == rbfd || fd == pfd || fd == cfd || fd == tfd) && !consumed)
				consume(d), consumed = true;
			if (fd == wfd)
				publish_worker_answers(d);
			else if (fd == sfd)
				stop = handle_signal(d, sfd);
			else if (fd == tfd && read(tfd, &v, sizeof(v)) > 0)
				housekeeping(d);
		}
		if (!consumed && busy &&
		    clock_mono_ns() - d->consumed_mono_ns >= INGEST_BATCH_MS * 1000000ull)
			consume(d);
		if (deadline && clock_mono_ns() >= deadline)
			stop = true;
	}
	consume(d); /* account for what is already queued */
	daemon_lock_ingest(d);
	daemon_close_jobs(d); /* a client still waiting gets its answer */
	daemon_unlock(d);
	close(ep);
	return 0;
}

int main(int argc, char **argv)
{
	struct daemon d;
	int sfd, tfd, rc = 1, err;

	memset(&d, 0, sizeof(d));
	d.start_mono_ns = clock_mono_ns();
	d.argc = argc;
	d.argv = argv;
	d.config_path = CONFIG_DEFAULT_PATH;
	d.config_flags = CONFIG_MISSING_OK;
	err = daemon_find_config(argc, argv, &d.config_path);
	if (err < 0)
		return 1;
	if (err == 1)
		d.config_flags = 0; /* a file the user named must exist */
	if (daemon_config_argv(d.config_path, d.config_flags, argc, argv, &d.args))
		return 2;
	err = daemon_parse_args(&d.args, &d.cfg);
	if (err) {
		free_args(&d);
		return err > 0 ? 0 : 2;
	}
	log_set_level(level_for(d.cfg.verbose));
	log_route_libbpf();
	if (d.cfg.check) {
		rc = daemon_check(stdout);
		free_args(&d);
		return rc;
	}
	if (check_privileges()) {
		free_args(&d);
		return 1;
	}
	warn_userfaultfd();
	sfd = make_signalfd();
	tfd = make_timer();
	if (sfd < 0 || tfd < 0) {
		fprintf(stderr, "profd: signalfd/timerfd: %s\n", strerror(errno));
		free_args(&d);
		return 1;
	}
	err = daemon_start(&d);
	if (err) {
		fprintf(stderr, "profd: failed to start: %s\n", strerror(-err));
		goto out;
	}
	fprintf(stderr, "profd: ready: %d CPUs at %u Hz, socket %s\n", sampler_ncpus(d.sampler),
		d.cfg.rate_hz, d.cfg.socket_path);
	{
		char status[128];

		snprintf(status, sizeof(status), "READY=1\nSTATUS=sampling %d CPUs at %u Hz",
			 sampler_ncpus(d.sampler), d.cfg.rate_hz);
		sdnotify_send(status);
	}
	rc = run_loop(&d, sfd, tfd) ? 1 : 0;
	sdnotify_send("STOPPING=1");
out:
	daemon_stop(&d);
	config_argv_free(&d.args); /* after daemon_stop: socket_path may point here */
	close(sfd);
	close(tfd);
	return rc;
}
