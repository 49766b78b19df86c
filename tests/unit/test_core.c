/* Unit tests for the small core pieces: hashmap, buf/cursor, stackset,
 * duration, hexnum, filekind. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "buf.h"
#include "duration.h"
#include "filekind.h"
#include "hashmap.h"
#include "hexnum.h"
#include "stackset.h"

static void test_hashmap_put_get_del(void **state)
{
	struct hashmap m;
	uint64_t v, k;
	size_t it = 0, seen = 0;

	(void)state;
	hashmap_init(&m);
	for (k = 0; k < 10000; k++)
		assert_int_equal(hashmap_put(&m, k * 7919, k), 0);
	assert_int_equal(m.len, 10000);
	for (k = 0; k < 10000; k++) {
		assert_true(hashmap_get(&m, k * 7919, &v));
		assert_int_equal(v, k);
	}
	assert_false(hashmap_get(&m, 3, &v));
	/* Every key is a key: 0, 1 and UINT64_MAX stay distinct. */
	assert_int_equal(hashmap_put(&m, UINT64_MAX, 11), 0);
	assert_int_equal(hashmap_put(&m, 1, 12), 0);
	assert_true(hashmap_get(&m, 0, &v));
	assert_int_equal(v, 0);
	assert_true(hashmap_get(&m, UINT64_MAX, &v));
	assert_int_equal(v, 11);
	assert_true(hashmap_get(&m, 1, &v));
	assert_int_equal(v, 12);
	assert_true(hashmap_del(&m, UINT64_MAX));
	assert_true(hashmap_del(&m, 1));
	for (k = 0; k < 10000; k += 2)
		assert_true(hashmap_del(&m, k * 7919));
	assert_false(hashmap_del(&m, 0));
	assert_int_equal(m.len, 5000);
	while (hashmap_next(&m, &it, &k, &v)) {
		assert_int_equal(v % 2, 1);
		seen++;
	}
	assert_int_equal(seen, 5000);
	/* Overwrite keeps one entry. */
	assert_int_equal(hashmap_put(&m, 7919, 42), 0);
	assert_true(hashmap_get(&m, 7919, &v));
	assert_int_equal(v, 42);
	assert_int_equal(m.len, 5000);
	hashmap_free(&m);
}

static void test_hashmap_churn_keeps_bounded(void **state)
{
	struct hashmap m;
	uint64_t k;

	(void)state;
	hashmap_init(&m);
	/* Insert and delete forever: tombstones must not grow the table. */
	for (k = 1; k < 200000; k++) {
		assert_int_equal(hashmap_put(&m, k, k), 0);
		assert_true(hashmap_del(&m, k));
	}
	assert_int_equal(m.len, 0);
	assert_true(m.cap <= 64);
	hashmap_free(&m);
}

static void test_cursor_bounds(void **state)
{
	const uint8_t data[] = { 1, 2, 3, 4, 5 };
	struct cursor c;

	(void)state;
	cursor_init(&c, data, sizeof(data));
	assert_int_equal(cursor_u32(&c), 0x04030201);
	assert_false(c.bad);
	assert_int_equal(cursor_u16(&c), 0); /* one byte left */
	assert_true(c.bad);
	assert_int_equal(cursor_u8(&c), 0); /* stays bad */
}

static void test_buf_escapes(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b);
	buf_put_xml(&b, "a<b>&\"c'");
	assert_string_equal(buf_cstr(&b), "a&lt;b&gt;&amp;&quot;c&apos;");
	buf_reset(&b);
	buf_put_json_str(&b, "q\"\\\n");
	assert_string_equal(buf_cstr(&b), "\"q\\\"\\\\\\u000a\"");
	buf_free(&b);
}

static void test_stackset_merges(void **state)
{
	struct stackset *ss = stackset_new();
	const uint32_t kinds[3] = { FRAME_NATIVE, FRAME_NATIVE, FRAME_KERNEL };
	const char *a[3] = { "main", "f", "g_[k]" };
	const char *b[2] = { "main", "f" };

	(void)state;
	assert_non_null(ss);
	assert_int_equal(stackset_add_named(ss, kinds, a, 3, 2), 0);
	assert_int_equal(stackset_add_named(ss, kinds, a, 3, 3), 0);
	assert_int_equal(stackset_add_named(ss, kinds, b, 2, 1), 0);
	assert_int_equal(ss->nstacks, 2);
	assert_int_equal(ss->nframes, 3);
	assert_int_equal(ss->total, 6);
	/* Same name, other kind: a different frame. */
	assert_true(stackset_intern(ss, FRAME_PYTHON, "main") != stackset_intern(ss, FRAME_NATIVE, "main"));
	/* Out-of-range frame ids are refused. */
	{
		uint32_t bad[1] = { 99 };

		assert_int_equal(stackset_add(ss, bad, 1, 1), -EINVAL);
	}
	stackset_sort(ss);
	assert_int_equal(ss->stacks[0].depth, 2); /* "main;f" sorts before "main;f;g" */
	stackset_free(ss);
}

/* Thread roots renamed at one depth: the process root above them stays
 * (the same frame: "comm (pid)" names both), stacks that become one add
 * up, later adds still merge. */
