/* statelock.h: how ingest and the other threads share the profile state
 * (the contract is at the top of daemon.h). */
#ifndef PROFD_STATELOCK_H
#define PROFD_STATELOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"

struct daemon;

/* statelock.c: the profile-state lock (the contract at the top). */
int daemon_statelock_init(struct daemon *d); /* on the ingest thread */
void daemon_lock_ingest(struct daemon *d);
/* Other threads: to read.  Ingest lets them in at its next yield. */
void daemon_lock_other(struct daemon *d);
/* daemon_lock_other for at most wait_ns: 0, or -ETIMEDOUT. */
int daemon_lock_other_within(struct daemon *d, uint64_t wait_ns);
void daemon_unlock(struct daemon *d);
/* Ingest, between two events: run the jobs asked for, let waiters in.
 * Inline: it runs before every event, and almost always has nothing to
 * do. */
void daemon_yield_slow(struct daemon *d);
static inline void daemon_yield(struct daemon *d)
{
	if (atomic_load_explicit(&d->jobs_pending, memory_order_relaxed) ||
	    atomic_load_explicit(&d->lock_waiters, memory_order_relaxed))
		daemon_yield_slow(d);
}
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
/* Have ingest read the rings and wait (at most timeout_ms) until it has:
 * what was sampled before the call is then in the profiles.  Call with
 * no lock held. */
void daemon_catch_up(struct daemon *d, unsigned timeout_ms);

#endif
