/* test_pycode: the line-table decoders against each available CPython's
 * own co_lines()/findlinestarts(), code-object reading against live
 * interpreters, and the cache's validation against fake code objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pycode.h"
#include "pylinetable.h"
#include "pyinterp.h"

static struct pyinterps interps;

/* Dumps every code object of a synthetic module with awkward line
 * patterns and of a few big stdlib modules: its table, then Python's own
 * answer, as "C firstlineno codelen hex", "R start end line" (3.10+) or
 * "S offset line" (3.9). */
/* clang-format off */
static const char oracle_py[] =
	"import sys, dis, threading, inspect, argparse\n"
	"V = sys.version_info[:2]\n"
	"SYN = ('def big_gap():\\n    a = 1\\n' + '\\n' * 5000 + '    b = 2\\n'\n"
	"       '    return a + b\\n\\n'\n"
	"       'def backwards(x):\\n    return (x +\\n            x) * [\\n'\n"
	"       '        i for i in range(3)\\n    ]\\n\\n'\n"
	"       'def long_line():\\n    return ' +\n"
	"       ' + '.join('x%d' % i for i in range(400)) + '\\n\\n'\n"
	"       'def loops():\\n    for i in range(10):\\n        if i:\\n'\n"
	"       '            continue\\n    while False:\\n        pass\\n'\n"
	"       '    return [lambda: 1, lambda: 2]\\n\\n'\n"
	"       'class K:\\n    def m(self):\\n        try:\\n            1/0\\n'\n"
	"       '        except ZeroDivisionError:\\n            pass\\n'\n"
	"       '        finally:\\n            x = 1\\n'\n"
	"       + '\\n' * 70000 + 'def far():\\n    return 1\\n')\n"
	"def codes(co):\n"
	"    yield co\n"
	"    for c in co.co_consts:\n"
	"        if hasattr(c, 'co_code'):\n"
	"            yield from codes(c)\n"
	"srcs = [('<syn>', SYN)]\n"
	"for m in (threading, dis, inspect, argparse):\n"
	"    srcs.append((m.__file__, open(m.__file__, encoding='utf-8').read()))\n"
	"out = open(sys.argv[1], 'w')\n"
	"for name, src in srcs:\n"
	"    for co in codes(compile(src, name, 'exec')):\n"
	"        tab = co.co_linetable if V >= (3, 10) else co.co_lnotab\n"
	"        out.write('C %d %d %s\\n' % (co.co_firstlineno, len(co.co_code),\n"
	"                                    tab.hex() or '-'))\n"
	"        if V >= (3, 10):\n"
	"            for s, e, l in co.co_lines():\n"
	"                out.write('R %d %d %d\\n' % (s, e, -1 if l is None else l))\n"
	"        else:\n"
	"            for a, l in dis.findlinestarts(co):\n"
	"                out.write('S %d %d\\n' % (a, l))\n"
	"out.write('END\\n')\n"
	"out.close()\n";
/* clang-format on */

/* One code object's expectations as read from an oracle dump. */
struct expect {
	int32_t firstlineno;
	uint32_t codelen;
	uint8_t *tab;
	size_t tablen;
	uint32_t (*ranges)[3]; /* start, end, line (as uint32 of int32) */
	size_t nranges, cap;
	int starts_only; /* 3.9 "S" lines: ranges[i] = {offset, 0, line} */
};

static void expect_reset(struct expect *e)
{
	free(e->tab);
	free(e->ranges);
	memset(e, 0, sizeof(*e));
}

static int hex_decode(const char *hex, uint8_t **out, size_t *len)
{
	size_t n = strlen(hex) / 2, i;

	*out = malloc(n + 1);
	if (!*out)
		return -ENOMEM;
	if (!strcmp(hex, "-"))
		n = 0;
	for (i = 0; i < n; i++) {
		unsigned int b;

		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return -EINVAL;
		(*out)[i] = (uint8_t)b;
	}
	*len = n;
	return 0;
}

