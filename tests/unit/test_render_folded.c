/* render_folded: golden output, round trip, kind inference, bad input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "render_folded.h"
#include "stackset.h"

static void add(struct stackset *ss, uint64_t count, uint32_t depth, const uint32_t *kinds,
		const char *const *names)
{
	assert_int_equal(stackset_add_named(ss, kinds, names, depth, count), 0);
}

/* A small mixed profile: Python over native over kernel. */
static struct stackset *sample_profile(void)
{
	static const uint32_t k3[] = { FRAME_PYTHON, FRAME_PYTHON, FRAME_NATIVE };
	static const uint32_t k2[] = { FRAME_PYTHON, FRAME_KERNEL };
	static const char *const a[] = { "main (/srv/app.py:10)", "work (/srv/app.py:4)",
					 "PyObject_Free" };
	static const char *const b[] = { "main (/srv/app.py:10)", "sys_write_[k]" };
	static const char *const c[] = { "main (/srv/app.py:10)", "[libfoo.so+0x1a2b]" };
	static const uint32_t kc[] = { FRAME_PYTHON, FRAME_UNKNOWN };
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	add(ss, 7, 2, k2, b);
	add(ss, 5, 3, k3, a);
	add(ss, 2, 2, kc, c);
	add(ss, 3, 3, k3, a); /* merges with the 5 */
	return ss;
}

static void render_to(const struct stackset *ss, struct buf *out)
{
	buf_init(out);
	assert_int_equal(render_folded(ss, out), 0);
	assert_non_null(buf_cstr(out));
}

static void test_golden(void **state)
{
	struct stackset *ss = sample_profile();
	struct buf out;

	(void)state;
	render_to(ss, &out);
	assert_string_equal(out.data, "main (/srv/app.py:10);[libfoo.so+0x1a2b] 2\n"
				      "main (/srv/app.py:10);sys_write_[k] 7\n"
				      "main (/srv/app.py:10);work (/srv/app.py:4);PyObject_Free 8\n");
	buf_free(&out);
	stackset_free(ss);
}

static void test_round_trip(void **state)
{
	struct stackset *ss = sample_profile(), *back = stackset_new();
	struct buf first, second;

	(void)state;
	render_to(ss, &first);
	assert_int_equal(folded_parse(first.data, first.len, back), 0);
	assert_int_equal(back->total, ss->total);
	assert_int_equal(back->nstacks, 3);
	render_to(back, &second);
	assert_string_equal(first.data, second.data);
	/* Kinds survive the trip through the name contract. */
	for (size_t i = 0, n = ss->nframes; i < back->nframes; i++) {
		int64_t id = stackset_intern(ss, back->frames[i].kind, back->frames[i].name);

		assert_true(id >= 0 && (size_t)id < n); /* same (kind, name) existed */
		assert_int_equal(ss->nframes, n);
	}
	buf_free(&first);
	buf_free(&second);
	stackset_free(back);
	stackset_free(ss);
}

static void test_kinds(void **state)
{
	static const struct {
		const char *name;
		uint32_t kind;
	} cases[] = {
		{ "leaf_a (/srv/app/work.py:4)", FRAME_PYTHON },
		{ "<module> (x.py:1)", FRAME_PYTHON },
		{ "Foo.bar (C:\\a:b.py:12)", FRAME_PYTHON },
		{ "do_syscall_64_[k]", FRAME_KERNEL },
		{ "[libfoo.so+0x1a2b]", FRAME_UNKNOWN },
		{ "[unknown]", FRAME_UNKNOWN },
		{ "PyObject_Free", FRAME_NATIVE },
		{ "std::vector<int>::push_back(int const&)", FRAME_NATIVE },
		{ "f (x.py:)", FRAME_NATIVE },
		{ "f (:3)", FRAME_NATIVE },
		{ " (x.py:3)", FRAME_NATIVE },
		{ "f (x.py:3a)", FRAME_NATIVE },
		{ "_[k]", FRAME_NATIVE },
		{ "[", FRAME_NATIVE },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t k = folded_infer_kind(cases[i].name, strlen(cases[i].name));

		if (k != cases[i].kind)
			fail_msg("%s: kind %u, want %u", cases[i].name, k, cases[i].kind);
	}
}

static int parse_str(const char *text, struct stackset **out)
{
	*out = stackset_new();
	assert_non_null(*out);
	return folded_parse(text, strlen(text), *out);
}

