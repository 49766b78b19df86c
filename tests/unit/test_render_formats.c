/* Output formats: golden folded, json and speedscope files (tests/data/),
 * the render_format dispatch, frame-name parsing, and every format on an
 * empty profile and on hostile names.  Regenerate the goldens after an
 * intended change with PROFD_UPDATE_GOLDEN=1. */
#include <errno.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "framename.h"
#include "render.h"
#include "render_json.h"
#include "render_pprof.h"
#include "render_pstats.h"
#include "stackset.h"
#include "utf8.h"

static const char *const all_formats[] = { "folded", "svg", "pprof",
					   "speedscope", "pstats", "json" };
#define NFORMATS (sizeof(all_formats) / sizeof(all_formats[0]))

static void add(struct stackset *ss, uint64_t count, uint32_t depth, const uint32_t *kinds,
		const char *const *names)
{
	assert_int_equal(stackset_add_named(ss, kinds, names, depth, count), 0);
}

/* Every kind of frame, a recursion, metadata, and names that need
 * escaping in some format: quotes, backslash, '<&>', ';', a tab. */
static struct stackset *mixed_profile(void)
{
	static const uint32_t k1[] = { FRAME_ROOT, FRAME_PYTHON, FRAME_PYTHON, FRAME_NATIVE,
				       FRAME_KERNEL };
	static const char *const n1[] = { "python3 (pid 42)", "main (/srv/app.py:10)",
					  "work (/srv/app.py:4)", "PyObject_Free",
					  "sys_write_[k]" };
	static const uint32_t k2[] = { FRAME_ROOT, FRAME_PYTHON, FRAME_UNKNOWN };
	static const char *const n2[] = { "python3 (pid 42)", "main (/srv/app.py:10)",
					  "[libfoo.so+0x1a2b]" };
	static const uint32_t k3[] = { FRAME_ROOT, FRAME_PYTHON, FRAME_PYTHON, FRAME_PYTHON };
	static const char *const n3[] = { "python3 (pid 42)", "main (/srv/app.py:10)",
					  "rec (/srv/app.py:20)", "rec (/srv/app.py:21)" };
	static const uint32_t k4[] = { FRAME_ROOT, FRAME_NATIVE, FRAME_GPU };
	static const char *const n4[] = { "python3 (pid 42)", "op<\"a\"&'b'>;x\\y\tz",
					  "cuLaunchKernel" };
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	add(ss, 7, 5, k1, n1);
	add(ss, 2, 3, k2, n2);
	add(ss, 3, 4, k3, n3);
	add(ss, 1, 3, k4, n4);
	assert_int_equal(stackset_set_str(&ss->title, "python3 (pid 42)"), 0);
	ss->start_ns = 1700000000000000000ull;
	ss->end_ns = 1700000010000000000ull;
	ss->rate_hz = 99;
	return ss;
}

static char *data_path(const char *name)
{
	char *src = strdup(__FILE__), *path = NULL;

	assert_non_null(src);
	/* __FILE__ is tests/unit/this.c; the data is in tests/data/. */
	assert_true(asprintf(&path, "%s/../data/%s", dirname(src), name) > 0);
	free(src);
	return path;
}

static void check_golden(const char *name, const struct buf *got)
{
	char *path = data_path(name), want[65536];
	FILE *f;
	size_t n;

	if (getenv("PROFD_UPDATE_GOLDEN")) {
		f = fopen(path, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(got->data, 1, got->len, f), got->len);
		fclose(f);
	}
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open golden %s", path);
	n = fread(want, 1, sizeof(want) - 1, f);
	fclose(f);
	want[n] = '\0';
	if (n != got->len || memcmp(want, got->data, n))
		fail_msg("%s differs from the output:\n%.*s", path, (int)got->len, got->data);
	free(path);
}

static void render_ok(const char *fmt, const struct stackset *ss, struct buf *out)
{
	buf_init(out);
	assert_int_equal(render_format(fmt, ss, NULL, out), 0);
	assert_false(out->failed);
}

static void test_golden_folded(void **state)
{
	struct stackset *ss = mixed_profile();
	struct buf out;

	(void)state;
	render_ok("folded", ss, &out);
	check_golden("formats.golden.folded", &out);
	buf_free(&out);
	stackset_free(ss);
}

static void test_golden_json(void **state)
{
	struct stackset *ss = mixed_profile();
	struct buf out;

	(void)state;
	render_ok("json", ss, &out);
	check_golden("formats.golden.json", &out);
	buf_free(&out);
	stackset_free(ss);
}

/* speedscope's layout: compact, a line per frame and per sample. */
static void test_golden_speedscope(void **state)
{
	struct stackset *ss = mixed_profile();
	struct buf out;

	(void)state;
	render_ok("speedscope", ss, &out);
	check_golden("formats.golden.speedscope.json", &out);
	buf_free(&out);
	stackset_free(ss);
}

