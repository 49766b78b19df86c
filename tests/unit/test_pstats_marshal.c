/* pymarshal (byte vectors taken from CPython's marshal.dumps, version 4,
 * minus the FLAG_REF bit, which we never set) and render_pstats, read back
 * with a small unmarshaller that prints Python-like reprs. */
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
#include "pymarshal.h"
#include "render_pstats.h"
#include "stackset.h"

static void assert_hex(const struct buf *b, const char *hex)
{
	char got[1024] = "";

	for (size_t i = 0; i < b->len && i < 500; i++)
		snprintf(got + 2 * i, 3, "%02x", (unsigned char)b->data[i]);
	assert_string_equal(got, hex);
}

static void test_scalars(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b);
#define CHECK(expr, hex)                                                                           \
	do {                                                                                       \
		buf_reset(&b);                                                                     \
		expr;                                                                              \
		assert_hex(&b, hex);                                                               \
	} while (0)
	CHECK(pymarshal_int(&b, 1), "6901000000");
	CHECK(pymarshal_int(&b, -1), "69ffffffff");
	CHECK(pymarshal_int(&b, INT32_MAX), "69ffffff7f");
	CHECK(pymarshal_int(&b, INT32_MIN), "6900000080");
	CHECK(pymarshal_int(&b, (int64_t)INT32_MAX + 1), "6c03000000000000000200");
	CHECK(pymarshal_int(&b, (int64_t)INT32_MIN - 1), "6cfdffffff010000000200");
	CHECK(pymarshal_int(&b, (int64_t)1 << 62), "6c0500000000000000000000000400");
	CHECK(pymarshal_int(&b, INT64_MIN), "6cfbffffff00000000000000000800");
	CHECK(pymarshal_uint(&b, 7), "6907000000");
	CHECK(pymarshal_uint(&b, UINT64_MAX), "6c05000000ff7fff7fff7fff7f0f00");
	CHECK(pymarshal_float(&b, 1.5), "67000000000000f83f");
	CHECK(pymarshal_str(&b, "ab", 2), "7a026162");
	CHECK(pymarshal_str(&b, "", 0), "7a00");
	CHECK(pymarshal_str(&b, "\xc3\xa9", 2), "7502000000c3a9");
	/* Not UTF-8: each bad byte becomes U+FFFD (ef bf bd). */
	CHECK(pymarshal_str(&b, "a\xff", 2), "750400000061efbfbd");
	buf_free(&b);
}

static void test_containers(void **state)
{
	char big[300];
	struct buf b;

	(void)state;
	buf_init(&b);
	CHECK((pymarshal_dict_begin(&b), pymarshal_dict_end(&b)), "7b30");
	CHECK(pymarshal_tuple(&b, 0), "2900");
	CHECK((pymarshal_tuple(&b, 1), pymarshal_int(&b, 1)), "29016901000000");
	CHECK(pymarshal_tuple(&b, 300), "282c010000");
	/* {('f', 1, 'g'): (1, 2, 0.5, 1.0, {})} */
	CHECK((pymarshal_dict_begin(&b), pymarshal_tuple(&b, 3), pymarshal_str(&b, "f", 1),
	       pymarshal_int(&b, 1), pymarshal_str(&b, "g", 1), pymarshal_tuple(&b, 5),
	       pymarshal_int(&b, 1), pymarshal_int(&b, 2), pymarshal_float(&b, 0.5),
	       pymarshal_float(&b, 1.0), pymarshal_dict_begin(&b), pymarshal_dict_end(&b),
	       pymarshal_dict_end(&b)),
	      "7b29037a016669010000007a016729056901000000690200000067000000000000e03f67000000"
	      "000000f03f7b3030");
	/* ASCII of 256 bytes or more no longer fits 'z'. */
	memset(big, 'x', sizeof(big));
	buf_reset(&b);
	pymarshal_str(&b, big, 255);
	assert_int_equal((uint8_t)b.data[0], 'z');
	buf_reset(&b);
	pymarshal_str(&b, big, 256);
	assert_int_equal((uint8_t)b.data[0], 'u');
	assert_int_equal(b.len, 5 + 256);
	buf_free(&b);
#undef CHECK
}

