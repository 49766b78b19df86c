/* test_pylocals: `profctl stacks --locals`'s reader over objects of its
 * own making.  Fake Python objects (ints small, negative and big, bools,
 * None, floats, str of each width, bytes, lists, tuples, an instance), a
 * code object and a frame are built in this test's memory with a
 * 3.12-like layout and read back through process_vm_readv on our own pid,
 * as profd reads another process; then memory that lies (types, sizes,
 * digits and pointers that make no sense) must give "<unreadable>" or a
 * refusal, never a crash or a read past a bound. */
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

#include "pylocals.h"

#define UNMAPPED 0x8000ull /* below mmap_min_addr: never readable */
#define P(x) ((uint64_t)(uintptr_t)(x))

static struct pyruntime rt;
static struct pyoff_locals lo;

/* Type objects: tp_name at 24, as in CPython. */
static uint64_t t_int[4], t_bool[4], t_none[4], t_float[4], t_str[4], t_bytes[4], t_list[4],
    t_tuple[4], t_cell[4], t_widget[4], t_dict[4];

static void set_type(uint64_t *t, const char *name)
{
	memset(t, 0, 4 * sizeof(*t));
	t[3] = P(name);
}

static int setup(void **state)
{
	(void)state;
	memset(&rt, 0, sizeof(rt));
	memset(&rt.off, 0xff, sizeof(rt.off));
	rt.pid = getpid();
	rt.major = 3;
	rt.minor = 12;
	rt.off.version = 0x030c;
	rt.off.free_threaded = 0;
	rt.off.object_type = 8;
	rt.off.type_name = 24;
	rt.off.bytes_size = 16;
	rt.off.bytes_data = 32;
	rt.off.unicode_length = 16;
	rt.off.unicode_state = 32;
	rt.off.unicode_ascii_data = 40;
	rt.off.unicode_compact_data = 56;
	rt.off.unicode_has_ready_bit = 0;
	assert_int_equal(pyoffsets_locals(12, NULL, 0, &lo), 0);
	set_type(t_int, "int");
	set_type(t_bool, "bool");
	set_type(t_none, "NoneType");
	set_type(t_float, "float");
	set_type(t_str, "str");
	set_type(t_bytes, "bytes");
	set_type(t_list, "list");
	set_type(t_tuple, "tuple");
	set_type(t_cell, "cell");
	set_type(t_widget, "Widget");
	set_type(t_dict, "dict");
	return 0;
}

/* An object of type t in o (zeroed, words). */
static uint64_t obj(uint64_t *o, size_t words, uint64_t *t)
{
	memset(o, 0, words * sizeof(*o));
	o[1] = P(t);
	return P(o);
}

/* A 3.12 int: lv_tag = ndigits << 3 | sign (0 +, 1 zero, 2 -), then
 * 30-bit digits. */
static uint64_t mk_int(uint64_t *o, int sign, const uint32_t *d, size_t n)
{
	obj(o, 8, t_int);
	o[2] = (uint64_t)n << 3 | (uint64_t)(sign < 0 ? 2 : sign == 0 ? 1 : 0);
	if (n)
		memcpy(&o[3], d, n * 4);
	return P(o);
}

static uint64_t mk_str(uint64_t *o, size_t words, const void *chars, size_t n, unsigned int kind)
{
	uint32_t state = 0x20 | kind << 2 | (kind == 1 ? 0x40 : 0); /* compact (ASCII) */
	const uint8_t *c = chars;
	size_t i;

	obj(o, words, t_str);
	for (i = 0; kind == 1 && i < n; i++)
		if (c[i] >= 0x80)
			state &= ~0x40u; /* latin-1, not ASCII: the longer header */
	o[2] = n;
	memcpy(&o[4], &state, 4);
	memcpy((char *)o + ((state & 0x40) ? 40 : 56), chars, n * kind);
	return P(o);
}

static const char *repr(uint64_t addr)
{
	static char buf[PYLOCALS_REPR_MAX];

	pylocals_repr(&rt, &lo, addr, buf, sizeof(buf));
	return buf;
}