/* Interning order must not change the json file: same stacks added in
 * reverse give the same bytes. */
static void test_json_stable(void **state)
{
	struct stackset *a = mixed_profile(), *b = stackset_new();
	struct buf x, y;
	size_t i;

	(void)state;
	assert_non_null(b);
	for (i = a->nstacks; i-- > 0;) {
		const struct ss_stack *st = &a->stacks[i];
		uint32_t kinds[8];
		const char *names[8];

		for (uint32_t d = 0; d < st->depth; d++) {
			kinds[d] = a->frames[st->frames[d]].kind;
			names[d] = a->frames[st->frames[d]].name;
		}
		add(b, st->count, st->depth, kinds, names);
	}
	assert_int_equal(stackset_set_str(&b->title, a->title), 0);
	b->start_ns = a->start_ns;
	b->end_ns = a->end_ns;
	b->rate_hz = a->rate_hz;
	render_ok("json", a, &x);
	render_ok("json", b, &y);
	assert_true(buf_cstr(&x) && buf_cstr(&y));
	assert_string_equal(x.data, y.data);
	buf_free(&x);
	buf_free(&y);
	stackset_free(a);
	stackset_free(b);
}

static void test_dispatch(void **state)
{
	struct stackset *ss = mixed_profile();
	struct render_opts o = { .title = "renamed <x>" };
	struct buf out;

	(void)state;
	assert_string_equal(render_formats(),
			    "folded, svg, pprof, speedscope, pstats, json, gecko, trace");
	for (size_t i = 0; i < NFORMATS; i++) {
		assert_true(render_format_known(all_formats[i]));
		assert_non_null(render_format_ext(all_formats[i]));
		assert_non_null(strstr(render_formats(), all_formats[i]));
	}
	assert_string_equal(render_format_ext("pprof"), ".pb.gz");
	assert_string_equal(render_format_ext("speedscope"), ".speedscope.json");
	assert_true(render_format_binary("pprof") && render_format_binary("pstats"));
	assert_false(render_format_binary("json") || render_format_binary("svg"));
	assert_false(render_format_known("png") || render_format_known(NULL));
	assert_null(render_format_ext("png"));
	buf_init(&out);
	assert_int_equal(render_format("png", ss, NULL, &out), -EINVAL);
	assert_int_equal(out.len, 0);
	/* The title option reaches formats other than svg, escaped. */
	assert_int_equal(render_format("json", ss, &o, &out), 0);
	assert_non_null(buf_cstr(&out));
	assert_non_null(strstr(out.data, "\"title\": \"renamed <x>\""));
	assert_string_equal(ss->title, "python3 (pid 42)"); /* ss untouched */
	buf_reset(&out);
	assert_int_equal(render_format("svg", ss, &o, &out), 0);
	assert_non_null(buf_cstr(&out));
	assert_non_null(strstr(out.data, "<title>renamed &lt;x&gt;</title>"));
	buf_free(&out);
	stackset_free(ss);
}

static void test_framename(void **state)
{
	struct framename_py py;
	struct framename_mod mod;

	(void)state;
	assert_true(framename_python("Foo.bar (C:\\a:b.py:12)", &py));
	assert_int_equal(py.func_len, 7);
	assert_memory_equal(py.func, "Foo.bar", 7);
	assert_int_equal(py.file_len, 9);
	assert_memory_equal(py.file, "C:\\a:b.py", 9);
	assert_int_equal(py.line, 12);
	assert_true(framename_python("<module> (x.py:1)", &py));
	assert_int_equal(py.line, 1);
	assert_false(framename_python("f (x.py:)", &py));
	assert_false(framename_python("f (:3)", &py));
	assert_false(framename_python(" (x.py:3)", &py));
	assert_false(framename_python("PyObject_Free", &py));
	assert_true(framename_module("[libfoo.so+0x1a2B]", &mod));
	assert_int_equal(mod.module_len, 9);
	assert_memory_equal(mod.module, "libfoo.so", 9);
	assert_int_equal(mod.offset, 0x1a2b);
	assert_true(framename_module("[a+b.so+0x0]", &mod));
	assert_int_equal(mod.module_len, 6);
	assert_false(framename_module("[unknown]", &mod));
	assert_false(framename_module("[+0x12]", &mod));
	assert_false(framename_module("[x.so+0x]", &mod));
	assert_false(framename_module("[x.so+0x12345678901234567]", &mod));
	assert_string_equal(framename_kind(FRAME_GPU), "gpu");
	assert_string_equal(framename_kind(FRAME_WAIT), "wait");
	assert_string_equal(framename_kind(999), "unknown");
}

