/* jitdump files (perf's format, as CPython's -X perf_jit and the JVM's
 * agent write them) read into a perf map: code loads named, other records
 * stepped over, and files that lie (cut short, lengths past the end,
 * another pid's, another byte order's) read as far as they are true. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "jitdump.h"

#define PID 4242u

struct buf {
	unsigned char b[1 << 16];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void header(struct buf *b, uint32_t magic, uint32_t pid)
{
	put32(b, magic);
	put32(b, 1);  /* version */
	put32(b, 40); /* header size */
	put32(b, 62); /* EM_X86_64 */
	put32(b, 0);
	put32(b, pid);
	put64(b, 1);  /* timestamp */
	put64(b, 0);  /* flags */
}

/* A JIT_CODE_LOAD record naming [addr, addr + size), with code bytes. */
static void load(struct buf *b, uint64_t addr, uint64_t size, const char *name, size_t code)
{
	size_t nlen = strlen(name) + 1;

	put32(b, 0);
	put32(b, (uint32_t)(16 + 40 + nlen + code));
	put64(b, 2);
	put32(b, PID);
	put32(b, PID);
	put64(b, addr); /* vma */
	put64(b, addr);
	put64(b, size);
	put64(b, 7); /* code index */
	put(b, name, nlen);
	while (code--)
		put(b, "\xcc", 1);
}

/* A record of another kind (debug info, unwinding info): stepped over. */
static void other(struct buf *b, uint32_t id, size_t body)
{
	put32(b, id);
	put32(b, (uint32_t)(16 + body));
	put64(b, 3);
	while (body--)
		put(b, "\0", 1);
}

/* b as a file, read: jitdump_read's result; the map in *out. */
static int read_buf(const struct buf *b, uint32_t pid, struct perfmap **out,
		    struct jitdump_counts *c)
{
	FILE *f = tmpfile();
	int err;

	assert_non_null(f);
	assert_int_equal(fwrite(b->b, 1, b->n, f), b->n);
	assert_int_equal(fflush(f), 0);
	*out = perfmap_new();
	assert_non_null(*out);
	err = jitdump_read(fileno(f), b->n, pid, JITDUMP_MAX_RECORDS, *out, c);
	perfmap_finish(*out);
	fclose(f);
	return err;
}

static void test_loads_named(void **state)
{
	static struct buf b;
	struct jitdump_counts c;
	struct perfmap *pm;

	(void)state;
	b.n = 0;
	header(&b, 0x4A695444, PID);
	load(&b, 0x7f0000001000, 0x40, "py::work:/app/job.py", 11);
	other(&b, 4, 100); /* JIT_CODE_UNWINDING_INFO */
	load(&b, 0x7f0000002000, 0x80, "LazyCompile:*add app.js:3", 300);
	assert_int_equal(read_buf(&b, PID, &pm, &c), 0);
	assert_int_equal(c.records, 3);
	assert_int_equal(c.loads, 2);
	assert_string_equal(perfmap_lookup(pm, 0x7f0000001010, NULL), "py::work:/app/job.py");
	assert_string_equal(perfmap_lookup(pm, 0x7f000000207f, NULL), "LazyCompile:*add app.js:3");
	assert_null(perfmap_lookup(pm, 0x7f0000001040, NULL));
	perfmap_free(pm);
}

/* A JIT appends as it runs: the record being written ends the read. */
static void test_cut_short(void **state)
{
	static struct buf b;
	struct jitdump_counts c;
	struct perfmap *pm;

	(void)state;
	b.n = 0;
	header(&b, 0x4A695444, PID);
	load(&b, 0x1000, 0x10, "first", 4);
	load(&b, 0x2000, 0x10, "second", 4);
	b.n -= 10; /* the second record's code and name end not written yet */
	assert_int_equal(read_buf(&b, PID, &pm, &c), 0);
	assert_int_equal(c.loads, 1);
	assert_string_equal(perfmap_lookup(pm, 0x1000, NULL), "first");
	assert_null(perfmap_lookup(pm, 0x2000, NULL));
	perfmap_free(pm);
}

/* Lengths that lie: a record claiming more than the file, one too short
 * for its kind, a name without its NUL (cut at the record's end). */
static void test_lying_lengths(void **state)
{
	static struct buf b;
	struct jitdump_counts c;
	struct perfmap *pm;
	size_t at;

	(void)state;
	b.n = 0;
	header(&b, 0x4A695444, PID);
	at = b.n;
	load(&b, 0x1000, 0x10, "nonul", 0);
	b.n--; /* drop the NUL: the name runs to the record's end */
	memcpy(b.b + at + 4, &(uint32_t){ (uint32_t)(b.n - at) }, 4);
	at = b.n;
	load(&b, 0x3000, 0x10, "huge", 0);
	memcpy(b.b + at + 4, &(uint32_t){ 0xfffffff0u }, 4); /* past the end */
	assert_int_equal(read_buf(&b, PID, &pm, &c), 0);
	assert_int_equal(c.loads, 1);
	assert_string_equal(perfmap_lookup(pm, 0x1000, NULL), "nonul");
	assert_null(perfmap_lookup(pm, 0x3000, NULL));
	perfmap_free(pm);

	b.n = 0;
	header(&b, 0x4A695444, PID);
	other(&b, 0, 8); /* a code load with no room for its fields */
	load(&b, 0x5000, 0x10, "after", 0);
	assert_int_equal(read_buf(&b, PID, &pm, &c), 0);
	assert_int_equal(c.loads, 0); /* the read stops at the bad record */
	perfmap_free(pm);
}

/* Not this process's, or not this byte order's: refused whole. */
static void test_refused(void **state)
{
	static struct buf b;
	struct jitdump_counts c;
	struct perfmap *pm;

	(void)state;
	b.n = 0;
	header(&b, 0x4A695444, PID + 1);
	load(&b, 0x1000, 0x10, "planted", 0);
	assert_int_equal(read_buf(&b, PID, &pm, &c), -EPROTO);
	perfmap_free(pm);
	b.n = 0;
	header(&b, 0x4454694A, PID); /* the magic of the other byte order */
	load(&b, 0x1000, 0x10, "swapped", 0);
	assert_int_equal(read_buf(&b, PID, &pm, &c), -EPROTO);
	perfmap_free(pm);
	b.n = 20; /* shorter than a header */
	assert_int_equal(read_buf(&b, PID, &pm, &c), -EPROTO);
	perfmap_free(pm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loads_named),
		cmocka_unit_test(test_cut_short),
		cmocka_unit_test(test_lying_lengths),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
