/* test_aggregate_flush: a flush moves every count to history exactly
 * once, even when the process table changes while the flush lets a reader
 * in (flush_yield) or commits (flush_io): an evicted slot is refilled by
 * the table's last entry, which the flush's loop has not reached and must
 * not mark flushed. */
#include "histtest.h"

#include "aggregate.h"
#include "proctable.h"

struct fixture {
	struct aggregate agg;
	struct proctable pt;
	struct history *h;
	uint64_t total; /* counted into the profiles so far */
	int yields;
	uint32_t next_pid;
};

/* One count of weight w on pid's stack "_start;work". */
static void count(struct fixture *f, struct proc *p, uint64_t w)
{
	uint32_t frames[2];
	int64_t idx;

	frames[0] = (uint32_t)aggregate_frame(&f->agg, FRAME_NATIVE, "_start");
	frames[1] = (uint32_t)aggregate_frame(&f->agg, FRAME_NATIVE, "work");
	idx = aggregate_stack(&f->agg, p, frames, 2);
	assert_true(idx >= 0);
	assert_int_equal(aggregate_count(&f->agg, p, (uint32_t)idx, p->pid, "t", T0, w), 0);
	f->total += w;
}

static struct proc *add_proc(struct fixture *f, uint32_t pid, uint64_t w)
{
	struct proc *p = proctable_add(&f->pt, pid, 1000 + pid, "worker");

	assert_non_null(p);
	if (w)
		count(f, p, w);
	return p;
}

static uint64_t history_total(struct fixture *f)
{
	struct history_query q = { 0 };
	struct stackset *ss = stackset_new();
	uint64_t t;

	assert_non_null(ss);
	assert_int_equal(history_query(f->h, &q, ss), 0);
	t = ss->total;
	stackset_free(ss);
	return t;
}

/* The first yield: a process starts in a full table, which evicts the
 * exited one in slot 0 (already written) and moves the last entry into
 * its slot, behind the flush's loop. */
static void yield_starts_process(void *ctx)
{
	struct fixture *f = ctx;

	if (f->yields++ == 0)
		add_proc(f, f->next_pid++, 0);
}

/* Its commit: the same, with the table's entries moved after every row
 * was written. */
static void io_starts_process(void *ctx, bool begin)
{
	struct fixture *f = ctx;

	if (begin)
		add_proc(f, f->next_pid++, 0);
}

static void setup_fixture(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(aggregate_init(&f->agg, W), 0);
	proctable_init(&f->pt, 3, "/nonexistent");
	assert_int_equal(aggregate_own_procs(&f->pt), 0);
	f->h = open_hist(&(struct history_opts){ .bucket_ns = W });
	f->next_pid = 10;
	add_proc(f, 1, 5);
	add_proc(f, 2, 7);
	add_proc(f, 3, 11);
	proctable_exit(&f->pt, 1, T0); /* the one to evict */
}

static void teardown_fixture(struct fixture *f)
{
	history_close(f->h);
	proctable_free(&f->pt);
	aggregate_free(&f->agg);
}

/* Two flushes of the fixture, the first with the hooks given (either
 * may be NULL); *after_first: what history held after it. */
static void flush_twice(struct fixture *f, void (*yield)(void *),
			void (*io)(void *, bool), uint64_t *after_first)
{
	struct agg_flush_stats st;

	setup_fixture(f);
	f->agg.flush_yield = yield;
	f->agg.flush_io = io;
	f->agg.flush_yield_ctx = f;
	assert_int_equal(aggregate_flush(&f->agg, &f->pt, f->h, T0 + W, &st), 0);
	*after_first = history_total(f);
	f->agg.flush_yield = NULL;
	f->agg.flush_io = NULL;
	assert_int_equal(aggregate_flush(&f->agg, &f->pt, f->h, T0 + W, &st), 0);
}

static void test_evicted_during_yield(void **state)
{
	struct fixture f;
	uint64_t first;

	(void)state;
	flush_twice(&f, yield_starts_process, NULL, &first);
	assert_int_equal(f.pt.evicted, 1);
	/* pid 3 moved to slot 0 after slot 0 was written: the first flush
	 * missed it, the second must write it. */
	assert_true(first <= f.total);
	assert_int_equal(history_total(&f), f.total);
	teardown_fixture(&f);
}

static void test_evicted_during_commit(void **state)
{
	struct fixture f;
	uint64_t first;

	(void)state;
	flush_twice(&f, NULL, io_starts_process, &first);
	assert_int_equal(f.pt.evicted, 1);
	assert_int_equal(first, f.total);
	assert_int_equal(history_total(&f), f.total);
	teardown_fixture(&f);
}

/* Counts added between a process's rows and the commit (a reader that
 * counts, which the contract forbids, or a future change) stay unflushed
 * rather than being marked as held. */
static void yield_counts(void *ctx)
{
	struct fixture *f = ctx;

	if (f->yields++ == 0)
		count(f, f->pt.all[0], 100);
}

static void test_counted_during_yield(void **state)
{
	struct fixture f;
	uint64_t first;

	(void)state;
	flush_twice(&f, yield_counts, NULL, &first);
	assert_int_equal(history_total(&f), f.total);
	teardown_fixture(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_evicted_during_yield, histtest_setup,
						histtest_teardown),
		cmocka_unit_test_setup_teardown(test_evicted_during_commit, histtest_setup,
						histtest_teardown),
		cmocka_unit_test_setup_teardown(test_counted_during_yield, histtest_setup,
						histtest_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
