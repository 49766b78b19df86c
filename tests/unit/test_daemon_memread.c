/* test_daemon_memread: memread_run (memread.c) with reads that block on a
 * pipe nobody writes to, as a read of a page nobody supplies does: a read
 * in time hands its argument back; one past the deadline is abandoned,
 * and frees its argument itself once it returns; at MEMREAD_MAX_STUCK
 * stuck readers a further read is refused without running.  The
 * counters say each. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "memread.h"
#include "protocol.h"

struct job {
	int fd; /* read blocks here until the test writes */
	int ran;
};

static int dropped;
static pthread_mutex_t dropped_mu = PTHREAD_MUTEX_INITIALIZER;

static void job_read(void *arg)
{
	struct job *j = arg;
	char c;

	j->ran = 1;
	if (j->fd >= 0 && read(j->fd, &c, 1) < 0)
		j->ran = -1;
}

static void job_drop(void *arg)
{
	struct job *j = arg;

	close(j->fd);
	free(j);
	pthread_mutex_lock(&dropped_mu);
	dropped++;
	pthread_mutex_unlock(&dropped_mu);
}

static int dropped_now(void)
{
	int n;

	pthread_mutex_lock(&dropped_mu);
	n = dropped;
	pthread_mutex_unlock(&dropped_mu);
	return n;
}

static uint64_t stat_of(const char *name)
{
	struct proto_stats s = { 0 };
	uint64_t v = UINT64_MAX;
	size_t i;

	memread_stats(&s);
	for (i = 0; i < s.n; i++)
		if (!strcmp(s.items[i].name, name))
			v = s.items[i].value;
	proto_stats_free(&s);
	assert_int_not_equal(v, UINT64_MAX);
	return v;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A job whose read blocks until *release is written to. */
static struct job *blocking_job(int *release)
{
	struct job *j = calloc(1, sizeof(*j));
	int p[2];

	assert_non_null(j);
	assert_int_equal(pipe(p), 0);
	j->fd = p[0];
	*release = p[1];
	return j;
}

static void wait_stuck(uint64_t n)
{
	for (int i = 0; i < 500 && stat_of("memread_readers_stuck") != n; i++)
		usleep(10000);
	assert_int_equal(stat_of("memread_readers_stuck"), n);
}

static void test_in_time(void **state)
{
	struct job j = { .fd = -1 };

	(void)state;
	assert_int_equal(memread_run(job_read, job_drop, &j, 1000), 0);
	assert_int_equal(j.ran, 1); /* and j is still ours: on the stack */
	assert_int_equal(stat_of("memread_timed_out"), 0);
}

static void test_abandoned_then_returns(void **state)
{
	int release, before = dropped_now();
	struct job *j = blocking_job(&release);
	uint64_t t0 = now_ms(), took;

	(void)state;
	assert_int_equal(memread_run(job_read, job_drop, j, 100), -ETIMEDOUT);
	took = now_ms() - t0;
	assert_true(took >= 100 && took < 1000);
	assert_int_equal(stat_of("memread_readers_stuck"), 1);
	assert_int_equal(stat_of("memread_timed_out"), 1);
	assert_int_equal(dropped_now(), before);
	/* The read returns at last: the reader frees j itself. */
	assert_int_equal(write(release, "x", 1), 1);
	wait_stuck(0);
	for (int i = 0; i < 500 && dropped_now() == before; i++)
		usleep(10000);
	assert_int_equal(dropped_now(), before + 1);
	assert_int_equal(stat_of("memread_returned_late"), 1);
	close(release);
}

static void test_refused_when_too_many_stuck(void **state)
{
	int release[MEMREAD_MAX_STUCK], before = dropped_now();
	struct job spare = { .fd = -1 };
	int i;

	(void)state;
	for (i = 0; i < MEMREAD_MAX_STUCK; i++)
		assert_int_equal(memread_run(job_read, job_drop, blocking_job(&release[i]), 20),
				 -ETIMEDOUT);
	assert_int_equal(stat_of("memread_readers_stuck"), MEMREAD_MAX_STUCK);
	assert_int_equal(memread_run(job_read, job_drop, &spare, 1000), -EBUSY);
	assert_int_equal(spare.ran, 0); /* not run, and still ours */
	assert_int_equal(stat_of("memread_refused_too_many_stuck"), 1);
	for (i = 0; i < MEMREAD_MAX_STUCK; i++) {
		assert_int_equal(write(release[i], "x", 1), 1);
		close(release[i]);
	}
	wait_stuck(0);
	for (i = 0; i < 500 && dropped_now() != before + MEMREAD_MAX_STUCK; i++)
		usleep(10000);
	assert_int_equal(dropped_now(), before + MEMREAD_MAX_STUCK);
	/* Room again. */
	assert_int_equal(memread_run(job_read, job_drop, &spare, 1000), 0);
	assert_int_equal(spare.ran, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_time),
		cmocka_unit_test(test_abandoned_then_returns),
		cmocka_unit_test(test_refused_when_too_many_stuck),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
