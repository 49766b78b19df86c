/* history measured: flush time for 10,000 rows, query time over a 24 h
 * window of 100 processes, file size per million samples, what profctl
 * list reads (100 processes' day, 10,000 short-lived ones).  Prints the
 * figures and checks generous bounds.  The default run is scaled down
 * (60 s buckets, 2 rows per process and bucket); PROFD_HISTORY_BENCH=full
 * writes a day of 10 s buckets with 10 rows per process and bucket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "history.h"
#include "log.h"

#define SEC 1000000000ull
#define T0 (1700000000ull * SEC)
#define NPROCS 100
#define NFRAMES 5000
#define NSTACKS 2000
#define STACKS_PER_PROC 200
#define MAX_DEPTH 40

static char dir[256];
static char *frame_names[NFRAMES];
static uint32_t frame_kinds[NFRAMES];
struct bstack {
	uint32_t depth;
	uint32_t kinds[MAX_DEPTH];
	const char *names[MAX_DEPTH];
};
static struct bstack stacks[NSTACKS];
static uint32_t proc_stacks[NPROCS][STACKS_PER_PROC];
static struct history_proc procs[NPROCS];
static char comms[NPROCS][16];
static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Frame names shaped like real ones: Python with paths, C++, kernel. */
static void make_frames(void)
{
	int i;

	for (i = 0; i < NFRAMES; i++) {
		int r = i % 10;

		if (r < 4) {
			frame_kinds[i] = 3; /* FRAME_PYTHON */
			assert_true(asprintf(&frame_names[i],
					     "handler_%d (/usr/lib/python3/dist-packages/"
					     "pkg%d/mod%d.py:%d)",
					     i, i % 37, i % 101, i % 977) > 0);
		} else if (r < 8) {
			frame_kinds[i] = 2; /* FRAME_NATIVE */
			assert_true(asprintf(&frame_names[i],
					     "ns%d::Class%d::method%d(int, std::string const&)",
					     i % 13, i % 211, i) > 0);
		} else {
			frame_kinds[i] = 1; /* FRAME_KERNEL */
			assert_true(asprintf(&frame_names[i], "kernel_sym_%d_[k]", i) > 0);
		}
	}
}

/* Stacks share roots and prefixes, as real ones do. */
static void make_stacks(void)
{
	int i, j;

	for (i = 0; i < NSTACKS; i++) {
		struct bstack *s = &stacks[i];

		s->depth = 10 + (uint32_t)rnd(MAX_DEPTH - 10 + 1);
		for (j = 0; j < (int)s->depth; j++) {
			uint32_t f = j < 3 ? (uint32_t)j * 10 : (uint32_t)rnd(NFRAMES);

			s->kinds[j] = frame_kinds[f];
			s->names[j] = frame_names[f];
		}
	}
	for (i = 0; i < NPROCS; i++) {
		for (j = 0; j < STACKS_PER_PROC; j++)
			proc_stacks[i][j] = (uint32_t)rnd(NSTACKS);
		snprintf(comms[i], sizeof(comms[i]), "app%d", i);
		procs[i] = (struct history_proc){ .pid = 1000 + (uint32_t)i,
						  .uid = (uint32_t)i % 3,
						  .start_time = 5000 + (uint64_t)i,
						  .comm = comms[i],
						  .exe = "/usr/bin/app",
						  .first_ns = T0,
						  .last_ns = T0 + 86400 * SEC };
	}
}