static void expect_add(struct expect *e, uint32_t a, uint32_t b, int32_t line)
{
	if (e->nranges == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 64;
		e->ranges = realloc(e->ranges, e->cap * sizeof(*e->ranges));
		assert_non_null(e->ranges);
	}
	e->ranges[e->nranges][0] = a;
	e->ranges[e->nranges][1] = b;
	e->ranges[e->nranges][2] = (uint32_t)line;
	e->nranges++;
}

/* Python's line for byte offset off, -1 for none, -2 if not covered. */
static int32_t expected_line(const struct expect *e, uint32_t off)
{
	int32_t line = e->firstlineno;
	size_t i;

	if (e->starts_only) {
		for (i = 0; i < e->nranges && e->ranges[i][0] <= off; i++)
			line = (int32_t)e->ranges[i][2];
		return line;
	}
	for (i = 0; i < e->nranges; i++)
		if (off >= e->ranges[i][0] && off < e->ranges[i][1])
			return (int32_t)e->ranges[i][2];
	return -2;
}

static uint32_t line_format(int minor)
{
	return minor <= 9    ? PYOFF_LINES_LNOTAB
	       : minor == 10 ? PYOFF_LINES_PEP626
			     : PYOFF_LINES_LOCATIONS;
}

/* Decode e's table and compare every code unit; returns offsets checked. */
static size_t check_expect(const struct expect *e, int minor, const char *py)
{
	struct pylines l;
	size_t checked = 0;
	uint32_t off;
	int err;

	err = pylines_decode(line_format(minor), e->tab, e->tablen, e->firstlineno, &l);
	assert_int_equal(err, 0);
	for (off = 0; off < e->codelen; off += 2) {
		int32_t want = expected_line(e, off), got = pylines_line(&l, off);

		if (want == -2)
			continue;
		if (want != got)
			fail_msg("%s: firstlineno %d offset %u: decoder says %d, Python %d", py,
				 e->firstlineno, off, got, want);
		checked++;
	}
	assert_int_equal(pylines_line(&l, -2), e->firstlineno);
	pylines_free(&l);
	return checked;
}

static void check_oracle_file(const char *path, int minor, const char *py)
{
	struct expect e = {0};
	size_t codes = 0, offsets = 0, cap = 0;
	char *line = NULL;
	int have = 0, done = 0;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	while (getline(&line, &cap, f) > 0) {
		long a, b, c;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == 'C' || !strcmp(line, "END")) {
			if (have) {
				offsets += check_expect(&e, minor, py);
				codes++;
			}
			expect_reset(&e);
			have = line[0] == 'C';
			done = !have;
			if (have) {
				int pos = 0;

				assert_true(sscanf(line, "C %ld %ld %n", &a, &b, &pos) >= 2 && pos);
				e.firstlineno = (int32_t)a;
				e.codelen = (uint32_t)b;
				assert_int_equal(hex_decode(line + pos, &e.tab, &e.tablen), 0);
			}
		} else if (sscanf(line, "R %ld %ld %ld", &a, &b, &c) == 3) {
			expect_add(&e, (uint32_t)a, (uint32_t)b, (int32_t)c);
		} else if (sscanf(line, "S %ld %ld", &a, &b) == 2) {
			e.starts_only = 1;
			expect_add(&e, (uint32_t)a, 0, (int32_t)b);
		}
	}
	free(line);
	fclose(f);
	expect_reset(&e);
	assert_true(done);
	print_message("  %s: %zu code objects, %zu offsets match\n", py, codes, offsets);
	assert_true(codes > 100);
}

static int run_for_minor(int minor, void (*fn)(const struct pyinterp *))
{
	int i, ran = 0;

	for (i = 0; i < interps.n; i++) {
		if (interps.list[i].minor != minor)
			continue;
		fn(&interps.list[i]);
		ran++;
	}
	return ran;
}

