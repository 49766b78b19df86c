/* histtest.h: the fixture test_history.c and test_history_files.c share:
 * a scratch state directory per test, three processes (one pid with two
 * start times), a mixed Python, a syscall and a native stack, and helpers
 * to write rows and read counts back. */
#ifndef PROFD_HISTTEST_H
#define PROFD_HISTTEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "history.h"
#include "log.h"

#define SEC 1000000000ull
#define W (10 * SEC)
#define T0 (1700000000ull * SEC)

static char dir[256];

static inline int histtest_setup(void **state)
{
	const char *base = getenv("PROFD_TEST_TMP");

	(void)state;
	if (base && *base)
		mkdir(base, 0755);
	snprintf(dir, sizeof(dir), "%s/test_history.XXXXXX", base && *base ? base : "/tmp");
	log_set_level(LOG_ERROR);
	return mkdtemp(dir) ? 0 : -1;
}

static inline int histtest_teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'; rm -rf '%s'", dir, dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* One pid with two start times (python3, then bash), and another user's. */
static const struct history_proc proc_a = { .pid = 100, .start_time = 1000, .comm = "python3",
					    .exe = "/usr/bin/python3.11", .first_ns = T0,
					    .last_ns = T0 + 3 * W };
static const struct history_proc proc_a2 = { .pid = 100, .start_time = 2000, .comm = "bash",
					     .exe = "/usr/bin/bash", .first_ns = T0,
					     .last_ns = T0 + W, .exited_ns = T0 + 2 * W };
static const struct history_proc proc_b = { .pid = 200, .uid = 1000, .start_time = 500,
					    .comm = "worker", .exe = "/opt/worker",
					    .first_ns = T0, .last_ns = T0 + 3 * W };

/* A mixed Python stack, a syscall, and a plain native one (root first). */
static const uint32_t k1[] = { FRAME_NATIVE, FRAME_NATIVE, FRAME_NATIVE, FRAME_PYTHON,
			       FRAME_PYTHON };
static const char *const n1[] = { "_start", "main", "_PyEval_EvalFrameDefault", "main (app.py:10)",
				  "work (app.py:20)" };
static const uint32_t k2[] = { FRAME_NATIVE, FRAME_NATIVE, FRAME_KERNEL, FRAME_KERNEL };
static const char *const n2[] = { "_start", "main", "do_syscall_64_[k]", "ksys_read_[k]" };
static const uint32_t k3[] = { FRAME_NATIVE, FRAME_NATIVE };
static const char *const n3[] = { "_start", "compute" };

#define ROW(b, t, tn, k, n, c) \
	{ .bucket_ns = (b), .tid = (t), .thread = (tn), .depth = sizeof(k) / sizeof(k[0]), \
	  .kinds = (k), .names = (n), .count = (c) }

static inline struct history *open_hist(const struct history_opts *o)
{
	struct history *h = history_open(dir, o);

	assert_non_null(h);
	return h;
}

static inline void add(struct history *h, const struct history_proc *p, struct history_row r)
{
	assert_int_equal(history_add(h, p, &r), 0);
}

/* The count of the stack whose frame names, joined by ';', are want. */
static inline uint64_t count_of(const struct stackset *ss, const char *want)
{
	char buf[1024];
	uint64_t total = 0;
	size_t i;
	uint32_t j;

	for (i = 0; i < ss->nstacks; i++) {
		const struct ss_stack *st = &ss->stacks[i];

		buf[0] = '\0';
		for (j = 0; j < st->depth; j++) {
			if (j)
				strcat(buf, ";");
			strcat(buf, ss->frames[st->frames[j]].name);
		}
		if (!strcmp(buf, want))
			total += st->count;
	}
	return total;
}

static inline struct stackset *query(struct history *h, const struct history_query *q)
{
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	assert_int_equal(history_query(h, q, ss), 0);
	return ss;
}

static inline void write_fixture(struct history *h)
{
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_a, (struct history_row)ROW(T0, 100, "python3", k1, n1, 5));
	add(h, &proc_a, (struct history_row)ROW(T0, 101, "worker-1 (101)", k1, n1, 3));
	add(h, &proc_a, (struct history_row)ROW(T0 + W, 100, "python3", k2, n2, 7));
	add(h, &proc_a2, (struct history_row)ROW(T0, 100, "bash", k3, n3, 11));
	add(h, &proc_b, (struct history_row)ROW(T0 + 2 * W, 200, "worker", k3, n3, 13));
	assert_int_equal(history_commit(h), 0);
}

#define S1 "_start;main;_PyEval_EvalFrameDefault;main (app.py:10);work (app.py:20)"
#define S2 "_start;main;do_syscall_64_[k];ksys_read_[k]"
#define S3 "_start;compute"

static inline uint64_t window(struct history *h, uint64_t since, uint64_t until)
{
	struct stackset *ss = query(h, &(struct history_query){ .since_ns = since,
							       .until_ns = until });
	uint64_t total = ss->total;

	stackset_free(ss);
	return total;
}

static inline uint64_t file_size(const char *name)
{
	char path[600];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &sb) ? 0 : (uint64_t)sb.st_size;
}

/* Distinct stacks, so the file grows quickly. */
static inline void write_bucket(struct history *h, uint64_t bucket, int nstacks)
{
	char names[6][64];
	const char *np[6];
	uint32_t kinds[6] = { FRAME_NATIVE, FRAME_NATIVE, FRAME_PYTHON, FRAME_PYTHON,
			      FRAME_PYTHON, FRAME_KERNEL };
	int i, j;

	for (i = 0; i < nstacks; i++) {
		for (j = 0; j < 6; j++) {
			snprintf(names[j], sizeof(names[j]), "fn_%d_%d (mod%d.py:%d)", j,
				 (i * 7 + j) % 400, j, i % 50);
			np[j] = names[j];
		}
		add(h, &proc_a, (struct history_row){ .bucket_ns = bucket,
						      .tid = 100 + (uint32_t)(i % 4),
						      .thread = "t", .depth = 6, .kinds = kinds,
						      .names = np, .count = 1 });
	}
}

#define HISTTEST(fn) cmocka_unit_test_setup_teardown(fn, histtest_setup, histtest_teardown)

#endif
