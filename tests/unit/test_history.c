/* history: flushes written, the file closed and reopened (a restart),
 * then read back exactly: per stack, per time window, per thread,
 * Python-only, with process roots; counts adding up across flushes;
 * stacks stored once; frames kept apart by the binary they are in, path
 * and build-id intact; pruning by age and by size.  Damaged files, a
 * read-only state directory and a full disk are test_history_files.c;
 * measurements test_history_bench.c. */
#include "histtest.h"
#include "view.h"

/* The weight history_procs() handed for type, 0 when none. */
static uint64_t total_of(const struct history_proc *p, const char *type)
{
	uint32_t i;

	for (i = 0; i < p->ntotals; i++)
		if (!strcmp(p->totals[i].type, type))
			return p->totals[i].count;
	return 0;
}

static int count_procs(const struct history_proc *p, void *ctx)
{
	uint64_t *seen = ctx;

	assert_int_equal(p->ntotals, 1); /* the fixture stores cpu only */
	if (p->pid == 100 && p->start_time == 1000) {
		assert_string_equal(p->comm, "python3");
		assert_string_equal(p->exe, "/usr/bin/python3.11");
		assert_int_equal(total_of(p, "cpu"), 15);
	} else if (p->pid == 100) {
		assert_int_equal(p->exited_ns, T0 + 2 * W);
		assert_int_equal(total_of(p, "cpu"), 11);
	} else {
		assert_int_equal(p->uid, 1000);
		assert_int_equal(total_of(p, "cpu"), 13);
	}
	(*seen)++;
	return 0;
}

/* Asked before anything of the process is read. */
static bool skip_b(const struct history_proc *p, void *ctx)
{
	(void)ctx;
	assert_true(!p->rss && !p->totals);
	return p->pid == proc_b.pid;
}

/* What a process did before its exec (its parent's program between fork
 * and exec) is stored under its thread's name then, marked: --by-thread
 * shows it as such, the Python view leaves it out. */
static void test_before_exec_left_out_of_python_view(void **state)
{
	static const uint32_t pid100[] = { 100 };
	static const uint64_t start1000[] = { 1000 };
	struct history *h = open_hist(NULL);
	struct stackset *ss;

	(void)state;
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_a, (struct history_row)ROW(T0, 100, "bash" VIEW_BEFORE_EXEC " (100)", k3, n3, 4));
	add(h, &proc_a, (struct history_row)ROW(T0, 100, "python3", k1, n1, 5));
	assert_int_equal(history_commit(h), 0);

	ss = query(h, &(struct history_query){ .pids = pid100, .npids = 1,
					      .start_times = start1000, .by_thread = true });
	assert_int_equal(count_of(ss, "bash, before exec (100);" S3), 4);
	assert_int_equal(count_of(ss, "python3 (100);" S1), 5);
	stackset_free(ss);

	ss = query(h, &(struct history_query){ .pids = pid100, .npids = 1,
					      .start_times = start1000, .python_only = true,
					      .by_thread = true });
	assert_int_equal(ss->total, 5);
	assert_int_equal(count_of(ss, "python3 (100);main (app.py:10);work (app.py:20)"), 5);
	stackset_free(ss);

	ss = query(h, &(struct history_query){ .pids = pid100, .npids = 1,
					      .start_times = start1000, .python_only = true });
	assert_int_equal(ss->total, 5); /* not 9: no empty stack of bash's 4 */
	stackset_free(ss);
	history_close(h);
}

