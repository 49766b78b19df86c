/* Signed profiles (the mmap profile: frees are negative counts in two's
 * complement): sums stay exact, folded and json print signed values, the
 * formats that draw widths get [mapped] and [unmapped] roots, a folded
 * file with negative counts reads back as an mmap profile, the protocol
 * carries them, and a window keeps a stack that shrank. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "protocol.h"
#include "render.h"
#include "render_folded.h"
#include "stackset.h"

static void add(struct stackset *ss, const char *leaf, int64_t bytes)
{
	static const uint32_t kinds[] = { FRAME_NATIVE, FRAME_NATIVE };
	const char *names[] = { "main", leaf };

	assert_int_equal(stackset_add_named(ss, kinds, names, 2, (uint64_t)bytes), 0);
}

/* main;alloc +100 - 30, main;release -40: net 30. */
static struct stackset *mmap_profile(void)
{
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	assert_int_equal(stackset_set_str(&ss->type, "mmap"), 0);
	assert_int_equal(stackset_set_str(&ss->unit, "bytes"), 0);
	add(ss, "alloc", 100);
	add(ss, "release", -40);
	add(ss, "alloc", -30);
	return ss;
}

static char *rendered(const char *format, const struct stackset *ss)
{
	struct buf out;

	buf_init(&out);
	assert_int_equal(render_format(format, ss, NULL, &out), 0);
	buf_put_u8(&out, 0);
	assert_false(out.failed);
	return (char *)out.data;
}

static void test_folded_and_json(void **state)
{
	struct stackset *ss = mmap_profile();
	char *s;

	(void)state;
	assert_true(stackset_signed(ss));
	assert_int_equal((int64_t)ss->total, 30);
	s = rendered("folded", ss);
	assert_string_equal(s, "main;alloc 70\nmain;release -40\n");
	free(s);
	s = rendered("json", ss);
	assert_non_null(strstr(s, "\"count\": -40}"));
	assert_non_null(strstr(s, "\"total\": 30}"));
	free(s);
	stackset_free(ss);
}

static void test_split(void **state)
{
	struct stackset *ss = mmap_profile(), *sp = stackset_split_signs(ss);
	char *s;

	(void)state;
	assert_non_null(sp);
	assert_false(stackset_signed(sp));
	assert_int_equal(sp->total, 110);
	s = rendered("folded", sp);
	assert_string_equal(s, "[mapped];main;alloc 70\n[unmapped];main;release 40\n");
	free(s);
	/* The width formats split on their own. */
	s = rendered("svg", ss);
	assert_non_null(strstr(s, "[unmapped]"));
	free(s);
	s = rendered("speedscope", ss);
	assert_non_null(strstr(s, "[mapped]"));
	assert_null(strstr(s, "-40"));
	free(s);
	stackset_free(sp);
	stackset_free(ss);
}

static void test_folded_reads_back(void **state)
{
	static const char text[] = "main;alloc 70\nmain;release -40\n";
	struct stackset *ss = stackset_new();
	char *s;

	(void)state;
	assert_non_null(ss);
	assert_int_equal(folded_parse(text, strlen(text), ss), 0);
	assert_true(stackset_signed(ss));
	assert_string_equal(ss->unit, "bytes");
	s = rendered("folded", ss);
	assert_string_equal(s, text);
	free(s);
	stackset_free(ss);
	/* Without a negative count a profile stays unsigned: "-" alone, or
	 * below INT64_MIN, is no count. */
	ss = stackset_new();
	assert_int_equal(folded_parse("a 1\nb -\n", 8, ss), -EINVAL);
	stackset_free(ss);
	ss = stackset_new();
	assert_int_equal(folded_parse("a -9223372036854775809\n", 23, ss), -EINVAL);
	stackset_free(ss);
}

static void test_protocol(void **state)
{
	struct stackset *ss = mmap_profile(), *back;
	struct buf b;
	char *s;
	int err;

	(void)state;
	buf_init(&b);
	assert_int_equal(proto_encode_stackset(&b, ss), 0);
	back = proto_decode_stackset(b.data, b.len, &err);
	assert_int_equal(err, 0);
	assert_non_null(back);
	assert_int_equal((int64_t)back->total, 30);
	s = rendered("folded", back);
	assert_string_equal(s, "main;alloc 70\nmain;release -40\n");
	free(s);
	stackset_free(back);
	buf_free(&b);
	stackset_free(ss);
}

static void test_subtract(void **state)
{
	struct stackset *after = mmap_profile(), *before = stackset_new(), *win;
	char *s;

	(void)state;
	assert_int_equal(stackset_set_str(&before->type, "mmap"), 0);
	add(before, "alloc", 100);
	win = stackset_subtract(after, before);
	assert_non_null(win);
	s = rendered("folded", win);
	assert_string_equal(s, "main;alloc -30\nmain;release -40\n");
	free(s);
	stackset_free(win);
	stackset_free(before);
	stackset_free(after);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_and_json), cmocka_unit_test(test_split),
		cmocka_unit_test(test_folded_reads_back), cmocka_unit_test(test_protocol),
		cmocka_unit_test(test_subtract),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