/* Text formats must stay parseable whatever the names hold. */
static void assert_clean_text(const struct buf *b)
{
	size_t i = 0, n;

	while (i < b->len) {
		unsigned char c = (unsigned char)b->data[i];

		if (c < 0x20 && c != '\n' && c != '\t')
			fail_msg("control byte 0x%02x at %zu", c, i);
		n = utf8_seq_len(b->data + i);
		if (!n)
			fail_msg("invalid UTF-8 at byte %zu", i);
		i += n;
	}
}

static struct stackset *hostile_profile(void)
{
	static const uint32_t kinds[] = { FRAME_PYTHON, FRAME_NATIVE, FRAME_UNKNOWN, FRAME_KERNEL };
	static const char *const names[] = { "f\"q\\ (/a b/\xc3\xa9\x01.py:3)",
					     "bad\xff\xfe utf8\x1b", "[lib\"x\".so+0x10]",
					     "x\n;y_[k]" };
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	add(ss, 5, 4, kinds, names);
	assert_int_equal(stackset_set_str(&ss->title, "t\x02itle\xc0"), 0);
	return ss;
}

static void test_special_chars(void **state)
{
	struct stackset *ss = hostile_profile();
	struct buf out;

	(void)state;
	render_ok("json", ss, &out);
	assert_non_null(buf_cstr(&out));
	assert_clean_text(&out);
	assert_non_null(strstr(out.data, "\"function\": \"f\\\"q\\\\\""));
	assert_non_null(strstr(out.data, "\"file\": \"/a b/\xc3\xa9\\u0001.py\""));
	assert_non_null(strstr(out.data, "\"bad\xef\xbf\xbd\xef\xbf\xbd utf8\\u001b\""));
	assert_non_null(strstr(out.data, "\"module\": \"lib\\\"x\\\".so\", \"offset\": 16"));
	assert_non_null(strstr(out.data, "\"title\": \"t\\u0002itle\xef\xbf\xbd\""));
	buf_free(&out);
	render_ok("speedscope", ss, &out);
	assert_non_null(buf_cstr(&out));
	assert_clean_text(&out);
	assert_non_null(strstr(
	    out.data, "{\"name\":\"f\\\"q\\\\\",\"file\":\"/a b/\xc3\xa9\\u0001.py\",\"line\":3}"));
	buf_free(&out);
	/* Folded, svg, pprof and pstats: checked in their own tests; here only
	 * that they take the names at all. */
	for (size_t i = 0; i < NFORMATS; i++) {
		render_ok(all_formats[i], ss, &out);
		assert_true(out.len > 0);
		buf_free(&out);
	}
	stackset_free(ss);
}

/* One symbol in two binaries: two json frames, each naming its binary;
 * a frame without a build-id has no build_id key. */
/* The workload a profile is of: JSON's metadata.workload (escaped like
 * any string), a pprof comment per field, none where none is said. */
static void test_workload(void **state)
{
	struct stackset *ss = hostile_profile();
	struct buf out;

	(void)state;
	assert_int_equal(stackset_set_str(&ss->workload, "service=my\"app\nunit=my.service\n"
							 "junk-without-equals\n"), 0);
	render_ok("json", ss, &out);
	assert_non_null(buf_cstr(&out));
	assert_non_null(strstr(out.data, "\"workload\": {\"service\": \"my\\\"app\", "
					 "\"unit\": \"my.service\"}"));
	buf_free(&out);
	buf_init(&out);
	assert_int_equal(render_pprof_raw(ss, &out), 0);
	assert_non_null(memmem(out.data, out.len, "service=my\"app", 14));
	assert_non_null(memmem(out.data, out.len, "unit=my.service", 15));
	buf_free(&out);
	assert_int_equal(stackset_set_str(&ss->workload, NULL), 0);
	render_ok("json", ss, &out);
	assert_non_null(buf_cstr(&out));
	assert_null(strstr(out.data, "\"workload\""));
	buf_free(&out);
	stackset_free(ss);
}

