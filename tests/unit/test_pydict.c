/* test_pydict: the dict and int readers behind Python's thread names
 * (pythreads.h) and pylocals' dict repr, over objects of this test's own
 * making, read back through process_vm_readv on our own pid as profd
 * reads another process: combined and split dicts of 3.11+ (values with
 * the 3.13 header too), the 3.9/3.10 keys object, ints of up to 64 bits;
 * then memory that lies (sizes, kinds, pointers) must give an error,
 * never a crash or a read past a bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "pydict.h"

#define UNMAPPED 0x8000ull /* below mmap_min_addr: never readable */
#define P(x) ((uint64_t)(uintptr_t)(x))

static struct pyruntime rt;
static struct pydict_layout lay; /* 3.12's */
static uint64_t t_str[4], t_int[4], t_dict[4];

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
	rt.off.unicode_length = 16;
	rt.off.unicode_state = 32;
	rt.off.unicode_ascii_data = 40;
	rt.off.unicode_compact_data = 56;
	rt.off.unicode_has_ready_bit = 0;
	assert_int_equal(pydict_layout(&rt, &lay), 0);
	memset(t_str, 0, sizeof(t_str));
	memset(t_int, 0, sizeof(t_int));
	memset(t_dict, 0, sizeof(t_dict));
	t_str[3] = P("str");
	t_int[3] = P("int");
	t_dict[3] = P("dict");
	return 0;
}

/* A compact ASCII str of 3.12 in o (8 words). */
static uint64_t mk_str(uint64_t *o, const char *text)
{
	uint32_t state = 0x20 | 1 << 2 | 0x40;

	memset(o, 0, 8 * sizeof(*o));
	o[1] = P(t_str);
	o[2] = strlen(text);
	memcpy(&o[4], &state, 4);
	memcpy(&o[5], text, strlen(text)); /* at 40 */
	return P(o);
}

/* A 3.11+ keys object of 8 slots (8 index bytes) in k (5 + 3 * 8
 * words), n entries of kind (0: {hash, key, value}; 1, 2: {key, value}). */
static uint64_t *mk_keys(uint64_t *k, unsigned int kind, int64_t n)
{
	memset(k, 0, (5 + 3 * 8) * sizeof(*k));
	((uint8_t *)k)[8] = 3;
	((uint8_t *)k)[9] = 3;
	((uint8_t *)k)[10] = (uint8_t)kind;
	k[3] = (uint64_t)n;
	return k + 5; /* the entries */
}

static void test_combined(void **state)
{
	uint64_t k[5 + 3 * 8], d[6], sa[8], sb[8], v1, v2 = 0, *e;
	struct pydict_view v;

	(void)state;
	e = mk_keys(k, 1, 3);
	e[0] = mk_str(sa, "threading");
	e[1] = 0x1000;
	e[2] = P(d); /* not a str: passed over */
	e[3] = 0x2000;
	e[4] = mk_str(sb, "_active");
	e[5] = 0x3000;
	memset(d, 0, sizeof(d));
	d[1] = P(t_dict);
	d[4] = P(k);
	assert_int_equal(pydict_view(&rt, &lay, P(d), 100, &v), 0);
	assert_int_equal(v.n, 3);
	assert_int_equal(pydict_find_str(&rt, &v, "_active", &v1), 0);
	assert_int_equal(v1, 0x3000);
	assert_int_equal(pydict_find_str(&rt, &v, "threading", &v1), 0);
	assert_int_equal(v1, 0x1000);
	assert_int_equal(pydict_find_str(&rt, &v, "_name", &v1), -ENOENT);
	e[5] = 0; /* deleted */
	assert_int_equal(pydict_find_str(&rt, &v, "_active", &v2), -ENOENT);
	/* The cap on entries looked at. */
	e[5] = 0x3000;
	assert_int_equal(pydict_view(&rt, &lay, P(d), 2, &v), 0);
	assert_int_equal(pydict_find_str(&rt, &v, "_active", &v1), -ENOENT);
	/* General keys: a hash first. */
	e = mk_keys(k, 0, 1);
	e[1] = mk_str(sa, "MainThread");
	e[2] = 0x4000;
	assert_int_equal(pydict_view(&rt, &lay, P(d), 100, &v), 0);
	assert_int_equal(pydict_find_str(&rt, &v, "MainThread", &v1), 0);
	assert_int_equal(v1, 0x4000);
}