static void test_ints(void **state)
{
	uint64_t o[8];
	uint32_t d42 = 42, d7 = 7, big[4] = {0, 0, 0, 1u << 10}, two[2] = {5, 3};

	(void)state;
	assert_string_equal(repr(mk_int(o, 1, &d42, 1)), "42");
	assert_string_equal(repr(mk_int(o, -1, &d7, 1)), "-7");
	assert_string_equal(repr(mk_int(o, 0, NULL, 0)), "0");
	assert_string_equal(repr(mk_int(o, 1, big, 4)), "1267650600228229401496703205376"); /* 2**100 */
	assert_string_equal(repr(mk_int(o, -1, two, 2)), "-3221225477");			 /* 3 << 30 | 5 */
	/* before 3.12: a signed ob_size */
	lo.long_tagged = 0;
	mk_int(o, 1, &d7, 1);
	o[2] = (uint64_t)-1;
	assert_string_equal(repr(P(o)), "-7");
	lo.long_tagged = 1;
	obj(o, 8, t_bool);
	o[2] = 1 << 3;
	assert_string_equal(repr(P(o)), "True");
	o[2] = 1;
	assert_string_equal(repr(P(o)), "False");
}

static void test_floats_none(void **state)
{
	uint64_t o[4];
	double v[] = {0.25, 2.0, 1e100, -0.1, 1.0 / 3};
	const char *want[] = {"0.25", "2.0", "1e+100", "-0.1", "0.3333333333333333"};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		obj(o, 4, t_float);
		memcpy(&o[2], &v[i], 8);
		assert_string_equal(repr(P(o)), want[i]);
	}
	assert_string_equal(repr(obj(o, 4, t_none)), "None");
}

static void test_strs(void **state)
{
	static uint64_t o[128];
	uint16_t ucs2[] = {0x65e5, 0x672c};
	uint32_t ucs4[] = {'p', 0x1f40d};
	char many[300];

	(void)state;
	assert_string_equal(repr(mk_str(o, 128, "hi", 2, 1)), "'hi'");
	assert_string_equal(repr(mk_str(o, 128, "it's\n\t\\", 7, 1)), "\"it's\\n\\t\\\\\"");
	assert_string_equal(repr(mk_str(o, 128, "'\"", 2, 1)), "'\\'\"'");
	assert_string_equal(repr(mk_str(o, 128, "h\xe9", 2, 1)), "'h\xc3\xa9'");
	assert_string_equal(repr(mk_str(o, 128, "\x01", 1, 1)), "'\\x01'");
	assert_string_equal(repr(mk_str(o, 128, ucs2, 2, 2)), "'\xe6\x97\xa5\xe6\x9c\xac'");
	assert_string_equal(repr(mk_str(o, 128, ucs4, 2, 4)), "'p\xf0\x9f\x90\x8d'");
	memset(many, 'x', sizeof(many));
	mk_str(o, 128, many, sizeof(many), 1);
	assert_int_equal(strlen(repr(P(o))), 1 + PYLOCALS_STR_CHARS + 3);
	assert_string_equal(repr(P(o)) + 1 + PYLOCALS_STR_CHARS, "...");
}

static void test_bytes(void **state)
{
	uint64_t o[8];

	(void)state;
	obj(o, 8, t_bytes);
	o[2] = 5;
	memcpy(&o[4], "\0a'\xff\n", 5); /* \0 then a, not \x0a */
	assert_string_equal(repr(P(o)), "b\"\\x00a'\\xff\\n\"");
}

static void test_sequences(void **state)
{
	uint64_t l[5], t[4], inner[5], n[6][8], w[4], *items[6];
	uint32_t d;
	size_t i;
	char want[96];

	(void)state;
	for (i = 0; i < 6; i++) {
		d = (uint32_t)i + 1;
		mk_int(n[i], 1, &d, 1);
		items[i] = n[i];
	}
	obj(l, 5, t_list);
	l[2] = 6;
	l[3] = P(items);
	assert_string_equal(repr(P(l)), "[1, 2, 3, 4, ...]");
	l[2] = 0;
	assert_string_equal(repr(P(l)), "[]");
	obj(t, 4, t_tuple);
	t[2] = 1;
	t[3] = P(n[0]);
	assert_string_equal(repr(P(t)), "(1,)");
	/* nested: the inner list by its items, as Python's repr */
	obj(inner, 5, t_list);
	inner[2] = 2;
	inner[3] = P(items);
	t[3] = P(inner);
	assert_string_equal(repr(P(t)), "([1, 2],)");
	/* a list that holds itself: PYLOCALS_DEPTH levels, then [...] */
	inner[2] = 1;
	inner[3] = P(&inner[4]);
	inner[4] = P(inner);
	assert_string_equal(repr(P(inner)), "[[[[[...]]]]]");
	(void)want;
	obj(w, 4, t_widget);
	snprintf(want, sizeof(want), "<Widget at %#llx>", (unsigned long long)P(w));
	assert_string_equal(repr(P(w)), want);
}

/* A combined dict (3.11+ keys object): str-keyed {key, value} entries
 * after 8 one-byte indices, a deleted one skipped; past PYLOCALS_ITEMS
 * items "..."; a split one (ma_values set) or lying keys only by address. */