static void test_restart_roundtrip(void **state)
{
	static const uint32_t pid100[] = { 100 }, pid_all[] = { 100, 200 };
	static const uint64_t start1000[] = { 1000 };
	struct history *h = open_hist(NULL);
	struct stackset *ss;
	uint64_t seen = 0;

	(void)state;
	write_fixture(h);
	history_close(h);
	h = open_hist(NULL); /* the restart */

	ss = query(h, &(struct history_query){ .pids = pid100, .npids = 1 });
	assert_int_equal(count_of(ss, S1), 8);
	assert_int_equal(count_of(ss, S2), 7);
	assert_int_equal(count_of(ss, S3), 11); /* both instances of pid 100 */
	assert_int_equal(ss->total, 26);
	stackset_free(ss);

	ss = query(h, &(struct history_query){ .pids = pid100, .npids = 1,
					      .start_times = start1000 });
	assert_int_equal(ss->total, 15);
	assert_int_equal(count_of(ss, S3), 0);
	stackset_free(ss);

	ss = query(h, &(struct history_query){ .pids = pid100, .npids = 1,
					      .start_times = start1000, .by_thread = true });
	assert_int_equal(count_of(ss, "python3 (100);" S1), 5);
	assert_int_equal(count_of(ss, "worker-1 (101);" S1), 3);
	assert_int_equal(count_of(ss, "python3 (100);" S2), 7);
	stackset_free(ss);

	ss = query(h, &(struct history_query){ .pids = pid100, .npids = 1,
					      .start_times = start1000, .python_only = true });
	assert_int_equal(count_of(ss, "main (app.py:10);work (app.py:20)"), 8);
	assert_int_equal(count_of(ss, ""), 7); /* no Python frames: an empty stack */
	stackset_free(ss);

	ss = query(h, &(struct history_query){ .pids = pid_all, .npids = 2, .process_root = true });
	assert_int_equal(count_of(ss, "python3 (100);" S1), 8);
	assert_int_equal(count_of(ss, "bash (100);" S3), 11);
	assert_int_equal(count_of(ss, "worker (200);" S3), 13);
	assert_int_equal(ss->total, 39);
	stackset_free(ss);

	/* Every process, but only those of uid 1000 (a non-root caller). */
	ss = query(h, &(struct history_query){ .by_uid = true, .uid = 1000, .process_root = true,
					      .by_thread = true });
	assert_int_equal(ss->total, 13);
	assert_int_equal(count_of(ss, "worker (200);worker (200);" S3), 13);
	stackset_free(ss);

	/* Another type has nothing stored. */
	ss = query(h, &(struct history_query){ .type = "cuda" });
	assert_int_equal(ss->total, 0);
	stackset_free(ss);

	assert_int_equal(history_procs(h, 0, NULL, count_procs, &seen), 0);
	assert_int_equal(seen, 3);
	seen = 0;
	assert_int_equal(history_procs(h, T0 + 2 * W, NULL, count_procs, &seen), 0);
	assert_int_equal(seen, 2); /* pid 100/2000's last sample was at T0 + W */
	seen = 0;
	assert_int_equal(history_procs(h, 0, skip_b, count_procs, &seen), 0);
	assert_int_equal(seen, 2);
	history_close(h);
}

/* A bucket [start, start + W) counts when it overlaps [since, until),
 * as aggregate_dump() decides for memory. */
static void test_time_windows(void **state)
{
	struct history *h = open_hist(NULL);

	(void)state;
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_a, (struct history_row)ROW(T0, 100, "t", k1, n1, 1));
	add(h, &proc_a, (struct history_row)ROW(T0 + W, 100, "t", k1, n1, 2));
	add(h, &proc_a, (struct history_row)ROW(T0 + 2 * W, 100, "t", k1, n1, 4));
	assert_int_equal(history_commit(h), 0);
	history_close(h);
	h = open_hist(NULL);
	assert_int_equal(window(h, 0, 0), 7);
	assert_int_equal(window(h, T0 + W, T0 + 2 * W), 2);
	assert_int_equal(window(h, T0 + W - 1, T0 + 2 * W), 3);
	assert_int_equal(window(h, T0 + W, 0), 6);
	assert_int_equal(window(h, 0, T0 + W), 1);
	assert_int_equal(window(h, 0, T0 + W + 1), 3);
	assert_int_equal(window(h, T0 + 3 * W, 0), 0);
	assert_int_equal(window(h, 0, T0), 0);
	history_close(h);
}

