/* statelock.c: how ingest and the other threads share the profile state
 * (the contract is written once, in daemon.h): the lock and its handover,
 * the catch-up a dump asks for, the jobs other threads hand to ingest
 * when they need the state changed, and the priority of the threads
 * clients and samples wait for. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "statelock.h"
#include "log.h"

void daemon_thread_check_failed(const char *what, const char *file, int line)
{
	fprintf(stderr, "profd: threading contract broken at %s:%d: %s\n", file, line, what);
	abort();
}

static void note_holder(struct daemon *d)
{
	d->lock_holder = pthread_self();
	atomic_store(&d->lock_held, true);
}

/* clk's now plus ns, for the timed waits below. */
static struct timespec deadline_after(clockid_t clk, uint64_t ns)
{
	struct timespec t;

	clock_gettime(clk, &t);
	t.tv_sec += (time_t)(ns / 1000000000ull);
	t.tv_nsec += (long)(ns % 1000000000ull);
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* Ingest holds the lock across a whole consume pass (no lock operation
 * per sample) and hands it over between two events when another thread
 * waits: that thread counts itself in lock_waiters before it blocks, and
 * ingest waits until every waiter got in before it takes the lock back,
 * so nobody starves behind a busy ring. */
void daemon_lock_ingest(struct daemon *d)
{
	DAEMON_CHECK(daemon_on_ingest_thread(d), "daemon_lock_ingest off the ingest thread");
	pthread_mutex_lock(&d->lock);
	note_holder(d);
}

void daemon_lock_other(struct daemon *d)
{
	uint64_t t0 = clock_mono_ns(), waited;

	atomic_fetch_add(&d->lock_waiters, 1);
	pthread_mutex_lock(&d->lock);
	atomic_fetch_sub(&d->lock_waiters, 1);
	note_holder(d);
	waited = clock_mono_ns() - t0;
	if (waited > d->lock_wait_ns_max)
		d->lock_wait_ns_max = waited; /* under the lock */
}

int daemon_lock_other_within(struct daemon *d, uint64_t wait_ns)
{
	uint64_t t0 = clock_mono_ns(), waited;
	struct timespec until;
	int err;

	until = deadline_after(CLOCK_REALTIME, wait_ns); /* timedlock's clock */
	atomic_fetch_add(&d->lock_waiters, 1);
	err = pthread_mutex_timedlock(&d->lock, &until);
	atomic_fetch_sub(&d->lock_waiters, 1);
	if (err)
		return -err;
	note_holder(d);
	waited = clock_mono_ns() - t0;
	if (waited > d->lock_wait_ns_max)
		d->lock_wait_ns_max = waited;
	return 0;
}

void daemon_unlock(struct daemon *d)
{
	DAEMON_CHECK_LOCKED(d);
	atomic_store(&d->lock_held, false);
	pthread_mutex_unlock(&d->lock);
}

bool daemon_holds_lock(const struct daemon *d)
{
	return atomic_load(&d->lock_held) && pthread_equal(d->lock_holder, pthread_self());
}

bool daemon_on_ingest_thread(const struct daemon *d)
{
	return !d->ingest_known || pthread_equal(d->ingest_thread, pthread_self());
}

void daemon_yield_slow(struct daemon *d)
{
	daemon_run_jobs(d);
	if (!atomic_load_explicit(&d->lock_waiters, memory_order_relaxed))
		return;
	daemon_unlock(d);
	while (atomic_load(&d->lock_waiters))
		sched_yield();
	daemon_lock_ingest(d);
}

/* ---- catch-up: a dump waits for what was sampled before it ---- */

static void wake_ingest(struct daemon *d)
{
	uint64_t one = 1;

	/* Only an overflowing counter fails, and that one wakes it too. */
	if (write(d->catchup_fd, &one, sizeof(one)) < 0)
		log_debug("profd: waking ingest: %s", strerror(errno));
}

void daemon_catch_up(struct daemon *d, unsigned timeout_ms)
{
	/* cu_cv waits on CLOCK_MONOTONIC (daemon_statelock_init). */
	struct timespec dl = deadline_after(CLOCK_MONOTONIC, (uint64_t)timeout_ms * 1000000ull);
	uint64_t target;

	pthread_mutex_lock(&d->cu_mu);
	target = d->consume_started + 1; /* a pass that starts after this call */
	pthread_mutex_unlock(&d->cu_mu);
	wake_ingest(d);
	pthread_mutex_lock(&d->cu_mu);
	while (d->consume_done < target)
		if (pthread_cond_timedwait(&d->cu_cv, &d->cu_mu, &dl))
			break;
	pthread_mutex_unlock(&d->cu_mu);
}

void daemon_consume_started(struct daemon *d, uint64_t *seq)
{
	pthread_mutex_lock(&d->cu_mu);
	*seq = ++d->consume_started;
	pthread_mutex_unlock(&d->cu_mu);
}

void daemon_consume_done(struct daemon *d, uint64_t seq)
{
	pthread_mutex_lock(&d->cu_mu);
	d->consume_done = seq;
	pthread_cond_broadcast(&d->cu_cv);
	pthread_mutex_unlock(&d->cu_mu);
}

/* ---- jobs: state changes other threads ask of ingest ---- */

struct ingest_job {
	daemon_job_fn fn;
	void *arg;
	int err;
	bool done;
	struct ingest_job *next;
};

int daemon_on_ingest(struct daemon *d, daemon_job_fn fn, void *arg)
{
	struct ingest_job j = { .fn = fn, .arg = arg };

	/* Ingest needs the lock to run it, and never waits for hist_lock
	 * (housekeeping only tries it): holding hist_lock here is fine. */
	DAEMON_CHECK(!daemon_holds_lock(d), "a job asked for with the state lock held");
	if (d->ingest_known && pthread_equal(d->ingest_thread, pthread_self()))
		return -EDEADLK; /* it would wait for itself */
	pthread_mutex_lock(&d->job_mu);
	if (d->jobs_closed) {
		pthread_mutex_unlock(&d->job_mu);
		return -ESHUTDOWN;
	}
	j.next = d->jobs;
	d->jobs = &j;
	atomic_fetch_add(&d->jobs_pending, 1);
	pthread_mutex_unlock(&d->job_mu);
	wake_ingest(d);
	pthread_mutex_lock(&d->job_mu);
	while (!j.done)
		pthread_cond_wait(&d->job_cv, &d->job_mu);
	pthread_mutex_unlock(&d->job_mu);
	return j.err;
}

void daemon_run_jobs(struct daemon *d)
{
	struct ingest_job *j, *next;

	if (!atomic_load_explicit(&d->jobs_pending, memory_order_relaxed))
		return;
	DAEMON_CHECK_LOCKED(d);
	DAEMON_CHECK(daemon_on_ingest_thread(d), "jobs run off the ingest thread");
	pthread_mutex_lock(&d->job_mu);
	j = d->jobs;
	d->jobs = NULL;
	pthread_mutex_unlock(&d->job_mu);
	for (; j; j = next) {
		next = j->next; /* j lives on its asker's stack until done */
		j->err = j->fn(d, j->arg);
		atomic_fetch_sub(&d->jobs_pending, 1);
		pthread_mutex_lock(&d->job_mu);
		j->done = true;
		pthread_cond_broadcast(&d->job_cv);
		pthread_mutex_unlock(&d->job_mu);
	}
}

void daemon_close_jobs(struct daemon *d)
{
	pthread_mutex_lock(&d->job_mu);
	d->jobs_closed = true;
	pthread_mutex_unlock(&d->job_mu);
	daemon_run_jobs(d); /* those asked for before: their askers wait */
}

int daemon_statelock_init(struct daemon *d)
{
	pthread_condattr_t ca;

	d->ingest_thread = pthread_self();
	d->ingest_known = true;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->job_mu, NULL);
	pthread_cond_init(&d->job_cv, NULL);
	pthread_mutex_init(&d->cu_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cu_cv, &ca);
	pthread_condattr_destroy(&ca);
	d->catchup_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return d->catchup_fd < 0 ? -errno : 0;
}

/* Ingest and control run a little ahead of ordinary work (nice -5): they
 * are small and bounded, and a busy machine must not delay a sample's
 * counting or a client's answer by its whole run queue.  The worker's
 * heavy jobs keep the default priority.  Best effort. */
void daemon_raise_priority(const char *thread)
{
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), DAEMON_NICE))
		log_info("profd: %s thread keeps its priority: %s", thread, strerror(errno));
}
