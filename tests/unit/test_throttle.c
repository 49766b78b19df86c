/* throttle: reading the kernel's THROTTLE/UNTHROTTLE/LOST records out of a
 * perf event's ring, including records that wrap around its end and sizes
 * no kernel would write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <linux/perf_event.h>
#include <string.h>

#include "throttle.h"

#define RING 256 /* bytes in the test's data area (a power of two) */

struct ring {
	unsigned char data[RING];
	uint64_t head;
};

/* Append a record at head, wrapping around the end as the kernel does. */
static void put(struct ring *r, uint32_t type, uint16_t size, uint64_t a, uint64_t b)
{
	unsigned char rec[64] = { 0 };
	struct perf_event_header h = { .type = type, .misc = 0, .size = size };
	uint64_t i;

	memcpy(rec, &h, sizeof(h));
	memcpy(rec + 8, &a, 8);
	memcpy(rec + 16, &b, 8);
	for (i = 0; i < size; i++)
		r->data[(r->head + i) % RING] = rec[i];
	r->head += size;
}

static void test_episodes_and_time(void **state)
{
	struct throttle_ring tr = { 0 };
	struct throttle_counts c = { 0 };
	struct ring r = { .head = 0 };

	(void)state;
	put(&r, PERF_RECORD_THROTTLE, 32, 1000, 7);
	put(&r, PERF_RECORD_UNTHROTTLE, 32, 5000, 7);
	put(&r, PERF_RECORD_THROTTLE, 32, 9000, 7);
	throttle_parse(&tr, r.data, RING, 0, r.head, &c);
	assert_int_equal(c.episodes, 2);
	assert_int_equal(c.throttled_ns, 4000);
	/* The open episode closes in a later read. */
	put(&r, PERF_RECORD_UNTHROTTLE, 32, 9500, 7);
	put(&r, PERF_RECORD_LOST, 24, 7, 3);
	throttle_parse(&tr, r.data, RING, 96, r.head, &c);
	assert_int_equal(c.episodes, 2);
	assert_int_equal(c.throttled_ns, 4500);
	assert_int_equal(c.lost, 3);
}

static void test_wraps_around(void **state)
{
	struct throttle_ring tr = { 0 };
	struct throttle_counts c = { 0 };
	struct ring r = { .head = RING - 12 }; /* header and time split by the end */

	(void)state;
	put(&r, PERF_RECORD_THROTTLE, 32, 100, 1);
	put(&r, PERF_RECORD_UNTHROTTLE, 32, 350, 1);
	throttle_parse(&tr, r.data, RING, RING - 12, r.head, &c);
	assert_int_equal(c.episodes, 1);
	assert_int_equal(c.throttled_ns, 250);
}

static void test_garbage_sizes_stop_the_read(void **state)
{
	struct throttle_ring tr = { 0 };
	struct throttle_counts c = { 0 };
	struct ring r = { .head = 0 };

	(void)state;
	put(&r, PERF_RECORD_THROTTLE, 32, 100, 1);
	put(&r, PERF_RECORD_THROTTLE, 4, 200, 1);   /* shorter than a header */
	put(&r, PERF_RECORD_THROTTLE, 32, 300, 1);  /* never reached */
	throttle_parse(&tr, r.data, RING, 0, r.head, &c);
	assert_int_equal(c.episodes, 1);
	/* A size past what was written. */
	memset(&c, 0, sizeof(c));
	r.head = 0;
	put(&r, PERF_RECORD_THROTTLE, 32, 100, 1);
	throttle_parse(&tr, r.data, RING, 0, 16, &c);
	assert_int_equal(c.episodes, 0);
	/* An unthrottle with no throttle before it adds no time. */
	memset(&c, 0, sizeof(c));
	memset(&tr, 0, sizeof(tr));
	r.head = 0;
	put(&r, PERF_RECORD_UNTHROTTLE, 32, 100, 1);
	throttle_parse(&tr, r.data, RING, 0, r.head, &c);
	assert_int_equal(c.throttled_ns, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_episodes_and_time),
		cmocka_unit_test(test_wraps_around),
		cmocka_unit_test(test_garbage_sizes_stop_the_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
