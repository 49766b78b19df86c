/* procmaps: parsing /proc/PID/maps text, lookups, and reading a live
 * process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "procmaps.h"
#include "symtest.h"

static const char sample[] =
	"7ffd5a3ec000-7ffd5a3ee000 r-xp 00000000 00:00 0                          [vdso]\n"
	"55d4c0a00000-55d4c0a02000 r--p 00000000 fe:01 1234                       /usr/bin/my prog\n"
	"55d4c0a02000-55d4c0a08000 r-xp 00002000 fe:01 1234                       /usr/bin/my prog\n"
	"55d4c1000000-55d4c1021000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f0000000000-7f0000001000 r-xs 00000000 00:05 99                         /memfd:jit (deleted)\n"
	"7f0000200000-7f0000300000 r-xp 00010000 103:0a 4294967299                /tmp/lib  two.so (deleted)\n"
	"7f1234000000-7f1234021000 rw-p 00000000 00:00 0 \n"
	"7f1234021000-7f1234022000 ---p 00000000 00:00 0\n"
	"7ffd5a1f0000-7ffd5a211000 rw-p 00000000 00:00 0                          [stack]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static void test_parse_sample(void **state)
{
	struct procmaps m;
	const struct procmap *p;

	(void)state;
	assert_int_equal(procmaps_parse(sample, strlen(sample), &m), 0);
	assert_int_equal(m.n, 10);
	for (size_t i = 1; i < m.n; i++)
		assert_true(m.maps[i - 1].start < m.maps[i].start);

	p = &m.maps[0];
	assert_int_equal(p->start, 0x55d4c0a00000ull);
	assert_int_equal(p->end, 0x55d4c0a02000ull);
	assert_int_equal(p->prot, PROT_READ);
	assert_string_equal(p->path, "/usr/bin/my prog");
	assert_int_equal(p->dev_major, 0xfe);
	assert_int_equal(p->dev_minor, 1);
	assert_int_equal(p->inode, 1234);
	assert_false(p->deleted);

	p = &m.maps[1];
	assert_int_equal(p->offset, 0x2000);
	assert_int_equal(p->prot, PROT_READ | PROT_EXEC);

	p = &m.maps[2];
	assert_string_equal(p->path, "[heap]");
	assert_int_equal(p->prot, PROT_READ | PROT_WRITE);

	p = &m.maps[3];
	assert_string_equal(p->path, "/memfd:jit");
	assert_true(p->deleted);

	p = &m.maps[4];
	assert_string_equal(p->path, "/tmp/lib  two.so");
	assert_true(p->deleted);
	assert_int_equal(p->dev_major, 0x103);
	assert_int_equal(p->dev_minor, 0xa);
	assert_int_equal(p->inode, 4294967299ull);
	assert_int_equal(p->offset, 0x10000);

	assert_string_equal(m.maps[5].path, "");
	assert_string_equal(m.maps[6].path, "");
	assert_int_equal(m.maps[6].prot, 0);
	assert_string_equal(m.maps[7].path, "[stack]");
	assert_string_equal(m.maps[8].path, "[vdso]");
	assert_string_equal(m.maps[9].path, "[vsyscall]");
	assert_int_equal(m.maps[9].end, 0xffffffffff601000ull);
	procmaps_free(&m);
}

static void test_find(void **state)
{
	struct procmaps m;
	const struct procmap *p;

	(void)state;
	assert_int_equal(procmaps_parse(sample, sizeof(sample) - 1, &m), 0);
	assert_null(procmaps_find(&m, 0));
	assert_null(procmaps_find(&m, 0x55d4c09fffffull));
	p = procmaps_find(&m, 0x55d4c0a00000ull);
	assert_non_null(p);
	assert_int_equal(p->offset, 0);
	p = procmaps_find(&m, 0x55d4c0a01fffull);
	assert_int_equal(p->start, 0x55d4c0a00000ull);
	p = procmaps_find(&m, 0x55d4c0a02000ull);
	assert_int_equal(p->offset, 0x2000);
	assert_null(procmaps_find(&m, 0x55d4c0a08000ull)); /* gap */
	p = procmaps_find(&m, 0xffffffffff600fffull);
	assert_string_equal(p->path, "[vsyscall]");
	assert_null(procmaps_find(&m, UINT64_MAX));
	procmaps_free(&m);
}

static void test_huge_and_edge_numbers(void **state)
{
	static const char text[] =
		"fffffffffffff000-ffffffffffffffff r--p fffffffffffff000 ffffffff:ffffffff 18446744073709551615 /x";
	struct procmaps m;

	(void)state;
	assert_int_equal(procmaps_parse(text, strlen(text), &m), 0);
	assert_int_equal(m.n, 1);
	assert_int_equal(m.maps[0].offset, 0xfffffffffffff000ull);
	assert_int_equal(m.maps[0].inode, UINT64_MAX);
	assert_int_equal(m.maps[0].dev_major, UINT32_MAX);
	assert_string_equal(m.maps[0].path, "/x");
	procmaps_free(&m);
}