static void test_stackset_replace_at(void **state)
{
	struct stackset *ss = stackset_new();
	const uint32_t kinds[3] = { FRAME_ROOT, FRAME_ROOT, FRAME_PYTHON };
	const char *a[3] = { "py (7)", "py (7)", "f" };
	const char *b[3] = { "py (7)", "py (8)", "f" };
	const char *c[3] = { "py (7)", "Main (7)", "f" };
	struct hashmap map;
	int64_t old, main_;

	(void)state;
	assert_non_null(ss);
	assert_int_equal(stackset_add_named(ss, kinds, a, 3, 2), 0);
	assert_int_equal(stackset_add_named(ss, kinds, b, 3, 1), 0);
	assert_int_equal(stackset_add_named(ss, kinds, c, 3, 4), 0);
	old = stackset_intern(ss, FRAME_ROOT, "py (7)");
	main_ = stackset_intern(ss, FRAME_ROOT, "Main (7)");
	hashmap_init(&map);
	assert_int_equal(hashmap_put(&map, (uint64_t)old, (uint64_t)main_), 0);
	assert_int_equal(stackset_replace_at(ss, 1, &map), 0);
	hashmap_free(&map);
	assert_int_equal(ss->nstacks, 2); /* a became c */
	assert_int_equal(ss->total, 7);
	assert_int_equal(ss->stacks[0].count, 6);
	assert_int_equal(ss->stacks[0].frames[0], old);
	assert_int_equal(ss->stacks[0].frames[1], main_);
	assert_int_equal(stackset_add_named(ss, kinds, c, 3, 1), 0);
	assert_int_equal(ss->nstacks, 2);
	assert_int_equal(ss->stacks[0].count, 7);
	stackset_free(ss);
}

static void test_stackset_root_tid(void **state)
{
	size_t n;
	uint32_t tid;

	(void)state;
	assert_true(stackset_root_tid("Thread-2 (worker) (1236)", &n, &tid));
	assert_int_equal(n, 17);
	assert_int_equal(tid, 1236);
	assert_true(stackset_root_tid("py (7)", &n, &tid) && n == 2 && tid == 7);
	assert_false(stackset_root_tid("py(7)", &n, &tid));
	assert_false(stackset_root_tid("py ()", &n, &tid));
	assert_false(stackset_root_tid("py (7x)", &n, &tid));
	assert_false(stackset_root_tid("py (99999999999)", &n, &tid));
	assert_true(stackset_root_tid(" (7)", &n, &tid) && n == 0); /* no name */
	assert_false(stackset_root_tid("main", &n, &tid));
}

static void test_duration(void **state)
{
	uint64_t ns;
	char buf[32];

	(void)state;
	assert_int_equal(duration_parse("500ms", &ns), 0);
	assert_int_equal(ns, 500000000ull);
	assert_int_equal(duration_parse("5m", &ns), 0);
	assert_int_equal(ns, 300000000000ull);
	assert_int_equal(duration_parse("24h", &ns), 0);
	assert_int_equal(duration_parse("30", &ns), 0);
	assert_int_equal(ns, 30000000000ull);
	assert_int_equal(duration_parse("", &ns), -EINVAL);
	assert_int_equal(duration_parse("-5s", &ns), -EINVAL);
	assert_int_equal(duration_parse("5x", &ns), -EINVAL);
	assert_int_equal(duration_parse("99999999999999999999d", &ns), -EINVAL);
	assert_int_equal(duration_parse("999999999999d", &ns), -EINVAL); /* overflows u64 ns */
	assert_string_equal(duration_format(90000000000ull, buf, sizeof(buf)), "90s");
	assert_string_equal(duration_format(7200000000000ull, buf, sizeof(buf)), "2h");
}

/* One parse: ok, the value and where it stopped. */
static void check_hex(const char *text, bool ok, uint64_t want, size_t stop)
{
	const char *p = text;
	uint64_t v = 0;

	assert_int_equal(hexnum_parse(&p, text + strlen(text), &v), ok);
	if (ok) {
		assert_true(v == want);
		assert_int_equal((size_t)(p - text), stop);
	}
}

static void test_hexnum(void **state)
{
	(void)state;
	check_hex("ffffffff81000000 T _stext", true, 0xffffffff81000000ull, 16);
	check_hex("7f00-7f10", true, 0x7f00, 4);
	check_hex("00000000000000000001", true, 1, 20); /* leading zeros: no overflow */
	check_hex("AbC", true, 0xabc, 3);
	check_hex("", false, 0, 0);
	check_hex("x12", false, 0, 0);
	check_hex("0x12", true, 0, 1); /* no "0x": the caller skips it */
	check_hex("10000000000000000", false, 0, 0); /* 2^64 */
}

/* The words the socket's and the history's refusals print (the e2e
 * test_paths_not_ours greps some). */
static void test_filekind(void **state)
{
	(void)state;
	assert_string_equal(filekind_name(S_IFREG | 0644), "a regular file");
	assert_string_equal(filekind_name(S_IFDIR | 0755), "a directory");
	assert_string_equal(filekind_name(S_IFLNK | 0777), "a symbolic link");
	assert_string_equal(filekind_name(S_IFIFO | 0600), "a FIFO");
	assert_string_equal(filekind_name(S_IFSOCK | 0660), "a socket");
	assert_string_equal(filekind_name(S_IFCHR | 0666), "a device");
	assert_string_equal(filekind_name(S_IFBLK | 0660), "a device");
	assert_string_equal(filekind_name(0), "a file of unknown kind");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hashmap_put_get_del),
		cmocka_unit_test(test_hashmap_churn_keeps_bounded),
		cmocka_unit_test(test_cursor_bounds),
		cmocka_unit_test(test_buf_escapes),
		cmocka_unit_test(test_stackset_merges),
		cmocka_unit_test(test_stackset_replace_at),
		cmocka_unit_test(test_stackset_root_tid),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_hexnum),
		cmocka_unit_test(test_filekind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