static void oracle_one(const struct pyinterp *pi)
{
	char dir[PATH_MAX], script[PATH_MAX + 32], out[PATH_MAX + 32];

	assert_int_equal(pyinterp_scratch("pycode", dir, sizeof(dir)), 0);
	snprintf(script, sizeof(script), "%s/oracle.py", dir);
	snprintf(out, sizeof(out), "%s/oracle.txt", dir);
	assert_int_equal(pyinterp_write(script, oracle_py), 0);
	if (pyinterp_run(pi->path, script, out))
		fail_msg("%s %s failed", pi->path, script);
	check_oracle_file(out, pi->minor, pi->path);
}

/* ---- live code objects ---- */

/* Prints the code objects of functions with names of each string kind
 * (ASCII, Latin-1, UCS-2, and a 3000-character one; the file name itself
 * is UCS-4) with their expected names and lines, then waits. */
/* clang-format off */
static const char live_py[] =
	"import sys, os, dis, time\n"
	"class Klass:\n"
	"    def m\u00e9thode(self, a):\n"
	"        b = a + 1\n"
	"        return [b\n"
	"                for _ in range(2)]\n"
	"def \u95a2\u6570():\n"
	"    x = 1\n"
	"\n"
	"    return x\n"
	"LONG = 'f' + 'o' * 3000\n"
	"exec('def %s():\\n    return 1\\n' % LONG)\n"
	"V = sys.version_info[:2]\n"
	"targets = [Klass.m\u00e9thode.__code__, \u95a2\u6570.__code__,\n"
	"           globals()[LONG].__code__, sys._getframe().f_code]\n"
	"out = open(sys.argv[1] + '.tmp', 'w', encoding='utf-8', errors='surrogateescape')\n"
	"NOT_CODE = 'not a code object ' * 3\n"
	"out.write('X %d\\n' % id(NOT_CODE))\n"
	"for co in targets:\n"
	"    name = co.co_qualname if V >= (3, 11) else co.co_name\n"
	"    out.write('C %d %d %d\\n' % (id(co), co.co_firstlineno, len(co.co_code)))\n"
	"    out.write('N %s\\n' % name[:1024])\n"
	"    out.write('F %s\\n' % co.co_filename)\n"
	"    if V >= (3, 10):\n"
	"        for s, e, l in co.co_lines():\n"
	"            out.write('R %d %d %d\\n' % (s, e, -1 if l is None else l))\n"
	"    else:\n"
	"        for a, l in dis.findlinestarts(co):\n"
	"            out.write('S %d %d\\n' % (a, l))\n"
	"out.write('END\\n')\n"
	"out.close()\n"
	"os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
	"time.sleep(600)\n";
/* clang-format on */

struct live_code {
	uint64_t addr;
	char name[4096];
	char file[PATH_MAX];
	struct expect e;
};

/* Resolve every offset of one code object in the live process. */
static void check_live_code(struct pycode_cache *c, const struct pyruntime *rt,
			    struct live_code *lc)
{
	struct pycode_frame f;
	uint32_t off;

	for (off = 0; off < lc->e.codelen; off += 2) {
		int64_t instr = rt->minor == 10 ? off / 2 : off;
		int32_t want = expected_line(&lc->e, off);

		assert_int_equal(pycode_resolve(c, rt, lc->addr, 0, instr, &f), 0);
		assert_string_equal(f.qualname, lc->name);
		assert_string_equal(f.filename, lc->file);
		if (want == -2)
			continue;
		if (want == -1)
			want = lc->e.firstlineno;
		if (f.line != want)
			fail_msg("%s offset %u: line %d, Python says %d", lc->name, off, f.line,
				 want);
	}
	assert_int_equal(pycode_resolve(c, rt, lc->addr, 0, -1, &f), 0);
	assert_int_equal(f.line, lc->e.firstlineno);
}

