/* fileframes: user frame names shared by file and offset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fileframes.h"

static struct procmap map_of(uint64_t start, uint64_t offset, uint32_t minor, uint64_t inode,
			     char *path)
{
	struct procmap m = {
		.start = start,
		.end = start + 0x10000,
		.offset = offset,
		.inode = inode,
		.dev_major = 8,
		.dev_minor = minor,
		.path = path,
	};
	return m;
}

/* Two processes map the same file at different addresses: the name one
 * kept is found by the other at the same file offset. */
static void test_shared_by_offset(void **state)
{
	char path[] = "/usr/lib/libtorch_cpu.so";
	struct procmap a = map_of(0x7f0000000000, 0x2000, 1, 42, path);
	struct procmap b = map_of(0x7e1234560000, 0x2000, 1, 42, path);
	struct fileframes ff;
	uint64_t v = 0;

	(void)state;
	fileframes_init(&ff, 100);
	fileframes_put(&ff, &a, 0x7f0000000123, 1, 7);
	assert_true(fileframes_get(&ff, &b, 0x7e1234560123, 1, &v));
	assert_int_equal(v, 7);
	/* Same address, another file offset of the mapping. */
	assert_false(fileframes_get(&ff, &b, 0x7e1234560124, 1, &v));
	fileframes_free(&ff);
}

/* Another inode, device or path (a hard link, a container's bind mount:
 * a frame's module is its path) is another file; mappings without a file
 * identity, and names of no load (seq 0), are never kept. */
static void test_identity(void **state)
{
	char path[] = "/usr/lib/x.so", link[] = "/opt/app/x.so", anon[] = "", heap[] = "[heap]";
	struct procmap a = map_of(0x1000000, 0, 1, 42, path);
	struct procmap other_ino = map_of(0x1000000, 0, 1, 43, path);
	struct procmap other_dev = map_of(0x1000000, 0, 2, 42, path);
	struct procmap other_path = map_of(0x1000000, 0, 1, 42, link);
	struct procmap no_ino = map_of(0x1000000, 0, 1, 0, path);
	struct procmap an = map_of(0x1000000, 0, 0, 0, anon);
	struct procmap hp = map_of(0x1000000, 0, 0, 5, heap);
	struct fileframes ff;
	uint64_t v;

	(void)state;
	fileframes_init(&ff, 100);
	fileframes_put(&ff, &a, 0x1000010, 1, 1);
	assert_false(fileframes_get(&ff, &other_ino, 0x1000010, 1, &v));
	assert_false(fileframes_get(&ff, &other_dev, 0x1000010, 1, &v));
	assert_false(fileframes_get(&ff, &other_path, 0x1000010, 1, &v));
	fileframes_put(&ff, &no_ino, 0x1000020, 1, 2);
	fileframes_put(&ff, &an, 0x1000020, 1, 2);
	fileframes_put(&ff, &hp, 0x1000020, 1, 2);
	fileframes_put(&ff, &a, 0x1000030, 0, 2);
	assert_int_equal(ff.entries, FF_FILE_COST + 1);
	assert_false(fileframes_get(&ff, &no_ino, 0x1000020, 1, &v));
	assert_false(fileframes_get(&ff, &an, 0x1000020, 1, &v));
	assert_false(fileframes_get(&ff, &hp, 0x1000020, 1, &v));
	assert_false(fileframes_get(&ff, &a, 0x1000030, 0, &v));
	fileframes_free(&ff);
}

/* Names of one load of a file do not answer for another (the symbol cache
 * evicted and read it again, or the inode is another file's now): a put
 * from the new load replaces them. */
static void test_new_load_starts_afresh(void **state)
{
	char path[] = "/usr/lib/x.so";
	struct procmap a = map_of(0x1000000, 0, 1, 42, path);
	struct fileframes ff;
	uint64_t v;

	(void)state;
	fileframes_init(&ff, 100);
	fileframes_put(&ff, &a, 0x1000010, 1, 1);
	fileframes_put(&ff, &a, 0x1000020, 1, 2);
	assert_false(fileframes_get(&ff, &a, 0x1000010, 2, &v));
	fileframes_put(&ff, &a, 0x1000010, 2, 3);
	assert_true(fileframes_get(&ff, &a, 0x1000010, 2, &v));
	assert_int_equal(v, 3);
	assert_false(fileframes_get(&ff, &a, 0x1000020, 2, &v));
	assert_false(fileframes_get(&ff, &a, 0x1000010, 1, &v));
	assert_int_equal(ff.entries, FF_FILE_COST + 1);
	fileframes_free(&ff);
}

/* Bounded: past max entries (each file counting its own tables) it
 * starts over, and says so. */
static void test_bounded(void **state)
{
	char path[] = "/usr/lib/x.so", other[] = "/usr/lib/y.so";
	struct procmap a = map_of(0x1000000, 0, 1, 42, path);
	struct procmap b = map_of(0x2000000, 0, 1, 43, other);
	struct fileframes ff;
	uint64_t v, i;

	(void)state;
	fileframes_init(&ff, FF_FILE_COST + 10);
	for (i = 0; i < 10; i++)
		fileframes_put(&ff, &a, 0x1000000 + i, 1, i + 1);
	assert_int_equal(ff.entries, FF_FILE_COST + 10);
	assert_int_equal(ff.resets, 0);
	fileframes_put(&ff, &a, 0x1000000, 1, 99); /* already there: no growth */
	assert_int_equal(ff.entries, FF_FILE_COST + 10);
	assert_true(fileframes_get(&ff, &a, 0x1000000, 1, &v));
	assert_int_equal(v, 1);
	fileframes_put(&ff, &b, 0x2000100, 1, 11); /* a new file: past the bound */
	assert_int_equal(ff.resets, 1);
	assert_int_equal(ff.entries, FF_FILE_COST + 1);
	assert_false(fileframes_get(&ff, &a, 0x1000000, 1, &v));
	assert_true(fileframes_get(&ff, &b, 0x2000100, 1, &v));
	assert_int_equal(v, 11);
	fileframes_free(&ff);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_by_offset),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_new_load_starts_afresh),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