/* --bucket changed between runs: each row keeps its own width. */
static void test_bucket_width_change(void **state)
{
	struct history_opts o60 = { .bucket_ns = 60 * SEC };
	struct history *h = open_hist(NULL);

	(void)state;
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_a, (struct history_row)ROW(T0, 100, "t", k1, n1, 1));
	add(h, &proc_a, (struct history_row)ROW(T0 + W, 100, "t", k1, n1, 2));
	assert_int_equal(history_commit(h), 0);
	history_close(h);
	h = open_hist(&o60);
	/* T0 is 20 s past a minute: this row's bucket is [T0 + 40 s, T0 + 100 s). */
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_a, (struct history_row)ROW(T0 + 60 * SEC, 100, "t", k1, n1, 4));
	assert_int_equal(history_commit(h), 0);
	assert_int_equal(window(h, 0, 0), 7);
	assert_int_equal(window(h, T0 + W + 1, 0), 6);
	assert_int_equal(window(h, 0, T0 + 40 * SEC), 3);
	assert_int_equal(window(h, 0, T0 + 40 * SEC + 1), 7);
	assert_int_equal(window(h, T0 + 99 * SEC, 0), 4);
	assert_int_equal(window(h, T0 + 100 * SEC, 0), 0);
	history_close(h);
}

static void test_counts_add_up(void **state)
{
	struct history *h = open_hist(NULL);
	struct history_stats st;
	struct stackset *ss;
	uint64_t c;

	(void)state;
	for (c = 1; c <= 3; c++) {
		assert_int_equal(history_begin(h), 0);
		add(h, &proc_a, (struct history_row)ROW(T0, 100, "t", k1, n1, c));
		assert_int_equal(history_commit(h), 0);
		if (c == 2) { /* across a restart too */
			history_close(h);
			h = open_hist(NULL);
		}
	}
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(count_of(ss, S1), 6);
	assert_int_equal(ss->nstacks, 1);
	stackset_free(ss);
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.sample_rows, 1);
	assert_int_equal(st.samples, 6);
	assert_int_equal(st.procs, 1);
	assert_int_equal(st.last_flush_rows, 1);

	/* Malformed rows are refused alone; the flush goes on. */
	assert_int_equal(history_begin(h), 0);
	assert_int_equal(history_add(h, &proc_a, &(struct history_row){ .depth = 1 }), -EINVAL);
	add(h, &proc_a, (struct history_row)ROW(T0, 100, "t", k1, n1, 100));
	assert_int_equal(history_add(h, &proc_a, &(struct history_row){
		.depth = 2, .kinds = (const uint32_t[]){ 2, FRAME_KIND_MAX },
		.names = n3, .count = 1 }), -EINVAL);
	assert_int_equal(history_add(h, &proc_a, &(struct history_row){
		.type = "a-type-name-much-too-long-to-store", .count = 1 }), -ENAMETOOLONG);
	assert_int_equal(history_add(h, &proc_a, &(struct history_row){
		.count = UINT64_MAX }), -ERANGE);
	assert_int_equal(history_commit(h), 0);
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.rows_refused, 4);
	assert_int_equal(window(h, 0, 0), 106);

	/* A rolled back flush leaves nothing behind. */
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_b, (struct history_row)ROW(T0, 1, "t", k2, n2, 1000));
	history_rollback(h);
	assert_int_equal(window(h, 0, 0), 106);
	assert_int_equal(history_begin(h), 0); /* and the caches forgot its ids */
	add(h, &proc_b, (struct history_row)ROW(T0, 1, "t", k2, n2, 1));
	assert_int_equal(history_commit(h), 0);
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(count_of(ss, S2), 1);
	assert_int_equal(ss->total, 107);
	stackset_free(ss);
	history_close(h);
}

/* The same stack in 1000 buckets over 10 flushes, with caches too small
 * to help and a restart halfway: one stacks row, one row per frame. */