static void test_tolerated(void **state)
{
	struct stackset *ss;
	struct buf out;

	(void)state;
	assert_int_equal(parse_str("\n a;b 1 \r\n\n\t\na;b\t2\r\nc 0\nx y;z 12 3\n", &ss), 0);
	assert_int_equal(ss->total, 6);
	render_to(ss, &out);
	/* " a" keeps its leading space: it is part of the name. */
	assert_string_equal(out.data, " a;b 1\na;b 2\nx y;z 12 3\n");
	buf_free(&out);
	stackset_free(ss);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"a;b\n",		 /* no count */
		"a;b x\n",		 /* count not a number */
		"a;b +1\n",		 /* plus sign (a minus makes an mmap profile: test_render_signed) */
		"a;b -\n",		 /* a sign alone */
		"a;b 1.5\n",		 /* not an integer */
		"a;b 18446744073709551616\n", /* 2^64 */
		"a;;b 1\n",		 /* empty frame */
		";a 1\n",		 /* empty root */
		"a; 1\n",		 /* empty leaf */
		" 5\n",			 /* no frames */
		"a\x01z 1\n",		 /* control character */
		"ok 1\nbad\n",		 /* error on line 2 */
		"a 18446744073709551615\nb 1\n", /* total overflows */
	};
	struct stackset *ss;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = parse_str(bad[i], &ss);

		if (err != -EINVAL)
			fail_msg("input %zu: got %d, want -EINVAL", i, err);
		stackset_free(ss);
	}
	/* NUL bytes inside the buffer. */
	ss = stackset_new();
	assert_int_equal(folded_parse("a 1\0b 2\n", 8, ss), -EINVAL);
	stackset_free(ss);
}

static void test_limits(void **state)
{
	struct stackset *ss = stackset_new();
	struct buf in;

	(void)state;
	buf_init(&in);
	for (unsigned i = 0; i <= FOLDED_MAX_DEPTH; i++)
		buf_puts(&in, i ? ";f" : "f");
	buf_puts(&in, " 1\n");
	assert_int_equal(folded_parse(in.data, in.len, ss), -EINVAL);
	buf_reset(&in);
	for (unsigned i = 0; i <= FOLDED_MAX_NAME; i++)
		buf_put_u8(&in, 'x');
	buf_puts(&in, " 1\n");
	assert_int_equal(folded_parse(in.data, in.len, ss), -EINVAL);
	assert_int_equal(ss->total, 0);
	buf_free(&in);
	stackset_free(ss);
}

static void test_special_chars(void **state)
{
	static const uint32_t kinds[] = { FRAME_NATIVE, FRAME_NATIVE, FRAME_NATIVE };
	static const char *const n1[] = { "a;b", "line\nbreak", "" };
	static const char *const n2[] = { "a:b", "line?break", "[unknown]" };
	struct stackset *ss = stackset_new(), *back = stackset_new();
	struct buf out;

	(void)state;
	add(ss, 4, 3, kinds, n1);
	add(ss, 1, 3, kinds, n2); /* prints the same: merged */
	add(ss, 2, 0, kinds, n1); /* no frames */
	render_to(ss, &out);
	assert_string_equal(out.data, "[unknown] 2\na:b;line?break;[unknown] 5\n");
	assert_int_equal(folded_parse(out.data, out.len, back), 0);
	assert_int_equal(back->total, 7);
	assert_int_equal(back->nstacks, 2);
	buf_free(&out);
	stackset_free(back);
	stackset_free(ss);
}

/* Lines that print the same must meet in the sort to be merged: sorting
 * by the raw names put "a5" between "a\tb" and "a?b" (found by
 * fuzz_folded), and "" away from "[unknown]". */
static void test_merge_printed_order(void **state)
{
	static const uint32_t kinds[] = { FRAME_NATIVE };
	static const char *const names[] = { "a\tb", "a5", "a?b", "", "[unknown]", "Z" };
	struct stackset *ss = stackset_new(), *back = stackset_new();
	struct buf out, again;
	size_t i;

	(void)state;
	for (i = 0; i < 6; i++)
		add(ss, 1, 1, kinds, &names[i]);
	add(ss, 1, 0, kinds, names); /* no frames: "[unknown]" too */
	render_to(ss, &out);
	assert_string_equal(out.data, "Z 1\n[unknown] 3\na5 1\na?b 2\n");
	assert_int_equal(folded_parse(out.data, out.len, back), 0);
	render_to(back, &again);
	assert_string_equal(again.data, out.data);
	buf_free(&out);
	buf_free(&again);
	stackset_free(back);
	stackset_free(ss);
}

static void test_empty(void **state)
{
	struct stackset *ss = stackset_new();
	struct buf out;

	(void)state;
	render_to(ss, &out);
	assert_int_equal(out.len, 0);
	assert_int_equal(folded_parse("", 0, ss), 0);
	assert_int_equal(folded_parse(NULL, 0, ss), 0);
	assert_int_equal(ss->nstacks, 0);
	buf_free(&out);
	stackset_free(ss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),	     cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_kinds),	     cmocka_unit_test(test_tolerated),
		cmocka_unit_test(test_malformed),    cmocka_unit_test(test_limits),
		cmocka_unit_test(test_special_chars), cmocka_unit_test(test_empty),
		cmocka_unit_test(test_merge_printed_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