static int setup(void **state)
{
	const char *base = getenv("PROFD_TEST_TMP");

	(void)state;
	if (base && *base)
		mkdir(base, 0755);
	snprintf(dir, sizeof(dir), "%s/test_history_bench.XXXXXX", base && *base ? base : "/tmp");
	log_set_level(LOG_ERROR);
	make_frames();
	make_stacks();
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];
	int i;

	(void)state;
	for (i = 0; i < NFRAMES; i++)
		free(frame_names[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* rows_per_proc rows for every process in one bucket; returns samples. */
static uint64_t add_bucket(struct history *h, uint64_t bucket, int rows_per_proc)
{
	uint64_t samples = 0;
	int p, r;

	for (p = 0; p < NPROCS; p++) {
		for (r = 0; r < rows_per_proc; r++) {
			const struct bstack *s = &stacks[proc_stacks[p][rnd(STACKS_PER_PROC)]];
			uint32_t tid = procs[p].pid + (uint32_t)rnd(4);
			struct history_row row = { .bucket_ns = bucket,
						   .tid = tid,
						   .thread = "worker",
						   .depth = s->depth,
						   .kinds = s->kinds,
						   .names = s->names,
						   .count = 1 + rnd(20) };

			assert_int_equal(history_add(h, &procs[p], &row), 0);
			samples += row.count;
		}
	}
	return samples;
}

/* dir/name, each test with its own file. */
static const char *subdir(const char *name)
{
	static char path[400];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void test_flush_10000_rows(void **state)
{
	struct history_opts o = { .bucket_ns = 10 * SEC };
	struct history *h = history_open(subdir("flush"), &o);
	double t, first = 0, sum = 0, worst = 0;
	struct history_stats st;
	int f;

	(void)state;
	assert_non_null(h);
	for (f = 0; f < 20; f++) {
		t = now_ms();
		assert_int_equal(history_begin(h), 0);
		add_bucket(h, T0 + (uint64_t)f * 10 * SEC, 100); /* 100 procs x 100 rows */
		assert_int_equal(history_commit(h), 0);
		t = now_ms() - t;
		if (f == 0)
			first = t;
		else
			sum += t;
		if (f && t > worst)
			worst = t;
	}
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.last_flush_rows, 10000);
	printf("history bench: flush of 10000 rows: first (new frames and stacks) %.1f ms, "
	       "then mean %.1f ms, worst %.1f ms (last_flush_ns %.1f ms)\n",
	       first, sum / 19, worst, (double)st.last_flush_ns / 1e6);
	history_close(h);

	/* After a restart the caches are cold: every frame is looked up. */
	h = history_open(subdir("flush"), &o);
	assert_non_null(h);
	t = now_ms();
	assert_int_equal(history_begin(h), 0);
	add_bucket(h, T0 + 100 * 10 * SEC, 100);
	assert_int_equal(history_commit(h), 0);
	printf("history bench: flush of 10000 rows after a restart (cold caches): %.1f ms\n",
	       now_ms() - t);
	assert_true(sum / 19 < 2000);
	history_close(h);
}

static double timed_query(struct history *h, const struct history_query *q, uint64_t *total,
			  size_t *nstacks)
{
	struct stackset *ss = stackset_new();
	double t = now_ms();

	assert_non_null(ss);
	assert_int_equal(history_query(h, q, ss), 0);
	t = now_ms() - t;
	*total = ss->total;
	*nstacks = ss->nstacks;
	stackset_free(ss);
	return t;
}

/* What profctl list reads of history: every process, with its weights
 * per type.  sum: the weights, then the processes. */
static int sum_listed(const struct history_proc *p, void *ctx)
{
	uint64_t *sum = ctx;
	uint32_t i;

	for (i = 0; i < p->ntotals; i++)
		sum[0] += p->totals[i].count;
	sum[1]++;
	return 0;
}

/* As profd skips the processes it listed from memory. */
static bool skip_all(const struct history_proc *p, void *ctx)
{
	(void)p;
	(void)ctx;
	return true;
}

static double timed_list(struct history *h, history_skip_fn skip, uint64_t *total,
			 uint64_t *nprocs)
{
	uint64_t sum[2] = { 0, 0 };
	double t = now_ms();

	assert_int_equal(history_procs(h, 0, skip, sum_listed, sum), 0);
	t = now_ms() - t;
	*total = sum[0];
	*nprocs = sum[1];
	return t;
}

static void test_day_of_100_processes(void **state)
{
	const char *mode = getenv("PROFD_HISTORY_BENCH");
	bool full = mode && !strcmp(mode, "full");
	uint64_t width = (full ? 10 : 60) * SEC, nb = 86400 * SEC / width, b, samples = 0, total;
	int rows = full ? 10 : 2;
	struct history_opts o = { .bucket_ns = width };
	struct history *h = history_open(subdir("day"), &o);
	struct history_prune_stats ps;
	struct history_stats st;
	uint32_t pid = procs[7].pid;
	uint64_t np;
	double t, tw;
	size_t n;

	(void)state;
	assert_non_null(h);
	tw = now_ms();
	for (b = 0; b < nb; b++) {
		assert_int_equal(history_begin(h), 0);
		samples += add_bucket(h, T0 + b * width, rows);
		assert_int_equal(history_commit(h), 0);
	}
	tw = now_ms() - tw;
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.samples, samples);
	printf("history bench: a day of %llu buckets x %d processes x %d rows = %llu rows, "
	       "%llu samples written in %.1f s\n", (unsigned long long)nb, NPROCS, rows,
	       (unsigned long long)st.sample_rows, (unsigned long long)samples, tw / 1e3);
	printf("history bench: file %.1f MiB: %.1f MiB per million rows, %.2f MiB per million "
	       "samples (%llu stacks, %llu frames)\n", (double)st.file_bytes / 1048576.0,
	       (double)st.file_bytes / 1048576.0 / ((double)st.sample_rows / 1e6),
	       (double)st.file_bytes / 1048576.0 / ((double)samples / 1e6),
	       (unsigned long long)st.stacks, (unsigned long long)st.frames);
	history_close(h);

	h = history_open(subdir("day"), &o); /* queries after a restart */
	assert_non_null(h);
	t = timed_query(h, &(struct history_query){ .since_ns = T0, .until_ns = T0 + 86400 * SEC,
						   .process_root = true }, &total, &n);
	assert_int_equal(total, samples);
	printf("history bench: query 24 h, all %d processes: %.1f ms (%zu stacks)\n", NPROCS, t,
	       n);
	t = timed_list(h, NULL, &total, &np);
	assert_int_equal(total, samples);
	printf("history bench: list of %llu processes, each type summed over its rows: %.1f ms\n",
	       (unsigned long long)np, t);
	t = timed_list(h, skip_all, &total, &np);
	printf("history bench: the same, every process skipped (listed from memory): %.1f ms\n", t);
	t = timed_query(h, &(struct history_query){ .pids = &pid, .npids = 1, .since_ns = T0,
						   .until_ns = T0 + 86400 * SEC }, &total, &n);
	printf("history bench: query 24 h, one process: %.1f ms (%zu stacks)\n", t, n);
	t = timed_query(h, &(struct history_query){ .pids = &pid, .npids = 1,
						   .since_ns = T0 + 23 * 3600 * SEC,
						   .by_thread = true }, &total, &n);
	printf("history bench: query last hour, one process, by thread: %.1f ms\n", t);
	/* Steady state: retention moves on by a minute between prunes. */
	assert_int_equal(history_prune(h, T0 + 60 * SEC, 0, &ps), 0);
	printf("history bench: prune of the oldest minute: %.1f ms (%llu rows, %.1f ms giving "
	       "pages back)\n", (double)ps.elapsed_ns / 1e6, (unsigned long long)ps.rows_deleted,
	       (double)ps.shrink_ns / 1e6);
	assert_int_equal(history_prune(h, T0 + 12 * 3600 * SEC, 0, &ps), 0);
	printf("history bench: prune of the older half: %.1f ms (%llu rows, %.1f ms giving pages "
	       "back)\n", (double)ps.elapsed_ns / 1e6, (unsigned long long)ps.rows_deleted,
	       (double)ps.shrink_ns / 1e6);
	assert_int_equal(history_stats(h, &st), 0);
	printf("history bench: after pruning: %.1f MiB, %llu rows\n",
	       (double)st.file_bytes / 1048576.0, (unsigned long long)st.sample_rows);
	assert_int_equal(history_prune(h, 0, st.file_bytes / 2, &ps), 0);
	printf("history bench: prune to half the size: %.1f ms (%llu rows, %.1f ms giving pages "
	       "back), file %.1f MiB\n", (double)ps.elapsed_ns / 1e6,
	       (unsigned long long)ps.rows_deleted, (double)ps.shrink_ns / 1e6,
	       (double)ps.bytes_after / 1048576.0);
	history_close(h);
}

/* A day of a shell's short-lived children (10,000 of them, a few CPU
 * samples and a nap each): what list reads of history for them. */
static void test_list_10000_short_processes(void **state)
{
	const struct bstack *s = &stacks[0];
	struct history *h = history_open(subdir("short"), NULL);
	uint64_t total, np, want = 0;
	struct history_proc p;
	double t;
	int i;

	(void)state;
	assert_non_null(h);
	assert_int_equal(history_begin(h), 0);
	for (i = 0; i < 10000; i++) {
		struct history_row row = { .bucket_ns = T0 + (uint64_t)i * 8 * SEC,
					   .tid = 100000 + (uint32_t)i, .thread = "sleep",
					   .depth = s->depth, .kinds = s->kinds, .names = s->names,
					   .count = 1 + (uint64_t)i % 3 };

		p = (struct history_proc){ .pid = 100000 + (uint32_t)i, .start_time = (uint64_t)i,
					   .comm = "sleep", .exe = "/usr/bin/sleep",
					   .first_ns = row.bucket_ns, .last_ns = row.bucket_ns,
					   .exited_ns = row.bucket_ns + SEC };
		assert_int_equal(history_add(h, &p, &row), 0);
		want += row.count;
		row.type = "off-cpu";
		row.count = SEC;
		assert_int_equal(history_add(h, &p, &row), 0);
		want += row.count;
	}
	assert_int_equal(history_commit(h), 0);
	history_close(h);
	h = history_open(subdir("short"), NULL);
	assert_non_null(h);
	t = timed_list(h, NULL, &total, &np);
	assert_int_equal(np, 10000);
	assert_int_equal(total, want);
	printf("history bench: list of %llu short-lived processes (cpu and off-cpu each): %.1f ms\n",
	       (unsigned long long)np, t);
	history_close(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flush_10000_rows),
		cmocka_unit_test(test_day_of_100_processes),
		cmocka_unit_test(test_list_10000_short_processes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