static void test_dedupe(void **state)
{
	struct history_opts o = { .frame_cache_max = 2, .stack_cache_max = 1 };
	struct history *h = open_hist(&o);
	struct history_stats st;
	struct stackset *ss;
	int f, i;

	(void)state;
	for (f = 0; f < 10; f++) {
		assert_int_equal(history_begin(h), 0);
		for (i = 0; i < 100; i++) {
			uint64_t b = T0 + (uint64_t)(f * 100 + i) * W;

			add(h, &proc_a, (struct history_row)ROW(b, 100, "t", k1, n1, 1));
			add(h, &proc_b, (struct history_row)ROW(b, 200, "t", k3, n3, 1));
		}
		assert_int_equal(history_commit(h), 0);
		if (f == 4) {
			history_close(h);
			h = open_hist(&o);
		}
	}
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.stacks, 2);
	assert_int_equal(st.frames, 5 + 1 + 1); /* n1, "compute", thread "t" */
	assert_int_equal(st.sample_rows, 2000);
	assert_int_equal(st.samples, 2000);
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(count_of(ss, S1), 1000);
	assert_int_equal(count_of(ss, S3), 1000);
	stackset_free(ss);
	history_close(h);
}

static void test_prune_age(void **state)
{
	/* "Last used" exact to the bucket, so unused stacks go at once. */
	struct history_opts o = { .mark_every_ns = 1 };
	struct history *h = open_hist(&o);
	struct history_prune_stats ps;
	struct history_stats st;
	struct stackset *ss;
	int i;

	(void)state;
	assert_int_equal(history_begin(h), 0);
	for (i = 0; i < 10; i++)
		add(h, &proc_a, (struct history_row)ROW(T0 + (uint64_t)i * W, 100, "t", k1, n1, 1));
	/* Only old samples: this process, its stack and "compute" go. */
	add(h, &proc_b, (struct history_row)ROW(T0, 200, "old", k3, n3, 1));
	assert_int_equal(history_commit(h), 0);

	/* Buckets that ended by T0 + 5W: the first five. */
	assert_int_equal(history_prune(h, T0 + 5 * W, 0, &ps), 0);
	assert_int_equal(ps.rows_deleted, 6);
	assert_int_equal(ps.samples_deleted, 6);
	assert_int_equal(ps.procs_deleted, 1);
	assert_int_equal(ps.stacks_deleted, 1);
	assert_int_equal(ps.frames_deleted, 2); /* "compute" and thread "old" */
	assert_int_equal(ps.oldest_kept_ns, T0 + 5 * W);
	assert_int_equal(window(h, 0, 0), 5);
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.sample_rows, 5);
	assert_int_equal(st.procs, 1);
	assert_int_equal(st.rows_pruned, 6);

	/* The deleted stack written again must get a live id, not a stale
	 * cached one. */
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_b, (struct history_row)ROW(T0 + 20 * W, 200, "old", k3, n3, 9));
	add(h, &proc_b, (struct history_row)ROW(T0 + 20 * W, 200, "old", k2, n2, 4));
	assert_int_equal(history_commit(h), 0);
	ss = query(h, &(struct history_query){ .process_root = true });
	assert_int_equal(count_of(ss, "worker (200);" S3), 9);
	assert_int_equal(count_of(ss, "worker (200);" S2), 4);
	assert_int_equal(ss->total, 5 + 9 + 4);
	stackset_free(ss);
	history_close(h);
}

/* A row that brings its stack's memo skips the frames while the memo
 * holds; it stops holding when a frame is due for its "last used" mark
 * (then every frame is looked up and marked again, so a prune keeps
 * them), and when ids may have changed (a rollback, here). */
