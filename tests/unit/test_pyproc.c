/* pyproc: one process's Python state.  Names kept per epoch, reads asked
 * once an epoch and bounded, stale answers told apart, a new program
 * forgetting the old one's names, task labels bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyproc.h"
#include "pyruntime.h"

static int setup(void **state)
{
	*state = pyproc_new();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	pyproc_free(*state);
	return 0;
}

static void test_names_kept_per_epoch(void **state)
{
	struct pyproc *pp = *state;
	uint64_t key = pyproc_frame_key(0x7f0000001000, 0xabc, 42);
	uint64_t code = pyproc_code_key(0x7f0000001000, 0xabc);
	uint32_t epoch;
	int64_t id;

	assert_false(pyproc_name(pp, key, &id, &epoch));
	assert_false(pyproc_keep_name(pp, key, 3, 17));
	assert_true(pyproc_name(pp, key, &id, &epoch));
	assert_int_equal(id, 17);
	assert_int_equal(epoch, 3);
	/* Another instruction of the same code object is another name. */
	assert_false(pyproc_name(pp, pyproc_frame_key(0x7f0000001000, 0xabc, 44), &id, &epoch));
	/* A task at the code object's address is not the code object. */
	assert_int_not_equal(pyproc_task_key(0x7f0000001000),
			     pyproc_frame_key(0x7f0000001000, 0, 0));
	assert_false(pyproc_code_checked(pp, code, 3));
	pyproc_code_mark(pp, code, 3);
	assert_true(pyproc_code_checked(pp, code, 3));
	assert_false(pyproc_code_checked(pp, code, 4));
}

/* Another code object at a freed one's address (another fingerprint)
 * has neither its names nor its check. */
static void test_reused_address_is_another_code_object(void **state)
{
	struct pyproc *pp = *state;
	uint32_t epoch;
	int64_t id;

	pyproc_keep_name(pp, pyproc_frame_key(0x7f0000001000, 0xabc, 42), 3, 17);
	pyproc_code_mark(pp, pyproc_code_key(0x7f0000001000, 0xabc), 3);
	assert_false(pyproc_name(pp, pyproc_frame_key(0x7f0000001000, 0xabd, 42), &id, &epoch));
	assert_false(pyproc_code_checked(pp, pyproc_code_key(0x7f0000001000, 0xabd), 3));
	assert_int_not_equal(pyproc_code_key(0x7f0000001000, 0xabc),
			     pyproc_code_key(0x7f0000001000, 0xabd));
}

/* A full cache starts over, and says so (the caller's memo goes too). */
static void test_full_cache_starts_over(void **state)
{
	struct pyproc *pp = *state;
	uint32_t epoch;
	int64_t id;
	uint64_t i;
	bool restarted = false;

	for (i = 0; i <= 65536 && !restarted; i++)
		restarted = pyproc_keep_name(pp, pyproc_frame_key(i, 0, 0), 1, (int64_t)i);
	assert_true(restarted);
	assert_int_equal(pp->names.len, 1);
	assert_false(pyproc_name(pp, pyproc_frame_key(0, 0, 0), &id, &epoch));
	assert_true(pyproc_name(pp, pyproc_frame_key(i - 1, 0, 0), &id, &epoch));
}

static void test_asks_once_an_epoch_and_bounded(void **state)
{
	struct pyproc *pp = *state;
	uint64_t key = pyproc_frame_key(0x1000, 0, 0), k;
	int err = 0;

	assert_int_equal(pyproc_asked(pp, key, 5), -1);
	assert_int_equal(pyproc_ask(pp, key, 5), 0);
	assert_int_equal(pyproc_asked(pp, key, 5), 1);
	assert_int_equal(pyproc_asked(pp, key, 6), -1); /* a new epoch asks again */
	assert_true(pyproc_answer_fresh(pp, key, 5));
	pyproc_ask_failed(pp, key, 5);
	assert_int_equal(pyproc_asked(pp, key, 5), 0);
	pyproc_ask_done(pp, key);
	assert_int_equal(pyproc_asked(pp, key, 5), -1);
	/* Awaited reads are bounded; the rest are asked as answers come. */
	for (k = 0; k < 2000 && !err; k++)
		err = pyproc_ask(pp, pyproc_frame_key(0x2000 + k, 0, 0), 5);
	assert_int_equal(err, -EBUSY);
	assert_int_equal(pp->asks_pending, 1024);
	assert_true(pyproc_answer_fresh(pp, pyproc_frame_key(0x2000, 0, 0), 5));
	assert_int_equal(pyproc_ask(pp, pyproc_frame_key(0x9000, 0, 0), 5), 0);
}

/* An answer older than the name kept, or than a later ask, is dropped. */
static void test_stale_answers(void **state)
{
	struct pyproc *pp = *state;
	uint64_t key = pyproc_frame_key(0x1000, 0, 8);

	assert_int_equal(pyproc_ask(pp, key, 2), 0);
	assert_int_equal(pyproc_ask(pp, key, 3), 0); /* asked again in a later epoch */
	assert_false(pyproc_answer_fresh(pp, key, 2));
	assert_true(pyproc_answer_fresh(pp, key, 3));
	pyproc_ask_done(pp, key);
	pyproc_keep_name(pp, key, 4, 9); /* a client's read named it since */
	assert_false(pyproc_answer_fresh(pp, key, 3));
}

static void test_exec_forgets_the_old_program(void **state)
{
	struct pyproc *pp = *state, *child;
	struct pyruntime *rt = calloc(1, sizeof(*rt));
	uint32_t gen = pp->gen, epoch;
	uint64_t key = pyproc_frame_key(0x1000, 0, 0);
	int64_t id;

	assert_non_null(rt);
	rt->minor = 12;
	pyproc_attach(pp, rt);
	pyproc_keep_name(pp, key, 1, 5);
	pyproc_ask(pp, pyproc_frame_key(0x2000, 0, 0), 1);
	child = pyproc_new();
	assert_non_null(child);
	assert_int_equal(pyproc_inherit(child, pp, 4321, 99), 0);
	assert_non_null(child->rt);
	assert_ptr_not_equal(child->rt, pp->rt);
	assert_int_equal(child->rt->pid, 4321);
	assert_int_equal(child->rt->minor, 12);
	assert_true(child->checked);
	pyproc_free(child);

	pyproc_forget(pp);
	assert_null(pp->rt);
	assert_false(pp->checked);
	assert_int_equal(pp->gen, gen + 1);
	assert_int_equal(pp->asks_pending, 0);
	assert_false(pyproc_name(pp, key, &id, &epoch));
}

static void test_task_labels_bounded(void **state)
{
	struct pyproc *pp = *state;
	char name[32], out[96];
	int i;

	pyproc_task_label(pp, "", false, out, sizeof(out));
	assert_string_equal(out, "[unnamed task]");
	for (i = 0; i < 256; i++) {
		snprintf(name, sizeof(name), "req-%d", i);
		pyproc_task_label(pp, name, true, out, sizeof(out));
	}
	assert_string_equal(out, "[task req-255]");
	pyproc_task_label(pp, "req-256", true, out, sizeof(out));
	assert_string_equal(out, "[task: one of more than 256 names]");
	pyproc_task_label(pp, "req-7", true, out, sizeof(out)); /* named before: kept */
	assert_string_equal(out, "[task req-7]");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_names_kept_per_epoch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reused_address_is_another_code_object, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_full_cache_starts_over, setup, teardown),
		cmocka_unit_test_setup_teardown(test_asks_once_an_epoch_and_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_answers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_forgets_the_old_program, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_labels_bounded, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