/* An instance's attributes: split keys, values apart; on 3.13 the values
 * start after a header of 8 bytes. */
static void test_split(void **state)
{
	uint64_t k[5 + 3 * 8], vals[5], d[6], s1[8], s2[8], out, *e;
	struct pydict_view v;
	struct pydict_layout l13 = lay;

	(void)state;
	e = mk_keys(k, 2, 2);
	e[0] = mk_str(s1, "_target");
	e[2] = mk_str(s2, "_name");
	vals[0] = 0;
	vals[1] = 0x5000;
	vals[2] = 0x6000;
	assert_int_equal(pydict_keys_view(rt.pid, false, P(k), P(&vals[1]), 100, &v), 0);
	assert_int_equal(pydict_find_str(&rt, &v, "_name", &out), 0);
	assert_int_equal(out, 0x6000);
	/* A split keys object read as a combined one's (no values): refused. */
	assert_int_equal(pydict_keys_view(rt.pid, false, P(k), 0, 100, &v), -EINVAL);
	/* A dict holding them: ma_values, with 3.13's header. */
	memset(d, 0, sizeof(d));
	d[1] = P(t_dict);
	d[4] = P(k);
	d[5] = P(&vals[0]);
	l13.values_head = 8;
	assert_int_equal(pydict_view(&rt, &l13, P(d), 100, &v), 0);
	assert_int_equal(pydict_find_str(&rt, &v, "_name", &out), 0);
	assert_int_equal(out, 0x6000);
}

/* 3.9, 3.10: dk_size, then dk_nentries at 32, indices from 40 (a byte
 * each up to 255 slots), {hash, key, value} entries. */
static void test_old_keys(void **state)
{
	uint64_t k[5 + 1 + 3 * 8], vals[2], s1[8], out, *e = k + 6;
	struct pydict_view v;

	(void)state;
	memset(k, 0, sizeof(k));
	k[1] = 8;
	k[4] = 1;
	e[1] = mk_str(s1, "_name");
	e[2] = 0x7000;
	assert_int_equal(pydict_keys_view(rt.pid, true, P(k), 0, 100, &v), 0);
	assert_int_equal(pydict_find_str(&rt, &v, "_name", &out), 0);
	assert_int_equal(out, 0x7000);
	vals[0] = 0x8000; /* split: the value apart */
	assert_int_equal(pydict_keys_view(rt.pid, true, P(k), P(vals), 100, &v), 0);
	assert_int_equal(pydict_find_str(&rt, &v, "_name", &out), 0);
	assert_int_equal(out, 0x8000);
	k[1] = 12; /* not a power of two */
	assert_int_equal(pydict_keys_view(rt.pid, true, P(k), 0, 100, &v), -EINVAL);
	k[1] = 8;
	k[4] = 9; /* more entries than slots */
	assert_int_equal(pydict_keys_view(rt.pid, true, P(k), 0, 100, &v), -EINVAL);
}

static uint64_t mk_int(uint64_t *o, uint64_t tag, const uint32_t *d, size_t n)
{
	memset(o, 0, 8 * sizeof(*o));
	o[1] = P(t_int);
	o[2] = tag;
	memcpy(&o[3], d, n * 4);
	return P(o);
}

