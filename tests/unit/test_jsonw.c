/* Unit tests for the JSON writer (userspace/lib/core/jsonw.c): the
 * commas, the layout the e2e tests grep, the renderers' styles, escaping,
 * numbers, and misuse caught instead of printed. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "jsonw.h"

/* What jsonw_print writes, and its return in *err. */
static char *printed(struct jsonw *w, int *err)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	*err = jsonw_print(w, f);
	fclose(f);
	return text;
}

static void assert_prints(struct jsonw *w, const char *want)
{
	int err;
	char *got = printed(w, &err);

	assert_int_equal(err, 0);
	assert_string_equal(got, want);
	free(got);
}

/* list's layout: an object a line, inner containers on their item's line. */
static void test_lines(void **state)
{
	struct jsonw w;

	(void)state;
	jsonw_init(&w, 1);
	jsonw_array(&w);
	jsonw_object(&w);
	jsonw_key_u64(&w, "pid", 42);
	jsonw_key_bool(&w, "exited", false);
	jsonw_key(&w, "rss_history");
	jsonw_array(&w);
	jsonw_array(&w);
	jsonw_u64(&w, 1);
	jsonw_u64(&w, 2);
	jsonw_end(&w);
	jsonw_array(&w);
	jsonw_end(&w);
	jsonw_end(&w);
	jsonw_end(&w);
	jsonw_object(&w);
	jsonw_end(&w);
	jsonw_end(&w);
	assert_prints(&w, "[\n  {\"pid\": 42, \"exited\": false, \"rss_history\": [[1, 2], []]},\n  {}\n]\n");
}

static void test_empty_and_one_line(void **state)
{
	struct jsonw w;

	(void)state;
	jsonw_init(&w, 1);
	jsonw_array(&w);
	jsonw_end(&w);
	assert_prints(&w, "[]\n");
	jsonw_init(&w, 0);
	jsonw_object(&w);
	jsonw_key_str(&w, "error", "no");
	jsonw_key_str(&w, "command", NULL);
	jsonw_end(&w);
	assert_prints(&w, "{\"error\": \"no\", \"command\": \"\"}\n");
}

/* What jsonw_finish appends to a buffer that already holds text. */
static void assert_finishes(struct jsonw *w, const char *want)
{
	struct buf out;

	buf_init(&out);
	buf_puts(&out, ">");
	assert_int_equal(jsonw_finish(w, &out), 0);
	assert_non_null(buf_cstr(&out));
	assert_string_equal(out.data + 1, want);
	buf_free(&out);
}

/* The profd-profile layout: top-level keys at the margin, line arrays
 * indented one level, closing brackets on their own line unless empty. */
static void test_flush_and_array_lines(void **state)
{
	struct jsonw w;

	(void)state;
	jsonw_init_style(&w, 1, JSONW_FLUSH);
	jsonw_object(&w);
	jsonw_key(&w, "m");
	jsonw_object(&w);
	jsonw_key(&w, "t");
	jsonw_null(&w);
	jsonw_key_u64(&w, "n", 1);
	jsonw_end(&w);
	jsonw_key(&w, "a");
	jsonw_array_lines(&w);
	jsonw_array(&w);
	jsonw_i64(&w, -1);
	jsonw_u64(&w, 2);
	jsonw_end(&w);
	jsonw_object(&w);
	jsonw_end(&w);
	jsonw_end(&w);
	jsonw_key(&w, "e");
	jsonw_array_lines(&w);
	jsonw_end(&w);
	jsonw_end(&w);
	assert_finishes(&w, "{\n\"m\": {\"t\": null, \"n\": 1},\n\"a\": [\n  [-1, 2],\n  {}\n],\n"
			    "\"e\": []\n}\n");
}

/* speedscope's layout: no spaces, breaks only where asked, none before a
 * closing bracket, never indented. */
