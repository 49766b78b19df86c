/* test_daemon_statelock: the threading contract of daemon.h as
 * statelock.c keeps it, with this test's main thread as ingest and a
 * second thread as a client: a job runs on ingest under the lock and its
 * result comes back; ingest runs jobs at a yield in the middle of a long
 * pass; a reader gets the lock at a yield; once ingest stops, a job is
 * refused instead of waiting forever. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "statelock.h"

struct client {
	struct daemon *d;
	pthread_t ran_on;    /* the job's thread */
	bool job_had_lock;
	int err;             /* daemon_on_ingest's answer */
	atomic_bool done;
	atomic_bool read_done;
};

static int job(struct daemon *d, void *arg)
{
	struct client *c = arg;

	c->ran_on = pthread_self();
	c->job_had_lock = daemon_holds_lock(d);
	return 42;
}

static void *ask_job(void *arg)
{
	struct client *c = arg;

	c->err = daemon_on_ingest(c->d, job, c);
	atomic_store(&c->done, true);
	return NULL;
}

static void *read_state(void *arg)
{
	struct client *c = arg;

	daemon_lock_other(c->d);
	c->job_had_lock = daemon_holds_lock(c->d);
	daemon_unlock(c->d);
	atomic_store(&c->read_done, true);
	return NULL;
}

static void init(struct daemon *d)
{
	memset(d, 0, sizeof(*d));
	assert_int_equal(daemon_statelock_init(d), 0);
}

/* Ingest's loop, reduced: woken by the catch-up fd, it runs the jobs
 * under the lock (main.c: consume). */
static void ingest_until(struct daemon *d, atomic_bool *flag)
{
	struct pollfd pfd = { .fd = d->catchup_fd, .events = POLLIN };
	uint64_t v;
	int i;

	for (i = 0; i < 500 && !atomic_load(flag); i++) {
		if (poll(&pfd, 1, 10) > 0 && read(d->catchup_fd, &v, sizeof(v)) < 0)
			fail();
		daemon_lock_ingest(d);
		daemon_run_jobs(d);
		daemon_unlock(d);
	}
}

static void test_job_runs_on_ingest(void **state)
{
	struct daemon d;
	struct client c = { .d = &d };
	pthread_t t;

	(void)state;
	init(&d);
	assert_int_equal(pthread_create(&t, NULL, ask_job, &c), 0);
	ingest_until(&d, &c.done);
	pthread_join(t, NULL);
	assert_true(atomic_load(&c.done));
	assert_int_equal(c.err, 42);
	assert_true(pthread_equal(c.ran_on, pthread_self()));
	assert_true(c.job_had_lock);
}

/* A long pass holds the lock; daemon_yield between two events runs the
 * job and lets a reader in. */
static void test_yield_serves_both(void **state)
{
	struct daemon d;
	struct client c = { .d = &d };
	pthread_t tj, tr;
	int i;

	(void)state;
	init(&d);
	daemon_lock_ingest(&d);
	assert_int_equal(pthread_create(&tj, NULL, ask_job, &c), 0);
	assert_int_equal(pthread_create(&tr, NULL, read_state, &c), 0);
	for (i = 0; i < 5000 && !(atomic_load(&c.done) && atomic_load(&c.read_done)); i++) {
		daemon_yield(&d); /* between two events */
		assert_true(daemon_holds_lock(&d));
		usleep(1000);
	}
	daemon_unlock(&d);
	pthread_join(tj, NULL);
	pthread_join(tr, NULL);
	assert_int_equal(c.err, 42);
	assert_true(pthread_equal(c.ran_on, pthread_self()));
	assert_true(atomic_load(&c.read_done));
}

static void test_closed_refuses(void **state)
{
	struct daemon d;
	struct client c = { .d = &d };
	pthread_t t;

	(void)state;
	init(&d);
	daemon_lock_ingest(&d);
	daemon_close_jobs(&d);
	daemon_unlock(&d);
	assert_int_equal(pthread_create(&t, NULL, ask_job, &c), 0);
	pthread_join(t, NULL);
	assert_int_equal(c.err, -ESHUTDOWN);
	assert_false(pthread_equal(c.ran_on, pthread_self()));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_runs_on_ingest),
		cmocka_unit_test(test_yield_serves_both),
		cmocka_unit_test(test_closed_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