static void check_live_file(FILE *f, struct pycode_cache *c, const struct pyruntime *rt)
{
	struct live_code *lc = calloc(1, sizeof(*lc));
	struct pycode_frame fr;
	char *line = NULL;
	size_t cap = 0;
	int ncodes = 0, have = 0;
	unsigned long long addr;
	long a, b, x;

	assert_non_null(lc);
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "X %llu", &addr) == 1) {
			assert_int_equal(pycode_resolve(c, rt, addr, 0, 0, &fr), -EINVAL);
		} else if (line[0] == 'C' || !strcmp(line, "END")) {
			if (have) {
				check_live_code(c, rt, lc);
				ncodes++;
			}
			expect_reset(&lc->e);
			have = sscanf(line, "C %llu %ld %ld", &addr, &a, &b) == 3;
			lc->addr = addr;
			lc->e.firstlineno = (int32_t)a;
			lc->e.codelen = (uint32_t)b;
		} else if (line[0] == 'N') {
			snprintf(lc->name, sizeof(lc->name), "%s", line + 2);
		} else if (line[0] == 'F') {
			snprintf(lc->file, sizeof(lc->file), "%s", line + 2);
		} else if (sscanf(line, "R %ld %ld %ld", &a, &b, &x) == 3) {
			expect_add(&lc->e, (uint32_t)a, (uint32_t)b, (int32_t)x);
		} else if (sscanf(line, "S %ld %ld", &a, &b) == 2) {
			lc->e.starts_only = 1;
			expect_add(&lc->e, (uint32_t)a, 0, (int32_t)b);
		}
	}
	free(line);
	expect_reset(&lc->e);
	free(lc);
	assert_int_equal(ncodes, 4);
}

static void live_one(const struct pyinterp *pi)
{
	char dir[PATH_MAX], script[PATH_MAX + 32], out[PATH_MAX + 32];
	struct pycode_cache *c = pycode_cache_new();
	struct pyruntime rt;
	size_t n;
	FILE *f;
	pid_t pid;

	assert_non_null(c);
	assert_int_equal(pyinterp_scratch("pycode", dir, sizeof(dir)), 0);
	/* U+1F600 makes co_filename a 4-byte-kind string. */
	snprintf(script, sizeof(script), "%s/live_\xf0\x9f\x98\x80.py", dir);
	snprintf(out, sizeof(out), "%s/live.txt", dir);
	assert_int_equal(pyinterp_write(script, live_py), 0);
	pid = pyinterp_spawn(pi->path, script, out);
	assert_true(pid > 0);
	if (pyinterp_wait_file(out, 20000)) {
		pyinterp_kill(pid);
		fail_msg("%s: no output from %s", pi->path, script);
	}
	assert_int_equal(pyruntime_detect(pid, &rt), 0);
	assert_int_equal(rt.minor, pi->minor);
	f = fopen(out, "r");
	assert_non_null(f);
	check_live_file(f, c, &rt);
	n = pycode_cache_entries(c);
	print_message("  %s: live code objects resolved (%zu cached)\n", pi->path, n);
	/* Forgotten (the process ended, or exec'ed): its entries are freed
	 * at once, and every code object is read afresh. */
	pycode_cache_forget_pid(c, pid);
	assert_int_equal(pycode_cache_entries(c), 0);
	assert_int_equal(pycode_cache_bytes(c), 0);
	rewind(f);
	check_live_file(f, c, &rt);
	assert_int_equal(pycode_cache_entries(c), n);
	/* Another pid's forgetting leaves them. */
	pycode_cache_forget_pid(c, pid + 1);
	assert_int_equal(pycode_cache_entries(c), n);
	fclose(f);
	pyinterp_kill(pid);
	pycode_cache_free(c);
}

static void one(const struct pyinterp *pi)
{
	oracle_one(pi);
	live_one(pi);
}

static void for_version(int minor)
{
	if (!run_for_minor(minor, one)) {
		print_message("  no python3.%d found (PATH, pyenv or PROFD_TEST_PYTHONS)\n", minor);
		skip();
	}
}