static void test_compact_and_break(void **state)
{
	struct jsonw w;

	(void)state;
	jsonw_init_style(&w, 0, JSONW_COMPACT);
	jsonw_object(&w);
	jsonw_key_str(&w, "s", "x y");
	jsonw_break(&w);
	jsonw_key(&w, "f");
	jsonw_object(&w);
	jsonw_key(&w, "a");
	jsonw_array(&w);
	jsonw_break(&w);
	jsonw_u64(&w, 1);
	jsonw_break(&w);
	jsonw_array(&w);
	jsonw_u64(&w, 2);
	jsonw_u64(&w, 3);
	jsonw_end(&w);
	jsonw_end(&w);
	jsonw_end(&w);
	jsonw_key_bool(&w, "b", true);
	jsonw_end(&w);
	assert_finishes(&w, "{\"s\":\"x y\",\n\"f\":{\"a\":[\n1,\n[2,3]]},\"b\":true}\n");
}

/* A misused writer appends nothing to the renderer's buffer. */
static void test_finish_misuse(void **state)
{
	struct jsonw w;
	struct buf out;

	(void)state;
	buf_init(&out);
	jsonw_init_style(&w, 0, JSONW_COMPACT);
	jsonw_array(&w);
	assert_int_equal(jsonw_finish(&w, &out), -EPROTO);
	assert_int_equal(out.len, 0);
	buf_free(&out);
}

/* Quotes, backslashes and control characters escaped, invalid UTF-8 as
 * U+FFFD, valid UTF-8 kept; keys escaped as values are. */
static void test_escapes(void **state)
{
	struct jsonw w;

	(void)state;
	jsonw_init(&w, 0);
	jsonw_object(&w);
	jsonw_key_str(&w, "a\"b", "q\"b\\s\tc\x01\x1f\xff\xc3\xa9\x7f");
	jsonw_key(&w, "n");
	jsonw_str_n(&w, "abc,def", 3);
	jsonw_end(&w);
	assert_prints(&w, "{\"a\\\"b\": \"q\\\"b\\\\s\\u0009c\\u0001\\u001f\xef\xbf\xbd\xc3\xa9\x7f\", "
			  "\"n\": \"abc\"}\n");
}

static void test_numbers(void **state)
{
	struct jsonw w;

	(void)state;
	jsonw_init(&w, 0);
	jsonw_array(&w);
	jsonw_u64(&w, UINT64_MAX);
	jsonw_i64(&w, INT64_MIN);
	jsonw_double(&w, 0.1);
	jsonw_double(&w, 1.0 / 3.0);
	jsonw_double(&w, NAN);
	jsonw_double(&w, -INFINITY);
	jsonw_bool(&w, true);
	jsonw_end(&w);
	assert_prints(&w, "[18446744073709551615, -9223372036854775808, 0.1, 0.33333333333333331, "
			  "null, null, true]\n");
}

/* A writer used wrongly says so and prints nothing broken. */
static void test_misuse(void **state)
{
	struct jsonw w;
	char *got;
	int err, i;

	(void)state;
	jsonw_init(&w, 0);
	jsonw_object(&w); /* left open */
	got = printed(&w, &err);
	assert_int_equal(err, -EPROTO);
	assert_string_equal(got, "");
	free(got);

	jsonw_init(&w, 0);
	jsonw_array(&w);
	jsonw_key(&w, "no keys in arrays");
	jsonw_u64(&w, 1);
	jsonw_end(&w);
	got = printed(&w, &err);
	assert_int_equal(err, -EPROTO);
	free(got);

	jsonw_init(&w, 0);
	for (i = 0; i < JSONW_MAX_DEPTH + 1; i++)
		jsonw_array(&w);
	for (i = 0; i < JSONW_MAX_DEPTH + 1; i++)
		jsonw_end(&w);
	got = printed(&w, &err);
	assert_int_equal(err, -EPROTO);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_empty_and_one_line),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_misuse),
		cmocka_unit_test(test_flush_and_array_lines),
		cmocka_unit_test(test_compact_and_break),
		cmocka_unit_test(test_finish_misuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