/* ---- a reader: marshal bytes -> Python-like repr ---- */

static uint32_t rd32(const uint8_t **p)
{
	uint32_t v = (uint32_t)(*p)[0] | (uint32_t)(*p)[1] << 8 | (uint32_t)(*p)[2] << 16 |
		     (uint32_t)(*p)[3] << 24;

	*p += 4;
	return v;
}

static void repr(const uint8_t **p, const uint8_t *end, struct buf *out);

static void repr_seq(const uint8_t **p, const uint8_t *end, struct buf *out, uint32_t n)
{
	buf_put_u8(out, '(');
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			buf_puts(out, ", ");
		repr(p, end, out);
	}
	buf_puts(out, n == 1 ? ",)" : ")");
}

static void repr_long(const uint8_t **p, struct buf *out)
{
	int32_t n = (int32_t)rd32(p);
	uint64_t v = 0;

	for (int32_t i = 0; i < (n < 0 ? -n : n); i++, *p += 2)
		v |= (uint64_t)((*p)[0] | (*p)[1] << 8) << (15 * i);
	buf_printf(out, "%s%llu", n < 0 ? "-" : "", (unsigned long long)v);
}

static void repr(const uint8_t **p, const uint8_t *end, struct buf *out)
{
	uint32_t n;
	double d;
	uint8_t t;

	assert_true(*p < end);
	t = *(*p)++;
	switch (t) {
	case '{':
		buf_put_u8(out, '{');
		for (n = 0; **p != '0'; n++) {
			buf_puts(out, n ? ", " : "");
			repr(p, end, out);
			buf_puts(out, ": ");
			repr(p, end, out);
		}
		(*p)++;
		buf_put_u8(out, '}');
		break;
	case ')': n = *(*p)++; repr_seq(p, end, out, n); break;
	case '(': n = rd32(p); repr_seq(p, end, out, n); break;
	case 'i': buf_printf(out, "%d", (int32_t)rd32(p)); break;
	case 'l': repr_long(p, out); break;
	case 'g':
		memcpy(&d, *p, 8);
		*p += 8;
		buf_printf(out, "%.6g", d);
		break;
	case 'z': n = *(*p)++; goto str;
	case 'u': n = rd32(p);
	str:
		buf_printf(out, "'%.*s'", (int)n, (const char *)*p);
		*p += n;
		break;
	default: fail_msg("unexpected marshal type 0x%02x", t);
	}
	assert_true(*p <= end);
}

static void add(struct stackset *ss, uint64_t count, uint32_t depth, const uint32_t *kinds,
		const char *const *names)
{
	assert_int_equal(stackset_add_named(ss, kinds, names, depth, count), 0);
}

/* main calls work (8 samples, from two lines of each), recurses in rec
 * (3 samples, three deep), runs a C library (2 samples, main's own time);
 * a stack without Python frames (5 samples) is left out. */
static struct stackset *python_profile(void)
{
	static const uint32_t ka[] = { FRAME_PYTHON, FRAME_PYTHON, FRAME_NATIVE };
	static const char *const a[] = { "main (/srv/app.py:10)", "work (/srv/app.py:4)",
					 "PyObject_Free" };
	static const uint32_t kb[] = { FRAME_PYTHON, FRAME_PYTHON, FRAME_PYTHON, FRAME_PYTHON };
	static const char *const b[] = { "main (/srv/app.py:10)", "rec (/srv/app.py:20)",
					 "rec (/srv/app.py:21)", "rec (/srv/app.py:21)" };
	static const uint32_t kc[] = { FRAME_PYTHON, FRAME_UNKNOWN };
	static const char *const c[] = { "main (/srv/app.py:10)", "[libfoo.so+0x10]" };
	static const uint32_t kd[] = { FRAME_NATIVE, FRAME_UNKNOWN };
	static const char *const d[] = { "gc_collect", "[unknown]" };
	static const uint32_t ke[] = { FRAME_PYTHON, FRAME_PYTHON };
	static const char *const e[] = { "main (/srv/app.py:12)", "work (/srv/app.py:6)" };
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	add(ss, 7, 3, ka, a);
	add(ss, 3, 4, kb, b);
	add(ss, 2, 2, kc, c);
	add(ss, 5, 2, kd, d);
	add(ss, 1, 2, ke, e);
	ss->rate_hz = 100;
	return ss;
}

