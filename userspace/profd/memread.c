/* memread.c: see memread.h.  One mutex guards every reader's state and
 * the counters; a reader and its waiter share one struct, freed by the
 * side that finishes last: the waiter when the read returned in time,
 * the reader when it had been abandoned. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "memread.h"
#include "protocol.h"

struct reader {
	void (*read)(void *arg);
	void (*drop)(void *arg);
	void *arg;
	pthread_cond_t done_cond;
	bool done, abandoned;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t stuck_now, timed_out, refused, returned_late;

static void reader_free(struct reader *r)
{
	pthread_cond_destroy(&r->done_cond);
	free(r);
}

static void *reader_main(void *p)
{
	struct reader *r = p;
	bool abandoned;

	pthread_setname_np(pthread_self(), "profd-memread");
	r->read(r->arg);
	pthread_mutex_lock(&mu);
	r->done = true;
	abandoned = r->abandoned;
	if (abandoned) {
		stuck_now--;
		returned_late++;
	} else {
		pthread_cond_signal(&r->done_cond);
	}
	pthread_mutex_unlock(&mu);
	if (abandoned) { /* nobody waits for it: its arg and r are ours */
		r->drop(r->arg);
		reader_free(r);
	}
	return NULL;
}

static int start(struct reader *r)
{
	pthread_condattr_t ca;
	pthread_attr_t ta;
	sigset_t all, old;
	pthread_t t;
	int err;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = pthread_cond_init(&r->done_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (err)
		return -err;
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	/* Signals are the main thread's to take, never a stuck reader's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, &ta, reader_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&ta);
	if (err)
		pthread_cond_destroy(&r->done_cond);
	return -err;
}

int memread_run(void (*read)(void *arg), void (*drop)(void *arg), void *arg,
		unsigned int timeout_ms)
{
	struct reader *r;
	struct timespec until;
	int err = 0;

	pthread_mutex_lock(&mu);
	if (stuck_now >= MEMREAD_MAX_STUCK) {
		refused++;
		pthread_mutex_unlock(&mu);
		return -EBUSY;
	}
	pthread_mutex_unlock(&mu);
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->read = read;
	r->drop = drop;
	r->arg = arg;
	err = start(r);
	if (err) {
		free(r);
		return err;
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&mu);
	while (!r->done && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&r->done_cond, &mu, &until);
	if (!r->done) {
		r->abandoned = true;
		stuck_now++;
		timed_out++;
	}
	err = r->done ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&mu);
	if (!err)
		reader_free(r);
	return err;
}

void memread_stats(struct proto_stats *s)
{
	pthread_mutex_lock(&mu);
	proto_stats_add(s, "memread_readers_stuck", stuck_now);
	proto_stats_add(s, "memread_timed_out", timed_out);
	proto_stats_add(s, "memread_refused_too_many_stuck", refused);
	proto_stats_add(s, "memread_returned_late", returned_late);
	pthread_mutex_unlock(&mu);
}