#define VERSION_TEST(minor)                                                                        \
	static void test_python3_##minor(void **state)                                             \
	{                                                                                          \
		(void)state;                                                                       \
		for_version(minor);                                                                \
	}
VERSION_TEST(9)
VERSION_TEST(10)
VERSION_TEST(11)
VERSION_TEST(12)
VERSION_TEST(13)
VERSION_TEST(14)
VERSION_TEST(15)

/* ---- malformed tables and fake code objects in our own memory ---- */

static void test_decode_malformed(void **state)
{
	static const uint8_t no_start[] = {0x04};
	static const uint8_t cut_varint[] = {0xe8, 0x40};
	static const uint8_t cut_long[] = {0xf0, 0x02};
	static const uint8_t long_varint[] = {0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01};
	/* 3.10: [0,6) line 6, [6,10) none, then +2 with no range, [10,12) 8 */
	static const uint8_t pep626[] = {6, 1, 4, 0x80, 0, 2, 2, 0};
	struct pylines l;

	(void)state;
	assert_int_equal(pylines_decode(PYOFF_LINES_LOCATIONS, no_start, 1, 1, &l), -EINVAL);
	assert_int_equal(pylines_decode(PYOFF_LINES_LOCATIONS, cut_varint, 2, 1, &l), -EINVAL);
	assert_int_equal(pylines_decode(PYOFF_LINES_LOCATIONS, cut_long, 2, 1, &l), -EINVAL);
	assert_int_equal(pylines_decode(PYOFF_LINES_LOCATIONS, long_varint, 8, 1, &l), -EINVAL);
	assert_int_equal(
	    pylines_decode(PYOFF_LINES_LOCATIONS, no_start, PYLINES_MAX_TABLE + 1, 1, &l), -E2BIG);
	assert_int_equal(pylines_decode(99, pep626, sizeof(pep626), 1, &l), -EINVAL);
	pylines_free(&l);
	assert_int_equal(pylines_decode(PYOFF_LINES_PEP626, pep626, sizeof(pep626), 5, &l), 0);
	assert_int_equal(pylines_line(&l, 0), 6);
	assert_int_equal(pylines_line(&l, 4), 6);
	assert_int_equal(pylines_line(&l, 6), -1);
	assert_int_equal(pylines_line(&l, 10), 8);
	assert_int_equal(pylines_line(&l, 12), -1);
	assert_int_equal(pylines_line(&l, -2), 5);
	pylines_free(&l);
}

/* Objects laid out as 3.12 has them, read back through our own pid. */
struct fake_str {
	uint8_t head[40];
	char data[2048];
};

struct fake {
	uint8_t type[64], other_type[64], code[256], bytes[64], bytes2[64];
	struct fake_str file, qual, qual2, big;
};

static void fake_str_set(struct fake_str *s, const char *text, uint64_t len, uint32_t kind)
{
	uint32_t state =
	    kind << PYOFF_UNICODE_KIND_SHIFT | PYOFF_UNICODE_COMPACT | PYOFF_UNICODE_ASCII;

	memset(s, 0, sizeof(*s));
	memcpy(s->head + 16, &len, 8);
	memcpy(s->head + 32, &state, 4);
	snprintf(s->data, sizeof(s->data), "%s", text);
}

static void put_ptr(uint8_t *at, const void *p)
{
	uint64_t v = (uint64_t)(uintptr_t)p;

	memcpy(at, &v, 8);
}

static uint64_t get_ptr(const uint8_t *at)
{
	uint64_t v;

	memcpy(&v, at, 8);
	return v;
}