static void test_empty_and_blank(void **state)
{
	static const char blank[] = "\n\n   \n";
	static const char crlf_less[] = "1000-2000 r-xp 00000000 00:00 0 /a";
	struct procmaps m;

	(void)state;
	assert_int_equal(procmaps_parse("", 0, &m), 0);
	assert_int_equal(m.n, 0);
	assert_null(procmaps_find(&m, 0x1000));
	procmaps_free(&m);
	assert_int_equal(procmaps_parse(blank, strlen(blank), &m), 0);
	assert_int_equal(m.n, 0);
	procmaps_free(&m);
	assert_int_equal(procmaps_parse(crlf_less, strlen(crlf_less), &m), 0);
	assert_int_equal(m.n, 1);
	assert_string_equal(m.maps[0].path, "/a");
	procmaps_free(&m);
	procmaps_free(NULL);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"garbage\n",
		"1000-2000\n",
		"1000 2000 r-xp 00000000 00:00 0 /a\n",
		"1000-2000 rwzp 00000000 00:00 0 /a\n",
		"1000-2000 r-xq 00000000 00:00 0 /a\n",
		"1000-2000 r-x 00000000 00:00 0 /a\n",
		"2000-1000 r-xp 00000000 00:00 0 /a\n",
		"1000-1000 r-xp 00000000 00:00 0 /a\n",
		"1000-2000 r-xp 00000000 0000 0 /a\n",
		"1000-2000 r-xp 00000000 00:00 x /a\n",
		"1000-2000 r-xp 00000000 00:00 12/a\n",
		"10000000000000000-10000000000000001 r-xp 00000000 00:00 0 /a\n",
		"1000-2000 r-xp 1ffffffffffffffff 00:00 0 /a\n",
		"1000-2000 r-xp 00000000 1ffffffff:00 0 /a\n",
		"1000-2000 r-xp 00000000 00:00 99999999999999999999 /a\n",
		"-1000-2000 r-xp 00000000 00:00 0 /a\n",
		"1000-2000 r-xp 00000000 00:00 0 /a\nnot a line\n",
	};
	struct procmaps m;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m.maps = (void *)1;
		assert_int_equal(procmaps_parse(bad[i], strlen(bad[i]), &m), -EINVAL);
		assert_null(m.maps);
		assert_int_equal(m.n, 0);
	}
}

/* Input that is not NUL-terminated must not be read past len. */
static void test_not_terminated(void **state)
{
	static const char line[] = "1000-2000 r-xp 00000000 00:00 0 /abcdef";
	char *copy = malloc(sizeof(line) - 1);
	struct procmaps m;

	(void)state;
	memcpy(copy, line, sizeof(line) - 1);
	assert_int_equal(procmaps_parse(copy, sizeof(line) - 4, &m), 0);
	assert_string_equal(m.maps[0].path, "/abc");
	procmaps_free(&m);
	free(copy);
}

static void test_read_self(void **state)
{
	struct procmaps m;
	const struct procmap *p;
	int local;

	(void)state;
	assert_int_equal(procmaps_read(getpid(), &m), 0);
	assert_true(m.n > 3);
	p = procmaps_find(&m, (uint64_t)(uintptr_t)&test_read_self);
	assert_non_null(p);
	assert_true(p->prot & PROT_EXEC);
	assert_true(strstr(p->path, "test_procmaps") != NULL);
	p = procmaps_find(&m, (uint64_t)(uintptr_t)&local);
	assert_non_null(p);
	assert_string_equal(p->path, "[stack]");
	procmaps_free(&m);
}

static void test_read_missing(void **state)
{
	struct procmaps m;
	char dir[PATH_MAX + 32], path[PATH_MAX + 64];

	(void)state;
	assert_int_equal(procmaps_read(0x7ffffff0, &m), -ESRCH);
	assert_int_equal(procmaps_read(-1, &m), -EINVAL);

	/* A fake proc root, as the symbolizer tests use. */
	assert_true(symtest_fmt(dir, "%s/proc/77", symtest_dir));
	assert_int_equal(symtest_mkdirs(dir), 0);
	assert_true(symtest_fmt(path, "%s/maps", dir));
	assert_int_equal(symtest_write_str(path, "1000-2000 r-xp 00000000 00:00 0 /a\n"), 0);
	assert_true(symtest_fmt(dir, "%s/proc", symtest_dir));
	assert_int_equal(procmaps_read_at(dir, 77, &m), 0);
	assert_int_equal(m.n, 1);
	procmaps_free(&m);
	assert_int_equal(procmaps_read_at(dir, 78, &m), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_sample),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_huge_and_edge_numbers),
		cmocka_unit_test(test_empty_and_blank),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_not_terminated),
		cmocka_unit_test(test_read_self),
		cmocka_unit_test(test_read_missing),
	};

	if (!symtest_setup("procmaps"))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
