/* aggregate's timeline rings (timeline.h): events kept oldest first, the
 * per-ring and global bounds with eviction counted, samples and other
 * events in rings of their own, off-CPU blocks moved to their start,
 * and aggregate_timeline's window and stacks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aggregate.h"
#include "proctable.h"
#include "timeline.h"
#include "tlset.h"

#define T0 1700000000000000000ull
#define MS 1000000ull

static struct timeline_event ev(uint64_t at)
{
	return (struct timeline_event){.start_ns = at, .weight = 1, .tid = 1};
}

static void test_ring_bounds(void **state)
{
	struct timeline_budget b;
	struct timeline *tl = NULL, *other = NULL;
	struct timeline_event e;
	uint32_t i;

	(void)state;
	timeline_budget_init(&b);
	b.per_proc_max = 1000;
	for (i = 0; i < 2500; i++) {
		e = ev(i);
		timeline_add(&b, &tl, &e);
	}
	/* The newest 1000, oldest first; the rest counted as evicted. */
	assert_int_equal(timeline_count(tl), 1000);
	assert_int_equal(timeline_at(tl, 0)->start_ns, 1500);
	assert_int_equal(timeline_at(tl, 999)->start_ns, 2499);
	assert_int_equal(tl->evicted, 1500);
	assert_int_equal(b.evicted, 1500);
	assert_int_equal(b.events, 2500);
	assert_int_equal(b.bytes, 1000 * sizeof(struct timeline_event));
	/* The global cap: a second ring cannot grow past what is left. */
	b.max_bytes = b.bytes + 300 * sizeof(struct timeline_event);
	for (i = 0; i < 600; i++) {
		e = ev(i);
		timeline_add(&b, &other, &e);
	}
	assert_int_equal(timeline_count(other), 256);
	assert_true(b.bytes <= b.max_bytes);
	assert_int_equal(timeline_at(other, 255)->start_ns, 599);
	timeline_free(tl);
	timeline_free(other);
	assert_int_equal(b.bytes, 0);
	/* Off: nothing kept, nothing allocated. */
	b.per_proc_max = 0;
	tl = NULL;
	timeline_add(&b, &tl, &e);
	assert_null(tl);
}

/* A flood of CUDA calls leaves the samples alone, and the reverse. */
static void test_two_rings(void **state)
{
	struct timeline_budget b;
	struct timeline *tl = NULL;
	struct timeline_event e;
	uint32_t i;

	(void)state;
	timeline_budget_init(&b);
	b.per_proc_max = 300;
	for (i = 0; i < 10; i++) {
		e = ev(i);
		timeline_add(&b, &tl, &e);
	}
	for (i = 0; i < 1000; i++) {
		e = ev(100 + i);
		e.type = AGG_CUDA;
		timeline_add(&b, &tl, &e);
	}
	assert_int_equal(timeline_count(tl), 310);
	assert_int_equal(timeline_at(tl, 0)->start_ns, 0); /* samples first, all there */
	assert_int_equal(timeline_at(tl, 9)->start_ns, 9);
	assert_int_equal(timeline_at(tl, 10)->start_ns, 800); /* the newest 300 calls */
	assert_int_equal(timeline_at(tl, 309)->start_ns, 1099);
	assert_int_equal(tl->evicted, 700);
	timeline_free(tl);
	assert_int_equal(b.bytes, 0);
}

/* Past the global bound a timeline idle TIMELINE_IDLE_NS gives its
 * memory to the one that needs it (hundreds of short processes a second
 * must not starve a job started later); a recently fed one never does. */
static void test_reclaim(void **state)
{
	struct timeline_budget b;
	struct timeline *gone = NULL, *busy = NULL, *job = NULL;
	struct timeline_event e;
	uint32_t i;

	(void)state;
	timeline_budget_init(&b);
	b.per_proc_max = 1024;
	b.max_bytes = 1024 * sizeof(struct timeline_event);
	for (i = 0; i < 512; i++) { /* an exited process's, at T0 */
		e = ev(T0 + i);
		timeline_add(&b, &gone, &e);
	}
	for (i = 0; i < 512; i++) { /* a live one's, fed until T0 + 25 s */
		e = ev(T0 + 25000 * MS + i);
		timeline_add(&b, &busy, &e);
	}
	assert_int_equal(b.bytes, b.max_bytes);
	/* A job 31 s after T0: the exited process's events make room. */
	for (i = 0; i < 600; i++) {
		e = ev(T0 + 31000 * MS + i);
		timeline_add(&b, &job, &e);
	}
	assert_null(gone);
	assert_int_equal(b.reclaimed, 512);
	assert_int_equal(timeline_count(job), 512);
	assert_int_equal(timeline_at(job, 511)->start_ns, T0 + 31000 * MS + 599);
	/* The live one, fed 6 s before, keeps its events; the job wraps. */
	assert_non_null(busy);
	assert_int_equal(timeline_count(busy), 512);
	assert_int_equal(job->evicted, 88);
	assert_true(b.bytes <= b.max_bytes);
	timeline_free(busy);
	timeline_free(job);
	assert_int_equal(b.bytes, 0);
	assert_null(b.newest);
	assert_null(b.oldest);
}