static void test_longs(void **state)
{
	/* 0x7f12_3456_789a: a pthread_t as it looks. */
	uint32_t d[3] = {0x3456789a & 0x3fffffff, (uint32_t)(0x7f123456789aull >> 30), 0};
	uint32_t full[3] = {0x3fffffff, 0x3fffffff, 0xf}, over[3] = {0, 0, 0x10};
	struct pydict_layout old = lay;
	uint64_t o[8], v;

	(void)state;
	assert_int_equal(pydict_long_u64(&rt, &lay, mk_int(o, 2 << 3, d, 2), &v), 0);
	assert_int_equal(v, 0x7f123456789aull);
	assert_int_equal(pydict_long_u64(&rt, &lay, mk_int(o, 1, d, 0), &v), 0); /* zero */
	assert_int_equal(v, 0);
	assert_int_equal(pydict_long_u64(&rt, &lay, mk_int(o, 3 << 3, full, 3), &v), 0);
	assert_int_equal(v, UINT64_MAX);
	assert_int_equal(pydict_long_u64(&rt, &lay, mk_int(o, 3 << 3, over, 3), &v), -ERANGE);
	assert_int_equal(pydict_long_u64(&rt, &lay, mk_int(o, 1 << 3 | 2, d, 1), &v), -ERANGE);
	assert_int_equal(pydict_long_u64(&rt, &lay, mk_int(o, 4 << 3, d, 3), &v), -ERANGE);
	d[0] |= 1u << 30; /* not a 30-bit digit */
	assert_int_equal(pydict_long_u64(&rt, &lay, mk_int(o, 1 << 3, d, 1), &v), -ERANGE);
	d[0] &= 0x3fffffff;
	/* Before 3.12: a signed ob_size. */
	old.long_tagged = false;
	assert_int_equal(pydict_long_u64(&rt, &old, mk_int(o, 2, d, 2), &v), 0);
	assert_int_equal(v, 0x7f123456789aull);
	assert_int_equal(pydict_long_u64(&rt, &old, mk_int(o, (uint64_t)-2, d, 2), &v), -ERANGE);
	assert_int_equal(pydict_long_u64(&rt, &lay, UNMAPPED, &v), -EFAULT);
	assert_int_equal(pydict_long_u64(&rt, &lay, P(o) + 4, &v), -EFAULT);
}

/* Memory that lies: each case an error, never a crash. */
static void test_lying_memory(void **state)
{
	uint64_t k[5 + 3 * 8], d[6], out;
	struct pydict_view v;

	(void)state;
	mk_keys(k, 1, 9); /* more entries than its 8 slots */
	assert_int_equal(pydict_keys_view(rt.pid, false, P(k), 0, 100, &v), -EINVAL);
	mk_keys(k, 3, 1); /* no such kind */
	assert_int_equal(pydict_keys_view(rt.pid, false, P(k), 0, 100, &v), -EINVAL);
	mk_keys(k, 1, 1);
	((uint8_t *)k)[9] = 2; /* fewer index bytes than slots */
	assert_int_equal(pydict_keys_view(rt.pid, false, P(k), 0, 100, &v), -EINVAL);
	assert_int_equal(pydict_keys_view(rt.pid, false, P(k) + 4, 0, 100, &v), -EINVAL);
	assert_int_equal(pydict_keys_view(rt.pid, false, UNMAPPED, 0, 100, &v), -EFAULT);
	memset(d, 0, sizeof(d));
	d[4] = UNMAPPED;
	assert_true(pydict_view(&rt, &lay, P(d), 100, &v) < 0);
	assert_true(pydict_view(&rt, &lay, UNMAPPED, 100, &v) < 0);
	/* Entries that cannot be read: an error, not "not found". */
	v.entries = UNMAPPED;
	v.values = 0;
	v.esize = 16;
	v.n = 1;
	assert_int_equal(pydict_find_str(&rt, &v, "_name", &out), -EFAULT);
	/* Keys that are no str, or not readable: passed over. */
	mk_keys(k, 1, 2);
	k[5] = UNMAPPED;
	k[6] = 1;
	k[7] = P(d) + 3;
	k[8] = 1;
	assert_int_equal(pydict_keys_view(rt.pid, false, P(k), 0, 100, &v), 0);
	assert_int_equal(pydict_find_str(&rt, &v, "_name", &out), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_combined),	 cmocka_unit_test(test_split),
	    cmocka_unit_test(test_old_keys),	 cmocka_unit_test(test_longs),
	    cmocka_unit_test(test_lying_memory),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