static void test_dict(void **state)
{
	static uint64_t d[6], keys[4 + 1 + 2 * 6], k[6][8], v[6][8];
	char want[64];
	uint32_t dv;
	size_t i;

	(void)state;
	obj(d, 6, t_dict);
	d[4] = P(keys);
	memset(keys, 0, sizeof(keys));
	((uint8_t *)keys)[8] = 3;  /* dk_log2_size: 8 slots */
	((uint8_t *)keys)[9] = 3;  /* dk_log2_index_bytes: 8 bytes of indices */
	((uint8_t *)keys)[10] = 1; /* dk_kind: str keys */
	for (i = 0; i < 6; i++) {
		char name[2] = {(char)('a' + i), 0};

		dv = (uint32_t)i;
		keys[5 + 2 * i] = mk_str(k[i], 8, name, 1, 1);
		keys[5 + 2 * i + 1] = mk_int(v[i], i ? 1 : 0, &dv, i ? 1 : 0);
	}
	keys[3] = 2; /* dk_nentries */
	d[2] = 2;    /* ma_used */
	assert_string_equal(repr(P(d)), "{'a': 0, 'b': 1}");
	keys[5 + 2 * 1 + 1] = 0; /* b deleted */
	d[2] = 1;
	assert_string_equal(repr(P(d)), "{'a': 0}");
	keys[3] = 6;
	d[2] = 5;
	assert_string_equal(repr(P(d)), "{'a': 0, 'c': 2, 'd': 3, 'e': 4, ...}");
	keys[3] = 1ull << 40; /* more entries than slots */
	snprintf(want, sizeof(want), "<dict at %#llx>", (unsigned long long)P(d));
	assert_string_equal(repr(P(d)), want);
	keys[3] = 2;
	d[5] = P(v); /* split: values elsewhere */
	assert_string_equal(repr(P(d)), want);
	d[5] = 0;
	d[4] = UNMAPPED;
	assert_string_equal(repr(P(d)), want);
}

/* Memory that lies: each case is unreadable, never a crash. */
static void test_lying_memory(void **state)
{
	uint64_t o[8], t[4], l[5];
	uint32_t d = 1u << 30; /* not a 30-bit digit */
	char long_name[200];

	(void)state;
	assert_string_equal(repr(UNMAPPED), "<unreadable>");
	assert_string_equal(repr(P(o) + 4), "<unreadable>"); /* misaligned */
	obj(o, 8, (uint64_t *)UNMAPPED);			/* ob_type unreadable */
	assert_string_equal(repr(P(o)), "<unreadable>");
	set_type(t, NULL);
	t[3] = UNMAPPED; /* tp_name unreadable */
	assert_string_equal(repr(obj(o, 8, t)), "<unreadable>");
	assert_string_equal(repr(mk_int(o, 1, &d, 1)), "<unreadable>");
	mk_int(o, 1, NULL, 0);
	o[2] = 1ull << 62; /* digits beyond any sane count */
	assert_string_equal(repr(P(o)), "<unreadable>");
	o[2] = 41ull << 3; /* more than PYLOCALS_INT_DIGITS: not read */
	assert_true(strstr(repr(P(o)), "<int of about 370 digits at ") == repr(P(o)));
	obj(l, 5, t_list);
	l[2] = (uint64_t)-1; /* negative size */
	assert_string_equal(repr(P(l)), "<unreadable>");
	l[2] = 3;
	l[3] = UNMAPPED; /* ob_item unreadable */
	assert_string_equal(repr(P(l)), "<unreadable>");
	mk_str(o, 8, "ab", 2, 1);
	o[4] = 0x20 | 3 << 2; /* kind 3 */
	assert_string_equal(repr(P(o)), "<unreadable>");
	mk_str(o, 8, "ab", 2, 1);
	o[2] = 1ull << 50; /* a length no str has */
	assert_string_equal(repr(P(o)), "<unreadable>");
	/* A type name of control characters and no end in sight. */
	memset(long_name, '\t', sizeof(long_name));
	long_name[sizeof(long_name) - 1] = '\0';
	set_type(t, long_name);
	obj(o, 8, t);
	assert_true(strncmp(repr(P(o)), "<????", 5) == 0);
	assert_null(strchr(repr(P(o)), '\t'));
}

/* ---- a frame ---- */

struct got {
	size_t n;
	struct pylocal v[PYLOCALS_MAX];
};

static int collect(const struct pylocal *l, void *arg)
{
	struct got *g = arg;

	g->v[g->n++] = *l;
	return 0;
}

/* def f(a, *, k): x = 7; inner captures c: slots a, k, x, (unbound),
 * hidden, c (a cell); a and k are arguments. */