static void test_types(void **state)
{
	(void)state;
	assert_true(timeline_keeps(AGG_CPU) && timeline_keeps(AGG_OFFCPU) &&
		    timeline_keeps(AGG_CUDA) && timeline_keeps(AGG_GPU_DRIVER));
	assert_false(timeline_keeps(AGG_CUDA_CALLS) || timeline_keeps(AGG_GIL) ||
		     timeline_keeps(AGG_WALL));
	assert_int_equal(timeline_start(AGG_OFFCPU, T0, 5 * MS), T0 - 5 * MS);
	assert_int_equal(timeline_start(AGG_CUDA, T0, 5 * MS), T0);
}

static int64_t stack(struct aggregate *a, struct proc *p, const char *leaf, uint32_t kind)
{
	uint32_t f[2];

	f[0] = (uint32_t)aggregate_frame(a, FRAME_NATIVE, "main");
	f[1] = (uint32_t)aggregate_frame(a, kind, leaf);
	return aggregate_stack(a, p, f, 2);
}

/* Counted through aggregate_add, dumped through aggregate_timeline. */
static void test_aggregate(void **state)
{
	struct aggregate a;
	struct proctable pt;
	struct proc *p;
	struct tlset *t;
	struct agg_query q = {0};
	int64_t s1, s2;
	int i;

	(void)state;
	assert_int_equal(aggregate_init(&a, 10ull * 1000 * MS), 0);
	proctable_init(&pt, 4, "/nonexistent");
	assert_int_equal(aggregate_own_procs(&pt), 0);
	p = proctable_add(&pt, 42, 1042, "app");
	assert_non_null(p);
	s1 = stack(&a, p, "spin", FRAME_NATIVE);
	s2 = stack(&a, p, "schedule_[k]", FRAME_KERNEL);
	for (i = 0; i < 5; i++)
		assert_int_equal(aggregate_count(&a, p, (uint32_t)s1, 43, "busy", T0 + i * MS, 1),
				 0);
	assert_int_equal(
	    aggregate_add(&a, p, AGG_OFFCPU, (uint32_t)s2, 44, "sleepy", T0 + 9 * MS, 4 * MS), 0);
	t = tlset_new();
	q.flags = VIEW_NO_KERNEL;
	q.since_ns = T0 + 2 * MS;
	assert_int_equal(aggregate_timeline(&a, p, &q, t), 0);
	tlset_sort(t);
	/* 3 samples in the window, the block (5..9 ms) without its kernel frame. */
	assert_int_equal(t->nevents, 4);
	assert_int_equal(t->nthreads, 2);
	assert_string_equal(t->threads[0].name, "busy");
	assert_int_equal(t->threads[1].tid, 44);
	assert_int_equal(t->events[2].start_ns, T0 + 4 * MS);
	assert_int_equal(t->events[3].start_ns, T0 + 5 * MS);
	assert_int_equal(t->events[3].weight, 4 * MS);
	assert_string_equal(t->types[t->events[3].type], "off-cpu");
	assert_int_equal(t->ss->stacks[t->events[3].stack].depth, 1);
	assert_int_equal(t->ss->stacks[t->events[0].stack].count, 3);
	assert_int_equal(a.timeline.events, 6);
	tlset_free(t);
	proctable_free(&pt);
	assert_int_equal(a.timeline.bytes, 0);
	aggregate_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring_bounds),
	    cmocka_unit_test(test_two_rings),
	    cmocka_unit_test(test_reclaim),
	    cmocka_unit_test(test_types),
	    cmocka_unit_test(test_aggregate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