static void test_stack_memo(void **state)
{
	struct history_opts o = { .mark_every_ns = 3 * W };
	struct history *h = open_hist(&o);
	struct history_stack_memo m1 = { 0 }, m3 = { 0 };
	struct history_prune_stats ps;
	struct history_stats st;
	struct history_row r;
	struct stackset *ss;
	int i;

	(void)state;
	for (i = 0; i < 10; i++) { /* a flush a bucket, as the daemon's */
		r = (struct history_row)ROW(T0 + (uint64_t)i * W, 100, "t", k1, n1, 1);
		r.memo = &m1;
		assert_int_equal(history_begin(h), 0);
		add(h, &proc_a, r);
		assert_int_equal(history_commit(h), 0);
	}
	/* Looked up in full at 0, 4W and 8W (3W after the last mark). */
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.stack_memo_hits, 7);
	assert_int_equal(st.stacks, 1);

	/* The prune keeps the frames of a stack still written (marked at 8W). */
	assert_int_equal(history_prune(h, T0 + 5 * W, 0, &ps), 0);
	assert_int_equal(ps.frames_deleted, 0);
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(count_of(ss, S1), 5);
	stackset_free(ss);

	/* A stack first written in a transaction that rolls back: its id is
	 * gone with it, and the memo filled then is not used again. */
	r = (struct history_row)ROW(T0 + 10 * W, 200, "t", k3, n3, 4);
	r.memo = &m3;
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_b, r);
	history_rollback(h);
	assert_true(m3.id > 0);
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_b, r);
	assert_int_equal(history_commit(h), 0);
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(count_of(ss, S3), 4);
	assert_int_equal(ss->total, 5 + 4);
	stackset_free(ss);
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.stack_memo_hits, 7);
	history_close(h);
}

/* A row's "stored" hint only changes which statement goes first: a cell
 * said stored that is not (its bucket pruned, a new file) is inserted,
 * one said new that is stored is added to. */
static void test_stored_hint(void **state)
{
	struct history *h = open_hist(NULL);
	struct history_row r = ROW(T0, 100, "t", k3, n3, 2);
	struct history_stats st;
	struct stackset *ss;

	(void)state;
	r.stored = true; /* wrong: nothing stored yet */
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_a, r);
	assert_int_equal(history_commit(h), 0);
	r.stored = true; /* right */
	r.count = 3;
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_a, r);
	r.stored = false; /* wrong: stored */
	r.count = 4;
	add(h, &proc_a, r);
	assert_int_equal(history_commit(h), 0);
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.sample_rows, 1);
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(count_of(ss, S3), 2 + 3 + 4);
	stackset_free(ss);
	history_close(h);
}

/* history_procs() hands each process's RSS points, oldest first. */
static int rss_of_a(const struct history_proc *p, void *ctx)
{
	uint64_t *out = ctx;
	uint32_t i;

	if (p->pid != proc_a.pid || p->start_time != proc_a.start_time)
		return 0;
	out[0] = p->nrss;
	for (i = 0; i < p->nrss && i < 8; i++)
		out[1 + i] = p->rss[2 * i + 1];
	return 0;
}

/* RSS points: stored with their process, read back oldest first, pruned
 * with the buckets as old as they are. */
static void test_rss_points(void **state)
{
	struct history_opts o = { .mark_every_ns = 1 };
	struct history *h = open_hist(&o);
	struct history_prune_stats ps;
	uint64_t got[9] = { 0 };
	int i;

	(void)state;
	assert_int_equal(history_begin(h), 0);
	for (i = 0; i < 10; i++) {
		add(h, &proc_a, (struct history_row)ROW(T0 + (uint64_t)i * W, 100, "t", k1, n1, 1));
		assert_int_equal(history_add_rss(h, &proc_a, T0 + (uint64_t)i * W + 1,
						 (uint64_t)i << 20), 0);
	}
	assert_int_equal(history_add_rss(h, &proc_a, T0, (uint64_t)INT64_MAX + 1), -ERANGE);
	assert_int_equal(history_commit(h), 0);
	assert_int_equal(history_procs(h, 0, NULL, rss_of_a, got), 0);
	assert_int_equal(got[0], 10);
	for (i = 0; i < 8; i++)
		assert_int_equal(got[1 + i], (uint64_t)i << 20);
	/* Buckets that ended by T0 + 5W go, and the points of their time. */
	assert_int_equal(history_prune(h, T0 + 5 * W, 0, &ps), 0);
	memset(got, 0, sizeof(got));
	assert_int_equal(history_procs(h, 0, NULL, rss_of_a, got), 0);
	assert_int_equal(got[0], 5);
	assert_int_equal(got[1], 5ull << 20);
	history_close(h);
}

/* A row of type ty (NULL: cpu) for proc_a. */
static void add_typed(struct history *h, uint64_t bucket, const char *ty, uint64_t count)
{
	struct history_row r = ROW(bucket, 100, "t", k1, n1, count);

	r.type = ty;
	add(h, &proc_a, r);
}