static void test_frame(void **state)
{
	static uint64_t names[6][16], code[20], tuple[3 + 6], kinds[6], frame[9 + 6], vals[6][8],
	    cell[3];
	const char *nm[] = {"x", "a", "k", "gone", "hid", "c"};
	uint8_t kd[] = {0x20, 0x20 | 0x2, 0x20 | 0x4, 0x20, 0x30, 0x40};
	uint32_t dv[] = {7, 1, 2};
	struct got g = {0};
	uint32_t flags = 0;
	int32_t argc = 2, kwonly = 1;
	size_t i;

	(void)state;
	/* Arguments are the first slots: a, k; then x, gone, hid, c. */
	const int order[] = {1, 2, 0, 3, 4, 5};
	obj(tuple, 9, t_tuple);
	tuple[2] = 6;
	obj(kinds, 6, t_bytes);
	kinds[2] = 6;
	for (i = 0; i < 6; i++) {
		tuple[3 + i] = mk_str(names[order[i]], 16, nm[order[i]], strlen(nm[order[i]]), 1);
		((uint8_t *)&kinds[4])[i] = kd[order[i]];
	}
	memset(code, 0, sizeof(code));
	argc = 1;
	memcpy((char *)code + 48, &flags, 4);
	memcpy((char *)code + 52, &argc, 4);
	memcpy((char *)code + 60, &kwonly, 4);
	code[12] = P(tuple);
	code[13] = P(kinds);
	memset(frame, 0, sizeof(frame));
	frame[9 + 0] = mk_int(vals[0], 1, &dv[1], 1); /* a = 1 */
	frame[9 + 1] = mk_int(vals[1], 1, &dv[2], 1); /* k = 2 */
	frame[9 + 2] = mk_int(vals[2], 1, &dv[0], 1); /* x = 7 */
	frame[9 + 3] = 0;			      /* gone: unbound */
	frame[9 + 4] = obj(vals[4], 8, t_none);	      /* hidden */
	obj(cell, 3, t_cell);
	cell[2] = obj(vals[5], 8, t_none);
	frame[9 + 5] = P(cell);
	assert_int_equal(pylocals_frame_at(&rt, &lo, P(code), P(frame), collect, &g), 0);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.v[0].name, "a");
	assert_true(g.v[0].arg);
	assert_string_equal(g.v[0].repr, "1");
	assert_string_equal(g.v[1].name, "k");
	assert_true(g.v[1].arg);
	assert_string_equal(g.v[2].name, "x");
	assert_false(g.v[2].arg);
	assert_string_equal(g.v[2].repr, "7");
	assert_string_equal(g.v[3].name, "c");
	assert_int_equal(g.v[3].scope, PYLOCAL_CELL);
	assert_string_equal(g.v[3].repr, "None");

	/* 3.14's tagged _PyStackRefs: NULL is a tag, ints may be tagged. */
	lo.stackref = 1;
	frame[9 + 0] |= 1;
	frame[9 + 1] = 5 << 2 | 3;
	frame[9 + 2] = 1;
	memset(&g, 0, sizeof(g));
	assert_int_equal(pylocals_frame_at(&rt, &lo, P(code), P(frame), collect, &g), 0);
	assert_int_equal(g.n, 3);
	assert_string_equal(g.v[0].repr, "1");
	assert_string_equal(g.v[1].repr, "5");
	assert_string_equal(g.v[2].name, "c");
	lo.stackref = 0;

	/* Lies: kinds shorter than names; a names tuple past any bound; a
	 * code object that cannot be read. */
	kinds[2] = 2;
	assert_int_equal(pylocals_frame_at(&rt, &lo, P(code), P(frame), collect, &g), -EINVAL);
	kinds[2] = 6;
	tuple[2] = 1ull << 39;
	assert_true(pylocals_frame_at(&rt, &lo, P(code), P(frame), collect, &g) < 0);
	tuple[2] = 6;
	argc = -5;
	memcpy((char *)code + 52, &argc, 4);
	assert_true(pylocals_frame_at(&rt, &lo, P(code), P(frame), collect, &g) < 0);
	assert_true(pylocals_frame_at(&rt, &lo, UNMAPPED, P(frame), collect, &g) < 0);
	assert_true(pylocals_frame_at(&rt, &lo, P(code), UNMAPPED, collect, &g) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ints),      cmocka_unit_test(test_floats_none),
	    cmocka_unit_test(test_strs),      cmocka_unit_test(test_bytes),
	    cmocka_unit_test(test_sequences), cmocka_unit_test(test_lying_memory),
	    cmocka_unit_test(test_dict),      cmocka_unit_test(test_frame),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
