/* jobs: distributed jobs found in process trees as launchers make them:
 * mpirun's ranks, torchrun's ranks with DataLoader workers under one,
 * hydra's proxy, ranks set by hand, a launcher gone first, reused pids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "jobs.h"

static const struct job *job_with(const struct job *j, size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (j[i].id == id)
			return &j[i];
	return NULL;
}

static void test_launcher_names(void **state)
{
	(void)state;
	assert_string_equal(jobs_launcher_name("mpirun", NULL), "mpirun");
	assert_string_equal(jobs_launcher_name("orterun", NULL), "mpirun");
	assert_string_equal(jobs_launcher_name("hydra_pmi_proxy", NULL), "mpiexec");
	assert_string_equal(jobs_launcher_name("python3", "torch.distributed.run"), "torchrun");
	assert_string_equal(jobs_launcher_name("python3.11", "/usr/bin/deepspeed"), "deepspeed");
	assert_null(jobs_launcher_name("python3", "train.py"));
	assert_null(jobs_launcher_name("bash", NULL));
	assert_int_equal(jobs_rank_value("12"), 12);
	assert_int_equal(jobs_rank_value(""), -1);
	assert_int_equal(jobs_rank_value("1x"), -1);
	assert_int_equal(jobs_rank_value(NULL), -1);
}

/* torchrun (100) -> ranks 101..103; rank 1 forked a worker (110) that
 * inherited RANK=1, and the worker a helper (111); an unrelated python
 * (200) and mpirun (300) with ranks 301, 302 (302 started first: the
 * table lists it before its launcher). */
static void test_torchrun_and_mpirun(void **state)
{
	const struct job_proc p[] = {
		{ 100, 1, 10, "torchrun", "torchrun", -1 },
		{ 101, 100, 11, "python3", "train.py", 0 },
		{ 102, 100, 11, "python3", "train.py", 1 },
		{ 103, 100, 11, "python3", "train.py", 2 },
		{ 110, 102, 12, "python3", "train.py", 1 },
		{ 111, 110, 13, "python3", "train.py", 1 },
		{ 200, 1, 10, "python3", "web.py", -1 },
		{ 302, 300, 31, "python3", "job.py", 1 },
		{ 300, 1, 30, "mpirun", NULL, -1 },
		{ 301, 300, 31, "python3", "job.py", 0 },
	};
	struct job *jobs;
	const struct job *j;
	size_t n;

	(void)state;
	assert_int_equal(jobs_find(p, sizeof(p) / sizeof(p[0]), &jobs, &n), 0);
	assert_int_equal(n, 2);
	j = job_with(jobs, n, 100);
	assert_non_null(j);
	assert_string_equal(j->launcher, "torchrun");
	assert_int_equal(j->nranks, 3);
	assert_int_equal(j->nworkers, 2);
	assert_int_equal(j->n, 6);
	assert_int_equal(j->m[0].role, JOB_LAUNCHER);
	assert_int_equal(p[j->m[0].proc].pid, 100);
	assert_int_equal(j->m[1].role, JOB_RANK); /* ranks in order, then workers */
	assert_int_equal(j->m[1].rank, 0);
	assert_int_equal(j->m[3].rank, 2);
	assert_int_equal(j->m[4].role, JOB_WORKER);
	assert_int_equal(j->m[4].rank, 1);
	assert_int_equal(j->m[5].role, JOB_WORKER);
	j = job_with(jobs, n, 300);
	assert_non_null(j);
	assert_string_equal(j->launcher, "mpirun");
	assert_int_equal(j->nranks, 2);
	assert_int_equal(p[j->m[1].proc].pid, 301);
	jobs_free(jobs, n);
}

/* Ranks set by hand under a shell (50): a job under it, no launcher.
 * A launcher that exited and is gone from the table: its ranks (ppid
 * 60, unknown) are a job under that pid too.  A rank whose parent pid
 * was reused by a later process is not that process's worker. */
static void test_by_hand_and_gone(void **state)
{
	const struct job_proc p[] = {
		{ 50, 1, 5, "bash", NULL, -1 },
		{ 51, 50, 6, "python3", "a.py", 0 },
		{ 52, 50, 6, "python3", "a.py", 1 },
		{ 61, 60, 7, "python3", "b.py", 0 },
		{ 70, 1, 99, "python3", "d.py", 3 }, /* started after 71: not its parent */
		{ 71, 70, 8, "python3", "c.py", 0 },
		{ 80, 1, 9, "mpirun", NULL, -1 }, /* no ranks yet: not a job */
	};
	struct job *jobs;
	const struct job *j;
	size_t n;

	(void)state;
	assert_int_equal(jobs_find(p, sizeof(p) / sizeof(p[0]), &jobs, &n), 0);
	assert_int_equal(n, 4);
	j = job_with(jobs, n, 50);
	assert_non_null(j);
	assert_string_equal(j->launcher, "");
	assert_int_equal(j->nranks, 2);
	assert_int_equal(j->n, 2); /* the shell is no member */
	j = job_with(jobs, n, 60);
	assert_non_null(j);
	assert_int_equal(j->nranks, 1);
	j = job_with(jobs, n, 70); /* 71 a rank of its own, not 70's worker */
	assert_non_null(j);
	assert_int_equal(j->nranks, 1);
	assert_int_equal(p[j->m[0].proc].pid, 71);
	j = job_with(jobs, n, 1); /* 70 itself, set by hand under init */
	assert_non_null(j);
	assert_int_equal(j->nranks, 1);
	assert_int_equal(j->nworkers, 0);
	assert_null(job_with(jobs, n, 80));
	jobs_free(jobs, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launcher_names),
		cmocka_unit_test(test_torchrun_and_mpirun),
		cmocka_unit_test(test_by_hand_and_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