static int totals_of_a(const struct history_proc *p, void *ctx)
{
	struct history_proc *out = ctx;
	static struct history_total keep[HISTORY_TOTALS_MAX];

	if (p->pid != proc_a.pid || p->start_time != proc_a.start_time)
		return 0;
	memcpy(keep, p->totals, p->ntotals * sizeof(*keep));
	*out = (struct history_proc){ .totals = keep, .ntotals = p->ntotals };
	return 0;
}

/* history_procs() hands each type's weights apart, in its own unit, as
 * list shows them: CPU samples are not added to nanoseconds or bytes;
 * one type over two bucket widths is one total; mmap's unmaps subtract;
 * a prune takes its buckets' weights away. */
static void test_proc_totals(void **state)
{
	struct history_opts o2w = { .bucket_ns = 2 * W };
	struct history *h = open_hist(NULL);
	struct history_prune_stats ps;
	struct history_proc got;

	(void)state;
	assert_int_equal(history_begin(h), 0);
	add_typed(h, T0, NULL, 5);
	add_typed(h, T0, "off-cpu", 3 * SEC);
	add_typed(h, T0, "mmap", 3ull << 20);
	add_typed(h, T0 + W, "mmap", -(1ull << 20));
	assert_int_equal(history_commit(h), 0);
	history_close(h);
	h = open_hist(&o2w); /* a second cpu series */
	assert_int_equal(history_begin(h), 0);
	add_typed(h, T0 + 2 * W, "cpu", 4);
	assert_int_equal(history_commit(h), 0);

	memset(&got, 0, sizeof(got));
	assert_int_equal(history_procs(h, 0, NULL, totals_of_a, &got), 0);
	assert_int_equal(got.ntotals, 3);
	assert_int_equal(total_of(&got, "cpu"), 9);
	assert_int_equal(total_of(&got, "off-cpu"), 3 * SEC);
	assert_int_equal(total_of(&got, "mmap"), 2ull << 20);
	/* The first bucket goes: its cpu, off-cpu and mapped bytes. */
	assert_int_equal(history_prune(h, T0 + W, 0, &ps), 0);
	memset(&got, 0, sizeof(got));
	assert_int_equal(history_procs(h, 0, NULL, totals_of_a, &got), 0);
	assert_int_equal(got.ntotals, 2);
	assert_int_equal(total_of(&got, "cpu"), 4);
	assert_int_equal(total_of(&got, "off-cpu"), 0);
	assert_int_equal((int64_t)total_of(&got, "mmap"), -(1ll << 20));
	history_close(h);
}

static void test_prune_size_cap(void **state)
{
	const uint64_t cap = 512 * 1024;
	struct history *h = open_hist(NULL);
	struct history_prune_stats ps;
	struct history_stats st;
	uint64_t b = T0, newest;
	struct stackset *ss;

	(void)state;
	do {
		assert_int_equal(history_begin(h), 0);
		write_bucket(h, b, 300);
		assert_int_equal(history_commit(h), 0);
		newest = b;
		b += W;
		assert_int_equal(history_stats(h, &st), 0);
	} while (st.file_bytes < 3 * cap);
	assert_int_equal(history_prune(h, 0, cap, &ps), 0);
	assert_true(ps.rows_deleted > 0);
	assert_true(ps.bytes_before >= 3 * cap);
	assert_true(ps.bytes_after <= cap);
	assert_true(ps.oldest_kept_ns > T0);
	assert_true(file_size("history.db") <= cap);
	assert_true(file_size("history.db-wal") == 0);
	assert_int_equal(history_stats(h, &st), 0);
	assert_true(st.file_bytes <= cap);
	assert_int_equal(st.bytes_pruned, ps.bytes_before - ps.bytes_after);
	/* The newest bucket is whole; the oldest is gone. */
	assert_int_equal(window(h, newest, 0), 300);
	assert_int_equal(window(h, 0, T0 + 1), 0);
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(ss->total, st.samples);
	stackset_free(ss);
	history_close(h);
	/* Still a good file after a restart. */
	h = open_hist(NULL);
	assert_int_equal(window(h, newest, 0), 300);
	history_close(h);
}