static void fake_init(struct fake *f, struct pyruntime *rt)
{
	/* Location table, firstlineno 10: 2 units on line 12, 1 on 15. */
	static const uint8_t tab1[] = {0xe9, 0x04, 0xe8, 0x06};
	static const uint8_t tab2[] = {0xe9, 0x0e};
	static const char *code_name = "code", *str_name = "str";
	uint64_t n1 = sizeof(tab1), n2 = sizeof(tab2);
	int32_t first = 10;

	memset(f, 0, sizeof(*f));
	memset(rt, 0, sizeof(*rt));
	rt->pid = getpid();
	rt->major = 3;
	rt->minor = 12;
	rt->off = *pyoffsets_builtin(3, 12);
	put_ptr(f->type + 24, code_name);
	put_ptr(f->other_type + 24, str_name);
	memcpy(f->bytes + 16, &n1, 8);
	memcpy(f->bytes + 32, tab1, sizeof(tab1));
	memcpy(f->bytes2 + 16, &n2, 8);
	memcpy(f->bytes2 + 32, tab2, sizeof(tab2));
	fake_str_set(&f->file, "/a.py", 5, 1);
	fake_str_set(&f->qual, "Klass.alpha", 11, 1);
	fake_str_set(&f->qual2, "beta", 4, 1);
	put_ptr(f->code + 8, f->type);
	put_ptr(f->code + 112, &f->file);
	put_ptr(f->code + 120, &f->qual);
	put_ptr(f->code + 128, &f->qual);
	put_ptr(f->code + 136, f->bytes);
	memcpy(f->code + 68, &first, 4);
}