static void render_repr(const struct stackset *ss, struct buf *text)
{
	struct buf bin;
	const uint8_t *p;

	buf_init(&bin);
	buf_init(text);
	assert_int_equal(render_pstats(ss, &bin), 0);
	p = (const uint8_t *)bin.data;
	repr(&p, p + bin.len, text);
	assert_ptr_equal(p, (const uint8_t *)bin.data + bin.len); /* nothing after */
	assert_non_null(buf_cstr(text));
	buf_free(&bin);
}

static void test_pstats(void **state)
{
	struct stackset *ss = python_profile();
	struct buf text;

	(void)state;
	render_repr(ss, &text);
	assert_string_equal(
		text.data,
		"{('/srv/app.py', 4, 'work'): (8, 8, 0.08, 0.08, "
		"{('/srv/app.py', 10, 'main'): (8, 8, 0.08, 0.08)}), "
		"('/srv/app.py', 10, 'main'): (13, 13, 0.02, 0.13, {}), "
		"('/srv/app.py', 20, 'rec'): (3, 9, 0.03, 0.03, "
		"{('/srv/app.py', 10, 'main'): (3, 3, 0, 0.03), "
		"('/srv/app.py', 20, 'rec'): (6, 3, 0.03, 0.03)})}");
	buf_free(&text);
	/* Rate unknown: one second per sample.  Nanosecond profiles: 1e-9. */
	ss->rate_hz = 0;
	render_repr(ss, &text);
	assert_non_null(strstr(text.data, "('/srv/app.py', 10, 'main'): (13, 13, 2, 13, {})"));
	buf_free(&text);
	assert_int_equal(stackset_set_str(&ss->unit, "nanoseconds"), 0);
	render_repr(ss, &text);
	assert_non_null(
	    strstr(text.data, "('/srv/app.py', 10, 'main'): (13, 13, 2e-09, 1.3e-08, {})"));
	buf_free(&text);
	stackset_free(ss);
}

static void test_no_python(void **state)
{
	static const uint32_t k[] = { FRAME_NATIVE, FRAME_KERNEL };
	static const char *const n[] = { "main", "sys_read_[k]" };
	struct stackset *ss = stackset_new();
	struct buf out;

	(void)state;
	assert_non_null(ss);
	buf_init(&out);
	assert_int_equal(render_pstats(ss, &out), -ENODATA);
	add(ss, 4, 2, k, n);
	assert_int_equal(render_pstats(ss, &out), -ENODATA);
	assert_int_equal(out.len, 0);
	buf_free(&out);
	stackset_free(ss);
}

static void test_names(void **state)
{
	static const uint32_t k[] = { FRAME_PYTHON };
	static const char *const n[] = { "f\xff\"q' (/tmp/\xc3\xa9.py:7)" };
	struct stackset *ss = stackset_new();
	struct buf text;

	(void)state;
	assert_non_null(ss);
	add(ss, 1, 1, k, n);
	render_repr(ss, &text);
	assert_string_equal(text.data,
			    "{('/tmp/\xc3\xa9.py', 7, 'f\xef\xbf\xbd\"q''): (1, 1, 1, 1, {})}");
	buf_free(&text);
	stackset_free(ss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),   cmocka_unit_test(test_containers),
		cmocka_unit_test(test_pstats),    cmocka_unit_test(test_no_python),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
