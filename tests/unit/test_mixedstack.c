/* mixed_merge: Python frames replace the eval-loop frames they ran in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "mixedstack.h"

/* Native ids < 100, eval frames are 50, Python ids >= 100. */
static void check_in(struct mixed_in *in, const uint32_t *want, uint32_t nwant)
{
	bool is_eval[32];
	uint32_t out[64], n, i;

	for (i = 0; i < in->nnative; i++)
		is_eval[i] = in->native[i] == 50;
	in->is_eval = is_eval;
	n = mixed_merge(in, out, 64);
	assert_int_equal(n, nwant);
	for (i = 0; i < n; i++)
		assert_int_equal(out[i], want[i]);
}

static void check(const uint32_t *native, uint32_t nn, const uint32_t *py, const bool *entry,
		  uint32_t np, const uint32_t *want, uint32_t nwant)
{
	struct mixed_in in = {
		.native = native, .nnative = nn, .py = py, .py_entry = entry, .npy = np,
	};

	check_in(&in, want, nwant);
}

/* The Python walk kept the outermost frames (leaf side cut); 99 marks the
 * cut. */
static void check_cut(const uint32_t *native, uint32_t nn, bool native_cut, const uint32_t *py,
		      const bool *entry, uint32_t np, const uint32_t *want, uint32_t nwant)
{
	struct mixed_in in = {
		.native = native, .nnative = nn, .py = py, .py_entry = entry, .npy = np,
		.py_cut = true, .native_cut = native_cut, .cut_marker = 99,
	};

	check_in(&in, want, nwant);
}

static void test_one_eval_per_group(void **state)
{
	/* main -> eval -> sorted(C) -> eval -> leaf(C) */
	const uint32_t native[] = { 1, 2, 50, 7, 50, 9 };
	const uint32_t py[] = { 100, 101, 102, 103 };
	const bool entry[] = { true, false, true, false };
	const uint32_t want[] = { 1, 2, 100, 101, 7, 102, 103, 9 };

	(void)state;
	check(native, 6, py, entry, 4, want, 8);
}

static void test_no_eval_frames_puts_python_below(void **state)
{
	const uint32_t native[] = { 9 };
	const uint32_t py[] = { 100, 101 };
	const bool entry[] = { true, false };
	const uint32_t want[] = { 100, 101, 9 };

	(void)state;
	check(native, 1, py, entry, 2, want, 3);
}

static void test_fewer_evals_outermost_takes_rest(void **state)
{
	/* Three groups but the unwind saw one eval: it takes all. */
	const uint32_t native[] = { 1, 50, 9 };
	const uint32_t py[] = { 100, 101, 102 };
	const bool entry[] = { true, true, true };
	const uint32_t want[] = { 1, 100, 101, 102, 9 };

	(void)state;
	check(native, 3, py, entry, 3, want, 5);
}

static void test_more_evals_than_groups_keeps_outer(void **state)
{
	const uint32_t native[] = { 1, 50, 7, 50, 9 };
	const uint32_t py[] = { 100 };
	const bool entry[] = { true };
	const uint32_t want[] = { 1, 50, 7, 100, 9 };

	(void)state;
	check(native, 5, py, entry, 1, want, 5);
}

static void test_no_python_is_native(void **state)
{
	const uint32_t native[] = { 1, 50, 9 };
	const uint32_t want[] = { 1, 50, 9 };

	(void)state;
	check(native, 3, NULL, NULL, 0, want, 3);
}

static void test_output_bounded(void **state)
{
	const uint32_t native[] = { 1, 50 };
	const uint32_t py[] = { 100, 101, 102 };
	const bool entry[] = { true, false, false };
	bool is_eval[2] = { false, true };
	struct mixed_in in = {
		.native = native, .is_eval = is_eval, .nnative = 2, .py = py, .py_entry = entry,
		.npy = 3,
	};
	uint32_t out[2];

	(void)state;
	assert_int_equal(mixed_merge(&in, out, 2), 2);
	assert_int_equal(out[1], 100);
}

static void test_cut_pairs_from_root(void **state)
{
	/* main -> eval(g0) -> C 7 -> eval(g1, cut) -> C 8 -> eval(cut) -> C 9:
	 * g0 and g1 go to the two outer evals, the marker follows, then the
	 * C code leafward of the last eval.  C 8 sat among cut frames. */
	const uint32_t native[] = { 1, 50, 7, 50, 8, 50, 9 };
	const uint32_t py[] = { 100, 101, 102, 103 };
	const bool entry[] = { true, false, true, false };
	const uint32_t want[] = { 1, 100, 101, 7, 102, 103, 99, 9 };

	(void)state;
	check_cut(native, 7, false, py, entry, 4, want, 8);
}

static void test_cut_last_eval_takes_rest(void **state)
{
	/* 3.10-like: every frame its own group, one eval seen. */
	const uint32_t native[] = { 1, 50, 9 };
	const uint32_t py[] = { 100, 101, 102 };
	const bool entry[] = { true, true, true };
	const uint32_t want[] = { 1, 100, 101, 102, 99, 9 };

	(void)state;
	check_cut(native, 3, false, py, entry, 3, want, 6);
}

static void test_cut_both_python_first(void **state)
{
	/* The native walk lost its root too: nothing to pair from, so the
	 * root is the Python one and only the C leaf follows. */
	const uint32_t native[] = { 50, 7, 50, 9 };
	const uint32_t py[] = { 100, 101, 102 };
	const bool entry[] = { true, true, true };
	const uint32_t want[] = { 100, 101, 102, 99, 9 };

	(void)state;
	check_cut(native, 4, true, py, entry, 3, want, 5);
}

static void test_cut_without_evals(void **state)
{
	const uint32_t native[] = { 1, 9 };
	const uint32_t py[] = { 100, 101 };
	const bool entry[] = { true, false };
	const uint32_t want[] = { 100, 101, 99, 1, 9 };

	(void)state;
	check_cut(native, 2, false, py, entry, 2, want, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_eval_per_group),
		cmocka_unit_test(test_no_eval_frames_puts_python_below),
		cmocka_unit_test(test_fewer_evals_outermost_takes_rest),
		cmocka_unit_test(test_more_evals_than_groups_keeps_outer),
		cmocka_unit_test(test_no_python_is_native),
		cmocka_unit_test(test_output_bounded),
		cmocka_unit_test(test_cut_pairs_from_root),
		cmocka_unit_test(test_cut_last_eval_takes_rest),
		cmocka_unit_test(test_cut_both_python_first),
		cmocka_unit_test(test_cut_without_evals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