static int64_t module(struct stackset *d, const char *path, const char *build_id)
{
	int64_t m = stackset_module(d, path, build_id);

	assert_true(m > 0);
	return m;
}

static uint32_t frame_in(struct stackset *d, uint32_t kind, const char *name, int64_t m)
{
	int64_t id = stackset_intern_in(d, kind, name, (uint32_t)m);

	assert_true(id >= 0);
	return (uint32_t)id;
}

/* A row as aggregate_flush.c makes one: frames from the daemon's
 * dictionary, each with its module from stackset_frame_module(). */
static void add_from(struct history *h, const struct history_proc *p, const struct stackset *d,
		     const uint32_t *ids, uint32_t depth, uint64_t bucket, uint64_t count)
{
	const struct ss_module *mods[8];
	const char *names[8];
	uint32_t kinds[8], i;

	assert_true(depth <= 8);
	for (i = 0; i < depth; i++) {
		kinds[i] = d->frames[ids[i]].kind;
		names[i] = d->frames[ids[i]].name;
		mods[i] = stackset_frame_module(d, ids[i]);
	}
	assert_int_equal(history_add_in(h, p, &(struct history_row){
		.bucket_ns = bucket, .tid = p->pid, .thread = "t", .depth = depth, .kinds = kinds,
		.names = names, .count = count }, mods), 0);
}

/* The count of stacks whose leaf is name in the binary path (NULL: in
 * none) with this build-id. */
static uint64_t leaf_count(const struct stackset *ss, const char *name, const char *path,
			   const char *build_id)
{
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < ss->nstacks; i++) {
		const struct ss_stack *st = &ss->stacks[i];
		uint32_t leaf = st->depth ? st->frames[st->depth - 1] : 0;
		const struct ss_module *m = stackset_frame_module(ss, leaf);

		if (!st->depth || strcmp(ss->frames[leaf].name, name) || !m != !path)
			continue;
		if (!m || (!strcmp(m->path, path) && !strcmp(m->build_id, build_id)))
			total += st->count;
	}
	return total;
}

#define APP_ID "0123456789abcdef0123456789abcdef01234567"
#define LIBC_ID "ffeeddccbbaa99887766554433221100ffeeddcc"
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"

/* memcpy in libc, in a library without a build-id and in no binary:
 * three frames, through two flushes with a restart and caches too small
 * to help, read back as memory would dump them. */
static void test_modules_roundtrip(void **state)
{
	struct history_opts o = { .frame_cache_max = 1, .stack_cache_max = 1 };
	struct stackset *d = stackset_new(), *mem = stackset_new(), *ss;
	struct history *h = open_hist(&o);
	int64_t app, libc, foo;
	uint32_t s[3][3], ids[3];
	struct history_stats st;
	size_t i, f;

	(void)state;
	assert_true(d && mem);
	app = module(d, "/usr/bin/app", APP_ID);
	libc = module(d, LIBC, LIBC_ID);
	foo = module(d, "/opt/app/libfoo.so", "");
	for (i = 0; i < 3; i++) {
		s[i][0] = frame_in(d, FRAME_NATIVE, "_start", app);
		s[i][1] = frame_in(d, FRAME_NATIVE, "main", app);
	}
	s[0][2] = frame_in(d, FRAME_NATIVE, "memcpy", libc);
	s[1][2] = frame_in(d, FRAME_NATIVE, "memcpy", foo);
	s[2][2] = frame_in(d, FRAME_NATIVE, "memcpy", 0);
	for (f = 0; f < 2; f++) {
		assert_int_equal(history_begin(h), 0);
		for (i = 0; i < 3; i++)
			add_from(h, &proc_a, d, s[i], 3, T0 + f * W, 3 + i);
		assert_int_equal(history_commit(h), 0);
		history_close(h); /* a restart after each flush */
		h = open_hist(&o);
	}
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.modules, 3);
	assert_int_equal(st.frames, 2 + 3 + 1); /* _start, main, memcpy x3, thread "t" */
	assert_int_equal(st.stacks, 3);

	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(count_of(ss, "_start;main;memcpy"), 2 * (3 + 4 + 5));
	assert_int_equal(leaf_count(ss, "memcpy", LIBC, LIBC_ID), 6);
	assert_int_equal(leaf_count(ss, "memcpy", "/opt/app/libfoo.so", ""), 8);
	assert_int_equal(leaf_count(ss, "memcpy", NULL, NULL), 10);
	assert_int_equal(ss->nmodules, 3);

	/* What memory would dump: the same stacks, frame for frame. */
	for (i = 0; i < 3; i++) {
		for (f = 0; f < 3; f++)
			ids[f] = (uint32_t)stackset_copy_frame(mem, d, s[i][f]);
		assert_int_equal(stackset_add(mem, ids, 3, 2 * (3 + i)), 0);
	}
	assert_int_equal(ss->nstacks, mem->nstacks);
	for (i = 0; i < ss->nstacks; i++)
		assert_int_equal(stackset_count_like(mem, ss, i), ss->stacks[i].count);
	stackset_free(ss);

	/* A module must have a path. */
	assert_int_equal(history_begin(h), 0);
	assert_int_equal(history_add_in(h, &proc_a, &(struct history_row){
		.depth = 1, .kinds = k3, .names = n3, .count = 1 },
		(const struct ss_module *const[]){ &(struct ss_module){ 0 } }), -EINVAL);
	assert_int_equal(history_commit(h), 0);
	stackset_free(mem);
	stackset_free(d);
	history_close(h);
}