static void test_json_modules(void **state)
{
	struct stackset *ss = stackset_new();
	int64_t m1, m2, root, a, b;
	uint32_t s1[2], s2[2];
	struct buf out;
	const char *first, *second;

	(void)state;
	assert_non_null(ss);
	m1 = stackset_module(ss, "/lib/liba.so", "00ff");
	m2 = stackset_module(ss, "/lib/libb.so", "");
	root = stackset_intern(ss, FRAME_ROOT, "p (pid 1)");
	a = stackset_intern_in(ss, FRAME_NATIVE, "memcpy", (uint32_t)m1);
	b = stackset_intern_in(ss, FRAME_NATIVE, "memcpy", (uint32_t)m2);
	assert_true(m1 > 0 && m2 > 0 && root >= 0 && a >= 0 && b >= 0 && a != b);
	s1[0] = s2[0] = (uint32_t)root;
	s1[1] = (uint32_t)a;
	s2[1] = (uint32_t)b;
	assert_int_equal(stackset_add(ss, s1, 2, 3), 0);
	assert_int_equal(stackset_add(ss, s2, 2, 4), 0);
	render_ok("json", ss, &out);
	assert_non_null(buf_cstr(&out));
	first = strstr(out.data, "{\"name\": \"memcpy\", \"kind\": \"native\", \"binary\": "
				 "\"/lib/liba.so\", \"build_id\": \"00ff\"}");
	second = strstr(out.data,
			"{\"name\": \"memcpy\", \"kind\": \"native\", \"binary\": \"/lib/libb.so\"}");
	assert_non_null(first);
	assert_non_null(second);
	buf_free(&out);
	stackset_free(ss);
}

static void test_empty(void **state)
{
	struct stackset *ss = stackset_new();
	struct buf out;

	(void)state;
	assert_non_null(ss);
	for (size_t i = 0; i < NFORMATS; i++) {
		buf_init(&out);
		int err = render_format(all_formats[i], ss, NULL, &out);

		if (!strcmp(all_formats[i], "pstats")) {
			/* pstats.Stats refuses an empty dict: say so instead. */
			assert_int_equal(err, -ENODATA);
		} else if (err) {
			fail_msg("%s on an empty profile: %d", all_formats[i], err);
		}
		if (!strcmp(all_formats[i], "folded"))
			assert_int_equal(out.len, 0);
		else if (!err)
			assert_true(out.len > 0);
		buf_free(&out);
	}
	render_ok("json", ss, &out);
	assert_non_null(buf_cstr(&out));
	assert_string_equal(out.data,
			    "{\n\"format\": \"profd-profile\",\n\"version\": 1,\n"
			    "\"metadata\": {\"title\": null, \"type\": \"cpu\", \"unit\": "
			    "\"samples\", \"start_ns\": 0, \"end_ns\": 0, \"rate_hz\": 0, "
			    "\"total\": 0},\n\"frames\": [],\n\"stacks\": []\n}\n");
	buf_free(&out);
	render_ok("speedscope", ss, &out);
	assert_non_null(buf_cstr(&out));
	assert_non_null(strstr(out.data, "\"frames\":[]"));
	assert_non_null(strstr(out.data, "\"samples\":[],\n\"weights\":[]"));
	buf_free(&out);
	stackset_free(ss);
}

/* Random bytes for names, random kinds and depths: every format renders
 * without error and the text ones stay valid UTF-8 without control bytes
 * (the sanitizer build checks memory on the way). */
static void test_random(void **state)
{
	static const char alphabet[] = "ab;:() []+0x1_k\\\"<>&\t\n\x01\xc3\xa9\xff\xe2\x82";
	uint32_t seed = 12345, kinds[12];
	char names[12][24];
	const char *ptrs[12];
	struct stackset *ss = stackset_new();
	struct buf out;

	(void)state;
	assert_non_null(ss);
	for (int s = 0; s < 300; s++) {
		uint32_t depth = (seed = seed * 1103515245 + 12345) % 12;

		for (uint32_t d = 0; d < depth; d++) {
			size_t len = 1 + (seed = seed * 1103515245 + 12345) % 20;

			for (size_t i = 0; i < len; i++)
				names[d][i] = alphabet[((seed = seed * 1103515245 + 12345) >> 16) %
						       (sizeof(alphabet) - 1)];
			names[d][len] = '\0';
			if (d % 3 == 0)
				snprintf(names[d], sizeof(names[d]), "f%u (/x%u.py:%u)", seed % 7,
					 seed % 3, seed % 50);
			kinds[d] = d % 3 == 0 ? FRAME_PYTHON : (seed >> 8) % FRAME_KIND_MAX;
			ptrs[d] = names[d];
		}
		add(ss, 1 + seed % 1000, depth, kinds, ptrs);
	}
	ss->rate_hz = 97;
	for (size_t i = 0; i < NFORMATS; i++) {
		render_ok(all_formats[i], ss, &out);
		if (!strcmp(all_formats[i], "json") || !strcmp(all_formats[i], "speedscope"))
			assert_clean_text(&out);
		buf_free(&out);
	}
	stackset_free(ss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_folded), cmocka_unit_test(test_golden_json),
		cmocka_unit_test(test_json_stable),   cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_framename),     cmocka_unit_test(test_special_chars),
		cmocka_unit_test(test_workload),
		cmocka_unit_test(test_empty),	      cmocka_unit_test(test_random),
		cmocka_unit_test(test_json_modules),  cmocka_unit_test(test_golden_speedscope),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
