/* kallsyms: parsing, lookups (starts, middles, gaps, modules, BPF JIT)
 * and the kptr_restrict case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "kallsyms.h"
#include "symtest.h"

static const char sample[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81000100 t do_one_initcall\n"
	"ffffffff81000200 W weak_fn\n"
	"ffffffff81000300 T schedule\n"
	"ffffffff81000400 T _etext\n"
	"ffffffff82000000 D some_data\n"
	"ffffffff82000100 B some_bss\n"
	"garbage line here\n"
	"zzzzzzzzzzzzzzzz T bad_hex\n"
	"ffffffff81000500\n"
	"ffffffff81000600 T\n"
	"0000000000000000 A fixed_percpu_data\n"
	"\n"
	"ffffffffc0001000 t mod_init\t[mymod]\n"
	"ffffffffc0001080 T mod_work\t[mymod]\n"
	"ffffffffc0001200 d mod_data\t[mymod]\n"
	"ffffffffc0100000 t bpf_prog_6deef7357e7b4530_sd_fw_egress\t[bpf]\n"
	"ffffffffc0100800 t bpf_prog_a1b2c3d4e5f60718_on_sample\t[bpf]";

static struct kallsyms *parse(const char *s)
{
	return kallsyms_parse(s, strlen(s));
}

static void expect(const struct kallsyms *ks, uint64_t addr, const char *name, uint64_t off)
{
	uint64_t got = ~0ull;
	const char *s = kallsyms_lookup(ks, addr, &got);

	if (!name) {
		assert_null(s);
		return;
	}
	assert_non_null(s);
	assert_string_equal(s, name);
	assert_int_equal(got, off);
}

static void test_lookup(void **state)
{
	struct kallsyms *ks = parse(sample);

	(void)state;
	assert_non_null(ks);
	/* _stext/_text/startup_64 fold into one; the text-only names were
	 * kept: 3 aliases -> 1, + do_one_initcall weak_fn schedule
	 * mod_init mod_work and 2 bpf programs. */
	assert_int_equal(kallsyms_count(ks), 8);
	expect(ks, 0xffffffff80ffffffull, NULL, 0);   /* before the first */
	expect(ks, 0, NULL, 0);
	expect(ks, 0xffffffff81000000ull, "startup_64", 0);
	expect(ks, 0xffffffff810000ffull, "startup_64", 0xff);
	expect(ks, 0xffffffff81000100ull, "do_one_initcall", 0);
	expect(ks, 0xffffffff81000250ull, "weak_fn", 0x50);
	expect(ks, 0xffffffff810003ffull, "schedule", 0xff);
	expect(ks, 0xffffffff81000400ull, NULL, 0);   /* _etext ends text */
	expect(ks, 0xffffffff82000050ull, NULL, 0);   /* data */
	expect(ks, 0xffffffffc0001000ull, "mod_init", 0);
	expect(ks, 0xffffffffc0001100ull, "mod_work", 0x80);
	expect(ks, 0xffffffffc0001200ull, NULL, 0);
	expect(ks, 0xffffffffc0100010ull, "bpf_prog_6deef7357e7b4530_sd_fw_egress", 0x10);
	expect(ks, 0xffffffffc0100900ull, "bpf_prog_a1b2c3d4e5f60718_on_sample", 0x100);
	/* Far past the last symbol: not attributed to it. */
	expect(ks, 0xffffffffc0900000ull, NULL, 0);
	kallsyms_free(ks);
	kallsyms_free(NULL);
}

static void test_zero_addresses(void **state)
{
	static const char hidden[] =
		"0000000000000000 T _stext\n"
		"0000000000000000 t do_one_initcall\n"
		"0000000000000000 T schedule\t[mod]\n";
	char path[PATH_MAX + 32];

	(void)state;
	errno = 0;
	assert_null(parse(hidden));
	assert_int_equal(errno, EPERM);

	assert_true(symtest_fmt(path, "%s/kallsyms.hidden", symtest_dir));
	assert_int_equal(symtest_write_str(path, hidden), 0);
	errno = 0;
	assert_null(kallsyms_load(path));
	assert_int_equal(errno, EPERM);
}

static void test_empty_and_garbage(void **state)
{
	static const char junk[] = "\x01\x02\x03 not kallsyms\n\xff\xfe\n";
	char path[PATH_MAX + 32];

	(void)state;
	errno = 0;
	assert_null(kallsyms_parse("", 0));
	assert_int_equal(errno, ENODATA);
	errno = 0;
	assert_null(parse(junk));
	assert_int_equal(errno, ENODATA);
	/* Only data symbols: nothing to name code with. */
	errno = 0;
	assert_null(parse("ffffffff82000000 D some_data\n"));
	assert_int_equal(errno, ENODATA);
	errno = 0;
	assert_true(symtest_fmt(path, "%s/does-not-exist", symtest_dir));
	assert_null(kallsyms_load(path));
	assert_int_equal(errno, ENOENT);
}

static void test_load_file(void **state)
{
	char path[PATH_MAX + 32];
	struct kallsyms *ks;

	(void)state;
	assert_true(symtest_fmt(path, "%s/kallsyms", symtest_dir));
	assert_int_equal(symtest_write_str(path, sample), 0);
	ks = kallsyms_load(path);
	assert_non_null(ks);
	expect(ks, 0xffffffff81000310ull, "schedule", 0x10);
	kallsyms_free(ks);
}

/* The real file when we may read it; skipped under kptr_restrict. */
static void test_real_kallsyms(void **state)
{
	struct kallsyms *ks = kallsyms_load(NULL);

	(void)state;
	if (!ks) {
		assert_true(errno == EPERM || errno == ENOENT || errno == EACCES);
		skip();
	}
	assert_true(kallsyms_count(ks) > 1000);
	kallsyms_free(ks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_zero_addresses),
		cmocka_unit_test(test_empty_and_garbage),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_real_kallsyms),
	};

	if (!symtest_setup("kallsyms"))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