/* A module goes with the last frame in it, and comes back with a live id. */
static void test_prune_modules(void **state)
{
	struct history_opts o = { .mark_every_ns = 1 };
	struct stackset *d = stackset_new(), *ss;
	struct history *h = open_hist(&o);
	struct history_prune_stats ps;
	struct history_stats st;
	int64_t app, old;
	uint32_t keep[2], gone[2];
	int i;

	(void)state;
	assert_non_null(d);
	app = module(d, "/usr/bin/app", APP_ID);
	old = module(d, "/opt/old/libold.so", "aa");
	keep[0] = gone[0] = frame_in(d, FRAME_NATIVE, "_start", app);
	keep[1] = frame_in(d, FRAME_NATIVE, "compute", app);
	gone[1] = frame_in(d, FRAME_NATIVE, "compute", old);
	assert_int_equal(history_begin(h), 0);
	for (i = 0; i < 10; i++)
		add_from(h, &proc_a, d, keep, 2, T0 + (uint64_t)i * W, 1);
	add_from(h, &proc_a, d, gone, 2, T0, 1);
	assert_int_equal(history_commit(h), 0);

	assert_int_equal(history_prune(h, T0 + 5 * W, 0, &ps), 0);
	assert_int_equal(ps.frames_deleted, 1); /* compute in libold */
	assert_int_equal(ps.modules_deleted, 1);
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.modules, 1);

	assert_int_equal(history_begin(h), 0);
	add_from(h, &proc_a, d, gone, 2, T0 + 20 * W, 7);
	assert_int_equal(history_commit(h), 0);
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(leaf_count(ss, "compute", "/opt/old/libold.so", "aa"), 7);
	assert_int_equal(leaf_count(ss, "compute", "/usr/bin/app", APP_ID), 5);
	stackset_free(ss);
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.modules, 2);
	stackset_free(d);
	history_close(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		HISTTEST(test_restart_roundtrip),
		HISTTEST(test_before_exec_left_out_of_python_view),
		HISTTEST(test_time_windows),
		HISTTEST(test_bucket_width_change),
		HISTTEST(test_counts_add_up),
		HISTTEST(test_dedupe),
		HISTTEST(test_prune_age),
		HISTTEST(test_stack_memo),
		HISTTEST(test_stored_hint),
		HISTTEST(test_prune_size_cap),
		HISTTEST(test_rss_points),
		HISTTEST(test_proc_totals),
		HISTTEST(test_modules_roundtrip),
		HISTTEST(test_prune_modules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