static void expect_name(struct pycode_cache *c, const struct pyruntime *rt, struct fake *f,
			int64_t off, const char *want)
{
	char buf[256];

	assert_int_equal(pycode_name(c, rt, (uint64_t)(uintptr_t)f->code, 0, off, buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, want);
}

static void test_fake_cache_revalidates(void **state)
{
	struct pycode_cache *c = pycode_cache_new();
	struct pycode_frame fr;
	struct pyruntime rt;
	struct fake *f = calloc(1, sizeof(*f));
	int32_t first = 20;

	(void)state;
	assert_non_null(f);
	fake_init(f, &rt);
	expect_name(c, &rt, f, 0, "Klass.alpha (/a.py:12)");
	expect_name(c, &rt, f, 4, "Klass.alpha (/a.py:15)");
	expect_name(c, &rt, f, -2, "Klass.alpha (/a.py:10)");
	expect_name(c, &rt, f, 6, "Klass.alpha (/a.py:10)"); /* past the table */
	assert_int_equal(pycode_cache_entries(c), 1);
	assert_true(pycode_cache_bytes(c) > 0);
	/* The address is reused by another code object. */
	put_ptr(f->code + 128, &f->qual2);
	expect_name(c, &rt, f, 0, "beta (/a.py:12)");
	put_ptr(f->code + 136, f->bytes2);
	expect_name(c, &rt, f, 0, "beta (/a.py:17)");
	memcpy(f->code + 68, &first, 4);
	expect_name(c, &rt, f, 0, "beta (/a.py:27)");
	assert_int_equal(pycode_cache_entries(c), 1);
	/* Now it is not a code object at all. */
	put_ptr(f->code + 8, f->other_type);
	assert_int_equal(pycode_resolve(c, &rt, (uint64_t)(uintptr_t)f->code, 0, 0, &fr), -EINVAL);
	assert_int_equal(pycode_cache_entries(c), 0);
	assert_int_equal(pycode_cache_bytes(c), 0);
	pycode_cache_forget_pid(c, rt.pid);
	pycode_cache_free(c);
	free(f);
}

/* The fingerprint the walker computes from the fake's fields. */
static uint32_t fake_fp(const struct fake *f)
{
	int32_t first;

	memcpy(&first, f->code + 68, 4);
	return profd_pyfp(get_ptr(f->code + 112), get_ptr(f->code + 120), get_ptr(f->code + 128),
			  get_ptr(f->code + 136), (uint32_t)first);
}

/* A name is given only to the code object sampled: once another one
 * has its address (here: another qualname and line table), a frame
 * carrying the old one's fingerprint is not named, the new one's is. */
static void test_fake_fingerprint(void **state)
{
	struct pycode_cache *c = pycode_cache_new();
	uint64_t code;
	struct pycode_frame fr;
	struct pyruntime rt;
	struct fake *f = calloc(1, sizeof(*f));
	uint32_t old_fp;

	(void)state;
	assert_non_null(f);
	fake_init(f, &rt);
	code = (uint64_t)(uintptr_t)f->code;
	old_fp = fake_fp(f);
	assert_int_not_equal(old_fp, 0);
	assert_int_equal(pycode_resolve(c, &rt, code, old_fp, 0, &fr), 0);
	assert_string_equal(fr.qualname, "Klass.alpha");
	assert_int_equal(pycode_resolve(c, &rt, code, old_fp ^ 1, 0, &fr), -ESTALE);
	put_ptr(f->code + 128, &f->qual2);
	put_ptr(f->code + 136, f->bytes2);
	assert_int_not_equal(fake_fp(f), old_fp);
	assert_int_equal(pycode_resolve(c, &rt, code, old_fp, 0, &fr), -ESTALE);
	assert_int_equal(pycode_resolve(c, &rt, code, fake_fp(f), 0, &fr), 0);
	assert_string_equal(fr.qualname, "beta");
	assert_int_equal(pycode_resolve(c, &rt, code, 0, 0, &fr), 0); /* 0: unchecked */
	pycode_cache_free(c);
	free(f);
}

static void test_fake_untrusted_sizes(void **state)
{
	struct pycode_cache *c = pycode_cache_new();
	struct pycode_frame fr;
	struct pyruntime rt;
	struct fake *f = calloc(1, sizeof(*f));
	uint64_t huge = 1ull << 40;
	char big[2048];

	(void)state;
	assert_non_null(f);
	fake_init(f, &rt);
	memset(big, 'q', 2047);
	big[2047] = '\0';
	fake_str_set(&f->big, big, huge, 1); /* claims 2^40 characters */
	put_ptr(f->code + 128, &f->big);
	assert_int_equal(pycode_resolve(c, &rt, (uint64_t)(uintptr_t)f->code, 0, 0, &fr), 0);
	assert_int_equal(strlen(fr.qualname), PYCODE_MAX_STR);
	fake_str_set(&f->big, "x", 1, 3); /* no such kind */
	put_ptr(f->code + 120, &f->big);  /* new key: forces a re-read */
	assert_int_equal(pycode_resolve(c, &rt, (uint64_t)(uintptr_t)f->code, 0, 0, &fr), -EINVAL);
	fake_init(f, &rt);
	memcpy(f->bytes + 16, &huge, 8); /* a 1 TiB line table */
	assert_int_equal(pycode_resolve(c, &rt, (uint64_t)(uintptr_t)f->code, 0, 0, &fr), -E2BIG);
	put_ptr(f->code + 112, (void *)0x10); /* unmapped */
	assert_true(pycode_resolve(c, &rt, (uint64_t)(uintptr_t)f->code, 0, 0, &fr) < 0);
	assert_true(pycode_resolve(c, &rt, 0x10, 0, 0, &fr) < 0);
	pycode_cache_free(c);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_malformed),
	    cmocka_unit_test(test_fake_cache_revalidates),
	    cmocka_unit_test(test_fake_fingerprint),
	    cmocka_unit_test(test_fake_untrusted_sizes),
	    cmocka_unit_test(test_python3_9),
	    cmocka_unit_test(test_python3_10),
	    cmocka_unit_test(test_python3_11),
	    cmocka_unit_test(test_python3_12),
	    cmocka_unit_test(test_python3_13),
	    cmocka_unit_test(test_python3_14),
	    cmocka_unit_test(test_python3_15),
	};

	pyinterp_discover(&interps);
	for (int i = 0; i < interps.n; i++)
		print_message("python 3.%d: %s\n", interps.list[i].minor, interps.list[i].path);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
