/* test_daemon_worker: the worker's lanes (worker.c) with a real ingest
 * and a real child process: an identity and a maps job run on a lane,
 * their answers wake the worker's descriptor and reach the process's
 * entry through worker_publish; an answer to a request asked again since
 * is dropped; jobs still queued when the worker is freed are let go
 * (the sanitizer run checks nothing leaks). */
#include "ingesttest.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "daemon.h"
#include "worker.h"

struct child {
	pid_t pid;
	uint64_t start;
};

static void spawn_sleeper(struct child *c)
{
	char comm[16], *exe = NULL;
	uint32_t uid, ppid;

	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	/* Until exec is done, /proc shows this test's exe. */
	for (int i = 0; i < 200; i++) {
		free(exe);
		exe = NULL;
		assert_int_equal(proc_read_identity("/proc", (uint32_t)c->pid, &c->start, &uid,
						    &ppid, comm, &exe),
				 0);
		if (strcmp(comm, "sleep") == 0)
			break;
		usleep(10000);
	}
	assert_string_equal(comm, "sleep");
	free(exe);
}

static void reap(struct child *c)
{
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
}

/* Waits for the worker's answers (up to 5 s) and hands them to ingest. */
static void publish(struct worker *w, struct ingest *in)
{
	struct pollfd pfd = { .fd = worker_fd(w), .events = POLLIN };

	assert_int_equal(poll(&pfd, 1, 5000), 1);
	worker_publish(w, in);
}

/* A sleeping child, a worker, the child's entry, and its identity asked
 * for (request 1). */
static struct proc *start(struct fixture *f, struct child *c, struct worker **w)
{
	struct proc *p;

	spawn_sleeper(c);
	assert_int_equal(worker_new(NULL, w), 0);
	p = proctable_add(&f->pt, (uint32_t)c->pid, c->start, "sleep");
	assert_non_null(p);
	assert_true(p->identity_pending);
	p->identity_req = 1;
	worker_identify(*w, (uint32_t)c->pid, c->start, 1);
	return p;
}

static void test_identity_and_maps(void **state)
{
	struct fixture *f = *state;
	struct worker *w;
	struct child c;
	struct proc *p = start(f, &c, &w);

	publish(w, &f->in);
	assert_false(p->identity_pending);
	assert_int_equal(p->uid, getuid());
	assert_non_null(p->exe);
	assert_non_null(strstr(p->exe, "sleep"));

	p->maps_pending = true;
	p->maps_req = 1;
	worker_maps(w, (uint32_t)c.pid, c.start, 1);
	publish(w, &f->in);
	assert_false(p->maps_pending);
	assert_true(p->maps_loaded);
	assert_true(p->maps.n > 0);
	worker_free(w);
	reap(&c);
}

static void test_stale_answer_dropped(void **state)
{
	struct fixture *f = *state;
	struct worker *w;
	struct child c;
	struct proc *p = start(f, &c, &w);

	p->identity_req = 2; /* asked again (an exec) before the answer came */
	publish(w, &f->in);
	assert_true(p->identity_pending);
	assert_null(p->exe);
	worker_free(w);
	reap(&c);
}

static void test_free_with_jobs_queued(void **state)
{
	struct fixture *f = *state;
	struct worker *w;
	struct child c;
	int i;

	(void)f;
	spawn_sleeper(&c);
	assert_int_equal(worker_new(NULL, &w), 0);
	for (i = 0; i < 1000; i++) {
		worker_identify(w, (uint32_t)c.pid, c.start, (uint32_t)i);
		worker_maps(w, (uint32_t)c.pid, c.start, (uint32_t)i);
	}
	worker_free(w); /* answers never published, jobs maybe still queued */
	reap(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity_and_maps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_answer_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_with_jobs_queued, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
